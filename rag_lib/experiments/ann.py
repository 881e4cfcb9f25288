"""Approximate nearest-neighbour (ANN) experiments on Milvus: one bare vector collection, rebuilt with each
index type and parameter set, and its recall of the exact top-k (`neighbour_recall`) measured against an exact FLAT
search of the same collection.

Milvus Lite quirk (pymilvus 3.0.2 + milvus-lite 3.2.2): build params passed the normal way
(`params={"M": 8}`) are silently dropped and the defaults used; nested as `params={"params": {"M": 8}}` they
are honoured. `build_index(..., nested=True)` uses the form that works on Lite and on servers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from pymilvus import DataType, MilvusClient, MilvusException

VECTOR_FIELD = "vec"
METRIC = "COSINE"
INSERT_BATCH = 2000
CLUSTER_SPACE_SEED = 12345  # the topics and subspace of `clustered_vectors`, shared by every seed
# Where a refused index is logged: pymilvus logs the error with a traceback, Milvus Lite's in-process server logs
# the refusal, and Lite's background index builder logs it again if it runs before the refused index is dropped.
REFUSAL_LOGGERS = ("pymilvus.decorators", "milvus_lite.adapter.grpc.servicer", "milvus_lite.engine.collection")


def unit_vectors(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    """`n` seeded random unit vectors (float32): the structure-free worst case for an ANN index."""
    vectors = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def clustered_vectors(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    """`n` seeded unit vectors shaped like text embeddings: 256 topics in a 32-dimensional subspace, spread
    around their topic, plus a little noise. Every seed draws from the same topics, so one seed can be the data
    and another the queries."""
    space = np.random.default_rng(CLUSTER_SPACE_SEED)
    centres = space.standard_normal((256, 32))
    basis = space.standard_normal((32, dim)) / np.sqrt(32)
    rng = np.random.default_rng(seed)
    latent = centres[rng.integers(len(centres), size=n)] + rng.standard_normal((n, 32))
    vectors = (latent @ basis + 0.02 * rng.standard_normal((n, dim))).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def create_vector_collection(client: MilvusClient, name: str, vectors: np.ndarray) -> None:
    """(Re)create collection `name` with INT64 ids 0..n-1 and `vectors`, no index yet, flushed to disk.

    Flushing matters on Lite: rows still in the in-memory buffer are always searched exactly, so an index
    is only exercised on flushed rows."""
    if client.has_collection(name):
        client.drop_collection(name)
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field(VECTOR_FIELD, DataType.FLOAT_VECTOR, dim=int(vectors.shape[1]))
    client.create_collection(name, schema=schema)
    for start in range(0, len(vectors), INSERT_BATCH):
        block = vectors[start : start + INSERT_BATCH]
        client.insert(name, [{"id": start + i, VECTOR_FIELD: v.tolist()} for i, v in enumerate(block)])
    client.flush(name)


def index_params(client: MilvusClient, index_type: str, build: dict[str, Any] | None, nested: bool = True) -> Any:
    """IndexParams for the vector field; `nested` wraps the build params as {"params": {...}} (see module doc)."""
    params = {"params": dict(build)} if nested and build else dict(build or {})
    prepared = client.prepare_index_params()
    prepared.add_index(VECTOR_FIELD, index_type=index_type, metric_type=METRIC, params=params)
    return prepared


def build_index(
    client: MilvusClient, name: str, index_type: str, build: dict[str, Any] | None = None, nested: bool = True
) -> float:
    """Replace the collection's vector index (release, drop, create, load) and return the build seconds."""
    client.release_collection(name)
    for existing in client.list_indexes(name):
        client.drop_index(name, existing)
    start = time.perf_counter()
    client.create_index(name, index_params(client, index_type, build, nested))
    client.load_collection(name)  # Lite builds each segment's index in create_index/load
    return time.perf_counter() - start


@contextmanager
def silenced(names: Sequence[str]) -> Iterator[None]:
    """Drop every record of the named loggers inside the block, then give them back their own levels."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def try_index_type(client: MilvusClient, name: str, index_type: str, build: dict[str, Any] | None = None) -> str:
    """Build `index_type` and report "ok" or the server's refusal (the refusal's error logs silenced meanwhile,
    other logging untouched); a refused index is dropped, so the collection is left with no index.

    Milvus Lite (milvus-lite 3.x) saves a refused index before building it and keeps it: its background builder,
    run after each flush, would retry the build and log the error whenever it comes, so it is dropped at once."""
    with silenced(REFUSAL_LOGGERS):
        try:
            build_index(client, name, index_type, build)
            return "ok"
        except MilvusException as error:
            client.release_collection(name)
            for refused in client.list_indexes(name):
                client.drop_index(name, refused)
            return error.message


def describe_vector_index(client: MilvusClient, name: str) -> dict[str, Any]:
    """describe_index of the vector field, reduced to what matters here (type, metric, build params)."""
    info = client.describe_index(name, client.list_indexes(name)[0])
    return {key: info[key] for key in ("index_type", "metric_type", "params") if key in info}


def search_ids(
    client: MilvusClient,
    name: str,
    queries: np.ndarray,
    k: int = 10,
    search: dict[str, Any] | None = None,
    batch_size: int = 100,
) -> tuple[np.ndarray, list[float]]:
    """Top-k ids per query (-1 pads missing hits), sending `batch_size` queries per call; also each call's seconds."""
    found = np.full((len(queries), k), -1, dtype=np.int64)
    seconds = []
    search_params = {"metric_type": METRIC, "params": dict(search or {})}
    for start in range(0, len(queries), batch_size):
        block = queries[start : start + batch_size]
        began = time.perf_counter()
        hits = client.search(
            name, data=block.tolist(), anns_field=VECTOR_FIELD, limit=k, search_params=search_params, output_fields=[]
        )
        seconds.append(time.perf_counter() - began)
        for row, query_hits in enumerate(hits, start):
            ids = [hit["id"] for hit in query_hits]
            found[row, : len(ids)] = ids
    return found, seconds


def neighbour_recall(found: Sequence[Sequence[Any]], truth: Sequence[Sequence[Any]], k: int = 10) -> float:
    """How many of the exact nearest neighbours an ANN search found: mean over queries of |ANN top-k ∩ exact
    top-k| / |exact top-k| (order inside the top-k ignored). Not `rag_lib.experiments.evaluation.recall_at_k`, which
    asks
    whether the RELEVANT documents were retrieved."""
    if len(found) != len(truth):
        raise ValueError(f"{len(found)} result rows for {len(truth)} ground-truth rows")
    scores = []
    for got, exact in zip(found, truth):
        expected = {i for i in list(exact)[:k] if i != -1}
        if expected:
            scores.append(len(expected & set(list(got)[:k])) / len(expected))
    return float(np.mean(scores)) if scores else float("nan")


def exact_top_k(vectors: np.ndarray, queries: np.ndarray, k: int = 10) -> np.ndarray:
    """Exact cosine top-k row numbers with numpy (vectors and queries normalised): a check on FLAT."""
    scores = queries @ vectors.T
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.take_along_axis(scores, top, axis=1).argsort(axis=1)[:, ::-1]
    return np.take_along_axis(top, order, axis=1)


def index_files(lite_dir: str | Path, name: str, index_type: str) -> list[Path]:
    """The index sidecar files Milvus Lite wrote for `name` (one per segment); empty for a server."""
    pattern = f"collections/{name}/partitions/*/indexes/*.{VECTOR_FIELD}.{index_type.lower()}.idx"
    return sorted(Path(lite_dir).glob(pattern))


def index_megabytes(lite_dir: str | Path, name: str, index_type: str) -> float | None:
    """Size on disk of the index (MB): Lite loads it whole into RAM, so it is also its memory footprint."""
    files = index_files(lite_dir, name, index_type)
    return sum(f.stat().st_size for f in files) / 1e6 if files else None
