"""The benchmarks: `python -m benchmarks <name>` prints a table and writes bench_results/<name>.json; reports built
from those results (no model, no database) live here too."""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag_lib.experiments import results
from rag_lib.store import JIEBA_ANALYZER_PARAMS

# BM25's analyzer in the indexes most benchmarks build: jieba alone (JIEBA_ANALYZER_PARAMS), the analyzer their
# committed results and resumable rows were measured with, so that a resumed or repeated run matches them; each
# records it in its setup. `retrieval`, `fusion`, `chat`, `index`, `quickstart`, `advanced`, `embeddings` and the
# multi-hop benchmarks measure the course analyzer (ANALYZER_PARAMS); `retrieval` and `lite` measure the two side
# by side.
MEASURED_ANALYZER = JIEBA_ANALYZER_PARAMS


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """Run `fn` and return (result, seconds)."""
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def write_results(
    name: str, payload: dict[str, Any], meta: dict[str, Any] | None = None, path: Path | None = None
) -> Path:
    """Save results with the machine they were measured on to bench_results/<name>.json, or `path` (`meta`: keep
    the record of an earlier measurement, e.g. when only the scores were recomputed)."""
    path = path or results.RESULTS_DIR / f"{name}.json"  # read when called: load_results reads the same folder
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = meta or {
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "measured_at": time.strftime("%Y-%m-%d"),
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),  # >1 on 2 cores: other jobs were running
    }
    path.write_text(json.dumps({"meta": meta, **payload}, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


