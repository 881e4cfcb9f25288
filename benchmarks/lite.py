"""Where Milvus Lite spends a query's time, and how its BM25 statistics depend on segments.

1. segments (CMRC 2018, 1,002 questions): the same chunks and vectors loaded three ways: left unflushed, flushed
   once (one segment), and flushed every SMALL_FLUSH rows (several segments, as when files arrive a few at a time;
   Lite merges small segments of similar file size, so fewer remain than flushes); the loads use jieba alone
   (MEASURED_ANALYZER), and BM25 is also measured with the course analyzer's stop filter (ANALYZER_PARAMS) on one flush.
   BM25, dense and hybrid RRF: R@1 and MRR@5 on every question, the paired R@1 difference to "flushed once" with a
   bootstrap 95% interval, and p50/p95 with one question per call on a seeded sample (all loads interleaved).
2. scale: a collection of each size in --sizes, grown with real-looking text (the sentences of CMRC contexts
   shuffled into new 300-character chunks) and flushed once. Dense, BM25, hybrid RRF and the client-side weighted
   fusion are timed one question per call and BATCH per call, beside BM25 and hybrid RRF over a second collection of
   the same rows with the course analyzer's stop filter (SCALE_STOPPED), BM25 with client-side statistics
   (rag_lib.experiments.client_bm25: a sparse IP search, alone and fused with dense), rank_bm25 and numpy brute force
   over the same rows in the same run. Document vectors at scale are random unit vectors: search time does not depend
   on their values, and quality is measured in part 1.
3. profile: the Milvus Lite functions one hybrid query spends its time in at the largest size (sampled).

Query vectors are the embedding model's, computed before any timing: the times are of the search alone."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from tqdm import tqdm

from benchmarks import MEASURED_ANALYZER, write_results
from benchmarks.components import RESAMPLES, score, summary
from benchmarks.fusion import precomputed
from benchmarks.retrieval import BATCH, cmrc_parser, cmrc_run, milvus_batch
from rag_lib.chunking import CHUNK_OVERLAP, CHUNK_SIZE
from rag_lib.embeddings import cap_query, embed_queries
from rag_lib.experiments.client_bm25 import BM25Encoder, ClientBM25Search, create_collection
from rag_lib.experiments.cmrc import dataset_label
from rag_lib.experiments.cmrc_search import CANDIDATES, Search, chunk_contexts, load_rows, milvus_search, peer_bm25
from rag_lib.experiments.evaluation import paired_difference, percentile
from rag_lib.experiments.parent_fusion import ParentFusionRetriever, Signal
from rag_lib.experiments.results import format_table
from rag_lib.retriever import Retriever
from rag_lib.store import ANALYZER_PARAMS, make_row
from rag_lib.text import split_sentences

SMALL_FLUSH = 64  # rows per flush in the "many segments" load
TIMED = 200  # questions timed one per call (a seeded sample)
ROUTES = {"BM25": {"search_type": "sparse"}, "dense": {"search_type": "dense"}, "hybrid RRF": {}}
SCALE_ROUTES = ROUTES | {"hybrid weighted, client-side min-max": {"ranker": "weighted", "weights": (0.6, 0.4)}}
CLIENT_BM25 = "BM25, client-side statistics (sparse IP)"
CLIENT_HYBRID = "hybrid weighted, dense + client-side BM25"
ONE_FLUSH = "flushed once"
STOPPED = "BM25, flushed once, stop filter"
SCALE_STOPPED = ("BM25, stop filter", "hybrid RRF, stop filter")  # the scale part's routes over ANALYZER_PARAMS
MIN_PROFILE_S = 2.0  # the sampler runs at least this long


class KnownQueries(Embeddings):
    """The embedding model's vectors for a fixed set of questions, computed once up front and looked up by text."""

    def __init__(self, embeddings: Embeddings, questions: list[str]) -> None:
        self.vectors = dict(zip(map(cap_query, questions), embed_queries(embeddings, questions)))

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[cap_query(text)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError("query vectors only: documents are embedded before they are loaded")


def grown_rows(contexts: list[str], size: int, seed: int = 0) -> list[dict]:
    """`size` chunks of real-looking Chinese text: a random context's sentences shuffled, cut to CHUNK_SIZE."""
    rng = random.Random(seed)
    sentences = [split_sentences(c) for c in contexts]
    rows = []
    for i in range(size):
        picked = rng.choice(sentences)[:]
        rng.shuffle(picked)
        rows.append(make_row(f"grown/{i}", "".join(picked)[:CHUNK_SIZE], parent_id=f"grown/{i}", language="zh"))
    return rows


def numpy_dense(vectors: np.ndarray, queries: KnownQueries) -> Search:
    """Brute-force inner product over the same vectors (the in-process peer)."""
    def search(q: str) -> list[tuple[str, str]]:
        scores = vectors @ np.asarray(queries.embed_query(q), dtype=vectors.dtype)
        top = np.argpartition(-scores, CANDIDATES)[:CANDIDATES]
        return [(str(i), "") for i in top[np.argsort(-scores[top])]]

    return search


def time_calls(pipelines: dict[str, Search], questions: list[str], desc: str) -> dict[str, list[float]]:
    """Milliseconds per call for every pipeline, interleaved question by question."""
    ms: dict[str, list[float]] = {name: [] for name in pipelines}
    for q in tqdm(questions, desc=desc):
        for name, search in pipelines.items():
            start = time.perf_counter()
            search(q)
            ms[name].append((time.perf_counter() - start) * 1000)
    return ms


def segments(client, data, embeddings, questions: list, timed: list[str]) -> dict:
    """Part 1: one set of chunks, three loads (and BM25 with a stop filter); quality on every question, latency
    on the timed sample."""
    rows = chunk_contexts(data, CHUNK_SIZE, CHUNK_OVERLAP)
    vectors = np.asarray(embeddings.embed_documents([r["text"] for r in rows]), dtype=np.float32)
    queries = KnownQueries(embeddings, sorted({q.text for q in questions if q.text}))
    loads = {"unflushed": None, ONE_FLUSH: len(rows), f"flushed every {SMALL_FLUSH} rows": SMALL_FLUSH}
    retrievers = {}
    for i, (load_name, every) in enumerate(loads.items()):
        load_rows(client, f"load{i}", rows, {"dense": vectors}, every, MEASURED_ANALYZER)
        for route, kwargs in ROUTES.items():
            retrievers[f"{route}, {load_name}"] = Retriever(
                client=client, embeddings=queries, collection=f"load{i}", k=CANDIDATES, **kwargs)
    load_rows(client, "load_stop", rows, {"dense": vectors}, len(rows), ANALYZER_PARAMS)
    retrievers[STOPPED] = Retriever(client=client, embeddings=queries, collection="load_stop", k=CANDIDATES,
                                    search_type="sparse")
    texts = sorted(queries.vectors)
    pipelines = {name: precomputed(milvus_batch(r), texts) for name, r in retrievers.items()}
    pipelines["BM25, rank_bm25 (in-process)"] = peer_bm25(rows)
    runs = score(pipelines, questions, f"{len(pipelines)} pipelines per question")
    ms = time_calls({name: milvus_search(r) for name, r in retrievers.items()}, timed, "one question per call")
    table = []
    for name, run in runs.items():
        row = {k: v for k, v in summary(name, run).items() if k != "p50 ms"}
        route = name.split(",")[0]
        base = runs.get(f"{route}, {ONE_FLUSH}")  # the stop filter and rank_bm25 are compared with BM25 too
        if base is not None and name != f"{route}, {ONE_FLUSH}":
            diff, low, high = paired_difference(run["R@1"], base["R@1"], resamples=RESAMPLES)
            row |= {f"R@1 - {ONE_FLUSH}": diff, "95% CI": [low, high]}
        if name in ms:
            row |= {"p50 ms": percentile(ms[name], 50), "p95 ms": percentile(ms[name], 95)}
        table.append(row)
    return {"chunks": len(rows), "rows per flush": loads, "pipelines": table}


def client_routes(client, rows: list[dict], dense: Retriever
                  ) -> tuple[dict[str, ClientBM25Search | ParentFusionRetriever], float]:
    """BM25 with the statistics in the client (`rag_lib.experiments.client_bm25`) over the same rows, alone and fused
    with the dense search (0.6 / 0.4, as the weighted route); and the seconds to fit, encode and load it."""
    started = time.perf_counter()
    encoder = BM25Encoder().fit([r["text"] for r in rows])
    create_collection(client, "grown_client", rows, encoder)
    bm25 = ClientBM25Search(client, "grown_client", encoder, CANDIDATES)
    fused = ParentFusionRetriever(signals=[Signal("dense", dense, 0.6), Signal("BM25", bm25, 0.4)], k=CANDIDATES)
    return {CLIENT_BM25: bm25, CLIENT_HYBRID: fused}, time.perf_counter() - started


def scale(client, data, embeddings, timed: list[str], size: int) -> tuple[dict, Retriever]:
    """Part 2 at one size: load, then every route one question per call and batched, peers beside."""
    rows = grown_rows(list(data.contexts.values()), size)
    dim = len(embeddings.embed_query("dimension probe"))
    vectors = np.random.default_rng(size).standard_normal((size, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    seconds = load_rows(client, "grown", rows, {"dense": vectors}, len(rows), MEASURED_ANALYZER)
    load_rows(client, "grown_stop", rows, {"dense": vectors}, len(rows), ANALYZER_PARAMS)
    queries = KnownQueries(embeddings, timed)
    retrievers = {name: Retriever(client=client, embeddings=queries, collection="grown", k=CANDIDATES, **kwargs)
                  for name, kwargs in SCALE_ROUTES.items()}
    stopped = {name: Retriever(client=client, embeddings=queries, collection="grown_stop", k=CANDIDATES,
                               **ROUTES[name.split(",")[0]]) for name in SCALE_STOPPED}
    client_side, client_build = client_routes(client, rows, retrievers["dense"])
    started = time.perf_counter()
    peers = {"BM25, rank_bm25 (in-process)": peer_bm25(rows)}
    bm25_build = time.perf_counter() - started
    peers["dense, numpy brute force"] = numpy_dense(vectors, queries)
    many = retrievers | stopped | client_side
    calls = {**{name: milvus_search(r) if isinstance(r, BaseRetriever) else (lambda q, r=r: milvus_batch(r)([q])[0])
                for name, r in many.items()}, **peers}
    for search in calls.values():  # first call: caches and lazily built indexes are not part of the timing
        search(timed[0])
    ms = time_calls(calls, timed, f"{size} chunks, one question per call")
    batched = {}
    for name, r in many.items():
        started = time.perf_counter()
        for at in range(0, len(timed), BATCH):
            r.search_many(timed[at : at + BATCH])
        batched[name] = 1000 * (time.perf_counter() - started) / len(timed)
    table = [{"pipeline": name, "p50 ms": percentile(v, 50), "p95 ms": percentile(v, 95),
              f"batched ms/q ({BATCH} per call)": batched.get(name)} for name, v in ms.items()]
    result = {"chunks": size, "insert + flush + load s": seconds, "rank_bm25 build s": bm25_build,
              "client-side BM25 fit + encode + load s": client_build, "pipelines": table}
    return result, retrievers["hybrid RRF"]


def profile(retriever: Retriever, questions: list[str], top: int = 10) -> list[dict]:
    """Part 3: where Lite's server threads are while hybrid queries run (`questions`, repeated for at least
    MIN_PROFILE_S). Lite serves from threads of this process, so a sampler thread reads every thread's stack each
    millisecond (`sys._current_frames`) and counts the innermost Milvus Lite function; the share of samples becomes
    milliseconds per query."""
    counts: Counter[str] = Counter()
    done = threading.Event()

    def sample() -> None:
        me = threading.get_ident()
        while not done.is_set():
            for thread, frame in sys._current_frames().items():
                while frame is not None and thread != me and "milvus_lite" not in frame.f_code.co_filename:
                    frame = frame.f_back
                if frame is not None and thread != me:
                    code = frame.f_code
                    counts[f"{Path(code.co_filename).parent.name}/{Path(code.co_filename).name} {code.co_name}"] += 1
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    started, asked = time.perf_counter(), 0
    sampler.start()
    while asked < len(questions) or time.perf_counter() - started < MIN_PROFILE_S:  # enough samples when fast
        retriever.invoke(questions[asked % len(questions)])
        asked += 1
    done.set()
    sampler.join()
    per_query = 1000 * (time.perf_counter() - started) / asked
    total = sum(counts.values()) or 1
    return [{"Milvus Lite function": name, "share of samples": n / total, "ms per query": per_query * n / total}
            for name, n in counts.most_common(top)]


def main(argv: list[str]) -> None:
    parser = cmrc_parser("lite", __doc__)
    parser.add_argument("--sizes", default="1000,10000", help="corpus sizes of the scale part, e.g. 1000,10000,100000")
    args = parser.parse_args(argv)
    run = cmrc_run(args)
    data, questions, embeddings, client = run.data, run.questions, run.embeddings, run.client
    asked = [q.text for q in questions if q.text]
    timed = random.Random(1).sample(asked, min(TIMED, len(asked)))
    parts = {"segments": segments(client, data, embeddings, questions, timed)}
    print(format_table([{k: v for k, v in r.items() if k != "95% CI"} for r in parts["segments"]["pipelines"]]))
    parts["scale"] = []
    for size in (int(s) for s in args.sizes.split(",")):
        result, hybrid = scale(client, data, embeddings, timed, size)
        parts["scale"].append(result)
        print(f"\n{size} chunks: loaded in {result['insert + flush + load s']:.1f} s")
        print(format_table(result["pipelines"]))
    parts["profile"] = profile(hybrid, timed[:20])
    print(f"\nwhere one hybrid query spends its time at {size} chunks:\n" + format_table(parts["profile"]))
    client.close()
    setup = {"questions": len(questions), "timed questions": len(timed), "candidates": CANDIDATES, "batch": BATCH,
             "small flush": SMALL_FLUSH, "bootstrap resamples": RESAMPLES,
             "dataset": dataset_label(args.cmrc),
             "BM25 analyzer": MEASURED_ANALYZER}
    print("\nwrote", write_results(args.out, {"setup": setup, **parts}))


if __name__ == "__main__":
    main([])
