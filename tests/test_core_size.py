"""The copyable core stays small: its line total, its largest module and its longest function have ceilings; the
benchmarks, the app and the experiments keep the same two ceilings per module and per function.

The core is rag_lib/ without app/ and experiments/ (the layers tests/test_imports.py keeps apart). The targets are
4,500 lines in all, 400 a module and 50 a function; CORE_LINES is the total reached so far (within the target):
lower it as the core shrinks; raise it only in a commit that names the behaviour the new lines add.
MODULE_LINES and FUNCTION_LINES also hold every module of the folders in LIMITED_FOLDERS (benchmarks/,
rag_lib/app/ and rag_lib/experiments/; one line adds a folder); the line total is the core's alone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rag_lib

PACKAGE = Path(rag_lib.__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[1]
CORE_LINES = 4496  # target 4,500
MODULE_LINES = 400
FUNCTION_LINES = 50
# besides the core, the folders whose every module and function MODULE_LINES and FUNCTION_LINES hold
LIMITED_FOLDERS = (
    ROOT / "benchmarks",
    PACKAGE / "app",
    PACKAGE / "experiments",
)


def core_modules() -> dict[str, Path]:
    """Path inside rag_lib -> file, for every module of the core."""
    files = (p for p in PACKAGE.rglob("*.py") if not {"app", "experiments"} & set(p.relative_to(PACKAGE).parts))
    return {p.relative_to(PACKAGE).as_posix(): p for p in sorted(files)}


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_core_has_at_most_core_lines():
    assert sum(line_count(p) for p in core_modules().values()) <= CORE_LINES


@pytest.mark.parametrize("name", sorted(core_modules()))
def test_no_core_module_is_longer_than_module_lines(name):
    assert line_count(core_modules()[name]) <= MODULE_LINES


def long_functions(modules: dict[str, Path]) -> list[str]:
    """"module:function (n lines)" for every function (methods and nested ones too) over FUNCTION_LINES."""
    return [
        f"{name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for name, path in modules.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > FUNCTION_LINES
    ]


def limited_modules() -> dict[str, Path]:
    """Path inside the repository -> file, for every module under LIMITED_FOLDERS."""
    files = sorted(p for folder in LIMITED_FOLDERS for p in folder.rglob("*.py"))
    return {p.relative_to(ROOT).as_posix(): p for p in files}


def test_no_core_function_is_longer_than_function_lines():
    assert long_functions(core_modules()) == []


def test_the_limited_folders_hold_modules():
    assert all(any(folder.rglob("*.py")) for folder in LIMITED_FOLDERS)  # a moved folder must not pass unseen


@pytest.mark.parametrize("name", sorted(limited_modules()))
def test_no_benchmark_or_app_module_is_longer_than_module_lines(name):
    assert line_count(limited_modules()[name]) <= MODULE_LINES


def test_no_benchmark_or_app_function_is_longer_than_function_lines():
    assert long_functions(limited_modules()) == []
