"""What LangGraph's `durability` modes cost per step with a SQLite checkpointer, measured side by side in one run.

A graph of `--steps` nodes in a chain, each doing no work but adding one passage-sized text (`--chars`) to a list in
the state, as a RAG graph's state grows with documents, strips and notes. Every run gets a fresh SqliteSaver file and
a new thread; the modes take turns (`--rounds` times each, in rotating order) so that machine load falls on all of
them alike. Per mode: the median seconds per step, beside the same graph without a checkpointer, and how many
checkpoints a run leaves in the file (what a crash can resume from).
- "exit": the state is written once, when the run ends (or stops at an interrupt or error): a crash loses the run.
- "async": each step's checkpoint is written in the background while the next step runs.
- "sync": each step's checkpoint is written before the next step starts.
Results: bench_results/durability.json."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Durability

from benchmarks import write_results
from rag_lib.experiments.chain import MODES, chain_graph
from rag_lib.experiments.results import format_table
from rag_lib.graphs.checkpoints import sqlite_checkpointer


def run_once(graph: CompiledStateGraph, durability: Durability | None, thread: str) -> float:
    """Seconds for one run of the chain from an empty state."""
    started = time.perf_counter()
    graph.invoke({"passages": []}, {"configurable": {"thread_id": thread}}, durability=durability)
    return time.perf_counter() - started


def measure(steps: int, chars: int, rounds: int, folder: Path) -> list[dict]:
    """One row per mode (and one without a checkpointer): median ms per step and checkpoints left per run."""
    graph = chain_graph(steps, chars)
    plain = graph.compile()
    seconds: dict[str, list[float]] = {mode: [] for mode in ("no checkpointer", *MODES)}
    checkpoints: dict[str, int] = {}
    for r in range(rounds):
        order = list(MODES[r % len(MODES):] + MODES[:r % len(MODES)])
        seconds["no checkpointer"].append(run_once(plain, None, "plain"))
        for mode in order:
            saver = sqlite_checkpointer(folder / f"{mode}-{r}.sqlite")
            compiled = graph.compile(checkpointer=saver)
            seconds[mode].append(run_once(compiled, mode, f"{mode}-{r}"))
            checkpoints[mode] = len(list(saver.list({"configurable": {"thread_id": f"{mode}-{r}"}})))
            saver.conn.close()
    rows = []
    for mode, values in seconds.items():
        per_step = statistics.median(values) / steps * 1000
        rows.append({"durability": mode, "ms per step (median)": round(per_step, 3),
                     "checkpoints per run": checkpoints.get(mode, 0), "runs": len(values)})
    return rows


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks durability", description=__doc__)
    parser.add_argument("--steps", type=int, default=50, help="nodes in the chain")
    parser.add_argument("--chars", type=int, default=1000, help="characters each step adds to the state")
    parser.add_argument("--rounds", type=int, default=15, help="runs per mode")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        rows = measure(args.steps, args.chars, args.rounds, Path(folder))
    print(format_table(rows))
    setup = {"steps": args.steps, "chars per step": args.chars, "rounds": args.rounds, "checkpointer": "SqliteSaver"}
    print("wrote", write_results("durability", {"setup": setup, "rows": rows}))


if __name__ == "__main__":
    main(sys.argv[1:])
