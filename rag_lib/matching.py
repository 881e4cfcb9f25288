"""Does an answer occur in a text? Each check here answers another question, so each has its own name:

- `occurs_in`: the span itself is in the text, character for character (case and spaces ignored): the check for
  an answer an LLM says it COPIED from a passage, and for evidence in what a generator saw.
- `tokens_occur_in`: the answer's tokens, normalised as the answer metrics normalise them, form a run in the
  text's: the check behind context recall (could the generator have answered?).
- `grounded`: most words of an LLM's answer are in the passage and one of them is not in the question: the
  answer brings a fact from the passage.
- `drawn_from`: an LLM-written answer shares most of its character pairs with its source text.
- `supported`: every number of a generated answer, and most of its content words, occur in the passages it cites:
  a cheap check that the answer was not made up (a sentence cannot be checked as a copy can).

`normalized_tokens` and `scoring_scheme` are the normalisation the answer metrics (`rag_lib.experiments.evaluation`)
use:
when either text holds a CJK character, the CMRC 2018 script's (its punctuation list dropped, one token per CJK
character, one per run of other letters and digits), otherwise SQuAD v1.1's (articles and punctuation dropped).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rag_lib.text import CJK_CHARS, has_cjk, tokenize

# The official CMRC 2018 scorer deletes these characters before segmenting (its `sp_char` list), so "GPT-4"
# becomes one token "gpt4".
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
    """Where `span` first occurs in `text` as `occurs_in` defines it (positions are the text's: lowering keeps them
    for every text whose length it keeps)."""
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
    """The clause of `text` around the first occurrence of `span`: from the clause mark before it (，。；！？ or
    , . ; ! ? before a space, or a line break) to the one after, marks left out. Some data sets mark clauses as
    answers, not the shortest span (CMRC 2018). The span itself when `text` does not hold it."""
    found = _find(span, text)
    if found is None or len(text.lower()) != len(text):
        return span
    marks = list(CLAUSE_MARK.finditer(text))
    start = max((m.end() for m in marks if m.end() <= found.start()), default=0)
    end = min((m.start() for m in marks if m.start() >= found.end()), default=len(text))
    return text[start:end].strip()


def any_occurs_in(spans: Iterable[str], texts: Iterable[str]) -> bool:
    """Whether one of `spans` (e.g. the gold answers) `occurs_in` one of `texts` (e.g. what the generator saw)."""
    texts = list(texts)
    return any(occurs_in(span, text) for span in spans for text in texts)


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
    """Whether an LLM-written answer comes from `text` (case and spaces ignored): a short answer must occur in it
    whole (`tokens_occur_in`), a longer one must share at least DRAWN_MIN_PAIRS of its character pairs with it.
    A small model invents some answers ("What is the capital of France?" for a document about LLM judges)."""

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
    """(the answer's numbers missing from the passages it cites and the texts `also` (e.g. what the user said, which
    backs an answer whatever it cites), the share of its other content words found in them). Numbers are runs of
    digits with the letters glued to them ("7:00", "1.5b", "e5", "2M3T"), found as `occurs_in` finds them; words are
    `tokenize`'s (jieba for Chinese, stopwords dropped), found inside the text or, for a word in Latin letters, as a
    `same_word` of a passage word ("opens" / "open"). An answer with no content word scores 1.0."""
    text = "\n".join([*cited_passages(answer, passages), *also])
    answer = _LIST_MARK.sub("", CITATION.sub(" ", answer))
    numbers = list(dict.fromkeys(_NUMBER.findall(answer)))
    missing = [number for number in numbers if not occurs_in(number, text)]
    words = {w for w in tokenize(answer) if any(ch.isalpha() for ch in w) and not any(ch.isdigit() for ch in w)}
    latin = {w for w in tokenize(text) if w.isascii()}
    found = {w for w in words if occurs_in(w, text) or (w.isascii() and any(same_word(w, p) for p in latin))}
    return missing, len(found) / len(words) if words else 1.0


def supported(answer: str, passages: Sequence[str], also: Sequence[str] = ()) -> bool:
    """Whether a generated answer is backed by the passages it cites ([n] markers; every passage when it cites
    none) and the texts `also`: all its numbers occur in them and at least SUPPORT_MIN_WORDS of its content words
    do (`support`). A small model fills a gap with a plausible sentence ("the cafeteria opens at 7:00 AM" from a
    passage about Milvus)."""
    missing, share = support(answer, passages, also)
    return not missing and share >= SUPPORT_MIN_WORDS
