"""Every notebook keeps the course's shape: its markdown within the word budget, the closing sections in order, and
nothing of the test harness in what a learner reads."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]*_*.ipynb"))  # 07b_... too
MAX_WORDS = 2_500  # markdown words per notebook before the exercises, counted as \w+ runs (stricter than split())
CLOSING = ("What to take away", "Sources", "Exercises")


def lesson_markdown(notebook: nbformat.NotebookNode) -> list[str]:
    """The markdown cells up to the exercises (exercises and their solutions are not counted)."""
    cells = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            if re.match(r"\s*#+\s*.*(Exercise|Solution)", cell.source):
                break
            cells.append(cell.source)
    return cells


def headings(notebook: nbformat.NotebookNode) -> list[str]:
    """The level-2 headings without their section numbers, in order."""
    return [re.sub(r"^\d+\s*[·.]\s*", "", line[3:].strip()) for cell in notebook.cells if cell.cell_type == "markdown"
            for line in cell.source.splitlines() if line.startswith("## ")]


@pytest.fixture(params=NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def notebook(request: pytest.FixtureRequest) -> nbformat.NotebookNode:
    return nbformat.read(request.param, as_version=4)


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 15


def test_the_markdown_is_within_the_budget(notebook: nbformat.NotebookNode) -> None:
    words = sum(len(re.findall(r"\w+", source)) for source in lesson_markdown(notebook))
    assert 0 < words <= MAX_WORDS, f"{words} words of markdown before the exercises (budget {MAX_WORDS})"


def test_takeaways_sources_and_exercises_close_it_in_that_order(notebook: nbformat.NotebookNode) -> None:
    found = [next((i for i, h in enumerate(headings(notebook)) if h.startswith(name)), None) for name in CLOSING]
    assert None not in found, f"missing one of {CLOSING}: headings are {headings(notebook)}"
    assert found == sorted(found), f"{CLOSING} appear out of order"


def test_no_test_harness_comments_or_widget_reprs(notebook: nbformat.NotebookNode) -> None:
    assert "widgets" not in notebook.metadata, "saved widget state replays a frozen progress bar: strip it"
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        assert "NBVAL" not in cell.source, "nbval reads cell tags (nbval-ignore-output), not comments"
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
            assert "interactive(children=" not in text, "a widget's repr where a static result belongs"


def test_solutions_run_without_asserts(notebook: nbformat.NotebookNode) -> None:
    solutions = [c for c in notebook.cells if "solution" in c.get("metadata", {}).get("tags", [])]
    for cell in solutions:
        assert cell.cell_type == "code"
        assert not re.search(r"^\s*assert\b", cell.source, re.M), "a solution prints its result; tests assert"
