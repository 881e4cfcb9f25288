"""Dispatch `python -m benchmarks <name> [options]` to benchmarks.<name>.main(argv)."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = {
    "quickstart": "model assembly/load, indexing throughput, per-question latency of the quickstart",
    "answers": "answers on CMRC 2018 (all local / half web): LLM-only, RAG, CRAG, judge (generative, extractive), "
        "gold; resumable",
    "answer_speed": "where an answer's seconds go on 50 CMRC questions: plain RAG, CRAG, judge; prompt tokens given, "
        "read and reused from the cache, generated; medians against the speed targets",
    "index": "indexing stages, ANN sweep (FLAT/IVF/HNSW recall@10 vs latency, build, size), Lite's dropped params",
    "retrieval": "CMRC 2018 retrieval quality + latency per pipeline, beside a rank_bm25/numpy peer baseline",
    "agent": "agentic RAG (create_agent, tool-or-answer decoding) beside Corrective RAG: first-step choice, answers",
    "chat": "follow-up questions with memory: as written vs condensed vs joined, hit@1/@3 and answers (data/docs)",
    "components": "LangChain's retrievers, compressors and splitters beside the rag_lib helpers doing the same "
        "job (CMRC)",
    "router": "the app router's action on 64 labelled requests: the model alone and after the app's rules "
        "(per action, CIs)",
    "fusion": "TF-IDF vs BM25, RRF's k and the weighted dense share swept, against hybrid RRF k=60 (CMRC)",
    "ceiling": "the last points of recall: six granularities and fields fused per context, tuned on half, "
        "checked on half",
    "crossing": "where HNSW overtakes FLAT: clustered vectors at 1k-200k through Milvus Lite, faiss and numpy "
        "(recall, CPU, latency)",
    "embeddings": "a second embedding model (USE, 512-d) beside e5 in one collection: each alone, fused, "
        "and indexing speed",
    "lite": "Milvus Lite: BM25 statistics per segment (unflushed / one / many flushes), latency at 1k-100k "
        "chunks, profile",
    "multihop": "112 two-hop questions over data/: plain RAG, the recursive judge and the bridge pipeline "
        "(searches, where each question is lost, calls, seconds); resumable",
    "multihop_gold": "each two-hop question answered from gold context: hop 1's passage alone, hop 2's alone, both "
        "(does any question need only one passage?); resumable",
    "multihop_retrieval": "where the two-hop questions are lost before the model: each hop's passage in the top k "
        "of the question, of the question + gold bridge, of their union (no model calls)",
    "judging": "the judge's 0/1/2 against 97 labelled passages (data/judge_labels.json): agreement, confusion, "
        "Wilson CI",
    "builds": "two llama.cpp builds (portable AVX2 vs e.g. AVX-512) on the same answer prompts: prompt tok/s, answers",
    "durability": "LangGraph's durability modes (exit, async, sync) with a SqliteSaver: ms per step, checkpoints "
        "per run",
    "advanced": "notebook 05's query transforms and paths on 37 cross-lingual questions: file recall@3, MRR, CIs",
}


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in BENCHMARKS:
        listing = "\n".join(f"  {name:12} {what}" for name, what in BENCHMARKS.items())
        raise SystemExit(f"usage: python -m benchmarks <name> [options]\n\nbenchmarks:\n{listing}")
    importlib.import_module(f"benchmarks.{argv[0]}").main(argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
