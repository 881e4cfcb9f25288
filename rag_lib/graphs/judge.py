"""Recursive RAG with an LLM judge: retrieve -> judge every chunk (Send fan-out) -> answer, or ask follow-ups.

Every retrieved chunk gets one score on one scale:
- 0: useless (below the cosine cutoff, decided without the model; or the model says unrelated, or its reply is
  unusable);
- 1: relevant but incomplete: the judge also writes a follow-up question for the missing fact;
- 2: answers the question: the judge copies the answer, and the copy must be found in the chunk.

If some chunk scores 2 the graph answers at once. Otherwise each chunk scored 1 with a follow-up question
is explored by running THIS SAME graph on the follow-up, on its own thread (`<parent thread>/<chunk index>`),
and the sub-answer is folded into that chunk before the final answer is written.

Bounds: `max_depth` levels of follow-ups and `max_llm_calls` model calls for the whole tree. A run gets a
budget, keeps one call for its own answer, judges at most `budget - 1` chunks, and splits what is left among
its children; each child reports the calls it made (`llm_calls`), so the total never exceeds the root budget.
State changes only through returned updates and reducers. Parallel judge calls on the local model are safe:
`rag_lib.models` serialises them with a lock.

Measured (notebook 09): the local 1.5B judge is lenient, it gives 2 to title-only or off-topic chunks. So
0 comes from the calibrated cosine cutoff, and a 2 whose copied answer is not in the chunk (or only repeats
the question) is lowered to 1. Every checkpoint goes to the checkpointer (SQLite in the notebook), and
`rebuild_tree` reads the whole search tree back from the root thread and its child threads with
`get_state` / `get_state_history` of `checkpoint_reader`, the same graph without retriever or model.
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Overwrite, Send
from pydantic import BaseModel, Field, ValidationInfo, field_validator

from rag_lib.graphs.rag import answer_messages, refusal_for
from rag_lib.models import StructuredOutputError, structured_output
from rag_lib.prompts import PASSAGE_RULE, fit_prompt, passage_block
from rag_lib.text import tokenize

JUDGE_PROMPT = (
    "You grade one passage for a question.\n"
    "2 = the passage states the answer: copy the answer, in a few words, into answer.\n"
    "1 = the passage is on the topic but the answer is not in it: write follow_up, a short question for the "
    "missing fact, naming what the passage is about.\n"
    "0 = the passage is about something else.\n"
    'Examples with the passage "Lucene ranks documents with BM25 by default.":\n'
    'question "What does Lucene rank with by default?" -> score 2, answer "BM25"\n'
    'question "Who wrote the paper behind the default ranking of Lucene?" -> score 1, '
    'follow_up "Who wrote the BM25 paper?"\n'
    + PASSAGE_RULE
)


class Judgment(BaseModel):
    """Grade how much of the answer one passage gives."""

    score: Literal[0, 1, 2] = Field(
        description="0 unrelated, 1 related but the answer is missing, 2 the passage states the answer"
    )
    answer: str = Field(
        default="", max_length=60, description="if 2: the answer in a few words, copied from the passage"
    )
    follow_up: str = Field(default="", max_length=100, description="if 1: a short question for the missing fact")

    @field_validator("answer", "follow_up", mode="before")
    @classmethod
    def cut_to_limit(cls, value: object, info: ValidationInfo) -> object:
        """An over-long answer or follow-up is cut to its limit, not thrown away with the score: llama.cpp's grammar
        enforces the limit, JSON mode on a server does not."""
        limit = cls.model_fields[info.field_name].metadata[0].max_length
        return value[:limit] if isinstance(value, str) else value


class JudgeState(TypedDict, total=False):
    question: str
    depth: int  # 0 for the user's question, +1 per follow-up level
    budget: int  # model calls this run may make, its children's included
    documents: list[Document]
    judgments: Annotated[list[dict], operator.add]  # one record per chunk, appended by the parallel judges
    plan: list[dict]  # which score-1 chunks get explored, with their thread and budget, or why not
    sub_answers: Annotated[list[dict], operator.add]  # one per explored chunk, appended by the parallel children
    llm_calls: Annotated[int, operator.add]  # calls made by this run and, added up, by its children
    answer: str


class JudgeTask(TypedDict):
    """What one parallel `judge` task receives through Send."""

    question: str
    index: int
    document: Document
    may_call: bool  # False: the budget is spent, record the chunk unjudged


class ExploreTask(TypedDict):
    """What one parallel `explore` task receives through Send."""

    index: int
    question: str
    thread_id: str
    depth: int
    budget: int


def grounded(answer: str, passage: str, question: str) -> bool:
    """True when most words of `answer` are in the passage and one of those is not in the question: the
    answer brings a fact from the passage (an invented number, or the question said back, fails)."""
    words = set(tokenize(answer))
    found = words & set(tokenize(passage))
    return 0 < len(words) <= 2 * len(found) and bool(found - set(tokenize(question)))


def same_question(a: str, b: str) -> bool:
    """True when two questions have the same words (a follow-up that repeats the question finds nothing new)."""
    return set(tokenize(a)) == set(tokenize(b))


def checked(judgment: Judgment, passage: str, question: str) -> tuple[int, str, str]:
    """Score, follow-up and a note after the checks against a lenient judge: a 2 needs its answer in the
    passage, and only a score of 1 keeps a follow-up, which must be a new question."""
    score, note = judgment.score, ""
    if score == 2 and not grounded(judgment.answer, passage, question):
        score, note = 1, f"2 lowered to 1: answer {judgment.answer!r} brings no fact from the chunk"
    follow_up = judgment.follow_up.strip() if score == 1 else ""
    if follow_up and (not follow_up.endswith(("?", "？")) or same_question(follow_up, question)):
        dropped = f"follow-up {judgment.follow_up!r} dropped: not a new question"
        follow_up, note = "", "; ".join(filter(None, [note, dropped]))
    return score, follow_up, note


def judge_messages(question: str, passage: str, source: str) -> list:
    """Question before passage, so sibling judges share a prompt prefix (llama.cpp reuses it); the passage fenced
    as data and cut, like the question, to fit the model's window (rag_lib.prompts)."""

    def prompt(question: str, documents: list[Document]) -> list:
        block = passage_block(1, documents[0].page_content, Path(source).name) if documents else ""
        return [SystemMessage(JUDGE_PROMPT), HumanMessage(f"Question: {question}\nPassage:\n{block}")]

    return prompt(*fit_prompt(None, prompt, question, [Document(page_content=passage)]))


def fold(record: dict, sub: dict | None) -> str:
    """A chunk's text for the final prompt, with its follow-up's answer appended when there is one."""
    if not sub or not sub["answered"]:
        return record["text"]
    return f"{record['text']}\n(Follow-up: {sub['question']} -> {sub['answer']})"


def build_judge_graph(
    retriever: BaseRetriever,
    llm: BaseChatModel,
    checkpointer: BaseCheckpointSaver | None = None,
    max_depth: int = 2,
    max_llm_calls: int = 12,
    min_similarity: float | None = None,
    answer_tokens: int = 80,
) -> CompiledStateGraph:
    """retrieve -> judge (one task per chunk) -> plan -> explore (the same graph, per follow-up) -> generate | refuse.

    Invoke with {"question": ...} and a thread_id; `budget` and `depth` default to max_llm_calls and 0.
    Chunks whose `similarity` metadata is below `min_similarity` score 0 without a model call.
    """
    if max_llm_calls < 1 or max_depth < 0:
        raise ValueError(
            f"max_llm_calls={max_llm_calls}, max_depth={max_depth}: need max_llm_calls >= 1 and max_depth >= 0"
        )
    judge_llm = structured_output(llm, Judgment)
    writer = llm.bind(max_tokens=answer_tokens)

    def retrieve(state: JudgeState) -> dict:
        # Overwrite: a thread asked a second question starts from clean lists (history keeps the old run).
        return {
            "documents": retriever.invoke(state["question"]),
            "depth": state.get("depth", 0),
            "budget": state.get("budget", max_llm_calls),
            "judgments": Overwrite([]),
            "sub_answers": Overwrite([]),
            "llm_calls": Overwrite(0),
            "plan": [],
            "answer": "",
        }

    def fan_out(state: JudgeState) -> list[Send] | Literal["refuse"]:
        if not state["documents"]:
            return "refuse"
        slots = state["budget"] - 1  # one call stays for the answer
        tasks = []
        for index, document in enumerate(state["documents"]):
            similarity = document.metadata.get("similarity")
            relevant = min_similarity is None or similarity is None or similarity >= min_similarity
            may_call = relevant and slots > 0
            tasks.append(Send("judge", JudgeTask(question=state["question"], index=index, document=document,
                                                 may_call=may_call)))
            slots -= relevant
        return tasks

    def judge(task: JudgeTask) -> dict:
        document = task["document"]
        record = {
            "index": task["index"],
            "source": document.metadata.get("source", "?"),
            "text": document.page_content,
            "similarity": document.metadata.get("similarity"),
            "llm_score": None,
            "score": None,
            "answer": "",
            "follow_up": "",
            "note": "",
        }
        similarity = record["similarity"]
        if min_similarity is not None and similarity is not None and similarity < min_similarity:
            record |= {"score": 0, "note": f"similarity {similarity:.3f} < {min_similarity}: 0 without the model"}
            return {"judgments": [record]}
        if not task["may_call"]:
            record["note"] = "not judged: LLM-call budget spent"
            return {"judgments": [record]}
        try:
            judgment: Judgment = judge_llm.invoke(judge_messages(task["question"], document.page_content,
                                                                 record["source"]))
        except StructuredOutputError as error:  # an unreadable verdict: score 0, no follow-up
            record |= {"score": 0, "note": f"0: the judge's reply was unusable ({error})"}
            return {"judgments": [record], "llm_calls": 1}
        score, follow_up, note = checked(judgment, document.page_content, task["question"])
        record |= {"llm_score": judgment.score, "score": score, "answer": judgment.answer.strip(),
                   "follow_up": follow_up, "note": note}
        return {"judgments": [record], "llm_calls": 1}

    def plan(state: JudgeState, config: RunnableConfig) -> dict:
        records = sorted(state["judgments"], key=lambda r: r["index"])
        if any(r["score"] == 2 for r in records):
            return {"plan": [{"index": r["index"], "explore": False, "why": "a chunk scores 2: no follow-up needed"}
                             for r in records if r["score"] == 1]}
        parent = config.get("configurable", {}).get("thread_id", "root")
        spare = state["budget"] - state.get("llm_calls", 0) - 1  # what is left after the judges and our answer
        wanted = [r for r in records if r["score"] == 1]
        explorable = [r for r in wanted if r["follow_up"]]
        children = min(len(explorable), spare // 2) if state["depth"] < max_depth else 0  # a child needs >= 2 calls
        entries = []
        for r in wanted:
            entry = {"index": r["index"], "explore": False}
            if r not in explorable:
                entry["why"] = "no follow-up question"
            elif state["depth"] >= max_depth:
                entry["why"] = f"depth limit {max_depth} reached"
            elif explorable.index(r) >= children:
                entry["why"] = f"LLM-call budget: {spare} spare calls, a follow-up needs 2"
            else:
                entry |= {"explore": True, "question": r["follow_up"], "thread_id": f"{parent}/{r['index']}",
                          "depth": state["depth"] + 1, "budget": spare // children, "why": ""}
            entries.append(entry)
        return {"plan": entries}

    def route(state: JudgeState) -> list[Send] | Literal["generate", "refuse"]:
        tasks = [Send("explore", ExploreTask(**{k: e[k] for k in ExploreTask.__annotations__}))
                 for e in state["plan"] if e["explore"]]
        if tasks:
            return tasks
        return "generate" if any(r["score"] != 0 for r in state["judgments"]) else "refuse"

    def explore(task: ExploreTask) -> dict:
        child = graph.invoke(
            {"question": task["question"], "depth": task["depth"], "budget": task["budget"]},
            {"configurable": {"thread_id": task["thread_id"]}},
        )
        answered = bool(child["answer"]) and child["answer"] != refusal_for(task["question"])
        sub = {"index": task["index"], "thread_id": task["thread_id"], "question": task["question"],
               "answer": child["answer"], "answered": answered, "llm_calls": child.get("llm_calls", 0)}
        return {"sub_answers": [sub], "llm_calls": sub["llm_calls"]}

    def generate(state: JudgeState) -> dict:
        subs = {s["index"]: s for s in state.get("sub_answers", [])}
        kept = [r for r in sorted(state["judgments"], key=lambda r: r["index"]) if r["score"] != 0]  # 1, 2, unjudged
        documents = [Document(fold(r, subs.get(r["index"])), metadata={"source": r["source"]}) for r in kept]
        reply = writer.invoke(answer_messages(state["question"], documents, llm))
        return {"answer": str(reply.content).strip(), "llm_calls": 1}

    def refuse(state: JudgeState) -> dict:
        return {"answer": refusal_for(state["question"])}

    nodes = {"retrieve": retrieve, "judge": judge, "plan": plan, "explore": explore, "generate": generate,
             "refuse": refuse}
    graph = _wire(nodes, fan_out, route, checkpointer)  # `explore` runs this same graph on each follow-up
    return graph


def _wire(nodes: dict[str, Callable], fan_out: Callable, route: Callable,
          checkpointer: BaseCheckpointSaver | None) -> CompiledStateGraph:
    """The judge graph's state schema, nodes and edges around the given functions (one shape for runner and reader)."""
    builder = StateGraph(JudgeState)
    for name, action in nodes.items():
        builder.add_node(name, action)
    builder.add_edge(START, "retrieve")
    builder.add_conditional_edges("retrieve", fan_out, ["judge", "refuse"])
    builder.add_edge("judge", "plan")
    builder.add_conditional_edges("plan", route, ["explore", "generate", "refuse"])
    builder.add_edge("explore", "generate")
    builder.add_edge("generate", END)
    builder.add_edge("refuse", END)
    return builder.compile(checkpointer=checkpointer)


def _read_only(_: Any) -> dict:
    """Every node and router of the reader graph: it only reads checkpoints, running it is a mistake."""
    raise RuntimeError("this graph only reads judge checkpoints; build_judge_graph makes one that runs")


def checkpoint_reader(checkpointer: BaseCheckpointSaver) -> CompiledStateGraph:
    """The judge graph without retriever or model, for `get_state` / `get_state_history` on saved threads."""
    names = ("retrieve", "judge", "plan", "explore", "generate", "refuse")
    return _wire(dict.fromkeys(names, _read_only), _read_only, _read_only, checkpointer)


def sqlite_checkpointer(path: str | Path) -> SqliteSaver:
    """A SqliteSaver on a file; the connection may be used from LangGraph's worker threads (the saver locks)."""
    return SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))


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
    """Read the search tree back from checkpoints alone, through `get_state` and `get_state_history` of each
    thread, following each explored chunk to its child thread."""
    if isinstance(checkpointer_or_db_path, BaseCheckpointSaver):
        return _thread_tree(checkpoint_reader(checkpointer_or_db_path), root_thread_id)
    if not Path(checkpointer_or_db_path).is_file():
        raise FileNotFoundError(
            f"{checkpointer_or_db_path}: no checkpoint database here; run the judge graph with this SQLite file first"
        )
    saver = sqlite_checkpointer(checkpointer_or_db_path)
    try:
        return _thread_tree(checkpoint_reader(saver), root_thread_id)
    finally:
        saver.conn.close()


def _thread_tree(graph: CompiledStateGraph, thread_id: str) -> Tree:
    """One thread's run from its latest state snapshot and its history, with its child threads below."""
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    history = list(graph.get_state_history(config))
    if not history:
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
    return Tree(
        thread_id=thread_id,
        depth=values.get("depth", 0),
        question=values.get("question", ""),
        answer=values.get("answer", ""),
        budget=values.get("budget", 0),
        llm_calls=values.get("llm_calls", 0),
        checkpoints=len(history),
        chunks=chunks,
    )


def tree_rows(tree: Tree) -> list[dict]:
    """The tree flattened to table rows, depth first (one row per chunk)."""
    rows = []
    for chunk in tree.chunks:
        rows.append({
            "thread": tree.thread_id,
            "depth": tree.depth,
            "question": tree.question,
            "chunk": f"#{chunk.index} {Path(chunk.source).name}",
            "similarity": None if chunk.similarity is None else round(chunk.similarity, 3),
            "llm score": chunk.llm_score,
            "score": chunk.score,
            "follow-up": chunk.follow_up,
            "sub-answer": chunk.sub_answer,
            "note": chunk.note,
        })
        if chunk.child:
            rows.extend(tree_rows(chunk.child))
    return rows


def _label(text: str, width: int = 60) -> str:
    """Text safe inside a quoted Mermaid label: no quotes or brackets, one line, cut to `width`."""
    text = " ".join(text.split()).replace('"', "'").replace("[", "(").replace("]", ")")
    return text if len(text) <= width else text[: width - 1] + "…"


def draw_tree(tree: Tree) -> str:
    """Mermaid flowchart of the search tree: question -> chunks (score) -> follow-up question -> ...

    Show it in a notebook with IPython.display.Markdown(f"```mermaid\\n{text}\\n```")."""
    lines = ["flowchart TD"]

    def add(run: Tree, name: str) -> None:
        lines.append(f'    {name}["{_label(run.question)}<br/>depth {run.depth}, {run.llm_calls} LLM calls"]')
        lines.append(f'    {name}_a(["answer: {_label(run.answer)}"])')
        lines.append(f"    {name} --> {name}_a")
        for chunk in run.chunks:
            node = f"{name}_c{chunk.index}"
            score = "not judged" if chunk.score is None else f"score {chunk.score}"
            lines.append(f'    {node}["chunk {chunk.index}: {_label(Path(chunk.source).name, 40)}<br/>{score}"]')
            lines.append(f"    {name} --> {node}")
            if chunk.child:
                lines.append(f'    {node} -- "follow-up" --> {node}_q')
                add(chunk.child, f"{node}_q")

    add(tree, "q")
    return "\n".join(lines)
