"""Dispatch `python -m rag_lib.bench <name> [options]` to rag_lib.bench.<name>.main(argv)."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = {
    "quickstart": "model assembly/load, indexing throughput, per-question latency of the quickstart",
}


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in BENCHMARKS:
        listing = "\n".join(f"  {name:12} {what}" for name, what in BENCHMARKS.items())
        raise SystemExit(f"usage: python -m rag_lib.bench <name> [options]\n\nbenchmarks:\n{listing}")
    importlib.import_module(f"rag_lib.bench.{argv[0]}").main(argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
