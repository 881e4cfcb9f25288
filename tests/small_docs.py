"""Three small documents (two English, one Chinese) and fixtures that write them to a folder and index them in a real
Milvus Lite collection; conftest.py makes the fixtures available to every test file."""

from __future__ import annotations

from pathlib import Path

import pytest

DOCS = {
    "hnsw.md": "# HNSW\n\nHNSW builds several layers of proximity graphs. A search starts on the top layer and "
    "greedily moves to the neighbour closest to the query.\n\nThe parameter M sets how many neighbours each node "
    "keeps; efConstruction sets the candidate list while building. Milvus uses M = 16 by default.",
    "bm25.md": "# BM25\n\nBM25 ranks documents by how often the query terms occur in them, damped by k1, and by how "
    "rare the terms are in the collection (inverse document frequency).\n\nThe parameter b normalises for document "
    "length: long documents repeat words by chance.",
    "ivf_zh.txt": "IVF 索引\n\nIVF 索引先用 k-means 把向量聚成 nlist 个簇，每个簇用质心表示。\n\n"
    "查询时只在离查询最近的 nprobe "
    "个簇里逐一比较向量，nprobe 越大召回越高、速度越慢。",
}


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture()
def chunks(milvus, embeddings, docs) -> str:
    """A real collection of the three small documents, ~2 chunks each."""
    from rag_lib.index import index_directory

    index_directory(milvus, docs, embeddings, collection="chunks", chunk_size=160, chunk_overlap=0, progress=False)
    return "chunks"
