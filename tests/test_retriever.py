"""Retriever: argument validation before any search, each search strategy on a small fixed corpus, the
rerankers (HTTP through an httpx.MockTransport test double), and the sample questions over data/docs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import httpx
import pytest
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableLambda
from pydantic import Field
from pymilvus import DataType

from rag_lib.embeddings import E5_MIN_SIMILARITY
from rag_lib.experiments.rerank import (
    EmbeddingReranker,
    HttpReranker,
    LLMReranker,
    RelevanceScore,
    SentenceTransformersReranker,
    get_reranker,
    ranked,
)
from rag_lib.index import index_directory
from rag_lib.retriever import Retriever, RetrieverConfigError, filter_fields
from rag_lib.settings import ConfigError
from rag_lib.store import DEFAULT_COLLECTION, PROJECT_ROOT, build_index_params, build_schema, ensure_collection, quote
from rag_lib.text import InvalidQueryError

CORPUS = {
    "bm25_zh.md": "# Milvus 全文检索\n\nMilvus 的全文检索使用 BM25 算法给文档打分。"
    "分析器由分词器和过滤器组成：中文文本应当使用 "
    "jieba 分词器，否则一整段中文会被当成一个词元，中文查询什么也找不到。",
    "hnsw.md": "# HNSW index\n\nHNSW builds a layered graph of small worlds over the vectors. The build parameter M "
    "sets how many neighbours each vector links to, and the search parameter ef sets how many candidates a query "
    "explores before it returns.",
    "langgraph.txt": "LangGraph state and reducers\n\nIn a LangGraph graph every node returns a partial update of the "
    "state. When two parallel nodes write the same key, a reducer such as operator.add merges the updates; without a "
    "reducer the graph raises InvalidUpdateError.",
    "chunking_zh.txt": "文本切分策略\n\n切分决定了检索的基本单位。块太大，向量表示被稀释；块太小，句子脱离上下文。"
    "常见做法是每块 200 "
    "到 500 个字符，相邻块重叠 10% 到 20%，再用评估集比较召回率。",
}


def names(hits: list[Document]) -> list[str]:
    return [Path(h.metadata["source"]).name for h in hits]


@pytest.fixture(scope="module")
def passage_cache(embeddings):
    """The real e5 model with passage vectors kept in memory, so each test's re-indexing costs no embedding."""
    from langchain_classic.embeddings import CacheBackedEmbeddings
    from langchain_core.stores import InMemoryByteStore

    store = InMemoryByteStore()
    return CacheBackedEmbeddings.from_bytes_store(embeddings, store, namespace="test-e5", key_encoder="sha256")


@pytest.fixture()
def indexed(milvus, passage_cache, tmp_path: Path):
    """The four-file corpus above, one chunk per file, in a throw-away Milvus Lite database."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in CORPUS.items():
        (folder / name).write_text(text, encoding="utf-8")
    report = index_directory(milvus, folder, passage_cache, progress=False)
    assert report.chunks_written == len(CORPUS)
    return milvus


@pytest.fixture()
def no_search(milvus, monkeypatch: pytest.MonkeyPatch):
    """An empty course collection whose search calls fail: validation must reject arguments before searching."""
    ensure_collection(milvus, 384)

    def forbidden(*args, **kwargs):
        raise AssertionError("a search ran before the arguments were validated")

    monkeypatch.setattr(milvus, "search", forbidden)
    monkeypatch.setattr(milvus, "hybrid_search", forbidden)
    return milvus


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"search_fields": ["title"]}, ["unknown field 'title'", "['dense', 'sparse']"]),
        ({"search_type": "dense", "search_fields": ["dense", "sparse"]}, ["search_type='hybrid'", "one field"]),
        ({"search_type": "hybrid", "search_fields": ["dense"]}, ["add a field", "search_type='dense'"]),
        ({"search_type": "dense", "search_fields": ["sparse"]}, ["is a sparse field", "search_type='sparse'"]),
        ({"search_fields": ["dense", "dense"]}, ["repeats a field"]),
        ({"search_fields": []}, ["search_fields is empty"]),
        ({"search_type": "dense", "search_params": {"sparse": {}}}, ["given for ['sparse']", "not searched"]),
        ({"ranker": "weighted", "weights": (1.0,)}, ["has 1 numbers but there are 2 fields", "one weight per field"]),
        ({"ranker": "weighted", "weights": (1.5, 0.5)}, ["in [0, 1]"]),
        ({"ranker": "weighted", "weights": (-0.1, 0.5)}, ["in [0, 1]"]),
        ({"ranker": "weighted", "weights": (0.0, 0.0)}, ["one at least above 0"]),
        ({"ranker": "model"}, ["needs a reranker", "get_reranker()"]),
        ({"weights": (0.6, 0.4)}, ["read only by ranker='weighted', not ranker='rrf'", "drop weights"]),
        ({"rrf_k": 0}, ["rrf_k=0", ">= 1"]),
        ({"k": 0}, ["k=0", "k >= 1"]),
        ({"k": 30}, ["candidates=20 < k=30"]),
        ({"collection": "nope"}, ["collection 'nope' does not exist", "index documents first"]),
        ({"min_similarity": float("nan")}, ["min_similarity=nan", "in [-1, 1]"]),
        ({"min_similarity": 2.0}, ["min_similarity=2.0", "in [-1, 1]", "default_min_similarity()"]),
        ({"min_similarity": -1.5}, ["min_similarity=-1.5", "in [-1, 1]"]),
        ({"filter": 'source == "a.md'}, ["is not a valid Milvus expression", "unterminated string", "close every"]),
        ({"filter": "language =="}, ["is not a valid Milvus expression", "unexpected end"]),
        ({"filter": 'langauge == "zh"'}, ["names ['langauge']", "fix the field name", "'language'"]),
        ({"filter": 'source like "%.md" and chunk_idx < 2'}, ["names ['chunk_idx']"]),
        ({"filter": 'contains(source, "a")'}, ["unknown function 'contains'"]),
    ],
)
def test_bad_arguments_fail_before_any_search_with_a_clear_message(no_search, embeddings, kwargs, fragments):
    with pytest.raises(RetrieverConfigError) as error:
        Retriever(client=no_search, embeddings=embeddings, **kwargs)
    for fragment in fragments:
        assert fragment in str(error.value)
    assert "validation error" not in str(error.value)  # ours, not wrapped in a pydantic ValidationError


def test_a_reranker_without_ranker_model_is_refused(no_search, embeddings):
    with pytest.raises(RetrieverConfigError, match="only by ranker='model', not ranker='rrf'.*drop reranker"):
        Retriever(client=no_search, embeddings=embeddings, reranker=EmbeddingReranker(embeddings))


def test_config_error_is_a_value_error_and_good_arguments_resolve_defaults(no_search, embeddings):
    assert issubclass(RetrieverConfigError, ValueError)
    plan = Retriever(client=no_search, embeddings=embeddings, ranker="weighted").plan()
    assert plan["fields"] == ["dense", "sparse"] and plan["weights"] == [0.5, 0.5] and plan["normalize"] is True
    assert plan["search_params"]["dense"]["metric_type"] == "COSINE"
    assert plan["search_params"]["sparse"]["metric_type"] == "BM25"
    assert Retriever(client=no_search, embeddings=embeddings, search_type="sparse").plan()["fields"] == ["sparse"]


def test_filter_names_are_read_outside_strings_and_dynamic_fields_that_rows_have_are_allowed(no_search, embeddings):
    """The course schema has the dynamic field on: `chunking` (set on uploads) is no schema field, but rows have it."""
    ensure_collection(no_search, 384)
    no_search.insert(DEFAULT_COLLECTION, [{"id": "u1", "text": "t", "dense": [0.1] * 384, "source": "a.md",
                                           "file_hash": "h", "chunk_index": 0, "chunk_count": 1, "parent_id": "",
                                           "language": "en", "title": "", "chunking": "fixed/200"}])
    for expr in ['chunking == "fixed/200"', 'source == "langauge == 1" or title like "chunk_idx%"',
                 'language in ["en", "zh"] and not (chunk_index > 3) and $meta["chunking"] != "x"',
                 'chunk_index >= 1e2 or source is not null']:
        Retriever(client=no_search, embeddings=embeddings, filter=expr)
    with pytest.raises(RetrieverConfigError, match=r"names \['chunkin'\], which no row of 'rag_docs' has"):
        Retriever(client=no_search, embeddings=embeddings, filter='chunkin == "fixed/200"')


def test_filter_fields_reads_field_names_only():
    assert filter_fields('a == "b and c" and not (d in [1, 2]) OR e like \'f%\' and array_contains(g, 1)') == [
        "a", "d", "e", "g"]
    assert filter_fields('x_1 >= 1e5 and $meta["k"] == 1 and y is not null and exists z') == ["x_1", "y", "z"]


@pytest.fixture()
def extra_fields(milvus):
    """A collection with two more vector fields: `title_vec` (no default params) and `splade` (plain sparse)."""
    schema = build_schema(384)
    schema.add_field("title_vec", DataType.FLOAT_VECTOR, dim=384)
    schema.add_field("splade", DataType.SPARSE_FLOAT_VECTOR)
    index_params = build_index_params(milvus)
    index_params.add_index("title_vec", index_type="FLAT", metric_type="COSINE")
    index_params.add_index("splade", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    milvus.create_collection("extra", schema=schema, index_params=index_params)
    return milvus


def test_field_without_default_params_needs_search_params(extra_fields, embeddings):
    extra = dict(client=extra_fields, embeddings=embeddings, collection="extra")
    with pytest.raises(RetrieverConfigError, match=r"no search params for field 'title_vec'.*search_params="):
        Retriever(**extra, search_type="dense", search_fields=["title_vec"])
    with pytest.raises(RetrieverConfigError, match=r"\['dense', 'sparse', 'splade', 'title_vec'\]"):
        Retriever(**extra, search_fields=["titel_vec", "dense"])
    with pytest.raises(RetrieverConfigError, match="'splade' is SPARSE_FLOAT_VECTOR"):
        Retriever(**extra, search_fields=["dense", "splade"])
    given = {"title_vec": {"metric_type": "COSINE", "params": {}}}
    retriever = Retriever(**extra, search_fields=["dense", "title_vec"], search_params=given)
    assert retriever.plan()["search_params"]["title_vec"] == given["title_vec"]


def test_empty_query_is_refused(no_search, embeddings):
    with pytest.raises(ValueError, match="empty query"):
        Retriever(client=no_search, embeddings=embeddings).invoke("   ")


def test_a_query_that_is_not_valid_text_is_refused_before_any_search(no_search, embeddings, tmp_path):
    """A lone surrogate ("\\udc80") cannot be encoded by any model or database: refused with a clear message at every
    entry, the graphs' too (chat and the app's router before their first model call), instead of the embedder's
    UnicodeEncodeError."""
    from rag_lib.app.router import RouterContext, build_router_graph
    from rag_lib.app.strategies import search
    from rag_lib.experiments.parent_fusion import RetrieverParentScores
    from rag_lib.graphs.chat import ChatContext, build_chat_graph
    from rag_lib.graphs.rag import RAGContext, build_rag_graph

    retriever = Retriever(client=no_search, embeddings=embeddings, search_type="dense")
    entries = [
        lambda: retriever.invoke("cafe\udc80"),
        lambda: retriever.search_many(["fine", "cafe\udc80"]),
        lambda: RetrieverParentScores(retriever).best_per_parent(["cafe\udc80"], [["parent"]]),
        lambda: RetrieverParentScores(retriever).lowest_score(["cafe\udc80"]),
        # the graph's first node searches: its model is never reached
        lambda: build_rag_graph().invoke({"question": "cafe\udc80"}, context=RAGContext(retriever=retriever, llm=None)),
        lambda: search(no_search, embeddings, None, "cafe\udc80", "hyde"),  # the app's strategies, HyDE's model too
        lambda: build_chat_graph().invoke({"messages": [("user", "cafe\udc80")]},
                                          context=ChatContext(retriever=retriever, llm=None)),
        lambda: build_router_graph().invoke({"request": "cafe\udc80"},
                                            context=RouterContext(no_search, embeddings, None, tmp_path)),
    ]
    for entry in entries:
        with pytest.raises(InvalidQueryError, match=r"invalid text in the query 'cafe\\udc80': character 4 is "
                                                     r"'\\udc80', a lone surrogate \(not valid Unicode\)\. Remove it"):
            entry()


# ---------------------------------------------------------------- search results


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"search_type": "dense"}, {"search_type": "sparse"}, {"ranker": "weighted", "weights": (0.6, 0.4)},
     {"ranker": "weighted", "normalize": False}, {"min_similarity": 0.8}],
)
def test_search_many_gives_each_query_what_invoke_gives_it(indexed, embeddings, kwargs):
    retriever = Retriever(client=indexed, embeddings=embeddings, k=3, **kwargs)
    queries = ["What happens when two branches update the same key?", "中文全文检索用什么分词器？", "HNSW ef"]
    batched = retriever.search_many(queries)
    assert len(batched) == len(queries)
    for query, hits in zip(queries, batched):
        one = retriever.invoke(query)
        assert all(isinstance(h, Document) and h.id == h.metadata["id"] for h in hits)
        assert [h.id for h in hits] == [h.id for h in one]
        assert [h.metadata.keys() for h in hits] == [h.metadata.keys() for h in one]
        scores = [h.metadata["score"] for h in hits]
        assert scores == pytest.approx([h.metadata["score"] for h in one], rel=1e-4)  # float32 sums
    with pytest.raises(ValueError, match="empty query"):
        retriever.search_many(["fine", " "])


def test_dense_finds_a_paraphrase(indexed, embeddings):
    hits = Retriever(client=indexed, embeddings=embeddings, search_type="dense", k=2).invoke(
        "What happens when two branches update the same key?"
    )
    assert names(hits)[0] == "langgraph.txt" and len(hits) == 2
    assert hits[0].metadata["score"] == pytest.approx(hits[0].metadata["similarity"], abs=1e-4)  # dense: the cosine


def test_sparse_finds_a_chinese_keyword_through_jieba(indexed, embeddings):
    hits = Retriever(client=indexed, embeddings=embeddings, search_type="sparse", k=4).invoke("jieba 分词器")
    assert names(hits) == ["bm25_zh.md"]  # BM25 only returns chunks that share a token with the query
    assert hits[0].metadata["score"] > 1.0  # Lite's negated BM25 score comes back positive


def test_hybrid_rrf_finds_the_document_and_invoke_returns_documents(indexed, embeddings):
    retriever = Retriever(client=indexed, embeddings=embeddings, k=3)
    docs = retriever.invoke("每块多少个字符")
    assert [Path(d.metadata["source"]).name for d in docs][0] == "chunking_zh.txt" and len(docs) == 3
    assert all(isinstance(d, Document) and {"score", "similarity"} <= d.metadata.keys() for d in docs)
    assert docs[0].metadata["score"] == pytest.approx(2 / 61)  # rank 1 in both lists: 1/(60+1) twice


def test_filter_expression_restricts_the_sources(indexed, embeddings):
    english = Retriever(client=indexed, embeddings=embeddings, k=4, filter='language == "en"').invoke("jieba 分词器")
    assert set(names(english)) == {"hnsw.md", "langgraph.txt"}
    source = next(r["source"] for r in indexed.query(DEFAULT_COLLECTION, filter="", output_fields=["source"], limit=10)
                  if r["source"].endswith("hnsw.md"))
    for ranker in ("rrf", "weighted"):
        only = f"source == {quote(source)}"
        hits = Retriever(client=indexed, embeddings=embeddings, ranker=ranker, filter=only).invoke("graph")
        assert names(hits) == ["hnsw.md"]


def test_min_similarity_drops_off_topic_passages(indexed, embeddings):
    question = "How long should I boil an egg to get a soft yolk?"
    assert len(Retriever(client=indexed, embeddings=embeddings, k=3).invoke(question)) == 3
    cut = Retriever(client=indexed, embeddings=embeddings, k=3, min_similarity=E5_MIN_SIMILARITY)
    assert cut.invoke(question) == []
    kept = cut.invoke("jieba 分词器")
    assert names(kept) == ["bm25_zh.md"] and kept[0].metadata["similarity"] >= E5_MIN_SIMILARITY


def test_weighted_normalised_follows_the_weights_but_raw_lets_bm25_win(indexed, embeddings):
    # "how many" is also in hnsw.md, so BM25 ranks it first; dense finds the (Chinese) chunking document.
    question = "How many characters should each chunk have?"
    dense = Retriever(client=indexed, embeddings=embeddings, search_type="dense").invoke(question)
    sparse = Retriever(client=indexed, embeddings=embeddings, search_type="sparse").invoke(question)
    assert names(dense)[0] == "chunking_zh.txt" and names(sparse)[0] == "hnsw.md"
    common = dict(client=indexed, embeddings=embeddings, ranker="weighted", weights=(0.9, 0.1))
    normalised = Retriever(**common).invoke(question)
    raw = Retriever(**common, normalize=False).invoke(question)
    assert names(normalised)[0] == "chunking_zh.txt"  # 90% dense really means dense decides
    assert all(0.0 <= h.metadata["score"] <= 1.0 for h in normalised)
    assert names(raw)[0] == "hnsw.md"  # raw BM25 (unbounded) swamps cosine despite weight 0.1
    bm25 = {h.id: h.metadata["score"] for h in sparse}
    top = raw[0].metadata
    assert top["score"] == pytest.approx(0.9 * top["similarity"] + 0.1 * bm25[top["id"]], rel=1e-3)
    assert top["score"] > 1.0  # impossible for a weighted mean of cosines


def test_model_ranker_with_embedding_reranker_reorders_by_e5_cosine(indexed, embeddings):
    reranker = EmbeddingReranker(embeddings)
    retriever = Retriever(client=indexed, embeddings=embeddings, ranker="model", reranker=reranker, k=2)
    docs = retriever.invoke("jieba 分词器")
    assert names(docs)[0] == "bm25_zh.md" and len(docs) == 2
    assert all(d.id == d.metadata["id"] for d in docs)  # the reranked copies keep their Milvus id
    hits = [d.metadata for d in docs]
    scores = [h["rerank_score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and all(h["score"] == h["rerank_score"] for h in hits)
    # The e5 reranker re-computes exactly the dense similarity: this is why it adds little over dense search.
    assert all(h["rerank_score"] == pytest.approx(h["similarity"], abs=1e-4) for h in hits)
    assert all("retrieval_score" in h for h in hits)


# ---------------------------------------------------------------- rerankers


def docs_abc() -> list[Document]:
    return [Document(page_content=t, metadata={"source": f"{t}.md"}) for t in ("alpha", "beta", "gamma")]


def mock(handler) -> httpx.Client:
    """An httpx client whose requests go to `handler` (a test double), never to the network."""
    return httpx.Client(transport=httpx.MockTransport(handler))


def test_http_reranker_request_and_response_mapping():
    seen: dict = {}

    def fake_service(request: httpx.Request) -> httpx.Response:  # test double for a Jina/Cohere-style endpoint
        seen.update(url=str(request.url), auth=request.headers.get("authorization"), body=json.loads(request.content))
        results = [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.4}]
        return httpx.Response(200, json={"results": results})

    reranker = HttpReranker("https://rerank.test/v1/rerank", "test-model", "sk-test", client=mock(fake_service))
    out = reranker.rerank("which letter?", docs_abc(), top_k=2)
    assert seen == {
        "url": "https://rerank.test/v1/rerank",
        "auth": "Bearer sk-test",
        "body": {"model": "test-model", "query": "which letter?", "documents": ["alpha", "beta", "gamma"], "top_n": 2,
                 "return_documents": False},
    }
    assert [d.page_content for d in out] == ["gamma", "alpha"]
    assert [d.metadata["rerank_score"] for d in out] == [0.9, 0.4] and out[0].metadata["source"] == "gamma.md"


def test_http_reranker_reads_dashscope_shape_and_reports_bad_responses():
    def dashscope(request: httpx.Request) -> httpx.Response:  # test double: DashScope native wraps results in output
        return httpx.Response(200, json={"output": {"results": [{"index": 1, "relevance_score": 0.7}]}})

    out = HttpReranker("https://x.test/rerank", "gte-rerank-v2", client=mock(dashscope)).rerank("q", docs_abc(), 3)
    assert [(d.page_content, d.metadata["rerank_score"]) for d in out] == [("beta", 0.7)]

    def broken(request: httpx.Request) -> httpx.Response:  # test double: no results list
        return httpx.Response(200, json={"error": "quota"})

    with pytest.raises(ValueError, match="no 'results' list"):
        HttpReranker("https://x.test/rerank", "m", client=mock(broken)).rerank("q", docs_abc(), 1)

    def unauthorised(request: httpx.Request) -> httpx.Response:  # test double: wrong key
        assert "authorization" not in request.headers  # no key configured: no header sent
        return httpx.Response(401, json={"message": "bad key"})

    with pytest.raises(httpx.HTTPStatusError):
        HttpReranker("https://x.test/rerank", "m", client=mock(unauthorised)).rerank("q", docs_abc(), 1)


class FakeScoringModel(BaseChatModel):
    """Test double for a chat model with structured output: scores 8 when the passage mentions "beta"."""

    prompts: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "fake-scoring-test-double"

    def _generate(self, *args, **kwargs):
        raise NotImplementedError("the reranker only asks for structured output")

    def with_structured_output(self, schema, **kwargs):
        assert schema is RelevanceScore
        return RunnableLambda(self.score)

    def score(self, prompt: str) -> RelevanceScore:
        self.prompts.append(prompt)
        return RelevanceScore(score=8 if "beta" in prompt.split("Passage:")[1] else 3)


def test_llm_reranker_scores_each_passage_and_ties_keep_first_stage_order():
    model = FakeScoringModel()
    documents = [*docs_abc(), Document(page_content="betamax")]
    out = LLMReranker(model, max_chars=4).rerank("which letter?", documents, top_k=3)
    expected = [("beta", 8.0), ("betamax", 8.0), ("alpha", 3.0)]  # ties keep input order
    assert [(d.page_content, d.metadata["rerank_score"]) for d in out] == expected
    assert [p.rsplit(" ", 1)[-1] for p in model.prompts] == ["alph", "beta", "gamm", "beta"]  # one call each, cut


def test_ranked_keeps_top_k_and_rejects_bad_input():
    out = ranked(docs_abc(), [0.1, 0.5, 0.5], top_k=2)
    assert [d.page_content for d in out] == ["beta", "gamma"]  # tie: input order
    assert docs_abc()[0].metadata == {"source": "alpha.md"}  # inputs are not modified
    with pytest.raises(ValueError):
        ranked(docs_abc(), [1.0], top_k=1)
    with pytest.raises(ValueError):
        ranked(docs_abc(), [1.0, 2.0, 3.0], top_k=0)


@pytest.fixture()
def no_rerank_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for suffix in ("MODEL", "BASE_URL", "API_KEY", "CROSS_ENCODER", "LLM"):
        monkeypatch.delenv(f"RAG_RERANK_{suffix}", raising=False)
    return monkeypatch


def test_get_reranker_resolves_from_the_environment(no_rerank_env, embeddings):
    assert isinstance(get_reranker(embeddings), EmbeddingReranker)
    no_rerank_env.setenv("RAG_RERANK_MODEL", "jina-reranker-v2-base-multilingual")
    with pytest.raises(ConfigError, match="RAG_RERANK_BASE_URL"):
        get_reranker(embeddings)
    no_rerank_env.setenv("RAG_RERANK_BASE_URL", "https://api.jina.ai/v1/rerank")
    no_rerank_env.setenv("RAG_RERANK_API_KEY", "sk-test")
    http = get_reranker(embeddings)
    assert isinstance(http, HttpReranker) and (http.url, http.model, http.api_key) == (
        "https://api.jina.ai/v1/rerank", "jina-reranker-v2-base-multilingual", "sk-test")
    no_rerank_env.setenv("RAG_RERANK_LLM", "1")
    with pytest.raises(ConfigError, match="several rerankers"):
        get_reranker(embeddings)


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is not None, reason="it is installed here")
def test_cross_encoder_without_sentence_transformers_says_how_to_install():
    with pytest.raises(ImportError, match="pip install sentence-transformers"):
        SentenceTransformersReranker("BAAI/bge-reranker-base")


# ---------------------------------------------------------------- the course corpus


@pytest.fixture(scope="module")
def course_index(tmp_path_factory):
    """data/docs in a throw-away database, with the disk-cached course embeddings (fast after the first run)."""
    from rag_lib.embeddings import get_embeddings
    from rag_lib.store import connect

    client = connect(uri=str(tmp_path_factory.mktemp("course") / "docs.db"))
    embeddings = get_embeddings()
    index_directory(client, PROJECT_ROOT / "data" / "docs", embeddings, progress=False)
    yield client, embeddings
    client.close()


def test_sample_questions_find_their_source_in_the_top_3(course_index):
    client, embeddings = course_index
    questions = json.loads((PROJECT_ROOT / "data" / "sample_questions.json").read_text(encoding="utf-8"))
    answerable = [q for q in questions if q["source"]]
    assert len(answerable) >= 20
    retriever = Retriever(client=client, embeddings=embeddings, k=3)
    misses = {}
    for q in answerable:
        found = names(retriever.invoke(q["question"]))
        if q["source"] not in found:
            misses[q["question"]] = found
    assert misses == {}



def insert_copies(milvus, embeddings, ids: list[str]) -> None:
    """Copies of one passage under several ids, inserted out of id order with flushes in between, so they sit in
    two flushed segments and the memtable."""
    ensure_collection(milvus, 384)
    text = CORPUS["hnsw.md"]
    vector = embeddings.embed_documents([text])[0]
    for i in (2, 0, 3, 1):
        milvus.insert(DEFAULT_COLLECTION, [{"id": ids[i], "text": text, "dense": vector, "source": f"{ids[i]}.md",
                                            "file_hash": "x", "chunk_index": 0, "chunk_count": 1, "parent_id": "",
                                            "language": "en", "title": "HNSW index"}])
        if i in (0, 3):
            milvus.flush(DEFAULT_COLLECTION)


def test_tied_hits_come_back_in_id_order_whatever_the_segments(milvus, embeddings):
    """Exact ties (copies of one passage): Milvus orders them by where rows sit, the Retriever by id."""
    ids = [f"copy-{i}" for i in range(4)]
    insert_copies(milvus, embeddings, ids)
    hits = Retriever(client=milvus, embeddings=embeddings, k=4, search_type="dense").invoke("What does M set?")
    assert [h.id for h in hits] == ids
    assert len({h.metadata["score"] for h in hits}) == 1


def test_lite_bm25_scores_one_text_differently_in_different_segments(milvus, embeddings):
    """Milvus Lite keeps BM25 statistics per segment: the same text scores differently depending on the segment it
    was flushed into, so BM25 and hybrid rankings can change when Lite flushes or compacts. Pinned here so the day a
    Lite release fixes it, this test says so."""
    ids = [f"copy-{i}" for i in range(4)]
    insert_copies(milvus, embeddings, ids)
    hits = Retriever(client=milvus, embeddings=embeddings, k=4, search_type="sparse").invoke("What does M set?")
    assert len(hits) == 4
    assert len({round(h.metadata["score"], 6) for h in hits}) > 1


# ---------------------------------------------------------------- a second embedding model


@pytest.fixture(scope="module")
def use_model():
    from rag_lib.experiments.use_embeddings import USEEmbeddings

    return USEEmbeddings()


@pytest.fixture()
def two_models(milvus, passage_cache, use_model):
    """The corpus above in a collection with two vector fields: e5 in `dense`, the Universal Sentence Encoder in
    `use`."""
    milvus.create_collection("two", schema=build_schema(384, extra_dense={"use": 512}),
                             index_params=build_index_params(milvus, ["use"]))
    texts = list(CORPUS.values())
    rows = [{"id": name, "text": text, "source": name, "file_hash": "", "chunk_index": 0, "chunk_count": 1,
             "parent_id": "", "language": "", "title": "", "dense": e5, "use": use}
            for (name, text), e5, use in zip(CORPUS.items(), passage_cache.embed_documents(texts),
                                             use_model.embed_documents(texts))]
    milvus.insert("two", rows)
    milvus.flush("two")
    return milvus


def test_a_second_model_queries_its_own_field_and_fuses_with_e5(two_models, embeddings, use_model):
    common = dict(client=two_models, embeddings=embeddings, collection="two", k=2,
                  field_embeddings={"use": use_model},
                  search_params={"use": {"metric_type": "COSINE", "params": {"ef": 64}}})
    alone = Retriever(**common, search_type="dense", search_fields=["use"])
    hits = alone.invoke("Which parameter decides how many neighbours a vector has in the graph index?")
    assert names(hits)[0] == "hnsw.md"
    assert hits[0].metadata["similarity"] > 0.8  # the similarity is e5's, computed from `dense`, not USE's score
    assert hits[0].metadata["score"] != pytest.approx(hits[0].metadata["similarity"])
    fused = Retriever(**common, search_fields=["dense", "use", "sparse"])
    assert names(fused.invoke("reducer 合并 并行节点的更新"))[0] == "langgraph.txt"
    assert [names(h) for h in fused.search_many(["HNSW ef", "中文 分词器"])] == [
        names(fused.invoke("HNSW ef")), names(fused.invoke("中文 分词器"))]


def test_field_embeddings_must_name_a_searched_second_field(two_models, embeddings, use_model):
    common = dict(client=two_models, embeddings=embeddings, collection="two")
    for field_embeddings, fields in [({"dense": use_model}, ["dense", "use"]),
                                     ({"use": use_model}, ["dense", "sparse"]),
                                     ({"sparse": use_model}, ["dense", "sparse"])]:
        with pytest.raises(RetrieverConfigError, match="not a searched dense field other than 'dense'"):
            Retriever(**common, search_fields=fields, field_embeddings=field_embeddings,
                      search_params={"use": {"metric_type": "COSINE", "params": {}}} if "use" in fields else {})
