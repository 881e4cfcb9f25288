"""Counting a chat model's calls and tokens through a LangChain callback: a cost measure independent of machine load."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from rag_lib.gguf import ensure_qwen_gguf


class TokenCounter(BaseCallbackHandler):
    """Counts chat-model calls and the tokens they read and wrote (messages + tool schemas, template tokens
    excluded): a cost measure that does not depend on how busy the machine is. The local model streams, so it
    reports no usage itself; `count_tokens` is its tokenizer (see `token_counter_for`).
    Pass it as config={"callbacks": [counter]}. Thread-safe: the judge graph's parallel tasks share it."""

    def __init__(self, count_tokens: Callable[[str], int]) -> None:
        self.count_tokens = count_tokens
        self.calls = self.prompt_tokens = self.completion_tokens = 0
        self._lock = threading.Lock()

    def on_chat_model_start(self, serialized: dict, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        tools = (kwargs.get("invocation_params") or {}).get("tools") or []
        text = "\n".join(str(m.content) for batch in messages for m in batch)
        text += json.dumps(tools, ensure_ascii=False) if tools else ""
        tokens = self.count_tokens(text)
        with self._lock:
            self.calls += 1
            self.prompt_tokens += tokens

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generation in (g for batch in response.generations for g in batch):
            calls = getattr(getattr(generation, "message", None), "tool_calls", None) or []
            text = generation.text + "".join(json.dumps(c["args"], ensure_ascii=False) for c in calls)
            tokens = self.count_tokens(text)
            with self._lock:
                self.completion_tokens += tokens


def token_counter_for(llm: BaseChatModel) -> Callable[[str], int]:
    """The model's own tokenizer for the local GGUF; for an endpoint, the Qwen GGUF's vocabulary (exact for a
    served Qwen, an estimate for other models: LangChain's get_num_tokens would download tiktoken's tables)."""
    client = getattr(llm, "client", None)
    client = client if hasattr(client, "tokenize") else qwen_vocabulary()
    return lambda text: len(client.tokenize(text.encode("utf-8"), add_bos=False, special=True)) if text else 0


@lru_cache(maxsize=1)
def qwen_vocabulary() -> Any:
    """The Qwen GGUF's tokenizer alone (llama.cpp vocab_only: no weights loaded)."""
    from llama_cpp import Llama

    return Llama(model_path=str(ensure_qwen_gguf()), vocab_only=True, verbose=False)
