"""Advanced retrieval (notebook 05) on data/crosslingual_questions.json: does a query transform find the right file
more often than plain hybrid search, by more than the noise of a small question set?

The questions: the 23 answerable sample questions translated by hand into the other language of their document
("translated sample"), the 14 vague or cross-lingual questions of notebook 05 ("hard") and, as a control, the 23
sample questions as written ("sample as written": same language as their document, where a transform can only
lose). Per question the chat model is called four times (its translation, two other wordings, a HyDE passage in
the question's language and one in the other language) and every pipeline reuses those replies; node groups
(precomputed) and multi-path cost no call. A pipeline's score is the file-level rank of the right file among the
distinct files of its 10 chunks: recall@3 and MRR@10. Per pipeline and set: the means with bootstrap 95%
intervals, and the paired difference to the baseline (hybrid RRF on the question) with its 95% interval over
questions; LLM calls and seconds per question (its calls plus its searches). BM25 uses the course analyzer
(ANALYZER_PARAMS). `--reuse-replies` takes the model replies and model seconds recorded in the results file it
writes (bench_results/advanced.json) instead of calling the model, so a re-run costs only the searches.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pymilvus import MilvusClient
from tqdm import tqdm  # text, also in notebooks: a saved progress widget shows nothing in most viewers

from benchmarks import timed, write_results
from rag_lib.embeddings import get_embeddings
from rag_lib.experiments import results
from rag_lib.experiments.advanced import (
    LANGUAGES,
    expand_query,
    hypothetical_passage,
    multi_path_search,
    rrf_merge,
    search_by_vector,
    translate_query,
    union_search,
)
from rag_lib.experiments.demo import DOCS
from rag_lib.experiments.evaluation import bootstrap_ci, paired_difference, recall_at_k, reciprocal_rank
from rag_lib.experiments.node_groups import (
    DEFAULT_OUT,
    GROUP_COLLECTION,
    NodeGroupSearch,
    document_rows,
    index_groups,
    load_groups,
)
from rag_lib.experiments.results import advanced_table, format_table
from rag_lib.index import index_directory
from rag_lib.llm import get_chat_model
from rag_lib.retriever import Retriever
from rag_lib.store import ANALYZER_PARAMS, DEFAULT_COLLECTION, PROJECT_ROOT, connect, ensure_collection_for
from rag_lib.text import detect_language

QUESTIONS = PROJECT_ROOT / "data" / "crosslingual_questions.json"
K = 10  # chunks per question, as in notebook 05
RESAMPLES = 2000
BASELINE = "baseline: hybrid RRF"
CROSS = "translated + hard"  # the summary over both cross-lingual sets
AS_WRITTEN = "sample as written"


class Pipeline(NamedTuple):
    """The LLM replies a pipeline needs (one call each) and its search: (question, replies) -> hits."""

    calls: tuple[str, ...]
    search: Callable[[str, dict[str, Any]], list[Document]]


def load_questions(path: Path = QUESTIONS) -> list[dict]:
    """The committed questions: question, answer (or null), source file, language, set, original (if translated)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def with_originals(items: list[dict]) -> list[dict]:
    """The items, then each translated one's original question as written (the control set)."""
    flip = {"zh": "en", "en": "zh"}
    return items + [{**q, "question": q["original"], "language": flip[q["language"]], "set": AS_WRITTEN}
                    for q in items if q.get("original")]


def other_language(question: str) -> str:
    """The corpus's other language for `question` (Chinese <-> English)."""
    return LANGUAGES["en" if detect_language(question) == "zh" else "zh"]


def llm_replies(llm: BaseChatModel, question: str) -> dict[str, tuple[Any, float]]:
    """Every LLM reply the pipelines use, one call each, with the seconds it took."""
    calls = {
        "translation": lambda: translate_query(llm, question),
        "wordings": lambda: expand_query(llm, question, n=2),
        "hyde": lambda: hypothetical_passage(llm, question),
        "hyde other language": lambda: hypothetical_passage(llm, question, other_language(question)),
    }
    return {name: timed(call) for name, call in calls.items()}


def recorded_replies(rows: list[dict]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (question, set) of earlier result rows: the replies, and per pipeline the model seconds it spent.

    Rows written before "model seconds" was recorded keep only a pipeline's total seconds (model calls plus its
    searches then); for them the model seconds are estimated as that total minus the same run's baseline search
    (one hybrid search, the least any pipeline does), floored at 0."""
    recorded = {}
    for row in rows:
        pipes = row["pipelines"]
        base = pipes[BASELINE]["seconds"]
        model = {name: p.get("model seconds", max(0.0, p["seconds"] - base) if p["LLM calls"] else 0.0)
                 for name, p in pipes.items()}
        recorded[(row["question"], row["set"])] = {"replies": row["replies"], "model seconds": model}
    return recorded


def pipelines(client: MilvusClient, embeddings: Embeddings) -> dict[str, Pipeline]:
    """The baseline and notebook 05's techniques, all over the same chunks and K."""
    hybrid, dense, bm25 = (Retriever(client=client, embeddings=embeddings, k=K, search_type=kind)
                           for kind in ("hybrid", "dense", "sparse"))
    groups = NodeGroupSearch(client, embeddings, DEFAULT_COLLECTION, k=K)
    paths = {"dense": dense.invoke, "bm25": bm25.invoke, "node groups": groups}

    def by_passage(passage: str) -> list[Document]:
        return search_by_vector(client, DEFAULT_COLLECTION, embeddings.embed_documents([passage])[0], K)

    return {
        BASELINE: Pipeline((), lambda q, r: hybrid.invoke(q)),
        "translation": Pipeline(("translation",), lambda q, r: hybrid.invoke(r["translation"])),
        "question + translation (union)": Pipeline(
            ("translation",), lambda q, r: union_search(hybrid.invoke, [q, r["translation"]], K)),
        "question + translation (RRF)": Pipeline(
            ("translation",), lambda q, r: rrf_merge({"q": hybrid.invoke(q), "t": hybrid.invoke(r["translation"])}, K)),
        "multi-query (question, translation, 2 wordings)": Pipeline(
            ("translation", "wordings"),
            lambda q, r: union_search(hybrid.invoke, [q, r["translation"], *r["wordings"]], K)),
        "HyDE (passage in the question's language)": Pipeline(("hyde",), lambda q, r: by_passage(r["hyde"])),
        "HyDE (passage in the other language)": Pipeline(
            ("hyde other language",), lambda q, r: by_passage(r["hyde other language"])),
        "node groups": Pipeline((), lambda q, r: groups(q)),
        "multi-path (dense + BM25 + node groups)": Pipeline((), lambda q, r: multi_path_search(q, paths, k=K)),
    }


def files(hits: list[Document]) -> list[str]:
    """The distinct file names of the hits, in rank order."""
    return list(dict.fromkeys(Path(h.metadata["source"]).name for h in hits))


def run(replies_for: Callable[[dict], tuple[dict[str, Any], dict[str, float]]], pipes: dict[str, Pipeline],
        items: list[dict]) -> list[dict]:
    """Per question: the LLM replies (`replies_for`: item -> replies, model seconds per pipeline), then every
    pipeline's file rank, recall@3, RR@10, calls and seconds."""
    rows = []
    for item in tqdm(items, desc="questions"):
        question, source = item["question"], item["source"]
        texts, model_seconds = replies_for(item)
        scored = {}
        for name, pipe in pipes.items():
            hits, seconds = timed(lambda: pipe.search(question, texts))
            ranked = files(hits)
            scored[name] = {"rank": ranked.index(source) + 1 if source in ranked else None,
                            "recall@3": recall_at_k(ranked, [source], 3),
                            "RR@10": reciprocal_rank(ranked, [source], 10),
                            "LLM calls": len(pipe.calls),
                            # to 0.1 ms: a flushed collection answers a search in a few milliseconds
                            "model seconds": round(model_seconds[name], 4),
                            "seconds": round(seconds + model_seconds[name], 4)}
        rows.append({"question": question, "set": item["set"], "source": source, "replies": texts, "pipelines": scored})
    return rows


def summary(rows: list[dict], names: list[str], set_name: str) -> list[dict]:
    """Per pipeline on one set: means with 95% intervals, the paired difference to the baseline, calls, seconds."""
    base = {m: [r["pipelines"][BASELINE][m] for r in rows] for m in ("recall@3", "RR@10")}
    table = []
    for name in names:
        scores = {m: [r["pipelines"][name][m] for r in rows] for m in ("recall@3", "RR@10")}
        row: dict[str, Any] = {"pipeline": name, "set": set_name, "questions": len(rows)}
        for metric, label in (("recall@3", "recall@3"), ("RR@10", "MRR@10")):
            mean, low, high = bootstrap_ci(scores[metric], resamples=RESAMPLES)
            diff, dlow, dhigh = paired_difference(scores[metric], base[metric], resamples=RESAMPLES)
            row |= {label: mean, f"{label} 95% CI": [low, high],
                    f"{label} diff": diff, f"{label} diff 95% CI": [dlow, dhigh]}
        row["LLM calls"] = rows[0]["pipelines"][name]["LLM calls"]
        row["seconds"] = float(np.mean([r["pipelines"][name]["seconds"] for r in rows]))
        table.append(row)
    return table


def in_other_language(rows: list[dict]) -> dict[str, float]:
    """Share of translations and other-language HyDE passages that came back in the language asked for."""
    return {name: float(np.mean([detect_language(r["replies"][name]) != detect_language(r["question"]) for r in rows]))
            for name in ("translation", "hyde other language")}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks advanced", description=__doc__)
    parser.add_argument("--questions", type=Path, default=QUESTIONS,
                        help="question file (default data/crosslingual_questions.json)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N entries of the file (a smoke run)")
    parser.add_argument("--no-originals", action="store_true",
                        help="skip the control set (sample questions as written)")
    parser.add_argument("--out", default="advanced", help="results name under bench_results/")
    parser.add_argument("--reuse-replies", action="store_true",
                        help="reuse the replies and model seconds in bench_results/<out>.json (no model calls)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    items = load_questions(args.questions)[: args.limit]
    items = items if args.no_originals else with_originals(items)
    load_at_start = round(os.getloadavg()[0], 2)
    if args.reuse_replies:
        recorded = recorded_replies(results.load_results(args.out)["questions"])

        def replies_for(item: dict) -> tuple[dict[str, Any], dict[str, float]]:
            reply = recorded[(item["question"], item["set"])]
            return reply["replies"], reply["model seconds"]
    else:
        llm = get_chat_model()

        def replies_for(item: dict) -> tuple[dict[str, Any], dict[str, float]]:
            replies = llm_replies(llm, item["question"])
            return ({name: reply for name, (reply, _) in replies.items()},
                    {name: sum(replies[c][1] for c in pipe.calls) for name, pipe in pipes.items()})
    with tempfile.TemporaryDirectory() as folder:
        client = connect(uri=str(Path(folder) / "advanced.db"))
        embeddings = get_embeddings()
        for collection in (DEFAULT_COLLECTION, GROUP_COLLECTION):
            ensure_collection_for(client, embeddings, collection)
        index_directory(client, DOCS, embeddings, progress=False)
        group_rows = index_groups(client, embeddings, document_rows(load_groups(DEFAULT_OUT)))
        pipes = pipelines(client, embeddings)
        rows = run(replies_for, pipes, items)
        client.close()

    sets = {name: [r for r in rows if r["set"] == name] for name in dict.fromkeys(r["set"] for r in rows)}
    groups = {CROSS: [r for r in rows if r["set"] != AS_WRITTEN], **sets}
    table = [row for name, subset in groups.items() if subset for row in summary(subset, list(pipes), name)]
    print(format_table(advanced_table({"summary": table})))
    seconds_source = ("recorded by an earlier run (replies reused: --reuse-replies; where that run kept only a "
                      "pipeline's total, its total minus its baseline search for the same question)")
    setup = {"questions": len(rows), "per set": {name: len(subset) for name, subset in sets.items()},
             "chunks per question": K, "BM25 analyzer": ANALYZER_PARAMS, "node-group rows": group_rows,
             "bootstrap resamples": RESAMPLES,
             "load_average_1min_at_start": load_at_start, "replies in the other language": in_other_language(rows),
             "llm calls per question": "4 (translation, 2 wordings in one structured call, HyDE x2); "
                                       "every pipeline reuses them",
             "seconds": "per pipeline and question, its searches measured in this run plus its model seconds "
                        + (seconds_source if args.reuse_replies else "measured in this run")}
    print("\nwrote", write_results(args.out, {"setup": setup, "summary": table, "questions": rows}))


if __name__ == "__main__":
    main([])
