"""Quality against cost: each pipeline as a point, and the points no other beats on both axes."""

from __future__ import annotations

from dataclasses import dataclass

from rag_lib.experiments.leaderboard.numbers import results


@dataclass(frozen=True)
class Point:
    """One pipeline on a quality-against-cost plot."""

    name: str
    cost: float
    quality: float


def retrieval_points() -> list[Point]:
    """Every retrieval pipeline: p50 ms per query (one per call) and R@1 (retrieval.json, one run)."""
    return [Point(r["pipeline"], r["p50 ms"], r["R@1"]) for r in results("retrieval")["pipelines"]]


def answer_points(setting: str = "local") -> list[Point]:
    """Every answer pipeline one can deploy, run on all questions of a setting: median s per answer and F1
    (answers.json). The gold-context run (the model given each question's own paragraph) is a bound, not a
    pipeline, and is left out."""
    cmrc = results("answers")["cmrc"]
    rows = [r for r in cmrc["summary"] if r["setting"] == setting and r["context in"] == "all"
            and r["n"] == cmrc["setup"]["questions"] and r["pipeline"] != "gold"]
    return [Point(r["pipeline"], r["s p50"], r["F1"]) for r in rows]


def pareto_front(points: list[Point]) -> list[Point]:
    """The points no other point beats on both axes (cheaper or equal and better), cheapest first."""
    front = [p for p in points if not any(q.cost <= p.cost and q.quality > p.quality
                                          or q.cost < p.cost and q.quality >= p.quality for q in points)]
    return sorted(front, key=lambda p: (p.cost, p.quality))
