"""Structured output (JSON that fits a pydantic schema) from any chat model, requested in one place:
`structured_output`. A grammar-forced tool call on llama.cpp; on an OpenAI-compatible endpoint the method
RAG_LLM_STRUCTURED names, or else the first one a probe of the server accepts."""

from __future__ import annotations

import json
import logging
import sys
import threading
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, convert_to_messages
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from pydantic import BaseModel, ValidationError

from rag_lib.prompts import JSON_INSTRUCTION, PROBE_PROMPT
from rag_lib.settings import STRUCTURED_METHODS, ConfigError, settings

# (base URL, model) -> the method the probe found: remembered for the process (clear it to probe again)
PROBED_METHODS: dict[tuple[str, str], str] = {}
_probe_lock = threading.Lock()
log = logging.getLogger(__name__)

REPLY_PREVIEW = 160  # characters of a bad reply quoted in StructuredOutputError


class StructuredOutputError(ValueError):
    """The model's reply does not fit the requested schema; callers catch it and fall back to a safe default."""


class ProbeReply(BaseModel):
    """Answer the question."""

    yes: bool


def structured_setting() -> str | None:
    """RAG_LLM_STRUCTURED, or None when unset (then an OpenAI-compatible endpoint is probed)."""
    return settings().RAG_LLM_STRUCTURED


def _is_llama_cpp(llm: Any) -> bool:
    """Whether `llm` is langchain-community's ChatLlamaCpp (checked without importing langchain-community)."""
    module = sys.modules.get("langchain_community.chat_models.llamacpp")
    return module is not None and isinstance(llm, module.ChatLlamaCpp)


def _is_openai_endpoint(llm: Any) -> bool:
    """Whether `llm` is langchain-openai's ChatOpenAI (checked without importing langchain-openai)."""
    module = sys.modules.get("langchain_openai")
    return module is not None and isinstance(llm, module.ChatOpenAI)


def structured_method(llm: BaseChatModel) -> str | None:
    """How `structured_output` asks `llm` for JSON: None on llama.cpp (a grammar-forced tool call); else
    RAG_LLM_STRUCTURED, or for an OpenAI-compatible endpoint what `probe_structured_method` finds (once)."""
    setting = structured_setting()
    if _is_llama_cpp(llm):
        if setting not in (None, "function_calling"):
            raise ConfigError(
                f"RAG_LLM_STRUCTURED={setting} applies to OpenAI-compatible endpoints (RAG_LLM_MODEL); the local "
                "llama.cpp model always answers with a grammar-forced tool call: unset RAG_LLM_STRUCTURED.")
        return None
    if setting or not _is_openai_endpoint(llm):
        return setting
    key = (str(llm.openai_api_base or "https://api.openai.com/v1"), str(llm.model_name))
    with _probe_lock:  # parallel graph branches wait for one probe
        if key not in PROBED_METHODS:
            PROBED_METHODS[key] = probe_structured_method(llm)
            log.info("structured output for %s at %s: %s", key[1], key[0], PROBED_METHODS[key])
        return PROBED_METHODS[key]


def probe_structured_method(llm: BaseChatModel) -> str:
    """The first of STRUCTURED_METHODS the endpoint answers in a tiny schema; ConfigError when none works (refused
    key, model or quota errors are raised as they are)."""
    import openai

    failures = []
    for method in STRUCTURED_METHODS:
        try:
            # no callbacks: the probe is not part of the caller's run (token counters, streams, traces)
            _structured(llm, ProbeReply, method, max_tokens=32).invoke(PROBE_PROMPT, {"callbacks": []})
            return method
        except StructuredOutputError as error:
            failures.append(f"{method}: {error}")
        except openai.APIStatusError as error:
            if error.status_code in (401, 403, 404, 429):
                raise
            failures.append(f"{method}: HTTP {error.status_code} {_short(error.message)}")
    raise ConfigError(
        f"no structured-output method works with {getattr(llm, 'model_name', llm)} at "
        f"{getattr(llm, 'openai_api_base', None) or 'api.openai.com'} ({'; '.join(failures)}). Set "
        f"RAG_LLM_STRUCTURED to the method your provider documents ({', '.join(STRUCTURED_METHODS)}), or use a "
        "model that supports tool calls or JSON output.")


def structured_output(llm: BaseChatModel, schema: type[BaseModel], *, max_tokens: int | None = None) -> Runnable:
    """`llm` answering with an instance of `schema` (StructuredOutputError when a reply does not fit), the method
    resolved at the first call. Never streamed: a streamed llama.cpp tool call repeats the tool name in every chunk,
    and the merged call no longer parses. `max_tokens` caps the reply (with_structured_output drops a `.bind`)."""
    setting = structured_setting()  # a bad value fails now, not at the first call
    if _is_llama_cpp(llm):
        structured_method(llm)
    built: dict[str | None, Runnable] = {}

    def call(value: Any, config: RunnableConfig) -> BaseModel:
        method = structured_method(llm)
        if method not in built:
            built[method] = _structured(llm, schema, method, max_tokens)
        try:
            return built[method].invoke(value, config)
        except Exception as error:
            status = getattr(error, "status_code", None)
            if setting and status in (400, 422, 500) and _is_openai_endpoint(llm):
                raise ConfigError(
                    f"the server refused structured output with RAG_LLM_STRUCTURED={setting} (HTTP {status}: "
                    f"{_short(getattr(error, 'message', str(error)))}): set RAG_LLM_STRUCTURED to a method it "
                    "supports, or unset it to let the course probe the server.") from error
            raise

    return RunnableLambda(call, name=f"structured_output[{schema.__name__}]")


def _structured(llm: BaseChatModel, schema: type[BaseModel], method: str | None, max_tokens: int | None) -> Runnable:
    """The structured call for one known method (None: the model's own default), unstreamed and capped."""
    update: dict[str, Any] = {"disable_streaming": True}
    if "streaming" in type(llm).model_fields:
        update["streaming"] = False  # ChatOpenAI / ChatLlamaCpp would otherwise stream inside invoke
    if max_tokens is not None:
        update["max_tokens"] = max_tokens
    chain = llm.model_copy(update=update).with_structured_output(
        schema, include_raw=True, **({"method": method} if method else {})
    )

    def call(value: Any, config: RunnableConfig) -> BaseModel:
        if method == "json_mode":
            value = with_json_instruction(value, schema)
        try:
            output = chain.invoke(value, config)
        except _unreadable_errors() as error:  # raised inside the model call (e.g. OpenAI's json_schema parse)
            raise StructuredOutputError(_describe(schema, error, None)) from error
        return parsed_reply(output, schema)

    return RunnableLambda(call, name=schema.__name__)


def _unreadable_errors() -> tuple[type[Exception], ...]:
    """Exceptions that mean "the reply is not valid output" (not "the request failed")."""
    errors: tuple[type[Exception], ...] = (ValidationError, OutputParserException, json.JSONDecodeError)
    openai = sys.modules.get("openai")
    if openai is not None:  # a reply cut at max_tokens or filtered, in OpenAI's json_schema parsing
        errors += (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError)
    return errors


def parsed_reply(output: Any, schema: type[BaseModel]) -> BaseModel:
    """The `schema` instance in a structured call's output (include_raw=True, or a plain value), else
    StructuredOutputError."""
    raw, error = None, None
    if isinstance(output, dict) and {"raw", "parsed", "parsing_error"} <= output.keys():
        raw, output, error = output["raw"], output["parsed"], output["parsing_error"]
    if error is None and output is None:
        error = "no tool call or JSON object in the reply"
    if error is None and not isinstance(output, schema):
        try:
            output = schema.model_validate(output)
        except ValidationError as invalid:
            error = invalid
    if error is not None:
        cause = error if isinstance(error, Exception) else None
        raise StructuredOutputError(_describe(schema, error, raw)) from cause
    return output


def with_json_instruction(value: Any, schema: type[BaseModel]) -> list[BaseMessage]:
    """The prompt with `schema` spelled out at the end of its system message: JSON mode needs it in the prompt."""
    if isinstance(value, str):
        messages: list[BaseMessage] = [HumanMessage(value)]
    elif isinstance(value, PromptValue):
        messages = value.to_messages()
    else:
        messages = convert_to_messages(value)
    instruction = JSON_INSTRUCTION.format(schema=schema_text(schema))
    if messages and isinstance(messages[0], SystemMessage) and isinstance(messages[0].content, str):
        return [SystemMessage(f"{messages[0].content}\n\n{instruction}"), *messages[1:]]
    return [SystemMessage(instruction), *messages]


def schema_text(schema: type[BaseModel]) -> str:
    """The JSON schema of `schema` on one line, without pydantic's "title" entries (prompt tokens cost time)."""

    def strip(node: Any, names: bool = False) -> Any:
        if isinstance(node, dict):  # under "properties"/"$defs" the keys are field names: keep them all
            return {k: strip(v, not names and k in ("properties", "$defs")) for k, v in node.items()
                    if names or k != "title"}
        return [strip(v) for v in node] if isinstance(node, list) else node

    return json.dumps(strip(schema.model_json_schema()), ensure_ascii=False)


def _describe(schema: type[BaseModel], error: Any, raw: Any) -> str:
    """"<Schema>: the model's reply does not fit the schema (<why>); reply: '<the reply, cut>'"."""
    if isinstance(error, OutputParserException) and isinstance(error.__cause__, ValidationError):
        error = error.__cause__
    reply = _reply_text(raw) if raw is not None else getattr(error, "llm_output", None)
    if isinstance(error, ValidationError):
        problems = error.errors()
        why = "; ".join(f"{'.'.join(map(str, p['loc'])) or 'reply'}: {p['msg']}" for p in problems[:3])
        if reply is None and isinstance(problems[0].get("input"), str):
            reply = problems[0]["input"]
    else:
        why = _short(str(error).split("For troubleshooting")[0])  # LangChain appends a link to its parser errors
    text = f"{schema.__name__}: the model's reply does not fit the schema ({why})"
    return f"{text}; reply: {_short(reply)!r}" if reply else text


def _reply_text(message: Any) -> str:
    """What the model answered: the first tool call's arguments, else the text."""
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        return json.dumps(calls[0].get("args"), ensure_ascii=False)
    invalid = getattr(message, "invalid_tool_calls", None) or []
    if invalid:
        return str(invalid[0].get("args"))
    return str(getattr(message, "content", message))


def _short(text: Any, limit: int = REPLY_PREVIEW) -> str:
    """One line of at most `limit` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
