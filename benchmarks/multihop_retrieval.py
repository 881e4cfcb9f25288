"""Where two-hop questions are lost before any model runs: is each hop's passage in the top k of a search?

For every question of data/multihop_questions.json, three searches over the collection `bench multihop` uses
(data/docs + data/web in one Milvus Lite collection, the hybrid retriever with k=3): the question alone, the
question followed by its gold bridge, and the gold bridge alone; and the question's search united with each of the
other two (with the bridge alone: the upper bound of rag_lib.experiments.bridge, which copies the bridge from a
passage and searches it). And that pipeline's ceiling: hop 1 in the question's search, from which it copies the
bridge, and hop 2 in either search. Per question and search: the chunk ids, their cosine similarities and the rank
of each hop's passage (`holds_hop`: a chunk of the hop's file holding its evidence), in the top k, after the
calibrated cutoff plain RAG applies, and with that cutoff on the question's search only. Per split (tune, held_out)
and language: the share of questions with hop 1, hop 2 and both found, with 95 % Wilson intervals, and the paired
differences (each other search or union - the question's; the two unions) with 95 % bootstrap intervals. And a
deeper first search (`depth`): hop 1, hop 2 and both in the question's top 3, 5 and 10 hits, alone and with the gold
bridge's k hits. No model calls. Results: bench_results/multihop_retrieval.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from langchain_core.documents import Document

from benchmarks import write_results
from benchmarks.answers_pipelines import K
from benchmarks.answers_summary import BOOTSTRAP
from benchmarks.multihop import chunk_id, holds_hop, indexed_corpus
from rag_lib.embeddings import default_min_similarity
from rag_lib.experiments.evaluation import paired_difference, wilson
from rag_lib.experiments.questions import QUESTIONS, SPLITS, load_questions
from rag_lib.experiments.results import format_table
from rag_lib.store import ANALYZER_PARAMS

QUERIES = ("question", "question + bridge", "bridge")
UNIONS = {"union": ("question", "question + bridge"), "union with bridge alone": ("question", "bridge")}
# what a pipeline copying the bridge can find at best: hop 1 in the question's search (the bridge is copied from
# it), hop 2 in the question's or the gold bridge's
CEILING = "bridge pipeline ceiling"
SEARCHES = (*QUERIES, *UNIONS, CEILING)
# the k hits as the judge reads them; those plain RAG keeps after the cutoff; the cutoff on the question's search
# only (a second search, for a name copied from a passage, keeps its k hits: a short query scores low similarities)
CUTS = ("top-k", "above cutoff", "cutoff on the question's search only")
HOPS = ("hop 1", "hop 2", "both")
COMPARISONS = (*((search, "question") for search in SEARCHES[1:]), ("union with bridge alone", "union"))
# a deeper first search: the question's top 3, 5 and 10 hits (one k=10 search), alone and united with the gold
# bridge's k hits: can reading more of the question's search recover hop 1?
DEPTHS = (3, 5, 10)
DEEP = f"question, k={max(DEPTHS)}"


def bridged_query(question: str, bridge: str) -> str:
    """The "question + bridge" search's query: the question followed by the bridge it describes without naming."""
    return f"{question} {bridge}"


def hop_ranks(documents: list[Document], question: dict) -> list[int | None]:
    """Per hop, the 1-based rank of the first of `documents` that is its passage, None when none is."""
    return [next((rank for rank, d in enumerate(documents, 1) if holds_hop(d, hop)), None) for hop in question["hops"]]


def search_record(documents: list[Document], question: dict) -> dict:
    """One search of one question: chunk ids, similarities (3 decimals) and each hop's rank."""
    return {"chunks": [chunk_id(d) for d in documents],
            "similarities": [round(d.metadata["similarity"], 3) for d in documents],
            "hop ranks": hop_ranks(documents, question)}


def found(row: dict, search: str, cut: str, cutoff: float) -> list[bool]:
    """[hop 1, hop 2, both] found by a search of a row; a union (UNIONS): by one of its two searches; CEILING: hop 1
    by the question's search, hop 2 by the union with the bridge alone."""
    if search == CEILING:
        hops = [found(row, "question", cut, cutoff)[0], found(row, "union with bridge alone", cut, cutoff)[1]]
    elif search in UNIONS:
        parts = [found(row, name, cut, cutoff) for name in UNIONS[search]]
        hops = [parts[0][i] or parts[1][i] for i in range(2)]
    else:
        record = row["searches"][search]
        kept_all = cut == "top-k" or (cut == CUTS[2] and search != "question")
        hops = [rank is not None and (kept_all or record["similarities"][rank - 1] >= cutoff)
                for rank in record["hop ranks"]]
    return [*hops, all(hops)]


def measure(questions: list[dict]) -> list[dict]:
    """Per question: its searches (QUERIES: the question, the question and its gold bridge, the bridge) over a fresh
    index."""
    rows = []
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="multihop_retrieval_")))
        retrievers = indexed_corpus(folder, stack)
        retriever, deep = retrievers(), retrievers(k=max(DEPTHS))
        for q in questions:
            searches = {"question": q["question"], "question + bridge": bridged_query(q["question"], q["bridge"]),
                        "bridge": q["bridge"]}
            rows.append({key: q[key] for key in ("id", "split", "language", "answer_type", "bridge")}
                        | {"searches": {name: search_record(retriever.invoke(query), q)
                                        for name, query in searches.items()}
                           | {DEEP: search_record(deep.invoke(q["question"]), q)}})
    return rows


def depth_rates(rows: list[dict]) -> list[dict]:
    """Per split, language and depth (DEPTHS): the share of questions whose hop 1, hop 2 and both are in the question's
    top hits (no cutoff), and hop 2 and both when the gold bridge's k hits are added, with 95 % Wilson intervals."""
    rates = []
    for split in SPLITS:
        for language in ("all", "en", "zh"):
            group = [r for r in rows if r["split"] == split and language in ("all", r["language"])]
            for depth in DEPTHS if group else ():
                ranks = [r["searches"][DEEP]["hop ranks"] for r in group]
                hop1 = [rank[0] is not None and rank[0] <= depth for rank in ranks]
                hop2 = [rank[1] is not None and rank[1] <= depth for rank in ranks]
                bridged = [h or r["searches"]["bridge"]["hop ranks"][1] is not None for h, r in zip(hop2, group)]
                counts = {"hop 1": hop1, "hop 2": hop2, "both": [a and b for a, b in zip(hop1, hop2)],
                          "hop 2 with bridge": bridged, "both with bridge": [a and b for a, b in zip(hop1, bridged)]}
                rate = {"split": split, "questions": language, "depth": depth, "n": len(group)}
                for name, hits in counts.items():
                    rate |= {name: sum(hits) / len(group), f"{name} ci": list(wilson(sum(hits), len(group)))}
                rates.append(rate)
    return rates


def summarize(rows: list[dict], cutoff: float) -> tuple[list[dict], list[dict]]:
    """(rates, paired differences) per split and language, for every search and cut."""
    rates, paired = [], []
    for split in SPLITS:
        for language in ("all", "en", "zh"):
            group = [r for r in rows if r["split"] == split and language in ("all", r["language"])]
            if not group:
                continue
            for cut in CUTS:
                hits = {search: [found(r, search, cut, cutoff) for r in group] for search in SEARCHES}
                for search in SEARCHES:
                    rate = {"split": split, "questions": language, "search": search, "cut": cut, "n": len(group)}
                    for i, hop in enumerate(HOPS):
                        successes = sum(h[i] for h in hits[search])
                        rate |= {hop: successes / len(group), f"{hop} ci": list(wilson(successes, len(group)))}
                    rates.append(rate)
                for a, b in COMPARISONS:
                    pair = {"split": split, "questions": language, "comparison": f"{a} - {b}", "cut": cut,
                            "n": len(group)}
                    for i, hop in enumerate(HOPS[1:], 1):
                        difference, low, high = paired_difference([h[i] for h in hits[a]], [h[i] for h in hits[b]],
                                                                  **BOOTSTRAP)
                        pair |= {f"{hop} diff": difference, f"{hop} diff ci": [low, high]}
                    paired.append(pair)
    return rates, paired


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks multihop_retrieval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="the multi-hop questions (JSON)")
    parser.add_argument("--out", default="multihop_retrieval", help="results name: bench_results/<out>.json")
    args = parser.parse_args(argv)
    cutoff = default_min_similarity()
    rows = measure(load_questions(args.questions))
    rates, paired = summarize(rows, cutoff)
    setup = {"questions": len(rows), "file": QUESTIONS.name, "corpus": "data/docs + data/web, one collection",
             "retriever k": K, "BM25 analyzer": ANALYZER_PARAMS, "min_similarity": cutoff,
             "bridged query": bridged_query("<question>", "<bridge>"), "model calls": 0}
    print(format_table([{k: (f"{v:.2f} [{r[f'{k} ci'][0]:.2f}, {r[f'{k} ci'][1]:.2f}]" if k in HOPS else v)
                         for k, v in r.items() if not k.endswith("ci")} for r in rates if r["questions"] == "all"]))
    print(format_table([{k: (f"{v:+.2f} [{r[f'{k} ci'][0]:+.2f}, {r[f'{k} ci'][1]:+.2f}]" if k.endswith("diff")
                             else v) for k, v in r.items() if not k.endswith("ci")}
                        for r in paired if r["questions"] == "all"]))
    depth = depth_rates(rows)
    print(format_table([{k: (f"{v:.2f}" if isinstance(v, float) else v) for k, v in r.items() if not k.endswith("ci")}
                        for r in depth if r["questions"] == "all"]))
    print("\nwrote", write_results(args.out, {"setup": setup, "summary": rates, "paired": paired, "depth": depth,
                                              "rows": rows}))


if __name__ == "__main__":
    main(sys.argv[1:])
