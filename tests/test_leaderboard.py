"""docs/benchmarks.md and the README's summary table are what rag_lib.experiments.leaderboard renders from the
committed JSON, and the leaderboard's rows agree with the JSON they come from. Reads JSON only: no kernel, no model,
no database."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rag_lib.experiments import leaderboard as lb

ROOT = Path(__file__).resolve().parents[1]


def bench(name: str) -> dict:
    """bench_results/<name>.json, read here independently of the generator."""
    return json.loads((ROOT / "bench_results" / f"{name}.json").read_text(encoding="utf-8"))


def row(technique: str) -> lb.Row:
    """The leaderboard row of one technique."""
    return next(r for r in lb.leaderboard() if r.technique == technique)


def test_the_page_is_what_the_json_renders() -> None:
    on_disk = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert on_disk == lb.render(), "docs/benchmarks.md is stale: run `python -m rag_lib.experiments.leaderboard`"


def test_the_readme_summary_is_what_the_json_renders() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert lb.summary_table() in readme, "the README's summary table is stale: paste `summary_table()` into it"
    assert lb.speed_summary() in readme, "the README's answer-speed paragraph is stale: paste `speed_summary()` into it"
    assert lb.multihop_verdict() in readme, "the README's two-hop paragraph is stale: paste multihop_verdict() into it"
    assert len(readme) <= 15_000, f"the README has {len(readme)} characters: move detail to docs/benchmarks.md"


def test_every_technique_has_one_row_with_cost_data_and_tuning() -> None:
    rows = lb.leaderboard()
    assert len({r.technique for r in rows}) == len(rows)
    for family in ("retrieval", "query", "answer"):
        assert any(r.family == family for r in rows)
    for r in rows:
        assert r.cost and r.data and r.tuning, r
        assert r.ci is None or r.ci[0] <= r.diff <= r.ci[1], r


def test_paired_rows_quote_the_json() -> None:
    fusion = bench("retrieval")["per-context fusion"]["all"]
    parent = fusion["parent-child: 120-char children -> context"]
    assert row("per-context fusion (five searches)").diff == parent["fused - this, R@1"]
    assert row("per-context fusion (five searches)").ci == tuple(parent["fused - this, R@1 95% CI"])
    complete = fusion["per-context fusion, every candidate scored by every search"]
    low, high = complete["fused - this, R@1 95% CI"]
    assert row("per-context fusion, every candidate scored").ci == (-high, -low)
    crag = next(p for p in bench("answers")["cmrc"]["paired"] if p["setting"] == "local"
                and p["context in"] == "all" and p["comparison"] == "crag_extractive - rag_extractive")
    assert row("Corrective RAG (grade, rewrite, web search)").diff == crag["F1 diff"]
    union = next(s for s in bench("advanced")["summary"]
                 if s["pipeline"] == "question + translation (union)" and s["set"] == "translated + hard")
    assert row("question + translation (union)").ci == tuple(union["recall@3 diff 95% CI"])


def test_two_hop_rows_quote_the_held_out_half() -> None:
    two_hop = bench("multihop_held_out")
    assert two_hop["setup"]["split"] == "held_out"
    bridge = next(p for p in two_hop["paired"]
                  if p["questions"] == "all" and p["comparison"] == "bridge - rag_extractive")
    found = row("two-hop bridge (copy the bridge, search it, read the union)")
    assert (found.diff, found.ci, found.n) == (bridge["F1 diff"], tuple(bridge["F1 diff ci"]), bridge["n"])
    assert lb.interval(bridge["evidence diff"], bridge["evidence diff ci"], 2) in found.quality()


def test_answer_costs_come_from_the_run_the_differences_come_from() -> None:
    judge = next(s for s in bench("answers")["cmrc"]["summary"] if s["setting"] == "local"
                 and s["context in"] == "all" and s["pipeline"] == "judge_extractive")
    expected = f"{judge['LLM calls']:.1f} LLM calls, {judge['s p50']:.1f} s/answer"
    assert row("RAG with a judge (follow-up searches)").cost == expected


def test_node_group_costs_count_the_model_calls_made_at_indexing() -> None:
    documents = json.loads((ROOT / "data" / "derived" / "node_groups.json").read_text(encoding="utf-8"))["documents"]
    median = np.median([entry["seconds"] for entry in documents.values()])
    indexing = f"at indexing 1 LLM call per document ({len(documents)} documents, median {median:.0f} s each)"
    for technique in ("node groups (LLM summaries, keywords, QA pairs)", "multi-path (dense + BM25 + node groups)"):
        cost = row(technique).cost
        assert cost.startswith("0 LLM calls per query, ") and cost.endswith(indexing), cost


def test_agent_row_gives_the_questions_crag_was_not_tuned_on() -> None:
    held_out, bounds, n = lb.agent_pair(held_out=True)
    assert 0 < n < lb.agent_pair()[2]
    kinds = lb.agent_held_out_kinds()
    assert sum(int(part.split()[0]) for part in kinds.split(", ")) == n  # every held-out question has its kind named
    assert f"the {n} questions Corrective RAG was not tuned on ({kinds}): {lb.interval(held_out, bounds, 2)}" in row(
        "tool-calling agent (create_agent, constrained steps)").elsewhere


def test_condense_row_gives_the_above_cutoff_comparison_from_chat_json() -> None:
    written = next(r for r in bench("chat")["retrieval"] if r["query"] == "as written")
    kept = lb.interval(written["condensed minus this, kept"], written["condensed minus this, kept 95% CI"])
    assert row("rewrite: condense a follow-up from the earlier turns").elsewhere.endswith(kept)


def test_extractive_row_cost_compares_medians_on_the_same_questions() -> None:
    rows = [json.loads(line) for line in (ROOT / "bench_results" / "answers_runs" / "local.jsonl").open()]
    generated = {r["id"]: r["s"] for r in rows if r["pipeline"] == "rag" and not r.get("error")}
    extractive = [r["s"] for r in rows if r["pipeline"] == "rag_extractive" and r["id"] in generated]
    assert len(extractive) == len(generated) == 20
    cost = row("extractive answers (copy a span, verify, cite)").cost
    assert f"{np.median(extractive):.1f} vs {np.median(list(generated.values())):.1f} s/answer" in cost


def test_point_only_rows_say_so() -> None:
    rerank = row("reranking: e5 re-scorer (two-stage)")
    assert rerank.ci is None and "point values only" in rerank.quality()
    pipelines = {p["pipeline"]: p for p in bench("retrieval")["pipelines"]}
    expected = pipelines["hybrid RRF + e5 rerank (two-stage)"]["R@1"] - pipelines["hybrid RRF(60)"]["R@1"]
    assert rerank.diff == pytest.approx(expected)


def test_intervals_computed_from_per_question_rows() -> None:
    rows = [json.loads(line) for line in (ROOT / "bench_results" / "answers_runs" / "local.jsonl").open()]
    f1 = {(r["pipeline"], r["id"]): r["f1"] for r in rows if not r.get("error")}
    diffs = [f1["rag_extractive", q] - f1["llm_only", q] for p, q in f1 if p == "rag_extractive"]
    plain = row("plain RAG: hybrid retrieval, k=3, extractive answer")
    assert plain.diff == pytest.approx(sum(diffs) / len(diffs))
    assert plain.ci[0] < plain.diff < plain.ci[1] and plain.ci[1] - plain.ci[0] < 0.2
    again = lb.answer_pair("local", "rag_extractive", "llm_only")
    assert again == lb.answer_pair("local", "rag_extractive", "llm_only")  # a fixed seed: the same interval


def test_paired_interval_is_fixed_and_sensible() -> None:
    assert lb.paired_interval([0.0] * 50) == (0.0, (0.0, 0.0))
    mean, (low, high) = lb.paired_interval([1.0, 0.0] * 100)
    assert mean == 0.5 and 0.4 < low < 0.5 < high < 0.6


def test_writing_numbers() -> None:
    assert [lb.share(0.96), lb.share(1.0), lb.share(-0.0134), lb.share(0.9996)] == [".960", "1.000", "-.013", "1.000"]
    assert [lb.signed(0.0123), lb.signed(-0.0004), lb.signed(0.0)] == ["+.012", ".000", ".000"]
    assert lb.interval(0.014, (0.004, 0.024)) == "+.014 [+.004, +.024]"
    # an end that would round to zero gets the digits that show its sign; an exact zero stays as it is
    assert lb.interval(-0.037, (-0.071, -0.0034), 2) == "-.04 [-.07, -.003]"
    assert lb.interval(-0.009, (-0.018, 0.0)) == "-.009 [-.018, 0]"
    assert lb.interval(0.0, (0.0, 0.0)) == "no question changed"
    # a zero-width interval means no question changed: say so, with the rule of three's bound (3/n)
    assert lb.paired(0.0, (0.0, 0.0), 23) == (
        "no question changed (0 of 23; by the rule of three, up to about 13% could differ)")
    assert lb.paired(0.014, (0.004, 0.024), 23) == lb.interval(0.014, (0.004, 0.024))


def test_pareto_front_keeps_only_undominated_points() -> None:
    points = [lb.Point("cheap", 1, 0.5), lb.Point("dominated", 2, 0.4), lb.Point("best", 3, 0.9),
              lb.Point("same cost, worse", 3, 0.8)]
    assert [p.name for p in lb.pareto_front(points)] == ["cheap", "best"]
    front = {p.name for p in lb.pareto_front(lb.retrieval_points())}
    best = max(lb.retrieval_points(), key=lambda p: p.quality)
    cheapest = min(lb.retrieval_points(), key=lambda p: p.cost)
    assert {best.name, cheapest.name} <= front


def test_durability_section_quotes_the_json() -> None:
    text = lb.durability_section()
    assert "bench_results/durability.json" in text
    for r in bench("durability")["rows"]:
        assert f"| {r['durability']} | {lb.ms(r['ms per step (median)'])} | {r['checkpoints per run']} |" in text


def test_the_verdicts_notebook_14_writes_follow_their_intervals() -> None:
    rows = {r.technique: r for r in lb.leaderboard()}
    hybrid, stop = rows["hybrid RRF (dense + BM25)"], rows["BM25, jieba + stop filter"]
    hyde, union = rows["HyDE, passage in the question's language"], rows["question + translation (union)"]
    gold, agent = rows["gold context (the bound: perfect retrieval)"], rows[
        "tool-calling agent (create_agent, constrained steps)"]
    assert hybrid.ci[0] > 0 and stop.ci[0] <= 0 <= stop.ci[1] and hyde.ci[1] < 0 and union.ci[0] > 0
    crag_split = lb.answers_paired("crag_extractive - rag_extractive", "split")
    judge, judge_split = (lb.answers_paired("judge_extractive - rag_extractive", s) for s in ("local", "split"))
    assert gold.ci[0] <= 0 <= gold.ci[1] and crag_split["F1 diff ci"][0] > 0 and judge_split["F1 diff ci"][1] < 0
    assert judge["F1 diff ci"][0] <= 0 <= judge["F1 diff ci"][1]
    unseen_bounds = lb.agent_pair(held_out=True)[1]
    assert unseen_bounds[0] <= 0 <= unseen_bounds[1] and agent.ci[1] < 0
    assert rows["reranking: e5 re-scorer (two-stage)"].ci is None  # point values only: no verdict
    assert rows["parent-child (120-char children, whole context)"].ci is None
    assert all(p.name != "gold" for p in lb.answer_points())  # a bound, not a pipeline on the front
    two_hop = {p["comparison"]: p for p in lb.results("multihop_held_out")["paired"] if p["questions"] == "all"}
    assert two_hop["judge_extractive - rag_extractive"]["F1 diff ci"][1] < 0  # "it loses"
    low, high = two_hop["bridge - rag_extractive"]["F1 diff ci"]
    assert low <= 0 <= high  # "no measurable difference"
    complete = rows["per-context fusion, every candidate scored"]  # "clear of zero ... on one split only"
    dev_low, dev_high = lb.negated(lb.fusion_vs(lb.COMPLETE, file="retrieval_dev"))[1]
    assert complete.ci[0] > 0 and dev_low <= 0 <= dev_high and "point values" in hybrid.elsewhere
    assert stop.elsewhere.startswith("dev: +") and "-" not in stop.elsewhere.split("[")[1]
    written = next(s for s in bench("advanced")["summary"]  # "it changed none of the 23 retrievals"
                   if s["pipeline"] == "question + translation (union)" and s["set"] == "sample as written")
    assert written["recall@3 diff"] == 0 and tuple(written["recall@3 diff 95% CI"]) == (0, 0)
    crag = lb.answers_paired("crag_extractive - rag_extractive")
    assert crag["evidence diff ci"][1] < 0 and crag["F1 diff ci"][0] <= 0 <= crag["F1 diff ci"][1]
    web = lb.answers_paired("crag_extractive - rag_extractive", "split")  # the split gain needs the web route
    assert "no web route" in rows["Corrective RAG (grade, rewrite, web search)"].elsewhere and web["F1 diff ci"][0] > 0


def test_the_split_setting_pairs_crag_with_a_plain_rag_that_has_a_web_fallback() -> None:
    rows = {r.technique: r for r in lb.leaderboard()}
    fallback = rows["web fallback: search the web when no passage passes the cutoff"]
    graded = rows["Corrective RAG where half the contexts are only on the web"]
    assert fallback.baseline == "plain RAG (no web route)" and fallback.ci[0] > 0  # the web route alone pays
    assert graded.baseline == "plain RAG + web fallback" and graded.ci[0] > 0  # and the grader adds to it
    assert "web fallback" in rows["Corrective RAG (grade, rewrite, web search)"].elsewhere
