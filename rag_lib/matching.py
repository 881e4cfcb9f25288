"""Does an answer occur in a text? Each check answers another question, so each has its own name:
`occurs_in` (the span itself, case and spaces ignored: a COPIED answer), `grounded` (most words in the passage, one
not in the question) and `supported` (a generated answer's numbers and most content words are in the passages it
cites).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_lib.text import tokenize

CLAUSE_MARK = re.compile(r"[，。；！？\n]|[,.;!?](?=\s|$)")  # where a clause ends (see `clause_holding`)
SUPPORT_MIN_WORDS = 0.6  # share of a generated answer's content words that must occur in its cited passages
CITATION = re.compile(r"\s*\[(\d+(?:\s*[,，]\s*\d+)*)\]")  # [2] or [1, 3]: passages cited by number
_NUMBER = re.compile(r"[a-z0-9]*\d[a-z0-9]*(?:[.,:]\d[a-z0-9]*)*", re.IGNORECASE)  # 19530, 7:00, 1.5b, e5, 2m3t
_LIST_MARK = re.compile(r"^\s*\d+(?:[.)]\s+|、)", re.MULTILINE)  # "1. " or "2、" opening a line: not a number


def _find(span: str, text: str) -> re.Match | None:
    """Where `span` first occurs in `text` as `occurs_in` defines it."""
    chars = [re.escape(ch) for ch in span.lower() if not ch.isspace()]
    if not chars:
        return None
    before = r"(?<![a-z0-9])" if re.match(r"[a-z0-9]", chars[0]) else ""
    after = r"(?![a-z0-9])" if re.match(r"[a-z0-9]", chars[-1]) else ""
    return re.search(before + r"\s*".join(chars) + after, text.lower())


def occurs_in(span: str, text: str) -> bool:
    """Whether `span` occurs in `text`, ignoring case and whitespace, and not glued to a longer ASCII word or
    number ("30" is not found in "300"; "2023年6月13日" is found in "2023 年 6 月 13 日")."""
    return _find(span, text) is not None


def clause_holding(span: str, text: str) -> str:
    """The clause of `text` (between CLAUSE_MARKs) around the first occurrence of `span`; the span itself when
    `text` does not hold it."""
    found = _find(span, text)
    if found is None or len(text.lower()) != len(text):
        return span
    marks = list(CLAUSE_MARK.finditer(text))
    start = max((m.end() for m in marks if m.end() <= found.start()), default=0)
    end = min((m.start() for m in marks if m.start() >= found.end()), default=len(text))
    return text[start:end].strip()


def grounded(answer: str, passage: str, question: str) -> bool:
    """True when most words of `answer` are in the passage and one of those is not in the question: the
    answer brings a fact from the passage (an invented number, or the question said back, fails)."""
    words = set(tokenize(answer))
    found = words & set(tokenize(passage))
    return 0 < len(words) <= 2 * len(found) and bool(found - set(tokenize(question)))


def same_word(a: str, b: str) -> bool:
    """Equal, or one the start of the other when both have 4+ characters ("listen" / "listens"): a crude stem."""
    return a == b or (min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)))


def cited_passages(answer: str, passages: Sequence[str]) -> list[str]:
    """The passages an answer cites as [n] or [n, m] (numbered from 1; a number with no passage cites nothing), all
    of them when it cites none."""
    numbers = {int(n) for group in CITATION.findall(answer) for n in re.split(r"[,，]", group)}
    return [text for n, text in enumerate(passages, 1) if n in numbers] if numbers else list(passages)


def support(answer: str, passages: Sequence[str], also: Sequence[str] = ()) -> tuple[list[str], float]:
    """(the answer's numbers missing from the passages it cites and the texts `also`, the share of its other content
    words found in them, a Latin word also as a `same_word`). An answer with no content word scores 1.0."""
    text = "\n".join([*cited_passages(answer, passages), *also])
    answer = _LIST_MARK.sub("", CITATION.sub(" ", answer))
    numbers = list(dict.fromkeys(_NUMBER.findall(answer)))
    missing = [number for number in numbers if not occurs_in(number, text)]
    words = {w for w in tokenize(answer) if any(ch.isalpha() for ch in w) and not any(ch.isdigit() for ch in w)}
    latin = {w for w in tokenize(text) if w.isascii()}
    found = {w for w in words if occurs_in(w, text) or (w.isascii() and any(same_word(w, p) for p in latin))}
    return missing, len(found) / len(words) if words else 1.0


def supported(answer: str, passages: Sequence[str], also: Sequence[str] = ()) -> bool:
    """Whether all numbers and at least SUPPORT_MIN_WORDS of the content words of a generated answer occur in the
    passages it cites (every passage when it cites none) and the texts `also` (`support`)."""
    missing, share = support(answer, passages, also)
    return not missing and share >= SUPPORT_MIN_WORDS
