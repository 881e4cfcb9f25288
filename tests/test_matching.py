"""rag_lib.matching: each answer-in-text check on its own cases, and the cases where they part ways."""

from __future__ import annotations

from rag_lib.matching import (
    clause_holding,
    grounded,
    occurs_in,
)


def test_occurs_in_matches_the_span_case_and_space_blind_and_never_inside_a_word():
    assert occurs_in("Jieba 分词器", "使用 jieba分词器。") and occurs_in("30", "default value of 30,")
    assert occurs_in("2023年6月13日", "于 2023 年 6 月 13 日推出")
    assert not occurs_in("30", "a range of 300") and not occurs_in("", "text") and not occurs_in("Beijing", "jieba")


def test_clause_holding_widens_a_span_to_the_clause_around_it_and_nothing_more():
    text = "动画在2007年1月4日于千叶电视台开始播放。后来又重播，共12集。"
    assert clause_holding("2007年1月4日", text) == "动画在2007年1月4日于千叶电视台开始播放"
    # spaces as occurs_in
    assert clause_holding("12集", text) == "共12集" and clause_holding("重 播", text) == "后来又重播"
    english = "RRF was introduced by Cormack, Clarke and Büttcher in 2009. It sets k=60 (v1.5 too)."
    assert clause_holding("2009", english) == "Clarke and Büttcher in 2009"  # a comma before a space ends a clause
    assert clause_holding("k=60", english) == "It sets k=60 (v1.5 too)"  # "1.5" is not the end of a sentence
    assert clause_holding("Okapi", english) == "Okapi"  # not in the text: the span as it is


def test_grounded_needs_a_fact_from_the_passage_that_the_question_did_not_bring():
    passage, question = "HNSW was described by Malkov and Yashunin.", "Who described HNSW?"
    assert grounded("Malkov and Yashunin", passage, question)
    assert not grounded("60", "## Reciprocal Rank Fusion (RRF)", "What value is used for k in RRF?")  # invented
    assert not grounded("RRF", "## Reciprocal Rank Fusion (RRF)", "What value is used for k in RRF?")  # said back
    assert not grounded("", passage, question)
    crag = "In the paper the evaluator is a fine-tuned T5-large model (about 0.77B parameters)."
    crag_q = "How many parameters does the model that CRAG fine-tuned as its retrieval evaluator have?"
    assert grounded("The model has approximately 0.77B parameters.", crag, crag_q)  # a paraphrase around the fact
    assert not grounded("3", crag, crag_q)
    assert grounded("2023 年 6 月 13 日", "OpenAI 于 2023 年 6 月 13 日推出了函数调用。",
                    "OpenAI 是在哪一天推出函数调用功能的？")
