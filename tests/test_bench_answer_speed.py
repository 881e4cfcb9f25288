"""The answer-speed slice's per-pipeline summary, on hand-written rows (a unit test: no model, no index)."""

from __future__ import annotations

from benchmarks import answer_speed


def row(qid: str, s: float, f1: float, given: int = 500, read: int = 400) -> dict:
    return {"id": qid, "s": s, "f1": f1, "error": "", "s_prompt": s - 1, "s_generate": 1.0, "llm_calls": 2,
            "prompt_tokens_given": given, "prompt_tokens_read": read, "completion_tokens": 10}


def test_medians_target_and_f1_against_the_earlier_rows() -> None:
    rows = [row("a", 6.0, 1.0), row("b", 7.0, 0.5), row("c", 12.0, 0.0, given=900, read=500)]
    before = {"a": {"f1": 1.0}, "b": {"f1": 0.0}}  # c has no earlier row: left out of the paired difference
    summary = answer_speed.pipeline_summary("rag_extractive", rows, before)
    assert summary["s p50"] == 7.0 and summary["target s"] == 8.0
    assert summary["s p50 ci"][0] <= 7.0 <= summary["s p50 ci"][1]
    assert summary["prompt tokens given p50"] == 500 and summary["prompt tokens reused p50"] == 100
    assert summary["F1 diff n"] == 2 and summary["F1 diff vs answers.json"][0] == 0.25  # (0 + 0.5) / 2
    slow = answer_speed.pipeline_summary("judge_extractive", [row("a", 25.0, 1.0)], {})
    assert slow["target"] == "not met" and slow["F1 diff vs answers.json"] is None


def test_the_two_passage_variant_is_paired_with_plain_rag_of_the_same_run() -> None:
    plain = [row("a", 9.0, 1.0) | {"pipeline": "rag_extractive"}, row("b", 9.0, 0.0) | {"pipeline": "rag_extractive"}]
    short = [row("a", 7.0, 1.0) | {"pipeline": "rag_extractive_k2"}]
    paired = answer_speed.beside("rag_extractive_k2", short, plain + short)
    assert paired["beside"] == "rag_extractive" and paired["beside n"] == 1
    assert paired["F1 diff beside"][0] == 0.0 and paired["s diff beside"][0] == -2.0
    assert answer_speed.beside("rag_extractive", plain, plain + short) == {}  # not a variant: nothing beside it


def test_a_target_is_met_only_when_the_whole_interval_is_under_it() -> None:
    assert answer_speed.verdict([7.0, 6.0, 7.9], 8.0) == "met"
    assert answer_speed.verdict([7.0, 6.0, 9.0], 8.0) == "undecided"
    assert answer_speed.verdict([9.0, 8.5, 9.5], 8.0) == "not met"
