"""data/multihop_questions.json is a well-formed multi-hop question set over data/docs and data/web.

Every record needs two pieces of evidence from two different passages (two files, or two places in one file at
least MIN_GAP characters apart), each quoted exactly from its file; span answers are quoted from the last hop,
comparison answers from one of the hops, yes/no answers are "yes" or "no"; and no answer is given away by its
question. Every record belongs to one of two fixed halves (`split`: "tune" to choose settings on, "held_out" to
report on), assigned by `split_rule` and loaded one at a time by `load_questions(split=...)`. Reads text files
only: no model, no database.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from rag_lib.experiments.questions import SPLITS, load_questions, scored_rows

DATA = Path(__file__).resolve().parents[1] / "data"
QUESTIONS = DATA / "multihop_questions.json"
KEYS = {"id", "question", "language", "answer", "answer_type", "hops", "bridge", "split"}
ANSWER_TYPES = {"span", "yes_no", "comparison"}
MIN_RECORDS = 100
MIN_PER_LANGUAGE = 15
MIN_GAP = 1500  # two evidence strings from one file count as different passages only this far apart
EVIDENCE_CHARS = (20, 200)
MAX_SPLIT_GAP = 3  # per language, the halves differ by at most this many records


def load() -> list[dict]:
    """The question records, parsed."""
    return json.loads(QUESTIONS.read_text(encoding="utf-8"))


RECORDS = load()


@cache
def source_text(source: str) -> str:
    """The text of a hop's source, given relative to data/ (docs/<file> or web/<file>)."""
    return (DATA / source).read_text(encoding="utf-8")


def mentions(text: str, answer: str) -> bool:
    """True if `answer` occurs in `text`, ignoring case; an ASCII word or number must stand alone ("12" is not in
    "2012")."""
    left = r"(?<![A-Za-z0-9])" if re.match(r"[A-Za-z0-9]", answer) else ""
    right = r"(?![A-Za-z0-9])" if re.search(r"[A-Za-z0-9]$", answer) else ""
    return re.search(left + re.escape(answer) + right, text, flags=re.IGNORECASE) is not None


def test_the_set_is_large_and_bilingual():
    assert len(RECORDS) >= MIN_RECORDS, f"only {len(RECORDS)} records, want at least {MIN_RECORDS}"
    languages = Counter(r["language"] for r in RECORDS)
    assert set(languages) == {"zh", "en"}, f"languages must be zh and en, got {dict(languages)}"
    assert min(languages.values()) >= MIN_PER_LANGUAGE, f"too few questions in one language: {dict(languages)}"


def split_rule(records: list[dict]) -> dict[str, str]:
    """The half of each record by id: within each language, the records sorted by answer type, then by id number,
    alternate between "tune" and "held_out", starting with "tune", so that each language and each answer type is
    split evenly."""
    split = {}
    for language in {r["language"] for r in records}:
        ordered = sorted((r for r in records if r["language"] == language),
                         key=lambda r: (r["answer_type"], int(r["id"].removeprefix("mh-"))))
        split |= {r["id"]: SPLITS[n % 2] for n, r in enumerate(ordered)}
    return split


def test_every_record_is_in_the_half_the_split_rule_gives():
    expected = split_rule(RECORDS)
    wrong = [r["id"] for r in RECORDS if r["split"] != expected[r["id"]]]
    assert not wrong, f"records whose split differs from the rule: {wrong}"


def test_the_halves_balance_languages_and_answer_types():
    counts = Counter((r["language"], r["answer_type"], r["split"]) for r in RECORDS)
    for language in ("en", "zh"):
        sizes = [sum(n for (lang, _, split), n in counts.items() if (lang, split) == (language, s)) for s in SPLITS]
        assert abs(sizes[0] - sizes[1]) <= MAX_SPLIT_GAP, f"{language}: tune {sizes[0]}, held_out {sizes[1]}"
        for kind in ANSWER_TYPES:
            tune, held_out = counts[language, kind, "tune"], counts[language, kind, "held_out"]
            assert abs(tune - held_out) <= 1, f"{language} {kind}: tune {tune}, held_out {held_out}"


def test_load_questions_gives_each_half_with_its_gold():
    halves = {split: load_questions(split=split) for split in SPLITS}
    assert [q["id"] for q in load_questions()] == [r["id"] for r in RECORDS]
    for split, questions in halves.items():
        assert questions and all(q["split"] == split and q["golds"] == [q["answer"]] for q in questions)
    assert sorted(q["id"] for half in halves.values() for q in half) == sorted(r["id"] for r in RECORDS)
    with pytest.raises(ValueError, match="split"):
        load_questions(split="test")


def test_scored_rows_keep_one_rescored_row_per_question_as_worded_now(tmp_path: Path):
    question = load_questions(split="held_out")[0]
    row = {"id": question["id"], "question": question["question"], "pipeline": "p", "golds": question["golds"],
           "answer": question["answer"] + " [1]", "error": "", "em": 0.0, "f1": 0.0}
    reworded = row | {"question": "an older wording", "pipeline": "q"}
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps(r) + "\n" for r in (row, row | {"answer": "wrong"}, reworded)), encoding="utf-8")
    rows = scored_rows("held_out", runs)
    assert list(rows) == ["p"] and list(rows["p"]) == [question["id"]]
    assert rows["p"][question["id"]]["em"] == 1.0  # scored again, citation left out; the first row counts


def test_ids_are_unique():
    ids = [r["id"] for r in RECORDS]
    duplicates = [i for i, n in Counter(ids).items() if n > 1]
    assert not duplicates, f"duplicate ids: {duplicates}"


@pytest.mark.parametrize("record", RECORDS, ids=[r["id"] for r in RECORDS])
def test_record(record: dict):
    assert set(record) == KEYS, f"keys {sorted(record)} differ from {sorted(KEYS)}"
    question, answer, kind = record["question"], record["answer"], record["answer_type"]
    assert kind in ANSWER_TYPES, f"answer_type {kind!r} is not one of {sorted(ANSWER_TYPES)}"
    assert record["split"] in SPLITS, f"split {record['split']!r} is not one of {SPLITS}"
    assert record["bridge"].strip(), "bridge is empty"
    assert question.strip() and answer.strip(), "question or answer is empty"

    hops = record["hops"]
    assert len(hops) == 2, f"want exactly two hops, got {len(hops)}"
    starts = []
    for hop in hops:
        assert set(hop) == {"source", "evidence"}, f"hop keys {sorted(hop)}"
        assert hop["source"].startswith(("docs/", "web/")), f"source {hop['source']!r} is not under docs/ or web/"
        evidence = hop["evidence"]
        assert EVIDENCE_CHARS[0] <= len(evidence) <= EVIDENCE_CHARS[1], f"evidence has {len(evidence)} characters"
        text = source_text(hop["source"])
        assert evidence in text, f"evidence is not an exact substring of {hop['source']}: {evidence!r}"
        starts.append(text.index(evidence))
    first, last = hops
    if first["source"] == last["source"]:
        assert abs(starts[0] - starts[1]) >= MIN_GAP, f"both hops are in one passage of {first['source']}"

    if kind == "span":
        assert answer in last["evidence"], f"span answer {answer!r} is not in the last hop's evidence"
    elif kind == "comparison":
        assert any(answer in hop["evidence"] for hop in hops), f"comparison answer {answer!r} is in no evidence"
    else:
        assert answer in {"yes", "no"}, f"yes_no answer must be 'yes' or 'no', got {answer!r}"
    assert not mentions(question, answer), f"the question gives its answer {answer!r} away"
