"""Pipelines by their names in bench_results/retrieval*.json and answers.json, and one display label each: the
leaderboard's rows, the Pareto fronts, docs/benchmarks.md and notebook 14 name a pipeline the same way."""

from __future__ import annotations

BM25, BM25_JIEBA, DENSE = "Milvus BM25 (jieba + stop filter)", "Milvus BM25 (jieba alone)", "Milvus dense HNSW"
RRF, WEIGHTED = "hybrid RRF(60)", "hybrid weighted 0.6 dense / 0.4 BM25, min-max"
CUTOFF, RERANK = "hybrid weighted + similarity cutoff", "hybrid RRF + e5 rerank (two-stage)"
CLIENT = "Milvus client-side BM25 (rank_bm25 weights, sparse IP)"
PARENT = "parent-child: 120-char children -> context"
FUSED = "per-context fusion: children + chunks + contexts + titles"
COMPLETE = "per-context fusion, every candidate scored by every search"
ENSEMBLE = "LangChain EnsembleRetriever (weighted RRF) of the same searches"
PEER = "peer: "  # the name's start of a pipeline run in plain Python outside Milvus, for reference

LABELS = {
    BM25: "BM25, jieba + stop filter",
    BM25_JIEBA: "BM25, jieba alone",
    DENSE: "dense e5 (HNSW)",
    RRF: "hybrid RRF (dense + BM25)",
    WEIGHTED: "weighted min-max fusion, dense share .6",
    CUTOFF: "weighted fusion + similarity cutoff 0.86",
    RERANK: "reranking: e5 re-scorer (two-stage)",
    CLIENT: "client-side BM25 (rank_bm25 weights in a sparse field)",
    PARENT: "parent-child (120-char children, whole context)",
    FUSED: "per-context fusion (five searches)",
    COMPLETE: "per-context fusion, every candidate scored",
    ENSEMBLE: "LangChain EnsembleRetriever of the same searches",
}

ANSWER_LABELS = {"llm_only": "LLM only", "rag_extractive": "plain RAG",
                 "rag_web_extractive": "plain RAG + web fallback", "crag_extractive": "Corrective RAG",
                 "judge_extractive": "RAG with judge", "gold": "gold context (the bound)"}


def label(pipeline: str) -> str:
    """The display label of a pipeline (its benchmark name when it has none of its own)."""
    return LABELS.get(pipeline) or ANSWER_LABELS.get(pipeline, pipeline)


def is_peer(pipeline: str) -> bool:
    """Whether a retrieval pipeline is a plain-Python stand-in outside Milvus (drawn apart, for reference)."""
    return pipeline.startswith(PEER)
