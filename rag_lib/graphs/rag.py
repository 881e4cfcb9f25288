"""Plain RAG as a small LangGraph graph: retrieve -> generate (numbered sources) | refuse.

The retriever drops passages below a calibrated similarity cutoff; with none left, `refuse` answers "not in the
documents" without the model. The retriever and model come with each run: context=RAGContext(retriever=r, llm=llm).
Answer modes: "generative" (a short cited answer, flagged by `checked_answer` when its words are not in the passages
it cites); "extractive" (a copied span kept only if a passage holds it, else a short generative answer); "clause"
(the checked copy widened to its clause of the passage).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from rag_lib.matching import CITATION, clause_holding, occurs_in, same_word, supported
from rag_lib.prompts import ANSWER_PROMPT, EXTRACT_PROMPT, EXTRACT_REMINDER, PASSAGE_REMINDER, fit_prompt, passage_block
from rag_lib.text import detect_language, tokenize

REFUSAL = {"zh": "文档中没有找到相关信息。", "en": "The documents do not contain this information."}
# appended to a generated answer that fails the support check (rag_lib.matching.supported), in its language
UNSUPPORTED_NOTE = {"zh": "（请核对：这个回答有些词语或数字在所引用的段落里找不到。）",
                    "en": "(Check this answer: some of its words or numbers are not in the passages it cites.)"}
EXTRACT_TOKENS = 48  # a span is short: a reply this long is not a span
FALLBACK_TOKENS = 96  # the short sentence written when the copy is not found in the passages
MODES = ("generative", "extractive", "clause")
SPAN_PUNCTUATION = " \"'“”‘’「」『』。.，,；;:："  # stripped from the ends of a copied span
# a reply with one of these says the answer is missing: nothing in it is salvaged as a span
NOT_FOUND = ("没有", "不知道", "无法", "未提及", "不包含", "not ", "n't", "cannot", "unknown")


class RAGState(TypedDict, total=False):
    """What one RAG run reads and writes: each key with the node that writes it."""
    question: str  # the user's question: the input
    documents: list[Document]  # passages that passed the retriever's similarity cutoff (retrieve)
    answer: str  # the cited answer (generate) or the fixed "not in the documents" reply (refuse)
    extracted: bool  # extractive mode: True when the answer is a span found in a passage, False after the fallback
    unsupported: bool  # True when a generated answer failed the support check: it ends with UNSUPPORTED_NOTE


# what one question writes after `retrieve`, with its empty value; retrieve empties what the thread's last run left
PER_RUN = {"answer": "", "extracted": None, "unsupported": False}  # None: the run did not decide it


def fresh_run(state: Mapping[str, Any], per_run: Mapping[str, Any]) -> dict:
    """The reset a graph's first node returns so a thread's new question runs as on a fresh thread: the keys of
    `per_run` (key -> empty value, Overwrite(empty) for a reducer) that the last run left holding something else."""

    def empty(value: Any) -> Any:
        return value.value if isinstance(value, Overwrite) else value

    return {key: value for key, value in per_run.items() if state.get(key, empty(value)) != empty(value)}


@dataclass(frozen=True)
class RAGContext:
    """What the nodes use but the state does not carry: the retriever (with its cutoff) and the chat model."""

    retriever: BaseRetriever
    llm: BaseChatModel
    mode: str = "generative"  # or "extractive": copy the answering span, checked against the passages; or "clause"

    def __post_init__(self) -> None:
        check_mode(self.mode)


def check_mode(mode: str) -> None:
    """A clear error for an answer mode not in MODES."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}: choose 'generative' (a cited sentence), 'extractive' (a copied span) or "
                         "'clause' (the copied span widened to its clause).")


def source_label(document: Document) -> str:
    """A passage's source as the model sees it: as stored ("docs/x.md", a URL), an absolute path as its file name."""
    source = str(document.metadata.get("source", "?"))
    return Path(source).name if Path(source).is_absolute() else source


def format_context(documents: list[Document]) -> str:
    """Number the passages so the model can cite them as [1], [2], ..., each fenced as data (rag_lib.prompts)."""
    return "\n\n".join(passage_block(i, d.page_content, source_label(d)) for i, d in enumerate(documents, 1))


def refusal_for(question: str) -> str:
    """The fixed "not in the documents" reply, in the question's language."""
    return REFUSAL[detect_language(question)]


def answer_prompt(
    question: str, documents: list[Document], earlier: Sequence[BaseMessage] = (), told: str = ""
) -> list[BaseMessage]:
    """Chat messages for a grounded answer, uncut: rules, `told` (rag_lib.memory.told_by_the_user), fenced passages
    and rules again in the system message, then the `earlier` turns, then the question alone as the user's turn."""
    system = ANSWER_PROMPT.format(refusal=refusal_for(question))
    context = f"{system}\n\n{told}Context:\n{format_context(documents)}\n\n{PASSAGE_REMINDER}"
    return [SystemMessage(context), *earlier, HumanMessage(question)]


def answer_messages(question: str, documents: list[Document], llm: BaseChatModel | None = None) -> list:
    """`answer_prompt` cut to fit `llm`'s context window with room for the reply (rag_lib.prompts.fit_prompt)."""
    return answer_prompt(*fit_prompt(llm, answer_prompt, question, documents))


def extract_prompt(question: str, documents: list[Document]) -> list:
    """Chat messages asking for the answering span only: rules and fenced passages in the system message."""
    context = f"{EXTRACT_PROMPT}\n\nContext:\n{format_context(documents)}\n\n{EXTRACT_REMINDER}"
    return [SystemMessage(context), HumanMessage(question)]


def cleaned_span(reply: str) -> str:
    """The reply's first line without quotes, citation markers or final punctuation: what a span copy looks like."""
    line = next((part.strip() for part in reply.strip().splitlines() if part.strip()), "")
    line = re.sub(r"\s*\[\d+\]", "", line).strip()
    return line.strip(SPAN_PUNCTUATION)


def cited_span(span: str, documents: list[Document], clause: bool = False) -> str | None:
    """`span [n]` for the first passage n that holds the span (with `clause`, the clause of n around it), None when
    no passage does (the copy is not a copy)."""
    for number, document in enumerate(documents, 1):
        if span and occurs_in(span, document.page_content):
            return f"{clause_holding(span, document.page_content) if clause else span} [{number}]"
    return None


def salvaged_span(reply: str, question: str, documents: list[Document]) -> str:
    """The longest piece of a reply that occurs in a passage and whose words are all new to the question ("自杀" of
    "蔡敏的死因是自杀"); "" when none does, or when the reply says the answer is missing (NOT_FOUND)."""
    if any(marker in reply.lower() for marker in NOT_FOUND):
        return ""
    asked = set(tokenize(question))

    def inside_a_word(i: int) -> bool:  # a cut between two letters or digits of one ASCII word
        return 0 < i < len(reply) and (reply[i - 1] + reply[i]).isascii() and (reply[i - 1] + reply[i]).isalnum()

    for length in range(len(reply), 1, -1):
        for start in range(len(reply) - length + 1):
            end = start + length
            piece = reply[start:end]
            if (piece != piece.strip(SPAN_PUNCTUATION) or inside_a_word(start) or inside_a_word(end)
                    or not cited_span(piece, documents)):
                continue
            words = set(tokenize(piece))
            if words and not any(same_word(word, other) for word in words for other in asked):
                return piece
    return ""


def extract(
    question: str, documents: list[Document], llm: BaseChatModel, fallback: bool = True, clause: bool = False,
) -> tuple[str, bool]:
    """(answer, extracted): the copied span, cited (or its `salvaged_span`; widened with `clause`), else a short
    generative answer (`fallback` False: the refusal). The copy is not streamed: a failed one never reaches the user."""
    copier = llm.bind(max_tokens=EXTRACT_TOKENS).with_config(tags=[TAG_NOSTREAM])
    question, documents = fit_prompt(copier, extract_prompt, question, documents)
    span = cleaned_span(str(copier.invoke(extract_prompt(question, documents)).content))
    cited = cited_span(span, documents, clause) or cited_span(salvaged_span(span, question, documents), documents,
                                                                clause)
    if cited:
        return cited, True
    if not fallback:
        return refusal_for(question), False
    reply = llm.bind(max_tokens=FALLBACK_TOKENS).invoke(answer_messages(question, documents, llm))
    return str(reply.content).strip(), False


def extractive_answer(
    question: str, documents: list[Document], llm: BaseChatModel, copies: Iterable[str], calls_left: int,
    clause: bool = False,
) -> tuple[str, bool, int]:
    """(answer, extracted, calls made): the first of a grader's `copies` that a passage holds, cited (no call); else
    `extract`, with its fallback sentence only when `calls_left` leaves room for a second call."""
    for copy in copies:
        cited = cited_span(cleaned_span(copy), documents, clause)
        if cited:
            return cited, True, 0
    fallback = calls_left >= 2
    answer, extracted = extract(question, documents, llm, fallback, clause)
    return answer, extracted, 2 if fallback and not extracted else 1


def retrieve(state: RAGState, runtime: Runtime[RAGContext]) -> dict:
    """Search the index with the question; empties what the thread's last question left (PER_RUN)."""
    return fresh_run(state, PER_RUN) | {"documents": runtime.context.retriever.invoke(state["question"])}


def is_refusal(answer: str) -> bool:
    """Whether a reply is the fixed "not in the documents" text in either language (citations and case aside)."""

    def bare(text: str) -> str:
        return CITATION.sub("", text).strip().strip(SPAN_PUNCTUATION).lower()

    return bare(answer) in {bare(text) for text in REFUSAL.values()}


def checked_answer(answer: str, documents: list[Document], also: Sequence[str] = ()) -> tuple[str, dict]:
    """(answer, state update): an answer not backed by the passages it cites (rag_lib.matching.supported; `also`
    backs it whatever it cites) gets UNSUPPORTED_NOTE and {"unsupported": True}; flagged, not replaced (streamed)."""
    if is_refusal(answer) or supported(answer, [d.page_content for d in documents], also):
        return answer, {}
    return f"{answer}\n{UNSUPPORTED_NOTE[detect_language(answer)]}", {"unsupported": True}


def generate(state: RAGState, runtime: Runtime[RAGContext]) -> dict:
    """A cited answer from the numbered passages, flagged by `checked_answer`; extractive modes: `extract`."""
    llm = runtime.context.llm
    if runtime.context.mode != "generative":
        answer, extracted = extract(state["question"], state["documents"], llm, clause=runtime.context.mode == "clause")
        answer, flag = (answer, {}) if extracted else checked_answer(answer, state["documents"])
        return {"answer": answer, "extracted": extracted} | flag
    reply: AIMessage = llm.invoke(answer_messages(state["question"], state["documents"], llm))
    answer, flag = checked_answer(str(reply.content).strip(), state["documents"])
    return {"answer": answer} | flag


def refuse(state: RAGState) -> dict:
    """No passage passed the cutoff: the fixed reply in the question's language, no model call."""
    return {"answer": refusal_for(state["question"])}


def after_retrieval(state: RAGState) -> Literal["generate", "refuse"]:
    """Answer when a passage passed the cutoff, else refuse."""
    return "generate" if state["documents"] else "refuse"


def build_rag_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """retrieve -> generate | refuse. Invoke with {"question": q} and context=RAGContext(retriever, llm); stream with
    stream_mode="messages" to see the tokens. A checkpointer saves every step (then pass a thread_id in config)."""
    graph = StateGraph(RAGState, context_schema=RAGContext)
    graph.add_node("retrieve", retrieve)
    graph.add_node("generate", generate)
    graph.add_node("refuse", refuse)
    graph.add_edge(START, "retrieve")
    graph.add_conditional_edges("retrieve", after_retrieval, {"generate": "generate", "refuse": "refuse"})
    graph.add_edge("generate", END)
    graph.add_edge("refuse", END)
    return graph.compile(checkpointer=checkpointer)
