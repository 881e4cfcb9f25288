"""One per-run state policy for every graph: a second question asked on a thread ends in the state the same question
reaches on a fresh thread. The run's first node clears what belongs to one question (LangGraph's `Overwrite` for a
key with a reducer); only a conversation (`messages` of the chat and router graphs, the agent's user turns and
answers) is meant to carry over.

Each case asks two different questions on one checkpointed thread, then the second question alone on a thread of a
new `InMemorySaver` (same thread id, so follow-up threads and plans name the same threads), and compares the two
final states. A key a fresh run never wrote and a key reset to its empty value ([], "", False, 0, None) count as the
same.
The chat models are the fakes (test doubles) of the graphs' own tests, reused here; the retrievers are their fakes
too, except for the router, which searches a real Milvus Lite collection with the real embeddings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command
from test_agent import scripted
from test_chat import RecordingRetriever, model
from test_crag import (
    ANSWER_CHUNK,
    BAND,
    NOISE_CHUNK,
    QUESTION,
    WEB_PAGE,
    FakeRetriever,
    FakeWeb,
    ScriptedChatModel,
    chunk,
)
from test_judge import AUTHORS, FU, M30, TITLE, Q, ScriptedModel, TableRetriever, doc
from test_router import VPN
from test_router import ScriptedChatModel as RouterModel

from rag_lib.agent import build_agent, docs_tool, run_agent, web_tool
from rag_lib.app.router import REQUEST_DEFAULTS, RouterContext, build_router_graph
from rag_lib.embeddings import E5_MIN_SIMILARITY
from rag_lib.graphs.chat import ChatContext, build_chat_graph
from rag_lib.graphs.crag import WEB_FAILED, CRAGContext, build_crag_graph
from rag_lib.graphs.judge import JudgeContext, Judgment, build_judge_graph
from rag_lib.graphs.rag import REFUSAL, RAGContext, build_rag_graph
from rag_lib.websearch import WebSearchError

THREAD: RunnableConfig = {"configurable": {"thread_id": "t"}}
EMPTY = (None, False, "", [], {})  # 0 == False: a zero count is empty too


def per_question(state: dict, conversation: tuple[str, ...] = ()) -> dict:
    """The final state without the conversation, a key holding an empty value counted as absent."""
    return {key: value for key, value in state.items() if key not in conversation and value not in EMPTY}


def second_question(build: Callable[[InMemorySaver], CompiledStateGraph],
                    ask: Callable[[CompiledStateGraph, int], dict]) -> tuple[dict, dict]:
    """(final state of question 2 asked after question 1 on one thread, of question 2 on a fresh thread);
    `ask(graph, n)` runs question n on THREAD and returns its final state."""
    reused = build(InMemorySaver())
    ask(reused, 1)
    return ask(reused, 2), ask(build(InMemorySaver()), 2)


# --- plain RAG


def test_plain_rag_second_question_is_a_fresh_one():
    """Q1 answered by a checked copy (extracted=True), Q2 finds nothing and is refused."""
    table = {Q: [AUTHORS]}  # Q2 is not in the table: nothing retrieved

    def ask(graph: CompiledStateGraph, n: int) -> dict:
        context = RAGContext(retriever=TableRetriever(table=table), llm=ScriptedModel(script={}, span="Malkov"),
                             mode="extractive")
        return graph.invoke({"question": Q if n == 1 else "Other question?"}, THREAD, context=context)

    reused, fresh = second_question(build_rag_graph, ask)
    assert fresh["answer"] == REFUSAL["en"] and "extracted" not in fresh
    assert per_question(reused) == per_question(fresh)


# --- Corrective RAG

OTHER = "Which port does the Milvus proxy listen on?"


def crag_context(documents: list, web: FakeWeb, **settings: Any) -> CRAGContext:
    return CRAGContext(FakeRetriever(documents=documents), ScriptedChatModel(), web, thresholds=BAND, **settings)


def test_crag_second_question_has_the_whole_budget_and_no_web_leftovers():
    """Q1: a graded band passage, a failing web search (3 LLM calls, a web_error). Q2: two band passages the LLM
    grades, which needs the whole budget again, no web_error in its answer, no page or note of Q1."""

    def ask(graph: CompiledStateGraph, n: int) -> dict:
        if n == 1:
            context = crag_context([chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88)], FakeWeb(error=WebSearchError("down")))
            return graph.invoke({"question": QUESTION}, THREAD, context=context)
        passages = [chunk("ON_TOPIC The Milvus proxy (jieba inside) listens on port 19530.", 0.89),
                    chunk(NOISE_CHUNK, 0.88)]
        return graph.invoke({"question": OTHER}, THREAD, context=crag_context(passages, FakeWeb([WEB_PAGE])))

    reused, fresh = second_question(build_crag_graph, ask)
    assert [g["decided_by"] for g in fresh["grades"]] == ["llm", "llm"] and fresh["llm_calls"] == 4
    assert fresh["web_results"] and not fresh["answer"].endswith(WEB_FAILED["en"])
    assert per_question(reused) == per_question(fresh)


def test_crag_second_question_gets_its_own_contexts_budget():
    """The budget is a setting of the run (CRAGContext.max_llm_calls): question 1's budget does not stay on the
    thread."""

    def ask(graph: CompiledStateGraph, n: int) -> dict:
        passages = [chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88), chunk(NOISE_CHUNK, 0.88)]
        context = crag_context(passages, FakeWeb([WEB_PAGE]), max_llm_calls=6 if n == 1 else 2)
        return graph.invoke({"question": QUESTION if n == 1 else OTHER}, THREAD, context=context)

    reused, fresh = second_question(build_crag_graph, ask)
    assert fresh["max_llm_calls"] == 2 and fresh["llm_calls"] <= 2
    assert per_question(reused) == per_question(fresh)


def test_crag_declined_web_for_question_1_does_not_stop_the_approved_search_of_question_2():
    webs: list[FakeWeb] = []

    def ask(graph: CompiledStateGraph, n: int) -> dict:
        web = FakeWeb([WEB_PAGE])
        webs.append(web)
        context = crag_context([chunk("ON_TOPIC " + ANSWER_CHUNK, 0.88)], web, ask_before_web=True)
        paused = graph.invoke({"question": QUESTION if n == 1 else OTHER}, THREAD, context=context)
        assert paused["__interrupt__"][0].value["question"] == (QUESTION if n == 1 else OTHER)
        return graph.invoke(Command(resume=n == 2), THREAD, context=context)  # Q1 declined, Q2 approved

    reused, fresh = second_question(build_crag_graph, ask)
    first, second, alone = webs
    assert first.queries == [] and second.queries == alone.queries == [fresh["web_query"]]
    assert "web search returned 1 pages" in reused["notes"]
    assert per_question(reused) == per_question(fresh)


# --- recursive RAG with a judge


def test_judge_second_question_reuses_follow_up_threads_cleanly():
    """Q1 explores a follow-up on thread t/0; Q2 explores another one on the same child thread."""
    other, follow_up = "What is the default M of HNSW in Milvus?", "What is M in HNSW?"
    table = {Q: [M30], FU: [AUTHORS], other: [TITLE], follow_up: [doc("M is the number of HNSW links.")]}
    script = {
        (Q, M30.page_content): Judgment(score=1, follow_up=FU),
        (FU, AUTHORS.page_content): Judgment(score=2, answer="Malkov and Yashunin"),
        (other, TITLE.page_content): Judgment(score=1, follow_up=follow_up),
        (follow_up, "M is the number of HNSW links."): Judgment(score=2, answer="number of HNSW links"),
    }

    def ask(graph: CompiledStateGraph, n: int) -> dict:
        context = JudgeContext(retriever=TableRetriever(table=table), llm=ScriptedModel(script=script))
        return graph.invoke({"question": Q if n == 1 else other}, THREAD, context=context)

    reused, fresh = second_question(build_judge_graph, ask)
    assert [s["question"] for s in fresh["sub_answers"]] == [follow_up] and fresh["llm_calls"] == 4
    assert per_question(reused) == per_question(fresh)


# --- conversational RAG: the messages carry over, nothing else does


def test_chat_second_question_differs_from_a_fresh_one_only_by_the_conversation():
    def ask(graph: CompiledStateGraph, n: int) -> dict:
        if n == 1:
            context = ChatContext(retriever=RecordingRetriever(documents=[doc("Milvus is a vector database.")]),
                                  llm=model("A vector database. [1]"))
            return graph.invoke({"messages": [("user", "What is Milvus?")]}, THREAD, context=context)
        earlier = len(graph.get_state(THREAD).values.get("messages", []))
        replies = (OTHER,) * bool(earlier) + ("19530 [1]",)  # the rewrite of a standalone question: itself
        context = ChatContext(retriever=RecordingRetriever(documents=[doc("The proxy listens on 19530.")]),
                              llm=model(*replies))
        return graph.invoke({"messages": [("user", OTHER)]}, THREAD, context=context)

    reused, fresh = second_question(build_chat_graph, ask)
    assert [m.content for m in reused["messages"]][-2:] == [m.content for m in fresh["messages"]]
    # the only difference the conversation makes: the fake's rewrite copies the question back, which the condense
    # guard does not take as a rewrite, so the search joins the earlier question to it
    joined = {"search_query": f"What is Milvus? {OTHER}"}
    assert per_question(reused, ("messages",)) == per_question(fresh, ("messages",)) | joined


@pytest.mark.parametrize("turns", [[], [("assistant", "Hello! Ask me about Milvus.")]], ids=["empty", "no-user"])
def test_chat_without_a_user_message_is_a_clear_error(turns):
    context = ChatContext(retriever=RecordingRetriever(documents=[]), llm=model())
    with pytest.raises(ValueError, match=r'No user message in the state: invoke with \{"messages": \[\("user"'):
        build_chat_graph(InMemorySaver()).invoke({"messages": turns}, THREAD, context=context)


# --- the app's router: the messages carry over; a follow-up is condensed first (one more call)


def test_router_second_request_differs_from_a_fresh_one_only_by_the_conversation(milvus, embeddings, tmp_path):
    requests = [f"Remember: {VPN} Which VPN server does the Lyon office use?", "What is the Lyon VPN server?"]

    def ask(graph: CompiledStateGraph, n: int) -> dict:
        context = RouterContext(milvus, embeddings, RouterModel(), tmp_path / "uploads",
                                min_similarity=E5_MIN_SIMILARITY)
        inputs = {**REQUEST_DEFAULTS, "request": requests[n - 1], "evaluate": n == 1}
        return graph.invoke(inputs, THREAD, context=context)

    reused, fresh = second_question(build_router_graph, ask)
    assert fresh["documents"] and "saved" not in fresh and "scores" not in fresh
    # the fake's rewrite copies the request back, which the condense guard does not take as a rewrite: the search
    # joins the earlier request to it, at one more model call
    condensed = {"search_query": f"{requests[0]} {requests[1]}", "llm_calls": fresh["llm_calls"] + 1}
    # the same passages are found; their similarities differ with the query
    assert [d.id for d in reused["documents"]] == [d.id for d in fresh["documents"]]
    aside = ("messages", "documents")
    assert per_question(reused, aside) == per_question(fresh, aside) | condensed


# --- the agent: its searches belong to one question, the user turns and answers carry over


@pytest.mark.parametrize("stopped", [False, True], ids=["answered", "stopped-by-the-model-call-limit"])
def test_agent_second_question_sees_the_conversation_but_none_of_the_first_questions_searches(monkeypatch, stopped):
    first, second = "What does HNSW stand for?", "Who described HNSW?"
    table = {first: [M30], second: [AUTHORS]}
    search = [{"action": "search_docs", "query": second}, {"action": "answer", "answer": "Malkov [hnsw.md]"}]
    loop = [{"action": "search_docs", "query": first}] * 3 if stopped else [
        {"action": "search_docs", "query": first}, {"action": "answer", "answer": "30 [hnsw.md]"}]
    replies = list(loop)
    seen = scripted(monkeypatch, replies)  # fake model: the scripted steps, in order
    # the model is never called (the scripted fake replaces the structured step): a fake stands in for it
    llm = GenericFakeChatModel(messages=iter([]))
    tools = [docs_tool(TableRetriever(table=table)), web_tool(FakeWeb([WEB_PAGE]))]

    def build() -> CompiledStateGraph:
        return build_agent(llm, tools, max_tool_calls=50 if stopped else 2, max_model_calls=2 if stopped else 4,
                           checkpointer=InMemorySaver())

    agent = build()
    assert run_agent(agent, first, config=THREAD)["stopped"] is stopped
    replies[:] = [*search, *search]  # a stopped run leaves unused steps: question 2 starts from its own
    steps_before = len(seen)
    reused = run_agent(agent, second, config=THREAD)
    reused_prompt = seen[steps_before][1]
    steps_before = len(seen)
    fresh = run_agent(build(), second, config=THREAD)
    fresh_prompt = seen[steps_before][1]

    assert fresh["tools"] == [("search_docs", second)] and fresh["answer"] == "Malkov [hnsw.md]"
    assert per_question(reused, ("messages",)) == per_question(fresh, ("messages",))
    conversation = [first] if stopped else [first, "30 [hnsw.md]"]  # the user's turn, and the answer if any
    assert [m.content for m in reused_prompt] == [fresh_prompt[0].content, *conversation, second]
    assert [type(m) for m in reused_prompt[1:]] == [HumanMessage, *[AIMessage] * (not stopped), HumanMessage]
