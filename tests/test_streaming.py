"""What each LangGraph stream mode yields for the course's RAG graph (notebook 06), with no model or database.

The chat model is a TEST DOUBLE: langchain_core's GenericFakeChatModel replays a fixed reply and streams it
split on whitespace, so the assertions can name every token. The retriever is a fake too: it returns fixed
Documents (or none, to take the refusal path) without Milvus or embeddings.
"""

from __future__ import annotations

import asyncio
from typing import TypedDict

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from rag_lib.graphs.rag import REFUSAL, RAGContext, build_rag_graph, generate

QUESTION = "Which stream mode emits only node updates?"
OFF_TOPIC = "How long should I boil an egg?"
ANSWER = 'The "updates" mode [1].'
DOCS = [
    Document('The "updates" mode emits only what each node returned.', metadata={"source": "streaming.txt"}),
    Document('The "values" mode emits the full state after each step.', metadata={"source": "streaming.txt"}),
]


class FakeRetriever(BaseRetriever):
    """Test double: returns the same Documents for every query (an empty list models "nothing relevant")."""

    documents: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.documents)


def fake_llm(reply: str = ANSWER) -> GenericFakeChatModel:
    """Test double for the chat model: answers `reply` once; a second call would raise StopIteration."""
    return GenericFakeChatModel(messages=iter([AIMessage(reply)]))


class NeverCalledModel(GenericFakeChatModel):
    """Test double that fails the test if the graph calls the model at all."""

    def _generate(self, *args, **kwargs):
        raise AssertionError("the chat model must not be called on the refusal path")

    def _stream(self, *args, **kwargs):
        raise AssertionError("the chat model must not be called on the refusal path")


@pytest.fixture()
def graph():
    return build_rag_graph()


@pytest.fixture()
def context() -> RAGContext:
    """A fresh run context per test: the fake model answers once."""
    return RAGContext(retriever=FakeRetriever(documents=DOCS), llm=fake_llm())


class AppState(TypedDict, total=False):
    question: str
    documents: list[Document]
    answer: str
    checked: bool


def build_app(rag_graph):
    """An outer graph: a node that writes custom progress events, then the RAG graph as a subgraph node."""

    def check(state: AppState) -> AppState:
        write = get_stream_writer()
        write({"node": "check", "status": "started"})
        write({"node": "check", "chars": len(state["question"])})
        return {"checked": True}

    builder = StateGraph(AppState)
    builder.add_node("check", check)
    builder.add_node("rag", rag_graph)
    builder.add_edge(START, "check")
    builder.add_edge("check", "rag")
    builder.add_edge("rag", END)
    return builder.compile()


def test_updates_has_one_entry_per_node(graph, context) -> None:
    chunks = list(graph.stream({"question": QUESTION}, stream_mode="updates", context=context))
    assert [list(c) for c in chunks] == [["retrieve"], ["generate"]]
    assert chunks[0]["retrieve"] == {"documents": DOCS}
    assert chunks[1]["generate"] == {"answer": ANSWER}


def test_values_starts_with_input_and_ends_with_answer(graph, context) -> None:
    chunks = list(graph.stream({"question": QUESTION}, stream_mode="values", context=context))
    assert len(chunks) == 3  # the input, then the state after each of the two steps
    assert chunks[0] == {"question": QUESTION}
    assert set(chunks[1]) == {"question", "documents"}
    assert chunks[-1] == {"question": QUESTION, "documents": DOCS, "answer": ANSWER}


def test_default_mode_is_updates_and_matches_invoke() -> None:
    retriever = FakeRetriever(documents=DOCS)
    streamed = list(build_rag_graph().stream({"question": QUESTION}, context=RAGContext(retriever, fake_llm())))
    invoked = build_rag_graph().invoke({"question": QUESTION}, context=RAGContext(retriever, fake_llm()))
    assert [list(c) for c in streamed] == [["retrieve"], ["generate"]]  # no stream_mode: "updates"
    assert streamed[-1]["generate"]["answer"] == invoked["answer"] == ANSWER


def test_messages_are_chunks_tagged_with_generate_node() -> None:
    llm = fake_llm().with_config(tags=["answer"])
    context = RAGContext(FakeRetriever(documents=DOCS), llm)
    items = list(build_rag_graph().stream({"question": QUESTION}, stream_mode="messages", context=context))
    assert len(items) >= len(ANSWER.split())  # one chunk per word at least: real token streaming
    assert all(isinstance(chunk, AIMessageChunk) for chunk, _ in items)
    assert {meta["langgraph_node"] for _, meta in items} == {"generate"}
    assert all(meta["tags"] == ["answer"] for _, meta in items)
    assert "".join(chunk.content for chunk, _ in items) == ANSWER


def test_custom_events_come_from_the_writing_node(graph, context) -> None:
    app = build_app(graph)
    events = list(app.stream({"question": QUESTION}, stream_mode="custom", context=context))
    assert events == [{"node": "check", "status": "started"}, {"node": "check", "chars": len(QUESTION)}]


def test_multiple_modes_yield_mode_payload_tuples(graph, context) -> None:
    items = list(graph.stream({"question": QUESTION}, stream_mode=["updates", "messages", "values"], context=context))
    assert all(isinstance(item, tuple) and len(item) == 2 for item in items)
    modes = [mode for mode, _ in items]
    assert set(modes) == {"updates", "messages", "values"}
    # tokens arrive before the node's update, and the final values chunk comes last
    last_token = max(i for i, m in enumerate(modes) if m == "messages")
    generate_update = next(i for i, (m, p) in enumerate(items) if m == "updates" and "generate" in p)
    assert last_token < generate_update
    assert items[-1] == ("values", {"question": QUESTION, "documents": DOCS, "answer": ANSWER})


def test_subgraphs_true_yields_namespaces(graph, context) -> None:
    app = build_app(graph)  # the context given to the outer graph reaches the subgraph's nodes
    items = list(app.stream({"question": QUESTION}, stream_mode="updates", subgraphs=True, context=context))
    assert all(isinstance(ns, tuple) for ns, _ in items)
    outer = [list(update) for ns, update in items if ns == ()]
    inner = [(ns, list(update)) for ns, update in items if ns != ()]
    assert outer == [["check"], ["rag"]]
    assert [nodes for _, nodes in inner] == [["retrieve"], ["generate"]]
    assert all(len(ns) == 1 and ns[0].startswith("rag:") for ns, _ in inner)  # "rag:<task id>"


def test_subgraph_tokens_need_subgraphs_true(graph, context) -> None:
    app = build_app(graph)
    hidden = list(app.stream({"question": QUESTION}, stream_mode="messages", context=context))
    assert hidden == []  # the only model call happens inside the "rag" subgraph
    context = RAGContext(FakeRetriever(documents=DOCS), fake_llm())
    shown = list(app.stream({"question": QUESTION}, stream_mode="messages", subgraphs=True, context=context))
    assert "".join(chunk.content for _, (chunk, _) in shown) == ANSWER
    assert {ns[0].split(":")[0] for ns, _ in shown} == {"rag"}


def test_debug_yields_task_and_task_result_per_node(graph, context) -> None:
    events = list(graph.stream({"question": QUESTION}, stream_mode="debug", context=context))
    assert [(e["type"], e["step"], e["payload"]["name"]) for e in events] == [
        ("task", 1, "retrieve"), ("task_result", 1, "retrieve"), ("task", 2, "generate"), ("task_result", 2, "generate")
    ]  # no checkpointer: no checkpoint events
    assert events[0]["payload"]["input"] == {"question": QUESTION}
    assert events[-1]["payload"]["result"] == {"answer": ANSWER} and events[-1]["payload"]["error"] is None


def test_debug_with_a_checkpointer_adds_one_checkpoint_event_per_step(context) -> None:
    saved = build_rag_graph(InMemorySaver())  # the same graph, checkpointed
    config = {"configurable": {"thread_id": "debug"}}
    events = list(saved.stream({"question": QUESTION}, config, stream_mode="debug", context=context))
    types = [e["type"] for e in events]
    assert types == ["checkpoint", "checkpoint", "task", "task_result", "checkpoint", "task", "task_result",
                     "checkpoint"]
    checkpoints = [e["payload"] for e in events if e["type"] == "checkpoint"]
    assert [list(c["next"]) for c in checkpoints] == [["__start__"], ["retrieve"], ["generate"], []]
    assert checkpoints[-1]["values"] == {"question": QUESTION, "documents": DOCS, "answer": ANSWER}
    assert {c["config"]["configurable"]["thread_id"] for c in checkpoints} == {"debug"}
    assert len(list(saved.get_state_history(config))) == len(checkpoints)  # one event per saved checkpoint


def test_output_keys_restrict_what_is_streamed(graph, context) -> None:
    chunks = list(graph.stream({"question": QUESTION}, stream_mode="values", output_keys="answer", context=context))
    assert chunks[-1] == ANSWER  # a single key streams the bare value


def test_astream_updates(graph, context) -> None:
    async def collect() -> list:
        return [chunk async for chunk in graph.astream({"question": QUESTION}, stream_mode="updates", context=context)]

    assert [list(c) for c in asyncio.run(collect())] == [["retrieve"], ["generate"]]


def test_astream_events_contain_chat_model_stream(graph, context) -> None:
    async def collect() -> list[dict]:
        return [event async for event in graph.astream_events({"question": QUESTION}, version="v2", context=context)]

    events = asyncio.run(collect())
    kinds = [e["event"] for e in events]
    assert kinds[0] == "on_chain_start" and kinds[-1] == "on_chain_end"
    assert "on_retriever_start" in kinds and "on_chat_model_start" in kinds
    tokens = [e for e in events if e["event"] == "on_chat_model_stream"]
    assert tokens and all(e["metadata"]["langgraph_node"] == "generate" for e in tokens)
    assert "".join(e["data"]["chunk"].content for e in tokens) == ANSWER


def test_refusal_routes_to_refuse_and_streams_no_tokens() -> None:
    context = RAGContext(FakeRetriever(documents=[]), NeverCalledModel(messages=iter([])))
    graph = build_rag_graph()
    items = list(graph.stream({"question": OFF_TOPIC}, stream_mode=["updates", "messages"], context=context))
    assert [mode for mode, _ in items] == ["updates", "updates"]
    assert items[0][1] == {"retrieve": {"documents": []}}
    assert items[1][1] == {"refuse": {"answer": REFUSAL["en"]}}


def test_generate_node_runs_alone_on_a_state_and_a_runtime(context) -> None:
    """A node is a plain function: a state and Runtime(context=...) are all it needs, no graph."""
    update = generate({"question": QUESTION, "documents": DOCS}, Runtime(context=context))
    assert update == {"answer": ANSWER}


def test_v2_parts_are_typed_dicts_in_arrival_order(graph, context) -> None:
    parts = list(graph.stream({"question": QUESTION}, stream_mode=["updates", "messages"], context=context,
                              version="v2"))
    assert all(set(part) == {"type", "ns", "data"} and part["ns"] == () for part in parts)
    kinds = [(part["type"],
              part["data"][1]["langgraph_node"] if part["type"] == "messages" else next(iter(part["data"])))
             for part in parts]
    assert kinds[0] == ("updates", "retrieve") and kinds[-1] == ("updates", "generate")
    assert set(kinds[1:-1]) == {("messages", "generate")}  # the tokens, between the two updates
    assert "".join(part["data"][0].content for part in parts if part["type"] == "messages") == ANSWER
    assert parts[-1]["data"] == {"generate": {"answer": ANSWER}}


def test_v2_one_mode_and_subgraphs_keep_the_same_shape(graph, context) -> None:
    one = list(graph.stream({"question": QUESTION}, stream_mode="updates", context=context, version="v2"))
    assert [(part["type"], part["ns"], list(part["data"])) for part in one] == [
        ("updates", (), ["retrieve"]), ("updates", (), ["generate"])]  # v1 would yield the bare dicts
    context = RAGContext(FakeRetriever(documents=DOCS), fake_llm())
    nested = list(build_app(graph).stream({"question": QUESTION}, stream_mode=["custom", "updates"], subgraphs=True,
                                          context=context, version="v2"))
    assert all(set(part) == {"type", "ns", "data"} for part in nested)
    assert [(part["type"], part["ns"][0].split(":")[0] if part["ns"] else "root") for part in nested] == [
        ("custom", "root"), ("custom", "root"), ("updates", "root"), ("updates", "rag"), ("updates", "rag"),
        ("updates", "root")]
