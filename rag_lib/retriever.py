"""Retrieval over the course collection: dense, sparse (BM25) or hybrid, as a LangChain retriever.

Hybrid RRF runs server-side through pymilvus `hybrid_search`. Weighted fusion runs client-side over two
`search` calls with min-max normalisation, because BM25 scores are unbounded (and negative on Milvus
Lite) and would swamp cosine similarities if added raw.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, model_validator
from pymilvus import AnnSearchRequest, MilvusClient, RRFRanker

from rag_lib.store import DEFAULT_COLLECTION, DENSE_SEARCH_PARAMS, METADATA_FIELDS, SPARSE_SEARCH_PARAMS

OUTPUT_FIELDS = ["text", "dense", *METADATA_FIELDS]


class Retriever(BaseRetriever):
    """Search the `dense` and/or BM25 `sparse` field and return Documents with `score` in metadata."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: MilvusClient
    embeddings: Embeddings
    collection: str = DEFAULT_COLLECTION
    search_type: Literal["dense", "sparse", "hybrid"] = "hybrid"
    k: int = 4
    ranker: Literal["rrf", "weighted"] = "rrf"
    rrf_k: int = 60
    weights: tuple[float, float] = (0.5, 0.5)  # (dense, sparse) for ranker="weighted"
    candidates: int = 20
    filter: str = ""
    min_similarity: float | None = None  # drop hits whose cosine similarity to the query is lower

    @model_validator(mode="after")
    def _validate(self) -> Retriever:
        if self.k < 1:
            raise ValueError(f"k={self.k}: k must be at least 1")
        if self.candidates < self.k:
            raise ValueError(f"candidates={self.candidates} must be >= k={self.k} (it is the coarse top-N)")
        if len(self.weights) != 2 or not all(0.0 <= w <= 1.0 for w in self.weights):
            raise ValueError(f"weights={self.weights}: give two numbers in [0, 1], for (dense, sparse)")
        if not self.client.has_collection(self.collection):
            raise ValueError(f"collection {self.collection!r} does not exist: index documents first (rag_lib.index)")
        self.client.load_collection(self.collection)  # a reopened Lite collection comes back released
        return self

    def _request(self, field: str, query: str, vector: list[float], limit: int) -> dict[str, Any]:
        if field == "dense":
            return {"data": [vector], "anns_field": "dense", "param": DENSE_SEARCH_PARAMS, "limit": limit}
        return {"data": [query], "anns_field": "sparse", "param": SPARSE_SEARCH_PARAMS, "limit": limit}

    def _search(self, field: str, query: str, vector: list[float], limit: int) -> list[dict]:
        request = self._request(field, query, vector, limit)
        hits = self.client.search(
            self.collection,
            data=request["data"],
            anns_field=field,
            search_params=request["param"],
            limit=limit,
            filter=self.filter,
            output_fields=OUTPUT_FIELDS,
        )[0]
        return [{"id": h["id"], "score": float(h["distance"]), **h["entity"]} for h in hits]

    def _hybrid_rrf(self, query: str, vector: list[float]) -> list[dict]:
        requests = [
            AnnSearchRequest(**self._request(f, query, vector, self.candidates), expr=self.filter or None)
            for f in ("dense", "sparse")
        ]
        hits = self.client.hybrid_search(
            self.collection, requests, ranker=RRFRanker(self.rrf_k), limit=self.k, output_fields=OUTPUT_FIELDS
        )[0]
        return [{"id": h["id"], "score": float(h["distance"]), **h["entity"]} for h in hits]

    def _hybrid_weighted(self, query: str, vector: list[float]) -> list[dict]:
        fused: dict[str, dict] = {}
        for field, weight in zip(("dense", "sparse"), self.weights):
            hits = self._search(field, query, vector, self.candidates)
            for hit, norm in zip(hits, min_max([h["score"] for h in hits])):
                entry = fused.setdefault(hit["id"], {**hit, "score": 0.0})
                entry["score"] += weight * norm
        return sorted(fused.values(), key=lambda h: h["score"], reverse=True)[: self.k]

    def search(self, query: str) -> list[dict]:
        """Raw hits (id, score, text, metadata), best first."""
        if not query.strip():
            raise ValueError("empty query: ask a question with some words in it")
        vector = self.embeddings.embed_query(query)
        if self.search_type != "hybrid":
            hits = self._search(self.search_type, query, vector, self.k)
            if self.search_type == "sparse":  # Milvus Lite returns BM25 scores negated; order is right
                hits = [{**h, "score": abs(h["score"])} for h in hits]
        elif self.ranker == "rrf":
            hits = self._hybrid_rrf(query, vector)
        else:
            hits = self._hybrid_weighted(query, vector)
        for hit in hits:
            hit["similarity"] = cosine(vector, hit.pop("dense"))
        if self.min_similarity is not None:
            hits = [h for h in hits if h["similarity"] >= self.min_similarity]
        return hits

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [to_document(hit) for hit in self.search(query)]


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity of two vectors."""
    va, vb = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb) + 1e-12))


def min_max(scores: list[float]) -> list[float]:
    """Scale scores to [0, 1] (all 1.0 when they are equal), so fields with different scales can be added."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    return [1.0 if high == low else (s - low) / (high - low) for s in scores]


def to_document(hit: dict) -> Document:
    """A LangChain Document from a hit: text as content, everything else (id, score, metadata) as metadata."""
    metadata = {k: v for k, v in hit.items() if k != "text"}
    return Document(page_content=hit["text"], metadata=metadata, id=hit["id"])
