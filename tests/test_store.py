"""The explicit schema, the Lite lock error and the dimension check."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rag_lib.store import DEFAULT_COLLECTION, chunk_id, collection_dim, connect, ensure_collection, quote


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
        assert "open in another process" in done.stderr and "MILVUS_URI" in done.stderr
    finally:
        holder.close()
