"""benchmarks/indexing_api.py: LangChain's index() and index_directory on a tiny folder (a FAKE embedding model:
unit test of the comparison code path, on real Milvus Lite databases)."""

from __future__ import annotations

import sys
from pathlib import Path

from langchain_core.embeddings import Embeddings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ lives at the repository root, outside the installed package

from benchmarks.indexing_api import STEPS, compare, table  # noqa: E402


class LengthEmbeddings(Embeddings):
    """FAKE embedding model (unit test): 2-d vectors from the text's length."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(t))] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, float(len(text))]


def test_both_ways_skip_unchanged_files_and_only_full_cleanup_drops_a_removed_one(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nMilvus Lite keeps a database in one directory.\n", encoding="utf-8")
    (docs / "b.txt").write_text("HNSW builds a graph over the vectors; ef sets the search breadth.\n", encoding="utf-8")
    result = compare(docs, LengthEmbeddings())

    ours, incremental, full = (result["runs"][name] for name in result["runs"])
    assert [row["step"] for row in ours] == list(STEPS)
    assert [row["rows after"] for row in ours] == [2, 2, 2, 1]
    assert ours[1]["rows written"] == 0 and ours[1]["files skipped"] == 2
    assert incremental[1]["rows added"] == 0 and incremental[1]["rows skipped"] == 2
    assert incremental[2]["rows added"] == 1 and incremental[2]["rows deleted"] == 1  # the edited file's chunk
    assert incremental[3]["rows after"] == 2 and full[3]["rows after"] == 1  # incremental keeps a removed file
    assert result["behaviours"]["removed file's rows deleted"] == {
        "index_directory": True, "index(incremental)": False, "index(full)": True}
    assert len(table(result).splitlines()) == 1 + len(STEPS) * 3
