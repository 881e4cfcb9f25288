"""Incremental, idempotent indexing, the bad-input report, chunking strategies and recovery from a killed run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from rag_lib.chunking import Chunker
from rag_lib.experiments.sample_pdf import make_pdf
from rag_lib.index import chunk_rows, index_directory, parent_documents
from rag_lib.loaders import LoadError, read_text
from rag_lib.retriever import Retriever
from rag_lib.store import DEFAULT_COLLECTION, connect, count_rows, ensure_collection, make_row, seal

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


# --- loaders through index_directory: bad inputs are reported and leave the good rows alone -------------------


def rows_per_source(client) -> dict[str, tuple[int, str]]:
    """source -> (row count, the one file_hash of its rows)."""
    rows = client.query(DEFAULT_COLLECTION, filter="", output_fields=["source", "file_hash"], limit=10000)
    counts: dict[str, list] = {}
    for r in rows:
        counts.setdefault(r["source"], []).append(r["file_hash"])
    return {s: (len(h), h[0]) for s, h in counts.items() if len(set(h)) == 1} | {
        s: (len(h), "MIXED") for s, h in counts.items() if len(set(h)) > 1
    }


def test_bad_inputs_are_listed_and_good_rows_stay_as_they_were(milvus, embeddings, corpus, monkeypatch):
    monkeypatch.delenv("RAG_MAX_FILE_MB", raising=False)
    index_directory(milvus, corpus, embeddings, progress=False)
    before = rows_per_source(milvus)
    good_pdf = make_pdf(["Milvus Lite keeps its data in a local folder."], title="Lite")
    bad = {
        "empty.md": (b"", "empty file"),
        "garbage.md": (b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)), "binary content"),
        "corrupt.pdf": (good_pdf[: len(good_pdf) // 2], "corrupt or unreadable PDF"),
        "latin1.txt": ("café naïve ÿ".encode("latin-1"), "not UTF-8 or GB18030"),
        "big.txt": (b"a" * (10 * 2**20), "over the 5 MB limit"),
        "report.docx": (b"PK\x03\x04", "corrupt or unreadable .docx"),
        "slides.pptx": (b"PK\x03\x04", "unsupported file type '.pptx'"),
    }
    for name, (data, _) in bad.items():
        (corpus / name).write_bytes(data)
    (corpus / "dangling.md").symlink_to(corpus / "nowhere.md")
    (corpus / "lite.pdf").write_bytes(good_pdf)
    (corpus / "page.html").write_text("<title>T</title><p>HNSW 是一种图索引。</p><script>x()</script>",
                                      encoding="utf-8")

    report = index_directory(milvus, corpus, embeddings, progress=False)

    reasons = {Path(s).name: e for s, e in report.errors.items()}
    assert set(reasons) == set(bad) | {"dangling.md"}
    assert all(why in reasons[name] for name, (_, why) in bad.items())
    assert "does not exist" in reasons["dangling.md"]
    assert sorted(Path(s).name for s in report.indexed) == ["lite.pdf", "page.html"]
    after = rows_per_source(milvus)
    assert {s: after[s] for s in before} == before  # the good files' rows are untouched
    assert set(after) == set(before) | set(report.indexed)  # nothing half-indexed for a bad file
    statuses = {Path(r["source"]).name: r["status"] for r in report.files()}
    assert statuses["milvus.md"] == "skipped" and statuses["big.txt"] == "error" and statuses["lite.pdf"] == "indexed"


def test_changing_the_chunker_reindexes_and_leaves_no_stale_rows(milvus, embeddings, corpus):
    index_directory(milvus, corpus, embeddings, progress=False)
    report = index_directory(milvus, corpus, embeddings, progress=False, chunker=Chunker("markdown", 120, 0))
    assert len(report.indexed) == 2 and report.skipped == []
    expected = {r["id"] for p in corpus.iterdir() for r in chunk_rows(p, Chunker("markdown", 120, 0))}
    rows = milvus.query(DEFAULT_COLLECTION, filter="", output_fields=["id", "headers"], limit=1000)
    assert {r["id"] for r in rows} == expected and len(rows) == len(expected)
    assert {r.get("headers") for r in rows} == {"Milvus Lite", None}  # .md chunks keep their header path
    again = index_directory(milvus, corpus, embeddings, progress=False, chunker=Chunker("markdown", 120, 0))
    assert again.indexed == [] and len(again.skipped) == 2


def test_chunker_sizes_are_given_once(milvus, embeddings, corpus):
    with pytest.raises(ValueError, match="either to the Chunker or as chunk_size/chunk_overlap"):
        index_directory(milvus, corpus, embeddings, chunk_size=200, chunker=Chunker("markdown"), progress=False)
    with pytest.raises(ValueError, match="sizes given twice"):  # also when the sizes equal the defaults
        index_directory(milvus, corpus, embeddings, chunk_size=300, chunk_overlap=50, chunker=Chunker(), progress=False)


def test_parent_child_retrieval_returns_each_parent_once(milvus, embeddings, corpus):
    chunker = Chunker("parent_child", chunk_size=60, chunk_overlap=0, parent_size=200)
    index_directory(milvus, corpus, embeddings, progress=False, chunker=chunker)
    retriever = Retriever(client=milvus, embeddings=embeddings, k=6)
    children = retriever.invoke("Milvus Lite 把数据保存在哪里？")
    parents = parent_documents(milvus, children)
    assert len({d.metadata["parent_id"] for d in children}) == len(parents) < len(children)
    for parent in parents:
        assert parent.metadata["child_text"] in parent.page_content and 60 < len(parent.page_content) <= 200
    assert parents[0].metadata["child_text"] == children[0].page_content  # rank order kept


def test_parent_documents_keeps_chunks_without_parent(milvus, embeddings, corpus):
    index_directory(milvus, corpus, embeddings, progress=False)
    hits = Retriever(client=milvus, embeddings=embeddings, k=2).invoke("LangGraph reducers")
    assert parent_documents(milvus, hits) == hits


# --- an indexing process killed with SIGKILL mid-run --------------------------------------------------------

CHILD = """
import re
import sys
import time
from rag_lib import index
from rag_lib.embeddings import E5Embeddings
from rag_lib.store import connect

client = connect(uri=sys.argv[1])
write_file = index.write_file
# Instrumentation only: print a marker (and, inside a write, stall) so the parent can SIGKILL at a chosen moment.
def announce(client, collection, rows):  # "between" files: a file's new rows are in and its stale rows gone
    write_file(client, collection, rows)
    print("MARK", rows[0]["source"], flush=True)
def stall(collection, filter):  # "inside" a write: the new rows are upserted, the stale ones not yet deleted
    print("MARK", re.search(r'source == "([^"]*)"', filter).group(1), flush=True)
    time.sleep(600)
if sys.argv[3] == "between":
    index.write_file = announce
else:
    client.delete = stall
index.index_directory(client, sys.argv[2], E5Embeddings(), progress=False)
print("DONE", flush=True)
"""


def version(folder: Path, n: int, sentences: int) -> None:
    """Write n files whose content (and chunk count) depends on `sentences`."""
    for i in range(n):
        body = " ".join(f"Document {i} sentence {j}: Milvus indexes vectors for search." for j in range(sentences))
        (folder / f"doc{i}.txt").write_text(body, encoding="utf-8")


@pytest.mark.parametrize("moment", ["between", "inside"])
def test_killed_run_is_repaired_by_the_next_run(tmp_path, embeddings, moment):
    """Kill -9 between two files, or inside one file's write (new rows upserted, stale rows not yet deleted).
    Lite lets one process hold the database: the children index, the parent only looks after they are gone."""
    uri, folder = str(tmp_path / "kill.db"), tmp_path / "docs"
    folder.mkdir()
    version(folder, 6, 2)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, uri, str(folder), "between"], capture_output=True, text=True, timeout=600
    )
    assert done.stdout.endswith("DONE\n"), done.stderr[-2000:]
    version(folder, 6, 8)  # every file changes and grows to several chunks: old rows become stale

    child = subprocess.Popen([sys.executable, "-c", CHILD, uri, str(folder), moment], stdout=subprocess.PIPE, text=True)
    first = child.stdout.readline()
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    child.stdout.close()
    assert first.startswith("MARK") and child.returncode == -signal.SIGKILL
    killed = first.split()[1]

    expected = [r for p in sorted(folder.iterdir()) for r in chunk_rows(p)]
    client = connect(uri=uri)
    try:
        ensure_collection(client, 384)
        fields = ["id", "file_hash", "source"]
        stored = client.query(DEFAULT_COLLECTION, filter="", output_fields=fields, limit=10000)
        new_hashes = {r["file_hash"] for r in expected}
        assert 0 < sum(r["file_hash"] in new_hashes for r in stored) < len(expected)  # the kill left a mix
        new_ids = {r["id"] for r in expected if r["source"] == killed}
        killed_rows = [r for r in stored if r["source"] == killed]
        assert new_ids <= {r["id"] for r in killed_rows}  # the killed file's new rows are all in...
        stale_left = any(r["file_hash"] not in new_hashes for r in killed_rows)
        assert stale_left == (moment == "inside")  # ...and its stale rows too when killed inside the write

        report = index_directory(client, folder, embeddings, progress=False)
        if moment == "between":
            assert killed not in report.indexed and len(report.indexed) == 5  # only the unfinished files
        else:
            assert killed in report.indexed and len(report.indexed) == 6  # stale rows left: not finished
        stored = client.query(DEFAULT_COLLECTION, filter="", output_fields=fields, limit=10000)
        assert count_rows(client, DEFAULT_COLLECTION) == len(stored) == len(expected)
        assert sorted(r["id"] for r in stored) == sorted(r["id"] for r in expected)  # no duplicates, none missing
        assert {r["file_hash"] for r in stored} == new_hashes  # no stale rows
    finally:
        client.close()


# ------------------------------------------------------------------ names the index cannot store, links out


def test_odd_file_names_are_reported_and_the_rest_indexed_run_after_run(milvus, embeddings, corpus):
    """Names Milvus cannot store or match (not UTF-8, control characters, too long) are bad files like any other;
    names that are merely odd (quotes, backslashes, spaces) index and are recognised on the next run."""
    (corpus / "line\nbreak.md").write_text(EN, encoding="utf-8")
    (corpus / "tab\there.txt").write_text(EN, encoding="utf-8")
    (corpus / "sub\ndir").mkdir()
    (corpus / "sub\ndir" / "inner.md").write_text(EN, encoding="utf-8")
    with open(os.path.join(os.fsencode(corpus), b"caf\xe9.md"), "wb") as f:  # a Latin-1 name, as old archives have
        f.write(EN.encode())
    deep = corpus.joinpath(*["d" * 200] * 5)
    deep.mkdir(parents=True)
    (deep / "deep.md").write_text(EN, encoding="utf-8")
    (corpus / 'say "hi" \\ o\'k.md').write_text("Quotes and backslashes in a name are fine. " * 3, encoding="utf-8")

    first = index_directory(milvus, corpus, embeddings, progress=False)
    reasons = {Path(s).name: e for s, e in first.errors.items()}
    assert set(reasons) == {"line\\nbreak.md", "tab\\there.txt", "inner.md", "caf\\xe9.md", "deep.md"}
    assert "control characters" in reasons["line\\nbreak.md"] and "rename it" in reasons["tab\\there.txt"]
    assert "not valid UTF-8" in reasons["caf\\xe9.md"] and "over the 1024" in reasons["deep.md"]
    assert sorted(Path(s).name for s in first.indexed) == ['langgraph.txt', 'milvus.md', 'say "hi" \\ o\'k.md']
    print(first.files())  # the report prints (no surrogates left in it)
    rows = rows_per_source(milvus)

    second = index_directory(milvus, corpus, embeddings, progress=False)
    assert second.indexed == [] and second.removed == [] and len(second.skipped) == 3
    assert second.errors == first.errors and rows_per_source(milvus) == rows


def test_rows_stored_under_an_odd_name_are_matched_exactly(milvus, embeddings, corpus):
    """Rows whose source holds a line break, quotes or backslashes (written before such names were refused) are
    found and removed like any other: no filter built from a name can fail to parse."""
    index_directory(milvus, corpus, embeddings, progress=False)
    good = rows_per_source(milvus)
    template = milvus.query(DEFAULT_COLLECTION, filter="chunk_index == 0", output_fields=["*"], limit=1)[0]
    del template["sparse"]  # made by Milvus from the text
    prefix = str(next(iter(good))).rsplit("/", 1)[0]
    odd = [f'{prefix}/line\nbreak.md', f'{prefix}/quote" or source != ".md', f'{prefix}/back\\slash\r\t.md']
    milvus.upsert(DEFAULT_COLLECTION, [template | {"id": f"odd{i}", "source": s} for i, s in enumerate(odd)])

    report = index_directory(milvus, corpus, embeddings, progress=False)
    assert sorted(report.removed) == sorted(odd) and report.errors == {} and len(report.skipped) == 2
    assert rows_per_source(milvus) == good  # the odd rows went, nothing else was touched


def test_links_out_of_the_folder_are_reported_not_indexed(milvus, embeddings, corpus, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\nThe outside file must not be indexed. " * 3, encoding="utf-8")
    (corpus / "passwd.txt").symlink_to("/etc/passwd")
    (corpus / "secret.md").symlink_to(outside / "secret.md")
    (corpus / "linked").symlink_to(outside, target_is_directory=True)
    (corpus / "up.md").symlink_to("../outside/secret.md")  # relative, through ..
    (corpus / "alias.txt").symlink_to(corpus / "langgraph.txt")  # inside the folder: fine
    (corpus / "sub").mkdir()
    (corpus / "also_sub").symlink_to(corpus / "sub", target_is_directory=True)  # a folder inside: not followed

    report = index_directory(milvus, corpus, embeddings, progress=False)
    reasons = {Path(s).name: e for s, e in report.errors.items()}
    assert set(reasons) == {"passwd.txt", "secret.md", "linked", "up.md"}
    assert all(f"points outside {corpus}: copy the file in instead" in e for e in reasons.values())
    assert sorted(Path(s).name for s in report.indexed) == ["alias.txt", "langgraph.txt", "milvus.md"]
    texts = " ".join(r["text"] for r in milvus.query(DEFAULT_COLLECTION, filter="", output_fields=["text"], limit=100))
    assert "outside file" not in texts and "root:" not in texts
    again = index_directory(milvus, corpus, embeddings, progress=False)
    assert again.indexed == [] and again.removed == [] and again.errors == report.errors


def test_a_run_that_writes_flushes_once_and_an_unchanged_run_not_at_all(milvus, embeddings, corpus, monkeypatch):
    """One flush after the whole load (one Lite segment, one set of BM25 statistics); none when nothing changed."""
    flushed: list[str] = []
    flush = milvus.flush
    monkeypatch.setattr(milvus, "flush", lambda name, **kw: (flushed.append(name), flush(name, **kw))[1])
    index_directory(milvus, corpus, embeddings, progress=False)
    assert flushed == [DEFAULT_COLLECTION]
    index_directory(milvus, corpus, embeddings, progress=False)
    assert flushed == [DEFAULT_COLLECTION]
    (corpus / "langgraph.txt").unlink()
    index_directory(milvus, corpus, embeddings, progress=False)
    assert flushed == [DEFAULT_COLLECTION] * 2


def test_a_symlink_loop_is_reported_and_the_rest_indexed(milvus, embeddings, corpus):
    (corpus / "self.md").symlink_to(corpus / "self.md")  # a link to itself
    (corpus / "ping.txt").symlink_to(corpus / "pong.txt")  # two links to each other
    (corpus / "pong.txt").symlink_to(corpus / "ping.txt")
    report = index_directory(milvus, corpus, embeddings, progress=False)
    reasons = {Path(s).name: e for s, e in report.errors.items()}
    assert set(reasons) == {"self.md", "ping.txt", "pong.txt"}
    assert reasons["self.md"] == ("self.md: a link that leads back to itself (a symlink loop): remove it or point it "
                                  "at a file")
    assert sorted(Path(s).name for s in report.indexed) == ["langgraph.txt", "milvus.md"]
    assert index_directory(milvus, corpus, embeddings, progress=False).errors == report.errors


class TinyEmbeddings(Embeddings):
    """FAKE embedding model (unit test): 2-d vectors from the text's length, so thousands of rows cost nothing."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(t))] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, float(len(text))]


def test_more_files_than_one_query_returns_are_all_seen(milvus, corpus):
    """One Milvus query returns at most 16,384 rows: past that many files, deleted ones must still be removed and
    unchanged ones skipped. The deleted files' rows are written straight into Milvus."""
    tiny = TinyEmbeddings()
    first = index_directory(milvus, corpus, tiny, progress=False)
    rows = count_rows(milvus, DEFAULT_COLLECTION)
    gone = [str(corpus.resolve() / f"gone{i:05}.md") for i in range(16_400)]
    for start in range(0, len(gone), 5000):
        milvus.insert(DEFAULT_COLLECTION, [make_row(s, "a deleted file", language="en", file_hash="old")
                                           | {"dense": [1.0, 0.0]} for s in gone[start : start + 5000]])
    seal(milvus)
    report = index_directory(milvus, corpus, tiny, progress=False)
    assert sorted(report.skipped) == sorted(first.indexed) and report.indexed == []
    assert report.removed == gone
    assert count_rows(milvus, DEFAULT_COLLECTION) == rows
