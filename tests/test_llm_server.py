"""The course's graphs through a real OpenAI-compatible chat server, with no mocks on the way.

The server is llama-cpp-python's own (`python -m llama_cpp.server` on the course GGUF, started by the session fixture
`llama_server` of tests/servers.py), reached the way a learner switches provider: RAG_LLM_MODEL, RAG_LLM_BASE_URL and
RAG_LLM_API_KEY. It accepts tool calls and JSON mode but refuses response_format json_schema, so the probe must pick
function_calling, and forcing json_schema must fail with a clear error. The demo's plain RAG streams; Corrective RAG
grades and rewrites; the agent takes constrained steps (a tool call or an answer); the router routes a save and a
question and the app grades its answer; the judge scores. Each structured graph runs once, the two methods the
server supports (RAG_LLM_STRUCTURED) taking turns over the four graphs, so each method parses two graphs' replies and
the prompts are read once per graph. A callback records every structured call, so a test fails when a reply did not
parse, even though the graphs themselves fall back quietly.
Kept small (CPU prompt processing is the cost): a few short questions over three data/docs files in Milvus Lite.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from servers import LLAMA_ALIAS

from rag_lib import structured
from rag_lib.agent import build_agent, docs_tool, run_agent, web_tool
from rag_lib.app.intent import Route, router_messages
from rag_lib.app.router import RouterContext, build_router_graph
from rag_lib.experiments.demo import stream_answer
from rag_lib.graphs.crag import CRAGContext, build_crag_graph
from rag_lib.graphs.judge import JudgeContext, build_judge_graph
from rag_lib.graphs.rag import RAGContext, build_rag_graph
from rag_lib.index import index_directory
from rag_lib.llm import get_chat_model
from rag_lib.retriever import Retriever
from rag_lib.settings import ConfigError
from rag_lib.store import PROJECT_ROOT, connect
from rag_lib.structured import structured_method, structured_output
from rag_lib.websearch import OfflineWebSearch

FILES = ("milvus_hybrid_search_rankers.md", "milvus_full_text_search_bm25_zh.md", "corrective_rag_crag.md")
RRF_QUESTION = "In Reciprocal Rank Fusion (RRF), what value is commonly used for the constant k?"
WEB_QUESTION = "What are the default values of the BM25 parameters k1 and b in Lucene and Elasticsearch?"
METHODS = ["function_calling", "json_mode"]  # what llama-cpp-python's server supports


class StructuredCalls(BaseCallbackHandler):
    """Records each structured_output call of a run: (schema name, "ok" or the error it raised)."""

    def __init__(self) -> None:
        self.running: dict = {}
        self.results: list[tuple[str, str]] = []

    def on_chain_start(self, serialized, inputs, *, run_id, **kwargs) -> None:
        name = kwargs.get("name") or ""
        if name.startswith("structured_output["):
            self.running[run_id] = name.removeprefix("structured_output[").removesuffix("]")

    def on_chain_end(self, outputs, *, run_id, **kwargs) -> None:
        if run_id in self.running:
            self.results.append((self.running.pop(run_id), "ok"))

    def on_chain_error(self, error, *, run_id, **kwargs) -> None:
        if run_id in self.running:
            self.results.append((self.running.pop(run_id), f"{type(error).__name__}: {error}"))


@pytest.fixture()
def server_llm(llama_server: str, monkeypatch: pytest.MonkeyPatch):
    """The course's chat model, configured through the environment to use the llama.cpp server."""
    for name in list(os.environ):
        if name.startswith(("RAG_LLM_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RAG_LLM_MODEL", LLAMA_ALIAS)
    monkeypatch.setenv("RAG_LLM_BASE_URL", llama_server)
    monkeypatch.setenv("RAG_LLM_API_KEY", "any")
    get_chat_model.cache_clear()
    llm = get_chat_model()
    assert type(llm).__name__ == "ChatOpenAI" and llm.openai_api_base == llama_server
    yield llm
    get_chat_model.cache_clear()


@pytest.fixture(params=METHODS)
def method(request, server_llm, monkeypatch) -> str:
    monkeypatch.setenv("RAG_LLM_STRUCTURED", request.param)
    return request.param


@pytest.fixture(scope="module")
def docs_client(tmp_path_factory, embeddings):
    """A Milvus Lite collection of three data/docs files."""
    folder = tmp_path_factory.mktemp("server-docs")
    for name in FILES:
        shutil.copy(PROJECT_ROOT / "data" / "docs" / name, folder / name)
    client = connect(uri=str(folder / "milvus.db"))
    index_directory(client, folder, embeddings, progress=False)
    yield client
    client.close()


def retriever(client, embeddings, k: int) -> Retriever:
    return Retriever(client=client, embeddings=embeddings, k=k)


def test_the_probe_picks_function_calling_and_remembers_it(server_llm, llama_server):
    structured.PROBED_METHODS.clear()
    try:
        started = time.perf_counter()
        assert structured_method(server_llm) == "function_calling"  # json_schema was tried first and refused
        probing = time.perf_counter() - started
        started = time.perf_counter()
        assert structured_method(server_llm) == "function_calling"
        assert time.perf_counter() - started < min(0.05, probing / 10)  # remembered: no second request
        assert structured.PROBED_METHODS == {(llama_server, LLAMA_ALIAS): "function_calling"}
    finally:
        structured.PROBED_METHODS.clear()


def test_forcing_json_schema_on_this_server_fails_naming_the_setting(server_llm, monkeypatch):
    monkeypatch.setenv("RAG_LLM_STRUCTURED", "json_schema")
    with pytest.raises(ConfigError, match=r"RAG_LLM_STRUCTURED=json_schema \(HTTP 500.*json_object"):
        structured_output(server_llm, Route).invoke(router_messages("Hi!", False))


def test_the_demos_plain_rag_streams_in_pieces_and_cites(server_llm, docs_client, embeddings):
    class Pieces:
        def __init__(self) -> None:
            self.writes: list[str] = []

        def write(self, text: str) -> None:
            self.writes.append(text)

        def flush(self) -> None:
            pass

    out = Pieces()
    context = RAGContext(retriever(docs_client, embeddings, 2), server_llm)
    final = stream_answer(build_rag_graph(), RRF_QUESTION, out, context=context)
    assert len(out.writes) > 5 and "".join(out.writes).strip() == final["answer"]
    assert "60" in final["answer"]  # the fact; inline [n] markers are asked for but a 1.5B model may leave them out
    assert Path(final["documents"][0].metadata["source"]).name == "milvus_hybrid_search_rankers.md"  # the cited source


@pytest.mark.parametrize("method", ["json_mode"], indirect=True)
def test_corrective_rag_grades_and_rewrites(method, server_llm, docs_client, embeddings):
    calls = StructuredCalls()
    web = OfflineWebSearch.from_directory(PROJECT_ROOT / "data" / "web")
    context = CRAGContext(retriever(docs_client, embeddings, 2), server_llm, web, thresholds=None, max_llm_calls=3)
    final = build_crag_graph().invoke({"question": WEB_QUESTION}, {"callbacks": [calls]}, context=context)
    assert calls.results == [("PassageAnswer", "ok"), ("SearchTerms", "ok")]
    assert [g["decided_by"] for g in final["grades"]] == ["llm", "budget"] and final["action"] != "correct"
    assert final["web_query"] and final["web_results"] and final["llm_calls"] == 3
    assert final["answer"] and not final.get("web_error")


@pytest.mark.parametrize("method", ["function_calling"], indirect=True)
def test_the_router_routes_a_save_and_a_question_and_grades_the_answer(method, server_llm, milvus, embeddings,
                                                                      tmp_path):
    calls = StructuredCalls()
    graph = build_router_graph()
    context = RouterContext(milvus, embeddings, server_llm, tmp_path / "uploads", k=1, min_similarity=None)
    saved = graph.invoke({"request": "Save this note: The VPN server for the Lyon office is vpn2.example.org."},
                         {"callbacks": [calls]}, context=context)
    assert (saved["action"], saved["routed_by"], saved["saved"][0]["status"]) == ("save", "model", "indexed")
    tokens, final = [], {}
    request = {"request": "Which VPN server does the Lyon office use?", "evaluate": True}
    for mode, payload in graph.stream(request, {"callbacks": [calls]}, context=context,
                                      stream_mode=["messages", "values"]):
        if mode == "messages" and payload[1]["langgraph_node"] == "answer" and payload[0].content:
            tokens.append(payload[0].content)
        final = payload if mode == "values" else final
    assert (final["action"], final["routed_by"]) == ("retrieve", "model")
    assert len(tokens) > 3 and "vpn2" in final["answer"]
    assert all(final["scores"][k] in range(1, 6) for k in ("faithfulness", "relevance", "completeness"))
    assert calls.results == [("Route", "ok"), ("Route", "ok"), ("AnswerGrade", "ok")]


@pytest.mark.parametrize("method", ["json_mode"], indirect=True)
def test_the_judge_scores_a_chunk(method, server_llm, docs_client, embeddings):
    calls = StructuredCalls()
    context = JudgeContext(retriever=retriever(docs_client, embeddings, 1), llm=server_llm, max_depth=0,
                           max_llm_calls=2)
    final = build_judge_graph().invoke({"question": RRF_QUESTION},
                                       {"configurable": {"thread_id": method}, "callbacks": [calls]}, context=context)
    assert calls.results == [("Judgment", "ok")]
    (record,) = final["judgments"]
    assert record["llm_score"] in (0, 1, 2) and final["llm_calls"] == 2 and final["answer"]


@pytest.mark.parametrize("method", ["function_calling"], indirect=True)
def test_the_agent_searches_with_constrained_steps_through_the_server(method, server_llm, docs_client, embeddings):
    calls = StructuredCalls()
    web = OfflineWebSearch.from_directory(PROJECT_ROOT / "data" / "web")
    agent = build_agent(server_llm, [docs_tool(retriever(docs_client, embeddings, 2)), web_tool(web)],
                        max_tool_calls=1)
    out = run_agent(agent, "Milvus 内置的 chinese 分析器使用哪个分词器？", config={"callbacks": [calls]})
    assert calls.results == [("AgentStep", "ok")] * len(calls.results) and len(calls.results) == 1 + len(out["tools"])
    assert out["tools"] and out["tools"][0][0] in ("search_docs", "web_search") and out["tools"][0][1].strip()
    assert out["answer"] and not out["stopped"]
