"""Retrieval pipelines over CMRC 2018 contexts and how they are scored: what notebook 12 and the benchmarks share.

A pipeline (`Search`) maps a question to ranked (context id, chunk text) pairs; `evaluate` runs several on the same
questions, interleaved, and scores the distinct contexts they rank.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from langchain_core.retrievers import BaseRetriever
from rank_bm25 import BM25Okapi
from tqdm import tqdm  # text, also in notebooks: a saved progress widget shows nothing in most viewers

from rag_lib.chunking import recursive_split
from rag_lib.embeddings import embed_queries
from rag_lib.experiments.cmrc import Dataset
from rag_lib.experiments.evaluation import (
    contains_any,
    context_recall,
    context_relevance,
    percentile,
    recall_at_k,
    reciprocal_rank,
)
from rag_lib.store import build_index_params, build_schema, ensure_collection, make_row, seal
from rag_lib.text import tokenize

CANDIDATES = 15  # chunks fetched per question, mapped to at most 5 distinct contexts
BM25 = "Milvus BM25 (jieba + stop filter)"  # the course analyzer, rag_lib.store.ANALYZER_PARAMS
KS = (1, 3, 5)
INSERT_BATCH = 512  # rows per insert call
Search = Callable[[str], list[tuple[str, str]]]  # question -> ranked (context_id, chunk text)
BatchSearch = Callable[[list[str]], list[list[tuple[str, str]]]]


def chunk_contexts(data: Dataset, size: int, overlap: int) -> list[dict]:
    """Rows for the course schema: each context split into chunks whose parent is the context."""
    rows = []
    for context_id, text in data.contexts.items():
        chunks = recursive_split(text, size, overlap)
        for i, chunk in enumerate(chunks):
            rows.append(make_row(
                context_id, chunk, chunk_index=i, chunk_count=len(chunks), parent_id=context_id, language="zh",
                title=data.titles[context_id][:500],
            ))
    return rows


def load_rows(
    client, name: str, rows: list[dict], vectors: dict[str, np.ndarray], flush_every: int | None,
    analyzer: dict | None = None,
) -> float:
    """Insert rows with their vectors per field ("dense" and any second model's field) into a fresh course-schema
    collection (`analyzer` for its BM25 field if given), INSERT_BATCH per call; flush every `flush_every` rows and
    at the end (None: never; len(rows): once, one segment). Seconds, load included."""
    start = time.perf_counter()
    client.drop_collection(name)
    extra = {field: v.shape[1] for field, v in vectors.items() if field != "dense"}
    if analyzer or extra:
        schema = build_schema(vectors["dense"].shape[1], analyzer, extra)
        client.create_collection(name, schema=schema, index_params=build_index_params(client, extra))
    else:
        ensure_collection(client, vectors["dense"].shape[1], name)
    step = min(INSERT_BATCH, flush_every or INSERT_BATCH)
    for at in range(0, len(rows), step):
        block = {field: v[at : at + step] for field, v in vectors.items()}
        client.insert(name, [{**r, **{f: b[i].tolist() for f, b in block.items()}}
                             for i, r in enumerate(rows[at : at + step])])
        if flush_every and ((at + step) % flush_every < step or at + step >= len(rows)):
            seal(client, name)
    client.load_collection(name)
    return time.perf_counter() - start


def load_collection(client, name: str, rows: list[dict], embeddings, analyzer: dict | None = None) -> np.ndarray:
    """Embed (disk-cached), insert rows into a fresh collection (`analyzer` for its BM25 field if given) and flush
    them once (one segment); return the vectors for the peer baseline."""
    vectors = np.asarray(embeddings.embed_documents([r["text"] for r in rows]), dtype=np.float32)
    load_rows(client, name, rows, {"dense": vectors}, len(rows), analyzer)
    return vectors


def milvus_search(retriever: BaseRetriever) -> Search:
    """A pipeline that runs the course Retriever against Milvus."""
    return lambda q: [(h.metadata["source"], h.page_content) for h in retriever.invoke(q)]


def peer_bm25(rows: list[dict]) -> Search:
    """rank_bm25 BM25Okapi over jieba tokens of the same chunks (in-process)."""
    bm25 = BM25Okapi([tokenize(r["text"]) for r in rows])

    def search(q: str) -> list[tuple[str, str]]:
        scores = bm25.get_scores(tokenize(q))
        top = np.argsort(-scores)[:CANDIDATES]
        return [(rows[i]["source"], rows[i]["text"]) for i in top]

    return search


def peer_dense(rows: list[dict], vectors: np.ndarray, embeddings) -> Search:
    """Brute-force cosine search with numpy over the same chunk vectors (query embedding included)."""
    batch = peer_dense_batch(rows, vectors, embeddings)
    return lambda q: batch([q])[0]


def peer_dense_batch(rows: list[dict], vectors: np.ndarray, embeddings) -> BatchSearch:
    """The numpy peer for many questions at once: one embedding pass, one matrix product."""

    def search(qs: list[str]) -> list[list[tuple[str, str]]]:
        scores = np.asarray(embed_queries(embeddings, qs), dtype=np.float32) @ vectors.T
        return [[(rows[i]["source"], rows[i]["text"]) for i in np.argsort(-row)[:CANDIDATES]] for row in scores]

    return search


def to_contexts(hits: list[tuple[str, str]], k: int = max(KS)) -> tuple[list[str], list[str]]:
    """Distinct context ids in rank order (top k), and the chunk texts that led to them."""
    ids, texts = [], []
    for context_id, text in hits:
        if context_id not in ids:
            ids.append(context_id)
            texts.append(text)
        if len(ids) == k:
            break
    return ids, texts


def evaluate(
    pipelines: dict[str, Search], questions: list, progress: bool = True
) -> tuple[list[dict], dict[str, dict[str, list[float]]]]:
    """Run every pipeline on every question, interleaved question by question so that a change in machine load
    hits all pipelines alike (their ratios stay fair): recall@k, MRR@5, context relevance/recall@3, p50/p95.
    Returns one row per pipeline and the per-question scores (pipeline -> metric -> one value per question);
    `progress=False` hides the progress bar."""
    metrics = [f"R@{k}" for k in KS] + ["MRR@5", "ctx relevance@3", "ctx recall@3"]
    scores = {name: {m: [] for m in metrics} for name in pipelines}
    latencies: dict[str, list[float]] = {name: [] for name in pipelines}
    for q in tqdm(questions, desc=f"{len(pipelines)} pipelines per question", disable=not progress):
        for name, search in pipelines.items():
            if not q.text:  # two CMRC questions are empty strings: counted as misses
                hits: list[tuple[str, str]] = []
            else:
                start = time.perf_counter()
                hits = search(q.text)
                latencies[name].append((time.perf_counter() - start) * 1000)
            ranked, texts = to_contexts(hits)
            row = scores[name]
            for k in KS:
                row[f"R@{k}"].append(recall_at_k(ranked, [q.context_id], k))
            row["MRR@5"].append(reciprocal_rank(ranked, [q.context_id], 5))
            row["ctx relevance@3"].append(context_relevance(texts[:3], contains_any(q.answers)) if q.answers else 0.0)
            row["ctx recall@3"].append(context_recall(texts[:3], q.answers) if q.answers else 0.0)
    rows = [
        {"pipeline": name} | {m: float(np.mean(v)) for m, v in scores[name].items()}
        | {"p50 ms": percentile(latencies[name], 50), "p95 ms": percentile(latencies[name], 95)}
        for name in pipelines
    ]
    return rows, scores
