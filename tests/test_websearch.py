"""Tests for rag_lib.websearch: offline BM25 ranking and parsing, Tavily (recorded responses, a silent server), backend
selection, and the web policy (time limit, which failures are worth another try, what counts as a failure)."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
import requests
from langchain_core.documents import Document

from rag_lib.websearch import (
    OfflineWebSearch,
    TavilyWebSearch,
    WebSearchError,
    WebSearchTimeout,
    get_web_search,
    is_transient,
    parse_page,
    search_pages,
    search_with_limit,
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


# Tavily through its official SDK, replayed from cassettes (tests/cassettes/test_websearch/*.yaml) in the format of
# Tavily's API reference: pytest-recording runs in record mode "none" by default, so nothing leaves the machine
# and a request that differs from the recorded one (method, URL or JSON body) fails the test.
FAKE_KEY = "tvly-test-not-a-real-key"
CASSETTES = Path(__file__).parent / "cassettes"
TAVILY_QUERY = "Milvus chinese analyzer tokenizer"


@pytest.fixture(scope="module")
def vcr_config() -> dict:
    """Match the whole request, JSON body included; never write an API key into a cassette."""
    return {
        "match_on": ("method", "scheme", "host", "port", "path", "query", "body"),
        "filter_headers": ["authorization"],
        "filter_post_data_parameters": ["api_key"],
    }


@pytest.mark.vcr
def test_tavily_maps_a_recorded_answer_to_documents() -> None:
    docs = TavilyWebSearch(FAKE_KEY).search(TAVILY_QUERY, k=2)
    assert [doc.metadata["title"] for doc in docs] == [
        "Chinese | Milvus Documentation", "Analyzer Overview | Milvus Documentation"]
    assert docs[0].metadata == {"title": "Chinese | Milvus Documentation", "score": 0.8731, "backend": "tavily",
                                "url": "https://milvus.io/docs/chinese-analyzer.md"}
    assert "jieba tokenizer" in docs[0].page_content


@pytest.mark.vcr
def test_tavily_401_names_the_api_key() -> None:
    with pytest.raises(WebSearchError, match=r"InvalidAPIKeyError: Unauthorized: missing or invalid API key.*TAVILY") \
            as failure:
        TavilyWebSearch(FAKE_KEY).search(TAVILY_QUERY, k=3)
    assert not is_transient(failure.value)  # the same key is refused again


@pytest.mark.vcr
def test_tavily_432_plan_limit_is_a_websearch_error() -> None:
    with pytest.raises(WebSearchError, match=r"ForbiddenError: This request exceeds your plan's set usage limit") \
            as failure:
        TavilyWebSearch(FAKE_KEY).search(TAVILY_QUERY, k=3)
    assert not is_transient(failure.value)


@pytest.mark.vcr
def test_tavily_429_rate_limit_is_a_websearch_error() -> None:
    with pytest.raises(WebSearchError, match=r"UsageLimitExceededError: .*excessive requests.*wait and retry") \
            as failure:
        TavilyWebSearch(FAKE_KEY).search(TAVILY_QUERY, k=3)
    assert not is_transient(failure.value)  # a 4xx: a retry a second later is refused too


@pytest.mark.vcr
def test_tavily_500_is_a_websearch_error() -> None:
    with pytest.raises(WebSearchError, match=r"Tavily web search failed: HTTPError: 500 Server Error") as failure:
        TavilyWebSearch(FAKE_KEY).search(TAVILY_QUERY, k=3)
    assert is_transient(failure.value)  # a server error: worth another try


@pytest.mark.vcr
def test_tavily_result_without_url_is_an_unexpected_response() -> None:
    with pytest.raises(WebSearchError, match="unexpected response: KeyError") as failure:
        TavilyWebSearch(FAKE_KEY).search(TAVILY_QUERY, k=3)
    assert not is_transient(failure.value)


def test_cassettes_hold_no_api_key() -> None:
    files = sorted(CASSETTES.rglob("*.yaml"))
    assert len(files) >= 6
    for file in files:
        text = file.read_text(encoding="utf-8").lower()
        assert "authorization" not in text and "bearer" not in text and "api_key" not in text, file
        assert "tvly-" not in text, file


class SilentServer:
    """A real loopback TCP server that accepts connections, reads the request and never answers: what a hung
    backend looks like to the SDK. Started and stopped by the test; it keeps what it received."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.received = b""
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        open_connections = []
        while not self.stop.is_set():
            try:
                connection, _ = self.sock.accept()
            except OSError:
                continue
            open_connections.append(connection)
            connection.settimeout(0.2)
            try:
                while b"\r\n\r\n" not in self.received or not self.received.rstrip().endswith(b"}"):
                    chunk = connection.recv(65536)
                    if not chunk:
                        break
                    self.received += chunk
            except OSError:
                pass
        for connection in open_connections:
            connection.close()

    def __enter__(self) -> SilentServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


def test_tavily_timeout_is_a_websearch_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with SilentServer() as server:
        search = TavilyWebSearch(FAKE_KEY, timeout=0.5, base_url=server.url)
        started = time.monotonic()
        with pytest.raises(WebSearchTimeout, match=r"Tavily web search timed out after 0.5s") as failure:
            search.search(TAVILY_QUERY, k=3)
        assert is_transient(failure.value)
        assert time.monotonic() - started < 5
    head, _, body = server.received.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /search HTTP/1.1")
    assert f"Authorization: Bearer {FAKE_KEY}".encode() in head.split(b"\r\n")
    assert json.loads(body) == {"query": TAVILY_QUERY, "search_depth": "basic", "max_results": 3}


def test_tavily_connection_refused_is_a_websearch_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    with pytest.raises(WebSearchError, match=r"Tavily web search failed: ConnectionError") as failure:
        TavilyWebSearch(FAKE_KEY, timeout=2.0, base_url=f"http://127.0.0.1:{port}").search(TAVILY_QUERY)
    assert is_transient(failure.value)  # requests' ConnectionError, which the WebSearchError was raised from


def test_tavily_validates_key_and_query() -> None:
    with pytest.raises(ValueError, match="TAVILY_API_KEY"):
        TavilyWebSearch("  ")
    with pytest.raises(ValueError, match="empty"):
        TavilyWebSearch(FAKE_KEY).search(" ")


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


def raised_from(cause: BaseException) -> WebSearchError:
    """A WebSearchError raised from `cause`, as the Tavily backend wraps what its SDK raises."""
    try:
        raise WebSearchError(f"Tavily web search failed: {type(cause).__name__}: {cause}") from cause
    except WebSearchError as error:
        return error


def requests_http_error(status: int) -> requests.HTTPError:
    """requests' HTTPError carrying a real Response with `status` (a 5xx Response is falsy: the test covers it)."""
    response = requests.Response()
    response.status_code = status
    return requests.HTTPError(f"{status} Error", response=response)


def httpx_status_error(status: int) -> httpx.HTTPStatusError:
    """httpx's HTTPStatusError for a real Request/Response pair with `status`."""
    request = httpx.Request("POST", "https://api.tavily.com/search")
    return httpx.HTTPStatusError(f"{status}", request=request, response=httpx.Response(status, request=request))


@pytest.mark.parametrize(
    "error, transient",
    [(WebSearchTimeout("no answer"), True), (TimeoutError(), True), (ConnectionRefusedError(), True),
     (raised_from(requests.ConnectionError("refused")), True), (raised_from(requests.ReadTimeout("slow")), True),
     (raised_from(httpx.ConnectTimeout("slow")), True), (raised_from(requests_http_error(500)), True),
     (requests_http_error(503), True), (httpx_status_error(502), True),
     (raised_from(requests_http_error(404)), False), (requests_http_error(429), False),
     (httpx_status_error(401), False),
     (WebSearchError("unknown"), False), (ValueError("empty query"), False), (KeyError("results"), False),
     (OSError(2, "No such file"), False)],
    ids=["WebSearchTimeout", "TimeoutError", "ConnectionRefused", "requests-connection", "requests-timeout",
         "httpx-timeout", "wrapped-500", "503", "httpx-502", "wrapped-404", "429", "httpx-401", "WebSearchError",
         "ValueError", "KeyError", "OSError"],
)
def test_only_time_limits_lost_connections_and_server_errors_are_transient(error, transient) -> None:
    assert is_transient(error) is transient


def test_an_error_raised_from_itself_is_not_an_endless_loop() -> None:
    error = WebSearchError("loop")
    error.__cause__ = error
    assert is_transient(error) is False


class SlowWeb:
    """TEST DOUBLE for a web backend that answers after `delay` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def search(self, query: str, k: int = 4) -> list[Document]:
        time.sleep(self.delay)
        return [Document("late page")]


def test_search_with_limit_gives_up_on_a_slow_backend_in_time() -> None:
    started = time.monotonic()
    with pytest.raises(WebSearchTimeout, match=r"SlowWeb gave no answer within 0.2 s \(raise web_timeout"):
        search_with_limit(SlowWeb(2.0), "query", 3, timeout=0.2)
    assert time.monotonic() - started < 1.0
    assert search_with_limit(SlowWeb(0.0), "query", 3, timeout=2.0) == [Document("late page")]


def test_search_with_limit_hands_the_backends_own_error_to_the_caller(corpus_dir: Path) -> None:
    with pytest.raises(ValueError, match="query is empty"):
        search_with_limit(OfflineWebSearch.from_directory(corpus_dir), " ", 3)


def test_search_pages_keeps_documents_and_fails_without_any(corpus_dir: Path) -> None:
    pages, problems = search_pages(OfflineWebSearch.from_directory(corpus_dir), "Milvus HNSW", 1)
    assert [p.metadata["title"] for p in pages] == ["Milvus vector database"] and problems == []

    class Returning:
        """TEST DOUBLE for a backend outside the protocol: it returns what it was given."""

        def __init__(self, value: object) -> None:
            self.value = value

        def search(self, query: str, k: int = 4) -> object:
            return self.value

    page = Document("a page")
    dropped = ["dropped 1 result(s) that are not Documents (str)"]
    assert search_pages(Returning([page, "text"]), "q", 3) == ([page], dropped)
    with pytest.raises(WebSearchError, match="the backend returned NoneType, not a list of Documents"):
        search_pages(Returning(None), "q", 3)
    with pytest.raises(WebSearchError, match=r"dropped 2 result\(s\) that are not Documents \(dict, str\)"):
        search_pages(Returning(["text", {"content": "x"}]), "q", 3)
