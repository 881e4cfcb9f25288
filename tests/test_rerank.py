"""The HTTP reranker's connection pool: closed when the reranker made it, left to its owner otherwise."""

from __future__ import annotations

import json

import httpx
from langchain_core.documents import Document

from rag_lib.experiments.rerank import HttpReranker, get_reranker

DOCS = [Document(t, metadata={"source": f"{i}.md"}) for i, t in enumerate(["猫在睡觉", "狗在叫", "苹果很甜"])]


def fake_service(request: httpx.Request) -> httpx.Response:  # FAKE Jina/Cohere-style endpoint (no network here)
    assert json.loads(request.content)["query"] == "狗"
    return httpx.Response(200, json={"results": [{"index": 1, "relevance_score": 0.9}]})


def test_the_reranker_from_the_environment_closes_its_http_client(monkeypatch):
    monkeypatch.setenv("RAG_RERANK_MODEL", "jina-reranker-v2-base-multilingual")
    monkeypatch.setenv("RAG_RERANK_BASE_URL", "https://rerank.example/v1/rerank")
    with get_reranker() as reranker:
        assert isinstance(reranker, HttpReranker) and not reranker.client.is_closed
    assert reranker.client.is_closed
    other = HttpReranker("https://rerank.example/v1/rerank", "m")
    other.close()
    assert other.client.is_closed


def test_a_client_passed_in_stays_open_for_its_owner():
    client = httpx.Client(transport=httpx.MockTransport(fake_service))
    with HttpReranker("https://rerank.example/v1/rerank", "m", client=client) as reranker:
        assert [d.page_content for d in reranker.rerank("狗", DOCS, 1)] == ["狗在叫"]
    assert not client.is_closed
    assert [d.page_content for d in HttpReranker("https://rerank.example/v1/rerank", "m", client=client).rerank(
        "狗", DOCS, 1)] == ["狗在叫"]  # still usable
    client.close()
