"""Load files, split them into chunks and upsert them into Milvus incrementally.

Re-running on unchanged files writes nothing; a changed file replaces its old chunks; a deleted file's
chunks are removed. New rows are written before stale ones are deleted, so an interrupted run never
loses data, and a file counts as done only when all its `chunk_count` rows are present.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langchain_text_splitters import RecursiveCharacterTextSplitter
from pymilvus import MilvusClient
from tqdm.auto import tqdm

from rag_lib.store import DEFAULT_COLLECTION, PROJECT_ROOT, chunk_id, count_rows, ensure_collection, quote
from rag_lib.text import detect_language

SUPPORTED_SUFFIXES = (".md", ".txt")
# Paragraphs first, then Chinese and English sentence ends, then clauses, then words.
SEPARATORS = ["\n\n", "\n", "。", "！", "？", ". ", "! ", "? ", "；", "; ", "，", ", ", " ", ""]
EMBED_BATCH = 16


class LoadError(ValueError):
    """A file cannot be indexed; the message says why (empty, binary, undecodable, unsupported...)."""


@dataclass
class IndexReport:
    """What one indexing run did, file by file."""

    indexed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    chunks_written: int = 0
    seconds: float = 0.0

    def summary(self) -> dict[str, float | int]:
        """One row for a results table."""
        return {
            "files indexed": len(self.indexed),
            "files skipped (unchanged)": len(self.skipped),
            "files removed": len(self.removed),
            "errors": len(self.errors),
            "chunks written": self.chunks_written,
            "seconds": round(self.seconds, 1),
        }


def read_text(path: Path) -> str:
    """Decode a text file (UTF-8, else GB18030 for legacy Chinese files); reject empty or binary files."""
    data = path.read_bytes()
    if not data.strip():
        raise LoadError(f"{path.name}: empty file")
    if b"\x00" in data[:8192]:
        raise LoadError(f"{path.name}: binary content, not text (wrong extension?)")
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise LoadError(f"{path.name}: not UTF-8 or GB18030 text; re-save it as UTF-8")


def split_text(text: str, chunk_size: int = 300, chunk_overlap: int = 50) -> list[str]:
    """Recursive split on paragraph, sentence (Chinese and English) and clause boundaries, in characters."""
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=SEPARATORS, keep_separator="end"
    )
    return [c.strip() for c in splitter.split_text(text) if c.strip()]


def source_name(path: Path) -> str:
    """How a file is named in the index: relative to the project when inside it, else absolute."""
    path = path.resolve()
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


def title_of(text: str, path: Path) -> str:
    """The first markdown header, else the file name without extension."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()[:500]
    return path.stem


def chunk_rows(path: Path, chunk_size: int = 300, chunk_overlap: int = 50) -> list[dict]:
    """Rows (without vectors) for one file; `file_hash` covers the bytes and the splitter settings."""
    text = read_text(path)
    chunks = list(dict.fromkeys(split_text(text, chunk_size, chunk_overlap)))  # drop repeated chunks
    source = source_name(path)
    file_hash = hashlib.sha256(path.read_bytes() + f"|{chunk_size}|{chunk_overlap}".encode()).hexdigest()[:32]
    title = title_of(text, path)
    return [
        {
            "id": chunk_id(source, chunk),
            "text": chunk,
            "source": source,
            "file_hash": file_hash,
            "chunk_index": i,
            "chunk_count": len(chunks),
            "parent_id": "",
            "language": detect_language(chunk),
            "title": title,
        }
        for i, chunk in enumerate(chunks)
    ]


def indexed_files(client: MilvusClient, collection: str) -> dict[str, str]:
    """source -> file_hash of every file present in the collection (read from each file's chunk 0)."""
    rows = client.query(collection, filter="chunk_index == 0", output_fields=["source", "file_hash"], limit=16384)
    return {r["source"]: r["file_hash"] for r in rows}


def is_complete(client: MilvusClient, collection: str, rows: list[dict]) -> bool:
    """True when exactly this version's rows are stored for the file (none missing, none stale)."""
    source = quote(rows[0]["source"])
    return count_rows(client, collection, f"source == {source}") == len(rows) and count_rows(
        client, collection, f"source == {source} and file_hash == {quote(rows[0]['file_hash'])}"
    ) == len(rows)


def embed_rows(rows: list[dict], embeddings: Embeddings, progress: tqdm | None = None) -> None:
    """Add the `dense` vector to each row, in batches."""
    for start in range(0, len(rows), EMBED_BATCH):
        batch = rows[start : start + EMBED_BATCH]
        for row, vector in zip(batch, embeddings.embed_documents([r["text"] for r in batch])):
            row["dense"] = vector
        if progress is not None:
            progress.update(len(batch))


def write_file(client: MilvusClient, collection: str, rows: list[dict]) -> None:
    """Upsert a file's new rows, then delete its stale ones (in this order, so a crash loses nothing)."""
    client.upsert(collection, rows)
    stale = f"source == {quote(rows[0]['source'])} and file_hash != {quote(rows[0]['file_hash'])}"
    client.delete(collection, filter=stale)


def list_files(folder: Path) -> list[Path]:
    """Supported files below `folder`, sorted (hidden files skipped)."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder: pass the folder that holds your .md/.txt files")
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES and not p.name.startswith(".")
    )


def index_directory(
    client: MilvusClient,
    folder: str | Path,
    embeddings: Embeddings,
    collection: str = DEFAULT_COLLECTION,
    chunk_size: int = 300,
    chunk_overlap: int = 50,
    progress: bool = True,
) -> IndexReport:
    """Bring the collection in line with `folder`: index new/changed files, skip unchanged, drop deleted."""
    started = time.perf_counter()
    folder = Path(folder)
    report = IndexReport()
    files = list_files(folder)
    dim = len(embeddings.embed_query("dimension probe"))
    ensure_collection(client, dim, collection)
    known = indexed_files(client, collection)

    pending: list[list[dict]] = []
    for path in files:
        try:
            rows = chunk_rows(path, chunk_size, chunk_overlap)
        except (LoadError, OSError) as error:
            report.errors[source_name(path)] = str(error)
            continue
        if known.get(rows[0]["source"]) == rows[0]["file_hash"] and is_complete(client, collection, rows):
            report.skipped.append(rows[0]["source"])
        else:
            pending.append(rows)

    with tqdm(total=sum(len(r) for r in pending), desc="embedding chunks", unit="chunk", disable=not progress) as bar:
        for rows in pending:
            embed_rows(rows, embeddings, bar)
            write_file(client, collection, rows)
            report.indexed.append(rows[0]["source"])
            report.chunks_written += len(rows)

    prefix = source_name(folder).rstrip("/") + "/"
    present = {source_name(p) for p in files}
    for source in sorted(known):
        if source.startswith(prefix) and source not in present and source not in report.errors:
            client.delete(collection, filter=f"source == {quote(source)}")
            report.removed.append(source)
    report.seconds = time.perf_counter() - started
    return report
