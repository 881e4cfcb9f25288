"""The judge graph's search tree read back from its checkpoints: one node per judged chunk, one tree per thread."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from rag_lib.graphs.checkpoints import sqlite_checkpointer
from rag_lib.graphs.judge import build_judge_graph


@dataclass
class ChunkNode:
    """One judged chunk of a run, and the run its follow-up question started (if any)."""

    index: int
    source: str
    text: str
    similarity: float | None
    llm_score: int | None  # what the model said (None: not asked)
    score: int | None  # what the graph used (None: not judged, budget spent)
    answer: str
    follow_up: str
    note: str  # why the score differs from the model's, or why the follow-up was not explored
    sub_answer: str = ""
    child: Tree | None = None


@dataclass
class Tree:
    """One run of the judge graph (one thread): its question, chunks, answer and cost."""

    thread_id: str
    depth: int
    question: str
    answer: str
    budget: int
    llm_calls: int
    checkpoints: int  # how many checkpoints the thread's history holds
    chunks: list[ChunkNode] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict) -> Tree:
        """The inverse of dataclasses.asdict (for a tree sent as JSON from another process)."""
        chunks = [ChunkNode(**{**c, "child": c["child"] and cls.from_dict(c["child"])}) for c in data["chunks"]]
        return cls(**{**data, "chunks": chunks})


def rebuild_tree(checkpointer_or_db_path: BaseCheckpointSaver | str | Path, root_thread_id: str) -> Tree:
    """The search tree read back from checkpoints alone (`get_state`, `get_state_history` of each thread)."""
    if isinstance(checkpointer_or_db_path, BaseCheckpointSaver):
        return _thread_tree(build_judge_graph(checkpointer_or_db_path), root_thread_id)
    if not Path(checkpointer_or_db_path).is_file():
        raise FileNotFoundError(f"{checkpointer_or_db_path}: no checkpoint database here; run the judge graph with "
                                "this SQLite file first")
    saver = sqlite_checkpointer(checkpointer_or_db_path)
    try:
        return _thread_tree(build_judge_graph(saver), root_thread_id)
    finally:
        saver.conn.close()


def _thread_tree(graph: CompiledStateGraph, thread_id: str) -> Tree:
    """One thread's run from its latest state snapshot and its history, with its child threads below."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    if not (history := list(graph.get_state_history(config))):
        raise KeyError(f"thread {thread_id!r} has no checkpoint in this database")
    values: dict[str, Any] = graph.get_state(config).values
    plan = {e["index"]: e for e in values.get("plan", [])}
    subs = {s["index"]: s for s in values.get("sub_answers", [])}
    chunks = []
    for record in sorted(values.get("judgments", []), key=lambda r: r["index"]):
        node = ChunkNode(**record)
        entry, sub = plan.get(node.index), subs.get(node.index)
        if entry and entry.get("why"):
            node.note = "; ".join(filter(None, [node.note, entry["why"]]))
        if sub:
            node.sub_answer, node.child = sub["answer"], _thread_tree(graph, sub["thread_id"])
        chunks.append(node)
    return Tree(thread_id=thread_id, depth=values.get("depth", 0), question=values.get("question", ""),
                answer=values.get("answer", ""), budget=values.get("budget", 0), llm_calls=values.get("llm_calls", 0),
                checkpoints=len(history), chunks=chunks)


def tree_rows(tree: Tree) -> list[dict]:
    """The tree flattened to table rows, depth first (one row per chunk)."""
    rows = []
    for chunk in tree.chunks:
        similarity = None if chunk.similarity is None else round(chunk.similarity, 3)
        rows.append({"thread": tree.thread_id, "depth": tree.depth, "question": tree.question,
                     "chunk": f"#{chunk.index} {Path(chunk.source).name}", "similarity": similarity,
                     "llm score": chunk.llm_score, "score": chunk.score, "follow-up": chunk.follow_up,
                     "sub-answer": chunk.sub_answer, "note": chunk.note})
        if chunk.child:
            rows.extend(tree_rows(chunk.child))
    return rows
