"""The ANN sweep of the index benchmark: one data set in one Milvus collection, every index setting built and
searched, recall@10 against FLAT, latency single and batched, build time and size."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pymilvus import MilvusClient

from benchmarks import timed
from rag_lib.experiments.ann import (
    build_index,
    create_vector_collection,
    describe_vector_index,
    exact_top_k,
    index_files,
    index_megabytes,
    neighbour_recall,
    search_ids,
)
from rag_lib.experiments.evaluation import percentile

K = 10
BATCH = 25  # queries per call for the recall pass (its per-query time is the "batched" latency)
MIN_CALLS = 20  # a latency median is taken over at least this many calls (passes are repeated if needed)


@dataclass
class Grid:
    """Which index settings to build and which search params to sweep on each."""

    ivf_nlist: list[int]
    nprobe: list[int]
    hnsw: list[tuple[int, int]]  # (M, efConstruction), passed nested so Lite honours them
    ef: list[int]
    hnsw_sq: list[tuple[int, int]] = field(default_factory=list)
    ivf_sq8_nlist: list[int] = field(default_factory=list)


# The dropped-params demonstration: tiny HNSW build params, passed the normal way and nested.
TINY_HNSW = {"M": 4, "efConstruction": 8}
BATCH_SIZES = [1, 5, 25, 100]


def batch_lengths(n: int, size: int = BATCH) -> list[int]:
    """How many queries each call of a batched pass over `n` queries carries."""
    return [min(size, n - start) for start in range(0, n, size)]


@dataclass
class Sweep:
    """One data set loaded in one collection, measured setting by setting."""

    client: MilvusClient
    lite_dir: Path
    name: str
    queries: np.ndarray
    single: int  # how many queries are also sent one by one to time single-query latency
    truth: np.ndarray | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)

    def build(self, index_type: str, build: dict[str, Any] | None, nested: bool = True) -> dict[str, Any]:
        """Build one index; its build wall/CPU seconds, size on disk and segment count."""
        cpu = time.process_time()
        seconds = build_index(self.client, self.name, index_type, build, nested)
        form = "" if nested else " (flat params)"
        log(f"{self.name}: {index_type} {params_label(build or {})}{form} built in {seconds:.1f} s")
        return {
            "build_s": seconds,
            # Lite builds in this process: its CPU seconds suffer less than wall-clock from a busy machine
            "build_cpu_s": time.process_time() - cpu,
            "index_mb": index_megabytes(self.lite_dir, self.name, index_type),
            "segments": len(index_files(self.lite_dir, self.name, index_type)),
        }

    def passes(self, queries: np.ndarray, search: dict[str, int], batch: int) -> tuple[np.ndarray, list[float], float]:
        """Search `queries` in calls of `batch`, repeating the pass until MIN_CALLS calls were timed.

        Returns the ids of the first pass, per-query seconds of every call, and CPU seconds per query (Lite
        searches in this process, so CPU time counts the work even when a busy machine stretches the wall clock)."""
        sizes = batch_lengths(len(queries), batch)
        repeats = -(-MIN_CALLS // len(sizes))
        per_query: list[float] = []
        cpu = time.process_time()
        for i in range(repeats):
            ids, calls = search_ids(self.client, self.name, queries, K, search, batch_size=batch)
            if i == 0:
                found = ids
            per_query += [sec / n for sec, n in zip(calls, sizes)]
        return found, per_query, (time.process_time() - cpu) / (repeats * len(queries))

    def measure(self, family: str, build: dict[str, Any], built: dict[str, Any], search: dict[str, int]) -> np.ndarray:
        """Recall@K, p50 latency single and batched, CPU per query, for one search setting; appends a row."""
        found, batched, cpu = self.passes(self.queries, search, BATCH)
        _, singles, _ = self.passes(self.queries[: self.single], search, 1)
        truth = found if self.truth is None else self.truth
        self.rows.append(
            {
                "index": family,
                **{k: build.get(k) for k in ("M", "efConstruction", "nlist")},
                **{k: search.get(k) for k in ("ef", "nprobe")},
                f"recall@{K}": neighbour_recall(found, truth, K),
                "p50_single_ms": 1000 * percentile(singles, 50),
                "p50_batched_ms": 1000 * percentile(batched, 50),
                "cpu_ms_per_query": 1000 * cpu,
                **built,
            }
        )
        return found

    def batch_study(self, family: str, search: dict[str, int]) -> list[dict[str, Any]]:
        """Per-query latency for several queries-per-call sizes, on the index currently built."""
        rows = []
        for size in (s for s in BATCH_SIZES if s <= len(self.queries)):
            queries = self.queries[: self.single] if size == 1 else self.queries[: len(self.queries) // size * size]
            _, per_query, cpu = self.passes(queries, search, size)
            rows.append({"index": family, "search": params_label(search), "batch": size,
                         "p50_ms_per_query": 1000 * percentile(per_query, 50), "cpu_ms_per_query": 1000 * cpu})
        return rows


def run_sweep(sweep: Sweep, grid: Grid, vectors: np.ndarray, dropped: bool) -> dict[str, Any]:
    """FLAT (ground truth), then every grid setting; optionally the dropped-params demonstration."""
    out: dict[str, Any] = {"batch_study": []}
    built = sweep.build("FLAT", None)
    sweep.truth = sweep.measure("FLAT", {}, built, {})
    out["flat_vs_numpy_recall"] = neighbour_recall(sweep.truth, exact_top_k(vectors, sweep.queries, K), K)
    out["batch_study"] += sweep.batch_study("FLAT", {})

    for family, nlists in (("IVF_FLAT", grid.ivf_nlist), ("IVF_SQ8", grid.ivf_sq8_nlist)):
        for nlist in nlists:
            built = sweep.build(family, {"nlist": nlist})
            for nprobe in grid.nprobe:
                sweep.measure(family, {"nlist": nlist}, built, {"nprobe": nprobe})
            if family == "IVF_FLAT" and nlist == nlists[-1]:
                out["batch_study"] += sweep.batch_study(family, {"nprobe": grid.nprobe[-2]})

    for family, builds in (("HNSW", grid.hnsw), ("HNSW_SQ", grid.hnsw_sq)):
        for m, ef_construction in builds:
            params = {"M": m, "efConstruction": ef_construction}
            built = sweep.build(family, params)
            for ef in grid.ef:
                sweep.measure(family, params, built, {"ef": ef})
            if family == "HNSW" and (m, ef_construction) == builds[-1]:
                out["batch_study"] += sweep.batch_study(family, {"ef": 64})

    if dropped:
        out["dropped_params"] = dropped_params(sweep, grid.ef)
    return out


def dropped_params(sweep: Sweep, efs: list[int]) -> list[dict[str, Any]]:
    """Build HNSW with TINY_HNSW passed the normal way (Lite drops it: defaults M=16/efC=200) and nested."""
    results = []
    for nested in (False, True):
        built = sweep.build("HNSW", TINY_HNSW, nested=nested)
        described = describe_vector_index(sweep.client, sweep.name)
        label = "HNSW default (flat params dropped)" if not described.get("params") else "HNSW"
        build = {**TINY_HNSW} if described.get("params") else {"M": 16, "efConstruction": 200}
        recalls = {}
        for ef in efs:
            found = sweep.measure(label, build, built, {"ef": ef})
            recalls[ef] = neighbour_recall(found, sweep.truth, K)
        results.append(
            {
                "passed_as": f"params={json.dumps({'params': TINY_HNSW} if nested else TINY_HNSW)}",
                "describe_index": described,
                f"recall@{K} by ef": recalls,
                **built,
            }
        )
    return results


def dataset_sweep(
    client: MilvusClient,
    lite_dir: Path,
    name: str,
    vectors: np.ndarray,
    queries: np.ndarray,
    grid: Grid,
    single: int,
    dropped: bool,
) -> dict[str, Any]:
    """Insert `vectors` into a fresh collection and run the whole sweep on it."""
    _, insert_s = timed(lambda: create_vector_collection(client, name, vectors))
    sweep = Sweep(client, lite_dir, name, queries, single)
    out = run_sweep(sweep, grid, vectors, dropped)
    client.drop_collection(name)
    return {"vectors": len(vectors), "dim": int(vectors.shape[1]), "queries": len(queries), "insert_s": insert_s,
            "insert_rows_per_s": len(vectors) / insert_s, "settings": sweep.rows, **out}


def log(message: str) -> None:
    """Progress on stderr (the tables go to stdout)."""
    print(message, file=sys.stderr, flush=True)


def params_label(params: dict[str, Any]) -> str:
    """`M=16 efConstruction=64` style text for a table cell ("-" when empty)."""
    return " ".join(f"{k}={v}" for k, v in params.items() if v is not None) or "-"


def settings_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sweep rows with build and search params folded into two text columns, for printing."""
    folded = ("M", "efConstruction", "nlist", "ef", "nprobe")
    return [
        {
            "index": r["index"],
            "build": params_label({k: r[k] for k in folded[:3]}),
            "search": params_label({k: r[k] for k in folded[3:]}),
            **{k: v for k, v in r.items() if k not in folded and k != "index"},
        }
        for r in rows
    ]
