"""The last points of recall on CMRC 2018: scores of several granularities and fields, fused per context.

Signals, each a score per (question, context) taken from the context's best row, computed in-process on the rows
`bench retrieval` indexes: e5 dense over 120-character children and over 300-character chunks, e5 over the
titles, BM25 (jieba, rank_bm25) over the chunks, the whole contexts and the titles. Each signal is min-max scaled
per question and a weighted sum ranks the contexts. The weights are chosen on one half of the contexts (grid
search by MRR@5) and checked on the other half, which they never saw, both ways round; R@1, R@5 and MRR@5 with
bootstrap 95% intervals. In-process numpy, not Milvus: it finds the route before the course builds it."""

from __future__ import annotations

import itertools

import numpy as np
from rank_bm25 import BM25Okapi
from tqdm import tqdm

from benchmarks import write_results
from benchmarks.retrieval import cmrc_parser, cmrc_sample, half_a
from rag_lib.chunking import CHUNK_OVERLAP, CHUNK_SIZE
from rag_lib.embeddings import embed_queries, get_embeddings
from rag_lib.experiments.cmrc import Dataset, dataset_label
from rag_lib.experiments.cmrc_search import chunk_contexts
from rag_lib.experiments.evaluation import bootstrap_ci
from rag_lib.experiments.results import format_table
from rag_lib.text import tokenize

GRID = (0.0, 0.2, 0.4, 0.6)  # weights tried for every signal
TOP = 5


def best_per_context(data: Dataset, rows: list[dict], scores: np.ndarray) -> np.ndarray:
    """(questions, contexts): each context's best row score."""
    owner = np.array([list(data.contexts).index(r["source"]) for r in rows])
    out = np.full((scores.shape[0], len(data.contexts)), -np.inf, dtype=np.float32)
    for j in range(len(data.contexts)):
        out[:, j] = scores[:, owner == j].max(axis=1)
    return out


def bm25_scores(texts: list[str], questions: list[str]) -> np.ndarray:
    """rank_bm25 over jieba tokens: (questions, texts); an empty question scores 0 everywhere."""
    bm25 = BM25Okapi([tokenize(t) or ["\u3000"] for t in texts])
    return np.array([bm25.get_scores(tokenize(q)) if q else np.zeros(len(texts)) for q in questions], dtype=np.float32)


def signals(data: Dataset, embeddings, questions: list[str]) -> dict[str, np.ndarray]:
    """Every signal as a (questions, contexts) matrix, min-max scaled per question."""
    query = np.asarray(embed_queries(embeddings, [q or " " for q in questions]), dtype=np.float32)
    chunks, children = chunk_contexts(data, CHUNK_SIZE, CHUNK_OVERLAP), chunk_contexts(data, 120, 20)
    ids = list(data.contexts)
    titles = [data.titles[c] or data.contexts[c][:20] for c in ids]

    def dense(texts: list[str]) -> np.ndarray:
        return query @ np.asarray(embeddings.embed_documents(texts), dtype=np.float32).T

    raw = {
        "e5 children (120)": best_per_context(data, children, dense([r["text"] for r in children])),
        "e5 chunks (300)": best_per_context(data, chunks, dense([r["text"] for r in chunks])),
        "e5 titles": dense(titles),
        "BM25 chunks (300)": best_per_context(data, chunks, bm25_scores([r["text"] for r in chunks], questions)),
        "BM25 contexts": bm25_scores([data.contexts[c] for c in ids], questions),
        "BM25 titles": bm25_scores(titles, questions),
    }
    return {name: min_max_rows(m) for name, m in raw.items()}


def min_max_rows(scores: np.ndarray) -> np.ndarray:
    """Each row scaled to [0, 1]."""
    low, high = scores.min(axis=1, keepdims=True), scores.max(axis=1, keepdims=True)
    return (scores - low) / np.maximum(high - low, 1e-9)


def per_question(scores: np.ndarray, gold: np.ndarray, asked: np.ndarray) -> dict[str, np.ndarray]:
    """Hit@1, hit@5 and reciprocal rank (top 5) per question; an empty question is a miss."""
    top = np.argsort(-scores, axis=1, kind="stable")[:, :TOP]
    found = top == gold[:, None]
    rank = np.where(found.any(axis=1), found.argmax(axis=1) + 1, 0)
    hit = asked & (rank > 0)
    return {"R@1": (hit & (rank == 1)).astype(float), "R@5": hit.astype(float),
            "MRR@5": np.where(hit, 1.0 / np.maximum(rank, 1), 0.0)}


def summary(values: dict[str, np.ndarray], mask: np.ndarray) -> dict:
    """Means with bootstrap 95% intervals over the questions in `mask`."""
    row = {"questions": int(mask.sum())}
    for metric, v in values.items():
        mean, low, high = bootstrap_ci(v[mask])
        row |= {metric: mean, f"{metric} 95% CI": [low, high]}
    return row


def fuse(sig: dict[str, np.ndarray], weights: dict[str, float]) -> np.ndarray:
    """The weighted sum of the scaled signals."""
    return sum(w * sig[name] for name, w in weights.items() if w)


def tune(sig: dict[str, np.ndarray], gold: np.ndarray, asked: np.ndarray, mask: np.ndarray) -> dict[str, float]:
    """The grid weights with the best MRR@5 (then R@1) on the questions in `mask`."""
    names, best, chosen = list(sig), (-1.0, -1.0), {}
    for combo in tqdm(list(itertools.product(GRID, repeat=len(names))), desc="weights"):
        if not any(combo):
            continue
        weights = dict(zip(names, combo))
        scores = per_question(fuse(sig, weights)[mask], gold[mask], asked[mask])
        key = (scores["MRR@5"].mean(), scores["R@1"].mean())
        if key > best:
            best, chosen = key, weights
    return chosen


def main(argv: list[str]) -> None:
    args = cmrc_parser("ceiling", __doc__).parse_args(argv)
    data, questions = cmrc_sample(args)
    ids = list(data.contexts)
    gold = np.array([ids.index(q.context_id) for q in questions])
    asked = np.array([bool(q.text) for q in questions])
    sig = signals(data, get_embeddings(), [q.text for q in questions])
    everyone = np.ones(len(questions), dtype=bool)
    rows = [{"pipeline": name, **summary(per_question(m, gold, asked), everyone)} for name, m in sig.items()]
    half = half_a(ids)
    in_a = np.array([q.context_id in half for q in questions])
    halves = []
    for tuned_on, mask in (("A", in_a), ("B", ~in_a)):
        weights = tune(sig, gold, asked, mask)
        scores = per_question(fuse(sig, weights), gold, asked)
        halves.append({"tuned on": tuned_on, "weights": weights, "in sample": summary(scores, mask),
                       "held out": summary(scores, ~mask), "all": summary(scores, everyone)})
    print(format_table([{k: v for k, v in r.items() if "CI" not in k} for r in rows]))
    for h in halves:
        print(f"\ntuned on half {h['tuned on']}: {h['weights']}")
        print(format_table([{"scored on": part, **{k: v for k, v in h[part].items() if "CI" not in k}}
                            for part in ("in sample", "held out", "all")]))
    setup = {"questions": len(questions), "contexts": len(ids), "grid": GRID, "split": "contexts, seed 0, halves",
             "dataset": dataset_label(args.cmrc)}
    print("\nwrote", write_results(args.out, {"setup": setup, "signals": rows, "halves": halves}))


if __name__ == "__main__":
    main([])
