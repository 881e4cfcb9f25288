"""Notebook display helpers that work offline."""

from __future__ import annotations

from IPython.display import Markdown
from langgraph.graph.state import CompiledStateGraph


def mermaid(graph: CompiledStateGraph, xray: bool = False) -> Markdown:
    """The graph as a Mermaid diagram in Markdown: JupyterLab (>= 4.1) draws it with no web service."""
    return Markdown(f"```mermaid\n{graph.get_graph(xray=xray).draw_mermaid()}\n```")
