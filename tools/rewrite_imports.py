"""Rewrite the notebooks' imports after rag_lib moves: `python tools/rewrite_imports.py notebooks/*.ipynb`.

Reads `old -> new` pairs from RENAMES.txt (a module, `rag_lib.demo -> rag_lib.experiments.demo`, or a name,
`rag_lib.loaders.make_pdf -> rag_lib.experiments.sample_pdf.make_pdf`) and applies only those whose old path no
longer imports, so running it again, or after merging other branches, changes nothing that already works. In code
cells it rewrites `from old import ...` lines, `from package import module` lines and `module.NAME` uses of a moved
name; with --prose it also rewrites moved dotted names and module file paths in markdown cells. Run it with the
project's Python and the repository on PYTHONPATH (it imports rag_lib to check what exists).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path

PAIR = re.compile(r"^([A-Za-z_][\w.]*) -> ([A-Za-z_][\w.]*)(?:\s|$)")
FROM_IMPORT = re.compile(r"^from ([\w.]+) import (\([^)]*\)|[^\n]*)$", re.M)
WIDTH = 120
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Move:
    """One entry of RENAMES.txt that still needs applying: a module (name None) or one name of a module."""

    old_module: str
    new_module: str
    old_name: str | None = None
    new_name: str | None = None


def is_module(path: str) -> bool:
    """Whether `path` imports from this repository (an editable install elsewhere may still hold an old module)."""
    try:
        spec = importlib.util.find_spec(path)
    except ModuleNotFoundError:
        return False
    return spec is not None and spec.origin is not None and Path(spec.origin).resolve().is_relative_to(ROOT)


def has_name(module: str, name: str) -> bool:
    return is_module(module) and hasattr(importlib.import_module(module), name)


def pending_moves(renames: Path) -> list[Move]:
    """The RENAMES.txt pairs whose old path no longer imports and whose new path does."""
    moves = []
    for line in renames.read_text(encoding="utf-8").splitlines():
        if not (match := PAIR.match(line)):
            continue
        old, new = match.groups()
        if is_module(new) and not is_module(old):
            moves.append(Move(old, new))
        elif "." in old and "." in new:
            (old_module, old_name), (new_module, new_name) = old.rsplit(".", 1), new.rsplit(".", 1)
            if has_name(new_module, new_name) and not has_name(old_module, old_name):
                moves.append(Move(old_module, new_module, old_name, new_name))
    return moves


def type_order(name: str) -> tuple[int, str]:
    """ruff's (isort's) order of imported names: CONSTANTS, then Classes, then functions and modules."""
    bare = name.split(" as ")[0]
    kind = 0 if bare.isupper() else 1 if bare[:1].isupper() else 2
    return kind, bare.lower()


def render(module: str, names: list[str]) -> str:
    """`from module import a, b` on one line when it fits, else one name a line in parentheses."""
    names = sorted(set(names), key=type_order)
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= WIDTH:
        return line
    return f"from {module} import (\n" + "".join(f"    {n},\n" for n in names) + ")"


def imported(names: str) -> list[str]:
    return [n.strip() for n in names.strip("()").replace("\n", " ").split(",") if n.strip()]


def split_module(path: str) -> tuple[str, str]:
    parent, _, leaf = path.rpartition(".")
    return parent, leaf


def rewrite_imports(source: str, move: Move) -> str:
    """`from ... import` lines of one cell with `move` applied (a moved name gets its own line, where it was)."""

    def from_line(match: re.Match) -> str:
        module, names = match.group(1), imported(match.group(2))
        if move.old_name is None and module == move.old_module:  # from moved_module import names
            return render(move.new_module, names)
        keep, moved = [], []
        for name in names:
            bare = name.split(" as ")[0]
            if move.old_name is None and f"{module}.{bare}" == move.old_module:  # from package import moved_module
                parent, leaf = split_module(move.new_module)
                moved.append((parent, leaf if name == bare else f"{leaf} as {name.split(' as ')[1]}"))
            elif module == move.old_module and bare == move.old_name:  # from old_module import moved_name
                alias = name.split(" as ")[1] if " as " in name else move.old_name
                new = move.new_name if alias == move.new_name else f"{move.new_name} as {alias}"
                moved.append((move.new_module, new))
            else:
                keep.append(name)
        if not moved:
            return match.group(0)
        return "\n".join(([render(module, keep)] if keep else []) + [render(m, [n]) for m, n in moved])

    return FROM_IMPORT.sub(from_line, source)


def merge_duplicates(source: str) -> str:
    """Two `from X import` lines of one module in a cell become one, where the first stood."""
    names: dict[str, list[str]] = {}
    for match in FROM_IMPORT.finditer(source):
        names.setdefault(match.group(1), []).extend(imported(match.group(2)))
    done: set[str] = set()

    def once(match: re.Match) -> str:
        if match.group(1) in done:
            return "\x00"
        done.add(match.group(1))
        return render(match.group(1), names[match.group(1)]) if match.group(0) != render(match.group(1), names[
            match.group(1)]) else match.group(0)

    return re.sub(r"\x00\n?", "", FROM_IMPORT.sub(once, source))


def requalify(cells: list[str], move: Move) -> list[str]:
    """`module.NAME` through a module alias (`from rag_lib import prompts`) -> the new module's alias, its import added
    beside the old one, and the old alias's import dropped once nothing uses it."""
    old_parent, old_leaf = split_module(move.old_module)
    new_parent, new_leaf = split_module(move.new_module)
    use = re.compile(rf"(?<![\w.]){re.escape(old_leaf)}\.{re.escape(move.old_name)}\b")
    binds = re.compile(rf"^from {re.escape(old_parent)} import [^\n]*\b{re.escape(old_leaf)}\b", re.M)
    if not any(use.search(c) for c in cells) or not any(binds.search(c) for c in cells):
        return cells
    cells = [use.sub(f"{new_leaf}.{move.new_name}", c) for c in cells]
    if not any(re.search(rf"^from {re.escape(new_parent)} import [^\n]*\b{new_leaf}\b", c, re.M) for c in cells):
        cells = [binds.sub(lambda m: m.group(0) + "\n" + render(new_parent, [new_leaf]), c, count=1) for c in cells]
    if not any(re.search(rf"(?<![\w.]){re.escape(old_leaf)}\b", FROM_IMPORT.sub("", re.sub(r"#[^\n]*", "", c)))
               for c in cells):
        cells = [FROM_IMPORT.sub(lambda m: drop_name(m, old_parent, old_leaf), c) for c in cells]
        cells = [re.sub(r"^\n", "", c) if c.startswith("\n") else c for c in cells]
    return cells


def drop_name(match: re.Match, module: str, name: str) -> str:
    """The import line without `name` (an empty line when it was the only one)."""
    if match.group(1) != module or name not in (names := imported(match.group(2))):
        return match.group(0)
    rest = [n for n in names if n != name]
    return render(module, rest) if rest else "\x01"


def sort_runs(source: str, before: str) -> str:
    """Each run of adjacent `from` imports sorted by module, when its lines that were already there were sorted."""
    statements = list(FROM_IMPORT.finditer(source))
    runs, run = [], statements[:1]
    for previous, match in zip(statements, statements[1:]):
        if source[previous.end():match.start()] == "\n":
            run.append(match)
        else:
            runs.append(run)
            run = [match]
    runs.append(run)
    for run in reversed([r for r in runs if len(r) > 1]):
        old = [m.group(1) for m in run if m.group(0) in before]
        if old == sorted(old):
            ordered = sorted((m.group(0) for m in run), key=lambda text: FROM_IMPORT.match(text).group(1))
            source = source[:run[0].start()] + "\n".join(ordered) + source[run[-1].end():]
    return source


def rewrite_prose(text: str, moves: list[Move]) -> str:
    """Moved paths in markdown: a module's dotted name and file (`rag_lib.demo`, `rag_lib/demo.py`), a name's dotted
    path (`rag_lib.embeddings.USEEmbeddings`)."""
    for move in moves:
        if move.old_name is None:
            text = re.sub(rf"(?<![\w.]){re.escape(move.old_module)}(?!\w)", move.new_module, text)
            old_path, new_path = (m.replace(".", "/") + ".py" for m in (move.old_module, move.new_module))
            text = re.sub(rf"(?<![\w/]){re.escape(old_path)}", new_path, text)
        else:
            old, new = f"{move.old_module}.{move.old_name}", f"{move.new_module}.{move.new_name}"
            text = re.sub(rf"(?<![\w.]){re.escape(old)}(?!\w)", new, text)
    return text


def rewrite_notebook(path: Path, moves: list[Move], prose: bool) -> list[str]:
    """Rewrite one notebook in place; the changed lines, as `-old` / `+new`."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    code_cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    before = ["".join(c["source"]) for c in code_cells]
    after = list(before)
    for move in moves:
        after = [rewrite_imports(c, move) for c in after]
        if move.old_name is not None:
            after = requalify(after, move)
    after = [sort_runs(re.sub(r"\x01\n?", "", merge_duplicates(a)), b) if a != b else a for a, b in zip(after, before)]
    changed = list(zip(code_cells, before, after))
    if prose:
        text_cells = [c for c in notebook["cells"] if c["cell_type"] == "markdown"]
        changed += [(c, "".join(c["source"]), rewrite_prose("".join(c["source"]), moves)) for c in text_cells]
    changes = []
    for cell, old, new in changed:
        if new != old:
            cell["source"] = new.splitlines(keepends=True)
            old_lines, new_lines = old.splitlines(), new.splitlines()
            changes += [f"  -{line}" for line in old_lines if line not in new_lines]
            changes += [f"  +{line}" for line in new_lines if line not in old_lines]
    if changes:
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--renames", type=Path, default=ROOT / "RENAMES.txt")
    parser.add_argument("--prose", action="store_true", help="also rewrite moved paths in markdown")
    args = parser.parse_args()
    moves = pending_moves(args.renames)
    for path in args.notebooks:
        if changes := rewrite_notebook(path, moves, args.prose):
            print(path, *changes, sep="\n")


if __name__ == "__main__":
    main()
