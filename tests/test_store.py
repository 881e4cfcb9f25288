"""The explicit schema, the Lite lock error, the dimension check and one server database per notebook."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rag_lib import store
from rag_lib.store import (
    DEFAULT_COLLECTION, chunk_id, collection_dim, connect, database_name, ensure_collection, lite_path, milvus_uri, quote,
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


def test_dimension_mismatch_is_a_clear_error(milvus):
    ensure_collection(milvus, 384)
    with pytest.raises(ValueError, match="384-d vectors but the embedding model makes 1536-d"):
        ensure_collection(milvus, 1536)


def test_chunk_id_is_stable_and_source_specific():
    assert chunk_id("a.md", "text") == chunk_id("a.md", "text")
    assert chunk_id("a.md", "text") != chunk_id("b.md", "text")


def test_quote_escapes_filter_literals():
    assert quote('he said "hi" \\') == '"he said \\"hi\\" \\\\"'


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
