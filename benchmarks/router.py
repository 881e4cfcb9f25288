"""Routing accuracy of the app's router on data/router_requests.json: 64 labelled requests (16 per action, half
Chinese, some with files attached), none of them among the router's few-shot examples.

Per request: the model's own action (`intent.route_request`, one structured call) and the app's final action
(`intent.decide_route`: the model's, corrected by rules such as "given files are always saved"), and the seconds the
call took (llama.cpp keeps the shared few-shot prefix cached between requests, as in a running app). Accuracy
overall and per expected action with 95% Wilson intervals, a confusion table, every miss.
Written to bench_results/router.json under the chat model's label ("local" for the in-process GGUF)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import get_args

from benchmarks import write_results
from benchmarks.agent import model_label
from rag_lib.app.intent import Action, decide_route, route_request
from rag_lib.experiments.evaluation import wilson
from rag_lib.experiments.results import RESULTS_DIR, format_table
from rag_lib.llm import get_chat_model
from rag_lib.store import PROJECT_ROOT
from rag_lib.structured import StructuredOutputError

REQUESTS = PROJECT_ROOT / "data" / "router_requests.json"
ACTIONS: tuple[str, ...] = get_args(Action)


def load_requests(path: Path = REQUESTS) -> list[dict]:
    """The labelled requests: request, files (attached or not), action."""
    return json.loads(path.read_text(encoding="utf-8"))


def accuracy(rows: list[dict], key: str) -> dict:
    """Correct / total with its Wilson interval, overall and per expected action."""

    def share(subset: list[dict]) -> dict:
        correct = sum(r[key] == r["expected"] for r in subset)
        return {"correct": correct, "n": len(subset), "rate": correct / len(subset),
                "95% CI": list(wilson(correct, len(subset)))}

    groups = {a: [r for r in rows if r["expected"] == a] for a in ACTIONS}
    return {"all": share(rows)} | {a: share(group) for a, group in groups.items() if group}


def run(llm, requests: list[dict]) -> list[dict]:
    """Route every request: the model's action (or "unusable" when its reply breaks the schema) and the app's."""
    rows = []
    for item in requests:
        start = time.perf_counter()
        try:
            model = route_request(llm, item["request"], item["files"])
        except StructuredOutputError:
            model = "unusable"
        seconds = time.perf_counter() - start
        final = decide_route(llm, item["request"], item["files"]).action
        rows.append({"request": item["request"], "files": item["files"], "expected": item["action"],
                     "model": model, "app": final, "seconds": round(seconds, 2)})
        print(f"  {item['action']:18} model {model:18} app {final:18} {seconds:5.1f}s {item['request'][:50]}")
    return rows


def tables(result: dict) -> str:
    """Accuracy per action for the model alone and the app, then the app's confusion counts."""
    lines = []
    for key in ("model", "app"):
        lines.append(format_table([{"routed by": key, "expected": name, "correct": f"{s['correct']}/{s['n']}",
                                    "rate": round(s["rate"], 3), "95% CI": [round(x, 3) for x in s["95% CI"]]}
                                   for name, s in result[f"accuracy {key}"].items()]))
    return "\n\n".join(lines)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks router", description=__doc__)
    parser.add_argument("--requests", type=Path, default=REQUESTS,
                        help="labelled requests (default data/router_requests.json)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N requests (a smoke run)")
    parser.add_argument("--out", type=Path, default=None, help="results file (default bench_results/router.json)")
    args = parser.parse_args(argv)
    llm = get_chat_model()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    rows = run(llm, load_requests(args.requests)[: args.limit])
    confusion = Counter(f"{r['expected']} -> {r['app']}" for r in rows)
    result = {"load_at_start": load_at_start, "requests": len(rows),
              "accuracy model": accuracy(rows, "model"), "accuracy app": accuracy(rows, "app"),
              "median seconds per routing call": statistics.median(r["seconds"] for r in rows),
              "confusion app": dict(sorted(confusion.items())),
              "misses": [r for r in rows if r["app"] != r["expected"] or r["model"] != r["expected"]],
              "load_at_end": [round(x, 2) for x in os.getloadavg()]}
    path = args.out or RESULTS_DIR / "router.json"
    results = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    results.pop("meta", None)  # write_results records this run's machine
    results[model_label(llm)] = result
    write_results("router", results, path=path)
    print(tables(result))


if __name__ == "__main__":
    main([])
