"""The course's chat model: the provider `rag_lib.providers.chat_settings` resolves (the local Qwen GGUF on llama.cpp
by default, or an OpenAI-compatible endpoint), one shared instance per process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_community.chat_models import ChatLlamaCpp
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr

from rag_lib.gguf import ensure_qwen_gguf
from rag_lib.providers import chat_settings


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
