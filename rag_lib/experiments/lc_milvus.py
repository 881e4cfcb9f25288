"""The langchain-milvus route to hybrid (dense + BM25) search, beside the explicit schema of `rag_lib.store`.

`langchain_milvus.Milvus` creates the collection itself from an embedding function plus a `BM25BuiltInFunction`
(text -> sparse, computed by Milvus). Checked against langchain-milvus 0.4.0 on Milvus Lite:

1. Default settings fail at the first `add_documents`: the BM25 output field gets an AUTOINDEX index, which Lite
   rejects. `INDEX_PARAMS` and `SEARCH_PARAMS` are passed explicitly (the same indexes as `rag_lib.store`).
2. Repeated searches break without an explicit ranker: see `HYBRID_SEARCH_KWARGS`.
3. A hybrid search fuses only `fetch_k` candidates per field, 4 by default: `HYBRID_SEARCH_KWARGS` asks for 20,
   like `rag_lib.retriever.Retriever(candidates=20)`.
4. `get_by_ids` raises NotImplementedError: read rows with `store.client.get(...)` or `store.search_by_metadata`.
5. `similarity_search_with_relevance_scores` and MMR raise with several vector fields; the scores returned by
   `similarity_search_with_score` are the ranker's (RRF) scores.
6. `add_documents` inserts, and a Milvus server does not deduplicate primary keys on insert (Lite 3.2 happens to
   keep one row): `upsert_documents` replaces rows under stable ids instead.
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStoreRetriever
from langchain_milvus import BM25BuiltInFunction, Milvus

from rag_lib.settings import settings
from rag_lib.store import ANALYZER_PARAMS, DENSE_SEARCH_PARAMS, HNSW_BUILD, SPARSE_SEARCH_PARAMS, chunk_id

VECTOR_FIELDS = ["dense", "sparse"]  # same names and order as the explicit schema
INDEX_PARAMS = [
    # Nested build params: Lite drops them otherwise (see rag_lib.store.build_index_params).
    {"index_type": "HNSW", "metric_type": "COSINE", "params": {"params": HNSW_BUILD}},
    # AUTOINDEX, langchain-milvus' default for a BM25 field, is rejected by Lite.
    {"index_type": "SPARSE_INVERTED_INDEX", "metric_type": "BM25", "params": {"drop_ratio_build": 0.0}},
]
SEARCH_PARAMS = [DENSE_SEARCH_PARAMS, SPARSE_SEARCH_PARAMS]

# langchain-milvus 0.4.0 bug, in Milvus._remove_forbidden_fields (run by every search to choose output fields):
# `forbidden = self._as_list(self._vector_field)` is the store's OWN list of vector fields when there are several,
# and `forbidden.extend(<BM25 output fields>)` grows it in place: after 1 search `store.vector_fields` is
# ["dense", "sparse", "sparse"], after 2 it has four entries, and so on. A hybrid search without a ranker builds
# WeightedRanker with one default weight per listed field, so from the second search on Milvus refuses it:
# "weighted merge requires 2 weights, got 3". An explicit ranker skips the default weights. (`reranker=Function(...)`
# would avoid it too, but Function rerankers need Milvus 2.6+ and the course's docker-compose runs 2.5.) The phantom
# entries are otherwise harmless: adds, deletes and searches only zip over the real fields.
# Every hybrid search in the course goes through these kwargs; `fetch_k` is per-field candidates (default 4).
HYBRID_SEARCH_KWARGS = {"ranker_type": "rrf", "ranker_params": {"k": 60}, "fetch_k": 20}


def hybrid_store(
    embeddings: Embeddings, uri: str, collection: str = "lc_docs", drop_old: bool = False, auto_id: bool = False,
    analyzer_params: dict[str, Any] | None = None,
) -> Milvus:
    """A langchain-milvus store with a dense field (`embeddings`) and a BM25 field (the course analyzer, or
    `analyzer_params`), Lite-safe. auto_id=True lets Milvus number rows added without ids (ParentDocumentRetriever
    adds its children so)."""
    bm25 = BM25BuiltInFunction(
        input_field_names="text", output_field_names="sparse", analyzer_params=analyzer_params or ANALYZER_PARAMS,
        function_name="text_bm25",
    )
    return Milvus(
        embedding_function=embeddings,
        builtin_function=bm25,
        vector_field=VECTOR_FIELDS,
        collection_name=collection,
        connection_args={"uri": uri, "token": settings().MILVUS_TOKEN},
        index_params=INDEX_PARAMS,
        search_params=SEARCH_PARAMS,
        enable_dynamic_field=True,  # Document.metadata keys become fields
        drop_old=drop_old,
        auto_id=auto_id,
    )


def upsert_documents(store: Milvus, documents: list[Document]) -> list[str]:
    """Add or replace documents under stable ids (hash of metadata `source` + text), so re-adding is idempotent."""
    ids = [chunk_id(str(d.metadata.get("source", "")), d.page_content) for d in documents]
    if store.col is None:  # no collection yet: add_documents creates it (upsert cannot)
        store.add_documents(documents, ids=ids)
    else:
        store.upsert(ids=ids, documents=documents)
    return ids


def hybrid_search(store: Milvus, query: str, k: int = 4, expr: str | None = None) -> list[tuple[Document, float]]:
    """Dense + BM25 search fused by RRF: (Document, RRF score) pairs, best first."""
    return store.similarity_search_with_score(query, k=k, expr=expr, **HYBRID_SEARCH_KWARGS)


def hybrid_retriever(store: Milvus, k: int = 4) -> VectorStoreRetriever:
    """The store as a LangChain retriever that always searches with `HYBRID_SEARCH_KWARGS`."""
    return store.as_retriever(search_kwargs={"k": k, **HYBRID_SEARCH_KWARGS})
