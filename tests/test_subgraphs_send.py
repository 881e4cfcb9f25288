"""The LangGraph patterns notebooks 07 and 07b rely on: Send + reducer, SQLite checkpoints, time travel, subgraph
state.

Plain Python nodes (no model): these pin down LangGraph behaviour the notebook's text explains, so an upgrade
that changes it fails here first.
"""

from __future__ import annotations

import operator
import sqlite3
from pathlib import Path
from typing import Annotated, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.errors import InvalidUpdateError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send

from rag_lib.chunking import recursive_split
from rag_lib.experiments.display import mermaid
from rag_lib.text import tokenize

TEXT = (
    "Send lets a routing function fan out work. Each branch receives its own item, not the whole state. "
    "A reducer such as operator.add concatenates the lists the branches return. "
    "The combine node runs once, after every branch has finished. "
) * 3


class MapState(TypedDict, total=False):
    chunks: list[str]
    notes: Annotated[list[dict], operator.add]
    answer: str


class Branch(TypedDict):
    index: int
    chunk: str


def fan_out(state: MapState):
    return [Send("summarise", {"index": i, "chunk": c}) for i, c in enumerate(state["chunks"])] or "combine"


def summarise(branch: Branch) -> MapState:
    return {"notes": [{"index": branch["index"], "words": len(tokenize(branch["chunk"]))}]}


def combine(state: MapState, config: RunnableConfig) -> MapState:
    notes = sorted(state.get("notes", []), key=lambda n: n["index"])
    separator = config["configurable"].get("separator", ",")
    return {"answer": separator.join(str(n["words"]) for n in notes)}


def build_map_reduce(checkpointer=None, path_map: bool = True) -> CompiledStateGraph:
    builder = StateGraph(MapState)
    builder.add_node("summarise", summarise)
    builder.add_node("combine", combine)
    if path_map:
        builder.add_conditional_edges(START, fan_out, ["summarise", "combine"])
    else:
        builder.add_conditional_edges(START, fan_out)
    builder.add_edge("summarise", "combine")
    builder.add_edge("combine", END)
    return builder.compile(checkpointer=checkpointer)


def open_saver(path: Path) -> SqliteSaver:
    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def test_send_fan_out_with_reducer_collects_every_branch():
    chunks = recursive_split(TEXT, chunk_size=80, chunk_overlap=0)
    result = build_map_reduce().invoke({"chunks": chunks})
    assert len(chunks) >= 5
    assert sorted(n["index"] for n in result["notes"]) == list(range(len(chunks)))
    assert result["answer"] == ",".join(str(len(tokenize(c))) for c in chunks)


def test_send_with_nothing_to_map_goes_straight_to_the_reduce_node():
    result = build_map_reduce().invoke({"chunks": []})
    assert result["notes"] == [] and result["answer"] == ""


def test_parallel_branches_writing_a_key_without_reducer_fail():
    class NoReducer(TypedDict, total=False):
        items: list[int]
        out: list[int]

    builder = StateGraph(NoReducer)
    builder.add_node("work", lambda item: {"out": [item["n"]]})
    builder.add_conditional_edges(START, lambda s: [Send("work", {"n": n}) for n in s["items"]], ["work"])
    builder.add_edge("work", END)
    with pytest.raises(InvalidUpdateError):
        builder.compile().invoke({"items": [1, 2]})


def test_sqlite_checkpoints_are_read_back_by_a_new_saver(tmp_path: Path):
    path = tmp_path / "checkpoints.sqlite"
    thread = {"configurable": {"thread_id": "t1"}}
    saver = open_saver(path)
    result = build_map_reduce(saver).invoke({"chunks": ["alpha beta gamma", "delta epsilon", "zeta"]}, thread)
    saver.conn.close()

    reopened = open_saver(path)
    history = list(build_map_reduce(reopened).get_state_history(thread))
    reopened.conn.close()
    assert [s.metadata["step"] for s in history] == [2, 1, 0, -1]  # newest first
    assert history[0].values["answer"] == result["answer"] == "3,2,1"
    assert history[1].next == ("combine",) and len(history[1].values["notes"]) == 3
    assert history[2].next == ("summarise", "summarise", "summarise")  # pending Sends are checkpointed


def test_time_travel_replay_and_fork_from_an_earlier_checkpoint(tmp_path: Path):
    saver = open_saver(tmp_path / "checkpoints.sqlite")
    graph = build_map_reduce(saver)
    thread = {"configurable": {"thread_id": "t1"}}
    assert graph.invoke({"chunks": ["alpha beta gamma", "delta epsilon"]}, thread)["answer"] == "3,2"
    before_combine = next(s for s in graph.get_state_history(thread) if s.next == ("combine",))

    replayed = graph.invoke(None, {"configurable": {**before_combine.config["configurable"], "separator": " | "}})
    assert replayed["answer"] == "3 | 2"  # only combine re-ran, with the new config

    fork = graph.update_state(before_combine.config, {"notes": [{"index": 9, "words": 7}]}, as_node="summarise")
    forked = graph.invoke(None, fork)
    assert forked["answer"] == "3,2,7"  # the update went through the operator.add reducer
    history = list(graph.get_state_history(thread))
    assert sum(1 for s in history if s.values.get("answer") == "3,2") == 1  # the original result is kept
    assert graph.get_state(thread).values["answer"] == "3,2,7"
    saver.conn.close()


def test_reducer_key_shared_with_a_subgraph_is_appended_twice():
    class Log(TypedDict):
        log: Annotated[list[str], operator.add]

    inner = StateGraph(Log)
    inner.add_node("work", lambda s: {"log": ["inner"]})
    inner.add_edge(START, "work")
    inner.add_edge("work", END)
    outer = StateGraph(Log)
    outer.add_node("first", lambda s: {"log": ["outer"]})
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "first")
    outer.add_edge("first", "inner")
    outer.add_edge("inner", END)
    assert outer.compile().invoke({"log": []})["log"] == ["outer", "outer", "inner"]


def test_subgraph_private_keys_stay_inside_and_config_reaches_its_nodes():
    class Child(TypedDict, total=False):
        question: str
        documents: list[str]
        hits: list[str]

    class Parent(TypedDict, total=False):
        question: str
        documents: list[str]

    def search(state: Child) -> Child:
        return {"hits": tokenize(state["question"])}

    def keep(state: Child, config: RunnableConfig) -> Child:
        return {"documents": state["hits"][: config["configurable"].get("top_k", 3)]}

    child = StateGraph(Child)
    child.add_node("search", search)
    child.add_node("keep", keep)
    child.add_edge(START, "search")
    child.add_edge("search", "keep")
    child.add_edge("keep", END)
    parent = StateGraph(Parent)
    parent.add_node("retrieval", child.compile())
    parent.add_edge(START, "retrieval")
    parent.add_edge("retrieval", END)
    graph = parent.compile()

    result = graph.invoke({"question": "parallel Send branches write state"}, {"configurable": {"top_k": 2}})
    assert result == {"question": "parallel Send branches write state", "documents": ["parallel", "send"]}


class In(TypedDict):
    question: str


class Out(TypedDict):
    answer: str


class Overall(In, Out, total=False):
    best: str


class Private(TypedDict):  # written by one node, read by the next, in no public schema
    terms: list[str]


def test_input_output_schemas_and_private_state_between_two_nodes():
    seen: dict[str, list[str]] = {}

    def plan(state: In) -> Private:
        return {"terms": tokenize(state["question"])}

    def search(state: Private) -> Overall:
        seen["search"] = sorted(state)
        return {"best": state["terms"][0]}

    def reply(state: Overall) -> Out:
        seen["reply"] = sorted(state)
        return {"answer": state["best"].upper()}

    builder = StateGraph(Overall, input_schema=In, output_schema=Out)
    for name, node in [("plan", plan), ("search", search), ("reply", reply)]:
        builder.add_node(name, node)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "search")
    builder.add_edge("search", "reply")
    builder.add_edge("reply", END)
    assert builder.compile().invoke({"question": "What is a reducer?"}) == {"answer": "REDUCER"}
    assert seen == {"search": ["terms"], "reply": ["best", "question"]}


def test_mermaid_needs_a_path_map_to_draw_send_targets():
    with_map = mermaid(build_map_reduce(path_map=True)).data
    without_map = mermaid(build_map_reduce(path_map=False)).data
    assert "__start__ -.-> summarise" in with_map and "__start__ -.-> combine" in with_map
    assert "-.-> summarise" not in without_map and "--> summarise" not in without_map  # drawn unreachable


def test_xray_draws_a_subgraph_invoked_inside_a_node_function():
    class Grader(TypedDict, total=False):
        passage: str
        verdict: str

    grader_builder = StateGraph(Grader)
    grader_builder.add_node("decide", lambda s: {"verdict": "keep" if s["passage"] else "drop"})
    grader_builder.add_edge(START, "decide")
    grader_builder.add_edge("decide", END)
    grader = grader_builder.compile()

    class Docs(TypedDict, total=False):
        passages: list[str]
        verdicts: list[str]

    def grade(state: Docs) -> Docs:
        return {"verdicts": [grader.invoke({"passage": p})["verdict"] for p in state["passages"]]}

    builder = StateGraph(Docs)
    builder.add_node("grade", grade)
    builder.add_edge(START, "grade")
    builder.add_edge("grade", END)
    graph = builder.compile()
    assert graph.invoke({"passages": ["text", ""]})["verdicts"] == ["keep", "drop"]
    assert "subgraph grade" in mermaid(graph, xray=True).data
    assert "subgraph grade" not in mermaid(graph).data
