"""`make demo` (rag_lib.experiments.demo.main) frees its Milvus Lite database however it ends, so a notebook or the
app can open it next. Real Milvus Lite and embeddings; the chat model
is never called (the run stops at its questions)."""

from __future__ import annotations

import pytest

from rag_lib.experiments import demo
from rag_lib.store import DEFAULT_COLLECTION, connect


def test_the_demo_frees_its_database_when_it_is_stopped(embeddings, tmp_path, monkeypatch,
                                                        rows_seen_by_another_process):
    uri, docs = str(tmp_path / "rag.db"), tmp_path / "docs"
    docs.mkdir()
    (docs / "lite.md").write_text("# Milvus Lite\nMilvus Lite keeps a database in a folder.\n", encoding="utf-8")
    monkeypatch.setattr(demo, "connect", lambda name: connect(uri=uri))  # the demo's database, under tmp_path
    monkeypatch.setattr(demo, "DOCS", docs)
    monkeypatch.setattr(demo, "get_embeddings", lambda: embeddings)
    monkeypatch.setattr(demo, "get_chat_model", lambda: None)  # never reached: the run stops before any question

    def stopped() -> list[str]:  # the user presses Ctrl+C once the index is built
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "quickstart_questions", stopped)
    with pytest.raises(KeyboardInterrupt) as stop:
        demo.main()
    assert stop.tb is not None  # the traceback keeps the demo's client alive, as an interactive session would
    assert rows_seen_by_another_process(uri) == {DEFAULT_COLLECTION: 1}
