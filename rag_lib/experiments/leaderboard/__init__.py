"""The technique leaderboard and docs/benchmarks.md, rendered from the committed JSON in bench_results/.

`python -m rag_lib.experiments.leaderboard` rewrites docs/benchmarks.md; the output depends on the JSON only (paired
bootstrap intervals computed here use a fixed seed), so tests/test_leaderboard.py can check the page is current.
Modules: numbers (reading the JSON, writing numbers), rows (the leaderboard), pareto (quality against cost), page and
page_* (the sections of docs/benchmarks.md). The names notebook 14 and the tests use are importable from here.
"""

from __future__ import annotations

from rag_lib.experiments.leaderboard.labels import ANSWER_LABELS, is_peer, label
from rag_lib.experiments.leaderboard.numbers import (
    BENCH,
    RESAMPLES,
    SEED,
    agent_held_out_kinds,
    agent_pair,
    answer_pair,
    answers_paired,
    interval,
    ms,
    paired,
    paired_interval,
    results,
    share,
    signed,
    summary_row,
    table,
)
from rag_lib.experiments.leaderboard.page import render
from rag_lib.experiments.leaderboard.page_answers import (
    COMPARISONS,
    durability_section,
    multihop_verdict,
)
from rag_lib.experiments.leaderboard.page_speed import speed_summary
from rag_lib.experiments.leaderboard.pareto import Point, answer_points, pareto_front, retrieval_points
from rag_lib.experiments.leaderboard.rows import (
    COMPLETE,
    DENSE,
    ENSEMBLE,
    FUSED,
    PARENT,
    RERANK,
    RRF,
    WEIGHTED,
    Row,
    cost_notes,
    fusion_vs,
    leaderboard,
    negated,
    summary_table,
)

__all__ = [
    "ANSWER_LABELS", "BENCH", "COMPARISONS", "COMPLETE", "DENSE", "ENSEMBLE", "FUSED", "PARENT", "Point", "RERANK",
    "RESAMPLES", "RRF", "Row", "SEED", "WEIGHTED", "agent_held_out_kinds", "agent_pair", "answer_pair",
    "answer_points", "answers_paired", "cost_notes", "durability_section", "fusion_vs", "interval", "is_peer",
    "label", "leaderboard", "ms", "multihop_verdict", "negated", "paired", "paired_interval", "pareto_front",
    "render", "results", "retrieval_points", "share", "signed", "speed_summary", "summary_row", "summary_table",
    "table",
]
