"""Sparse weighting and fusion knobs on CMRC 2018, scored like `bench retrieval` (a hit = the question's own
context among the top-k contexts), every pipeline on every question, interleaved:

- sparse: TF-IDF vs BM25 over the same jieba words of the same chunks (numpy, in-process), beside Milvus's BM25;
- RRF's constant k swept (the course uses 60): small k trusts the top of each list, large k flattens the ranks;
- the dense share of a min-max weighted sum swept from 0 (BM25 alone) to 1 (dense alone).

Each row has R@1, R@5, MRR@5 and the paired R@1 difference to the course default (hybrid RRF k=60) with a
bootstrap 95% interval over questions. Quality only: Milvus answers BATCH questions per call here (latency is
`bench retrieval`'s job)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from benchmarks import write_results
from benchmarks.components import RESAMPLES, score, summary
from benchmarks.retrieval import BATCH, cmrc_chunks, cmrc_parser, milvus_batch
from rag_lib.experiments.cmrc import dataset_label
from rag_lib.experiments.cmrc_search import CANDIDATES, BatchSearch, Search, peer_bm25
from rag_lib.experiments.evaluation import paired_difference
from rag_lib.experiments.results import format_table
from rag_lib.retriever import Retriever
from rag_lib.store import ANALYZER_PARAMS
from rag_lib.text import tokenize

RRF_KS = (1, 5, 20, 60, 200, 1000)
DENSE_SHARES = (0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 1.0)
DEFAULT = "hybrid RRF k=60"


def tfidf_search(rows: list[dict]) -> Search:
    """TF-IDF over jieba words (log-scaled term frequency x smoothed idf, cosine of l2-normalised vectors): BM25's
    ancestor, without its saturation of repeated words or its length normalisation."""
    docs = [Counter(tokenize(r["text"])) for r in rows]
    df = Counter(word for doc in docs for word in doc)
    idf = {word: math.log((1 + len(docs)) / (1 + n)) + 1 for word, n in df.items()}

    def weights(counts: Counter) -> dict[str, float]:
        vector = {w: (1 + math.log(c)) * idf[w] for w, c in counts.items() if w in idf}
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        return {w: v / norm for w, v in vector.items()}

    vectors = [weights(doc) for doc in docs]
    postings: dict[str, list[tuple[int, float]]] = {}
    for i, vector in enumerate(vectors):
        for word, value in vector.items():
            postings.setdefault(word, []).append((i, value))

    def search(q: str) -> list[tuple[str, str]]:
        scores = np.zeros(len(rows))
        for word, value in weights(Counter(tokenize(q))).items():
            for i, doc_value in postings.get(word, []):
                scores[i] += value * doc_value
        top = np.argsort(-scores, kind="stable")[:CANDIDATES]
        return [(rows[i]["source"], rows[i]["text"]) for i in top]

    return search


def precomputed(batch: BatchSearch, texts: list[str]) -> Search:
    """Answer every question up front, BATCH per call, and look the hits up afterwards."""
    hits: dict[str, list[tuple[str, str]]] = {}
    for start in range(0, len(texts), BATCH):
        hits |= dict(zip(texts[start : start + BATCH], batch(texts[start : start + BATCH])))
    return hits.__getitem__


def main(argv: list[str]) -> None:
    args = cmrc_parser("fusion", __doc__).parse_args(argv)
    run, chunks, _ = cmrc_chunks(args, ANALYZER_PARAMS)
    data, questions, embeddings, client = run.data, run.questions, run.embeddings, run.client

    texts = sorted({q.text for q in questions if q.text})

    def retriever(**kwargs) -> Search:
        search = Retriever(client=client, embeddings=embeddings, collection="cmrc_chunks",
                           **{"k": CANDIDATES, **kwargs})
        return precomputed(milvus_batch(search), texts)

    pipelines: dict[str, Search] = {
        "TF-IDF (jieba, numpy)": tfidf_search(chunks),
        "BM25 (jieba, rank_bm25)": peer_bm25(chunks),
        "BM25 (jieba, Milvus)": retriever(search_type="sparse"),
        **{f"hybrid RRF k={k}": retriever(rrf_k=k) for k in RRF_KS},
        **{f"weighted, dense share {w:.1f}": retriever(ranker="weighted", weights=(w, 1 - w)) for w in DENSE_SHARES},
    }
    runs = score(pipelines, questions, f"{len(pipelines)} pipelines per question")
    client.close()
    rows = []
    for name, run in runs.items():
        diff, low, high = paired_difference(run["R@1"], runs[DEFAULT]["R@1"], resamples=RESAMPLES)
        row = {k: v for k, v in summary(name, run).items() if k != "p50 ms"}
        rows.append(row | {"R@1 - default": diff, "95% CI": [low, high]})
    print(format_table([{k: v for k, v in row.items() if k != "95% CI"} for row in rows]))
    setup = {"questions": len(questions), "contexts": len(data.contexts), "chunks": len(chunks),
             "candidates": CANDIDATES, "batch": BATCH, "default": DEFAULT, "bootstrap resamples": RESAMPLES,
             "dataset": dataset_label(args.cmrc),
             "BM25 analyzer": ANALYZER_PARAMS}
    print("\nwrote", write_results(args.out, {"setup": setup, "pipelines": rows}))


if __name__ == "__main__":
    main([])
