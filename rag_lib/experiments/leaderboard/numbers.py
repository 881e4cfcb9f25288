"""Reading bench_results/*.json and writing its numbers: shares, signed differences, intervals, tables."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from rag_lib.experiments.results import crag_tuned_on
from rag_lib.store import JIEBA_ANALYZER_PARAMS

ROOT = Path(__file__).resolve().parents[3]  # the repository root


BENCH = ROOT / "bench_results"


PAGE = ROOT / "docs" / "benchmarks.md"


SEED, RESAMPLES = 0, 2000


@cache
def results(name: str) -> dict:
    """bench_results/<name>.json, parsed."""
    return json.loads((BENCH / f"{name}.json").read_text(encoding="utf-8"))


def jieba_alone(name: str) -> bool:
    """Whether a CMRC benchmark's BM25 ran with jieba alone (its setup) rather than the course analyzer."""
    return results(name)["setup"].get("BM25 analyzer") == JIEBA_ANALYZER_PARAMS


def bm25_analyzer(name: str) -> str:
    """Which BM25 analyzer a CMRC benchmark ran with, in words."""
    return "BM25 with jieba alone" if jieba_alone(name) else "BM25 with the course analyzer (jieba + stop filter)"


TRIAL = "CMRC trial, 1,002 questions"


def trial_of(file: str) -> str:
    """TRIAL, naming the BM25 analyzer when a benchmark ran with jieba alone instead of the course analyzer."""
    return TRIAL + (" (BM25 jieba alone)" if jieba_alone(file) else "")


@cache
def node_groups() -> dict:
    """data/derived/node_groups.json, the node groups the advanced benchmark indexes: written once at indexing, one
    structured LLM call per document (`rag_lib.experiments.node_groups.precompute`), with its seconds."""
    return json.loads((ROOT / "data" / "derived" / "node_groups.json").read_text(encoding="utf-8"))


def node_group_indexing() -> str:
    """`at indexing 1 LLM call per document (24 documents, median 55 s each)`: node groups' cost before any query."""
    seconds = [entry["seconds"] for entry in node_groups()["documents"].values()]
    return f"at indexing 1 LLM call per document ({len(seconds)} documents, median {np.median(seconds):.0f} s each)"


@cache
def runs(name: str) -> tuple[dict, ...]:
    """The per-question rows of bench_results/answers_runs/<name>.jsonl."""
    lines = (BENCH / "answers_runs" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines if line.strip())


def pick(rows: list[dict], **fields: Any) -> dict:
    """The one row whose fields equal `fields`."""
    found = [row for row in rows if all(row.get(k) == v for k, v in fields.items())]
    if len(found) != 1:
        raise LookupError(f"{len(found)} rows match {fields}")
    return found[0]


def paired_interval(diffs: list[float]) -> tuple[float, tuple[float, float]]:
    """Mean of paired differences and its 95% percentile bootstrap interval (questions resampled, fixed seed)."""
    values = np.asarray(diffs, dtype=float)
    rng = np.random.default_rng(SEED)
    means = values[rng.integers(0, len(values), (RESAMPLES, len(values)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(values.mean()), (float(low), float(high))


def answer_pair(file: str, pipeline: str, baseline: str, metric: str = "f1") -> tuple[float, tuple, int]:
    """Paired difference of `metric` between two pipelines over the questions both answered in a runs file."""
    rows = [r for r in runs(file) if not r.get("error")]
    base = {r["id"]: r[metric] for r in rows if r["pipeline"] == baseline}
    diffs = [r[metric] - base[r["id"]] for r in rows if r["pipeline"] == pipeline and r["id"] in base]
    mean, bounds = paired_interval(diffs)
    return mean, bounds, len(diffs)


def agent_pair(path: str = "local", held_out: bool = False) -> tuple[float, tuple, int]:
    """Agent minus Corrective RAG on "the answer holds the gold", paired over the questions that have a gold
    (`held_out`: only those Corrective RAG was not tuned on)."""
    rows = results("agent")[path]["compare"]["rows"]
    skip = crag_tuned_on() if held_out else set()
    crag = {r["question"]: r["correct"] for r in rows
            if r["pipeline"] == "crag" and r["correct"] is not None and r["question"] not in skip}
    diffs = [float(r["correct"]) - float(crag[r["question"]]) for r in rows
             if r["pipeline"] == "agent" and r["question"] in crag and r["correct"] is not None]
    mean, bounds = paired_interval(diffs)
    return mean, bounds, len(diffs)


def agent_held_out_kinds(path: str = "local") -> str:
    """The kinds of the questions Corrective RAG was not tuned on, with their counts: `8 web, 3 direct`."""
    skip, counts = crag_tuned_on(), {}
    for r in results("agent")[path]["compare"]["rows"]:
        if r["pipeline"] == "agent" and r["correct"] is not None and r["question"] not in skip:
            counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def matched_medians(file: str, pipeline: str, baseline: str) -> tuple[float, float]:
    """Median seconds of two pipelines over the questions both answered in a runs file (the same questions)."""
    rows = [r for r in runs(file) if not r.get("error")]
    base = {r["id"]: r["s"] for r in rows if r["pipeline"] == baseline}
    pairs = np.array([(r["s"], base[r["id"]]) for r in rows if r["pipeline"] == pipeline and r["id"] in base])
    return float(np.median(pairs[:, 0])), float(np.median(pairs[:, 1]))


def condense_pair(query: str = "condensed", key: str = "ranks") -> tuple[float, tuple, int]:
    """Hit@1 (key "ranks") or kept above the cutoff (key "kept above the cutoff") of a rewritten follow-up
    (`query`: "condensed" or "joined to the first question") minus the follow-up as written, paired over the
    conversations."""
    found = [c[key] for c in results("chat")["conversations"]]
    mean, bounds = paired_interval([float(r[query] in (1, True)) - float(r["as written"] in (1, True))
                                    for r in found])
    return mean, bounds, len(found)


def share(value: float, digits: int = 3) -> str:
    """A share as the tables write it: .960, 1.000, -.013."""
    text = f"{value:.{digits}f}"
    return text.replace("0.", ".", 1) if abs(value) < 1 - 0.5 * 10**-digits else text


def signed(value: float, digits: int = 3) -> str:
    """A difference: +.012, -.004, and .000 for a zero."""
    text = share(value, digits)
    if text.lstrip("-") == share(0.0, digits):
        return share(0.0, digits)
    return text if text.startswith("-") else "+" + text


def bound(value: float, digits: int = 3) -> str:
    """An interval's end, with more digits while a nonzero end would print as zero: -.003, not .00, says which
    side of zero the interval lies on; an end exactly at zero prints as 0."""
    if value == 0:
        return "0"
    while value and digits < 6 and signed(value, digits) == share(0.0, digits):
        digits += 1
    return signed(value, digits)


def interval(value: float, bounds: Any, digits: int = 3) -> str:
    """`+.012 [+.004, +.024]`: a paired difference and its 95% interval, or "no question changed" when every
    difference is zero (a zero-width interval tells nothing)."""
    if value == 0 and tuple(bounds) == (0, 0):
        return "no question changed"
    return f"{signed(value, digits)} [{bound(bounds[0], digits)}, {bound(bounds[1], digits)}]"


def paired(value: float, bounds: Any, n: int, digits: int = 3) -> str:
    """A paired difference over `n` questions: its interval, or, when no question changed (every difference zero, a
    zero-width interval), that count and the rule of three's 95% bound on the share that could change."""
    if interval(value, bounds) == "no question changed":
        return f"no question changed (0 of {n}; by the rule of three, up to about {300 / n:.0f}% could differ)"
    return interval(value, bounds, digits)


def with_ci(value: float, bounds: Any, digits: int = 3) -> str:
    """`.984 [.976, .991]`: a mean and its 95% interval."""
    return f"{share(value, digits)} [{share(bounds[0], digits)}, {share(bounds[1], digits)}]"


def ms(value: float | None) -> str:
    """Milliseconds: two decimals under 1, one under 10, whole above."""
    if value is None:
        return "—"
    return f"{value:.2f}" if value < 1 else f"{value:.1f}" if value < 10 else f"{value:.0f}"


def calls(count: float, digits: int = 0) -> str:
    """`1 LLM call`, `2.36 LLM calls`."""
    text = f"{count:.{digits}f}"
    return f"{text} LLM call" + ("" if text == "1" else "s")


def joined(*parts: str) -> str:
    """The non-empty parts, separated by semicolons."""
    return "; ".join(part for part in parts if part)


def table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def columns(rows: list[dict], spec: list[tuple[str, str, Callable[[Any], str]]], label: str = "pipeline") -> str:
    """A table of JSON rows: the `label` field, then one (header, key, format) column each."""
    body = [[str(r[label])] + [fmt(r.get(key)) for _, key, fmt in spec] for r in rows]
    return table([label] + [head for head, _, _ in spec], body)


def three(value: float | None) -> str:
    """A share with three decimals, or a dash when the JSON has none."""
    return "—" if value is None else share(value)


def one(value: float | None) -> str:
    """A number with one decimal, or a dash."""
    return "—" if value is None else f"{value:.1f}"


def ci3(row: dict, key: str, suffix: str = " 95% CI") -> str:
    """`.984 [.976, .991]` from a row holding `key` and `key + suffix`."""
    return with_ci(row[key], row[key + suffix]) if key + suffix in row else three(row.get(key))


def diff3(row: dict, key: str, bounds: str) -> str:
    """A paired difference with its interval, or a blank for the baseline row itself."""
    return interval(row[key], row[bounds]) if key in row else ""


def section(title: str, source: str, command: str, *parts: str) -> str:
    """A section: its title, which JSON it renders and how to measure it again, then its text and tables."""
    head = f"## {title}\n\nFrom `bench_results/{source}`; measure again with `{command}`."
    return "\n\n".join([head, *parts])


def measured(name: str) -> str:
    """When and under what load a result was measured, from its meta block."""
    meta = results(name)["meta"]
    return f"Measured {meta['measured_at']}, 1-minute load {meta['load_average_1min_at_end']:.1f} at the end."


def times(ratio: float) -> str:
    """A ratio: `2.3x`."""
    return f"{ratio:.1f}x"


def two(value: float) -> str:
    """A share with two decimals, as the answer tables write it."""
    return share(value, 2)


def summary_row(pipeline: str, setting: str = "local") -> dict:
    """One pipeline's summary in bench_results/answers.json (all questions of a setting)."""
    return pick(results("answers")["cmrc"]["summary"], setting=setting, pipeline=pipeline, **{"context in": "all"})


def answers_paired(comparison: str, setting: str = "local") -> dict:
    """One paired comparison in bench_results/answers.json (all questions of a setting)."""
    return pick(results("answers")["cmrc"]["paired"], setting=setting, comparison=comparison,
                **{"context in": "all"})


def answer_cost(pipeline: str, setting: str = "local", versus: str = "") -> str:
    """`1.6 LLM calls, 8.4 s/answer` (mean calls, median seconds) from the answer benchmark, the run the differences
    come from; with `versus`, both pipelines' (`2.0 vs 1.1 LLM calls, 11.9 vs 14.8 s/answer`)."""
    row = summary_row(pipeline, setting)
    if not versus:
        return f"{calls(row['LLM calls'], 1)}, {row['s p50']:.1f} s/answer"
    other = summary_row(versus, setting)
    return (f"{row['LLM calls']:.1f} vs {other['LLM calls']:.1f} LLM calls, {row['s p50']:.1f} vs "
            f"{other['s p50']:.1f} s/answer")


def crag_band() -> tuple[float, float]:
    """Corrective RAG's similarity band: below the lower bound a passage is dropped, at the upper one it is trusted
    without a web search; in between the LLM grader decides."""
    from rag_lib.embeddings import E5_MIN_SIMILARITY
    from rag_lib.graphs.crag import E5_CONFIDENT_SIMILARITY  # imported here: the graph module loads LangGraph

    return E5_MIN_SIMILARITY, E5_CONFIDENT_SIMILARITY


def crag_tuned() -> str:
    """What Corrective RAG's rows were tuned on: its grader prompt and its band, both set on the passages of data/."""
    return "grader prompt and similarity band ({:.2f}/{:.2f}) set on data/ passages".format(*crag_band())


def multihop_pair(pipeline: str) -> dict:
    """`pipeline` minus plain RAG on all held-out two-hop questions (multihop_held_out.json's paired table)."""
    return pick(results("multihop_held_out")["paired"], comparison=f"{pipeline} - rag_extractive", questions="all")


def multihop_cost(pipeline: str) -> str:
    """Mean LLM calls and median seconds of `pipeline` against plain RAG's, on the held-out two-hop run."""
    rows = results("multihop_held_out")["summary"]
    mine, rag = (pick(rows, questions="all", pipeline=name) for name in (pipeline, "rag_extractive"))
    return f"{calls(mine['LLM calls'], 1)}, {mine['s p50']:.1f} vs {rag['s p50']:.1f} s/answer (the same questions)"
