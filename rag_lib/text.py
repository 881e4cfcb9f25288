"""Language-aware text helpers shared by indexing, BM25 baselines and evaluation."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

CJK_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideograph ranges, for regex character classes
_CJK = re.compile(f"[{CJK_CHARS}]")
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s+|\n+")
_WORD = re.compile(r"\w", re.UNICODE)
_SURROGATE = re.compile(r"[\ud800-\udfff]")

STOPWORDS: frozenset[str] = frozenset(
    "的 了 是 在 和 与 及 或 也 就 都 而 被 把 对 为 以 于 之 其 这 那 该 此 有 个 "
    "中 上 下 吗 呢 吧 啊 什么 哪 哪些 哪个 如何 怎么 多少 几 "
    "the a an of to in on for and or is are was were be been by with as at from that this it its "
    "what which who how why when where do does did".split()
)


class InvalidQueryError(ValueError):
    """A query that cannot be searched: empty, or not valid Unicode text; the message names the fix."""


def check_query(text: str) -> str:
    """`text` if it can be embedded and searched, else InvalidQueryError: an empty query, or a lone surrogate
    ("\\udc80") that no model or database can encode."""
    if not text.strip():
        raise InvalidQueryError("empty query: ask a question with some words in it")
    bad = _SURROGATE.search(text)
    if bad:
        raise InvalidQueryError(
            f"invalid text in the query {text[:60]!r}: character {bad.start()} is {bad.group()!r}, a lone surrogate "
            "(not valid Unicode). Remove it, or decode the text's bytes as UTF-8 with errors='replace'.")
    return text


def has_cjk(text: str) -> bool:
    """Whether `text` holds at least one CJK ideograph."""
    return _CJK.search(text) is not None


def detect_language(text: str) -> str:
    """Return "zh" when CJK characters make up at least 20% of the letters, else "en"."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return "en"
    cjk = sum(1 for ch in letters if _CJK.match(ch))
    return "zh" if cjk / len(letters) >= 0.2 else "en"


def longest_prefix(text: str, fits: Callable[[str], bool]) -> str:
    """The longest start of `text` that `fits` accepts (binary search: `fits` must hold for every shorter start
    of an accepted one, as a token or length budget does); "" when no start fits."""
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(text[:middle]):
            low = middle
        else:
            high = middle - 1
    return text[:low]


@lru_cache(maxsize=1)
def quiet_jieba():
    """The jieba module with its "Building prefix dict..." log lines silenced (shared with Milvus Lite)."""
    import jieba

    jieba.setLogLevel(60)
    return jieba


def tokenize(text: str, drop_stopwords: bool = True) -> list[str]:
    """Split mixed Chinese/English text into lower-cased word tokens with jieba (for BM25)."""
    tokens = (t.strip().lower() for t in quiet_jieba().lcut_for_search(text))
    return [t for t in tokens if t and _WORD.search(t) and not (drop_stopwords and t in STOPWORDS)]


def split_sentences(text: str) -> list[str]:
    """Split Chinese and English text into sentences, keeping the end punctuation."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]
