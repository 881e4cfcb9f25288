"""Where an answer's seconds go, per pipeline, on a slice of the answer benchmark: plain RAG, plain RAG with two
passages instead of three (a shorter prompt), Corrective RAG and the judge (extractive answers, the local setting)
on the first --n questions of the answers benchmark's sample, run side by side (question 1 through every pipeline,
then question 2, ...) by the same code as `answers`, each run starting from an empty prompt cache.

Per pipeline: median seconds with a 95 % bootstrap interval, against the target (plain RAG 8 s, Corrective RAG 10 s,
the judge 20 s on this machine's faster build); median prompt tokens given to llama.cpp (chat template included),
read (evaluated) and reused from its cache (given minus read: the instructions shared by a pipeline's calls),
generated tokens, LLM calls; mean F1, and its paired difference with the same pipeline's rows in the answers
benchmark (bench_results/answers_runs/local.jsonl, same questions, the build then installed; for the two-passage
variant, with plain RAG in this run). The build (avx512 or portable) and the machine's load are recorded. Resumable:
rows go to --runs-dir as in `answers`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from benchmarks import answers, answers_pipelines, answers_run, answers_sample, answers_summary, write_results
from benchmarks.builds import venv_build
from rag_lib.experiments.cmrc import cmrc_path, load_cmrc
from rag_lib.experiments.evaluation import bootstrap_ci, paired_difference, rescored
from rag_lib.experiments.results import RESULTS_DIR, format_table, read_jsonl
from rag_lib.llm import get_chat_model

# median seconds per answer; rag_extractive_k2 (two passages instead of three) is plain RAG with a shorter prompt
TARGETS = {"rag_extractive": 8.0, "rag_extractive_k2": 8.0, "crag_extractive": 10.0, "judge_extractive": 20.0}
BESIDE = {"rag_extractive_k2": "rag_extractive"}  # a variant and the pipeline it is compared with in this run
SETTING = "local"


def median_ci(values: list[float]) -> list[float]:
    """The median of `values` and its 95 % percentile-bootstrap interval, rounded for the table."""
    return [round(float(v), 2) for v in bootstrap_ci(values, np.median)]


def verdict(median: list[float], target: float) -> str:
    """"met" when the median's whole interval is at or under the target, "not met" when it is all above, else
    "undecided" (the interval spans the target)."""
    if median[2] <= target:
        return "met"
    return "not met" if median[1] > target else "undecided"


def pipeline_summary(name: str, rows: list[dict], before: dict[str, dict]) -> dict:
    """One pipeline's medians, target and F1 against the answers benchmark's rows for the same questions."""
    timed = [r for r in rows if not r["error"]]
    seconds = median_ci([r["s"] for r in rows])
    given = [r["prompt_tokens_given"] for r in timed if "prompt_tokens_given" in r]
    read = [r["prompt_tokens_read"] for r in timed if "prompt_tokens_read" in r]
    common = [r for r in rows if r["id"] in before]
    f1_diff = paired_difference([r["f1"] for r in common], [before[r["id"]]["f1"] for r in common]) if common else None
    return {
        "pipeline": name, "n": len(rows), "errors": len(rows) - len(timed),
        "s p50": seconds[0], "s p50 ci": seconds[1:], "target s": TARGETS[name],
        "target": verdict(seconds, TARGETS[name]),
        "s reading the prompt p50": round(float(np.median([r["s_prompt"] for r in timed])), 2),
        "s generating p50": round(float(np.median([r["s_generate"] for r in timed])), 2),
        "prompt tokens given p50": float(np.median(given)), "prompt tokens read p50": float(np.median(read)),
        "prompt tokens reused p50": float(np.median([g - r for g, r in zip(given, read)])),
        "generated tokens p50": float(np.median([r["completion_tokens"] for r in timed])),
        "LLM calls mean": round(float(np.mean([r["llm_calls"] for r in rows])), 2),
        "F1": round(float(np.mean([r["f1"] for r in rows])), 3),
        "F1 diff vs answers.json": [round(v, 3) for v in f1_diff] if f1_diff else None,
        "F1 diff n": len(common),
    }


def beside(name: str, mine: list[dict], rows: list[dict]) -> dict:
    """A variant's paired differences (F1, seconds) with the pipeline it varies, on the questions both ran."""
    if name not in BESIDE:
        return {}
    other = {r["id"]: r for r in rows if r["pipeline"] == BESIDE[name]}
    common = [r for r in mine if r["id"] in other]
    if not common:
        return {}
    f1 = paired_difference([r["f1"] for r in common], [other[r["id"]]["f1"] for r in common])
    seconds = paired_difference([r["s"] for r in common], [other[r["id"]]["s"] for r in common])
    return {"beside": BESIDE[name], "beside n": len(common), "F1 diff beside": [round(v, 3) for v in f1],
            "s diff beside": [round(v, 2) for v in seconds]}


def rates(rows: list[dict]) -> dict[str, float]:
    """Prompt tokens read and tokens generated per second over every row, as llama.cpp timed them: how fast the
    machine ran the model while the slice was measured."""
    timed = [r for r in rows if not r["error"] and "s_prompt" in r]
    return {"prompt tokens read per s": round(sum(r["prompt_tokens_read"] for r in timed)
                                              / sum(r["s_prompt"] for r in timed), 1),
            "generated tokens per s": round(sum(r["completion_tokens"] for r in timed)
                                            / sum(r["s_generate"] for r in timed), 1)}


def summarize(runs_dir: Path, sample: list[dict], pipelines: list[str]) -> dict:
    """The slice's table from the runs folder and the answers benchmark's rows on the same questions."""
    rows = answers_summary.sample_rows(runs_dir, SETTING, sample)
    earlier = [rescored(r) for r in read_jsonl(RESULTS_DIR / "answers_runs" / f"{SETTING}.jsonl")]
    table = []
    for name in pipelines:
        before = {r["id"]: r for r in earlier if r["pipeline"] == name}
        mine = [r for r in rows if r["pipeline"] == name]
        if mine:
            table.append(pipeline_summary(name, mine, before) | beside(name, mine, rows))
    loads = [r["load_1min"] for r in rows if "load_1min" in r]
    setup = {"build": venv_build(), "questions": len(sample), "setting": SETTING, "pipelines": pipelines,
             "retriever k": answers_pipelines.K, "prompt cache": "cleared before every pipeline run",
             "runs dir": str(runs_dir.relative_to(RESULTS_DIR.parent)) if runs_dir.is_relative_to(RESULTS_DIR.parent)
             else str(runs_dir),
             "load_1min over the rows": {"median": float(np.median(loads)), "max": max(loads)} if loads else None,
             "llama.cpp rates over the rows": rates(rows),
             "sessions": answers_summary.sessions_of(runs_dir)}
    return {"setup": setup, "pipelines": table}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks answer_speed", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=50, help="questions: the first n of the answers benchmark's sample")
    parser.add_argument("--pipelines", default=",".join(TARGETS), help=f"comma list of {', '.join(TARGETS)}")
    parser.add_argument("--runs-dir", type=Path, default=RESULTS_DIR / "answer_speed_runs")
    parser.add_argument("--summarize-only", action="store_true", help="rebuild the table from the runs folder")
    args = parser.parse_args(argv)
    pipelines = answers.names(args.pipelines, tuple(TARGETS), "--pipelines")
    data = load_cmrc(cmrc_path())
    sample = answers_sample.sample_questions(data, args.n, seed=0)
    if not args.summarize_only:
        restore = answers.stop_on_sigterm()
        try:
            answers_run.run_cmrc(get_chat_model(), data, sample, [SETTING], pipelines, args.runs_dir)
        finally:
            restore()
    result = summarize(args.runs_dir, sample, pipelines)
    result["setup"]["load_1min at summary"] = round(os.getloadavg()[0], 2)
    print(f"build {result['setup']['build']}, {len(sample)} questions, medians [95 % bootstrap interval]")
    print(format_table([
        {"pipeline": r["pipeline"], "n": r["n"], "s p50": f"{r['s p50']:.1f} [{r['s p50 ci'][0]:.1f}, "
         f"{r['s p50 ci'][1]:.1f}]", "target": f"{r['target s']:.0f}", "verdict": r["target"],
         "tokens given/read/reused": f"{r['prompt tokens given p50']:.0f}/{r['prompt tokens read p50']:.0f}/"
         f"{r['prompt tokens reused p50']:.0f}", "generated": f"{r['generated tokens p50']:.0f}",
         "calls": f"{r['LLM calls mean']:.1f}", "F1": f"{r['F1']:.3f}",
         "F1 vs answers.json": "n/a" if not r["F1 diff vs answers.json"] else
         "{:+.3f} [{:+.3f}, {:+.3f}]".format(*r["F1 diff vs answers.json"]),
         "F1, s vs plain RAG": "" if "beside" not in r else
         "{:+.3f} [{:+.3f}, {:+.3f}], ".format(*r["F1 diff beside"]) + "{:+.1f} [{:+.1f}, {:+.1f}] s".format(
             *r["s diff beside"])} for r in result["pipelines"]]))
    write_results("answer_speed", result)
