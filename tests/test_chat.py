"""Conversational RAG (rag_lib.graphs.chat): memory per thread, condensed follow-ups, trimmed history, restarts.

The retriever and chat models here are test doubles (fakes) that record what they were given; the graph,
the reducers, trim_messages and the SQLite checkpointer are real.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime

from rag_lib.graphs.chat import (
    ChatContext,
    build_chat_graph,
    condense,
    condensed_query,
    history,
    last_question,
)
from rag_lib.graphs.checkpoints import sqlite_checkpointer
from rag_lib.graphs.rag import REFUSAL

DOC = Document("Milvus listens on port 19530 by default.", metadata={"source": "milvus.md"})


class RecordingRetriever(BaseRetriever):
    """Fake retriever: returns `documents` for every query and records the queries."""

    documents: list[Document]
    queries: list[str] = []

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        self.queries.append(query)
        return list(self.documents)


class RecordingModel(GenericFakeChatModel):
    """Fake chat model: replies from a script and records every prompt it was given."""

    prompts: list[list] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.prompts.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def model(*replies: str) -> RecordingModel:
    return RecordingModel(messages=iter([AIMessage(r) for r in replies]), prompts=[])


def thread(name: str) -> dict:
    return {"configurable": {"thread_id": name}}


def test_first_turn_searches_the_question_without_a_rewrite_call() -> None:
    retriever, llm = RecordingRetriever(documents=[DOC], queries=[]), model("It is Milvus. [1]")
    graph = build_chat_graph(InMemorySaver())
    state = graph.invoke({"messages": [("user", "What is Milvus?")]}, thread("a"),
                         context=ChatContext(retriever=retriever, llm=llm))
    assert retriever.queries == ["What is Milvus?"]
    assert len(llm.prompts) == 1  # the answer only
    assert [type(m) for m in state["messages"]] == [HumanMessage, AIMessage]
    assert state["messages"][-1].content == "It is Milvus. [1]"


def test_follow_up_is_condensed_with_the_history_and_the_thread_keeps_both_turns() -> None:
    retriever = RecordingRetriever(documents=[DOC], queries=[])
    llm = model("Milvus is a vector database. [1]", "What is the default port of Milvus?", "19530 [1]")
    graph, context = build_chat_graph(InMemorySaver()), ChatContext(retriever=retriever, llm=llm)
    graph.invoke({"messages": [("user", "What is Milvus?")]}, thread("a"), context=context)
    state = graph.invoke({"messages": [("user", "And its default port?")]}, thread("a"), context=context)

    assert retriever.queries == ["What is Milvus?", "What is the default port of Milvus?"]
    rewrite_request = llm.prompts[1][-1].content
    assert "User: What is Milvus?\nAssistant: Milvus is a vector database. [1]" in rewrite_request
    assert rewrite_request.endswith("Follow-up question: And its default port?\n\nStandalone question:")
    answer_prompt = llm.prompts[2]
    assert answer_prompt[-1].content == "And its default port?"  # the user's own words are answered
    assert "19530" in answer_prompt[0].content and "What is Milvus?" in [m.content for m in answer_prompt]
    assert [m.content for m in state["messages"]][-2:] == ["And its default port?", "19530 [1]"]
    assert len(state["messages"]) == 4

    other = graph.invoke({"messages": [("user", "What is Milvus?")]}, thread("b"),
                         context=ChatContext(retriever=retriever, llm=model("Another thread. [1]")))
    assert len(other["messages"]) == 2  # a new thread starts empty


def test_nothing_retrieved_refuses_without_calling_the_model() -> None:
    llm = model()  # no scripted reply: a call would raise
    state = build_chat_graph().invoke({"messages": [("user", "What is Milvus?")]},
                                      context=ChatContext(retriever=RecordingRetriever(documents=[]), llm=llm))
    assert state["messages"][-1].content == REFUSAL["en"]
    assert llm.prompts == []


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("What is the default port of Milvus?\nBecause ...", "What is the default port of Milvus?"),
        ("   \n  ", "What is Milvus? And its port?"),
        ("x" * 400, "What is Milvus? And its port?"),
        ("19530", "What is Milvus? And its port?"),  # answered instead of rewritten
        ("它的默认端口", "What is Milvus? And its port?"),
        ("and ITS  port?", "What is Milvus? And its port?"),  # the follow-up copied back: no rewrite
    ],
)
def test_a_rewrite_that_is_empty_or_runaway_falls_back_to_both_questions(reply: str, expected: str) -> None:
    assert condensed_query(reply, "And its port?", "What is Milvus?") == expected


def test_a_follow_up_copied_back_falls_back_to_both_questions() -> None:
    question, previous = "它用哪个分词器？", "Milvus 内置的 chinese 分析器是什么？"
    assert condensed_query(" 它用哪个分词器？\n", question, previous) == f"{previous} {question}"


def test_old_turns_are_trimmed_to_the_history_budget() -> None:
    turns = []
    for i in range(10):
        turns += [HumanMessage(f"question {i} " + "word " * 40), AIMessage(f"answer {i} " + "word " * 40)]
    turns.append(HumanMessage("last question"))
    kept = history(turns, model(), max_tokens=200)
    assert 0 < len(kept) < 20 and isinstance(kept[0], HumanMessage)
    assert kept[-1].content.startswith("answer 9")
    assert history(turns, model(), max_tokens=0) == []


def test_condense_node_runs_alone_with_a_runtime() -> None:
    llm = model("What is the default port of Milvus?")
    state = {"messages": [HumanMessage("What is Milvus?"), AIMessage("A vector database."),
                          HumanMessage("Its default port?")]}
    update = condense(state, Runtime(context=ChatContext(retriever=RecordingRetriever(documents=[]), llm=llm)))
    assert update == {"search_query": "What is the default port of Milvus?"}
    assert condensed_query("Milvus 的默认端口是多少？", "它的默认端口是多少？", "") == "Milvus 的默认端口是多少？"


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="history_tokens=-1"):
        ChatContext(retriever=RecordingRetriever(documents=[]), llm=model(), history_tokens=-1)
    with pytest.raises(ValueError, match="No user message"):
        last_question([AIMessage("hello")])


def test_the_conversation_survives_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "chat.sqlite"
    retriever = RecordingRetriever(documents=[DOC], queries=[])
    first = build_chat_graph(sqlite_checkpointer(db))
    first.invoke({"messages": [("user", "What is Milvus?")]}, thread("s"),
                 context=ChatContext(retriever=retriever, llm=model("Milvus listens on port 19530. [1]")))
    del first  # as if the app stopped

    restarted = build_chat_graph(sqlite_checkpointer(db))
    llm = model("What is the default port of Milvus?", "19530 [1]")
    state = restarted.invoke({"messages": [("user", "Its default port?")]}, thread("s"),
                             context=ChatContext(retriever=retriever, llm=llm))
    assert [m.content for m in state["messages"]] == [
        "What is Milvus?", "Milvus listens on port 19530. [1]", "Its default port?", "19530 [1]"
    ]
    assert retriever.queries[-1] == "What is the default port of Milvus?"


@pytest.fixture(scope="module")
def milvus_docs(tmp_path_factory, embeddings):
    """A real Milvus Lite collection of three data/docs files, indexed with the real embeddings."""
    import shutil

    from rag_lib.index import index_directory
    from rag_lib.store import PROJECT_ROOT, connect

    folder = tmp_path_factory.mktemp("chat-docs")
    for name in ("milvus_architecture.md", "milvus_hnsw_index.md", "langgraph_streaming_modes.txt"):
        shutil.copy(PROJECT_ROOT / "data" / "docs" / name, folder / name)
    client = connect(uri=str(folder / "milvus.db"))
    index_directory(client, folder, embeddings, progress=False)
    yield client
    client.close()


def test_real_model_answers_a_follow_up_that_names_nothing(offline_env, milvus_docs, embeddings):
    """The local model and real retrieval: the follow-up names no subject; condensing brings it back."""
    from rag_lib.llm import get_chat_model
    from rag_lib.retriever import Retriever

    context = ChatContext(retriever=Retriever(client=milvus_docs, embeddings=embeddings, k=2), llm=get_chat_model())
    graph = build_chat_graph(InMemorySaver())
    graph.invoke({"messages": [("user", "What is Milvus Standalone?")]}, thread("real"), context=context)
    state = graph.invoke({"messages": [("user", "What is its default port?")]}, thread("real"), context=context)
    assert "milvus" in state["search_query"].lower()
    assert Path(state["documents"][0].metadata["source"]).name == "milvus_architecture.md"
    assert "19530" in state["messages"][-1].content
