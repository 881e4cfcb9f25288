"""tools/rewrite_imports.py: a notebook's imports, module.NAME uses and prose follow the moves RENAMES.txt lists, and
a second run changes nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from rewrite_imports import Move, pending_moves, rewrite_notebook  # noqa: E402

MODULE = Move("rag_lib.demo", "rag_lib.experiments.demo")
NAME = Move("rag_lib.loaders", "rag_lib.experiments.sample_pdf", "make_pdf", "make_pdf")
PROMPT = Move("rag_lib.prompts", "rag_lib.experiments.advanced", "HYDE_PROMPT", "HYDE_PROMPT")


def notebook(tmp_path: Path, *cells: tuple[str, str]) -> Path:
    path = tmp_path / "nb.ipynb"
    cells_json = [{"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True)}
                  | ({"outputs": [], "execution_count": None} if kind == "code" else {}) for kind, text in cells]
    path.write_text(json.dumps({"cells": cells_json, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))
    return path


def sources(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]


def test_a_moved_module_and_a_moved_name_are_imported_from_their_new_place(tmp_path):
    path = notebook(tmp_path, ("code", "from rag_lib import demo, store\n"
                                       "from rag_lib.embeddings import get_embeddings\n"
                                       "from rag_lib.loaders import load_file, make_pdf\n"
                                       "from rag_lib.store import connect"))
    rewrite_notebook(path, [MODULE, NAME], prose=False)
    assert sources(path) == ["from rag_lib import store\n"
                             "from rag_lib.embeddings import get_embeddings\n"
                             "from rag_lib.experiments import demo\n"
                             "from rag_lib.experiments.sample_pdf import make_pdf\n"
                             "from rag_lib.loaders import load_file\n"
                             "from rag_lib.store import connect"]  # the block was sorted, so it stays sorted
    assert rewrite_notebook(path, [MODULE, NAME], prose=False) == []  # nothing left to change


def test_module_dot_name_follows_the_name_and_the_unused_alias_goes(tmp_path):
    path = notebook(tmp_path, ("code", "from rag_lib import prompts\nfrom rag_lib.experiments import advanced"),
                    ("code", "print(prompts.HYDE_PROMPT)  # prompts as text"))
    rewrite_notebook(path, [PROMPT], prose=False)
    assert sources(path) == ["from rag_lib.experiments import advanced",
                             "print(advanced.HYDE_PROMPT)  # prompts as text"]


def test_prose_follows_a_moved_module_only_with_prose(tmp_path):
    text = "Run `rag_lib/demo.py` or `rag_lib.demo.main`; `rag_lib.demonstration` is another module."
    path = notebook(tmp_path, ("markdown", text))
    assert rewrite_notebook(path, [MODULE], prose=False) == [] and sources(path) == [text]
    rewrite_notebook(path, [MODULE], prose=True)
    assert sources(path) == ["Run `rag_lib/experiments/demo.py` or `rag_lib.experiments.demo.main`; "
                             "`rag_lib.demonstration` is another module."]


def test_only_moves_whose_old_path_is_gone_are_pending(tmp_path):
    renames = tmp_path / "RENAMES.txt"
    renames.write_text("rag_lib.demo -> rag_lib.experiments.demo   (make demo)\n"
                       "rag_lib.store -> rag_lib.experiments.demo\n"  # the old module still imports: not applied
                       "rag_lib.loaders.make_pdf -> rag_lib.experiments.sample_pdf.make_pdf\n"
                       "rag_lib.graphs.judge.draw_tree -> removed (only its test used it)\n")
    assert pending_moves(renames) == [MODULE, NAME]
