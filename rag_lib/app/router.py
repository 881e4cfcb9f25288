"""The app's router graph: one chat box, four intents (save / retrieve / save_then_retrieve / unknown).

route -> save -> ((condense) -> retrieve) ; route -> (condense) -> retrieve -> answer | refuse -> (evaluate) ;
route -> unknown

`route` decides the action with one structured LLM call (none when the request is empty) and reads everything else
from the request: chunking, retrieval strategy, files named, the note and the question (`rag_lib.app.intent`).
`save` checks each document, writes it into the upload folder and indexes it into the shared collection
(`rag_lib.app.uploads`). `retrieve` searches with the chosen strategy and the calibrated similarity cutoff
(`rag_lib.app.strategies`); `answer` streams a cited answer (`rag_lib.graphs.chat.chat_answer_messages`); `evaluate`
adds
retrieval scores (no model) and one structured LLM grade (`rag_lib.app.grading`).
LLM calls per request: route 1, answer 1, evaluate 1 (optional), HyDE +1 when asked for, condense +1 on a follow-up.

Conversation memory, as in `rag_lib.graphs.chat`: `messages` (add_messages reducer) gets the user's turn (route) and
the reply (the node that writes `answer`), and a checkpointer keeps it per thread. A question asked after earlier
turns is rewritten into a standalone search query first (`condense`), and the answer prompt carries the trimmed
history. `route` empties what the thread's previous request left (passages, scores, notes, LLM calls), and every
value in the state is a plain dict, list, Document or message, so a checkpoint gives it back unchanged.

Long-term memory, when the graph is compiled with a store and the context names the user: `memory` (after route)
recalls the user's facts relevant to the question from any thread and keeps the facts the request states
(rag_lib.memory); `answer` gets the recalled ones as the user's own statements, apart from the passages.

The graph holds no client or model: build it once with `build_router_graph(checkpointer)` and pass a `RouterContext`
to each run (`graph.invoke(inputs, config, context=...)`, or `stream_request`), so any node can also be called alone.
"""

from __future__ import annotations

import operator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Iterator, TypedDict

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Overwrite
from pymilvus import MilvusClient

from rag_lib.app.grading import AnswerGrade, grade_answer
from rag_lib.app.intent import HELP, Action, Options, chosen_options, decide_route
from rag_lib.app.strategies import retrieval_scores, search, source_filter
from rag_lib.app.uploads import Saved, file_digest, indexed_documents, save_document, save_upload
from rag_lib.embeddings import default_min_similarity
from rag_lib.graphs.chat import HISTORY_TOKENS, chat_answer_messages, history, standalone_query
from rag_lib.graphs.rag import checked_answer, fresh_run, refusal_for
from rag_lib.memory import Memory, recall_and_remember
from rag_lib.store import DEFAULT_COLLECTION
from rag_lib.structured import StructuredOutputError
from rag_lib.text import check_query, detect_language


class AppState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]  # route: the user's turn; the node writing `answer`: the reply
    request: str  # input: the chat message
    files: list[str]  # input: paths of documents to save with this request
    chunking: str  # input: "auto" or one of rag_lib.app.uploads.CHUNKINGS (a UI choice overrides the request)
    chunk_size: int | None  # input: None lets the request (or the default) decide
    retrieval: str  # input: "auto" or one of rag_lib.app.strategies.RETRIEVALS
    evaluate: bool  # input: grade the answer (+1 LLM call)
    action: Action  # route: what to do with the request
    routed_by: str  # route: "model", "rule" or "model+rule"
    options: dict  # route: intent.Options as a dict (chunking, chunk_size, retrieval, files); UI choices first
    note: str  # route: text to save from the request
    question: str  # route: the question in the user's words: what is answered
    search_query: str  # condense: the question made standalone with the conversation; retrieve searches it
    saved: list[dict]  # save: one rag_lib.app.uploads.Saved as a dict per document
    strategy: dict  # retrieve: requested / used retrieval, filter, and why
    documents: list[Document]  # retrieve: the passages kept (each with metadata["similarity"])
    recalled: list[Memory]  # memory (with a store): the user's facts relevant to the question, from any thread
    remembered: list[Memory]  # memory (with a store): the facts the request states, now kept
    answer: str  # save / answer / refuse / unknown: the reply shown to the user
    unsupported: bool  # answer: True when the reply failed the support check (rag_lib.graphs.rag.checked_answer)
    scores: dict  # evaluate: mean_similarity, diversity and the three LLM grades
    llm_calls: Annotated[int, operator.add]  # every node adds the LLM calls it made
    notes: Annotated[list[str], operator.add]  # every node adds what a rule changed or what went wrong


@dataclass(frozen=True)
class RouterContext:
    """What the router's nodes use besides the state: the database, the models, the upload folder and the search
    knobs. `min_similarity` defaults to the calibrated cutoff of the configured embeddings (None keeps all)."""

    client: MilvusClient
    embeddings: Embeddings
    llm: BaseChatModel
    upload_dir: Path  # a str is turned into a Path
    collection: str = DEFAULT_COLLECTION
    k: int = 3  # passages per search
    min_similarity: float | None = field(default_factory=default_min_similarity)
    history_tokens: int = HISTORY_TOKENS  # older turns beyond this are left out of the prompts (the thread keeps them)
    user_id: str | None = None  # whose long-term memory a graph compiled with a store reads and writes

    def __post_init__(self) -> None:
        """Check the knobs and resolve the folder once, before any node runs (the context is frozen)."""
        if self.history_tokens < 0:
            raise ValueError(f"history_tokens={self.history_tokens}: give 0 (no history) or more tokens.")
        object.__setattr__(self, "upload_dir", Path(self.upload_dir))


# what one request writes after `route`, with its empty value; route empties what the thread's previous request left
PER_RUN = {"search_query": "", "saved": [], "strategy": {}, "documents": [], "answer": "", "scores": {},
           "recalled": [], "remembered": [], "unsupported": False}
# the inputs a request is given in full (stream_request fills in these defaults), so none is left from the last one
REQUEST_DEFAULTS = {"files": [], "chunking": "auto", "chunk_size": None, "retrieval": "auto", "evaluate": False}


def plain(outcome: Options | Saved) -> dict:
    """A dataclass as plain values (a tuple as a list): a checkpoint stores these and gives them back unchanged,
    while a dataclass would need registering with LangGraph's serializer and a tuple would come back a list."""
    return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(outcome).items()}


def user_turn(request: str, files: list[str]) -> HumanMessage:
    """The user's turn as the conversation keeps it: the message, and the names of the files sent with it."""
    names = ", ".join(Path(f).name for f in files)
    return HumanMessage("\n\n".join(part for part in (request, names and f"(files: {names})") if part))


def earlier_turns(state: AppState, context: RouterContext) -> list[BaseMessage]:
    """The thread's turns before this request, trimmed to `history_tokens` (none on a thread's first request)."""
    messages = state.get("messages") or []
    return history(messages, context.llm, context.history_tokens) if len(messages) > 1 else []


def reply(text: str, message_id: str | None = None) -> dict:
    """The reply shown to the user, also appended to the conversation (`message_id`: the model's reply, so the
    messages stream does not send the streamed answer a second time)."""
    return {"answer": text, "messages": [AIMessage(text, id=message_id)]}


# ---------------------------------------------------------------- nodes


def route(state: AppState, runtime: Runtime[RouterContext]) -> dict:
    """The action, the options, the text to save and the question (one structured LLM call at most); appends the
    user's turn and empties what the thread's previous request left."""
    context = runtime.context
    request, has_files = state.get("request", "").strip(), bool(state.get("files"))
    if request:  # invalid text fails here, before any model call; an empty request is answered with the help text
        check_query(request)
    known = [d["source"] for d in indexed_documents(context.client, context.collection)]
    options = chosen_options(request, known, state.get("chunking"), state.get("chunk_size"), state.get("retrieval"))
    decided = decide_route(context.llm, request, has_files)
    counted = {key: Overwrite(value) if state.get(key) else value  # replaces the last request's total, not added
               for key, value in (("llm_calls", decided.llm_calls), ("notes", decided.notes))}
    return fresh_run(state, PER_RUN) | counted | {
        "messages": [user_turn(request, state.get("files") or [])], "action": decided.action,
        "routed_by": decided.routed_by, "options": plain(options), "note": decided.note, "question": decided.question,
    }


def memory(state: AppState, runtime: Runtime[RouterContext]) -> dict:
    """Long-term memory in runtime.store: the user's facts relevant to the question, told in any thread, and the
    facts the request states kept with its thread (rag_lib.memory.recall_and_remember)."""
    return recall_and_remember(runtime, state.get("request", ""), state["question"])


def save(state: AppState, runtime: Runtime[RouterContext]) -> dict:
    """Save the given files and the note; the reply lists them when there is nothing (else) to answer."""
    context, options = runtime.context, state["options"]
    chunking, size = options["chunking"], options["chunk_size"]
    saved = [save_upload(context.client, context.embeddings, context.upload_dir, path, chunking, size,
                         context.collection)
             for path in state.get("files") or []]
    if state.get("note"):
        data = state["note"].encode("utf-8")
        saved.append(save_document(context.client, context.embeddings, context.upload_dir,
                                   f"note_{file_digest(data)[:10]}.txt", data, chunking, size, context.collection))
    if not saved:
        saved = [Saved("(nothing)", "error", message="there was no text or file to save: write it after 'Save this:'")]
    outcomes = [plain(s) for s in saved]
    if state["action"] == "save" or not any(s.source for s in saved):  # nothing to answer from
        return {"saved": outcomes, **reply("\n".join(s.message for s in saved))}
    return {"saved": outcomes}


def condense(state: AppState, runtime: Runtime[RouterContext]) -> dict:
    """A follow-up ("and on weekdays?") rewritten into a standalone search query from the earlier turns (one LLM
    call, rag_lib.graphs.chat.standalone_query); the user's own words are still what gets answered."""
    earlier = earlier_turns(state, runtime.context)
    query = standalone_query(runtime.context.llm, state["question"], earlier)
    return {"search_query": query, "llm_calls": 1 if earlier else 0}


def retrieve(state: AppState, runtime: Runtime[RouterContext]) -> dict:
    """Search with the chosen strategy, only in the documents just saved or the files the request names."""
    context, options = runtime.context, state["options"]
    question = state.get("search_query") or state["question"]
    if state["action"] == "save_then_retrieve":
        sources = [s["source"] for s in state.get("saved", []) if s["source"]]
        why = "the documents just saved"
    else:
        sources, why = options["files"], "files named in the request"
    requested = options["retrieval"] or "hybrid"
    strategy = {"requested": requested, "filter": source_filter(sources), "filter_reason": why if sources else ""}
    if not context.client.has_collection(context.collection):
        return {"documents": [], "strategy": strategy, "notes": ["nothing is indexed yet: upload files or save a note"]}
    documents, used, calls = search(context.client, context.embeddings, context.llm, question, requested,
                                    strategy["filter"], context.k, context.min_similarity, context.collection)
    return {"documents": documents, "strategy": strategy | {"used": used}, "llm_calls": calls}


def answer(state: AppState, runtime: Runtime[RouterContext]) -> dict:
    """A cited answer from the passages, with the earlier turns in view (streamed token by token under
    stream_mode="messages")."""
    llm = runtime.context.llm
    messages = chat_answer_messages(state["question"], state["documents"], earlier_turns(state, runtime.context), llm,
                                    state.get("recalled", []))
    message = llm.invoke(messages)
    recalled = [fact["fact"] for fact in state.get("recalled", [])]
    text, flag = checked_answer(str(message.content).strip(), state["documents"], recalled)
    return {**reply(text, message.id), "llm_calls": 1} | flag


def refuse(state: AppState) -> dict:
    """The fixed "not in the documents" reply, without a model call."""
    return reply(refusal_for(state["question"]))


def evaluate(state: AppState, runtime: Runtime[RouterContext]) -> dict:
    """Retrieval scores and the LLM grade of the answer to the standalone question (a follow-up alone may not say
    what it asks); an unusable grade leaves the grades None (the answer stands)."""
    context = runtime.context
    scores = retrieval_scores(context.client, state["documents"], context.collection)
    question = state.get("search_query") or state["question"]
    try:
        grade = grade_answer(context.llm, question, state["documents"], state["answer"]).model_dump()
    except StructuredOutputError as error:
        grade = dict.fromkeys(AnswerGrade.model_fields)
        return {"scores": scores | grade, "llm_calls": 1, "notes": [f"LLM evaluation unavailable: {error}"]}
    return {"scores": scores | grade, "llm_calls": 1}


def unknown(state: AppState, runtime: Runtime[RouterContext]) -> dict:
    """The help text, in the request's language, with the number of indexed files."""
    count = len(indexed_documents(runtime.context.client, runtime.context.collection))
    return reply(HELP[detect_language(state.get("request", ""))].format(count=count))


# ---------------------------------------------------------------- routers (conditional edges)


def search_step(state: AppState) -> str:
    """condense when the thread has earlier turns (a follow-up may lean on them), else straight to retrieve."""
    return "condense" if len(state.get("messages") or []) > 1 else "retrieve"


def after_route(state: AppState) -> str:
    """save_then_retrieve starts with save, retrieve with `search_step`; the other actions are node names."""
    if state["action"] == "retrieve":
        return search_step(state)
    return {"save_then_retrieve": "save"}.get(state["action"], state["action"])


def after_save(state: AppState) -> str:
    """On to the search for save_then_retrieve, unless nothing was saved to answer from."""
    return search_step(state) if state["action"] == "save_then_retrieve" and not state.get("answer") else END


def after_retrieve(state: AppState) -> str:
    """Answer when passages were kept, else refuse."""
    return "answer" if state["documents"] else "refuse"


def after_answer(state: AppState) -> str:
    """Evaluate only when asked for."""
    return "evaluate" if state.get("evaluate") else END


# ---------------------------------------------------------------- the graph


def build_router_graph(
    checkpointer: BaseCheckpointSaver | None = None, store: BaseStore | None = None
) -> CompiledStateGraph:
    """The app's graph. Input: `request` (+ optional `files`, `chunking`, `chunk_size`, `retrieval`, `evaluate`;
    on a checkpointed thread give them all, REQUEST_DEFAULTS, or the previous request's stay); context: a
    RouterContext; with a checkpointer, a thread_id in the config keeps the conversation; with a store
    (rag_lib.memory.open_memory_store) and RouterContext.user_id, `memory` runs after `route`. Stream with
    stream_mode="messages" and keep the tokens of node "answer" to show the answer as it is written
    (`stream_request` does)."""
    graph = StateGraph(AppState, context_schema=RouterContext)
    graph.add_node("route", route)
    graph.add_node("save", save)
    graph.add_node("condense", condense)
    graph.add_node("retrieve", retrieve)
    graph.add_node("answer", answer)
    graph.add_node("refuse", refuse)
    graph.add_node("evaluate", evaluate)
    graph.add_node("unknown", unknown)
    graph.add_edge(START, "route")
    if store is not None:
        graph.add_node("memory", memory)
        graph.add_edge("route", "memory")
    graph.add_conditional_edges("route" if store is None else "memory", after_route,
                                ["save", "condense", "retrieve", "unknown"])
    graph.add_conditional_edges("save", after_save, ["condense", "retrieve", END])
    graph.add_edge("condense", "retrieve")
    graph.add_conditional_edges("retrieve", after_retrieve, ["answer", "refuse"])
    graph.add_conditional_edges("answer", after_answer, ["evaluate", END])
    graph.add_edge("refuse", END)
    graph.add_edge("evaluate", END)
    graph.add_edge("unknown", END)
    return graph.compile(checkpointer=checkpointer, store=store)


def stream_request(
    graph: CompiledStateGraph, request: str, *, context: RouterContext, thread_id: str | None = None, **inputs: Any
) -> Iterator[tuple[str, Any]]:
    """Run one request (on conversation `thread_id` when the graph has a checkpointer; inputs not given take
    REQUEST_DEFAULTS): yields ("node", name) as each node finishes, ("token", text) for the answer as it is
    written, and finally ("done", final state)."""
    final: dict = {}
    config = {"configurable": {"thread_id": thread_id}} if thread_id else None
    for mode, payload in graph.stream({**REQUEST_DEFAULTS, **inputs, "request": request}, config, context=context,
                                      stream_mode=["messages", "updates", "values"]):
        if mode == "messages":
            chunk, meta = payload
            if meta.get("langgraph_node") == "answer" and chunk.content:
                yield "token", chunk.content
        elif mode == "updates":
            for name in payload:
                yield "node", name
        else:
            final = payload
    yield "done", final
