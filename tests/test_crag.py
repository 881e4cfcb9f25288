"""Corrective RAG graph (rag_lib.graphs.crag): routing, web failures, knowledge refinement, the LLM budget and
the pause for the user's approval before the web search (human in the loop).

Everything here runs without a model, a database or a network. The chat model is a TEST DOUBLE
(`ScriptedChatModel`, a small BaseChatModel subclass whose structured output goes through LangChain's own
tool-call parsing): as grader it copies the answer "jieba" when the passage contains the marker word ON_TOPIC
and invents "Beijing" otherwise (the graph must reject a copy that is not in the passage); as rewriter it returns
fixed search terms, one of them not in the question; as generator it echoes its whole prompt, so the tests can
see which strips reached it.
The retriever and the web search are fakes too: fixed Documents with a chosen `similarity`, fixed pages.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from typing import Any

import pytest
import requests
from doubles import ToolCallingDouble, tool_call
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.cache.memory import InMemoryCache
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import Field

from rag_lib.graphs.crag import (
    WEB_FAILED,
    CRAGContext,
    PassageAnswer,
    SearchTerms,
    approve_web,
    build_crag_graph,
    grade_documents,
    lexical_overlap,
    make_strips,
    occurs_in,
    refine,
)
from rag_lib.graphs.rag import REFUSAL, UNSUPPORTED_NOTE
from rag_lib.prompts import EXTRACT_PROMPT
from rag_lib.websearch import WEB_ATTEMPTS, WebSearchError, WebSearchTimeout

QUESTION = "Which tokenizer does the Milvus chinese analyzer use?"
BAND = (0.86, 0.90)
TERMS = ["Milvus", "chinese analyzer", "jieba 0.42", "tokenizer", "Milvus"]  # "jieba 0.42" is a made-up term
REWRITTEN = "Milvus chinese analyzer tokenizer"


class ScriptedChatModel(ToolCallingDouble):
    """TEST DOUBLE for the chat model: deterministic replies chosen by the kind of request, every call logged.
    Structured output goes through LangChain's own with_structured_output (bind_tools + tool-call parser), as
    with the real model: a request with the PassageAnswer tool is a grade, with SearchTerms a rewrite."""

    terms: list[str] = Field(default_factory=lambda: list(TERMS))
    span: str = "jieba"  # the reply to an extractive answer's copy request
    calls: list[str] = Field(default_factory=list)  # "grade" | "rewrite" | "copy" | "answer", in call order

    def reply(self, messages: list[BaseMessage], tool: str | None) -> AIMessage:
        if tool == SearchTerms.__name__:
            self.calls.append("rewrite")
            message = tool_call(tool, {"terms": self.terms})
        elif tool == PassageAnswer.__name__:
            # copies "jieba" from passages marked ON_TOPIC, makes up "Beijing" for the others, and writes
            # broken JSON (as a grammar cut short would) for passages marked GARBLED
            self.calls.append("grade")
            passage = str(messages[-1].content).split("Passage:", 1)[1]
            copied = "jieba" if "ON_TOPIC" in passage else "Beijing"
            answer = '{"answer": "jie' if "GARBLED" in passage else json.dumps({"answer": copied})
            message = tool_call(tool, answer)
        elif str(messages[0].content).startswith(EXTRACT_PROMPT):
            self.calls.append("copy")
            message = AIMessage(self.span)
        else:
            self.calls.append("answer")
            message = AIMessage(f"ANSWER FROM <<{' '.join(str(m.content) for m in messages)}>>")
        return message


class FakeRetriever(BaseRetriever):
    """Test double: the same Documents for every query."""

    documents: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.documents)


class FakeWeb:
    """Test double for rag_lib.websearch.WebSearch: fixed pages, or an error, and a log of the queries."""

    def __init__(self, pages: list[Document] | None = None, error: Exception | None = None) -> None:
        self.pages, self.error, self.queries = pages or [], error, []

    def search(self, query: str, k: int = 4) -> list[Document]:
        self.queries.append(query)
        if self.error is not None:
            raise self.error
        return self.pages[:k]


def chunk(text: str, similarity: float | None, source: str = "data/docs/milvus.md") -> Document:
    metadata = {"source": source} if similarity is None else {"source": source, "similarity": similarity}
    return Document(page_content=text, metadata=metadata)


ANSWER_CHUNK = "The chinese analyzer of Milvus uses the jieba tokenizer to split Chinese text into words."
NOISE_CHUNK = "Boil the eggs for six minutes, then cool them in iced water before peeling."
WEB_PAGE = Document(
    page_content="Milvus analyzers combine a tokenizer and filters. The chinese analyzer uses the jieba tokenizer. "
    "The project was started in 2019 by a company in Shanghai.",
    metadata={"title": "Milvus analyzers", "url": "https://example.org/milvus-analyzers", "backend": "fake"},
)


GRAPH = build_crag_graph()  # one graph for every test: what differs is the run's context


def crag(documents: list[Document], llm: ScriptedChatModel, web: FakeWeb, **settings: Any) -> CRAGContext:
    """The run's context over a fake retriever, with the calibrated band unless `thresholds` is given."""
    return CRAGContext(FakeRetriever(documents=documents), llm, web, **({"thresholds": BAND} | settings))


def run(context: CRAGContext, question: str = QUESTION, **inputs: Any) -> tuple[dict, list[str]]:
    """Stream the graph with stream_mode="updates"; return the final state and the nodes in visiting order."""
    state: dict = {"question": question, **inputs}
    nodes = []
    for update in GRAPH.stream(state, stream_mode="updates", context=context):
        for node, values in update.items():
            nodes.append(node)
            for key, value in (values or {}).items():
                added = key in ("llm_calls", "notes")  # the two keys with an operator.add reducer
                state[key] = state.get(key, 0 if key == "llm_calls" else []) + value if added else value
    return state, nodes


def test_all_relevant_goes_straight_to_refinement_without_web_search():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    docs = [chunk(ANSWER_CHUNK, 0.95), chunk(ANSWER_CHUNK + " Again.", 0.91), chunk("ON_TOPIC " + ANSWER_CHUNK, 0.87)]
    state, nodes = run(crag(docs, llm, web))
    assert nodes == ["retrieve", "grade_documents", "refine_knowledge", "generate"]
    assert state["action"] == "correct"
    assert web.queries == []
    # a passage above `upper` settles it: the band passage next to it is kept without a grading call
    assert llm.calls == ["answer"]
    assert [(g["decided_by"], g["relevant"]) for g in state["grades"]] == [("similarity", True)] * 3
    assert state["llm_calls"] == 1
    assert "jieba" in state["answer"] and "data/docs/milvus.md" in state["answer"]


def test_extractive_mode_answers_with_a_checked_copy_and_counts_its_calls():
    docs = [chunk(ANSWER_CHUNK, 0.95)]
    state, _ = run(crag(docs, ScriptedChatModel(), FakeWeb(), mode="extractive"))
    assert (state["answer"], state["extracted"], state["llm_calls"]) == ("jieba [1]", True, 1)

    llm = ScriptedChatModel(span="Beijing")  # not in the knowledge: not a copy, so a short sentence instead
    state, _ = run(crag(docs, llm, FakeWeb(), mode="extractive"))
    assert llm.calls == ["copy", "answer"] and state["llm_calls"] == 2 and state["extracted"] is False
    assert state["answer"].startswith("ANSWER FROM")

    llm = ScriptedChatModel(span="Beijing")  # one call in the budget: no fallback sentence, the fixed reply
    state, _ = run(crag(docs, llm, FakeWeb(), mode="extractive", max_llm_calls=1))
    assert llm.calls == ["copy"] and state["llm_calls"] == 1 and state["answer"] == REFUSAL["en"]


def test_extractive_mode_answers_with_the_graders_checked_copy_without_another_call():
    llm = ScriptedChatModel(span="Beijing")
    state, _ = run(crag([chunk("ON_TOPIC " + ANSWER_CHUNK, 0.87)], llm, FakeWeb(), mode="extractive"))
    assert llm.calls == ["grade", "rewrite"] and state["grades"][0]["copied"] == "jieba"
    assert (state["answer"], state["extracted"], state["llm_calls"]) == ("jieba [1]", True, 2)
    state, _ = run(crag([chunk("ON_TOPIC " + ANSWER_CHUNK, 0.87)], ScriptedChatModel(), FakeWeb(), mode="clause"))
    assert state["answer"] == f"{'ON_TOPIC ' + ANSWER_CHUNK[:-1]} [1]"  # the copy widened to its clause


def test_no_relevant_document_rewrites_the_query_and_searches_the_web():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    context = crag([chunk(NOISE_CHUNK, 0.80), chunk(NOISE_CHUNK, 0.79)], llm, web)
    state, nodes = run(context)
    assert nodes == ["retrieve", "grade_documents", "rewrite_query", "approve_web", "web_search", "refine_knowledge",
                     "generate"]  # approve_web passes straight through: ask_before_web is off
    assert state["action"] == "incorrect" and state["relevant"] == []
    assert web.queries == [REWRITTEN] and state["web_query"] == REWRITTEN
    assert llm.calls == ["rewrite", "answer"]
    assert [d.metadata["origin"] for d in state["knowledge"]] == ["web"]
    assert "https://example.org/milvus-analyzers" in state["answer"]
    assert "Boil" not in state["answer"]


def test_band_passages_are_graded_by_the_llm_and_ambiguous_keeps_local_and_web():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    docs = [chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88), chunk(NOISE_CHUNK, 0.87, source="data/docs/eggs.md")]
    state, _ = run(crag(docs, llm, web))
    grades = [(g["decided_by"], g["relevant"], g["copied"]) for g in state["grades"]]
    assert grades == [("llm", True, "jieba"), ("llm", False, "Beijing")]
    assert state["action"] == "ambiguous"  # an LLM "yes" alone never skips the web
    assert llm.calls == ["grade", "grade", "rewrite", "answer"]
    assert {d.metadata["origin"] for d in state["knowledge"]} == {"local", "web"}
    assert "data/docs/eggs.md" not in state["answer"]


def test_unparsable_grade_counts_as_not_relevant():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    state, _ = run(crag([chunk("GARBLED " + ANSWER_CHUNK, 0.88)], llm, web))
    assert state["grades"][0]["relevant"] is False and state["action"] == "incorrect"
    assert llm.calls == ["grade", "rewrite", "answer"]


def test_web_search_error_answers_from_local_knowledge_and_says_so():
    llm = ScriptedChatModel()
    web = FakeWeb(error=WebSearchError("Tavily web search timed out after 10.0s (ReadTimeout)."))
    docs = [chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88)]
    state, nodes = run(crag(docs, llm, web))
    assert nodes[-2:] == ["refine_knowledge", "generate"]
    assert "timed out" in state["web_error"]
    assert any("web search failed" in note for note in state["notes"])
    assert state["answer"].startswith("ANSWER FROM") and "jieba" in state["answer"]
    assert state["answer"].endswith(WEB_FAILED["en"])


def test_web_search_error_with_nothing_local_refuses_without_an_answer_call():
    llm, web = ScriptedChatModel(), FakeWeb(error=WebSearchError("connection refused"))
    state, nodes = run(crag([chunk(NOISE_CHUNK, 0.70)], llm, web))
    assert nodes[-1] == "refuse"
    assert state["answer"] == REFUSAL["en"] + "\n" + WEB_FAILED["en"]
    assert llm.calls == ["rewrite"]


FAILED_WEB = "__error_handler__web_search"  # the node LangGraph runs when web_search fails for good


@pytest.mark.parametrize(
    "error, tries",
    [(OSError(101, "Network is unreachable"), 1), (ValueError("unexpected payload"), 1), (TimeoutError(), WEB_ATTEMPTS),
     (KeyError("results"), 1)],
    ids=["OSError", "ValueError", "TimeoutError", "KeyError"],
)
def test_any_backend_exception_is_recorded_and_the_answer_says_so(error, tries):
    """A plugged-in backend may raise anything (a raw socket error, a parsing bug): no crash, a web_error; only
    a timeout is tried again."""
    llm, web = ScriptedChatModel(), FakeWeb(error=error)
    state, nodes = run(crag([chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88)], llm, web))
    assert len(web.queries) == tries
    assert nodes[-3:] == [FAILED_WEB, "refine_knowledge", "generate"]
    assert state["web_error"] == f"{type(error).__name__}: {error}"  # the type says what went wrong
    assert f"web search failed: {state['web_error']}" in state["notes"]
    assert "jieba" in state["answer"] and state["answer"].endswith(WEB_FAILED["en"])


def test_empty_web_results_refuse():
    llm, web = ScriptedChatModel(), FakeWeb([])
    state, nodes = run(crag([chunk(NOISE_CHUNK, 0.70)], llm, web))
    assert web.queries == [REWRITTEN]
    assert state["web_results"] == [] and "web_error" not in state
    assert nodes[-1] == "refuse" and state["answer"] == REFUSAL["en"]
    assert "web search returned 0 pages" in state["notes"]


class HangingWeb:
    """TEST DOUBLE for a web backend that never answers (until the test releases it); it counts the calls."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def search(self, query: str, k: int = 4) -> list[Document]:
        self.calls += 1
        self.release.wait()
        return [WEB_PAGE]


def http_error(status: int) -> WebSearchError:
    """A backend's HTTP failure as TavilyWebSearch raises it: a WebSearchError raised from requests' HTTPError."""
    response = requests.Response()
    response.status_code = status
    try:
        raise requests.HTTPError(f"{status} Error", response=response)
    except requests.HTTPError as cause:
        try:
            raise WebSearchError(f"Tavily web search failed: HTTPError: {cause}") from cause
        except WebSearchError as error:
            return error


class FlakyWeb(FakeWeb):
    """TEST DOUBLE for a web backend that fails with the given errors, one per call, then returns its pages."""

    def __init__(self, pages: list[Document], errors: list[Exception]) -> None:
        super().__init__(pages)
        self.errors = list(errors)

    def search(self, query: str, k: int = 4) -> list[Document]:
        self.queries.append(query)
        if self.errors:
            raise self.errors.pop(0)
        return self.pages[:k]


def test_a_server_error_is_tried_again_and_the_second_try_answers():
    web = FlakyWeb([WEB_PAGE], [http_error(503)])
    state, nodes = run(crag([chunk(NOISE_CHUNK, 0.70)], ScriptedChatModel(), web))
    assert web.queries == [REWRITTEN, REWRITTEN]  # LangGraph's RetryPolicy ran the node twice
    assert state["web_results"] == [WEB_PAGE] and "web_error" not in state
    assert FAILED_WEB not in nodes and "https://example.org/milvus-analyzers" in state["answer"]


def test_a_timed_out_try_is_tried_again_without_an_error():
    web = FlakyWeb([WEB_PAGE], [WebSearchTimeout("no answer within 10 s")])
    state, nodes = run(crag([chunk(NOISE_CHUNK, 0.70)], ScriptedChatModel(), web))
    assert web.queries == [REWRITTEN, REWRITTEN] and "web_error" not in state and FAILED_WEB not in nodes
    assert state["web_results"] == [WEB_PAGE]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 429])
def test_a_refused_request_is_not_tried_again(status):
    web = FlakyWeb([WEB_PAGE], [http_error(status)])
    state, nodes = run(crag([chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88)], ScriptedChatModel(), web))
    assert web.queries == [REWRITTEN]  # one try: the same request would be refused again
    assert state["web_error"] == f"WebSearchError: Tavily web search failed: HTTPError: {status} Error"
    assert nodes[-3:] == [FAILED_WEB, "refine_knowledge", "generate"] and state["answer"].endswith(WEB_FAILED["en"])


def test_a_server_error_on_every_try_falls_back_to_the_local_documents():
    web = FlakyWeb([WEB_PAGE], [http_error(500)] * WEB_ATTEMPTS)
    state, _ = run(crag([chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88)], ScriptedChatModel(), web))
    assert len(web.queries) == WEB_ATTEMPTS and "500 Error" in state["web_error"]
    assert "jieba" in state["answer"] and state["answer"].endswith(WEB_FAILED["en"])


def test_a_cached_web_query_skips_the_search_on_the_next_run():
    graph, web = build_crag_graph(cache=InMemoryCache()), FakeWeb([WEB_PAGE])
    context = crag([chunk(NOISE_CHUNK, 0.70)], ScriptedChatModel(), web)
    runs = [list(graph.stream({"question": QUESTION}, stream_mode="updates", context=context)) for _ in range(2)]
    searched = [[u for u in updates if "web_search" in u] for updates in runs]
    assert web.queries == [REWRITTEN]  # the second run did not call the backend
    assert searched[0][0]["web_search"]["web_results"] == searched[1][0]["web_search"]["web_results"] == [WEB_PAGE]
    assert "__metadata__" not in searched[0][0] and searched[1][0]["__metadata__"] == {"cached": True}


def test_a_failed_web_search_is_not_cached():
    graph, web = build_crag_graph(cache=InMemoryCache()), FlakyWeb([WEB_PAGE], [ValueError("bad payload")])
    context = crag([chunk(NOISE_CHUNK, 0.70)], ScriptedChatModel(), web)
    first, second = (graph.invoke({"question": QUESTION}, context=context) for _ in range(2))
    assert first["web_error"] == "ValueError: bad payload" and "web_error" not in second
    assert second["web_results"] == [WEB_PAGE] and web.queries == [REWRITTEN, REWRITTEN]


class ReturningWeb:
    """TEST DOUBLE for a web backend outside the protocol: it returns whatever it was given."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def search(self, query: str, k: int = 4) -> Any:
        return self.value


def test_hanging_web_search_is_cut_off_by_the_time_limit():
    llm, web = ScriptedChatModel(), HangingWeb()
    started = time.monotonic()
    try:
        state, nodes = run(crag([chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88)], llm, web, web_timeout=0.3))
    finally:
        web.release.set()
    assert time.monotonic() - started < 3  # bounded by the tries' web_timeout and the delay, not by the backend
    assert web.calls == WEB_ATTEMPTS  # a timeout is worth another try
    assert nodes[-3:] == [FAILED_WEB, "refine_knowledge", "generate"]
    assert state["web_error"] == "WebSearchTimeout: HangingWeb gave no answer within 0.3 s " \
        "(raise web_timeout for a slow backend)"
    assert state["web_results"] == []
    assert "jieba" in state["answer"] and state["answer"].endswith(WEB_FAILED["en"])


@pytest.mark.parametrize(
    "value, kind",
    [(None, "NoneType"), ("Milvus uses jieba.", "str"), ({"url": "https://x", "content": "jieba"}, "dict"),
     (42, "int")],
    ids=["None", "str", "dict", "int"],
)
def test_web_results_that_are_not_a_list_are_a_web_error(value, kind):
    llm = ScriptedChatModel()
    state, nodes = run(crag([chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88)], llm, ReturningWeb(value)))
    assert state["web_error"] == f"WebSearchError: the backend returned {kind}, not a list of Documents"
    assert state["web_results"] == []
    assert nodes[-1] == "generate" and state["answer"].endswith(WEB_FAILED["en"])


def test_web_results_keep_the_documents_and_note_the_rest():
    llm = ScriptedChatModel()
    mixed = ["a string", WEB_PAGE, {"content": "a dict"}, None]
    state, _ = run(crag([chunk(NOISE_CHUNK, 0.70)], llm, ReturningWeb(mixed)))
    assert state["web_results"] == [WEB_PAGE] and "web_error" not in state
    assert "web search: dropped 3 result(s) that are not Documents (NoneType, dict, str)" in state["notes"]
    assert "https://example.org/milvus-analyzers" in state["answer"]
    assert not state["answer"].endswith(WEB_FAILED["en"])  # the web did answer


def test_web_results_with_no_document_at_all_are_a_web_error():
    llm = ScriptedChatModel()
    state, nodes = run(crag([chunk(NOISE_CHUNK, 0.70)], llm, ReturningWeb(["page one", {"content": "x"}])))
    assert state["web_error"] == "WebSearchError: dropped 2 result(s) that are not Documents (dict, str)"
    assert nodes[-1] == "refuse" and state["answer"] == REFUSAL["en"] + "\n" + WEB_FAILED["en"]


def test_more_web_results_than_k_are_cut_to_k():
    pages = [Document(page_content=f"Page {i} says the chinese analyzer uses jieba.", metadata={"url": f"https://p{i}"})
             for i in range(5)]
    state, _ = run(crag([chunk(NOISE_CHUNK, 0.70)], ScriptedChatModel(), ReturningWeb(pages), web_k=2))
    assert state["web_results"] == pages[:2]
    assert "web search: the backend returned 5 pages for k=2: kept the first 2" in state["notes"]


def test_knowledge_refinement_keeps_only_strips_about_the_question():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    mixed = chunk(f"{ANSWER_CHUNK} {NOISE_CHUNK} The weather in Paris was sunny all week long.", 0.95)
    state, _ = run(crag([mixed], llm, web))
    kept = [s["text"] for s in state["strips"] if s["kept"]]
    dropped = [s["text"] for s in state["strips"] if not s["kept"]]
    assert kept == [ANSWER_CHUNK]
    assert len(dropped) == 2 and all(s["score"] < 0.3 for s in state["strips"] if not s["kept"])
    assert state["knowledge"][0].page_content == ANSWER_CHUNK
    assert "Boil" not in state["answer"] and "Paris" not in state["answer"]


def test_refinement_caps_the_number_of_strips_and_keeps_document_order():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    context = crag([chunk(NOISE_CHUNK, 0.80)], llm, web, max_strips=1)
    state, _ = run(context)
    kept = [s for s in state["strips"] if s["kept"]]
    assert [s["text"] for s in kept] == ["The chinese analyzer uses the jieba tokenizer."]
    assert kept[0]["score"] == max(s["score"] for s in state["strips"])


@pytest.mark.parametrize(
    "budget, expected_calls", [(3, ["grade", "rewrite", "answer"]), (2, ["rewrite", "answer"]), (1, ["answer"])]
)
def test_llm_call_budget_is_respected(budget, expected_calls):
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    docs = [chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88), chunk("ON_TOPIC " + ANSWER_CHUNK, 0.87), chunk(NOISE_CHUNK, 0.86)]
    state, _ = run(crag(docs, llm, web, max_llm_calls=budget))
    assert llm.calls == expected_calls
    assert state["llm_calls"] == len(expected_calls) <= budget
    assert [g["decided_by"] for g in state["grades"]].count("budget") == 3 - expected_calls.count("grade")
    if budget == 1:
        assert web.queries == [QUESTION]  # no call left for a rewrite: the question is searched as is
    assert state["answer"].startswith("ANSWER FROM")


def test_graph_default_budget_is_written_to_the_state():
    llm = ScriptedChatModel()
    docs = [chunk("ON_TOPIC x", 0.88) for _ in range(5)]
    state, _ = run(crag(docs, llm, FakeWeb([WEB_PAGE]), max_llm_calls=4))
    assert state["max_llm_calls"] == 4
    assert llm.calls.count("grade") == 2 and state["llm_calls"] == 4


def test_uncalibrated_thresholds_let_the_llm_grade_every_passage():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    docs = [chunk("ON_TOPIC " + ANSWER_CHUNK, None), chunk("ON_TOPIC " + ANSWER_CHUNK, 0.99)]
    state, _ = run(CRAGContext(FakeRetriever(documents=docs), llm, web, thresholds=None))
    assert llm.calls == ["grade", "grade", "answer"]
    assert state["action"] == "correct" and web.queries == []


def test_invalid_settings_fail_before_running():
    llm, web, retriever = ScriptedChatModel(), FakeWeb(), FakeRetriever(documents=[])
    with pytest.raises(ValueError, match="max_llm_calls=0"):
        CRAGContext(retriever, llm, web, max_llm_calls=0)
    with pytest.raises(ValueError, match="lower similarity"):
        CRAGContext(retriever, llm, web, thresholds=(0.9, 0.8))
    with pytest.raises(ValueError, match=r"give \(lower, upper\) similarities"):
        CRAGContext(retriever, llm, web, thresholds="auto")  # type: ignore[arg-type]
    for timeout in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="web_timeout"):
            CRAGContext(retriever, llm, web, web_timeout=timeout)


def test_mermaid_drawing_shows_both_conditional_branches():
    text = build_crag_graph().get_graph().draw_mermaid()
    for edge in ("grade_documents -. &nbsp;refine&nbsp; .-> refine_knowledge",
                 "grade_documents -. &nbsp;web&nbsp; .-> rewrite_query",
                 "refine_knowledge -.-> refuse", "refine_knowledge -.-> generate", "rewrite_query --> approve_web",
                 "approve_web -. &nbsp;search&nbsp; .-> web_search",
                 "approve_web -. &nbsp;skip&nbsp; .-> refine_knowledge"):
        assert edge in text


def test_helpers():
    assert make_strips("# Title\nShort. This sentence is long enough to stand alone as a strip.") == [
        "# Title Short. This sentence is long enough to stand alone as a strip."
    ]
    assert make_strips("") == []
    assert lexical_overlap("Milvus chinese tokenizer", "the jieba tokenizer of Milvus") == pytest.approx(2 / 3)
    assert lexical_overlap("的 是", "anything") == 0.0
    assert occurs_in("Jieba 分词器", "使用 jieba分词器。") and occurs_in("30", "default value of 30,")
    assert occurs_in("2023年6月13日", "于 2023 年 6 月 13 日推出")
    assert not occurs_in("30", "a range of 300") and not occurs_in("", "text") and not occurs_in("Beijing", "jieba")


def test_rewrite_keeps_only_terms_copied_from_the_question_and_falls_back_to_it():
    web = FakeWeb([WEB_PAGE])
    run(crag([chunk(NOISE_CHUNK, 0.70)], ScriptedChatModel(terms=["Paris", "2019"]), web))
    assert web.queries == [QUESTION]


def test_refine_recomposes_kept_strips_in_document_order():
    page = Document(
        "Milvus is an open-source vector database. "
        "The chinese analyzer of Milvus uses the jieba tokenizer for Chinese text. "
        "Paris is the capital of France and has many museums. Its analyzer lowercases tokens for the chinese analyzer.",
        metadata={"url": "https://example.org/p"},
    )
    strips, knowledge = refine(QUESTION, [(page, "web")], max_strips=2, min_strip_score=0.1)
    assert [s["kept"] for s in strips] == [False, True, False, True]
    assert strips[1]["score"] > strips[3]["score"]  # ranked by score, recomposed in text order
    assert knowledge[0].page_content == " ".join([strips[1]["text"], strips[3]["text"]])
    assert knowledge[0].metadata == {"source": "https://example.org/p", "origin": "web", "title": ""}
    assert refine(QUESTION, [], 4, 0.3) == ([], [])


def test_grade_documents_runs_alone_on_a_state_and_a_runtime():
    """A node is a plain function: a state and Runtime(context=...) are all it needs, no graph."""
    llm = ScriptedChatModel()
    docs = [chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88), chunk(NOISE_CHUNK, 0.80, source="data/docs/eggs.md")]
    runtime = Runtime(context=crag([], llm, FakeWeb()))
    update = grade_documents({"question": QUESTION, "documents": docs}, runtime)
    assert [(g["decided_by"], g["relevant"]) for g in update["grades"]] == [("llm", True), ("similarity", False)]
    assert update["action"] == "ambiguous" and update["relevant"] == docs[:1]
    assert update["llm_calls"] == 1 and llm.calls == ["grade"]
    assert approve_web({"question": QUESTION, "web_query": REWRITTEN}, runtime) == {}  # not asking: passes through


# --- human in the loop: with ask_before_web the run pauses before the web search ---

PAUSED = {"question": QUESTION, "web_query": REWRITTEN}  # what the interrupt shows the user


def asking(llm: ScriptedChatModel, web: FakeWeb, documents: list[Document] | None = None) -> CRAGContext:
    """A context that asks before the web; by default one band passage the fake grader keeps (-> ambiguous)."""
    return crag(documents or [chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88)], llm, web, ask_before_web=True)


def pause(context: CRAGContext, thread: str = "t") -> tuple[Any, dict, dict]:
    """Run a checkpointed graph up to the pause: (graph, config, what invoke returned)."""
    graph, config = build_crag_graph(InMemorySaver()), {"configurable": {"thread_id": thread}}
    return graph, config, graph.invoke({"question": QUESTION}, config, context=context)


def test_ask_before_web_pauses_with_the_question_and_query_and_searches_nothing():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    graph, config, result = pause(asking(llm, web))
    assert [i.value for i in result["__interrupt__"]] == [PAUSED]
    snapshot = graph.get_state(config)
    assert snapshot.next == ("approve_web",) and [i.value for i in snapshot.interrupts] == [PAUSED]
    assert web.queries == [] and llm.calls == ["grade", "rewrite"] and "answer" not in snapshot.values


@pytest.mark.parametrize(
    "resume, query, note",
    [(True, REWRITTEN, f"the user approved the web search for {REWRITTEN!r}"),
     (" jieba analyzer ", "jieba analyzer", "the user changed the web query to 'jieba analyzer'")],
    ids=["approve", "edit"],
)
def test_resuming_with_yes_or_an_edited_query_searches_the_web(resume, query, note):
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    context = asking(llm, web)
    graph, config, _ = pause(context)
    final = graph.invoke(Command(resume=resume), config, context=context)  # the context comes with every call
    assert web.queries == [query] and final["web_query"] == query
    assert note in final["notes"] and "web search returned 1 pages" in final["notes"]
    assert {d.metadata["origin"] for d in final["knowledge"]} == {"local", "web"}
    assert "https://example.org/milvus-analyzers" in final["answer"]
    assert llm.calls == ["grade", "rewrite", "answer"] and graph.get_state(config).next == ()


@pytest.mark.parametrize("resume", [False, "", "  "], ids=["False", "empty", "blank"])
def test_declining_the_web_answers_from_the_local_documents(resume):
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    context = asking(llm, web)
    graph, config, _ = pause(context)
    final = graph.invoke(Command(resume=resume), config, context=context)
    assert web.queries == [] and final["web_declined"] is True and final["web_query"] == REWRITTEN
    assert "the user declined the web search: answering from the local documents" in final["notes"]
    assert "web_results" not in final and "web_error" not in final
    assert [d.metadata["origin"] for d in final["knowledge"]] == ["local"]
    assert "jieba" in final["answer"] and "example.org" not in final["answer"]
    assert not final["answer"].endswith(WEB_FAILED["en"])  # declined is not failed
    assert llm.calls == ["grade", "rewrite", "answer"]


def test_declining_the_web_with_nothing_local_refuses():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    context = asking(llm, web, [chunk(NOISE_CHUNK, 0.70)])
    graph, config, _ = pause(context)
    final = graph.invoke(Command(resume=False), config, context=context)
    assert final["answer"] == REFUSAL["en"] and web.queries == [] and llm.calls == ["rewrite"]


def test_a_resume_value_that_is_not_yes_no_or_a_query_is_a_clear_error():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    context = asking(llm, web)
    graph, config, _ = pause(context)
    with pytest.raises(ValueError, match=r"Command\(resume=3\): resume with True to search the web, False"):
        graph.invoke(Command(resume=3), config, context=context)
    assert web.queries == []


def test_asking_without_a_checkpointer_says_what_is_missing():
    with pytest.raises(ValueError, match="build the graph with a checkpointer"):
        GRAPH.invoke({"question": QUESTION}, context=asking(ScriptedChatModel(), FakeWeb([WEB_PAGE])))


def test_a_paused_run_survives_a_restart_with_a_sqlite_checkpointer(tmp_path):
    db, config = tmp_path / "crag.sqlite", {"configurable": {"thread_id": "restart"}}
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    before = sqlite3.connect(db, check_same_thread=False)
    build_crag_graph(SqliteSaver(before)).invoke({"question": QUESTION}, config, context=asking(llm, web))
    before.close()  # the process that paused is gone
    after = sqlite3.connect(db, check_same_thread=False)
    try:
        restarted = build_crag_graph(SqliteSaver(after))  # a new graph on a new saver of the same file
        assert [i.value for i in restarted.get_state(config).interrupts] == [PAUSED]
        new_llm = ScriptedChatModel()  # a fresh model object, as in a new process
        final = restarted.invoke(Command(resume=True), config, context=asking(new_llm, web))
        finished = restarted.get_state(config).next == ()
    finally:
        after.close()
    assert finished and web.queries == [REWRITTEN] and "https://example.org/milvus-analyzers" in final["answer"]
    assert llm.calls == ["grade", "rewrite"] and new_llm.calls == ["answer"]  # nothing before the pause runs again
    assert final["llm_calls"] == 3


@pytest.mark.parametrize(("durability", "checkpoints"), [("exit", 1), ("async", 9), ("sync", 9)])
def test_each_durability_mode_answers_alike_and_writes_its_checkpoints(tmp_path, durability, checkpoints):
    connection, config = sqlite3.connect(tmp_path / "crag.sqlite", check_same_thread=False), {"configurable": {
        "thread_id": durability}}
    saver, web = SqliteSaver(connection), FakeWeb([WEB_PAGE])
    try:
        graph = build_crag_graph(saver)
        final = graph.invoke({"question": QUESTION}, config, context=crag([chunk(NOISE_CHUNK, 0.70)],
                             ScriptedChatModel(), web), durability=durability)
        written = len(list(saver.list(config)))
    finally:
        connection.close()
    assert "https://example.org/milvus-analyzers" in final["answer"] and web.queries == [REWRITTEN]
    assert written == checkpoints  # "exit": the end state only; the others: the input, the start and 7 nodes


def test_a_run_paused_with_durability_exit_is_saved_and_resumes():
    llm, web = ScriptedChatModel(), FakeWeb([WEB_PAGE])
    graph, config = build_crag_graph(InMemorySaver()), {"configurable": {"thread_id": "exit"}}
    graph.invoke({"question": QUESTION}, config, context=asking(llm, web), durability="exit")
    assert graph.get_state(config).next == ("approve_web",)
    final = graph.invoke(Command(resume=True), config, context=asking(llm, web), durability="exit")
    assert web.queries == [REWRITTEN] and "https://example.org/milvus-analyzers" in final["answer"]


# --- helpers of the answers benchmark (benchmarks.answers), with the same test doubles ---


def test_token_counter_sees_every_call_of_a_graph_run_including_structured_ones():
    from rag_lib.experiments.tokens import TokenCounter

    counter = TokenCounter(lambda text: len(text.split()))
    llm = ScriptedChatModel()
    docs = [chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88)]
    state = GRAPH.invoke(
        {"question": QUESTION}, config={"callbacks": [counter]}, context=crag(docs, llm, FakeWeb([WEB_PAGE]))
    )
    assert counter.calls == state["llm_calls"] == len(llm.calls) == 3
    assert counter.prompt_tokens > len(QUESTION.split()) * 3
    answer = state["answer"].removesuffix("\n" + UNSUPPORTED_NOTE["en"])  # the echoed prompt fails the support check
    written = [answer, json.dumps({"answer": "jieba"}), json.dumps({"terms": TERMS})]  # tool-call args count
    assert counter.completion_tokens == sum(len(text.split()) for text in written)
