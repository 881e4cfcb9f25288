"""Saving a document for the app: check it, write it into the upload folder, index it into the shared collection.

A refused document (bad name, wrong type, empty, too big, unreadable, or content already indexed under another name)
changes nothing. An accepted one is written under a temporary name first, then renamed over the real one, and
indexed with `rag_lib.index` row functions, one file at a time, so other files keep their chunking; a database
error while it is indexed puts the folder and that file's rows back as they were. Each file's chunking, language
and content digest are stored on its chunks, so the list of indexed files is read back from Milvus and survives
restarts.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from langchain_core.embeddings import Embeddings
from pymilvus import MilvusClient

from rag_lib.chunking import CHUNK_OVERLAP, CHUNK_SIZE, Chunker
from rag_lib.index import check_source, chunk_rows, embed_rows, shown_name, write_file
from rag_lib.loaders import LoadError, load_file, max_file_bytes
from rag_lib.store import DEFAULT_COLLECTION, ensure_collection, field_filter, query_all
from rag_lib.text import detect_language

UPLOAD_TYPES = (".md", ".txt", ".pdf")
CHUNKINGS = ("semantic", "fixed", "recursive", "markdown")
PARTIAL_NAME = ".{}.partial"  # an upload is written under this name first, then renamed over the real one


def load_if_exists(client: MilvusClient, name: str = DEFAULT_COLLECTION) -> bool:
    """Whether collection `name` exists; loaded when it does (a reopened Lite database has them released)."""
    if not client.has_collection(name):
        return False
    client.load_collection(name)
    return True


class UploadError(ValueError):
    """A document cannot be saved; the message names the file and the reason, and nothing was changed."""


@dataclass(frozen=True)
class Saved:
    """The outcome of saving one document."""

    name: str
    status: Literal["indexed", "updated", "duplicate", "error"]
    source: str = ""
    chunks: int = 0
    language: str = ""
    chunking: str = ""
    message: str = ""


def safe_name(name: str) -> str:
    """The file name to store an upload under: the base name only; `..`, absolute paths and hidden names refused."""
    raw = name.replace("\\", "/").strip()
    if not raw:
        raise UploadError("the file has no name")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise UploadError(f"{name!r}: absolute paths are not accepted; upload the file itself")
    if ".." in raw.split("/"):
        raise UploadError(f"{name!r}: '..' in a file name would leave the upload folder")
    base = raw.split("/")[-1].strip()
    if not base:
        raise UploadError(f"{name!r}: no file name after the last '/'")
    if base.startswith("."):
        raise UploadError(f"{base!r}: hidden file names (starting with '.') are not accepted")
    try:
        check_source(base)  # not UTF-8, or control characters
    except LoadError as error:
        raise UploadError(str(error)) from None
    return base


def name_limit(folder: Path) -> int:
    """The longest upload name, in bytes, that `folder`'s file system takes, leaving room for PARTIAL_NAME."""
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    return os.pathconf(existing, "PC_NAME_MAX") - len(PARTIAL_NAME.format(""))


def file_digest(data: bytes) -> str:
    """The first 32 hex digits of the sha256 of a document's bytes: it identifies the content whatever the name or
    chunking (stored as `content_sha256`, for duplicate detection)."""
    return hashlib.sha256(data).hexdigest()[:32]


def check_upload(name: str, data: bytes) -> tuple[str, str]:
    """(safe file name, its text), or UploadError: bad name, wrong type, empty, oversize or unreadable."""
    base = safe_name(name)
    suffix = Path(base).suffix.lower()
    if suffix not in UPLOAD_TYPES:
        raise UploadError(
            f"{base}: unsupported file type {suffix or '(none)'!r}; upload {', '.join(UPLOAD_TYPES)} files"
        )
    if not data.strip():
        raise UploadError(f"{base}: the file is empty")
    limit = max_file_bytes()
    if len(data) > limit:
        raise UploadError(
            f"{base}: {len(data) / 2**20:.1f} MB is over the {limit / 2**20:g} MB limit (RAG_MAX_FILE_MB)"
        )
    try:
        return base, load_file(Path(base), data).text
    except LoadError as error:
        raise UploadError(str(error)) from error


def choose_chunker(chunking: str | None, chunk_size: int | None, name: str) -> Chunker:
    """The requested chunker, else markdown headers for .md files and the recursive split for the rest."""
    strategy = chunking or ("markdown" if name.lower().endswith(".md") else "recursive")
    size = min(max(chunk_size or CHUNK_SIZE, 50), 4000)
    return Chunker(strategy, size, min(CHUNK_OVERLAP, size // 4))


def find_duplicate(client: MilvusClient, collection: str, digest: str) -> str | None:
    """The source already indexed with this content, if any."""
    if not load_if_exists(client, collection):
        return None
    rows = client.query(collection, filter=field_filter("content_sha256", digest), output_fields=["source"], limit=1)
    return rows[0]["source"] if rows else None


def stored_rows(client: MilvusClient, collection: str, source: str) -> list[dict]:
    """Every row stored for `source`, vectors included (not `sparse`: Milvus computes it from the text)."""
    rows = query_all(client, collection, field_filter("source", source), ["*"])
    return [{k: v for k, v in row.items() if k != "sparse"} for row in rows]


def restore_rows(client: MilvusClient, collection: str, source: str, version: str, old: list[dict]) -> None:
    """Put a file's rows back as they were before a failed write of `version`: the old rows upserted first (a chunk
    both versions share has one id), then the new version's other rows deleted."""
    if old:
        client.upsert(collection, old)
    client.delete(collection, filter=f"{field_filter('source', source)} and {field_filter('file_hash', version)}")


def index_upload(client: MilvusClient, collection: str, rows: list[dict], target: Path, previous: bytes | None) -> None:
    """Write the rows of an upload just saved as `target` (whose earlier bytes were `previous`); on a database error,
    put the folder and the file's rows back as they were, then raise it."""
    source, version = rows[0]["source"], rows[0]["file_hash"]
    old_rows = stored_rows(client, collection, source)
    try:
        write_file(client, collection, rows)
    except Exception:
        if previous is None:
            target.unlink()
        else:
            target.write_bytes(previous)
        restore_rows(client, collection, source, version, old_rows)
        raise


def refused_name(upload_dir: Path, base: str) -> str:
    """Why `base` cannot be saved in the (resolved) `upload_dir`: too long for its file system, or pointing outside
    it; "" when it can."""
    size = len(base.encode())
    if size > name_limit(upload_dir):
        return (f"{base}: the name is {size} bytes, over the {name_limit(upload_dir)} the upload folder takes; rename "
                "the file shorter")
    if (upload_dir / base).resolve().parent != upload_dir:  # e.g. an existing symlink pointing elsewhere
        return f"{base}: this name points outside the upload folder"
    return ""


def save_document(
    client: MilvusClient,
    embeddings: Embeddings,
    upload_dir: Path,
    name: str,
    data: bytes,
    chunking: str | None = None,
    chunk_size: int | None = None,
    collection: str = DEFAULT_COLLECTION,
) -> Saved:
    """Check one document, write it into `upload_dir` and index it; a refused document changes nothing."""
    try:
        base, text = check_upload(name, data)
    except UploadError as error:
        return Saved(shown_name(Path(name.replace("\\", "/")).name or name), "error", message=str(error))
    upload_dir = Path(upload_dir).resolve()
    refused = refused_name(upload_dir, base)
    if refused:
        return Saved(base, "error", message=refused)
    target = upload_dir / base
    digest = file_digest(data)
    duplicate = find_duplicate(client, collection, digest)
    if duplicate:
        return Saved(base, "duplicate", source=duplicate, message=f"{base}: the same content is already indexed as "
                     f"{Path(duplicate).name}; nothing changed")
    chunker = choose_chunker(chunking, chunk_size, base)
    label = f"{chunker.strategy}/{chunker.chunk_size}"
    language = detect_language(text)
    try:
        rows = chunk_rows(target, chunker, embeddings, data)
    except LoadError as error:
        return Saved(base, "error", message=str(error))
    for row in rows:
        row |= {"content_sha256": digest, "chunking": label, "file_language": language}
    embed_rows(rows, embeddings)
    ensure_collection(client, len(rows[0]["dense"]), collection)
    partial = upload_dir / PARTIAL_NAME.format(base)
    try:
        upload_dir.mkdir(parents=True, exist_ok=True)
        previous = target.read_bytes() if target.exists() else None
        partial.write_bytes(data)
        os.replace(partial, target)
    except OSError as error:  # disk full, no permission...: this file is reported, a batch goes on
        partial.unlink(missing_ok=True)
        return Saved(base, "error", message=f"{base}: cannot be written to the upload folder ({error.strerror}); "
                     "nothing changed")
    index_upload(client, collection, rows, target, previous)
    status = "updated" if previous is not None else "indexed"
    return Saved(base, status, rows[0]["source"], len(rows), language, label,
                 f"{base}: {status}, {len(rows)} chunk{'s' * (len(rows) != 1)} ({label}), language {language}")


def save_upload(
    client: MilvusClient,
    embeddings: Embeddings,
    upload_dir: Path,
    path: str | Path,
    chunking: str | None = None,
    chunk_size: int | None = None,
    collection: str = DEFAULT_COLLECTION,
) -> Saved:
    """`save_document` for an uploaded file on disk: one over the size limit is refused unread, and one that cannot
    be read is reported, so a bad file in a batch never stops the others."""
    path = Path(path)
    name = shown_name(path.name)
    try:
        size, limit = path.stat().st_size, max_file_bytes()
        if size > limit:
            return Saved(name, "error", message=f"{name}: {size / 2**20:.1f} MB is over the {limit / 2**20:g} MB "
                         "limit (RAG_MAX_FILE_MB); nothing changed")
        data = path.read_bytes()
    except OSError as error:
        return Saved(name, "error", message=f"{name}: cannot be read ({error.strerror}); nothing changed")
    return save_document(client, embeddings, upload_dir, path.name, data, chunking, chunk_size, collection)


def indexed_documents(client: MilvusClient, collection: str = DEFAULT_COLLECTION) -> list[dict]:
    """One row per indexed file (read from Milvus, so the list survives restarts): file, chunks, language, chunking."""
    if not load_if_exists(client, collection):
        return []
    rows = query_all(
        client, collection, "chunk_index == 0", ["source", "chunk_count", "language", "file_language", "chunking"]
    )
    return sorted(
        ({"file": Path(r["source"]).name, "chunks": r["chunk_count"], "language": r.get("file_language", r["language"]),
          "chunking": r.get("chunking", "?"), "source": r["source"]} for r in rows),
        key=lambda r: r["file"].lower(),
    )
