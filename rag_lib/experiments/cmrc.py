"""CMRC 2018 (SQuAD-format Chinese reading comprehension): the one loader every benchmark uses. The trial split
ships in `data/cmrc2018/` under its own licence (CC BY-SA 4.0, see the README there); $CMRC_PATH points at another
copy."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rag_lib.settings import settings


@dataclass(frozen=True)
class Question:
    """One question with the id of the context that answers it and its gold answers."""

    id: str
    text: str
    context_id: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class Dataset:
    """Contexts by id, and the questions about them."""

    contexts: dict[str, str]  # in file order
    titles: dict[str, str]
    questions: list[Question]  # in file order

    def head(self, n: int | None) -> Dataset:
        """The first `n` contexts (all when None) and the questions about them: a small slice for a quick run."""
        if n is None:
            return self
        ids = list(self.contexts)[:n]
        kept = set(ids)
        return Dataset(
            {i: self.contexts[i] for i in ids}, {i: self.titles[i] for i in ids},
            [q for q in self.questions if q.context_id in kept],
        )


def cmrc_path(path: str | Path | None = None) -> Path:
    """The CMRC json: the argument, else $CMRC_PATH, else the trial split in data/; a clear error if absent."""
    resolved = Path(path or settings().CMRC_PATH)
    if not resolved.is_file():
        raise FileNotFoundError(
            f"CMRC 2018 data not found at {resolved}: pass --cmrc PATH or set CMRC_PATH to cmrc2018_trial.json "
            "(https://github.com/ymcui/cmrc2018, CC BY-SA 4.0)."
        )
    return resolved


def dataset_label(path: str | Path | None = None) -> str:
    """How a benchmark names the CMRC file it ran on (trial or dev), with the data's licence."""
    return f"CMRC 2018, {cmrc_path(path).name} (CC BY-SA 4.0)"


def load_cmrc(path: str | Path | None = None) -> Dataset:
    """Read contexts and questions; questions with an empty text are kept (they count as misses)."""
    raw = json.loads(cmrc_path(path).read_text(encoding="utf-8"))
    contexts, titles, questions = {}, {}, []
    for article in raw["data"]:
        for paragraph in article["paragraphs"]:
            contexts[paragraph["id"]] = paragraph["context"]
            titles[paragraph["id"]] = article.get("title", "")
            for qa in paragraph["qas"]:
                answers = tuple(dict.fromkeys(a["text"] for a in qa["answers"] if a["text"].strip()))
                questions.append(Question(qa["id"], qa["question"].strip(), paragraph["id"], answers))
    return Dataset(contexts, titles, questions)
