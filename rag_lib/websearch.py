"""Web search for Corrective RAG and the agent: an offline BM25 "web" the course controls, or Tavily, behind one
interface, and the one policy both use when a search fails.

`get_web_search()` picks Tavily when TAVILY_API_KEY is set, else the local corpus in `<project>/data/web` (or
$RAG_WEB_CORPUS). Backends return Documents with `title`, `url`, `score` and `backend` metadata. The policy: each try
gets `WEB_TIMEOUT` seconds (`search_pages`), and a transient failure (`is_transient`) is tried once more.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from pathlib import Path
from typing import Protocol

import httpx
import requests
from langchain_core.documents import Document
from langgraph.types import RetryPolicy

from rag_lib.settings import settings
from rag_lib.text import tokenize

WEB_TIMEOUT = 20.0  # seconds one web search try may take before it counts as failed
WEB_ATTEMPTS = 2  # tries of a search that fails transiently
WEB_RETRY_DELAY = 1.0  # seconds between the tries


class WebSearchError(RuntimeError):
    """A web search backend failed; CRAG and the agent catch it and answer from what they already have."""


class WebSearchTimeout(WebSearchError):
    """A web search backend gave no answer within the time limit: worth another try."""


class WebSearch(Protocol):
    """Anything that turns a query into the k best web pages, so CRAG does not care which backend runs."""

    def search(self, query: str, k: int = 4) -> list[Document]:
        """Return up to k pages, best first, with title/url/score/backend metadata."""
        ...


def _check_request(query: str, k: int) -> None:
    """Reject blank queries and k < 1 up front, with the same message for every backend."""
    if not query or not query.strip():
        raise ValueError("Web search query is empty: pass the question (or a rewritten query) to search for.")
    if k < 1:
        raise ValueError(f"k must be at least 1 (got {k}).")


class LuceneBM25:
    """BM25 with Lucene's always-positive IDF (rank_bm25's Okapi IDF is <= 0 for terms in half the pages or more)."""

    def __init__(self, corpus: list[list[str]], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [Counter(tokens) for tokens in corpus]
        self.lengths = [len(tokens) for tokens in corpus]
        self.avg_length = (sum(self.lengths) / len(corpus)) if corpus else 0.0
        pages_with = Counter(term for doc in self.docs for term in doc)
        n = len(corpus)
        self.idf = {term: math.log(1 + (n - df + 0.5) / (df + 0.5)) for term, df in pages_with.items()}

    def get_scores(self, query: list[str]) -> list[float]:
        """BM25 score of every page for the query tokens."""
        scores = []
        for doc, length in zip(self.docs, self.lengths):
            norm = self.k1 * (1 - self.b + self.b * length / (self.avg_length or 1.0))
            scores.append(sum(self.idf[t] * doc[t] * (self.k1 + 1) / (doc[t] + norm) for t in query if t in doc))
        return scores


def parse_page(text: str, path: Path) -> Document:
    """Read `# Title` and `Source: url` from a page's header block; default to the file stem and a file:// url."""
    head, _, rest = text.strip().partition("\n\n")
    title: str | None = None
    url: str | None = None
    kept: list[str] = []
    for line in head.splitlines():
        if title is None and line.startswith("# "):
            title = line[2:].strip()
        elif url is None and line.startswith("Source:"):
            url = line.removeprefix("Source:").strip()
        else:
            kept.append(line)
    body = "\n\n".join(part for part in ("\n".join(kept).strip(), rest.strip()) if part)
    return Document(page_content=body, metadata={"title": title or path.stem, "url": url or path.resolve().as_uri()})


class OfflineWebSearch:
    """A real BM25 search engine over a local corpus, so CRAG's web step runs offline and reproducibly."""

    def __init__(self, pages: list[Document]) -> None:
        """Index title + body of each page; an empty corpus is allowed and always returns []."""
        self.pages = list(pages)
        corpus = [tokenize(f"{page.metadata.get('title', '')}\n{page.page_content}") for page in self.pages]
        self._bm25 = LuceneBM25(corpus) if any(corpus) else None

    @classmethod
    def from_directory(cls, path: str | Path) -> OfflineWebSearch:
        """Load every `*.md` page directly in `path` (see `parse_page` for the header format)."""
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise FileNotFoundError(
                f"Offline web corpus folder {folder} does not exist: point RAG_WEB_CORPUS at a folder of .md "
                "pages, or set TAVILY_API_KEY to search the live web.")
        files = sorted(folder.glob("*.md"))
        return cls([parse_page(file.read_text(encoding="utf-8-sig"), file) for file in files])

    def search(self, query: str, k: int = 4) -> list[Document]:
        """Top-k pages by BM25 score; pages sharing no term with the query (score 0) are left out."""
        _check_request(query, k)
        if self._bm25 is None:
            return []
        scores = self._bm25.get_scores(tokenize(query))
        ranked = sorted((i for i, score in enumerate(scores) if score > 0), key=lambda i: -scores[i])[:k]
        hits = []
        for i in ranked:
            page = self.pages[i]
            metadata = {"title": "", "url": "", **page.metadata, "score": float(scores[i]), "backend": "offline"}
            hits.append(Document(page_content=page.page_content, metadata=metadata))
        return hits


def _tavily_document(item: dict) -> Document:
    """One Tavily result (title, url, content, score) as a Document with the common metadata keys."""
    metadata = {"title": item.get("title") or "", "url": item["url"], "score": float(item.get("score") or 0.0)}
    return Document(page_content=item.get("content") or "", metadata={**metadata, "backend": "tavily"})


# What to do about the SDK's errors (its exception per HTTP status: 401, 429, 403/432/433, 400)
TAVILY_HINTS = {
    "InvalidAPIKeyError": " (check TAVILY_API_KEY, or unset it to search the offline corpus)",
    "UsageLimitExceededError": " (too many requests: wait and retry, or unset TAVILY_API_KEY to search offline)",
    "ForbiddenError": " (the plan's usage limit is reached or the request is not allowed: see the Tavily dashboard)",
    "BadRequestError": " (Tavily refused the request's parameters)",
}


class TavilyWebSearch:
    """Live web search through Tavily's official SDK (`tavily-python`), for users with a TAVILY_API_KEY."""

    def __init__(self, api_key: str, timeout: float = 10.0, base_url: str | None = None) -> None:
        """`base_url` points the SDK at another server (a proxy or a test server); None is Tavily's own API."""
        from tavily import TavilyClient

        if not api_key.strip():
            raise ValueError("Tavily API key is empty: set TAVILY_API_KEY or use OfflineWebSearch.")
        self.timeout = timeout
        self._client = TavilyClient(api_key=api_key.strip(), api_base_url=base_url)

    def search(self, query: str, k: int = 4) -> list[Document]:
        """Ask Tavily for the top k pages; any network, HTTP, SDK or format problem -> WebSearchError."""
        from tavily.errors import TimeoutError as TavilyTimeout

        _check_request(query, k)
        try:
            response = self._client.search(query, search_depth="basic", max_results=k, timeout=self.timeout)
        except TavilyTimeout as exc:
            raise WebSearchTimeout(f"Tavily web search timed out after {self.timeout}s: {exc}") from exc
        except Exception as exc:  # the SDK raises its own error per HTTP status, and requests' errors pass through
            hint = TAVILY_HINTS.get(type(exc).__name__, "")
            raise WebSearchError(f"Tavily web search failed: {type(exc).__name__}: {exc}{hint}") from exc
        try:
            return [_tavily_document(item) for item in response["results"]]
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            cause = f"{type(exc).__name__}: {exc}"
            raise WebSearchError(f"Tavily web search returned an unexpected response: {cause}") from exc


def get_web_search(corpus_dir: str | Path | None = None) -> WebSearch:
    """Tavily when TAVILY_API_KEY is set; else offline BM25 over corpus_dir, $RAG_WEB_CORPUS or <project>/data/web."""
    env = settings()
    if env.TAVILY_API_KEY:
        return TavilyWebSearch(env.TAVILY_API_KEY)
    folder = corpus_dir or env.RAG_WEB_CORPUS
    return OfflineWebSearch.from_directory(folder)


# Failures worth another try wherever they come from: the time limit, the OS, requests (Tavily's SDK) and httpx
TRANSIENT_ERRORS = (WebSearchTimeout, TimeoutError, ConnectionError, requests.Timeout, requests.ConnectionError,
                    httpx.TransportError)


def http_status(error: BaseException) -> int | None:
    """The HTTP status of an error that carries a response (requests' HTTPError, httpx's HTTPStatusError), else None."""
    status = getattr(getattr(error, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(error: BaseException) -> bool:
    """True when a failed search is worth another try: a time limit, a lost connection or a server error (5xx), in
    the error or what it was raised from; a refused request (4xx), a bad query and anything unknown are not."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        if isinstance(link, TRANSIENT_ERRORS):
            return True
        status = http_status(link)
        if status is not None:
            return status >= 500
        seen.add(id(link))
        link = link.__cause__
    return False


WEB_RETRY = RetryPolicy(max_attempts=WEB_ATTEMPTS, initial_interval=WEB_RETRY_DELAY, jitter=False,
                        retry_on=is_transient)  # LangGraph's retry of a node with the web policy


def search_with_limit(web_search: WebSearch, query: str, k: int, timeout: float = WEB_TIMEOUT) -> object:
    """The backend's result within `timeout` seconds, else WebSearchTimeout (a hung call is left in its daemon
    thread: Python cannot stop a thread, and LangGraph's node `timeout` applies to async nodes only)."""
    outcome: dict[str, object] = {}

    def call() -> None:
        try:
            outcome["result"] = web_search.search(query, k=k)
        except BaseException as error:  # handed to the caller, which records it
            outcome["error"] = error

    thread = threading.Thread(target=call, name="web-search", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise WebSearchTimeout(
            f"{type(web_search).__name__} gave no answer within {timeout:g} s (raise web_timeout for a slow backend)")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome.get("result")


def checked_pages(results: object, k: int) -> tuple[list[Document], list[str]]:
    """(at most k Documents, problems): whatever else a backend returned is described, not kept."""
    if not isinstance(results, (list, tuple)):
        return [], [f"the backend returned {type(results).__name__}, not a list of Documents"]
    pages = [item for item in results if isinstance(item, Document)]
    others = [type(item).__name__ for item in results if not isinstance(item, Document)]
    problems = []
    if others:
        problems.append(f"dropped {len(others)} result(s) that are not Documents ({', '.join(sorted(set(others)))})")
    if len(pages) > k:
        problems.append(f"the backend returned {len(pages)} pages for k={k}: kept the first {k}")
    return pages[:k], problems


def search_pages(web_search: WebSearch, query: str, k: int,
                 timeout: float = WEB_TIMEOUT) -> tuple[list[Document], list[str]]:
    """One try under the web policy: (at most k Documents, notes on what was dropped) within `timeout` seconds.
    Every failure raises: the backend's own error, WebSearchTimeout, or WebSearchError when no Document came back."""
    pages, problems = checked_pages(search_with_limit(web_search, query, k, timeout), k)
    if problems and not pages:
        raise WebSearchError("; ".join(problems))
    return pages, problems


def failure_reason(error: BaseException) -> str:
    """A failed search in one line, its type first: the type often says more than the message."""
    return f"{type(error).__name__}: {error}"
