"""The langchain-milvus route: hybrid search works on Lite with our settings, and the upstream traps it avoids."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_milvus import BM25BuiltInFunction, Milvus
from pymilvus.exceptions import MilvusException

from rag_lib.experiments.lc_milvus import hybrid_retriever, hybrid_search, hybrid_store, upsert_documents
from rag_lib.store import count_rows

DOCS = [
    Document("Milvus 的全文检索用 BM25 打分，中文文本需要 jieba 分词器。", metadata={"source": "bm25_zh.md"}),
    Document("LangGraph checkpointers save every step, so you can rewind a run and replay it.",
             metadata={"source": "time_travel.md"}),
    Document("HNSW builds a layered neighbour graph; ef trades recall for speed at query time.",
             metadata={"source": "hnsw.md"}),
    Document("Reciprocal Rank Fusion adds 1/(k + rank) over the result lists, with k = 60.",
             metadata={"source": "rrf.md"}),
]


@pytest.fixture()
def store(tmp_path, embeddings):
    store = hybrid_store(embeddings, uri=str(tmp_path / "lc.db"), collection="lc_docs", drop_old=True)
    upsert_documents(store, DOCS)
    yield store
    store.client.close()


def top_source(results) -> str:
    first = results[0][0] if isinstance(results[0], tuple) else results[0]
    return first.metadata["source"]


def test_hybrid_search_finds_the_right_document(store):
    assert top_source(hybrid_search(store, "jieba 分词器", k=2)) == "bm25_zh.md"  # keywords (BM25, jieba)
    assert top_source(hybrid_search(store, "How do I go back to an earlier point of a run?", k=2)) == "time_travel.md"
    docs, scores = zip(*hybrid_search(store, "HNSW ef recall", k=3))
    assert docs[0].metadata["source"] == "hnsw.md" and list(scores) == sorted(scores, reverse=True)


def test_repeated_searches_keep_working(store):
    for _ in range(3):
        assert top_source(hybrid_search(store, "Reciprocal Rank Fusion k", k=1)) == "rrf.md"
    retriever = hybrid_retriever(store, k=1)
    assert [d.metadata["source"] for d in retriever.invoke("rewind a LangGraph run")] == ["time_travel.md"]
    assert [d.metadata["source"] for d in retriever.invoke("rewind a LangGraph run")] == ["time_travel.md"]
    assert len(store.vector_fields) > 2  # the upstream bug did grow the field list: our searches did not care


def test_upstream_ranker_bug_is_still_there(store):
    """If this fails, langchain-milvus fixed _remove_forbidden_fields: drop the note in HYBRID_SEARCH_KWARGS."""
    assert store.vector_fields == ["dense", "sparse"]
    store.similarity_search("HNSW", k=1)  # the first search without a ranker works...
    assert store.vector_fields == ["dense", "sparse", "sparse"]
    with pytest.raises(MilvusException, match="weighted merge requires 2 weights, got 3"):
        store.similarity_search("HNSW", k=1)  # ...the second one does not


def test_upsert_documents_is_idempotent(store):
    upsert_documents(store, DOCS)
    assert count_rows(store.client, "lc_docs") == len(DOCS)


def test_default_index_settings_fail_on_lite(tmp_path, embeddings):
    plain = Milvus(
        embedding_function=embeddings, builtin_function=BM25BuiltInFunction(output_field_names="sparse"),
        vector_field=["dense", "sparse"], connection_args={"uri": str(tmp_path / "plain.db")},
    )
    with pytest.raises(MilvusException, match="requires SPARSE_INVERTED_INDEX with metric BM25; got 'AUTOINDEX'"):
        plain.add_documents(DOCS[:1], ids=["a"])
    plain.client.close()


def test_calls_that_multi_vector_stores_do_not_support(store):
    with pytest.raises(NotImplementedError):
        store.get_by_ids(["anything"])
    with pytest.raises(ValueError, match="No supported normalization function for multi vectors"):
        store.similarity_search_with_relevance_scores("HNSW", k=1)
