"""Provider resolution from environment variables, and the local model's structured output and fan-out."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Literal

import pytest
from pydantic import BaseModel

from rag_lib.providers import chat_settings, embedding_settings
from rag_lib.settings import ConfigError


def test_defaults_are_offline(offline_env):
    assert chat_settings().kind == "local"
    assert embedding_settings().kind == "local"


def test_openai_compatible_chat(offline_env):
    offline_env.setenv("RAG_LLM_MODEL", "qwen-plus")
    offline_env.setenv("RAG_LLM_API_KEY", "sk-test")
    offline_env.setenv("RAG_LLM_BASE_URL", "https://dashscope.aliyuncs.com/compatible-mode/v1")
    settings = chat_settings()
    assert (settings.kind, settings.model, settings.api_key) == ("openai", "qwen-plus", "sk-test")
    assert settings.base_url.startswith("https://dashscope")
    assert embedding_settings().kind == "local"  # chat and embeddings are configured separately


def test_openai_key_fallback(offline_env):
    offline_env.setenv("RAG_EMBED_MODEL", "text-embedding-3-small")
    offline_env.setenv("OPENAI_API_KEY", "sk-fallback")
    assert embedding_settings().api_key == "sk-fallback"


def test_local_server_needs_no_key(offline_env):
    offline_env.setenv("RAG_LLM_MODEL", "qwen2.5:1.5b")
    offline_env.setenv("RAG_LLM_BASE_URL", "http://localhost:11434/v1")
    assert chat_settings().api_key == "not-needed"


@pytest.mark.parametrize(
    ("resolve", "env", "variable"),
    [
        (chat_settings, {"RAG_LLM_API_KEY": "sk"}, "RAG_LLM_MODEL"),
        (embedding_settings, {"RAG_EMBED_BASE_URL": "http://x/v1"}, "RAG_EMBED_MODEL"),
        (chat_settings, {"RAG_LLM_MODEL": "gpt-4o-mini"}, "RAG_LLM_API_KEY"),
        (chat_settings, {"RAG_LLM_GGUF": "/nonexistent/model.gguf"}, "RAG_LLM_GGUF"),
    ],
)
def test_half_configured_settings_fail_naming_the_variable(offline_env, resolve, env, variable):
    for key, value in env.items():
        offline_env.setenv(key, value)
    with pytest.raises(ConfigError, match=variable):
        resolve()


def test_gguf_and_remote_together_is_an_error(offline_env, tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    offline_env.setenv("RAG_LLM_GGUF", str(model))
    offline_env.setenv("RAG_LLM_MODEL", "gpt-4o-mini")
    offline_env.setenv("RAG_LLM_API_KEY", "sk")
    with pytest.raises(ConfigError, match="unset one"):
        chat_settings()


def test_gguf_path_is_used(offline_env, tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    offline_env.setenv("RAG_LLM_GGUF", str(model))
    assert chat_settings() == chat_settings().__class__("gguf", model=str(model))


def test_demo_fails_on_half_configured_chat_before_indexing(offline_env):
    from rag_lib import llm
    from rag_lib.experiments import demo

    offline_env.setenv("RAG_LLM_API_KEY", "sk-test")  # a key without RAG_LLM_MODEL
    # get_chat_model caches one model per process: use the uncached function so this env is really resolved.
    offline_env.setattr(demo, "get_chat_model", llm.get_chat_model.__wrapped__)
    calls: list[str] = []  # fakes that record what the demo reached (no database, no embedding model)
    offline_env.setattr(demo, "connect", lambda *args, **kwargs: calls.append("connect"))
    offline_env.setattr(demo, "get_embeddings", lambda: calls.append("get_embeddings"))
    offline_env.setattr(demo, "index_directory", lambda *args, **kwargs: calls.append("index_directory"))
    with pytest.raises(ConfigError, match="RAG_LLM_MODEL"):
        demo.main()
    assert calls == []


def test_embeddings_are_normalised_and_prefixed(embeddings):
    query, passage = embeddings.embed_query("什么是 HNSW？"), embeddings.embed_documents(["什么是 HNSW？"])[0]
    assert len(query) == 384 and abs(sum(v * v for v in query) - 1.0) < 1e-3
    assert query != passage  # "query: " and "passage: " prefixes give different vectors


class Verdict(BaseModel):
    """Whether the passage answers the question."""

    answer: Literal["yes", "no"]


def test_local_model_structured_output_parses(offline_env):
    from rag_lib.llm import get_chat_model
    from rag_lib.settings import ConfigError
    from rag_lib.structured import structured_output

    grader = structured_output(get_chat_model(), Verdict, max_tokens=16)  # llama.cpp: a grammar-forced tool call
    verdict = grader.invoke("Question: what does HNSW stand for? Passage: HNSW means Hierarchical Navigable "
                            "Small World graphs. Does the passage answer the question?")
    assert isinstance(verdict, Verdict)
    assert verdict.answer == "yes"
    offline_env.setenv("RAG_LLM_STRUCTURED", "json_mode")  # a server setting: the local model refuses it clearly
    with pytest.raises(ConfigError, match="RAG_LLM_STRUCTURED=json_mode applies to OpenAI-compatible endpoints"):
        structured_output(get_chat_model(), Verdict)


def test_send_fan_out_on_the_shared_local_model_does_not_crash():
    # Streaming and structured-output branches run in parallel threads. Unserialised parallel calls on one llama.cpp
    # context abort the whole process (GGML_ASSERT), so run the fan-out in a child process and check it exits cleanly
    # with every branch answered.
    script = textwrap.dedent(
        """
        import operator
        from typing import Annotated, Literal, TypedDict
        from pydantic import BaseModel
        from langgraph.graph import END, START, StateGraph
        from langgraph.types import Send
        from rag_lib.llm import get_chat_model

        class Verdict(BaseModel):
            \"\"\"A yes/no verdict.\"\"\"
            answer: Literal["yes", "no"]

        llm = get_chat_model().bind(max_tokens=4)
        grader = get_chat_model().with_structured_output(Verdict)

        class State(TypedDict):
            words: list[str]
            replies: Annotated[list[str], operator.add]

        def fan_out(state):
            replies = [Send("reply", {"word": w}) for w in state["words"]]
            return replies + [Send("grade", {"word": w}) for w in state["words"][:2]]

        def reply(state):
            return {"replies": [llm.invoke("Repeat: " + state["word"]).content]}

        def grade(state):
            return {"replies": [grader.invoke("Is " + state["word"] + " a number word?").answer]}

        g = StateGraph(State)
        g.add_node("reply", reply)
        g.add_node("grade", grade)
        g.add_conditional_edges(START, fan_out, ["reply", "grade"])
        g.add_edge("reply", END)
        g.add_edge("grade", END)
        out = g.compile().invoke({"words": ["one", "two", "three"], "replies": []})
        assert len(out["replies"]) == 5, out
        print("ok", len(out["replies"]))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ok 5" in done.stdout


def test_use_embeddings_are_512_d_unit_vectors_and_batched_queries_match_single_ones():
    from rag_lib.embeddings import MAX_QUERY_CHARS, embed_queries
    from rag_lib.experiments.use_embeddings import USEEmbeddings

    use = USEEmbeddings()
    passages = use.embed_documents(["北京是中国的首都。", "The cat sat on the mat."])
    assert [len(v) for v in passages] == [512, 512]
    assert all(abs(sum(x * x for x in v) - 1) < 1e-4 for v in passages)
    queries = ["中国的首都是哪里？", "Where did the cat sit?"]
    batched = embed_queries(use, queries)
    for single, together in zip((use.embed_query(q) for q in queries), batched):
        assert max(abs(a - b) for a, b in zip(single, together)) < 1e-4
    assert use.embed_query("猫" * (MAX_QUERY_CHARS + 500)) == use.embed_query("猫" * MAX_QUERY_CHARS)  # capped
    assert use.embed_documents([]) == []


def test_with_query_cache_embeds_a_repeated_query_once_and_keeps_the_passage_cache():
    from langchain_classic.embeddings import CacheBackedEmbeddings
    from langchain_core.embeddings import Embeddings
    from langchain_core.stores import InMemoryStore

    from rag_lib.embeddings import embed_queries, with_query_cache

    class Counting(Embeddings):  # a fake model (unit test): counts what it is asked to embed
        def __init__(self):
            self.queries, self.documents = [], []

        def embed_query(self, text):
            self.queries.append(text)
            return [float(len(text)), 1.0]

        def embed_documents(self, texts):
            self.documents += texts
            return [[float(len(t)), 0.0] for t in texts]

    model, passages = Counting(), InMemoryStore()
    remembering = with_query_cache(CacheBackedEmbeddings(model, passages))
    assert remembering.embed_query("where?") == remembering.embed_query("where?") == [6.0, 1.0]
    assert embed_queries(remembering, ["where?", "who?"]) == [[6.0, 1.0], [4.0, 1.0]]
    assert model.queries == ["where?", "who?"]  # each question reached the model once
    remembering.embed_documents(["a passage"])
    assert model.documents == ["a passage"] and len(list(passages.yield_keys())) == 1  # the passage cache is shared
    assert with_query_cache(model).embed_query("x") == [1.0, 1.0]  # plain embeddings get a cache of their own


def test_only_the_indexer_adds_vectors_to_the_disk_cache(offline_env, tmp_path, milvus):
    """get_embeddings() caches the vectors of indexed chunks on disk; queries, HyDE passages, semantic chunking's
    sentences and reranked candidates are computed each time, so the cache grows with the corpus, not the questions.
    The chat model writing the HyDE passage is the TEST DOUBLE of tests/test_router.py."""
    from langchain_core.documents import Document
    from test_router import ScriptedChatModel

    from rag_lib.app.strategies import search
    from rag_lib.chunking import Chunker
    from rag_lib.embeddings import get_embeddings
    from rag_lib.experiments.rerank import EmbeddingReranker
    from rag_lib.index import index_directory
    from rag_lib.retriever import Retriever
    from rag_lib.store import DEFAULT_COLLECTION

    offline_env.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    get_embeddings.cache_clear()
    try:
        cached = get_embeddings()

        def cache_files() -> int:
            return sum(1 for p in (tmp_path / "cache" / "embeddings").rglob("*") if p.is_file())

        docs = tmp_path / "docs"
        docs.mkdir()
        text = ("The Zephyr cafeteria opens at 7:30 on weekdays. It opens at 9:00 on Sundays. "
                "HNSW is a graph index for vectors. Its ef parameter trades speed for recall.")
        (docs / "notes.txt").write_text(text, encoding="utf-8")
        semantic = Chunker("semantic", chunk_size=100)
        report = index_directory(milvus, docs, cached, chunker=semantic, progress=False)
        assert report.chunks_written >= 2 and cache_files() == report.chunks_written  # chunks, not their sentences

        Chunker("semantic").split(text + " A new sentence to compare.", cached)
        cached.embed_query("When does the cafeteria open?")
        Retriever(client=milvus, embeddings=cached, k=1).invoke("When does the cafeteria open on Sundays?")
        found, used, _ = search(milvus, cached, ScriptedChatModel(), "When does the cafeteria open on Sundays?", "hyde")
        assert used.startswith("HyDE") and found
        model, computed = cached.underlying_embeddings, []
        embed = model.embed_documents
        offline_env.setattr(model, "embed_documents", lambda texts: computed.extend(texts) or embed(texts))  # a spy
        chunk = milvus.query(DEFAULT_COLLECTION, filter="chunk_index == 0", output_fields=["text"], limit=1)[0]["text"]
        reranked = EmbeddingReranker(cached).rerank("cafeteria", [Document(chunk), Document("Not indexed.")], 1)
        assert len(reranked) == 1 and computed == ["Not indexed."]  # an indexed chunk's vector is read from the cache
        assert cache_files() == report.chunks_written  # none of them added a file

        (docs / "more.txt").write_text("Milvus Lite keeps a database in a folder.", encoding="utf-8")
        assert index_directory(milvus, docs, cached, chunker=semantic, progress=False).chunks_written == 1
        assert cache_files() == report.chunks_written + 1
    finally:
        get_embeddings.cache_clear()  # the next test gets the embeddings its own environment names
