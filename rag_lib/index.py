"""Load files, split them into chunks and upsert them into Milvus incrementally.

Unchanged files (same `file_hash`: bytes and chunker settings) are skipped, a changed file's rows are replaced
(new rows first, so an interrupted run loses nothing) and a deleted file's rows removed. A file that cannot be read,
named or reached inside the folder is listed in `IndexReport.errors` and keeps what was indexed for it before.
"""

from __future__ import annotations

import hashlib
import os
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from pymilvus import MilvusClient
from tqdm.auto import tqdm

from rag_lib.chunking import Chunker
from rag_lib.embeddings import passage_cache
from rag_lib.loaders import LoadError, check_supported, load_file, read_bytes
from rag_lib.store import (
    DEFAULT_COLLECTION,
    PROJECT_ROOT,
    SOURCE_MAX_LENGTH,
    count_rows,
    ensure_collection_for,
    field_filter,
    make_row,
    query_all,
    seal,
)

EMBED_BATCH = 16
DELETE_BATCH = 1000  # deleted files whose rows go in one delete call


@dataclass
class IndexReport:
    """What one indexing run did, file by file."""

    indexed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    chunks_written: int = 0
    seconds: float = 0.0
    chunks: dict[str, int] = field(default_factory=dict)  # source -> chunks written for it

    def summary(self) -> dict[str, float | int]:
        """One row for a results table."""
        return {"files indexed": len(self.indexed), "files skipped (unchanged)": len(self.skipped),
                "files removed": len(self.removed), "errors": len(self.errors), "chunks written": self.chunks_written,
                "seconds": round(self.seconds, 1)}

    def files(self) -> list[dict[str, str | int]]:
        """One row per file: source, status (indexed / skipped / removed / error), chunks written, reason."""
        rows = [{"source": s, "status": "indexed", "chunks": self.chunks[s], "reason": ""} for s in self.indexed]
        rows += [{"source": s, "status": "skipped", "chunks": 0, "reason": "unchanged"} for s in self.skipped]
        rows += [{"source": s, "status": "removed", "chunks": 0, "reason": "file deleted"} for s in self.removed]
        rows += [{"source": s, "status": "error", "chunks": 0, "reason": e} for s, e in self.errors.items()]
        return sorted(rows, key=lambda r: str(r["source"]))


def source_name(path: Path) -> str:
    """How a file is named in the index: relative to the project when inside it, else absolute. Its folder is
    resolved, its own name kept: a link is listed (and a broken one reported) under the name it has in the folder."""
    path = path.parent.resolve() / path.name
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


def shown_name(name: str) -> str:
    """A file name safe to print: undecodable bytes as \\xNN, control characters escaped (a newline as \\n)."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return "".join(repr(ch)[1:-1] if unicodedata.category(ch) == "Cc" else ch for ch in text)


def check_source(source: str) -> None:
    """Raise LoadError for a name the index cannot store and match: not UTF-8, control characters, too long."""
    shown = shown_name(source)
    try:
        source.encode("utf-8")
    except UnicodeEncodeError:
        raise LoadError(f"{shown}: a file or folder name is not valid UTF-8 (Milvus stores UTF-8); rename it") from None
    if any(unicodedata.category(ch) == "Cc" for ch in source):
        raise LoadError(f"{shown}: a file or folder name has control characters (a line break or tab?); rename it")
    if len(source) > SOURCE_MAX_LENGTH:
        raise LoadError(
            f"{shown}: the path is {len(source)} characters, over the {SOURCE_MAX_LENGTH} the index stores; "
            "move the file to a shorter path")


def check_inside(path: Path, folder: Path) -> None:
    """Raise LoadError for a link that leads out of `folder` (to /etc/passwd, another project, a linked folder) or
    round in a loop (a link to itself, two links to each other)."""
    try:
        target = path.resolve()
    except (RuntimeError, OSError):  # a symlink loop: RuntimeError on Python 3.11, OSError on later versions
        raise LoadError(f"{path.name}: a link that leads back to itself (a symlink loop): remove it or point it at a "
                        "file") from None
    if not target.is_relative_to(folder.resolve()):
        raise LoadError(f"{path.name}: points outside {folder}: copy the file in instead")


def file_hash(data: bytes, chunker: Chunker) -> str:
    """Identifies one version of a file's rows: its bytes plus the chunker settings."""
    return hashlib.sha256(data + b"|" + chunker.settings().encode()).hexdigest()[:32]


def chunk_rows(path: Path, chunker: Chunker = Chunker(), embeddings: Embeddings | None = None,
               data: bytes | None = None) -> list[dict]:
    """Rows (without vectors) for one file. Chunk metadata other than `parent_id` becomes dynamic fields."""
    data = read_bytes(path) if data is None else data
    loaded = load_file(path, data)
    chunks = chunker.split(loaded.text, embeddings)
    if not chunks:
        raise LoadError(f"{path.name}: no text to index")
    source, version = source_name(path), file_hash(data, chunker)
    return [make_row(source, chunk.text, chunk_index=i, chunk_count=len(chunks), file_hash=version, title=loaded.title,
                     **{"parent_id": "", **chunk.metadata}) for i, chunk in enumerate(chunks)]


def indexed_files(client: MilvusClient, collection: str) -> dict[str, tuple[str, int]]:
    """source -> (file_hash, chunk_count) of every file present in the collection (read from its chunk 0)."""
    rows = query_all(client, collection, "chunk_index == 0", ["source", "file_hash", "chunk_count"])
    return {r["source"]: (r["file_hash"], r["chunk_count"]) for r in rows}


def is_complete(client: MilvusClient, collection: str, source: str, version: str, chunk_count: int) -> bool:
    """True when exactly this version's rows are stored for the file (none missing, none stale)."""
    where = field_filter("source", source)
    return count_rows(client, collection, where) == chunk_count and count_rows(
        client, collection, f"{where} and {field_filter('file_hash', version)}"
    ) == chunk_count


def embed_rows(rows: list[dict], embeddings: Embeddings, progress: tqdm | None = None) -> None:
    """Add the `dense` vector to each row, in batches, through the passage cache when `embeddings` keep one."""
    passages = passage_cache(embeddings)
    for start in range(0, len(rows), EMBED_BATCH):
        batch = rows[start : start + EMBED_BATCH]
        for row, vector in zip(batch, passages.embed_documents([r["text"] for r in batch])):
            row["dense"] = vector
        if progress is not None:
            progress.update(len(batch))


def write_file(client: MilvusClient, collection: str, rows: list[dict]) -> None:
    """Upsert a file's new rows, then delete its stale ones (in this order, so a crash loses nothing)."""
    client.upsert(collection, rows)
    source, version = rows[0]["source"], rows[0]["file_hash"]
    stale = f"{field_filter('source', source)} and {field_filter('file_hash', version, exclude=True)}"
    client.delete(collection, filter=stale)


def list_files(folder: Path) -> list[Path]:
    """Every file below `folder` (any type: unsupported ones are reported), sorted; hidden files and folders skipped.
    A link to a folder outside is listed too, to be reported; one to a folder inside adds nothing (not followed)."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder: pass the folder that holds your documents")
    root = folder.resolve()
    return sorted(p for p in folder.rglob("*") if (not p.is_dir() or not p.resolve().is_relative_to(root))
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def chosen_chunker(chunker: str | Chunker, chunk_size: int | None, chunk_overlap: int | None) -> Chunker:
    """The Chunker `index_directory` splits with: a strategy name sized by the arguments, or a ready Chunker."""
    sizes = {k: v for k, v in (("chunk_size", chunk_size), ("chunk_overlap", chunk_overlap)) if v is not None}
    if isinstance(chunker, str):
        return Chunker(chunker, **sizes)
    if sizes:
        raise ValueError(
            f"sizes given twice ({sizes} and a Chunker, which carries its own): give the sizes either to the Chunker "
            "or as chunk_size/chunk_overlap with a strategy name, not both.")
    return chunker


def drop_deleted(client: MilvusClient, collection: str, folder: Path, files: list[Path],
                 known: dict[str, tuple[str, int]]) -> list[str]:
    """Delete the chunks of the files under `folder` that are indexed but gone from disk; their sources, sorted."""
    prefix = source_name(folder.resolve()).rstrip("/") + "/"
    present = {source_name(p) for p in files}
    removed = [s for s in sorted(known) if s.startswith(prefix) and s not in present]
    for start in range(0, len(removed), DELETE_BATCH):
        client.delete(collection, filter=field_filter("source", removed[start : start + DELETE_BATCH]))
    return removed


def write_pending(client: MilvusClient, collection: str, pending: list[list[dict]], embeddings: Embeddings,
                  report: IndexReport, progress: bool) -> None:
    """Embed and write the chunk rows of each new or changed file, and count them in `report`."""
    with tqdm(total=sum(len(r) for r in pending), desc="embedding chunks", unit="chunk", disable=not progress) as bar:
        for rows in pending:
            embed_rows(rows, embeddings, bar)
            write_file(client, collection, rows)
            report.indexed.append(rows[0]["source"])
            report.chunks[rows[0]["source"]] = len(rows)
            report.chunks_written += len(rows)


def index_directory(client: MilvusClient, folder: str | Path, embeddings: Embeddings,
                    collection: str = DEFAULT_COLLECTION, chunk_size: int | None = None,
                    chunk_overlap: int | None = None, progress: bool = True,
                    chunker: str | Chunker = "recursive") -> IndexReport:
    """Bring the collection in line with `folder`: index new/changed files, skip unchanged, drop deleted. `chunker`
    is a strategy name (rag_lib.chunking.STRATEGIES, sized by chunk_size/chunk_overlap) or a `Chunker`."""
    started = time.perf_counter()
    chunker = chosen_chunker(chunker, chunk_size, chunk_overlap)
    folder = Path(folder)
    report = IndexReport()
    files = list_files(folder)
    ensure_collection_for(client, embeddings, collection)
    known = indexed_files(client, collection)

    pending: list[list[dict]] = []
    for path in files:
        source = source_name(path)
        try:
            check_source(source)
            check_inside(path, folder)
            check_supported(path)  # before reading: an unsupported file's reason is its type, not its size
            data = read_bytes(path)
            version = file_hash(data, chunker)
            stored = known.get(source)
            if stored and stored[0] == version and is_complete(client, collection, source, version, stored[1]):
                report.skipped.append(source)
                continue
            pending.append(chunk_rows(path, chunker, embeddings, data))
        except (LoadError, OSError) as error:
            report.errors[shown_name(source)] = str(error)

    write_pending(client, collection, pending, embeddings, report, progress)

    report.removed = drop_deleted(client, collection, folder, files, known)
    if report.indexed or report.removed:
        seal(client, collection)
    report.seconds = time.perf_counter() - started
    return report


def parent_documents(client: MilvusClient, documents: list[Document],
                     collection: str = DEFAULT_COLLECTION) -> list[Document]:
    """Swap retrieved child chunks for their parents (from `parent_text`), one per parent, in rank order; a chunk
    without a parent stays. A parent keeps its best child's metadata, and its text as `child_text`."""
    ids = [d.id for d in documents]
    stored = ({r["id"]: r for r in client.get(collection, ids=ids, output_fields=["parent_id", "parent_text"])}
              if ids else {})
    parents: list[Document] = []
    seen: set[str] = set()
    for doc in documents:
        row = stored.get(doc.id, {})
        parent_id = row.get("parent_id", "")
        if not parent_id:
            parents.append(doc)
        elif parent_id not in seen:
            seen.add(parent_id)
            metadata = {**doc.metadata, "child_text": doc.page_content}
            parents.append(Document(page_content=row["parent_text"], metadata=metadata, id=parent_id))
    return parents
