"""Conversation benchmark: follow-up questions that name nothing ("what is its default port?"), over data/docs.

Per conversation of data/chat_followups.json: the chat graph answers the first question, then the follow-up;
the follow-up is searched three ways (as written, as condensed by the model, and joined to the first question)
and each is scored by whether the gold file is the top hit or among the top 3 (no similarity cutoff) and whether the
app's retriever (k=3 above the calibrated cutoff) keeps a passage of it; the graph's final answer is scored by
whether it holds the gold answer. Counts come with 95% Wilson intervals (the set is small), and the condensed query's
gain in kept gold files over the other two forms with a paired bootstrap interval.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from benchmarks import write_results
from rag_lib.embeddings import default_min_similarity, get_embeddings
from rag_lib.experiments.demo import DOCS
from rag_lib.experiments.evaluation import paired_difference, wilson
from rag_lib.experiments.questions import load_follow_ups
from rag_lib.experiments.results import format_table
from rag_lib.graphs.chat import ChatContext, build_chat_graph
from rag_lib.index import index_directory
from rag_lib.llm import get_chat_model
from rag_lib.retriever import Retriever
from rag_lib.store import connect

QUERIES = ("as written", "condensed", "joined to the first question")


def rank_of(retriever: Retriever, query: str, source: str) -> int | None:
    """1-based rank of the first chunk of `source` among the retriever's hits, None when it is not there."""
    names = [Path(d.metadata["source"]).name for d in retriever.invoke(query)]
    return names.index(source) + 1 if source in names else None


def run_conversation(graph, context: ChatContext, ranker: Retriever, item: dict, thread: str) -> dict:
    """Both turns through the chat graph, then the follow-up's three queries through the ranker (no cutoff) and
    the graph's own retriever (the cutoff)."""
    config = {"configurable": {"thread_id": thread}}
    started = time.perf_counter()
    graph.invoke({"messages": [("user", item["first"])]}, config, context=context)
    middle = time.perf_counter()
    state = graph.invoke({"messages": [("user", item["follow_up"])]}, config, context=context)
    ended = time.perf_counter()
    queries = dict(zip(QUERIES, (item["follow_up"], state["search_query"], f"{item['first']} {item['follow_up']}")))
    answer = str(state["messages"][-1].content)
    return {
        "follow_up": item["follow_up"],
        "condensed": state["search_query"],
        "ranks": {name: rank_of(ranker, query, item["source"]) for name, query in queries.items()},
        "kept above the cutoff": {name: rank_of(context.retriever, query, item["source"]) is not None
                                  for name, query in queries.items()},
        "answer": answer,
        "answer_correct": item["answer"].lower() in answer.lower(),
        "first_turn_s": round(middle - started, 2),
        "follow_up_s": round(ended - middle, 2),
    }


def summarise(rows: list[dict]) -> list[dict]:
    """Per query form: top-1 and top-3 hits of the gold file and the gold file kept above the cutoff, with 95%
    intervals; for the other two forms, condensed minus that form in kept gold files (paired bootstrap)."""
    n, table = len(rows), []
    kept = {name: [float(r["kept above the cutoff"][name]) for r in rows] for name in QUERIES}
    for name in QUERIES:
        top1 = sum(r["ranks"][name] == 1 for r in rows)
        top3 = sum(r["ranks"][name] is not None and r["ranks"][name] <= 3 for r in rows)
        hits = int(sum(kept[name]))
        row = {"query": name, "n": n, "hit@1": top1 / n, "hit@1 95% CI": wilson(top1, n),
               "hit@3": top3 / n, "hit@3 95% CI": wilson(top3, n),
               "kept above the cutoff": hits / n, "kept above the cutoff 95% CI": wilson(hits, n)}
        if name != "condensed":
            diff, low, high = paired_difference(kept["condensed"], kept[name])
            row |= {"condensed minus this, kept": diff, "condensed minus this, kept 95% CI": [low, high]}
        table.append(row)
    return table


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks chat", description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    args = parser.parse_args(argv)
    items = load_follow_ups()[: args.limit]
    with tempfile.TemporaryDirectory() as folder:
        client = connect(uri=str(Path(folder) / "chat.db"))
        embeddings = get_embeddings()
        index_directory(client, DOCS, embeddings, progress=False)
        answerer = Retriever(client=client, embeddings=embeddings, k=3, min_similarity=default_min_similarity())
        ranker = Retriever(client=client, embeddings=embeddings, k=3)
        graph, context = build_chat_graph(InMemorySaver()), ChatContext(retriever=answerer, llm=get_chat_model())
        rows = [run_conversation(graph, context, ranker, item, f"c{i}") for i, item in enumerate(items)]
        client.close()
    table = summarise(rows)
    correct = sum(r["answer_correct"] for r in rows)
    answers = {"n": len(rows), "answer holds the gold": correct / len(rows),
               "95% CI": wilson(correct, len(rows)),
               "median s, first turn": statistics.median(r["first_turn_s"] for r in rows),
               "median s, follow-up (condense + answer)": statistics.median(r["follow_up_s"] for r in rows)}
    print(format_table(table))
    print()
    print(format_table([answers]))
    print("\nwrote", write_results("chat", {"retrieval": table, "answers": answers, "conversations": rows}))


if __name__ == "__main__":
    main([])
