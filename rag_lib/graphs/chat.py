"""Conversational RAG with memory: condense -> retrieve -> generate | refuse, one checkpointer thread per conversation.

The conversation lives in `messages` (MessagesState), kept by the checkpointer. `condense` rewrites a follow-up
("and its default port?") into a standalone search query, falling back to the previous question joined with the new
one when the rewrite does not look like one. Old turns are trimmed to `history_tokens`. With a store and a user id,
`memory` recalls the user's facts from any thread and keeps the ones this message states (rag_lib.memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, trim_messages
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from rag_lib.graphs.rag import answer_prompt, checked_answer, fresh_run, refusal_for
from rag_lib.memory import Memory, recall_and_remember, told_by_the_user
from rag_lib.prompts import CONDENSE_REQUEST, CONDENSE_SYSTEM, cap_question, fit_prompt, token_counter
from rag_lib.text import check_query, tokenize

MAX_QUERY_GROWTH = 200  # characters a rewrite may add to the question; a longer reply is a runaway, not a query
PRONOUNS = frozenset("它 它们 他 她 他们 她们 这个 那个 they them their he she his her".split())
HISTORY_TOKENS = 600  # older turns beyond this are left out of the prompts (the thread keeps them)


class ChatState(MessagesState):
    """messages (inherited): the whole conversation, user turns and answers, appended by the add_messages reducer."""

    search_query: str  # the last user turn rewritten as a standalone query (condense); what the retriever sees
    documents: list[Document]  # passages retrieved for search_query; what the answer cites
    recalled: list[Memory]  # memory (with a store): the user's facts relevant to search_query, from any thread
    remembered: list[Memory]  # memory (with a store): the facts the last user message states, now kept
    unsupported: bool  # True when the last answer failed the support check (generate; it ends with a note)


@dataclass(frozen=True)
class ChatContext:
    """What the nodes use but the checkpointed state must not carry."""

    retriever: BaseRetriever
    llm: BaseChatModel
    history_tokens: int = HISTORY_TOKENS  # older turns beyond this are left out of the prompts
    user_id: str | None = None  # whose long-term memory a graph compiled with a store reads and writes

    def __post_init__(self) -> None:
        if self.history_tokens < 0:
            raise ValueError(f"history_tokens={self.history_tokens}: give 0 (no history) or more tokens.")


# what one question writes after `condense`, with its empty value; condense empties what the thread's last run left
# (the messages are the conversation: they carry over)
PER_RUN = {"documents": [], "recalled": [], "remembered": [], "unsupported": False}


def last_user_turn(messages: list[BaseMessage]) -> int:
    """Where the latest user message is in the conversation; a clear error when the thread has none."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    raise ValueError('No user message in the state: invoke with {"messages": [("user", "your question")]}.')


def last_question(messages: list[BaseMessage]) -> str:
    """The text of the latest user message; a clear error when the thread has none."""
    return str(messages[last_user_turn(messages)].content)


def history(messages: list[BaseMessage], llm: BaseChatModel, max_tokens: int) -> list[BaseMessage]:
    """The turns before the latest user message, trimmed from the oldest to `max_tokens`, starting on a user turn."""
    earlier = messages[: last_user_turn(messages)]
    if max_tokens == 0 or not earlier:
        return []
    count = token_counter(llm)
    return trim_messages(earlier, max_tokens=max_tokens, strategy="last", start_on="human",
                         token_counter=lambda batch: sum(count(str(m.content)) for m in batch))


def keeps_the_question(rewrite: str, question: str) -> bool:
    """Whether a rewrite kept at least half of the question's content words (pronouns aside): a small model asked
    to rewrite often answers instead ("19530"), and an answer shares few words with the question."""
    wanted = set(tokenize(question)) - PRONOUNS
    return len(wanted & set(tokenize(rewrite))) * 2 >= len(wanted)


def same_text(a: str, b: str) -> bool:
    """Whether two strings are equal ignoring case and whitespace: a follow-up copied back is no rewrite."""
    return "".join(a.split()).casefold() == "".join(b.split()).casefold()


def condensed_query(reply: str, question: str, previous: str) -> str:
    """The model's rewrite when it looks like one (first line, not runaway, not the follow-up copied back, the
    question's words kept), else the previous question followed by this one: crude, but it always carries the
    subject the follow-up leaves out."""
    line = next((part.strip() for part in reply.strip().splitlines() if part.strip()), "")
    if (line and len(line) <= len(question) + MAX_QUERY_GROWTH and not same_text(line, question)
            and keeps_the_question(line, question)):
        return line
    return f"{previous} {question}".strip()


def conversation_text(messages: list[BaseMessage]) -> str:
    """The conversation as plain "User: ..." / "Assistant: ..." lines, for a prompt that rewrites rather than chats."""
    return "\n".join(f"{'User' if isinstance(m, HumanMessage) else 'Assistant'}: {m.content}" for m in messages)


def standalone_query(llm: BaseChatModel, question: str, earlier: list[BaseMessage]) -> str:
    """`question` rewritten as a standalone search query from the earlier turns (one model call), checked by
    `condensed_query`; without earlier turns the question is used as it is (no call)."""
    if not earlier:
        return cap_question(question)
    previous = next((str(m.content) for m in reversed(earlier) if isinstance(m, HumanMessage)), "")
    request = CONDENSE_REQUEST.format(conversation=conversation_text(earlier), question=cap_question(question))
    reply = llm.bind(max_tokens=64).invoke([SystemMessage(CONDENSE_SYSTEM), HumanMessage(request)])
    return cap_question(condensed_query(str(reply.content), question, previous))


def condense(state: ChatState, runtime: Runtime[ChatContext]) -> dict:
    """Rewrite a follow-up into a standalone search query; empties what the thread's last question found."""
    question = check_query(last_question(state["messages"]))  # invalid text fails here, before any model call
    earlier = history(state["messages"], runtime.context.llm, runtime.context.history_tokens)
    query = standalone_query(runtime.context.llm, question, earlier)
    return fresh_run(state, PER_RUN) | {"search_query": query}


def memory(state: ChatState, runtime: Runtime[ChatContext]) -> dict:
    """Long-term memory in runtime.store: the user's facts relevant to the search query, told in any thread, and
    the facts this message states kept with its thread (rag_lib.memory.recall_and_remember)."""
    return recall_and_remember(runtime, last_question(state["messages"]), state["search_query"])


def retrieve(state: ChatState, runtime: Runtime[ChatContext]) -> dict:
    """Search with the standalone query, not with the raw follow-up."""
    return {"documents": runtime.context.retriever.invoke(state["search_query"])}


def chat_answer_messages(question: str, documents: list[Document], earlier: list[BaseMessage], llm: BaseChatModel,
                         recalled: Sequence[Memory] = ()) -> list[BaseMessage]:
    """rag.answer_prompt with the recalled facts and the history, question and passages fitted to the window."""
    told = told_by_the_user(recalled)
    question, documents = fit_prompt(llm, lambda q, docs: answer_prompt(q, docs, earlier, told), question, documents)
    return answer_prompt(question, documents, earlier, told)


def generate(state: ChatState, runtime: Runtime[ChatContext]) -> dict:
    """Answer the user's own words with the history in view; flagged by rag.checked_answer (recalled facts back it)."""
    llm = runtime.context.llm
    earlier = history(state["messages"], llm, runtime.context.history_tokens)
    recalled = state.get("recalled", [])
    reply = llm.invoke(chat_answer_messages(last_question(state["messages"]), state["documents"], earlier, llm,
                                            recalled))
    answer, flag = checked_answer(str(reply.content).strip(), state["documents"], [m["fact"] for m in recalled])
    # the streamed reply's id: LangGraph's "messages" stream then knows this message was already streamed
    return {"messages": [AIMessage(answer, id=reply.id)]} | flag


def refuse(state: ChatState) -> dict:
    """Nothing relevant was retrieved: the fixed reply, no model call."""
    return {"messages": [AIMessage(refusal_for(last_question(state["messages"])))]}


def after_retrieval(state: ChatState) -> Literal["generate", "refuse"]:
    """Answer when something was retrieved, else refuse."""
    return "generate" if state["documents"] else "refuse"


def build_chat_graph(checkpointer: BaseCheckpointSaver | None = None,
                     store: BaseStore | None = None) -> CompiledStateGraph:
    """condense -> (memory) -> retrieve -> generate | refuse. Invoke with {"messages": [("user", q)]}, a thread_id
    in config and context=ChatContext(...); the checkpointer keeps each thread's conversation, the store (with
    ChatContext.user_id) each user's facts across threads (rag_lib.memory.open_memory_store)."""
    graph = StateGraph(ChatState, context_schema=ChatContext)
    graph.add_node("condense", condense)
    graph.add_node("retrieve", retrieve)
    graph.add_node("generate", generate)
    graph.add_node("refuse", refuse)
    graph.add_edge(START, "condense")
    if store is None:
        graph.add_edge("condense", "retrieve")
    else:
        graph.add_node("memory", memory)
        graph.add_edge("condense", "memory")
        graph.add_edge("memory", "retrieve")
    graph.add_conditional_edges("retrieve", after_retrieval, ["generate", "refuse"])
    graph.add_edge("generate", END)
    graph.add_edge("refuse", END)
    return graph.compile(checkpointer=checkpointer, store=store)
