"""LangChain's Indexing API beside `rag_lib.index.index_directory`: both index a copy of data/docs into Milvus Lite.

LangChain: `langchain_core.indexing.index(docs, record_manager, vector_store, cleanup=..., source_id_key="source")`
with `langchain_core.indexing.InMemoryRecordManager` and the langchain-milvus hybrid store of
`rag_lib.experiments.lc_milvus`
(`SQLRecordManager`, in langchain_classic and langchain_community, does not import here: SQLAlchemy 2.1's asyncio
module needs `greenlet`, which the course does not install). Its documents are the chunks `index_directory` makes
(same loader, same Chunker).
Runs, timed, for both: the first index, a re-run with nothing changed, a re-run after one file was edited, and a
re-run after one file was removed. Vectors come from the course's passage cache, warmed before the timed runs, so
the seconds measure the bookkeeping, not e5. Writes bench_results/indexing_api.json.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.indexing import InMemoryRecordManager, index

from rag_lib.chunking import Chunker
from rag_lib.embeddings import passage_cache
from rag_lib.experiments.lc_milvus import hybrid_store
from rag_lib.index import chunk_rows, index_directory, list_files
from rag_lib.store import PROJECT_ROOT, connect, count_rows

OUT = PROJECT_ROOT / "bench_results" / "indexing_api.json"
DOCS = PROJECT_ROOT / "data" / "docs"
STEPS = ("first index", "no change", "one file edited", "one file removed")


def documents(folder: Path, embeddings: Embeddings) -> list[Document]:
    """The chunks `index_directory` would store for `folder`, as LangChain Documents (metadata: source, ...)."""
    chunker = Chunker()
    return [Document(row["text"], metadata={"source": row["source"], "chunk_index": row["chunk_index"]})
            for path in list_files(folder) for row in chunk_rows(path, chunker, embeddings)]


def edit_then_remove(folder: Path) -> list[Callable[[], None]]:
    """The changes made before the 2nd-4th runs: none, one file edited (a paragraph appended), one file removed."""
    files = list_files(folder)

    def edit() -> None:
        with files[0].open("a", encoding="utf-8") as handle:
            handle.write("\n\nAn added paragraph: this file changed after the first index.\n")

    return [lambda: None, edit, files[-1].unlink]


def timed(run: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = run()
    return out, round(time.perf_counter() - start, 3)


def run_ours(folder: Path, workdir: Path, embeddings: Embeddings) -> list[dict[str, Any]]:
    """index_directory on `folder` after each change: seconds, files indexed/skipped/removed, rows before/after."""
    client = connect(uri=str(workdir / "ours.db"))
    steps = []
    try:
        for change in [lambda: None, *edit_then_remove(folder)]:
            change()
            before = count_rows(client, "docs") if client.has_collection("docs") else 0
            report, seconds = timed(lambda: index_directory(client, folder, embeddings, "docs", progress=False))
            steps.append({"seconds": seconds, "files indexed": len(report.indexed),
                          "files skipped": len(report.skipped), "files removed": len(report.removed),
                          "rows written": report.chunks_written,
                          "rows before": before, "rows after": count_rows(client, "docs")})
    finally:
        client.close()
    return steps


def run_langchain(folder: Path, workdir: Path, embeddings: Embeddings, cleanup: str) -> list[dict[str, Any]]:
    """LangChain's index() on `folder`'s chunks after each change, with `cleanup` ("incremental" or "full")."""
    store = hybrid_store(passage_cache(embeddings), str(workdir / f"lc_{cleanup}.db"), "docs", drop_old=True)
    manager = InMemoryRecordManager("milvus/docs")
    manager.create_schema()
    steps = []
    for change in [lambda: None, *edit_then_remove(folder)]:
        change()
        before = store.client.query("docs", output_fields=["count(*)"])[0]["count(*)"] if store.col else 0

        def run() -> dict:
            return index(documents(folder, embeddings), manager, store, cleanup=cleanup, source_id_key="source",
                         key_encoder="sha256")

        result, seconds = timed(run)
        steps.append({"seconds": seconds, "rows added": result["num_added"], "rows skipped": result["num_skipped"],
                      "rows deleted": result["num_deleted"], "rows before": before,
                      "rows after": store.client.query("docs", output_fields=["count(*)"])[0]["count(*)"]})
    store.client.close()
    return steps


def compare(docs: Path, embeddings: Embeddings) -> dict[str, Any]:
    """Both ways on fresh copies of `docs`, step by step, and the behaviours the course relies on."""
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for number, (name, run) in enumerate([("index_directory", lambda f, w: run_ours(f, w, embeddings)),
                          ("index(cleanup='incremental')", lambda f, w: run_langchain(f, w, embeddings, "incremental")),
                          ("index(cleanup='full')", lambda f, w: run_langchain(f, w, embeddings, "full"))]):
            folder = Path(tmp) / str(number) / "docs"
            shutil.copytree(docs, folder)
            runs[name] = [{"step": step, **row} for step, row in zip(STEPS, run(folder, folder.parent))]
    ours, incremental, full = runs.values()
    removed_rows = incremental[2]["rows after"] - full[3]["rows after"]
    return {
        "runs": runs,
        "behaviours": {
            "no-change re-run writes nothing": {
                "index_directory": ours[1]["rows written"] == 0,
                "index(incremental)": incremental[1]["rows added"] == incremental[1]["rows deleted"] == 0},
            "removed file's rows deleted": {
                "index_directory": ours[3]["rows after"] < ours[3]["rows before"],
                "index(incremental)": incremental[3]["rows after"] < incremental[3]["rows before"],
                "index(full)": full[3]["rows after"] < full[3]["rows before"]},
            "rows left behind by incremental after a removal": removed_rows,
        },
    }


def table(result: dict[str, Any]) -> str:
    """The runs side by side per step: seconds, rows written, rows dropped (deleted or overwritten: rows before +
    written - rows after), rows after; skipped counts files for index_directory (f), rows for index() (r)."""
    lines = [f"{'step':<17} {'way':<28} {'seconds':>7} {'written':>7} {'dropped':>7} {'skipped':>7} {'rows':>5}"]
    for step_index, step in enumerate(STEPS):
        for name, steps in result["runs"].items():
            row = steps[step_index]
            written = row.get("rows added", row.get("rows written"))
            skipped = f"{row['rows skipped']} r" if "rows skipped" in row else f"{row['files skipped']} f"
            dropped = row["rows before"] + written - row["rows after"]
            lines.append(f"{step:<17} {name:<28} {row['seconds']:>7.2f} {written:>7} {dropped:>7} {skipped:>7} "
                         f"{row['rows after']:>5}")
    return "\n".join(lines)


def main() -> None:
    from rag_lib.embeddings import get_embeddings

    embeddings = get_embeddings()
    warm = passage_cache(embeddings)
    warm.embed_documents([d.page_content for d in documents(DOCS, embeddings)])  # untimed: fills the passage cache
    with tempfile.TemporaryDirectory() as tmp:  # untimed warm-up: imports, jieba, Milvus Lite start
        tiny = Path(tmp) / "docs"
        tiny.mkdir()
        for path in list_files(DOCS)[:2]:
            shutil.copy(path, tiny)
        compare(tiny, embeddings)
    result = compare(DOCS, embeddings)
    load = [round(x, 2) for x in os.getloadavg()]
    meta = {"machine": platform.machine(), "cpus": os.cpu_count(), "load 1/5/15 min": load,
            "record manager": "InMemoryRecordManager (SQLRecordManager needs greenlet)",
            "versions": {p: version(p) for p in ("langchain-core", "langchain-milvus", "pymilvus")}}
    OUT.write_text(json.dumps({"meta": meta, **result}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(table(result))
    print(json.dumps(result["behaviours"], indent=1))


if __name__ == "__main__":
    main()
