"""The explicit schema, filter literals, the Lite lock (its error, and its release on close), the dimension check
and one server database per notebook."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pymilvus.exceptions import MilvusException

from rag_lib import store
from rag_lib.store import (
    DEFAULT_COLLECTION,
    JIEBA_ANALYZER_PARAMS,
    SPARSE_SEARCH_PARAMS,
    MilvusPathError,
    chunk_id,
    collection_dim,
    connect,
    count_rows,
    database_name,
    ensure_collection,
    ensure_collection_for,
    field_filter,
    lite_path,
    make_row,
    milvus_uri,
    opened,
    query_all,
    quote,
)


def test_schema_has_dense_sparse_and_metadata(milvus):
    ensure_collection(milvus, 384)
    fields = {f["name"]: f for f in milvus.describe_collection(DEFAULT_COLLECTION)["fields"]}
    assert {"id", "text", "dense", "sparse", "source", "chunk_index", "parent_id", "language", "title"} <= set(fields)
    assert collection_dim(milvus, DEFAULT_COLLECTION) == 384
    dense_index = milvus.describe_index(DEFAULT_COLLECTION, "dense")
    assert dense_index["index_type"] == "HNSW"
    # Lite drops build params given the usual way (describe_index then shows none); ours must be kept.
    assert dense_index["params"] == {"M": 16, "efConstruction": 200}
    sparse_index = milvus.describe_index(DEFAULT_COLLECTION, "sparse")
    assert (sparse_index["index_type"], sparse_index["metric_type"]) == ("SPARSE_INVERTED_INDEX", "BM25")
    assert sparse_index["params"] == {"drop_ratio_build": 0.0}


def test_dimension_mismatch_is_a_clear_error(milvus):
    ensure_collection(milvus, 384)
    with pytest.raises(ValueError, match="384-d vectors but the embedding model makes 1536-d"):
        ensure_collection(milvus, 1536)


def test_ensure_collection_for_takes_the_dimension_from_the_embeddings(milvus, embeddings):
    assert ensure_collection_for(milvus, embeddings, "probed") == "probed"
    assert collection_dim(milvus, "probed") == len(embeddings.embed_query("any text"))


@pytest.mark.parametrize(("analyzer", "stop_word_hits"), [(None, 0), (JIEBA_ANALYZER_PARAMS, 1)])
def test_the_course_analyzer_leaves_stop_words_and_punctuation_out_of_bm25(milvus, analyzer, stop_word_hits):
    ensure_collection(milvus, 2, "words", analyzer_params=analyzer)  # None: the course analyzer
    milvus.insert("words", [make_row("a.md", "向量的索引。") | {"dense": [1.0, 0.0]}])
    milvus.flush("words")

    def hits(query: str) -> int:
        return len(milvus.search("words", data=[query], anns_field="sparse", limit=5,
                                 search_params=SPARSE_SEARCH_PARAMS)[0])

    assert hits("索引") == 1  # a word is a term with either analyzer
    assert hits("的。") == stop_word_hits  # a stop word and punctuation only with jieba alone


def test_make_row_fills_every_schema_field():
    row = make_row("docs/a.md", "向量数据库", chunk_index=2, chunk_count=3, kind="qa")
    assert row == {"id": chunk_id("docs/a.md", "向量数据库"), "text": "向量数据库", "source": "docs/a.md",
                   "file_hash": "", "chunk_index": 2, "chunk_count": 3, "parent_id": "", "language": "zh",
                   "title": "", "kind": "qa"}  # language detected, extra keywords as dynamic fields
    assert make_row("s", "text", id="given", language="zh")["id"] == "given"


def test_chunk_id_is_stable_and_source_specific():
    assert chunk_id("a.md", "text") == chunk_id("a.md", "text")
    assert chunk_id("a.md", "text") != chunk_id("b.md", "text")


def test_quote_escapes_filter_literals():
    assert quote('he said "hi" \\') == '"he said \\"hi\\" \\\\"'
    assert quote("line\nbreak\r\ttab") == '"line\\nbreak\\r\\ttab"'


ODD_VALUES = ["plain.md", 'say "hi".md', "back\\slash.md", "line\nbreak.md", "cr\r\ttab.md", "it's.md",
              '" or source != "', "\\", "报告 2024.md", "\x01ctrl.md"]


def test_any_stored_string_is_matched_and_deleted_exactly_through_quote(milvus):
    ensure_collection(milvus, 2)
    rows = [make_row(v, "t", id=str(i), file_hash="h") | {"dense": [1.0, 0.0]} for i, v in enumerate(ODD_VALUES)]
    milvus.upsert(DEFAULT_COLLECTION, rows)
    for value in ODD_VALUES:
        found = milvus.query(DEFAULT_COLLECTION, filter=field_filter("source", value), output_fields=["source"])
        assert [r["source"] for r in found] == [value]
        assert (count_rows(milvus, DEFAULT_COLLECTION, field_filter("source", value, exclude=True))
                == len(ODD_VALUES) - 1)
    assert field_filter("source", ODD_VALUES[0]) == f"source == {quote(ODD_VALUES[0])}"
    assert field_filter("source", []) == ""  # no values: no filter
    pair = field_filter("source", [ODD_VALUES[3], ODD_VALUES[6]])
    assert count_rows(milvus, DEFAULT_COLLECTION, pair) == 2
    assert count_rows(milvus, DEFAULT_COLLECTION, field_filter("source", [ODD_VALUES[3]], exclude=True)) == 9
    milvus.delete(DEFAULT_COLLECTION, filter=pair)
    assert count_rows(milvus, DEFAULT_COLLECTION) == len(ODD_VALUES) - 2


def test_milvus_lite_still_refuses_filter_templating(milvus):
    """Why `quote` exists: pymilvus' filter_params would be the way, but Milvus Lite's parser stops at the "{".
    When this test fails, Lite has learnt templating: build filters with filter_params and drop `quote`."""
    ensure_collection(milvus, 2)
    with pytest.raises(MilvusException, match="unexpected character '{'"):
        milvus.query(DEFAULT_COLLECTION, filter="source == {s}", filter_params={"s": "a.md"})


def test_second_process_gets_a_clear_lock_error(tmp_path):
    uri = str(tmp_path / "locked.db")
    holder = connect(uri=uri)
    try:
        probe = "from rag_lib.store import connect; connect(uri=%r)" % uri
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        assert done.returncode != 0
        assert "MilvusLockedError" in done.stderr
        assert "open in another process" in done.stderr and "MILVUS_URI=http://" in done.stderr
        assert "another path" not in done.stderr  # a Lite path in MILVUS_URI breaks `import pymilvus` itself
    finally:
        holder.close()


HOLDER = """
import gc, sys
from rag_lib.store import connect, ensure_collection, make_row
client = connect(uri=sys.argv[1])
ensure_collection(client, 2)
client.insert("rag_docs", [make_row("a.md", "kept by process A") | {"dense": [1.0, 0.0]}])
%s
print("CLOSED", flush=True)
sys.stdin.read()  # stay alive until the parent is done
"""


@pytest.mark.parametrize("let_go", ["client.close()", "del client; gc.collect()"])
def test_a_closed_or_dropped_client_lets_another_process_open_the_database(tmp_path, let_go):
    """Milvus Lite 3.2.2 keeps its lock after MilvusClient.close() until the process exits; a client from `connect`
    frees it when closed or garbage-collected, while its process goes on running."""
    uri = str(tmp_path / "shared.db")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER % let_go, uri], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "CLOSED\n"
        with opened(uri=uri) as client:  # the holder is still running
            client.load_collection(DEFAULT_COLLECTION)
            assert [r["text"] for r in client.query(DEFAULT_COLLECTION, filter="", output_fields=["text"])] == [
                "kept by process A"]
        again = connect(uri=uri)  # released by the with block: this process can open it anew
        again.close()
    finally:
        holder.communicate("", timeout=60)
    assert holder.returncode == 0


def test_close_keeps_the_server_while_another_client_of_this_process_uses_it(tmp_path):
    uri = str(tmp_path / "two.db")
    first, second = connect(uri=uri), connect(uri=uri)
    ensure_collection(first, 2)
    first.close()
    assert second.has_collection(DEFAULT_COLLECTION)  # still served
    second.close()
    probe = f"from rag_lib.store import connect; print(connect(uri={uri!r}).has_collection({DEFAULT_COLLECTION!r}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "True", done.stderr[-2000:]


def test_a_database_path_that_is_a_file_names_the_path_and_the_fix(tmp_path):
    old = tmp_path / "old.db"
    old.write_bytes(b"a database file from an older milvus-lite")
    with pytest.raises(MilvusPathError, match=f"{old} is a file, .*move or delete that file, or pass another path"):
        connect(uri=str(old))
    assert old.read_bytes() == b"a database file from an older milvus-lite"  # left as it was


def insert_generated(client, n: int, collection: str = DEFAULT_COLLECTION, **fields) -> None:
    """`n` rows of the course schema straight into Milvus, with cheap 2-d vectors (no embedding model)."""
    rows = [make_row(f"f{i:05}.md", f"row {i}", language="en", **fields) | {"dense": [1.0, i / n]} for i in range(n)]
    for start in range(0, n, 5000):
        client.insert(collection, rows[start : start + 5000])


def test_query_all_reads_every_row_past_one_query_s_limit(milvus):
    """A query returns at most 16,384 rows (its `limit`); query_all pages through all of them."""
    ensure_collection(milvus, 2)
    insert_generated(milvus, 16_500)
    assert len(milvus.query(DEFAULT_COLLECTION, filter="chunk_index == 0", output_fields=["source"], limit=16_384)) \
        == 16_384
    rows = query_all(milvus, DEFAULT_COLLECTION, "chunk_index == 0", ["source"])
    assert len(rows) == 16_500 and len({r["source"] for r in rows}) == 16_500
    assert len(query_all(milvus, DEFAULT_COLLECTION, field_filter("source", ["f00001.md", "f16499.md"]))) == 2


@pytest.mark.parametrize(
    ("name", "expected"),
    [("00_quickstart", "nb_00_quickstart"), ("03_hnsw", "nb_03_hnsw"), ("app", "app"), ("rag", "rag"),
     ("my-notes.v2", "my_notes_v2"), ("_x", "_x")],
)
def test_database_names_are_valid_milvus_identifiers(name, expected):
    assert database_name(name) == expected


class FakeServerClient:
    """Test double for pymilvus.MilvusClient on a server (no Milvus server can run here): records databases and
    the calls made, so the routing in `connect` can be checked without a network."""

    databases = ["default"]
    opened: list[tuple[str, str, str]] = []

    def __init__(self, uri: str, token: str = "", db_name: str = "") -> None:
        self.db_name = db_name
        self.opened.append((uri, token, db_name))

    def list_databases(self) -> list[str]:
        return list(self.databases)

    def create_database(self, db_name: str) -> None:
        assert self.db_name == "", "databases are created from a client on the default database"
        self.databases.append(db_name)

    def close(self) -> None:
        pass


@pytest.fixture()
def fake_server(monkeypatch):
    monkeypatch.setattr(FakeServerClient, "databases", ["default"])
    monkeypatch.setattr(FakeServerClient, "opened", [])
    monkeypatch.setattr(store, "MilvusClient", FakeServerClient)
    monkeypatch.setenv("MILVUS_URI", "http://milvus.example:19530")
    monkeypatch.setenv("MILVUS_TOKEN", "root:Milvus")
    return FakeServerClient


def test_server_gives_each_notebook_its_own_database(fake_server):
    first = connect("00_quickstart")
    assert first.db_name == "nb_00_quickstart" and "nb_00_quickstart" in fake_server.databases
    second = connect("02_hybrid_indexing")
    assert second.db_name == "nb_02_hybrid_indexing"
    again = connect("00_quickstart")  # an existing database is reused, not created twice
    assert again.db_name == "nb_00_quickstart"
    assert fake_server.databases == ["default", "nb_00_quickstart", "nb_02_hybrid_indexing"]
    assert {uri for uri, _, _ in fake_server.opened} == {"http://milvus.example:19530"}
    assert {token for _, token, _ in fake_server.opened} == {"root:Milvus"}


def test_milvus_uri_names_the_notebook_database_on_a_server(monkeypatch):
    monkeypatch.setenv("MILVUS_URI", "http://localhost:19530/")
    assert milvus_uri("02_hybrid_indexing") == "http://localhost:19530/nb_02_hybrid_indexing"  # for LangChain
    monkeypatch.delenv("MILVUS_URI")
    assert milvus_uri("02_hybrid_indexing") == str(lite_path("02_hybrid_indexing"))


def test_an_explicit_uri_is_opened_as_it_is(fake_server):
    client = connect("00_quickstart", uri="http://other:19530")
    assert client.db_name == "" and fake_server.opened == [("http://other:19530", "root:Milvus", "")]
    assert fake_server.databases == ["default"]
