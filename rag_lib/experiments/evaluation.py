"""Model-free RAG metrics: answer EM/F1, retrieval recall@k/MRR, and context recall/relevance.

The answer scheme is chosen per pair: when the gold or the prediction holds any CJK character, both are scored
as the CMRC 2018 script does (its punctuation list dropped, mixed segmentation, longest-common-substring F1), so
"1990年" against "1990" or "NBA球队" against "NBA" get partial credit as there; otherwise as SQuAD v1.1 (articles
and punctuation dropped, bag-of-tokens F1); `normalized_tokens` does either normalisation. Context recall matches an
answer in text by mixed segmentation (`tokens_occur_in`), whatever the languages.
`bootstrap_ci` and `paired_difference` put a confidence interval on a mean (or median) over questions, so two
pipelines are compared on the same questions with their uncertainty, not by two bare numbers; `wilson` does it for
a proportion (a hit rate, an agreement). `rescored` scores a saved answer row again, citations left out.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence

import numpy as np

from rag_lib.matching import CITATION, clause_holding, occurs_in
from rag_lib.text import CJK_CHARS, has_cjk, split_sentences

# The official CMRC 2018 scorer deletes these before segmenting (its `sp_char` list): "GPT-4" is one token "gpt4".
_CMRC_PUNCTUATION = re.compile(r"[-:_*^/\\~`+=，。：？！“”；’《》…·、「」（）－～『』]")
# Then one token per CJK character, one per run of other letters/digits; other punctuation and spaces fall out.
_MIXED_TOKEN = re.compile(rf"[{CJK_CHARS}]|[^\W_{CJK_CHARS}]+")
_PUNCTUATION = re.compile(r"[^\w\s]|_")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def scoring_scheme(*texts: str) -> str:
    """"zh" (CMRC 2018 scoring) when any of the texts holds a CJK character, else "en" (SQuAD v1.1)."""
    return "zh" if any(has_cjk(t) for t in texts) else "en"


def normalized_tokens(text: str, scheme: str) -> list[str]:
    """Normalise and tokenise text: CMRC 2018 mixed segmentation for "zh", SQuAD normalisation for "en"."""
    text = text.lower()
    if scheme == "zh":
        return _MIXED_TOKEN.findall(_CMRC_PUNCTUATION.sub("", text))
    return _ARTICLES.sub(" ", _PUNCTUATION.sub("", text)).split()


def tokens_occur_in(answer: str, text: str) -> bool:
    """True when the answer's tokens occur as a run in the text's tokens (mixed segmentation, so "1898" is found
    in "创建于1898年"; English articles dropped when the answer is not Chinese, as EM normalises)."""
    skip = set() if has_cjk(answer) else {"a", "an", "the"}
    needle = " ".join(t for t in normalized_tokens(answer, "zh") if t not in skip)
    haystack = " ".join(t for t in normalized_tokens(text, "zh") if t not in skip)
    return bool(needle) and f" {needle} " in f" {haystack} "


def any_occurs_in(spans: Iterable[str], texts: Iterable[str]) -> bool:
    """Whether one of `spans` (e.g. the gold answers) `occurs_in` one of `texts` (e.g. what the generator saw)."""
    texts = list(texts)
    return any(occurs_in(span, text) for span in spans for text in texts)


def _gold_list(golds: str | Sequence[str]) -> list[str]:
    """Accept one gold answer or several, and refuse an empty reference so scores are never silently 0."""
    gold_list = [g for g in ([golds] if isinstance(golds, str) else golds) if g.strip()]
    if not gold_list:
        raise ValueError("golds must contain at least one non-empty reference answer")
    return gold_list


def _lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common contiguous run of tokens (the official CMRC 2018 `find_lcs`)."""
    best, previous = 0, [0] * (len(b) + 1)
    for token_a in a:
        current = [0] * (len(b) + 1)
        for j, token_b in enumerate(b, start=1):
            if token_a == token_b:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def _f1_single(prediction: str, gold: str) -> float:
    """F1 against one gold: LCS-based for Chinese (CMRC 2018), token-overlap for English (SQuAD v1.1)."""
    scheme = scoring_scheme(gold, prediction)
    pred, ref = normalized_tokens(prediction, scheme), normalized_tokens(gold, scheme)
    common = _lcs_length(ref, pred) if scheme == "zh" else sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def _em_single(prediction: str, gold: str) -> bool:
    """Whether prediction and one gold have the same normalised tokens under the pair's scheme."""
    scheme = scoring_scheme(gold, prediction)
    return normalized_tokens(prediction, scheme) == normalized_tokens(gold, scheme)


def exact_match(prediction: str, golds: str | Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0 (spaces/punctuation ignored)."""
    return float(any(_em_single(prediction, gold) for gold in _gold_list(golds)))


def f1(prediction: str, golds: str | Sequence[str]) -> float:
    """Token F1 between prediction and the best-matching gold answer, giving credit for partial answers."""
    return max(_f1_single(prediction, gold) for gold in _gold_list(golds))


def _check_k(k: int) -> None:
    """Reject cut-offs below 1, which would make every retrieval metric meaningless."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def _relevant_set(relevant_ids: Iterable[Hashable]) -> set[Hashable]:
    """Collect the relevant ids, refusing an empty set (recall would divide by zero)."""
    relevant = set(relevant_ids)
    if not relevant:
        raise ValueError("relevant_ids must contain at least one id")
    return relevant


def recall_at_k(ranked_ids: Sequence[Hashable], relevant_ids: Iterable[Hashable], k: int) -> float:
    """Fraction of relevant ids found in the top k results; with one relevant id this is the hit rate (hit@k)."""
    _check_k(k)
    relevant = _relevant_set(relevant_ids)
    return len(relevant.intersection(ranked_ids[:k])) / len(relevant)


def reciprocal_rank(ranked_ids: Sequence[Hashable], relevant_ids: Iterable[Hashable], k: int | None = None) -> float:
    """1/rank of the first relevant id within the top k (all results if k is None), else 0.0; average it for MRR."""
    if k is not None:
        _check_k(k)
    relevant = _relevant_set(relevant_ids)
    return next((1.0 / rank for rank, doc_id in enumerate(ranked_ids[:k], start=1) if doc_id in relevant), 0.0)


def context_recall(contexts: Sequence[str], gold_answers: str | Sequence[str]) -> float:
    """Fraction of gold answers that appear in the joined retrieved contexts: could the generator have answered?"""
    answers, joined = _gold_list(gold_answers), "\n".join(contexts)
    return sum(tokens_occur_in(answer, joined) for answer in answers) / len(answers)


def context_relevance(contexts: Sequence[str], is_relevant: Callable[[str], bool]) -> float:
    """Fraction of retrieved sentences judged relevant (0.0 if none): how much of the context is signal, not noise."""
    sentences = [sentence for context in contexts for sentence in split_sentences(context)]
    return sum(1 for s in sentences if is_relevant(s)) / len(sentences) if sentences else 0.0


def contains_any(answers: str | Sequence[str]) -> Callable[[str], bool]:
    """Judge for `context_relevance` without an LLM: a sentence is relevant if it contains a normalised gold answer."""
    gold_list = _gold_list(answers)
    return lambda sentence: any(tokens_occur_in(answer, sentence) for answer in gold_list)


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion: sound for small n and for 0 or n successes."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_ci(
    values: Sequence[float], statistic: Callable[..., np.ndarray] = np.mean, confidence: float = 0.95,
    resamples: int = 2000, seed: int = 0,
) -> tuple[float, float, float]:
    """(estimate, low, high): `statistic` (np.mean, np.median: anything taking `axis`) of `values` and its percentile
    bootstrap interval: the values (one per question) are resampled with replacement `resamples` times. The fixed
    `seed` gives the same interval on every run; one value gives a zero-width interval."""
    data = np.asarray(values, dtype=float)
    if data.ndim != 1 or data.size == 0:
        raise ValueError(f"bootstrap_ci needs a non-empty list of numbers, got shape {data.shape}")
    if not 0 < confidence < 1 or resamples < 1:
        raise ValueError(f"confidence={confidence}, resamples={resamples}: need 0 < confidence < 1 and resamples >= 1")
    picks = np.random.default_rng(seed).integers(0, data.size, size=(resamples, data.size))
    spread = statistic(data[picks], axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(spread, [tail, 100 - tail])
    return float(statistic(data)), float(low), float(high)


def paired_difference(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
) -> tuple[float, float, float]:
    """(mean of a[i] - b[i], low, high) for two pipelines scored on the same questions, in the same order: resampling
    the questions keeps each pair together, so the interval is usually narrower than two separate ones suggest."""
    if len(a) != len(b):
        raise ValueError(f"paired_difference needs one score per question from each side: got {len(a)} and {len(b)}")
    differences = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return bootstrap_ci(differences, np.mean, confidence, resamples, seed)


def percentile(values: Iterable[float], q: float) -> float:
    """The q-th percentile (0-100) of `values`, linear interpolation."""
    data = sorted(values)
    if not data:
        return float("nan")
    if len(data) == 1:
        return data[0]
    return statistics.quantiles(data, n=100, method="inclusive")[min(max(int(round(q)) - 1, 0), 98)]


def without_citations(answer: str) -> str:
    """The answer without its citation markers ([1], [1, 2]): they point at sources, they are not part of it."""
    return CITATION.sub("", answer).strip()


def cited_passage(answer: str, contexts: list[str]) -> str:
    """The first text the generator saw that holds the answer (citations left out), as `cited_span` picks it: the
    passage an extractive answer was copied from; "" for an answer that is not a copy."""
    span = without_citations(answer)
    return next((text for text in contexts if occurs_in(span, text)), "")


def clause_scores(answer: str, golds: list[str], passage: str) -> dict[str, float]:
    """EM and F1 of the answer widened to its clause of `passage` (what mode="clause" answers, with no model call:
    the same copy, widened); an answer that is not a copy (no passage) is scored as it is."""
    span = without_citations(answer)
    widened = clause_holding(span, passage) if passage else span
    return {"em_clause": exact_match(widened, golds), "f1_clause": f1(widened, golds)}


def rescored(row: dict) -> dict:
    """The row with EM, F1 (as answered and widened to the clause of its `cited_passage`) and contains gold
    recomputed from its answer with the current metrics (no model call; evidence and cost stay as measured); a
    failed run stays 0."""
    if row["error"]:
        return row | {"em_clause": 0.0, "f1_clause": 0.0}
    golds, answer = row["golds"], without_citations(row["answer"])
    return row | {"em": exact_match(answer, golds), "f1": f1(answer, golds),
                  "contains": float(any_occurs_in(golds, [answer]))} | clause_scores(answer, golds,
                                                                                      row.get("cited_passage", ""))
