"""Loading the course's labelled question sets in data/ that notebooks and benchmarks share."""

from __future__ import annotations

import json
from pathlib import Path

from rag_lib.store import PROJECT_ROOT

QUESTIONS = PROJECT_ROOT / "data" / "multihop_questions.json"
SPLITS = ("tune", "held_out")
FOLLOW_UPS = PROJECT_ROOT / "data" / "chat_followups.json"


def load_questions(path: Path = QUESTIONS, split: str | None = None) -> list[dict]:
    """The multi-hop questions, each with its gold answer as a one-item list (the scorer's format): all of them, or
    one fixed half, `split` "tune" (to choose settings on) or "held_out" (to report on)."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS} or None, got {split!r}")
    return [q | {"golds": [q["answer"]]} for q in json.loads(path.read_text(encoding="utf-8"))
            if split in (None, q["split"])]


def load_follow_ups(path: Path = FOLLOW_UPS) -> list[dict]:
    """The committed conversations: first question, follow-up, gold answer and gold source file."""
    return json.loads(path.read_text(encoding="utf-8"))
