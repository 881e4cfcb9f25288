"""Plain RAG as a small LangGraph graph: retrieve -> generate (numbered sources) | refuse.

The retriever drops passages below a similarity cutoff; when nothing is left, `refuse` answers "not in
the documents" without calling the model. Asking a 1.5B model "is the answer in here?" is unreliable (it says
yes to off-topic passages); the calibrated cutoff is not.
The graph holds no retriever or model: they come with each run as its runtime context,
`graph.invoke({"question": q}, context=RAGContext(retriever=r, llm=llm))`, so every node is a plain function
that can be imported and run alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from rag_lib.prompts import PASSAGE_REMINDER, PASSAGE_RULE, fit_prompt, passage_block
from rag_lib.text import detect_language

SYSTEM_PROMPT = (
    "You answer questions using only the numbered context passages. Answer briefly in the language of the "
    "question and cite passages like [1]. If the passages do not contain the answer, reply only: {refusal}\n"
    + PASSAGE_RULE
)
REFUSAL = {"zh": "文档中没有找到相关信息。", "en": "The documents do not contain this information."}


class RAGState(TypedDict, total=False):
    question: str  # the user's question: the input
    documents: list[Document]  # passages that passed the retriever's similarity cutoff (retrieve)
    answer: str  # the cited answer (generate) or the fixed "not in the documents" reply (refuse)


@dataclass(frozen=True)
class RAGContext:
    """What the nodes use but the state does not carry: the retriever (with its cutoff) and the chat model."""

    retriever: BaseRetriever
    llm: BaseChatModel


def format_context(documents: list[Document]) -> str:
    """Number the passages so the model can cite them as [1], [2], ..., each fenced as data (rag_lib.prompts)."""
    return "\n\n".join(
        passage_block(i, d.page_content, str(d.metadata.get("source", "?"))) for i, d in enumerate(documents, 1)
    )


def refusal_for(question: str) -> str:
    """The fixed "not in the documents" reply, in the question's language."""
    return REFUSAL[detect_language(question)]


def answer_prompt(question: str, documents: list[Document]) -> list:
    """Chat messages for a grounded answer, uncut (answer_messages fits them to the model first): the rules, the
    fenced passages and the rules again in the system message, the question alone in the user turn, so text in a
    passage never stands where the user's words do."""
    system = SYSTEM_PROMPT.format(refusal=refusal_for(question))
    context = f"{system}\n\nContext:\n{format_context(documents)}\n\n{PASSAGE_REMINDER}"
    return [SystemMessage(context), HumanMessage(question)]


def answer_messages(question: str, documents: list[Document], llm: BaseChatModel | None = None) -> list:
    """Chat messages for a grounded answer, cut to fit `llm`'s context window with room for the reply (question
    first, then the lowest-ranked passages; `llm` None: an assumed 4,096-token window, see rag_lib.prompts)."""
    return answer_prompt(*fit_prompt(llm, answer_prompt, question, documents))


def retrieve(state: RAGState, runtime: Runtime[RAGContext]) -> dict:
    """Search the index with the question; the retriever leaves out passages below its similarity cutoff."""
    return {"documents": runtime.context.retriever.invoke(state["question"])}


def generate(state: RAGState, runtime: Runtime[RAGContext]) -> dict:
    """Answer from the numbered passages, fitted to the model's window, citing them as [1], [2], ..."""
    llm = runtime.context.llm
    reply: AIMessage = llm.invoke(answer_messages(state["question"], state["documents"], llm))
    return {"answer": str(reply.content).strip()}


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
