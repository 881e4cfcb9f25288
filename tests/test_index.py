"""Incremental, idempotent indexing and the bad-input report."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_lib.index import LoadError, index_directory, read_text, split_text
from rag_lib.store import DEFAULT_COLLECTION, count_rows

ZH = "Milvus Lite 是 Milvus 的嵌入式版本。它把数据保存在本地目录里，适合原型开发和教学。" * 3
EN = "LangGraph builds stateful graphs of LLM calls. Nodes return partial state updates that reducers merge. " * 3


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "milvus.md").write_text("# Milvus Lite\n\n" + ZH, encoding="utf-8")
    (folder / "langgraph.txt").write_text(EN, encoding="utf-8")
    return folder


def test_indexing_twice_writes_nothing_the_second_time(milvus, embeddings, corpus):
    first = index_directory(milvus, corpus, embeddings, progress=False)
    rows = count_rows(milvus, DEFAULT_COLLECTION)
    second = index_directory(milvus, corpus, embeddings, progress=False)
    assert len(first.indexed) == 2 and rows > 2
    assert second.indexed == [] and second.chunks_written == 0 and len(second.skipped) == 2
    assert count_rows(milvus, DEFAULT_COLLECTION) == rows


def test_changed_file_replaces_its_chunks_and_deleted_file_is_removed(milvus, embeddings, corpus):
    index_directory(milvus, corpus, embeddings, progress=False)
    (corpus / "langgraph.txt").write_text("Send lets a node fan out work to parallel branches.", encoding="utf-8")
    (corpus / "milvus.md").unlink()
    report = index_directory(milvus, corpus, embeddings, progress=False)
    assert report.removed == [str(next(iter(report.removed)))] and report.removed[0].endswith("milvus.md")
    texts = [r["text"] for r in milvus.query(DEFAULT_COLLECTION, filter="", output_fields=["text"], limit=100)]
    assert texts == ["Send lets a node fan out work to parallel branches."]


def test_bad_files_are_reported_and_do_not_stop_the_run(milvus, embeddings, corpus):
    (corpus / "empty.md").write_text("", encoding="utf-8")
    (corpus / "garbage.md").write_bytes(b"\x00\x01\x02binary\x00" * 50)
    (corpus / "legacy.txt").write_bytes("中文编码的旧文件，使用 GB18030 保存。".encode("gb18030"))
    report = index_directory(milvus, corpus, embeddings, progress=False)
    assert set(report.errors) == {e for e in report.errors if e.endswith(("empty.md", "garbage.md"))}
    assert any("empty file" in msg for msg in report.errors.values())
    assert any("binary" in msg for msg in report.errors.values())
    assert any(p.endswith("legacy.txt") for p in report.indexed)  # decoded as GB18030, not an error


def test_file_that_turns_bad_keeps_its_indexed_chunks(milvus, embeddings, corpus):
    index_directory(milvus, corpus, embeddings, progress=False)
    before = count_rows(milvus, DEFAULT_COLLECTION)
    (corpus / "milvus.md").write_text("", encoding="utf-8")
    report = index_directory(milvus, corpus, embeddings, progress=False)
    assert list(report.errors.values()) == ["milvus.md: empty file"]
    assert report.removed == [] and count_rows(milvus, DEFAULT_COLLECTION) == before


def test_missing_folder_is_a_clear_error(milvus, embeddings, tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        index_directory(milvus, tmp_path / "nope", embeddings, progress=False)


def test_read_text_rejects_binary(tmp_path):
    path = tmp_path / "x.md"
    path.write_bytes(b"\x00\xff" * 10)
    with pytest.raises(LoadError, match="binary"):
        read_text(path)


def test_split_text_respects_size_and_chinese_sentences():
    chunks = split_text(ZH + EN, chunk_size=80, chunk_overlap=0)
    assert all(len(c) <= 80 for c in chunks)
    assert chunks[0].endswith("。")
