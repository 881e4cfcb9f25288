"""Loading the course's labelled question sets in data/ that notebooks and benchmarks share, and the multi-hop
runs' rows for them."""

from __future__ import annotations

import json
from pathlib import Path

from rag_lib.experiments.evaluation import rescored
from rag_lib.experiments.results import read_jsonl
from rag_lib.store import PROJECT_ROOT

QUESTIONS = PROJECT_ROOT / "data" / "multihop_questions.json"
SPLITS = ("tune", "held_out")
FOLLOW_UPS = PROJECT_ROOT / "data" / "chat_followups.json"
MULTIHOP_RUNS = PROJECT_ROOT / "bench_results" / "answers_runs" / "multihop.jsonl"


def load_questions(path: Path = QUESTIONS, split: str | None = None) -> list[dict]:
    """The multi-hop questions, each with its gold answer as a one-item list (the scorer's format): all of them, or
    one fixed half, `split` "tune" (to choose settings on) or "held_out" (to report on)."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS} or None, got {split!r}")
    return [q | {"golds": [q["answer"]]} for q in json.loads(path.read_text(encoding="utf-8"))
            if split in (None, q["split"])]


def scored_rows(split: str | None = "held_out", runs_file: Path = MULTIHOP_RUNS) -> dict[str, dict[str, dict]]:
    """Pipeline -> question id -> its row in `runs_file`, scored with the current metrics, for `split`'s questions."""
    wanted, rows = {(q["id"], q["question"]) for q in load_questions(split=split)}, {}
    for row in read_jsonl(runs_file):
        if (row["id"], row["question"]) in wanted:
            rows.setdefault(row["pipeline"], {}).setdefault(row["id"], rescored(row))
    return rows


def load_follow_ups(path: Path = FOLLOW_UPS) -> list[dict]:
    """The committed conversations: first question, follow-up, gold answer and gold source file."""
    return json.loads(path.read_text(encoding="utf-8"))
