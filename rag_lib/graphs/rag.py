"""Plain RAG as a small LangGraph graph: retrieve -> generate (numbered sources) | refuse.

The retriever drops passages below a similarity cutoff; when nothing is left, `refuse` answers "not in
the documents" without calling the model. Asking a 1.5B model to judge "is the answer in here?" was
measured and is unreliable (it says yes to off-topic passages); the calibrated cutoff is not.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from rag_lib.prompts import PASSAGE_REMINDER, PASSAGE_RULE, fit_prompt, passage_block
from rag_lib.text import detect_language

SYSTEM_PROMPT = (
    "You answer questions using only the numbered context passages. Answer briefly in the language of the "
    "question and cite passages like [1]. If the passages do not contain the answer, reply only: {refusal}\n"
    + PASSAGE_RULE
)
REFUSAL = {"zh": "文档中没有找到相关信息。", "en": "The documents do not contain this information."}


class RAGState(TypedDict, total=False):
    question: str
    documents: list[Document]
    answer: str


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


def build_rag_graph(retriever: BaseRetriever, llm: BaseChatModel) -> CompiledStateGraph:
    """retrieve -> generate | refuse; stream with stream_mode="messages" to see the tokens."""

    def retrieve(state: RAGState) -> RAGState:
        return {"documents": retriever.invoke(state["question"])}

    def generate(state: RAGState) -> RAGState:
        reply: AIMessage = llm.invoke(answer_messages(state["question"], state["documents"], llm))
        return {"answer": str(reply.content).strip()}

    def refuse(state: RAGState) -> RAGState:
        return {"answer": refusal_for(state["question"])}

    def route(state: RAGState) -> Literal["generate", "refuse"]:
        return "generate" if state["documents"] else "refuse"

    graph = StateGraph(RAGState)
    graph.add_node("retrieve", retrieve)
    graph.add_node("generate", generate)
    graph.add_node("refuse", refuse)
    graph.add_edge(START, "retrieve")
    graph.add_conditional_edges("retrieve", route, {"generate": "generate", "refuse": "refuse"})
    graph.add_edge("generate", END)
    graph.add_edge("refuse", END)
    return graph.compile()
