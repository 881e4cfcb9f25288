"""Two-step RAG as a LangChain agent: search first, then one model call that answers from the passages.

LangChain v1's two-step pattern: `create_agent` with no tools, a `before_model` middleware that retrieves (keeping
the passages as the answer's sources) and a `dynamic_prompt` middleware that puts them into plain RAG's prompt.
"""

from __future__ import annotations

from typing import Any, NotRequired

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, dynamic_prompt, hook_config
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from rag_lib.graphs.rag import answer_messages, refusal_for


class PassagesState(AgentState):
    """The agent's state plus the passages retrieved for the last question."""

    documents: NotRequired[list[Document]]


def last_question(messages: list[AnyMessage]) -> str:
    """The text of the user's last message ("" when there is none)."""
    return next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")


class RetrieveFirst(AgentMiddleware[PassagesState]):
    """Before the model call: search with the user's last question and keep the passages in `documents`; when none
    passes the retriever's cutoff, end the run with the fixed refusal instead of calling the model."""

    state_schema = PassagesState

    def __init__(self, retriever: BaseRetriever) -> None:
        super().__init__()
        self.retriever = retriever

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: PassagesState, runtime: Runtime) -> dict[str, Any]:
        """{"documents": the passages}, or the refusal and a jump to the end when there are none."""
        question = last_question(state["messages"])
        documents = self.retriever.invoke(question)
        if not documents:
            return {"documents": [], "messages": [AIMessage(refusal_for(question))], "jump_to": "end"}
        return {"documents": documents}


@dynamic_prompt
def passages_prompt(request: ModelRequest) -> str:
    """Plain RAG's system prompt (rules, numbered passages, reminder) over the passages RetrieveFirst kept, fitted to
    the model's window."""
    question = last_question(request.messages)
    return answer_messages(question, request.state["documents"], request.model)[0].text


def build_two_step_agent(
    llm: BaseChatModel, retriever: BaseRetriever, checkpointer: BaseCheckpointSaver | None = None,
) -> CompiledStateGraph:
    """A tool-less `create_agent` that answers every question from the passages `retriever` returns: invoke with
    {"messages": [HumanMessage(question)]}; the answer is the last message, its sources are in "documents"."""
    return create_agent(llm, tools=[], middleware=[RetrieveFirst(retriever), passages_prompt],
                        checkpointer=checkpointer)
