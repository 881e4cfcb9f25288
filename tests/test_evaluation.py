"""Hand-computed checks for rag_lib.experiments.evaluation (answer, retrieval and context metrics)."""

from __future__ import annotations

import pytest

from rag_lib.experiments.evaluation import (
    any_occurs_in,
    contains_any,
    context_recall,
    context_relevance,
    exact_match,
    f1,
    normalized_tokens,
    recall_at_k,
    reciprocal_rank,
    scoring_scheme,
    tokens_occur_in,
    wilson,
)
from rag_lib.matching import occurs_in

# ---------------------------------------------------------------- answers: Chinese (CMRC 2018)


def test_chinese_em_ignores_punctuation_spaces_and_case():
    # "《 红楼梦 》" -> 红/楼/梦 ; "红楼梦。" -> 红/楼/梦
    assert exact_match("《 红楼梦 》", "红楼梦。") == 1.0
    assert exact_match("北京 大学！", "北京大学") == 1.0
    assert exact_match("GPT4 模型", "gpt4模型") == 1.0
    assert exact_match("北京", "北京大学") == 0.0


def test_chinese_f1_partial_overlap_uses_lcs():
    # pred 北/京/大/学 (4), gold 北/京 (2), LCS = 2 -> P = 2/4, R = 2/2, F1 = 2*.5*1/1.5 = 2/3
    assert f1("北京大学", "北京") == pytest.approx(2 / 3)
    # LCS is contiguous: pred 大/学/北/京 vs gold 北/京/大/学 -> LCS = 2 (北京 or 大学), not 4 as a bag would give
    # P = R = 2/4 -> F1 = 0.5
    assert f1("大学北京", "北京大学") == pytest.approx(0.5)


def test_mixed_chinese_english_tokens_follow_the_official_cmrc_scorer():
    # the official script deletes "-" before segmenting: "GPT-4模型" -> gpt4/模/型, equal to the gold's tokens
    assert f1("GPT-4模型", "GPT4模型") == 1.0
    assert f1("gpt4模型。", "GPT4模型") == 1.0
    # a gold that is mostly digits or Latin letters is still scored the CMRC way when the pair holds Chinese:
    # pred 1990/年 (2), gold 1990 (1), LCS 1 -> P = 1/2, R = 1, F1 = 2/3 (the SQuAD scheme would give 0)
    assert f1("1990年", "1990") == pytest.approx(2 / 3)
    # pred nba/球/队 (3), gold nba (1) -> P = 1/3, R = 1, F1 = 0.5
    assert f1("NBA球队", "NBA") == pytest.approx(0.5)
    assert exact_match("1990年", "1990") == 0.0


def test_context_recall_finds_numbers_and_latin_words_inside_chinese_text():
    assert context_recall(["北京大学创建于1898年。"], "1898") == 1.0
    assert context_recall(["他在NBA打球。"], "nba") == 1.0
    assert context_recall(["北京大学创建于1898年。"], "1899") == 0.0


# ---------------------------------------------------------------- answers: English (SQuAD v1.1)


def test_english_em_ignores_articles_case_and_punctuation():
    # both normalise to "eiffel tower"
    assert exact_match("Eiffel tower.", "The Eiffel Tower") == 1.0
    assert exact_match("an apple", "Apple!") == 1.0
    assert exact_match("Eiffel", "the Eiffel Tower") == 0.0


def test_english_f1_bag_of_tokens():
    # pred [eiffel] (1), gold [eiffel, tower] (2), overlap 1 -> P = 1, R = 1/2, F1 = 2*.5/1.5 = 2/3
    assert f1("Eiffel", "the Eiffel Tower") == pytest.approx(2 / 3)
    # pred [tall, eiffel, tower, in, paris] (5), gold (2), overlap 2 -> P = 2/5, R = 1, F1 = .8/1.4 = 4/7
    assert f1("The tall Eiffel Tower in Paris", "Eiffel Tower") == pytest.approx(4 / 7)
    # word order does not matter for the bag of tokens (unlike the Chinese LCS)
    assert f1("tower eiffel", "Eiffel Tower") == 1.0


def test_multiple_golds_take_the_max():
    # vs 清华大学: LCS 大学 = 2, P = R = 2/4 -> 0.5 ; vs 北京: 2/3 (see above) -> max = 2/3
    assert f1("北京大学", ["清华大学", "北京"]) == pytest.approx(2 / 3)
    assert exact_match("北大", ["北京大学", "北大"]) == 1.0
    # each gold picks its own scheme: the English gold gives F1 1.0
    assert f1("Peking University", ["北京大学", "Peking University"]) == 1.0


def test_empty_prediction_scores_zero():
    assert f1("", "北京") == 0.0
    assert exact_match("", "北京") == 0.0
    assert f1("", "Paris") == 0.0
    assert exact_match("", "Paris") == 0.0


def test_empty_golds_raise():
    for golds in ([], "", ["  "]):
        with pytest.raises(ValueError, match="golds"):
            f1("北京", golds)
        with pytest.raises(ValueError, match="golds"):
            exact_match("北京", golds)


# ---------------------------------------------------------------- retrieval

RANKED = ["d3", "d1", "d7", "d2"]


def test_recall_at_k():
    # relevant {d1, d2}: top1 [d3] -> 0/2 ; top2 [d3, d1] -> 1/2 ; top4 -> 2/2 ; k beyond the list is fine
    assert recall_at_k(RANKED, {"d1", "d2"}, 1) == 0.0
    assert recall_at_k(RANKED, {"d1", "d2"}, 2) == 0.5
    assert recall_at_k(RANKED, {"d1", "d2"}, 4) == 1.0
    assert recall_at_k(RANKED, ["d1", "d2"], 10) == 1.0
    # one relevant id -> hit rate
    assert recall_at_k(RANKED, ["d7"], 3) == 1.0
    assert recall_at_k(RANKED, ["d7"], 2) == 0.0


def test_reciprocal_rank():
    assert reciprocal_rank(RANKED, ["d3"]) == 1.0  # rank 1
    assert reciprocal_rank(RANKED, ["d7"]) == pytest.approx(1 / 3)  # rank 3
    assert reciprocal_rank(RANKED, ["d9"]) == 0.0  # absent
    assert reciprocal_rank(RANKED, ["d7"], k=2) == 0.0  # cut off before rank 3
    assert reciprocal_rank(RANKED, ["d7", "d1"], k=2) == 0.5  # first relevant is d1 at rank 2


def test_k_must_be_positive():
    with pytest.raises(ValueError, match="k must be >= 1"):
        recall_at_k(RANKED, ["d1"], 0)
    with pytest.raises(ValueError, match="k must be >= 1"):
        reciprocal_rank(RANKED, ["d1"], k=0)


# ---------------------------------------------------------------- contexts

CONTEXTS = ["北京大学创建于1898年。它位于北京。", "Paris is in France."]


def test_context_recall():
    # "1898年" (as 1898/年) is in the first context, "巴黎" is nowhere -> 1/2
    assert context_recall(CONTEXTS, ["1898年", "巴黎"]) == 0.5
    assert context_recall(CONTEXTS, "the Paris") == 1.0  # English normalisation drops the article
    # matching is on token boundaries: "Pari" is not the token "paris"
    assert context_recall(CONTEXTS, "Pari") == 0.0


def test_context_relevance_with_contains_any():
    # sentences: "北京大学创建于1898年。" | "它位于北京。" | "Paris is in France." -> only the first has 1898年
    assert context_relevance(CONTEXTS, contains_any("1898年")) == pytest.approx(1 / 3)
    # "北京" is in the first two sentences -> 2/3
    assert context_relevance(CONTEXTS, contains_any(["北京", "Berlin"])) == pytest.approx(2 / 3)
    # any callable works as the judge (e.g. an LLM later); no sentences -> 0.0
    assert context_relevance(CONTEXTS, lambda sentence: True) == 1.0
    assert context_relevance([], lambda sentence: True) == 0.0


# ---------------------------------------------------------------- a proportion's interval


def test_wilson_interval_matches_the_textbook_values_and_stays_inside_0_1():
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)  # Wilson (1927) score interval, z = 1.96
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)  # 0 successes: not the zero-width (0, 0)
    assert wilson(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)  # no trials: nothing known


def test_any_occurs_in_looks_for_every_span_in_every_text():
    assert any_occurs_in(["k1=1.2", "x"], ["参数 k1 = 1.2 和 b = 0.75"])
    assert any_occurs_in(["紫禁城"], ["长城", "故宫旧称紫禁城"])  # found in the second text
    assert not any_occurs_in(["k1=1.2"], ["k1 = 1.25"]) and not any_occurs_in([], ["text"])


def test_normalisation_follows_the_scorer_of_the_language():
    assert scoring_scheme("1990", "1990年") == "zh" and scoring_scheme("BM25", "bm25") == "en"
    assert normalized_tokens("GPT-4 发布于2023年。", "zh") == ["gpt4", "发", "布", "于", "2023", "年"]
    assert normalized_tokens("The BM25 function, k=60.", "en") == ["bm25", "function", "k60"]


def test_tokens_occur_in_matches_normalised_tokens_as_a_run():
    assert tokens_occur_in("1898", "北京大学创建于1898年")
    assert tokens_occur_in("the BM25 function", "Lucene ranks with a BM25 function.")  # articles dropped
    assert tokens_occur_in("紫禁", "故宫旧称紫禁城")  # CJK: one token per character, so part of a word matches
    assert not tokens_occur_in("30", "a range of 300") and not tokens_occur_in("", "text")


def test_the_two_occurrence_checks_part_ways_on_punctuation_and_articles():
    # a copied span must be in the passage as it is; a normalised answer only needs its tokens there
    assert tokens_occur_in("紫禁城。", "故宫旧称紫禁城") and not occurs_in("紫禁城。", "故宫旧称紫禁城")
    assert tokens_occur_in("the BM25", "BM25 ranks") and not occurs_in("the BM25", "BM25 ranks")
