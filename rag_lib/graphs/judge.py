"""Recursive RAG with an LLM judge: retrieve -> judge every chunk (Send fan-out) -> answer, or ask follow-ups.

Each chunk scores 0 (below the cosine cutoff, decided without the model; or unrelated, or an unusable reply),
1 (related, a fact is missing: the judge writes a follow-up question) or 2 (it answers: the judge's copy of the
answer must be in the chunk, else the 2 is lowered to 1). With no 2, each follow-up runs this same graph on its own
thread (`<parent thread>/<chunk index>`) and its answer is folded into its chunk before the final answer.
`max_depth` bounds the follow-up levels and `max_llm_calls` the model calls of the whole tree. The retriever, model
and limits come with each run in a `JudgeContext`.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Literal, NotRequired, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send
from pydantic import BaseModel, Field, ValidationInfo, field_validator

from rag_lib.graphs.rag import answer_messages, check_mode, extractive_answer, fresh_run, refusal_for
from rag_lib.matching import grounded
from rag_lib.prompts import JUDGE_PROMPT, JUDGE_REQUEST, fit_prompt, passage_block
from rag_lib.structured import StructuredOutputError, structured_output
from rag_lib.text import tokenize


class Judgment(BaseModel):
    """Grade how much of the answer one passage gives."""

    score: Literal[0, 1, 2] = Field(description="0 unrelated, 1 related but the answer is missing, "
                                    "2 the passage states the answer")
    answer: str = Field(default="", max_length=60,
                        description="if 2: the answer in a few words, copied from the passage")
    follow_up: str = Field(default="", max_length=100, description="if 1: a short question for the missing fact")

    @field_validator("answer", "follow_up", mode="before")
    @classmethod
    def cut_to_limit(cls, value: object, info: ValidationInfo) -> object:
        """Cut an over-long text to its limit rather than lose the score (JSON mode does not enforce max_length)."""
        limit = cls.model_fields[info.field_name].metadata[0].max_length
        return value[:limit] if isinstance(value, str) else value


@dataclass(frozen=True)
class JudgeContext:
    """The retriever, the model and the limits of one run; its follow-ups get the same context."""

    retriever: BaseRetriever  # finds the chunks for the question and for every follow-up
    llm: BaseChatModel  # judges the chunks (structured output) and writes the answers
    max_depth: int = 2  # levels of follow-up questions below the user's question
    max_llm_calls: int = 12  # model calls for the whole tree: the root run's budget
    min_similarity: float | None = None  # chunks below this cosine score 0 without a model call (None: no cutoff)
    answer_tokens: int = 80  # the longest answer `generate` may write, in tokens
    mode: str = "generative"  # or "extractive": a checked copy of the answering span; or "clause" (rag.MODES)

    def __post_init__(self) -> None:
        check_mode(self.mode)
        if self.max_llm_calls < 1 or self.max_depth < 0:
            raise ValueError(f"max_llm_calls={self.max_llm_calls}, max_depth={self.max_depth}: need max_llm_calls >= 1 "
                             "and max_depth >= 0")


class JudgeState(TypedDict, total=False):
    """What one judge run reads and writes: each key with the node that writes it."""
    question: str  # the input: the user's question, or a follow-up when `explore` started this run
    depth: int  # 0 for the user's question, +1 per follow-up level (input for a follow-up, else set by retrieve)
    budget: int  # model calls this run may make, its children's included (input, else max_llm_calls by retrieve)
    documents: list[Document]  # the retrieved chunks, written by retrieve
    judgments: Annotated[list[dict], operator.add]  # one record per chunk, appended by the parallel judges
    plan: list[dict]  # which score-1 chunks get explored, with their thread and budget, or why not (by plan)
    sub_answers: Annotated[list[dict], operator.add]  # one per explored chunk (answer, passages read), by the children
    llm_calls: Annotated[int, operator.add]  # calls made by this run and, added up, by its children
    answer: str  # the final answer, written by generate or refuse


# what one question writes after `retrieve`, with its empty value; retrieve empties what the thread's last run left
PER_RUN = {"judgments": Overwrite([]), "plan": [], "sub_answers": Overwrite([]), "llm_calls": Overwrite(0),
           "answer": ""}


class JudgeTask(TypedDict):
    """What one parallel `judge` task receives through Send (from fan_out)."""

    question: str  # the question this run answers
    index: int  # the chunk's rank in the retrieved list
    document: Document  # the chunk to grade
    may_call: bool  # False: the budget is spent, record the chunk unjudged
    cutoff_waived: NotRequired[bool]  # True: a follow-up's best chunk, judged even below the cutoff


class ExploreTask(TypedDict):
    """What one parallel `explore` task receives through Send (from route, out of the plan)."""

    index: int  # the score-1 chunk whose follow-up this is
    question: str  # the follow-up question
    thread_id: str  # the child run's thread: `<parent thread>/<index>`
    depth: int  # the child run's depth (parent's + 1)
    budget: int  # model calls the child run may make, its own children's included


def checked(judgment: Judgment, passage: str, question: str) -> tuple[int, str, str]:
    """Score, follow-up and a note after the checks against a lenient judge: a 2 needs its answer in the
    passage, and only a score of 1 keeps a follow-up, which must be a new question."""
    score, note = judgment.score, ""
    if score == 2 and not grounded(judgment.answer, passage, question):
        score, note = 1, f"2 lowered to 1: answer {judgment.answer!r} brings no fact from the chunk"
    follow_up = judgment.follow_up.strip() if score == 1 else ""
    if follow_up and (not follow_up.endswith(("?", "？")) or set(tokenize(follow_up)) == set(tokenize(question))):
        dropped = f"follow-up {judgment.follow_up!r} dropped: not a new question"
        follow_up, note = "", "; ".join(filter(None, [note, dropped]))
    return score, follow_up, note


def judge_messages(question: str, passage: str, source: str) -> list:
    """The judge's messages, fitted to the window: question before passage, so sibling judges share a prefix."""

    def prompt(question: str, documents: list[Document]) -> list:
        block = passage_block(1, documents[0].page_content, Path(source).name) if documents else ""
        return [SystemMessage(JUDGE_PROMPT), HumanMessage(JUDGE_REQUEST.format(question=question, passage=block))]

    return prompt(*fit_prompt(None, prompt, question, [Document(page_content=passage)]))


def kept_records(state: JudgeState) -> list[dict]:
    """The chunk records not scored 0 (1, 2 and unjudged), in retrieval order."""
    return [r for r in sorted(state["judgments"], key=lambda r: r["index"]) if r["score"] != 0]


def answer_documents(state: JudgeState, folded: bool = True) -> list[Document]:
    """What the answer is written from: the chunks not scored 0, each with its follow-up's answer appended (unless
    not `folded`: an extractive answer is copied from sources only), then the passages each follow-up read, once."""
    subs = {s["index"]: s for s in state.get("sub_answers", [])}
    kept, documents = kept_records(state), []
    for r in kept:
        sub = subs.get(r["index"]) if folded else None
        fold = f"\n(Follow-up: {sub['question']} -> {sub['answer']})" if sub and sub["answered"] else ""
        documents.append(Document(r["text"] + fold, metadata={"source": r["source"]}))
    seen = {r["text"] for r in kept}
    for sub in sorted(subs.values(), key=lambda s: s["index"]):
        for passage in sub.get("passages", []):
            if passage["text"] not in seen:
                seen.add(passage["text"])
                documents.append(Document(passage["text"], metadata={"source": passage["source"]}))
    return documents


def retrieve(state: JudgeState, runtime: Runtime[JudgeContext]) -> dict:
    """The chunks for the question, and the run's depth and budget; empties what the thread's last run left."""
    if runtime.context is None:
        raise ValueError("the judge graph was run without its context: pass context=JudgeContext(retriever=..., "
                         "llm=...) to invoke or stream")
    return fresh_run(state, PER_RUN) | {"documents": runtime.context.retriever.invoke(state["question"]),
                                        "depth": state.get("depth", 0),
                                        "budget": state.get("budget", runtime.context.max_llm_calls)}


def below_cutoff(similarity: float | None, min_similarity: float | None) -> bool:
    """True when a chunk's cosine similarity is known and under the cutoff: it scores 0 without the model."""
    return min_similarity is not None and similarity is not None and similarity < min_similarity


def waived_index(state: JudgeState) -> int | None:
    """The chunk judged even below the cutoff: a follow-up's most similar one (a short question scores low)."""
    if state["depth"] == 0 or not state["documents"]:
        return None
    similarities = [d.metadata.get("similarity") or 0.0 for d in state["documents"]]
    return similarities.index(max(similarities))


def fan_out(state: JudgeState, runtime: Runtime[JudgeContext]) -> list[Send] | Literal["refuse"]:
    """One `judge` task per chunk; the chunks past the budget (one call stays for the answer) go unjudged."""
    if not state["documents"]:
        return "refuse"
    slots = state["budget"] - 1  # one call stays for the answer
    waived, tasks = waived_index(state), []
    for index, document in enumerate(state["documents"]):
        relevant = index == waived or not below_cutoff(document.metadata.get("similarity"),
                                                       runtime.context.min_similarity)
        may_call = relevant and slots > 0
        tasks.append(Send("judge", JudgeTask(question=state["question"], index=index, document=document,
                                             may_call=may_call, cutoff_waived=index == waived)))
        slots -= relevant
    return tasks


def judge(task: JudgeTask, runtime: Runtime[JudgeContext]) -> dict:
    """One chunk's record: 0 below the cutoff without the model, else the model's score after `checked`."""
    document = task["document"]
    record = {"index": task["index"], "source": document.metadata.get("source", "?"), "text": document.page_content,
              "similarity": document.metadata.get("similarity"), "llm_score": None, "score": None, "answer": "",
              "follow_up": "", "note": ""}
    similarity, min_similarity = record["similarity"], runtime.context.min_similarity
    if below_cutoff(similarity, min_similarity):
        if not task.get("cutoff_waived"):
            record |= {"score": 0, "note": f"similarity {similarity:.3f} < {min_similarity}: 0 without the model"}
            return {"judgments": [record]}
        record["note"] = f"similarity {similarity:.3f} < {min_similarity}: judged anyway, a follow-up's best chunk"
    if not task["may_call"]:
        record["note"] = "not judged: LLM-call budget spent"
        return {"judgments": [record]}
    try:
        judgment: Judgment = structured_output(runtime.context.llm, Judgment).invoke(
            judge_messages(task["question"], document.page_content, record["source"]))
    except StructuredOutputError as error:  # an unreadable verdict: score 0, no follow-up
        record |= {"score": 0, "note": f"0: the judge's reply was unusable ({error})"}
        return {"judgments": [record], "llm_calls": 1}
    score, follow_up, note = checked(judgment, document.page_content, task["question"])
    record |= {"llm_score": judgment.score, "score": score, "answer": judgment.answer.strip(),
               "follow_up": follow_up, "note": "; ".join(filter(None, [record["note"], note]))}
    return {"judgments": [record], "llm_calls": 1}


def plan(state: JudgeState, runtime: Runtime[JudgeContext], config: RunnableConfig) -> dict:
    """Which score-1 chunks get a follow-up run (thread, depth, budget), or why not (a 2, depth, budget)."""
    max_depth = runtime.context.max_depth
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
    """One `explore` task per planned follow-up; else answer, or refuse when every chunk scored 0."""
    tasks = [Send("explore", ExploreTask(**{k: e[k] for k in ExploreTask.__annotations__}))
             for e in state["plan"] if e["explore"]]
    return tasks or ("generate" if any(r["score"] != 0 for r in state["judgments"]) else "refuse")


def explore(task: ExploreTask, runtime: Runtime[JudgeContext], *,
            checkpointer: BaseCheckpointSaver | None = None) -> dict:
    """Build this graph again and run it on the follow-up's thread (same context, checkpointer); report its answer."""
    child = build_judge_graph(checkpointer).invoke(
        {"question": task["question"], "depth": task["depth"], "budget": task["budget"]},
        {"configurable": {"thread_id": task["thread_id"]}}, context=runtime.context)
    answered = bool(child["answer"]) and child["answer"] != refusal_for(task["question"])
    passages = [{"text": d.page_content, "source": d.metadata["source"]}
                for d in answer_documents(child, folded=runtime.context.mode == "generative")]
    sub = {"index": task["index"], "thread_id": task["thread_id"], "question": task["question"],
           "answer": child["answer"], "answered": answered, "passages": passages,
           "llm_calls": child.get("llm_calls", 0)}
    return {"sub_answers": [sub], "llm_calls": sub["llm_calls"]}


def generate(state: JudgeState, runtime: Runtime[JudgeContext]) -> dict:
    """The answer from `answer_documents`; extractive mode: rag.extractive_answer from the score-2 copies."""
    llm, mode = runtime.context.llm, runtime.context.mode
    extractive, clause = mode != "generative", mode == "clause"
    documents = answer_documents(state, folded=not extractive)
    if extractive:
        copies = [record["answer"] for record in kept_records(state) if record["score"] == 2]
        calls_left = state["budget"] - state.get("llm_calls", 0)
        answer, _, calls = extractive_answer(state["question"], documents, llm, copies, calls_left, clause)
        return {"answer": answer, "llm_calls": calls}
    writer = llm.bind(max_tokens=runtime.context.answer_tokens)
    reply = writer.invoke(answer_messages(state["question"], documents, llm))
    return {"answer": str(reply.content).strip(), "llm_calls": 1}


def refuse(state: JudgeState) -> dict:
    """The fixed "not in the documents" reply, without a model call."""
    return {"answer": refusal_for(state["question"])}


def build_judge_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """retrieve -> judge (one task per chunk) -> plan -> explore (the same graph, per follow-up) -> generate | refuse;
    invoke with {"question": q}, a thread_id in config and context=JudgeContext(retriever=r, llm=llm)."""
    builder = StateGraph(JudgeState, context_schema=JudgeContext)
    builder.add_node("retrieve", retrieve)
    builder.add_node("judge", judge)
    builder.add_node("plan", plan)
    builder.add_node("explore", partial(explore, checkpointer=checkpointer), input_schema=ExploreTask)
    builder.add_node("generate", generate)
    builder.add_node("refuse", refuse)
    builder.add_edge(START, "retrieve")
    builder.add_conditional_edges("retrieve", fan_out, ["judge", "refuse"])
    builder.add_edge("judge", "plan")
    builder.add_conditional_edges("plan", route, ["explore", "generate", "refuse"])
    builder.add_edge("explore", "generate")
    builder.add_edge("generate", END)
    builder.add_edge("refuse", END)
    return builder.compile(checkpointer=checkpointer)
