"""TEST DOUBLES for the chat model (not language models). They offer tools the way an OpenAI-style chat model does,
so structured output goes through LangChain's own path (bind_tools -> tool-call parser), as with the real model."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool


def tool_call(name: str, arguments: dict | str) -> AIMessage:
    """A raw OpenAI-style tool call as a server sends it; `arguments` a dict, or the raw (maybe broken) JSON text."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": text}}
    return AIMessage("", additional_kwargs={"tool_calls": [call]})


class ToolCallingDouble(BaseChatModel):
    """Base of the doubles: a subclass writes `reply(messages, tool)`, where `tool` is the name of the tool offered
    (a structured request) or None (a plain request)."""

    @property
    def _llm_type(self) -> str:
        return f"{type(self).__name__}-test-double"

    def bind_tools(self, tools: list, *, tool_choice: Any = None, **kwargs: Any):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        tool = kwargs["tools"][0]["function"]["name"] if kwargs.get("tools") else None
        return ChatResult(generations=[ChatGeneration(message=self.reply(messages, tool))])

    def reply(self, messages: list[BaseMessage], tool: str | None) -> AIMessage:
        raise NotImplementedError("a test double answers in its own reply()")
