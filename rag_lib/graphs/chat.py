"""Conversational RAG with memory: condense -> retrieve -> generate | refuse, one checkpointer thread per conversation.

The conversation lives in `messages` (LangGraph's MessagesState, `add_messages` reducer): each turn appends the
user's message and the answer, and a checkpointer keeps the thread between calls and across restarts (SQLite).
A follow-up such as "and its default port?" cannot be searched as it stands, so `condense` rewrites it into a
standalone search query from the recent history (no model call on the first turn). The reply is untrusted: an
empty, multi-line-only or runaway rewrite falls back to the previous question joined with the new one.
Old turns are trimmed to `history_tokens` (langchain_core's trim_messages) before they reach a prompt, and the
passages are fitted to the window after the history (rag_lib.prompts.fit_prompt).
"""

from __future__ import annotations

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

from rag_lib.graphs.rag import SYSTEM_PROMPT, format_context, refusal_for
from rag_lib.prompts import PASSAGE_REMINDER, cap_question, fit_prompt, token_counter
from rag_lib.text import tokenize

CONDENSE_SYSTEM = (
    "You rewrite follow-up questions. Given a conversation and a follow-up question, write the follow-up as a "
    "standalone question: replace words like 'it', 'its', 'that' or '它' with the subject they refer to and keep "
    "every other word. Keep the question's language. Never answer the question: reply with the rewritten question "
    "only, on one line."
)
CONDENSE_REQUEST = "Conversation:\n{conversation}\n\nFollow-up question: {question}\n\nStandalone question:"
MAX_QUERY_GROWTH = 200  # characters a rewrite may add to the question; a longer reply is a runaway, not a query
PRONOUNS = frozenset("它 它们 他 她 他们 她们 这个 那个 they them their he she his her".split())
HISTORY_TOKENS = 600  # older turns beyond this are left out of the prompts (the thread keeps them)


class ChatState(MessagesState):
    """messages (inherited): the whole conversation, user turns and answers, appended by the add_messages reducer."""

    search_query: str  # the last user turn rewritten as a standalone query (condense); what the retriever sees
    documents: list[Document]  # passages retrieved for search_query; what the answer cites


@dataclass(frozen=True)
class ChatContext:
    """What the nodes use but the checkpointed state must not carry."""

    retriever: BaseRetriever
    llm: BaseChatModel
    history_tokens: int = HISTORY_TOKENS  # older turns beyond this are left out of the prompts

    def __post_init__(self) -> None:
        if self.history_tokens < 0:
            raise ValueError(f"history_tokens={self.history_tokens}: give 0 (no history) or more tokens.")


def last_question(messages: list[BaseMessage]) -> str:
    """The text of the latest user message; a clear error when the thread has none."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return str(message.content)
    raise ValueError('No user message in the state: invoke with {"messages": [("user", "your question")]}.')


def history(messages: list[BaseMessage], llm: BaseChatModel, max_tokens: int) -> list[BaseMessage]:
    """The turns before the latest user message, trimmed from the oldest to `max_tokens`, starting on a user turn."""
    earlier = messages[: max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))]
    if max_tokens == 0 or not earlier:
        return []
    count = token_counter(llm)
    return trim_messages(
        earlier,
        max_tokens=max_tokens,
        token_counter=lambda batch: sum(count(str(m.content)) for m in batch),
        strategy="last",
        start_on="human",
    )


def keeps_the_question(rewrite: str, question: str) -> bool:
    """Whether a rewrite kept at least half of the question's content words (pronouns aside): a small model asked
    to rewrite often answers instead ("19530"), and an answer shares few words with the question."""
    wanted = set(tokenize(question)) - PRONOUNS
    return len(wanted & set(tokenize(rewrite))) * 2 >= len(wanted)


def condensed_query(reply: str, question: str, previous: str) -> str:
    """The model's rewrite when it looks like one (first line, not runaway, the question's words kept), else the
    previous question followed by this one: crude, but it always carries the subject the follow-up leaves out."""
    line = next((part.strip() for part in reply.strip().splitlines() if part.strip()), "")
    if line and len(line) <= len(question) + MAX_QUERY_GROWTH and keeps_the_question(line, question):
        return line
    return f"{previous} {question}".strip()


def transcript(messages: list[BaseMessage]) -> str:
    """The conversation as plain "User: ..." / "Assistant: ..." lines, for a prompt that rewrites rather than chats."""
    return "\n".join(f"{'User' if isinstance(m, HumanMessage) else 'Assistant'}: {m.content}" for m in messages)


def standalone_query(llm: BaseChatModel, question: str, earlier: list[BaseMessage]) -> str:
    """`question` rewritten as a standalone search query from the earlier turns (one model call), checked by
    `condensed_query`; without earlier turns the question is used as it is (no call)."""
    if not earlier:
        return cap_question(question)
    previous = next((str(m.content) for m in reversed(earlier) if isinstance(m, HumanMessage)), "")
    request = CONDENSE_REQUEST.format(conversation=transcript(earlier), question=cap_question(question))
    reply = llm.bind(max_tokens=64).invoke([SystemMessage(CONDENSE_SYSTEM), HumanMessage(request)])
    return cap_question(condensed_query(str(reply.content), question, previous))


def condense(state: ChatState, runtime: Runtime[ChatContext]) -> dict:
    """Rewrite a follow-up into a standalone search query; the first question of a thread is used as it is."""
    earlier = history(state["messages"], runtime.context.llm, runtime.context.history_tokens)
    return {"search_query": standalone_query(runtime.context.llm, last_question(state["messages"]), earlier)}


def retrieve(state: ChatState, runtime: Runtime[ChatContext]) -> dict:
    """Search with the standalone query, not with the raw follow-up."""
    return {"documents": runtime.context.retriever.invoke(state["search_query"])}


def chat_messages(question: str, documents: list[Document], earlier: list[BaseMessage]) -> list[BaseMessage]:
    """Rules and fenced passages in the system message, then the trimmed history, then the question alone."""
    system = SYSTEM_PROMPT.format(refusal=refusal_for(question))
    context = f"{system}\n\nContext:\n{format_context(documents)}\n\n{PASSAGE_REMINDER}"
    return [SystemMessage(context), *earlier, HumanMessage(question)]


def chat_answer_messages(
    question: str, documents: list[Document], earlier: list[BaseMessage], llm: BaseChatModel
) -> list[BaseMessage]:
    """`chat_messages` with the question and the passages fitted to what the model's window leaves after the
    history (rag_lib.prompts.fit_prompt)."""
    question, documents = fit_prompt(llm, lambda q, docs: chat_messages(q, docs, earlier), question, documents)
    return chat_messages(question, documents, earlier)


def generate(state: ChatState, runtime: Runtime[ChatContext]) -> dict:
    """Answer the user's own words with the history in view, the passages fitted to what the window has left."""
    llm = runtime.context.llm
    earlier = history(state["messages"], llm, runtime.context.history_tokens)
    reply = llm.invoke(chat_answer_messages(last_question(state["messages"]), state["documents"], earlier, llm))
    # the streamed reply's id: LangGraph's "messages" stream then knows this message was already streamed
    return {"messages": [AIMessage(str(reply.content).strip(), id=reply.id)]}


def refuse(state: ChatState) -> dict:
    """Nothing relevant was retrieved: the fixed reply, no model call."""
    return {"messages": [AIMessage(refusal_for(last_question(state["messages"])))]}


def after_retrieval(state: ChatState) -> Literal["generate", "refuse"]:
    """Answer when something was retrieved, else refuse."""
    return "generate" if state["documents"] else "refuse"


def build_chat_graph(checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """condense -> retrieve -> generate | refuse. Invoke with {"messages": [("user", q)]}, a thread_id in config
    and context=ChatContext(...); the checkpointer keeps each thread's conversation."""
    graph = StateGraph(ChatState, context_schema=ChatContext)
    graph.add_node("condense", condense)
    graph.add_node("retrieve", retrieve)
    graph.add_node("generate", generate)
    graph.add_node("refuse", refuse)
    graph.add_edge(START, "condense")
    graph.add_edge("condense", "retrieve")
    graph.add_conditional_edges("retrieve", after_retrieval, ["generate", "refuse"])
    graph.add_edge("generate", END)
    graph.add_edge("refuse", END)
    return graph.compile(checkpointer=checkpointer)
