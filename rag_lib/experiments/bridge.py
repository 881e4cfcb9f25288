"""A two-hop pipeline that copies the bridge: search, copy the entity the question needs next, search for it.

retrieve -> find_bridge -> search_bridge -> generate | refuse (no passage passed the cutoff)

A two-hop question describes something without naming it ("the fusion method RAG-Fusion uses") and asks a fact
about it, which a second passage holds. `retrieve` keeps the question's chunks above the similarity cutoff, as plain
RAG does. `find_bridge` asks the model to COPY that thing's name from them; the copy counts only if it occurs in a
passage (rag_lib.matching.occurs_in, the copy-and-verify check of CRAG's grader) and brings a word the question
lacks, else the graph answers from the first search alone. `search_bridge` searches the name alone, keeping its k
chunks (a name copied from a passage is on topic, and a short query scores low similarities), and unites both
searches (each chunk once, with its best score: notebook 05's union); `generate` copies the answer span as plain
RAG's extractive mode does. Two options change the answer step: `narrow` reads the bridge's chunks and the chunk
the bridge was copied from only (fewer chunks, but a wrong bridge loses the question's own), and `yes_no` answers a
yes/no question ("Is ...?", "……吗？", "是否……") with one constrained call that can only say yes or no (a copied span
never does). The retriever, model and options come with each run: context=BridgeContext(retriever=r, llm=llm,
min_similarity=..., narrow=..., yes_no=...).
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Annotated, Literal, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import BaseModel, Field

from rag_lib.experiments.advanced import union_search
from rag_lib.graphs.judge import below_cutoff
from rag_lib.graphs.rag import (
    checked_answer,
    cleaned_span,
    extractive_answer,
    format_context,
    fresh_run,
    refusal_for,
    salvaged_span,
)
from rag_lib.matching import occurs_in
from rag_lib.prompts import fit_prompt
from rag_lib.structured import StructuredOutputError, structured_output
from rag_lib.text import tokenize

BRIDGE_SYSTEM = (
    "The question describes something without naming it (a method, a model, a person, a product) and asks a fact "
    "about it. Copy from the passages, word for word, the name of that thing. Leave the entity empty if no passage "
    "names it. Do not answer the question.\n"
    "Example: question \"Where was the company that makes the Q7 drone founded?\", passage \"The Q7 drone is built "
    "by Aerolux.\" -> entity \"Aerolux\".")
BRIDGE_TOKENS = 48  # a name is short: the JSON reply with it fits in this
YES_NO_SYSTEM = (
    "Answer the question with yes or no, using only the passages. Compare the facts the passages give (numbers, "
    "dates, names) step by step in your head, then give only the verdict.")
YES_NO_START = re.compile(r"^(is|are|was|were|does|do|did|can|could|has|have|had|will|would|should)\b", re.IGNORECASE)
YES_NO_CHINESE = re.compile(r"(吗|是否|是不是|有没有)")


class Verdict(BaseModel):
    """The answer to a yes/no question."""

    verdict: Literal["yes", "no"] = Field(description="yes or no")


class BridgeEntity(BaseModel):
    """Copy the name of the thing the question describes without naming it."""

    # not called "name": a small model fills a field of that name with the tool's own name
    entity: str = Field(default="", max_length=60,
                        description="the exact words of a passage that name the thing, or an empty string")


@dataclass(frozen=True)
class BridgeContext:
    """What the nodes use but the state does not carry: the retriever (with its cutoff) and the chat model."""

    retriever: BaseRetriever  # searches the question, then the bridge (k chunks each, no cutoff of its own)
    llm: BaseChatModel  # copies the bridge (structured output) and the answer span
    min_similarity: float | None = None  # the question's chunks below this cosine are dropped (None: no cutoff)
    narrow: bool = False  # answer from the bridge's chunks and the chunk it was copied from, not the union
    yes_no: bool = False  # a yes/no question gets a yes or a no (one constrained call), not a copied span


class BridgeState(TypedDict, total=False):
    """What one bridge run reads and writes: each key with the node that writes it."""
    question: str  # the user's question: the input
    documents: list[Document]  # the question's chunks above the cutoff (retrieve), united with the bridge's
    # chunks (search_bridge)
    bridge: str  # the copied name, "" when none was copied or the copy was rejected (find_bridge)
    bridge_source: list[Document]  # the question's chunk that holds the bridge (find_bridge)
    bridge_note: str  # why there is no bridge (find_bridge)
    answer: str  # the copied span, cited (generate), or the fixed "not in the documents" reply (refuse)
    extracted: bool  # True when the answer is a span found in a passage, False after the fallback (generate)
    unsupported: bool  # True when the fallback answer failed the support check (generate)
    llm_calls: Annotated[int, operator.add]  # each node adds the calls it made


# what one question writes after `retrieve`, with its empty value; retrieve empties what the thread's last run left
PER_RUN = {"bridge": "", "bridge_source": [], "bridge_note": "", "answer": "", "extracted": None, "unsupported": False,
           "llm_calls": Overwrite(0)}


def bridge_prompt(question: str, documents: list[Document]) -> list:
    """The bridge copier's messages: the rules, then the question and the fenced, numbered passages."""
    return [SystemMessage(BRIDGE_SYSTEM), HumanMessage(f"Question: {question}\n\n{format_context(documents)}")]


def verified_bridge(copy: str, question: str, documents: list[Document]) -> tuple[str, str]:
    """(bridge, note): the copy (quotes and citation marks stripped) when a passage holds it and it brings a word the
    question lacks, else its longest piece that does (`salvaged_span`: a copy may write "(BAAI)" where the passage
    has "（BAAI）"); else "" and why it was rejected."""
    span = cleaned_span(copy)
    if not span:
        return "", "no bridge copied"
    if not any(occurs_in(span, d.page_content) for d in documents):
        piece = salvaged_span(span, question, documents)
        if not piece:
            return "", f"bridge {span!r} rejected: no passage holds it"
        span = piece
    if not set(tokenize(span)) - set(tokenize(question)):
        return "", f"bridge {span!r} rejected: it brings no word the question lacks"
    return span, ""


def is_yes_no(question: str) -> bool:
    """Whether a question asks for yes or no: an English question opening with an auxiliary verb, or a Chinese one
    with 吗, 是否, 是不是 or 有没有 in its last sentence."""
    # the last sentence only: "……逐块判断检索结果是否相关……。……提供多少积分？" asks a number
    last_clause = re.split(r"[。；：]", question.strip().rstrip("？?"))[-1]
    return bool(YES_NO_START.match(question.strip()) or YES_NO_CHINESE.search(last_clause))


def retrieve(state: BridgeState, runtime: Runtime[BridgeContext]) -> dict:
    """Search the index with the question, keeping the chunks at or above the cutoff; empties what the thread's
    last question left (PER_RUN)."""
    documents = [d for d in runtime.context.retriever.invoke(state["question"])
                 if not below_cutoff(d.metadata.get("similarity"), runtime.context.min_similarity)]
    return fresh_run(state, PER_RUN) | {"documents": documents}


def find_bridge(state: BridgeState, runtime: Runtime[BridgeContext]) -> dict:
    """One model call: the bridge name copied from the passages, kept only if `verified_bridge` accepts it."""
    llm = runtime.context.llm
    question, documents = fit_prompt(llm, bridge_prompt, state["question"], state["documents"])
    try:
        reply: BridgeEntity = structured_output(llm, BridgeEntity, max_tokens=BRIDGE_TOKENS).invoke(
            bridge_prompt(question, documents))
    except StructuredOutputError as error:  # an unreadable reply: no bridge, answer from the first search
        return {"bridge": "", "bridge_note": f"no bridge: the reply was unusable ({error})", "llm_calls": 1}
    bridge, note = verified_bridge(reply.entity, state["question"], state["documents"])
    source = [d for d in state["documents"] if bridge and occurs_in(bridge, d.page_content)][:1]
    return {"bridge": bridge, "bridge_source": source, "bridge_note": note, "llm_calls": 1}


def search_bridge(state: BridgeState, runtime: Runtime[BridgeContext]) -> dict:
    """Search the bridge alone and unite its k chunks with the question's (`union_search`: each chunk once, with its
    best score, best first); the question's own search is not run again. `narrow`: the bridge's k chunks, then the
    chunk the bridge was copied from, and nothing else."""
    question = state["question"]
    if runtime.context.narrow:
        hits = runtime.context.retriever.invoke(state["bridge"])
        return {"documents": hits + [d for d in state["bridge_source"] if d.id not in {h.id for h in hits}]}

    def search(query: str) -> list[Document]:
        return state["documents"] if query == question else runtime.context.retriever.invoke(query)

    return {"documents": union_search(search, [question, state["bridge"]])}


def generate(state: BridgeState, runtime: Runtime[BridgeContext]) -> dict:
    """The answer span copied from the passages and cited (rag.extractive_answer), else a short answer flagged by
    `checked_answer`, as plain RAG's extractive mode answers; with `yes_no`, a yes/no question's verdict."""
    if runtime.context.yes_no and is_yes_no(state["question"]):
        return verdict(state["question"], state["documents"], runtime.context.llm)
    answer, extracted, calls = extractive_answer(state["question"], state["documents"], runtime.context.llm, (), 2)
    answer, flag = (answer, {}) if extracted else checked_answer(answer, state["documents"])
    return {"answer": answer, "extracted": extracted, "llm_calls": calls} | flag


def verdict_prompt(question: str, documents: list[Document]) -> list:
    """The yes/no step's messages: the rule and the fenced, numbered passages, then the question."""
    return [SystemMessage(f"{YES_NO_SYSTEM}\n\nContext:\n{format_context(documents)}"), HumanMessage(question)]


def verdict(question: str, documents: list[Document], llm: BaseChatModel) -> dict:
    """One constrained call: "yes" or "no" from the passages; an unreadable reply leaves the question unanswered."""
    try:
        reply: Verdict = structured_output(llm, Verdict, max_tokens=BRIDGE_TOKENS).invoke(
            verdict_prompt(*fit_prompt(llm, verdict_prompt, question, documents)))
    except StructuredOutputError as error:
        return {"answer": f"(no verdict: {error})", "extracted": False, "llm_calls": 1}
    return {"answer": reply.verdict, "extracted": False, "llm_calls": 1}


def refuse(state: BridgeState) -> dict:
    """No passage passed the cutoff: the fixed reply in the question's language, no model call."""
    return {"answer": refusal_for(state["question"])}


def after_retrieval(state: BridgeState) -> Literal["find_bridge", "refuse"]:
    """Look for the bridge when a passage passed the cutoff, else refuse."""
    return "find_bridge" if state["documents"] else "refuse"


def after_bridge(state: BridgeState) -> Literal["search_bridge", "generate"]:
    """Search again with a verified bridge; without one, answer from the first search."""
    return "search_bridge" if state["bridge"] else "generate"


def build_bridge_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """retrieve -> find_bridge -> search_bridge -> generate | refuse. Invoke with {"question": q} and
    context=BridgeContext(retriever, llm); a checkpointer saves every step (then pass a thread_id in config)."""
    graph = StateGraph(BridgeState, context_schema=BridgeContext)
    graph.add_node("retrieve", retrieve)
    graph.add_node("find_bridge", find_bridge)
    graph.add_node("search_bridge", search_bridge)
    graph.add_node("generate", generate)
    graph.add_node("refuse", refuse)
    graph.add_edge(START, "retrieve")
    graph.add_conditional_edges("retrieve", after_retrieval, {"find_bridge": "find_bridge", "refuse": "refuse"})
    graph.add_conditional_edges("find_bridge", after_bridge, {"search_bridge": "search_bridge", "generate": "generate"})
    graph.add_edge("search_bridge", "generate")
    graph.add_edge("generate", END)
    graph.add_edge("refuse", END)
    return graph.compile(checkpointer=checkpointer)
