"""Tests for rag_lib.websearch: offline BM25 ranking and parsing, Tavily mapping and errors, backend selection."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from langchain_core.documents import Document

from rag_lib.websearch import (
    TAVILY_URL,
    OfflineWebSearch,
    TavilyWebSearch,
    WebSearchError,
    get_web_search,
    parse_page,
)

PAGES = {
    "milvus.md": "# Milvus vector database\nSource: https://milvus.io/docs/overview.md\n\n"
    "Milvus is an open-source vector database for similarity search over embeddings. "
    "It supports HNSW and IVF indexes.",
    "langgraph.md": "# LangGraph\nSource: https://langchain-ai.github.io/langgraph/\n\n"
    "LangGraph builds stateful agent workflows as graphs of nodes and edges, with checkpoints and retries.",
    "rag_zh.md": "# 检索增强生成\nSource: https://example.com/zh/rag\n\n"
    "检索增强生成（RAG）先从知识库检索相关文档，再让大语言模型根据检索结果生成答案，从而减少幻觉。",
    "milvus_zh.md": "# Milvus 向量数据库\nSource: https://example.com/zh/milvus\n\n"
    "Milvus 是开源的向量数据库（vector database），支持向量检索、混合检索和全文检索。",
    "recipe_zh.md": "# 番茄炒蛋\nSource: https://example.com/zh/recipe\n\n"
    "番茄炒蛋是一道家常菜：先把鸡蛋炒熟盛出，再炒番茄，最后把两者混合并加盐调味。",
}


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    """A tiny bilingual "web" on disk, independent of the project's data/web folder."""
    for name, text in PAGES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


@pytest.fixture
def engine(corpus_dir: Path) -> OfflineWebSearch:
    """The offline engine over the tiny corpus."""
    return OfflineWebSearch.from_directory(corpus_dir)


def test_english_query_ranks_right_page_first(engine: OfflineWebSearch) -> None:
    docs = engine.search("Which vector database supports HNSW indexes?")
    assert len(docs) >= 2  # the Chinese Milvus page also matches "vector database": a real ranking
    assert docs[0].metadata["title"] == "Milvus vector database"
    assert docs[0].metadata["url"] == "https://milvus.io/docs/overview.md"
    assert docs[0].metadata["backend"] == "offline"
    assert docs[0].page_content.startswith("Milvus is an open-source vector database")
    scores = [doc.metadata["score"] for doc in docs]
    assert all(isinstance(score, float) and score > 0 for score in scores)
    assert scores == sorted(scores, reverse=True)


def test_chinese_query_ranks_right_page_first(engine: OfflineWebSearch) -> None:
    docs = engine.search("检索增强生成如何减少幻觉？")
    assert len(docs) >= 2  # the Chinese Milvus page also matches "检索": a real ranking
    assert docs[0].metadata["title"] == "检索增强生成"
    assert docs[0].metadata["url"] == "https://example.com/zh/rag"
    assert "番茄炒蛋" not in [doc.metadata["title"] for doc in docs]


def test_header_lines_are_not_part_of_the_body(engine: OfflineWebSearch) -> None:
    doc = engine.search("番茄 鸡蛋")[0]
    assert doc.metadata["title"] == "番茄炒蛋"
    assert not doc.page_content.startswith("#")
    assert "Source:" not in doc.page_content


def test_off_topic_query_returns_nothing(engine: OfflineWebSearch) -> None:
    assert engine.search("quantum chromodynamics gluon") == []


def test_k_limits_the_number_of_results(engine: OfflineWebSearch) -> None:
    assert len(engine.search("vector database graphs agent workflows 检索", k=1)) == 1
    assert len(engine.search("vector database graphs agent workflows 检索", k=10)) == 4


@pytest.mark.parametrize("query", ["", "   \n"])
def test_empty_query_raises(engine: OfflineWebSearch, query: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        engine.search(query)


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_raises(engine: OfflineWebSearch, k: int) -> None:
    with pytest.raises(ValueError, match="k must be at least 1"):
        engine.search("Milvus", k=k)


def test_empty_corpus_returns_nothing(tmp_path: Path) -> None:
    assert OfflineWebSearch([]).search("Milvus") == []
    assert OfflineWebSearch.from_directory(tmp_path).search("Milvus") == []


def test_single_page_corpus_still_finds_its_page() -> None:
    # Plain Okapi IDF is <= 0 for a term in every page, which would make a one-page corpus return [].
    engine = OfflineWebSearch([Document(page_content="Milvus stores vectors.", metadata={"title": "Milvus"})])
    docs = engine.search("milvus")
    assert [doc.metadata["title"] for doc in docs] == ["Milvus"]
    assert docs[0].metadata["url"] == ""


def test_file_without_header_uses_stem_and_file_url(tmp_path: Path) -> None:
    page = tmp_path / "bare_notes.md"
    page.write_text("Attu is a web console for Milvus.\n\nIt shows collections.", encoding="utf-8")
    doc = OfflineWebSearch.from_directory(tmp_path).search("Attu console")[0]
    assert doc.metadata["title"] == "bare_notes"
    assert doc.metadata["url"] == page.resolve().as_uri()
    assert doc.metadata["url"].startswith("file://")
    assert doc.page_content == "Attu is a web console for Milvus.\n\nIt shows collections."


def test_parse_page_title_without_source(tmp_path: Path) -> None:
    doc = parse_page("# Only a title\n\nBody text.", tmp_path / "x.md")
    assert doc.metadata["title"] == "Only a title"
    assert doc.metadata["url"] == (tmp_path / "x.md").resolve().as_uri()
    assert doc.page_content == "Body text."


def test_from_directory_missing_folder_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="RAG_WEB_CORPUS"):
        OfflineWebSearch.from_directory(tmp_path / "nope")


def _tavily(handler) -> TavilyWebSearch:
    """A TavilyWebSearch wired to an httpx.MockTransport: a test double, no request leaves the machine."""
    return TavilyWebSearch("tvly-test", timeout=2.0, transport=httpx.MockTransport(handler))


def test_tavily_sends_request_and_maps_results() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={
                "query": "what is milvus",
                "results": [
                    {"title": "Milvus docs", "url": "https://milvus.io", "content": "Milvus is a vector DB.",
                     "score": 0.91},
                    {"title": "Attu", "url": "https://github.com/zilliztech/attu", "content": "A GUI.", "score": 0.5},
                ],
            },
        )

    docs = _tavily(handler).search("what is milvus", k=2)
    request = seen[0]
    assert request.method == "POST" and str(request.url) == TAVILY_URL
    assert request.headers["Authorization"] == "Bearer tvly-test"
    assert json.loads(request.content) == {"query": "what is milvus", "max_results": 2, "search_depth": "basic"}
    assert [doc.page_content for doc in docs] == ["Milvus is a vector DB.", "A GUI."]
    assert docs[0].metadata == {"title": "Milvus docs", "url": "https://milvus.io", "score": 0.91, "backend": "tavily"}


def test_tavily_http_500_raises_websearch_error() -> None:
    search = _tavily(lambda request: httpx.Response(500, text="internal error"))
    with pytest.raises(WebSearchError, match=r"Tavily.*HTTP 500"):
        search.search("milvus")


def test_tavily_timeout_raises_websearch_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("read timed out", request=request)

    with pytest.raises(WebSearchError, match=r"Tavily.*timed out"):
        _tavily(handler).search("milvus")


def test_tavily_connection_error_raises_websearch_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("name resolution failed", request=request)

    with pytest.raises(WebSearchError, match=r"Tavily.*ConnectError"):
        _tavily(handler).search("milvus")


def test_tavily_malformed_response_raises_websearch_error() -> None:
    with pytest.raises(WebSearchError, match="unexpected response"):
        _tavily(lambda request: httpx.Response(200, json={"oops": []})).search("milvus")


def test_tavily_validates_query() -> None:
    with pytest.raises(ValueError, match="empty"):
        _tavily(lambda request: httpx.Response(200, json={"results": []})).search(" ")


def test_get_web_search_prefers_tavily_when_key_set(monkeypatch: pytest.MonkeyPatch, corpus_dir: Path) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    assert isinstance(get_web_search(corpus_dir), TavilyWebSearch)


def test_get_web_search_is_offline_without_key(monkeypatch: pytest.MonkeyPatch, corpus_dir: Path) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    search = get_web_search(corpus_dir)
    assert isinstance(search, OfflineWebSearch)
    assert search.search("HNSW")[0].metadata["title"] == "Milvus vector database"


def test_get_web_search_uses_rag_web_corpus(monkeypatch: pytest.MonkeyPatch, corpus_dir: Path) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "  ")
    monkeypatch.setenv("RAG_WEB_CORPUS", str(corpus_dir))
    search = get_web_search()
    assert isinstance(search, OfflineWebSearch)
    assert len(search.pages) == len(PAGES)


def test_get_web_search_missing_folder_names_folder_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    missing = tmp_path / "no-such-web"
    with pytest.raises(FileNotFoundError, match="RAG_WEB_CORPUS") as excinfo:
        get_web_search(missing)
    assert str(missing) in str(excinfo.value)
    assert "TAVILY_API_KEY" in str(excinfo.value)
