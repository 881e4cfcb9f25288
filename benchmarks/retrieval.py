"""Retrieval quality and latency on CMRC 2018: every pipeline answers every question, side by side with a
peer baseline of the usual notebook stack (rank_bm25 over jieba tokens, brute-force numpy dense search) on
the same chunks. A hit = the question's own context among the top-k contexts (chunks mapped to contexts).

Latency is measured twice: one question per call (interleaved across pipelines, so load changes hit all alike),
and batched (`Retriever.search_many`, BATCH questions per Milvus call), where Lite's fixed cost per call is shared."""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.embeddings import Embeddings
from pymilvus import MilvusClient
from tqdm import tqdm  # text, also in notebooks: a saved progress widget shows nothing in most viewers

from benchmarks import write_results
from rag_lib.chunking import CHUNK_OVERLAP, CHUNK_SIZE
from rag_lib.embeddings import default_min_similarity, get_embeddings, with_query_cache
from rag_lib.experiments.client_bm25 import BM25Encoder, ClientBM25Search, create_collection
from rag_lib.experiments.cmrc import Dataset, Question, dataset_label, load_cmrc
from rag_lib.experiments.cmrc_search import (
    BM25,
    CANDIDATES,
    BatchSearch,
    Search,
    chunk_contexts,
    evaluate,
    load_collection,
    milvus_search,
    peer_bm25,
    peer_dense,
    peer_dense_batch,
)
from rag_lib.experiments.evaluation import (
    bootstrap_ci,
    paired_difference,
)
from rag_lib.experiments.parent_fusion import ParentFusionRetriever, Signal
from rag_lib.experiments.rerank import EmbeddingReranker
from rag_lib.experiments.results import format_table
from rag_lib.retriever import Retriever
from rag_lib.store import (
    JIEBA_ANALYZER_PARAMS,
    connect,
    make_row,
)

SIGNAL_CANDIDATES = 30  # rows each search of the per-context fusion hands over
# Per-context fusion: each search's say, chosen on half A of the contexts by `python -m benchmarks ceiling`
# (bench_results/ceiling.json); the questions of half B took no part in choosing them.
FUSION_WEIGHTS = {"e5 children (120)": 0.6, "e5 chunks (300)": 0.6, "BM25 chunks (300)": 0.2, "BM25 contexts": 0.2,
                  "BM25 titles": 0.2}
FUSED = "per-context fusion: children + chunks + contexts + titles"
# Two variants that test what separates the Milvus build from the in-process route of `bench ceiling`:
FUSED_JIEBA = "per-context fusion, BM25 without the stop filter"  # jieba alone: stop words and punctuation count
FUSED_WIDE = "per-context fusion, 50 rows per search"  # min-max over more of the contexts
WIDE_CANDIDATES = 50
FUSED_CLIENT = "per-context fusion, client-side BM25"  # rank_bm25's term weights, stored as sparse vectors
# bench ceiling scales each signal over every context; the Milvus build over the contexts each search found, so a
# context one search missed got nothing from it, and close candidates were stretched to 0 and 1. Scoring every
# candidate in every search, from the lowest score any row gets, closes that gap:
FUSED_COMPLETE = "per-context fusion, every candidate scored by every search"
COMPLETE_CANDIDATES = 5  # rows each search hands over; their contexts are the candidates every search then scores
CLIENT_BM25 = "Milvus client-side BM25 (rank_bm25 weights, sparse IP)"
BM25_JIEBA = "Milvus BM25 (jieba alone)"  # without the stop filter: stop words and punctuation are terms
ENSEMBLE = "LangChain EnsembleRetriever (weighted RRF) of the same searches"
PARENT_CHILD = "parent-child: 120-char children -> context"
BATCH = 64  # questions per call in the batched latency run


def cmrc_parser(name: str, description: str | None) -> argparse.ArgumentParser:
    """The options every CMRC benchmark takes: --cmrc, --n (a seeded sample of questions), --out (default: name)."""
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks {name}", description=description)
    parser.add_argument("--cmrc", "--data", dest="cmrc",
                        help="a CMRC 2018 JSON file, trial or dev (default: the trial set in data/cmrc2018, "
                             "or $CMRC_PATH)")
    parser.add_argument("--n", type=int, default=0, help="questions to run (0 = all); a seeded sample")
    parser.add_argument("--out", default=name, help="results name under bench_results/")
    return parser


@dataclass
class CmrcRun:
    """What every CMRC benchmark starts from: the data set, its questions, the embeddings, a fresh Lite database."""

    data: Dataset
    questions: list[Question]
    embeddings: Embeddings
    client: MilvusClient
    folder: Path  # a temporary folder holding the database (and any other the benchmark opens)


def cmrc_sample(args: argparse.Namespace) -> tuple[Dataset, list[Question]]:
    """The data set named by `args.cmrc` and its questions: all, or `args.n` of them sampled with seed 0."""
    data = load_cmrc(args.cmrc)
    return data, data.questions if not args.n else random.Random(0).sample(data.questions, args.n)


def cmrc_run(args: argparse.Namespace) -> CmrcRun:
    """`cmrc_sample` plus the embeddings and a Milvus Lite database in a temp folder."""
    data, questions = cmrc_sample(args)
    folder = Path(tempfile.mkdtemp())
    return CmrcRun(data, questions, get_embeddings(), connect(uri=str(folder / "cmrc.db")), folder)


def cmrc_chunks(args: argparse.Namespace, analyzer: dict | None = None) -> tuple[CmrcRun, list[dict], np.ndarray]:
    """The set-up the CMRC retrieval benchmarks share: `cmrc_run`, the contexts cut into 300-character chunks
    (overlap 50) and loaded, flushed once, into the collection "cmrc_chunks" (`analyzer` for its BM25 field if
    given); returns the run, the chunk rows and their vectors."""
    run = cmrc_run(args)
    chunks = chunk_contexts(run.data, CHUNK_SIZE, CHUNK_OVERLAP)
    return run, chunks, load_collection(run.client, "cmrc_chunks", chunks, run.embeddings, analyzer)


def context_rows(data: Dataset) -> tuple[list[dict], list[dict]]:
    """One row per whole context, and one per context holding its title (the first 20 characters if it has none)."""
    contexts = [make_row(cid, text, parent_id=cid, language="zh", title=data.titles[cid][:500])
                for cid, text in data.contexts.items()]
    titles = [make_row(cid, data.titles[cid] or text[:20], parent_id=cid, language="zh", title=data.titles[cid][:500])
              for cid, text in data.contexts.items()]
    return contexts, titles


def fusion_signals(client, embeddings, candidates: int = SIGNAL_CANDIDATES, bm25_suffix: str = "") -> list[Signal]:
    """The five searches of the per-context fusion, sharing one query cache (each question is embedded once);
    `bm25_suffix` picks other collections for the three BM25 searches (e.g. "_jieba": jieba without the stop filter)."""
    remembering = with_query_cache(embeddings)
    searches = {"e5 children (120)": ("cmrc_children", "dense"), "e5 chunks (300)": ("cmrc_chunks", "dense"),
                "BM25 chunks (300)": ("cmrc_chunks" + bm25_suffix, "sparse"),
                "BM25 contexts": ("cmrc_contexts" + bm25_suffix, "sparse"),
                "BM25 titles": ("cmrc_titles" + bm25_suffix, "sparse")}
    return [Signal(name, Retriever(client=client, embeddings=remembering, collection=collection, search_type=kind,
                                   k=candidates, candidates=candidates), FUSION_WEIGHTS[name])
            for name, (collection, kind) in searches.items()]


def client_bm25_signals(client, embeddings, encoders: dict[str, BM25Encoder]) -> list[Signal]:
    """The per-context fusion with its three BM25 searches served from client-side BM25 collections (the same rows,
    rank_bm25's weights) instead of Milvus's BM25 function; the two dense searches unchanged."""
    dense = [s for s in fusion_signals(client, embeddings) if s.name.startswith("e5")]
    client_side = {"BM25 chunks (300)": "cmrc_chunks", "BM25 contexts": "cmrc_contexts", "BM25 titles": "cmrc_titles"}
    return dense + [Signal(name, ClientBM25Search(client, f"{collection}_client", encoders[collection],
                                                  SIGNAL_CANDIDATES), FUSION_WEIGHTS[name])
                    for name, collection in client_side.items()]


def ensemble(signals: list[Signal]) -> EnsembleRetriever:
    """LangChain's own fusion of the same searches: weighted RRF over their hits, one vote per parent id."""
    return EnsembleRetriever(retrievers=[s.retriever for s in signals], weights=[s.weight for s in signals],
                             id_key="parent_id")


def half_a(context_ids: list[str]) -> set[str]:
    """Half of the contexts (seed 0): `bench ceiling` chooses fusion weights on its questions, the rest are held out."""
    return set(random.Random(0).sample(context_ids, len(context_ids) // 2))


def held_out(per_question: dict[str, dict[str, list[float]]], mask: np.ndarray, names: list[str]) -> dict:
    """R@1, R@5, MRR@5 with 95% intervals over the questions in `mask`, per pipeline, and the fused pipeline's
    paired R@1 / MRR@5 differences with the others."""
    out: dict = {}
    for name in names:
        row: dict = {"questions": int(mask.sum())}
        for metric in ("R@1", "R@5", "MRR@5"):
            mean, low, high = bootstrap_ci(np.asarray(per_question[name][metric])[mask])
            row |= {metric: mean, f"{metric} 95% CI": [low, high]}
        if name != FUSED:
            for metric in ("R@1", "MRR@5"):
                fused, other = (np.asarray(per_question[n][metric])[mask] for n in (FUSED, name))
                diff, low, high = paired_difference(fused, other)
                row |= {f"fused - this, {metric}": diff, f"fused - this, {metric} 95% CI": [low, high]}
        out[name] = row
    return out


def milvus_batch(retriever: Retriever | ParentFusionRetriever) -> BatchSearch:
    """The same pipeline, many questions per Milvus call."""
    return lambda qs: [[(h.metadata["source"], h.page_content) for h in hits] for hits in retriever.search_many(qs)]


def with_parents(search: Search, parents: dict[str, str]) -> Search:
    """Small-to-big: rank by the small chunks, hand over their parent's text (here the whole context)."""
    return lambda q: [(parent_id, parents[parent_id]) for parent_id, _ in search(q)]


def batched_latency(batches: dict[str, BatchSearch], questions: list, size: int = BATCH) -> dict[str, float]:
    """Milliseconds per question when `size` questions go in one call (all questions, pipelines interleaved by
    batch), checking each batch returns one result list per question."""
    texts = [q.text for q in questions if q.text]
    seconds = dict.fromkeys(batches, 0.0)
    for start in tqdm(range(0, len(texts), size), desc=f"batched, {size} questions per call"):
        chunk = texts[start : start + size]
        for name, search in batches.items():
            began = time.perf_counter()
            results = search(chunk)
            seconds[name] += time.perf_counter() - began
            if len(results) != len(chunk):
                raise RuntimeError(
                    f"{name} returned {len(results)} result lists for {len(chunk)} questions: expected one per question"
                )
    return {name: 1000 * s / len(texts) for name, s in seconds.items()}


def load_collections(
    client: MilvusClient, embeddings: Embeddings, data: Dataset, chunks: list[dict],
) -> tuple[list[dict], dict[str, BM25Encoder]]:
    """Every collection the pipelines search (children, contexts, titles; jieba-only and client-BM25 copies of the
    chunks, contexts and titles); returns the children and the BM25 encoder fitted per collection."""
    children = chunk_contexts(data, 120, 20)
    print(f"{len(data.contexts)} contexts -> {len(chunks)} chunks (300 chars), {len(children)} children (120 chars)")
    load_collection(client, "cmrc_children", children, embeddings)
    contexts, titles = context_rows(data)
    for name, rows in (("cmrc_contexts", contexts), ("cmrc_titles", titles)):
        load_collection(client, name, rows, embeddings)
    encoders = {}
    for name, rows in (("cmrc_chunks", chunks), ("cmrc_contexts", contexts), ("cmrc_titles", titles)):
        load_collection(client, f"{name}_jieba", rows, embeddings, JIEBA_ANALYZER_PARAMS)
        encoders[name] = BM25Encoder().fit([r["text"] for r in rows])
        create_collection(client, f"{name}_client", rows, encoders[name])
    return children, encoders


def pipelines_to_compare(
    client: MilvusClient, embeddings: Embeddings, data: Dataset, chunks: list[dict], vectors: np.ndarray,
    encoders: dict[str, BM25Encoder],
) -> tuple[dict[str, Search], dict[str, BatchSearch]]:
    """Every pipeline as a one-question search, and those with a batch API as a batched one."""

    def retriever(collection: str = "cmrc_chunks", **kwargs) -> Retriever:
        return Retriever(client=client, embeddings=embeddings, collection=collection, k=CANDIDATES, **kwargs)

    weighted = {"ranker": "weighted", "weights": (0.6, 0.4)}
    milvus = {
        BM25: retriever(search_type="sparse"),
        BM25_JIEBA: retriever("cmrc_chunks_jieba", search_type="sparse"),
        "Milvus dense HNSW": retriever(search_type="dense"),
        "hybrid RRF(60)": retriever(),
        "hybrid weighted 0.6 dense / 0.4 BM25, min-max": retriever(**weighted),
        "hybrid weighted + similarity cutoff": retriever(**weighted, min_similarity=default_min_similarity()),
        "hybrid RRF + e5 rerank (two-stage)": retriever(ranker="model", reranker=EmbeddingReranker(embeddings)),
    }
    parents = {
        PARENT_CHILD: retriever("cmrc_children", **weighted),
        FUSED: ParentFusionRetriever(signals=fusion_signals(client, embeddings), k=CANDIDATES),
        FUSED_CLIENT: ParentFusionRetriever(signals=client_bm25_signals(client, embeddings, encoders), k=CANDIDATES),
        FUSED_COMPLETE: ParentFusionRetriever(signals=fusion_signals(client, embeddings, COMPLETE_CANDIDATES),
                                              k=CANDIDATES, complete=True),
    }
    client_bm25 = ClientBM25Search(client, "cmrc_chunks_client", encoders["cmrc_chunks"], CANDIDATES)
    pipelines: dict[str, Search] = {
        "peer: rank_bm25 (jieba), numpy": peer_bm25(chunks),
        "peer: dense e5, numpy brute force": peer_dense(chunks, vectors, embeddings),
        **{name: milvus_search(r) for name, r in milvus.items()},
        CLIENT_BM25: lambda q: milvus_batch(client_bm25)([q])[0],
        **{name: with_parents(milvus_search(r), data.contexts) for name, r in parents.items()},
        FUSED_JIEBA: with_parents(milvus_search(ParentFusionRetriever(
            signals=fusion_signals(client, embeddings, bm25_suffix="_jieba"), k=CANDIDATES)), data.contexts),
        FUSED_WIDE: with_parents(milvus_search(ParentFusionRetriever(
            signals=fusion_signals(client, embeddings, WIDE_CANDIDATES), k=CANDIDATES)), data.contexts),
        ENSEMBLE: with_parents(milvus_search(ensemble(fusion_signals(client, embeddings))), data.contexts),
    }
    batches: dict[str, BatchSearch] = {
        "peer: dense e5, numpy brute force": peer_dense_batch(chunks, vectors, embeddings),
        **{name: milvus_batch(r) for name, r in milvus.items()},
        CLIENT_BM25: milvus_batch(client_bm25),
        **{name: milvus_batch(r) for name, r in parents.items()},
    }
    return pipelines, batches


def add_peer_ratios(rows: list[dict], batched: dict[str, float]) -> None:
    """Each row's R@1 and p50 against its peer (rank_bm25 for the sparse ones, numpy dense for the rest) and its
    batched latency."""
    by_name = {row["pipeline"]: row for row in rows}
    sparse = {"peer: rank_bm25 (jieba), numpy", BM25, BM25_JIEBA, CLIENT_BM25}  # compared with rank_bm25
    for row in rows:
        peer = by_name["peer: rank_bm25 (jieba), numpy" if row["pipeline"] in sparse
                       else "peer: dense e5, numpy brute force"]
        row["R@1 / peer"] = row["R@1"] / peer["R@1"]
        row["p50 / peer"] = row["p50 ms"] / peer["p50 ms"]
        # None: not run batched (rank_bm25 and EnsembleRetriever have no batch API; the two fusion variants are
        # only scored)
        row[f"batched ms/q ({BATCH} per call)"] = batched.get(row["pipeline"])


def per_context_fusion(per_question: dict, questions: list, data: Dataset) -> dict:
    """The fusion pipelines on all questions and on half B, held out from the half their weights were chosen on."""
    half = half_a(list(data.contexts))
    compared = [FUSED, FUSED_COMPLETE, FUSED_JIEBA, FUSED_WIDE, FUSED_CLIENT, ENSEMBLE, PARENT_CHILD,
                "hybrid weighted 0.6 dense / 0.4 BM25, min-max"]
    return {
        "weights": FUSION_WEIGHTS, "signal candidates": SIGNAL_CANDIDATES,
        "weights chosen on": "half A (bench ceiling)", "complete: rows per search": COMPLETE_CANDIDATES,
        "all": held_out(per_question, np.ones(len(questions), dtype=bool), compared),
        "half B (held out)": held_out(per_question, np.array([q.context_id not in half for q in questions]), compared),
    }


def main(argv: list[str]) -> None:
    args = cmrc_parser("retrieval", __doc__).parse_args(argv)
    run, chunks, vectors = cmrc_chunks(args)
    data, questions, embeddings, client = run.data, run.questions, run.embeddings, run.client
    children, encoders = load_collections(client, embeddings, data, chunks)
    pipelines, batches = pipelines_to_compare(client, embeddings, data, chunks, vectors, encoders)
    rows, per_question = evaluate(pipelines, questions)
    add_peer_ratios(rows, batched_latency(batches, questions))
    client.close()
    print(format_table(rows))
    fusion = per_context_fusion(per_question, questions, data)
    print(format_table([{"pipeline": n, **{k: v for k, v in r.items() if "CI" not in k}}
                        for n, r in fusion["half B (held out)"].items()]))
    meta = {"questions": len(questions), "contexts": len(data.contexts), "chunks": len(chunks),
            "children": len(children), "candidates": CANDIDATES, "batch": BATCH, "dataset": dataset_label(args.cmrc),
            "BM25 analyzer": "ANALYZER_PARAMS (jieba, lowercase, stop filter); JIEBA_ANALYZER_PARAMS in the rows "
                             "without the stop filter"}
    print("\nwrote", write_results(args.out, {"setup": meta, "pipelines": rows, "per-context fusion": fusion}))


if __name__ == "__main__":
    main([])
