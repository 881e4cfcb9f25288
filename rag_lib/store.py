"""The course's one explicit Milvus schema (dense vector + BM25 sparse vector + metadata), and connecting to Milvus.

`connect(name)` opens the embedded Milvus Lite database `<project>/.milvus/<name>.db`, or with `MILVUS_URI` (a server
address, with MILVUS_TOKEN) the database `database_name(name)` on that server, so notebooks never share data;
`milvus_uri(name)` names it for other clients. The schema needs Milvus 2.5+ (BM25 full-text search).
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import weakref
from collections import Counter
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pymilvus import CollectionSchema, DataType, Function, FunctionType, MilvusClient
from pymilvus.exceptions import ConnectionConfigException, MilvusException

from rag_lib.settings import PROJECT_ROOT, settings
from rag_lib.text import STOPWORDS, detect_language, quiet_jieba

if TYPE_CHECKING:  # a type only: the store needs pymilvus, not LangChain
    from langchain_core.embeddings import Embeddings

DEFAULT_COLLECTION = "rag_docs"
TEXT_MAX_LENGTH = 65535

# Dense: HNSW over cosine, searched with an ef well above the 20 candidates a hybrid search fetches (HNSW is then
# near exact at the course's sizes; notebook 03 sweeps ef). Sparse: BM25 scores produced by Milvus from `text`.
HNSW_BUILD = {"M": 16, "efConstruction": 200}
DENSE_SEARCH_PARAMS = {"metric_type": "COSINE", "params": {"ef": 256}}
SPARSE_SEARCH_PARAMS = {"metric_type": "BM25", "params": {"drop_ratio_search": 0.0}}
# jieba words, lowercased; the `stop` filter drops rank_bm25's STOPWORDS and the punctuation jieba returns as tokens,
# which would otherwise weigh in BM25's statistics.
PUNCTUATION = list("，。！？、；：“”‘’（）《》【】…·,.!?;:()[]\"'") + ["——", "……"]
ANALYZER_PARAMS = {"tokenizer": "jieba",
                   "filter": ["lowercase", {"type": "stop", "stop_words": sorted(STOPWORDS) + PUNCTUATION}]}
# The same without the stop filter: the comparison in notebook 04, and the analyzer some benchmarks were measured with.
JIEBA_ANALYZER_PARAMS = {"tokenizer": "jieba", "filter": ["lowercase"]}
# Escapes that both Milvus Lite's filter parser and the server's accept inside a "..." string literal.
FILTER_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"})
METADATA_FIELDS = ("source", "file_hash", "chunk_index", "chunk_count", "parent_id", "language", "title")
SOURCE_MAX_LENGTH = 1024  # characters of a file's name in the index (the `source` field)
QUERY_PAGE = 16384  # rows per request of `query_all`: the most pymilvus' query_iterator takes (fewest round trips)
# Open LiteClients per database folder, so the last one closed (or garbage-collected) stops its embedded server.
_OPEN_LITE: Counter[str] = Counter()


class MilvusLockedError(RuntimeError):
    """Another process holds this Milvus Lite database open (Lite serves one process at a time)."""


class MilvusPathError(RuntimeError):
    """The Milvus Lite database path is a file, not the folder Lite keeps a database in."""


class MilvusVersionError(RuntimeError):
    """The Milvus server is too old for the course schema; the message names its version and the one needed."""


# The course schema fills its sparse field with Milvus' BM25 function (full-text search): Milvus 2.5 and newer.
MIN_SERVER_VERSION = (2, 5)


def lite_path(name: str) -> Path:
    """Where the embedded database called `name` lives: `<project>/.milvus/<name>.db` (a directory)."""
    return PROJECT_ROOT / ".milvus" / f"{name}.db"


def database_name(name: str) -> str:
    """A valid Milvus database name for `name`: letters, digits, underscores, not starting with a digit."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if cleaned[:1].isalpha() or cleaned[:1] == "_" else f"nb_{cleaned}"


def server_uri() -> str:
    """The Milvus server address in MILVUS_URI, e.g. http://localhost:19530 ("" when unset: Milvus Lite)."""
    return settings().MILVUS_URI


def milvus_uri(name: str = "rag") -> str:
    """The URI of database `name`: `<MILVUS_URI>/<database_name(name)>` on a server, else `lite_path(name)`."""
    return f"{server_uri()}/{database_name(name)}" if server_uri() else str(lite_path(name))


def _lock_is_held(db_dir: Path) -> bool:
    """True when another process holds Milvus Lite's advisory flock on `<db>/LOCK`."""
    lock = db_dir / "LOCK"
    if not lock.exists():
        return False
    with lock.open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


def server_client(uri: str, token: str, db_name: str) -> MilvusClient:
    """A client on database `db_name` of the server at `uri`, creating the database first when it is missing."""
    admin = MilvusClient(uri=uri, token=token)
    try:
        if db_name not in admin.list_databases():
            admin.create_database(db_name)
    finally:
        admin.close()
    return MilvusClient(uri=uri, token=token, db_name=db_name)


def connect(name: str = "rag", uri: str | None = None) -> MilvusClient:
    """A MilvusClient on Lite `.milvus/<name>.db` (a `LiteClient`) or on database `database_name(name)` of the
    MILVUS_URI server; an explicit `uri` is opened as it is. Lite held by another process: MilvusLockedError."""
    token = settings().MILVUS_TOKEN
    if uri is None and server_uri():
        return server_client(server_uri(), token, database_name(name))
    uri = uri or milvus_uri(name)
    is_local = "://" not in uri
    quiet_jieba()  # Lite tokenises in-process with jieba, which logs its dictionary loading to stderr
    if is_local:
        check_lite_path(Path(uri))
    try:
        return LiteClient(uri, token) if is_local else MilvusClient(uri=uri, token=token)
    except ConnectionConfigException as error:
        if is_local and _lock_is_held(Path(uri)):
            raise MilvusLockedError(
                f"the Milvus Lite database {uri} is open in another process (Lite allows one process at a time). "
                "Close that process or notebook kernel (Kernel > Shut Down), or run a Milvus server that many "
                "processes can share (docker compose up -d; MILVUS_URI=http://localhost:19530).") from error
        raise


def check_lite_path(path: Path) -> None:
    """Create the folder that holds a Lite database; refuse a database path that is a file (MilvusPathError)."""
    if path.exists() and not path.is_dir():
        raise MilvusPathError(
            f"{path} is a file, but Milvus Lite keeps a database in a folder of that name (a single .db file comes "
            "from an older milvus-lite and cannot be opened by this one): move or delete that file, or pass "
            "another path, e.g. rag_lib.store.connect(uri='.milvus/new.db').")
    path.parent.mkdir(parents=True, exist_ok=True)


class LiteClient(MilvusClient):
    """A MilvusClient on a Milvus Lite database that frees it for other processes when the last such client of this
    process is closed or garbage-collected."""

    def __init__(self, uri: str, token: str = "") -> None:
        super().__init__(uri=uri, token=token)
        path = os.path.abspath(uri)
        _OPEN_LITE[path] += 1
        self._release = weakref.finalize(self, _forget_lite, path)
        self._release.atexit = False  # at exit Milvus Lite stops its servers itself

    def close(self) -> None:
        """Close the connection; the last client of this database also stops its embedded server."""
        super().close()
        self._release()  # runs once: a second close, or garbage collection later, does nothing


def _forget_lite(path: str) -> None:
    """One LiteClient of the database at `path` is gone; with the last one, its embedded server is stopped."""
    _OPEN_LITE[path] -= 1
    if _OPEN_LITE[path] > 0:
        return
    del _OPEN_LITE[path]
    # Milvus Lite 3.2.2 bug: MilvusClient.close() leaves the in-process server, and the database's LOCK, held
    # until the process exits. Its server manager's release_server (public, not in its README) stops it.
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(path)


def opened(name: str = "rag", uri: str | None = None) -> closing[MilvusClient]:
    """`connect(name, uri)` for a `with` block: the client is closed, and a Lite database released, at its end."""
    return closing(connect(name, uri))


def build_schema(dim: int, analyzer_params: dict[str, Any] | None = None,
                 extra_dense: dict[str, int] | None = None) -> CollectionSchema:
    """Fields: content-hash id, analysed text, dense vector, BM25 sparse vector, metadata (+ dynamic extras).
    `analyzer_params` replace ANALYZER_PARAMS; `extra_dense` adds a vector field (name -> dimension) per extra model."""
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("text", DataType.VARCHAR, max_length=TEXT_MAX_LENGTH, enable_analyzer=True,
                     analyzer_params=analyzer_params or ANALYZER_PARAMS)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    for name, extra_dim in (extra_dense or {}).items():
        schema.add_field(name, DataType.FLOAT_VECTOR, dim=extra_dim)
    schema.add_field("source", DataType.VARCHAR, max_length=SOURCE_MAX_LENGTH)
    schema.add_field("file_hash", DataType.VARCHAR, max_length=64)
    schema.add_field("chunk_index", DataType.INT64)
    schema.add_field("chunk_count", DataType.INT64)
    schema.add_field("parent_id", DataType.VARCHAR, max_length=64)
    schema.add_field("language", DataType.VARCHAR, max_length=8)
    schema.add_field("title", DataType.VARCHAR, max_length=512)
    schema.add_function(Function(name="text_bm25", function_type=FunctionType.BM25, input_field_names=["text"],
                                 output_field_names=["sparse"]))
    return schema


def build_index_params(client: MilvusClient, extra_dense: Iterable[str] = ()) -> Any:
    """HNSW on `dense` (and on each `extra_dense` field), SPARSE_INVERTED_INDEX/BM25 on `sparse` (AUTOINDEX is
    rejected for BM25 on Lite)."""
    index_params = client.prepare_index_params()
    # Milvus Lite bug: build params given the normal way (params={"M": ..}) are silently dropped and the
    # defaults used; nested one level deeper they are honoured (the sparse index's too). Servers accept this form.
    for name in ("dense", *extra_dense):
        index_params.add_index(name, index_type="HNSW", metric_type="COSINE", params={"params": HNSW_BUILD})
    index_params.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                           params={"params": {"drop_ratio_build": 0.0}})
    return index_params


def require_full_text_search(client: MilvusClient) -> None:
    """Refuse a server older than MIN_SERVER_VERSION before anything is created on it (Milvus Lite passes)."""
    version = client.get_server_version()  # "v2.3.5-lite", "2.5.16", "milvus_lite-3.2.2", ...
    found = re.search(r"(\d+)\.(\d+)", version)
    if version.startswith("milvus_lite") or found is None or (int(found[1]), int(found[2])) >= MIN_SERVER_VERSION:
        return
    needed = ".".join(map(str, MIN_SERVER_VERSION))
    raise MilvusVersionError(
        f"the Milvus server reports version {version}, but the course schema needs Milvus {needed} or newer "
        f"(BM25 full-text search, which hybrid search builds on). Point MILVUS_URI at a Milvus {needed}+ server "
        "(docker compose up -d starts one) or unset it to use the embedded Milvus Lite. Nothing was created; "
        "collections without BM25 (dense vectors, filters) still work on this server.")


def make_row(
    source: str, text: str, *, chunk_index: int = 0, chunk_count: int = 1, parent_id: str = "", file_hash: str = "",
    title: str = "", language: str | None = None, id: str | None = None, **dynamic: Any,
) -> dict[str, Any]:
    """One entity of `build_schema` without vectors: `id` defaults to `chunk_id(source, text)`, `language` to the
    text's; other keywords become dynamic fields."""
    return {"id": id or chunk_id(source, text), "text": text, "source": source, "file_hash": file_hash,
            "chunk_index": chunk_index, "chunk_count": chunk_count, "parent_id": parent_id,
            "language": language or detect_language(text), "title": title, **dynamic}


def ensure_collection_for(client: MilvusClient, embeddings: Embeddings, name: str = DEFAULT_COLLECTION,
                          analyzer_params: dict[str, Any] | None = None) -> str:
    """`ensure_collection` with the dimension of the vectors `embeddings` makes (one probe embedding)."""
    return ensure_collection(client, len(embeddings.embed_query("dimension probe")), name, analyzer_params)


def ensure_collection(client: MilvusClient, dim: int, name: str = DEFAULT_COLLECTION,
                      analyzer_params: dict[str, Any] | None = None) -> str:
    """Create the collection if missing (`analyzer_params` apply then), check an existing one has dimension `dim`,
    and load it. A server too old for the schema gets MilvusVersionError; a failed creation leaves no collection."""
    require_full_text_search(client)
    if client.has_collection(name):
        existing = collection_dim(client, name)
        if existing != dim:
            raise ValueError(
                f"collection {name!r} stores {existing}-d vectors but the embedding model makes {dim}-d ones: "
                f"use another collection name or drop it (client.drop_collection({name!r})) and re-index.")
    else:
        try:
            client.create_collection(name, schema=build_schema(dim, analyzer_params),
                                     index_params=build_index_params(client))
        except MilvusException:
            if client.has_collection(name):  # a server creates the collection, then may refuse its index
                client.drop_collection(name)
            raise
    client.load_collection(name)  # reopened Lite collections come back NotLoad
    return name


def seal(client: MilvusClient, name: str = DEFAULT_COLLECTION) -> None:
    """Flush the rows just written into a sealed segment, once after a bulk write: Milvus Lite rebuilds the BM25 index
    of unflushed rows on every query, and scores each segment with its own BM25 statistics."""
    client.flush(name)


def collection_dim(client: MilvusClient, name: str) -> int:
    """Dimension of the `dense` field of an existing collection."""
    fields = client.describe_collection(name)["fields"]
    return int(next(f for f in fields if f["name"] == "dense")["params"]["dim"])


def chunk_id(source: str, text: str) -> str:
    """Stable primary key: the same text from the same source always gets the same id (idempotent upserts)."""
    return hashlib.sha256(f"{source}\x00{text}".encode()).hexdigest()[:32]


def count_rows(client: MilvusClient, name: str = DEFAULT_COLLECTION, filter: str = "") -> int:
    """Number of entities matching `filter` (all when empty)."""
    result = client.query(name, filter=filter, output_fields=["count(*)"])
    return int(result[0]["count(*)"])


# Milvus Lite 3.2.2 gap: its query replies carry no session timestamp (mvccTs), so pymilvus' query_iterator logs
# "failed to get mvccTs from milvus server, use client-side ts instead" on every call; the client-side timestamp is
# right for Lite's single process. Only that warning is dropped.
logging.getLogger("pymilvus.client.iterator.query_iterator").addFilter(
    lambda record: not record.getMessage().startswith("failed to get mvccTs")
)


def query_all(client: MilvusClient, collection: str, filter: str = "",
              output_fields: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Every row matching `filter` (all when empty), in pages: one `query` returns at most 16,384 rows."""
    pages = client.query_iterator(collection, batch_size=QUERY_PAGE, filter=filter, output_fields=list(output_fields))
    rows: list[dict[str, Any]] = []
    try:
        while page := pages.next():
            rows.extend(page)
    finally:
        pages.close()
    return rows


def quote(value: str) -> str:
    """A string literal for a Milvus filter expression, escaped so any stored value can be matched exactly."""
    # Milvus Lite 3.2.2 does not support pymilvus' filter templating (filter="source == {s}", filter_params=...):
    # its parser fails at the "{". Until it does, values are written into the expression here, in one place.
    return '"' + value.translate(FILTER_ESCAPES) + '"'


def field_filter(field: str, values: str | Iterable[str], *, exclude: bool = False) -> str:
    """A Milvus filter on a string field: equal to `values` (one string) or one of them (several), or with
    `exclude` the opposite; each value written with `quote`. No values: "" (no filter)."""
    if isinstance(values, str):
        return f"{field} {'!=' if exclude else '=='} {quote(values)}"
    listed = [quote(v) for v in values]
    return f"{field} {'not in' if exclude else 'in'} [{', '.join(listed)}]" if listed else ""
