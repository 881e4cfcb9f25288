"""Searching the app's collection with one of its retrieval strategies, and scores for what was retrieved.

Every strategy gives Documents carrying `similarity`, the cosine between the question and the chunk, so the
calibrated cutoff and the evaluation mean the same thing for all of them. HyDE costs one LLM call (the
hypothetical passage); the others none.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pymilvus import MilvusClient

from rag_lib.experiments.advanced import OUTPUT_FIELDS, hypothetical_passage, search_by_vector
from rag_lib.retriever import Retriever, cosine
from rag_lib.store import DEFAULT_COLLECTION, field_filter
from rag_lib.text import check_query

RETRIEVALS = ("hybrid", "dense", "bm25", "hyde")


def source_filter(sources: list[str] | tuple[str, ...]) -> str:
    """A Milvus filter expression keeping only these sources ('' = no filter)."""
    return field_filter("source", sources)


def search(
    client: MilvusClient,
    embeddings: Embeddings,
    llm: BaseChatModel,
    question: str,
    strategy: str,
    filter: str = "",
    k: int = 3,
    min_similarity: float | None = None,
    collection: str = DEFAULT_COLLECTION,
) -> tuple[list[Document], str, int]:
    """Documents for `question` with one strategy: (documents, what was used, LLM calls made).

    Every Document has `similarity`, the cosine between the question and the chunk, whatever the strategy, so the
    cutoff and the evaluation mean the same thing for all of them. A bad question (`check_query`) is refused first.
    """
    check_query(question)  # HyDE hands it to the model before any Retriever sees it
    if strategy == "hyde":
        passage = hypothetical_passage(llm, question)
        vector = embeddings.embed_documents([passage])[0]
        documents = search_by_vector(client, collection, vector, k, filter, [*OUTPUT_FIELDS, "dense"])
        query = embeddings.embed_query(question)
        for document in documents:  # fresh Documents from this search: their metadata is ours to change
            document.metadata["similarity"] = cosine(query, document.metadata.pop("dense"))
        documents = [d for d in documents if min_similarity is None or d.metadata["similarity"] >= min_similarity]
        return documents, f"HyDE: dense search with a hypothetical passage ({passage[:80]}...)", 1
    settings: dict[str, Any] = {
        "hybrid": {"search_type": "hybrid", "ranker": "rrf"},
        "dense": {"search_type": "dense"},
        "bm25": {"search_type": "sparse"},
    }[strategy]
    retriever = Retriever(client=client, embeddings=embeddings, collection=collection, k=k, filter=filter,
                          min_similarity=min_similarity, **settings)
    used = {
        "hybrid": "hybrid: dense + BM25 fused with RRF in Milvus",
        "dense": "dense: e5 vectors, HNSW",
        "bm25": "keyword: BM25 over jieba words in Milvus",
    }[strategy]
    return retriever.invoke(question), used, 0


def retrieval_scores(client: MilvusClient, documents: list[Document], collection: str = DEFAULT_COLLECTION) -> dict:
    """Mean similarity to the query, and diversity = 1 - mean pairwise cosine between the retrieved chunks."""
    if not documents:
        return {}
    vectors = {r["id"]: r["dense"]
               for r in client.get(collection, ids=[d.id for d in documents], output_fields=["dense"])}
    pairs = [cosine(vectors[a.id], vectors[b.id]) for a, b in combinations(documents, 2)]
    return {
        "mean_similarity": float(np.mean([d.metadata["similarity"] for d in documents])),
        "diversity": 1.0 - float(np.mean(pairs)) if pairs else None,
    }
