"""The CMRC question sample of the answers benchmark and, per setting, where each context lives (the local index
or the offline web)."""

from __future__ import annotations

import random
from pathlib import Path

from langchain_core.documents import Document

from rag_lib.experiments.cmrc import Dataset

SETTINGS = ("local", "split")


def home_of(data: Dataset, setting: str = "split") -> dict[str, str]:
    """Context id -> where the context lives: every one "local" in the local setting; in the split setting "local"
    (even positions in the file) or "web" (odd positions)."""
    if setting not in SETTINGS:
        raise ValueError(f"setting {setting!r}: choose from {', '.join(SETTINGS)}")
    if setting == "local":
        return dict.fromkeys(data.contexts, "local")
    return {context_id: "web" if i % 2 else "local" for i, context_id in enumerate(data.contexts)}


def cmrc_setup(data: Dataset, folder: Path, setting: str = "split") -> tuple[list[str], list[Document]]:
    """Local contexts -> files in `folder` (the local index), web ones -> offline web pages; returns the local
    context ids and the pages."""
    homes = home_of(data, setting)
    local = [context_id for context_id, home in homes.items() if home == "local"]
    for context_id in local:
        # "# title" becomes the chunks' title metadata, which knowledge refinement scores with each strip
        text = f"# {data.titles[context_id]}\n\n{data.contexts[context_id]}"
        (folder / f"{context_id}.txt").write_text(text, encoding="utf-8")
    pages = [Document(data.contexts[c], metadata={"title": data.titles[c], "url": f"cmrc://{c}"})
             for c, home in homes.items() if home == "web"]
    return local, pages


def sample_questions(data: Dataset, n: int, seed: int) -> list[dict]:
    """The first `n` non-empty questions of a shuffle fixed by `seed` (so the sample for a smaller n is the start of
    the one for a larger n), each with its rank in that order, its context and where the context lives when split."""
    homes = home_of(data)
    pool = [{"question": q.text, "golds": list(q.answers), "id": q.id, "context_id": q.context_id,
             "home": homes[q.context_id]} for q in data.questions if q.text and q.answers]
    if n > len(pool):
        raise ValueError(f"--n {n}: the CMRC file has only {len(pool)} questions with a text and an answer")
    random.Random(seed).shuffle(pool)
    return [q | {"rank": rank} for rank, q in enumerate(pool[:n], 1)]
