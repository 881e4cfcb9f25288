"""Where HNSW overtakes FLAT: clustered vectors shaped like text embeddings
(`rag_lib.experiments.ann.clustered_vectors`) at 1k to 200k vectors, searched through Milvus Lite (FLAT, then HNSW
M=16 efConstruction=64 at several `ef`) and in-process beside it (faiss, the library Lite runs, and numpy), with
recall@10 against the exact top 10, CPU per query in batches of 25 and wall-clock per single query. Run it on an idle
machine. Writes bench_results/crossing.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from tqdm import tqdm

from benchmarks import write_results
from benchmarks.index_sweep import BATCH, K, Sweep, batch_lengths
from rag_lib.experiments.ann import clustered_vectors, create_vector_collection, exact_top_k, neighbour_recall
from rag_lib.experiments.evaluation import percentile
from rag_lib.experiments.results import format_table
from rag_lib.store import connect

SIZES = [1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000]
QUICK_SIZES = [500, 2_000]
HNSW = {"M": 16, "efConstruction": 64}
EFS = [16, 32, 64, 128, 256]
FLOOR = 0.99  # the recall an HNSW setting must reach to count as a replacement for FLAT
MARGIN = 1.25  # and how much cheaper it must be to count as cheaper (smaller gaps are run-to-run noise here)
REPEATS = 3  # in-process passes over the queries (their CPU per query is the mean)

Search = Callable[[np.ndarray], np.ndarray]


def in_process(search: Search, queries: np.ndarray, truth: np.ndarray, single: int) -> dict[str, float]:
    """Recall@K, CPU ms per query in calls of BATCH, and p50 wall ms of one query per call, for an in-process search."""
    found = np.vstack([search(queries[s : s + n])
                       for s, n in zip(range(0, len(queries), BATCH), batch_lengths(len(queries)))])
    cpu = time.process_time()
    for _ in range(REPEATS):
        for start in range(0, len(queries), BATCH):
            search(queries[start : start + BATCH])
    cpu_ms = 1000 * (time.process_time() - cpu) / (REPEATS * len(queries))
    walls = []
    for q in queries[:single]:
        began = time.perf_counter()
        search(q[None, :])
        walls.append(time.perf_counter() - began)
    return {f"recall@{K}": neighbour_recall(found, truth, K), "cpu_ms_per_query": cpu_ms,
            "p50_single_ms": 1000 * percentile(walls, 50)}


def peer_rows(vectors: np.ndarray, queries: np.ndarray, truth: np.ndarray, single: int) -> list[dict[str, Any]]:
    """numpy's exact scan, faiss FLAT and faiss HNSW (same build params as Lite's) on the same vectors."""
    rows = [{"engine": "numpy", "index": "FLAT",
             **in_process(lambda q: exact_top_k(vectors, q, K), queries, truth, single)}]
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    rows.append({"engine": "faiss", "index": "FLAT",
                 **in_process(lambda q: flat.search(q, K)[1], queries, truth, single)})
    hnsw = faiss.IndexHNSWFlat(vectors.shape[1], HNSW["M"], faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = HNSW["efConstruction"]
    cpu = time.process_time()
    hnsw.add(vectors)
    build_cpu_s = time.process_time() - cpu
    for ef in EFS:
        hnsw.hnsw.efSearch = ef
        measured = in_process(lambda q: hnsw.search(q, K)[1], queries, truth, single)
        rows.append({"engine": "faiss", "index": "HNSW", "ef": ef, **measured, "build_cpu_s": build_cpu_s})
    return rows


def lite_rows(sweep: Sweep, vectors: np.ndarray) -> list[dict[str, Any]]:
    """FLAT and HNSW at every ef through Milvus Lite, on a fresh flushed collection of `vectors`."""
    create_vector_collection(sweep.client, sweep.name, vectors)
    sweep.rows = []
    sweep.measure("FLAT", {}, sweep.build("FLAT", None), {})
    built = sweep.build("HNSW", HNSW)
    for ef in EFS:
        sweep.measure("HNSW", HNSW, built, {"ef": ef})
    sweep.client.drop_collection(sweep.name)
    keep = (f"recall@{K}", "cpu_ms_per_query", "p50_single_ms", "p50_batched_ms", "build_cpu_s", "segments")
    return [{"engine": "Milvus Lite", "index": r["index"], "ef": r["ef"], **{k: r[k] for k in keep}}
            for r in sweep.rows]


def crossing(rows: list[dict[str, Any]], engine: str, metric: str) -> dict[str, Any]:
    """The smallest size from which on (at it and every larger size measured) the cheapest HNSW setting with
    recall >= FLOOR costs MARGIN times less `metric` than FLAT; None when the largest size is not such a size."""
    by_size: dict[int, dict[str, float | None]] = {}
    for size in sorted({r["vectors"] for r in rows}):
        here = [r for r in rows if r["vectors"] == size and r["engine"] == engine]
        flat = next(r[metric] for r in here if r["index"] == "FLAT")
        good = [r[metric] for r in here if r["index"] == "HNSW" and r[f"recall@{K}"] >= FLOOR]
        by_size[size] = {"FLAT": flat, "HNSW": min(good) if good else None}
    sizes = list(by_size)
    wins = [s for i, s in enumerate(sizes)
            if all(by_size[t]["HNSW"] is not None and MARGIN * by_size[t]["HNSW"] < by_size[t]["FLAT"]
                   for t in sizes[i:])]
    return {"engine": engine, "metric": metric, "HNSW cheaper from": min(wins) if wins else None, "by size": by_size}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks crossing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two tiny sizes (a smoke test)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help=f"collection sizes (default {SIZES})")
    parser.add_argument("--queries", type=int, default=200, help="queries drawn from the same topics (default 200)")
    parser.add_argument("--single", type=int, default=50, help="queries also timed one per call (default 50)")
    parser.add_argument("--out", default=None, help="results name under bench_results/ (default crossing)")
    args = parser.parse_args(argv)
    args.sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    return args


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    lite_dir = Path(tempfile.mkdtemp()) / "bench_crossing.db"
    client = connect(uri=str(lite_dir))
    queries = clustered_vectors(args.queries, seed=1)
    results: dict[str, Any] = {"k": K, "batch": BATCH, "hnsw": HNSW, "efs": EFS, "floor": FLOOR, "margin": MARGIN,
                               "queries": args.queries, "single": args.single, "loadavg_start": os.getloadavg()}
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    try:
        for size in tqdm(args.sizes, desc="sizes", file=sys.stderr):
            vectors = clustered_vectors(size, seed=0)
            truth = exact_top_k(vectors, queries, K)
            sweep = Sweep(client, lite_dir, "crossing", queries, args.single, truth=truth)
            rows += [{"vectors": size, **r}
                     for r in lite_rows(sweep, vectors) + peer_rows(vectors, queries, truth, args.single)]
    finally:
        client.close()
        shutil.rmtree(lite_dir.parent, ignore_errors=True)
    results["rows"] = rows
    results["crossings"] = [crossing(rows, engine, metric) for engine in ("Milvus Lite", "faiss")
                            for metric in ("cpu_ms_per_query", "p50_single_ms")]
    results["total_s"] = time.perf_counter() - started
    results["loadavg_end"] = os.getloadavg()
    print(format_table(rows))
    for c in results["crossings"]:
        print(f'{c["engine"]:12} {c["metric"]:17} HNSW (recall >= {FLOOR}) {MARGIN}x cheaper than FLAT '
              f'from {c["HNSW cheaper from"]} vectors')
    print("wrote", write_results(args.out or ("crossing_quick" if args.quick else "crossing"), results))


if __name__ == "__main__":
    main(sys.argv[1:])
