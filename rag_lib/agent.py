"""Agentic RAG: LangChain's `create_agent` with a document-search tool and a web-search tool; the model decides
at each step whether to search (which tool, what query) or to answer.

llama.cpp never takes tool_choice "auto", so `ToolOrAnswer` middleware makes the choice by constrained decoding:
each step replies with one JSON object `{"action": <a tool name or "answer">, "query": ..., "answer": ...}`
(`build_agent(..., constrained=False)` for models with native tool calling). After `max_tool_calls` searches only
"answer" is offered, and ModelCallLimitMiddleware stops a run after `max_model_calls` model calls.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelCallLimitMiddleware,
    ModelRequest,
    ModelResponse,
    ToolRetryMiddleware,
)
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import BaseModel, Field, create_model

from rag_lib.prompts import AGENT_PROMPT, ANSWER_ONLY, RESULTS_REQUEST, cap_question, passage_block
from rag_lib.structured import StructuredOutputError, structured_output
from rag_lib.text import detect_language
from rag_lib.websearch import (
    WEB_ATTEMPTS,
    WEB_RETRY_DELAY,
    WEB_TIMEOUT,
    WebSearch,
    failure_reason,
    is_transient,
    search_pages,
)

NO_REPLY = {"en": "I could not work out an answer to this question.", "zh": "我无法回答这个问题。"}
STEP_TOKENS = 256  # one step: a query, or a short final answer
RESULT_CHARS = 1500  # a tool result longer than this is cut: every prompt token costs time on a CPU


def format_results(documents: Sequence[Document], max_chars: int = RESULT_CHARS) -> str:
    """Documents as fenced passages (`passage_block`) with their source, cut to `max_chars` in all."""
    if not documents:
        return "No results."
    blocks, used = [], 0
    for number, document in enumerate(documents, 1):
        source = str(document.metadata.get("source") or document.metadata.get("url") or "")
        room = max_chars - used
        if room <= 0:
            break
        block = passage_block(number, document.page_content[:room], source.rsplit("/", 1)[-1])
        blocks.append(block)
        used += len(document.page_content[:room])
    return "\n".join(blocks)


def docs_tool(retriever: BaseRetriever, name: str = "search_docs") -> BaseTool:
    """The retriever as a tool taking one `query`; results as fenced passages, the Documents kept as its artifact."""

    def search(query: str) -> tuple[str, list[Document]]:
        documents = retriever.invoke(query)
        return format_results(documents), documents

    return StructuredTool.from_function(
        search, name=name, response_format="content_and_artifact",
        description="Search the course documents (Milvus, vector search, embeddings, RAG, LangChain, LangGraph).",
    )


WEB_TOOL = "web_search"  # the tag of a tool under the web policy: build_agent retries its transient failures


def failed_search(error: BaseException) -> str:
    """What the model reads when the web search failed for good."""
    return f"The web search failed: {failure_reason(error)}"


def web_tool(web_search: WebSearch, k: int = 3, name: str = "web_search", web_timeout: float = WEB_TIMEOUT) -> BaseTool:
    """The web search as a tool taking one `query` (rag_lib.websearch.search_pages): a transient failure is raised
    for `web_retry`, any other is reported to the model."""

    def search(query: str) -> tuple[str, list[Document]]:
        try:
            pages, _ = search_pages(web_search, query, k, web_timeout)
        except Exception as error:  # the WebSearch protocol is open: a plugged-in backend may raise anything
            if is_transient(error):
                raise
            return failed_search(error), []
        return format_results(pages), pages

    return StructuredTool.from_function(
        search, name=name, response_format="content_and_artifact", tags=[WEB_TOOL],
        description="Search the web for facts that are not in the course documents.",
    )


def web_retry(tools: Sequence[BaseTool]) -> ToolRetryMiddleware:
    """LangChain's ToolRetryMiddleware under the web policy, for the tools tagged WEB_TOOL: a transient failure
    is tried again (WEB_ATTEMPTS tries, WEB_RETRY_DELAY seconds apart) and the last one is reported to the model."""
    return ToolRetryMiddleware(
        max_retries=WEB_ATTEMPTS - 1, tools=[t.name for t in tools if WEB_TOOL in (t.tags or [])],
        retry_on=is_transient, on_failure=failed_search, initial_delay=WEB_RETRY_DELAY, jitter=False,
    )


def step_schema(tool_names: Sequence[str], answer_only: bool = False) -> type[BaseModel]:
    """The reply schema of one step: `action` (a tool, or "answer"), `query` the tool's input, `answer` the reply."""
    actions = ("answer",) if answer_only else (*tool_names, "answer")
    return create_model(
        "AgentStep",
        __doc__="Your next step: call one tool with a query, or give the final answer.",
        action=(Literal[actions], Field(description="a tool name, or 'answer' to reply to the user")),  # type: ignore[valid-type]
        query=(str, Field("", description="what to search for, when action is a tool")),
        answer=(str, Field("", description="the reply to the user, when action is 'answer'")),
    )


def plain_messages(system: str, messages: Sequence[BaseMessage], llm: BaseChatModel | None = None) -> list[BaseMessage]:
    """The conversation as plain chat messages: a tool call becomes the step's JSON, a tool result a user message
    with the fenced passages and, last, the question again (a small model follows what it read last)."""
    out: list[BaseMessage] = [SystemMessage(system)]
    question = ""
    for message in messages:
        if isinstance(message, ToolMessage):
            out.append(HumanMessage(RESULTS_REQUEST.format(tool=message.name, results=message.content,
                                                           question=question)))
        elif isinstance(message, AIMessage) and message.tool_calls:
            call = message.tool_calls[0]
            out.append(AIMessage(json.dumps({"action": call["name"], **call["args"]}, ensure_ascii=False)))
        elif isinstance(message, HumanMessage):
            question = cap_question(str(message.content), llm)
            out.append(HumanMessage(question))
        else:
            out.append(message)
    return out


def question_start(messages: Sequence[BaseMessage]) -> int:
    """Where the last user question is in the messages (-1 when there is none): what follows is the work done for it."""
    return max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)


def tool_calls_since_question(messages: Sequence[BaseMessage]) -> int:
    """How many tool results follow the last user question: the searches made for it so far."""
    count = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        count += isinstance(message, ToolMessage)
    return count


def question_language(messages: Sequence[BaseMessage]) -> str:
    """The last user question's language (`detect_language`), for the fixed replies."""
    question = next((str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    return detect_language(question)


def agent_prompt(tools: Sequence[BaseTool | dict[str, Any]]) -> str:
    """AGENT_PROMPT with one "- name: description" line per tool."""
    lines = "\n".join(f"- {t.name}: {t.description}" for t in tools if isinstance(t, BaseTool))
    return AGENT_PROMPT.replace("{tools}", lines)


def check_tools(tools: Sequence[BaseTool]) -> None:
    """ValueError unless every tool takes exactly one argument, `query` (what the step schema can express)."""
    for tool in tools:
        if list(tool.args) != ["query"]:
            raise ValueError(
                f"tool {tool.name!r} takes {list(tool.args)}: ToolOrAnswer drives tools that take one string "
                "`query`; wrap it in such a tool, or use a model with native tool calling (constrained=False).")


def next_step(llm: BaseChatModel, tools: Sequence[BaseTool], messages: Sequence[BaseMessage],
              max_tool_calls: int = 2) -> AIMessage:
    """One constrained step: an AIMessage with one tool call, or with the final answer. A reply that breaks the
    schema becomes a fixed "could not answer" reply; after `max_tool_calls` searches only "answer" is offered."""
    check_tools(tools)
    done = tool_calls_since_question(messages) >= max_tool_calls
    system = agent_prompt(tools) + (f"\n{ANSWER_ONLY}" if done else "")
    schema = step_schema([t.name for t in tools], answer_only=done or not tools)
    fallback = NO_REPLY[question_language(messages)]
    try:
        step = structured_output(llm, schema, max_tokens=STEP_TOKENS).invoke(plain_messages(system, messages, llm))
    except StructuredOutputError:
        return AIMessage(fallback)
    if step.action == "answer" or not step.query.strip():
        return AIMessage(step.answer.strip() or fallback)
    call = {"name": step.action, "args": {"query": step.query.strip()}, "id": f"call_{uuid.uuid4().hex[:12]}"}
    return AIMessage("", tool_calls=[call])


class ToolOrAnswer(AgentMiddleware):
    """Replaces the agent's model call with `next_step`: the reply is a tool call or the final answer."""

    def __init__(self, max_tool_calls: int = 2) -> None:
        super().__init__()
        if max_tool_calls < 0:
            raise ValueError(f"max_tool_calls={max_tool_calls}: give 0 (answer without searching) or more.")
        self.max_tool_calls = max_tool_calls

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> AIMessage:
        """The constrained step instead of `handler` (the unconstrained call is never made)."""
        tools = [t for t in request.tools if isinstance(t, BaseTool)]
        return next_step(request.model, tools, request.messages, self.max_tool_calls)


def conversation(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages without the searches made for earlier questions (their tool calls and results): the user's turns
    and the answers, then the last question and what follows it."""
    start = max(question_start(messages), 0)
    earlier = [m for m in messages[:start]
               if not isinstance(m, ToolMessage) and not (isinstance(m, AIMessage) and m.tool_calls)]
    return earlier + list(messages[start:])


class FreshQuestion(AgentMiddleware):
    """Starts every question on a thread from the conversation alone: earlier questions' searches leave the thread,
    so the prompt does not grow with old passages."""

    def before_agent(self, state: dict[str, Any], runtime: Runtime) -> dict[str, Any] | None:
        """The thread's messages as `conversation` keeps them, when earlier searches are there to drop."""
        kept = conversation(state["messages"])
        return {"messages": Overwrite(kept)} if len(kept) < len(state["messages"]) else None


def build_agent(llm: BaseChatModel, tools: Sequence[BaseTool], *, constrained: bool = True, max_tool_calls: int = 2,
                max_model_calls: int = 4, checkpointer: BaseCheckpointSaver | None = None) -> CompiledStateGraph:
    """`create_agent` over `tools`; `constrained` adds ToolOrAnswer (needed by the local model). More than
    `max_model_calls` model calls raise ModelCallLimitExceededError (`run_agent` turns it into a fixed reply)."""
    if constrained:
        check_tools(tools)  # fail when the agent is built, not at its first step
    middleware: list[AgentMiddleware] = [FreshQuestion(), *([ToolOrAnswer(max_tool_calls)] if constrained else [])]
    middleware += [ModelCallLimitMiddleware(run_limit=max_model_calls, exit_behavior="error"), web_retry(tools)]
    return create_agent(llm, list(tools), system_prompt=agent_prompt(tools), middleware=middleware,
                        checkpointer=checkpointer)


def trajectory(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    """The (tool name, query) of every tool call after the last user question, in order."""
    return [(c["name"], str(c["args"].get("query", c["args"]))) for m in messages[question_start(messages) + 1:]
            if isinstance(m, AIMessage) for c in m.tool_calls]


def run_agent(agent: CompiledStateGraph, question: str, *, config: dict | None = None) -> dict[str, Any]:
    """Answer `question`: {"answer", "tools" (trajectory), "documents" (what the tools returned), "messages",
    "stopped" (True when the model call limit ended the run)}."""
    try:
        state = agent.invoke({"messages": [HumanMessage(question)]}, config)
    except ModelCallLimitExceededError:
        language = question_language([HumanMessage(question)])
        return {"answer": NO_REPLY[language], "tools": [], "documents": [], "messages": [], "stopped": True}
    messages = state["messages"]
    documents = [d for m in messages[question_start(messages):] if isinstance(m, ToolMessage)
                 for d in (m.artifact or [])]
    return {"answer": str(messages[-1].content), "tools": trajectory(messages), "documents": documents,
            "messages": messages, "stopped": False}
