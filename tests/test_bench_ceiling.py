"""The recall-ceiling benchmark: per-question scoring, and tuning on one half scored on the other (tiny slice)."""

from __future__ import annotations

import numpy as np
from test_bench_retrieval import write_squad

from benchmarks import ceiling


def test_per_question_scores_rank_one_rank_two_and_an_empty_question():
    scores = np.array([[0.9, 0.1, 0.2], [0.5, 0.8, 0.1], [0.3, 0.2, 0.9]])
    gold, asked = np.array([0, 0, 2]), np.array([True, True, False])
    result = ceiling.per_question(scores, gold, asked)
    assert result["R@1"].tolist() == [1.0, 0.0, 0.0]
    assert result["R@5"].tolist() == [1.0, 1.0, 0.0]
    assert result["MRR@5"].tolist() == [1.0, 0.5, 0.0]


def test_min_max_scales_each_question_to_zero_one():
    scaled = ceiling.min_max_rows(np.array([[2.0, 4.0, 3.0], [-1.0, -1.0, 5.0]]))
    assert np.allclose(scaled, [[0.0, 1.0, 0.5], [0.0, 0.0, 1.0]])


def test_benchmark_tunes_on_one_half_and_scores_the_other(tmp_path, bench_output):
    path = tmp_path / "mini.json"
    write_squad(path)
    ceiling.main(["--cmrc", str(path), "--out", "mini_ceiling"])
    results = bench_output("mini_ceiling")
    assert len(results["signals"]) == 6 and [h["tuned on"] for h in results["halves"]] == ["A", "B"]
    for half in results["halves"]:
        assert any(half["weights"].values()) and set(half["weights"].values()) <= set(ceiling.GRID)
        assert half["in sample"]["questions"] + half["held out"]["questions"] == half["all"]["questions"] == 4
        assert half["all"]["R@1"] == 0.75  # three distinct topics found; the empty question is a miss
        low, high = half["all"]["R@1 95% CI"]
        assert low <= half["all"]["R@1"] <= high
