"""Does an answer occur in a text? Each check answers another question, so each has its own name:
`occurs_in` (the span itself, case and spaces ignored: a COPIED answer), `tokens_occur_in` (the normalised tokens
as a run: context recall), `grounded` (most words in the passage, one not in the question), `drawn_from` (most
character pairs shared with the source) and `supported` (a generated answer's numbers and most content words are in
the passages it cites). `normalized_tokens` and `scoring_scheme` are the answer metrics' normalisation: CMRC 2018's
when either text holds a CJK character, else SQuAD v1.1's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag_lib.text import CJK_CHARS, has_cjk, tokenize

# The official CMRC 2018 scorer deletes these before segmenting (its `sp_char` list): "GPT-4" is one token "gpt4".
_CMRC_PUNCTUATION = re.compile(r"[-:_*^/\\~`+=，。：？！“”；’《》…·、「」（）－～『』]")
# Then one token per CJK character, one per run of other letters/digits; other punctuation and spaces fall out.
_MIXED_TOKEN = re.compile(rf"[{CJK_CHARS}]|[^\W_{CJK_CHARS}]+")
_PUNCTUATION = re.compile(r"[^\w\s]|_")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
CLAUSE_MARK = re.compile(r"[，。；！？\n]|[,.;!?](?=\s|$)")  # where a clause ends (see `clause_holding`)
DRAWN_MIN_PAIRS = 0.7  # share of an answer's character pairs that must occur in its source (see `drawn_from`)
DRAWN_SHORT_CHARS = 12  # an answer this short (spaces left out) must occur whole: a few pairs occur anywhere
SUPPORT_MIN_WORDS = 0.6  # share of a generated answer's content words that must occur in its cited passages
CITATION = re.compile(r"\s*\[(\d+(?:\s*[,，]\s*\d+)*)\]")  # [2] or [1, 3]: passages cited by number
_NUMBER = re.compile(r"[a-z0-9]*\d[a-z0-9]*(?:[.,:]\d[a-z0-9]*)*", re.IGNORECASE)  # 19530, 7:00, 1.5b, e5, 2m3t
_LIST_MARK = re.compile(r"^\s*\d+(?:[.)]\s+|、)", re.MULTILINE)  # "1. " or "2、" opening a line: not a number


def scoring_scheme(*texts: str) -> str:
    """"zh" (CMRC 2018 scoring) when any of the texts holds a CJK character, else "en" (SQuAD v1.1)."""
    return "zh" if any(has_cjk(t) for t in texts) else "en"


def normalized_tokens(text: str, scheme: str) -> list[str]:
    """Normalise and tokenise text: CMRC 2018 mixed segmentation for "zh", SQuAD normalisation for "en"."""
    text = text.lower()
    if scheme == "zh":
        return _MIXED_TOKEN.findall(_CMRC_PUNCTUATION.sub("", text))
    return _ARTICLES.sub(" ", _PUNCTUATION.sub("", text)).split()


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


def tokens_occur_in(answer: str, text: str) -> bool:
    """True when the answer's tokens occur as a run in the text's tokens (mixed segmentation, so "1898" is found
    in "创建于1898年"; English articles dropped when the answer is not Chinese, as EM normalises)."""
    skip = set() if has_cjk(answer) else {"a", "an", "the"}
    needle = " ".join(t for t in normalized_tokens(answer, "zh") if t not in skip)
    haystack = " ".join(t for t in normalized_tokens(text, "zh") if t not in skip)
    return bool(needle) and f" {needle} " in f" {haystack} "


def grounded(answer: str, passage: str, question: str) -> bool:
    """True when most words of `answer` are in the passage and one of those is not in the question: the
    answer brings a fact from the passage (an invented number, or the question said back, fails)."""
    words = set(tokenize(answer))
    found = words & set(tokenize(passage))
    return 0 < len(words) <= 2 * len(found) and bool(found - set(tokenize(question)))


def drawn_from(answer: str, text: str) -> bool:
    """Whether an LLM-written answer comes from `text`: a short answer must occur in it whole (`tokens_occur_in`),
    a longer one must share at least DRAWN_MIN_PAIRS of its character pairs with it."""

    def squeeze(s: str) -> str:
        return "".join(s.lower().split())

    def pairs(s: str) -> set[str]:
        return {s[i : i + 2] for i in range(len(s) - 1)}

    if not answer.strip():
        return False
    if len(squeeze(answer)) <= DRAWN_SHORT_CHARS:  # "paris" would be found in "comparison": whole words only
        return tokens_occur_in(answer, text)
    wanted = pairs(squeeze(answer))
    return len(wanted & pairs(squeeze(text))) / len(wanted) >= DRAWN_MIN_PAIRS


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
