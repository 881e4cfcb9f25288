"""experiments.advanced: LLM query transforms with a scripted TEST DOUBLE chat model; union, multi-path, thresholds
and small-to-big on a real (tiny) Milvus Lite collection with the real e5 embeddings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from rag_lib.chunking import Chunker
from rag_lib.experiments import advanced
from rag_lib.experiments.rerank import EmbeddingReranker
from rag_lib.index import index_directory
from rag_lib.retriever import Retriever


class ScriptedChatModel(BaseChatModel):
    """TEST DOUBLE, not a language model: returns the scripted `replies` in order and records each prompt with the
    `max_tokens` in force (bound to the call, else the model's own). A dict reply becomes a tool call, which is how
    `with_structured_output` is answered."""

    replies: list[Any]
    max_tokens: int = 256
    calls: list[tuple[str, int]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-test-double"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        self.calls.append((str(messages[-1].content), kwargs.get("max_tokens", self.max_tokens)))
        reply = self.replies.pop(0)
        if isinstance(reply, dict):
            name = kwargs["tools"][0]["function"]["name"]
            message = AIMessage(content="", tool_calls=[{"name": name, "args": reply, "id": f"call-{len(self.calls)}"}])
        else:
            message = AIMessage(content=reply)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools, *, tool_choice=None, **kwargs: Any):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def name(hit: Document) -> str:
    return Path(hit.metadata["source"]).name


def hit(id: str, text: str, score: float = 1.0, **metadata: Any) -> Document:
    """A hit as a search returns it: the passage, and id, score and source in the metadata."""
    return Document(text, id=id, metadata={"id": id, "score": score, "source": "x.md", **metadata})


# ---- LLM transforms (scripted test double) ----

def test_rewrite_joins_the_structured_terms_with_a_small_budget():
    llm = ScriptedChatModel(replies=[{"terms": ["HNSW", " M ", "HNSW", "default"]}])
    assert advanced.domain_terms_query(llm, "what's that M thing set to?") == "HNSW M default"
    prompt, max_tokens = llm.calls[0]
    assert "what's that M thing set to?" in prompt and advanced.DOMAIN in prompt and max_tokens == 48
    assert llm.max_tokens == 256  # the cap applies to a copy, not to the shared model


def test_expand_drops_the_question_itself_and_repeats():
    reply = {"queries": ["q", "HNSW M", "HNSW M", "graph index neighbours"]}
    llm = ScriptedChatModel(replies=[reply, reply])
    assert advanced.expand_query(llm, "q", n=3) == ["HNSW M", "graph index neighbours"]
    assert advanced.expand_query(llm, "q", n=1) == ["HNSW M"]


def test_translate_goes_to_the_other_language_and_keeps_one_line():
    llm = ScriptedChatModel(replies=["怎样给回答打分？\n(translation)", "How are answers graded?"])
    assert advanced.translate_query(llm, "How are answers graded?") == "怎样给回答打分？"
    assert advanced.translate_query(llm, "怎样给回答打分？") == "How are answers graded?"
    assert "into Chinese" in llm.calls[0][0] and "into English" in llm.calls[1][0] and llm.calls[0][1] == 64


def test_multi_query_searches_question_translation_and_variants():
    llm = ScriptedChatModel(replies=["HNSW 的 M 是什么？", {"queries": ["HNSW M", "graph neighbours"]}])
    queries: list[str] = []
    hits = advanced.multi_query_search(llm, fake_search(queries), "What is M in HNSW?", n=2)
    assert queries == ["What is M in HNSW?", "HNSW 的 M 是什么？", "HNSW M", "graph neighbours"]
    assert len(hits) == 4 and all(len(h.metadata["queries"]) == 1 for h in hits)


def test_decompose_splits_and_falls_back_to_the_question():
    llm = ScriptedChatModel(replies=[{"questions": ["What is nlist?", " What is nprobe? "]}, {"questions": [" "]}])
    assert advanced.decompose(llm, "What are nlist and nprobe?") == ["What is nlist?", "What is nprobe?"]
    assert advanced.decompose(llm, "What is nlist?") == ["What is nlist?"]


def fake_search(log: list[str]):
    """A search that records its queries and returns one new hit per query."""

    def search(query: str) -> list[Document]:
        log.append(query)
        return [hit(f"id-{len(log)}", f"passage for {query}")]

    return search


def test_decomposed_search_searches_the_question_and_each_part():
    llm = ScriptedChatModel(replies=[{"questions": ["What is nlist?", "What is nprobe?"]}])
    queries: list[str] = []
    parts, hits = advanced.decomposed_search(llm, fake_search(queries), "What are nlist and nprobe?", k=2)
    assert parts == ["What is nlist?", "What is nprobe?"]
    assert queries == ["What are nlist and nprobe?", *parts] and len(hits) == 2


def test_multi_step_is_bounded_when_the_judge_always_finds_something_missing():
    llm = ScriptedChatModel(replies=[{"missing": "part B", "next_query": f"hop {i}"} for i in range(10)])
    queries: list[str] = []
    result = advanced.multi_step_search(llm, fake_search(queries), "question", max_steps=3)
    assert queries == ["question", "hop 0", "hop 1"]
    assert result.steps == [("question", "part B"), ("hop 0", "part B"), ("hop 1", "part B")]
    assert len(result.hits) == 3 and len(llm.replies) == 7


def test_multi_step_stops_when_nothing_is_missing_the_query_repeats_or_nothing_new_is_found():
    llm = ScriptedChatModel(replies=[{"missing": "part B", "next_query": "hop"}, {"missing": " ", "next_query": "x"}])
    queries: list[str] = []
    assert advanced.multi_step_search(llm, fake_search(queries), "question", max_steps=5).steps == [
        ("question", "part B"), ("hop", "")]
    llm = ScriptedChatModel(replies=[{"missing": "part B", "next_query": "question"}])
    queries = []
    advanced.multi_step_search(llm, fake_search(queries), "question", max_steps=5)
    assert queries == ["question"]
    assert "passage for question" in llm.calls[0][0]  # the judge saw the retrieved passage

    def same_hit(query: str) -> list[Document]:
        queries.append(query)
        return [hit("only", "t")]

    llm, queries = ScriptedChatModel(replies=[{"missing": "B", "next_query": "hop"}] * 5), []
    result = advanced.multi_step_search(llm, same_hit, "question", max_steps=5)
    assert queries == ["question", "hop"] and len(result.steps) == 1  # the second search found nothing new


class RecordingEmbeddings:
    """TEST DOUBLE wrapper around the real embeddings that records which method embedded which text."""

    def __init__(self, inner) -> None:
        self.inner, self.log = inner, []

    def embed_documents(self, texts):
        self.log += [("documents", t) for t in texts]
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        self.log.append(("query", text))
        return self.inner.embed_query(text)


def test_hyde_embeds_the_hypothetical_passage_as_a_passage(milvus, embeddings, chunks):
    passage = "IVF clusters the vectors with k-means into nlist cells and probes the nprobe nearest cells."
    llm = ScriptedChatModel(replies=[passage])
    spy = RecordingEmbeddings(embeddings)
    hypo, hits = advanced.hyde_search(llm, milvus, spy, "how does the cell index search?", "chunks", k=2)
    assert hypo == passage and spy.log == [("documents", passage)]  # passage prefix, never "query:"
    assert name(hits[0]) == "ivf_zh.txt" and hits[0].metadata["score"] == pytest.approx(hits[0].metadata["similarity"])
    assert hits[0].id == hits[0].metadata["id"] and hits[0].page_content and "text" not in hits[0].metadata
    assert llm.calls[0][1] == 96 and "in English" in llm.calls[0][0]


# ---- real Milvus Lite ----

def test_union_keeps_each_chunk_once_with_its_best_score(milvus, embeddings, chunks):
    retriever = Retriever(client=milvus, embeddings=embeddings, collection=chunks, search_type="dense", k=3)
    queries = ["HNSW neighbours per node M", "graph index with layers"]
    per_query = {q: {h.id: h.metadata["score"] for h in retriever.invoke(q)} for q in queries}
    union = advanced.union_search(retriever.invoke, queries + queries[:1])  # a repeated query is searched once
    ids = [h.id for h in union]
    assert len(ids) == len(set(ids)) == len(set(per_query[queries[0]]) | set(per_query[queries[1]]))
    for found in union:
        assert found.metadata["score"] == pytest.approx(max(s[found.id] for s in per_query.values() if found.id in s))
        assert set(found.metadata["queries"]) == {q for q in queries if found.id in per_query[q]}
    assert [h.metadata["score"] for h in union] == sorted((h.metadata["score"] for h in union), reverse=True)
    shared = [h for h in union if len(h.metadata["queries"]) == 2]
    assert shared, "both queries should find the HNSW chunk"


def test_union_and_rrf_leave_the_searched_documents_unchanged():
    x, y = hit("x", "x", 0.9), hit("y", "y", 0.8)
    union = advanced.union_search(lambda q: [x, y], ["q1", "q2"])
    merged = advanced.rrf_merge({"a": [x, y], "b": [y]})
    assert union[0].metadata["queries"] == ["q1", "q2"] and merged[0].metadata["paths"] == {"a": 2, "b": 1}
    assert x.metadata == {"id": "x", "score": 0.9, "source": "x.md"} and "paths" not in y.metadata  # copies changed


def test_rrf_merge_sums_ranks_per_path():
    a = [hit("x", "x", 9.0), hit("y", "y", 8.0), hit("y", "y", 7.0)]  # a repeated id counts its best rank once
    b = [hit("y", "y", 0.9)]
    merged = advanced.rrf_merge({"a": a, "b": b}, rrf_k=60)
    assert [h.id for h in merged] == ["y", "x"]
    assert merged[0].metadata["score"] == pytest.approx(1 / 62 + 1 / 61)
    assert merged[0].metadata["paths"] == {"a": 2, "b": 1}


def test_multi_path_merges_dense_and_bm25_paths(milvus, embeddings, chunks):
    dense = Retriever(client=milvus, embeddings=embeddings, collection=chunks, search_type="dense", k=3)
    bm25 = Retriever(client=milvus, embeddings=embeddings, collection=chunks, search_type="sparse", k=3)
    paths = {"dense": dense.invoke, "bm25": bm25.invoke}
    hits = advanced.multi_path_search("efConstruction", paths, k=2)
    assert len(hits) == 2 and "efConstruction" in hits[0].page_content
    assert set(hits[0].metadata["paths"]) == {"dense", "bm25"}
    reranked = advanced.multi_path_search("efConstruction", paths, k=2, reranker=EmbeddingReranker(embeddings))
    assert len(reranked) == 2 and all(h.metadata["score"] == h.metadata["rerank_score"] for h in reranked)
    assert all(h.metadata["paths"] for h in reranked)  # the paths that found each hit survive the reranker


def test_threshold_filter_absolute_and_relative(milvus, embeddings, chunks):
    retriever = Retriever(client=milvus, embeddings=embeddings, collection=chunks, search_type="dense", k=6)
    hits = retriever.invoke("How many neighbours does each HNSW node keep?")
    sims = [h.metadata["similarity"] for h in hits]
    cut = (sims[0] + sims[-1]) / 2
    kept = advanced.threshold_filter(hits, min_similarity=cut)
    assert 0 < len(kept) < len(hits) and all(h.metadata["similarity"] >= cut for h in kept)
    assert name(kept[0]) == "hnsw.md"
    assert advanced.threshold_filter(hits, max_drop=0.0) == [h for h in hits if h.metadata["similarity"] == max(sims)]
    assert advanced.threshold_filter(hits, min_similarity=1.01) == []


def test_small_to_big_returns_each_parent_once(milvus, embeddings, docs):
    index_directory(milvus, docs, embeddings, collection="pc", progress=False,
                    chunker=Chunker("parent_child", chunk_size=60, chunk_overlap=0, parent_size=400))
    retriever = Retriever(client=milvus, embeddings=embeddings, collection="pc", search_type="dense", k=4)
    children = retriever.invoke("efConstruction candidate list")
    parents = advanced.small_to_big(retriever, "efConstruction candidate list")
    assert len(parents) < len(children)  # several children of one parent collapse to it
    assert parents[0].metadata["child_text"] in parents[0].page_content
    assert len(parents[0].page_content) > len(parents[0].metadata["child_text"])


# ---- the benchmark (python -m benchmarks advanced), scripted TEST DOUBLE chat model, real index of data/docs ----

def test_advanced_benchmark_scores_every_pipeline_against_the_baseline(tmp_path, monkeypatch, bench_output):
    from benchmarks import advanced as advanced_bench

    entries = [q for q in advanced_bench.load_questions() if q["source"] == "milvus_filter_expressions.txt"]
    assert [q["set"] for q in entries] == ["translated sample", "hard"]
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(entries, ensure_ascii=False), encoding="utf-8")
    per_question = ["Milvus filter like operator", {"queries": ["VARCHAR pattern match", "过滤表达式"]},
                    "Use the like operator on a VARCHAR field.", "在 VARCHAR 字段上用 like 运算符。"]
    llm = ScriptedChatModel(replies=per_question * 3)  # 2 entries + the translated one as written
    monkeypatch.setattr(advanced_bench, "get_chat_model", lambda: llm)
    advanced_bench.main(["--questions", str(questions), "--out", "mini"])

    results = bench_output("mini")
    assert "load_average_1min_at_end" in results["meta"] and "load_average_1min_at_start" in results["setup"]
    assert results["setup"]["per set"] == {"translated sample": 1, "hard": 1, "sample as written": 1}
    assert len(llm.calls) == 12 and not llm.replies  # four calls per question, every pipeline reuses them
    calls = {"baseline: hybrid RRF": 0, "translation": 1, "question + translation (union)": 1,
             "question + translation (RRF)": 1, "multi-query (question, translation, 2 wordings)": 2,
             "HyDE (passage in the question's language)": 1, "HyDE (passage in the other language)": 1,
             "node groups": 0, "multi-path (dense + BM25 + node groups)": 0}
    sets = {"translated + hard": 2, "translated sample": 1, "hard": 1, "sample as written": 1}
    rows = {(row["pipeline"], row["set"]): row for row in results["summary"]}
    assert set(rows) == {(p, s) for p in calls for s in sets}
    for (pipeline, set_name), row in rows.items():
        assert row["questions"] == sets[set_name] and row["LLM calls"] == calls[pipeline] and row["seconds"] > 0
        for metric in ("recall@3", "MRR@10"):
            low, high = row[f"{metric} 95% CI"]
            assert 0.0 <= low <= row[metric] <= high <= 1.0
            low, high = row[f"{metric} diff 95% CI"]
            assert -1.0 <= low <= row[f"{metric} diff"] <= high <= 1.0
        if pipeline == "baseline: hybrid RRF":
            assert row["recall@3 diff"] == row["MRR@10 diff"] == 0.0
            assert row["recall@3 diff 95% CI"] == row["MRR@10 diff 95% CI"] == [0.0, 0.0]
    written = rows[("baseline: hybrid RRF", "sample as written")]
    assert written["recall@3"] == written["MRR@10"] == 1.0  # the sample question as written finds its file first
    assert [q["replies"]["translation"] for q in results["questions"]] == ["Milvus filter like operator"] * 3

    # --reuse-replies: the same scores from the recorded replies and model seconds, and no model call at all
    def no_model():
        raise AssertionError("--reuse-replies must not load the chat model")

    monkeypatch.setattr(advanced_bench, "get_chat_model", no_model)
    advanced_bench.main(["--questions", str(questions), "--out", "mini", "--reuse-replies"])
    again = bench_output("mini")
    assert [q["replies"] for q in again["questions"]] == [q["replies"] for q in results["questions"]]
    for old, new in zip(results["questions"], again["questions"]):
        for name, scored in new["pipelines"].items():
            assert scored["rank"] == old["pipelines"][name]["rank"]
            assert scored["model seconds"] == old["pipelines"][name]["model seconds"]
            assert scored["seconds"] >= scored["model seconds"]
    assert "--reuse-replies" in again["setup"]["seconds"]
