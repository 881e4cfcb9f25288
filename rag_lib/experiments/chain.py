"""A do-nothing chain graph whose state grows each step: what LangGraph's durability modes are measured on."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Durability

MODES: tuple[Durability, ...] = ("exit", "async", "sync")


class ChainState(TypedDict):
    passages: Annotated[list[str], operator.add]  # grows by one text per step


def chain_graph(steps: int, chars: int) -> StateGraph:
    """`steps` nodes in a chain, each adding one text of `chars` characters to the state (not compiled)."""
    graph = StateGraph(ChainState)
    text = "x" * chars
    names = [f"step_{i}" for i in range(steps)]
    for name in names:
        graph.add_node(name, lambda state, text=text: {"passages": [text]})
    for before, after in zip([START, *names], [*names, END]):
        graph.add_edge(before, after)
    return graph
