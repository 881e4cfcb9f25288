"""The answers benchmark's summary from its rows: means and paired differences with bootstrap intervals, where
the seconds go, and the printed tables."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import MEASURED_ANALYZER
from benchmarks.answers_pipelines import (
    CRAG_MAX_LLM_CALLS,
    INDEX_FREE,
    JUDGE_MAX_DEPTH,
    JUDGE_MAX_LLM_CALLS,
    PIPELINES,
    K,
)
from benchmarks.answers_run import SESSIONS, runs_file
from benchmarks.answers_sample import SETTINGS, home_of
from rag_lib.embeddings import default_min_similarity
from rag_lib.experiments.cmrc import Dataset
from rag_lib.experiments.evaluation import bootstrap_ci, paired_difference, rescored
from rag_lib.experiments.results import format_table, read_jsonl, with_ci
from rag_lib.index import source_name

# paired differences reported (first - second), when both pipelines have rows
PAIRS = (("rag", "llm_only"), ("rag_extractive", "rag"), ("rag_extractive_k2", "rag_extractive"), ("crag", "rag"),
         ("crag_extractive", "rag_extractive"), ("rag_web_extractive", "rag_extractive"),
         ("crag_extractive", "rag_web_extractive"),
         ("crag_extractive", "crag"), ("judge", "rag"), ("judge_extractive", "rag_extractive"),
         ("judge_extractive", "judge"), ("gold", "rag_extractive"), ("gold_generative", "rag"),
         ("gold", "gold_generative"))
# summary label -> row field: a mean with its bootstrap interval
MEANS = {"EM": "em", "F1": "f1", "EM clause": "em_clause", "F1 clause": "f1_clause", "contains gold": "contains",
         "evidence": "evidence", "LLM calls": "llm_calls", "prompt tokens": "prompt_tokens",
         "completion tokens": "completion_tokens", "s": "s"}
DIFFERENCES = ("EM", "F1", "EM clause", "F1 clause", "evidence", "LLM calls", "s")  # the paired differences
BOOTSTRAP = {"confidence": 0.95, "resamples": 2000, "seed": 0}


def interval(values: list[float], statistic: Callable[..., Any] = np.mean) -> tuple[float, list[float]]:
    """(estimate, [low, high]): the statistic over questions and its 95 % bootstrap interval (fixed seed)."""
    estimate, low, high = bootstrap_ci(values, statistic, **BOOTSTRAP)
    return estimate, [low, high]


def describe(rows: list[dict]) -> dict:
    """n, errors, and every mean of MEANS plus the median seconds, each with its bootstrap interval."""
    out: dict[str, Any] = {"n": len(rows), "errors": sum(bool(r["error"]) for r in rows)}
    for label, field in MEANS.items():
        out[label], out[f"{label} ci"] = interval([r[field] for r in rows])
    out["s p50"], out["s p50 ci"] = interval([r["s"] for r in rows], np.median)
    return out


def compare(first: dict[str, dict], second: dict[str, dict]) -> dict:
    """Paired differences first - second (rows by question id) on the questions both have, with intervals."""
    shared = [question for question in first if question in second]
    out: dict[str, Any] = {"n": len(shared)}
    for label in DIFFERENCES:
        field = MEANS[label]
        difference, low, high = paired_difference([first[q][field] for q in shared], [second[q][field] for q in shared],
                                                  **BOOTSTRAP)
        out[f"{label} diff"], out[f"{label} diff ci"] = difference, [low, high]
    return out


def summarize_setting(setting: str, rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(summary, paired) rows of one setting: over all its questions and, when the contexts live in two places
    (split), over each place alone."""
    homes = sorted({row["home"] for row in rows})
    groups = {"all": rows}
    if len(homes) > 1:
        groups |= {home: [r for r in rows if r["home"] == home] for home in homes}
    summary, paired = [], []
    for group, part in groups.items():
        found = {name: {r["id"]: r for r in part if r["pipeline"] == name} for name in PIPELINES}
        summary += [{"setting": setting, "context in": group, "pipeline": name} | describe(list(by_id.values()))
                    for name, by_id in found.items() if by_id]
        paired += [{"setting": setting, "context in": group, "comparison": f"{a} - {b}"} | compare(found[a], found[b])
                   for a, b in PAIRS if set(found[a]) & set(found[b])]
    return summary, paired


def where_seconds_go(rows: list[dict]) -> dict:
    """Where an answer's seconds go, per pipeline, as llama.cpp timed them (rows run on the local model, not copied,
    no error): mean seconds reading the prompt, generating and the rest (retrieval, embedding, graph, parsing), and
    the share of prompt tokens read rather than reused from llama.cpp's prompt cache."""
    timed = [r for r in rows if "s_prompt" in r and not r["error"] and "copied_from" not in r]
    per_pipeline = {}
    for name in dict.fromkeys(r["pipeline"] for r in timed):
        mine = [r for r in timed if r["pipeline"] == name]
        mean = {key: float(np.mean([r[key] for r in mine]))
                for key in ("s", "s_prompt", "s_generate", "prompt_tokens", "prompt_tokens_read")}
        per_pipeline[name] = {
            "runs": len(mine), "s (mean)": mean["s"], "s reading the prompt": mean["s_prompt"],
            "s generating": mean["s_generate"], "s rest": mean["s"] - mean["s_prompt"] - mean["s_generate"],
            "prompt tokens read / counted": mean["prompt_tokens_read"] / max(mean["prompt_tokens"], 1),
        }
    if not timed:
        return {}
    read, generated = sum(r["prompt_tokens_read"] for r in timed), sum(r["completion_tokens"] for r in timed)
    overall = {"runs": len(timed), "prompt tokens read per s": read / sum(r["s_prompt"] for r in timed),
               "generated tokens per s": generated / max(sum(r["s_generate"] for r in timed), 1e-9)}
    return {"overall": overall, "per pipeline": per_pipeline}


def sample_rows(runs_dir: Path, setting: str, sample: list[dict]) -> list[dict]:
    """The setting's rows for the questions of the sample (the first row of each pipeline and question), re-scored."""
    wanted, seen, rows = {q["id"] for q in sample}, set(), []
    for row in read_jsonl(runs_file(runs_dir, setting)):
        if row["id"] in wanted and (row["pipeline"], row["id"]) not in seen:
            seen.add((row["pipeline"], row["id"]))
            rows.append(rescored(row))
    return rows


def sessions_of(runs_dir: Path) -> list[dict]:
    """Every run recorded in the runs folder, its start and end events merged (a killed run has no end)."""
    sessions: dict[str, dict] = {}
    for event in read_jsonl(runs_dir / SESSIONS):
        kind = event.pop("event")
        load = event.pop("load_1min")
        sessions.setdefault(event["session"], {}).update(event | {f"load_1min at {kind}": load})
    return list(sessions.values())


def summarize_cmrc(
    previous: dict, data: Dataset, path: Path, sample: list[dict], settings: list[str], runs_dir: Path, seed: int,
) -> dict:
    """The cmrc part from the runs files: setup, summary and paired rows of `settings`, with the other settings'
    rows kept from `previous` (the cmrc part already in the results file)."""
    keep = previous if "paired" in previous else {}  # an older layout is replaced whole
    setup_before = keep.get("setup", {}).get("settings", {})
    summary = [r for r in keep.get("summary", []) if r["setting"] not in settings]
    paired = [r for r in keep.get("paired", []) if r["setting"] not in settings]
    per_setting, models, every_row = {k: v for k, v in setup_before.items() if k not in settings}, set(), []
    for setting in settings:
        rows = sample_rows(runs_dir, setting, sample)
        every_row += rows
        models |= {row.get("model", "?") for row in rows}
        part, pairs = summarize_setting(setting, rows)
        summary, paired = summary + part, paired + pairs
        homes = home_of(data, setting).values()
        loads = [row["load_1min"] for row in rows if "load_1min" in row]
        per_setting[setting] = {
            "indexed contexts": sum(home == "local" for home in homes),
            "web pages": sum(home == "web" for home in homes),
            "questions with rows": len({row["id"] for row in rows}), "rows": len(rows),
            "runs file": source_name(runs_file(runs_dir, setting)),
            "load_1min over the rows": {"mean": round(float(np.mean(loads)), 2), "max": max(loads)} if loads else None,
        }
    order = {name: i for i, name in enumerate(SETTINGS)}
    summary.sort(key=lambda r: (order[r["setting"]], r["context in"] != "all", r["context in"]))
    paired.sort(key=lambda r: (order[r["setting"]], r["context in"] != "all", r["context in"]))
    sessions = sessions_of(runs_dir)
    setup = {
        "file": path.name, "contexts": len(data.contexts), "questions": len(sample), "seed": seed,
        "sample": "the first n non-empty questions of a shuffle fixed by the seed", "retriever k": K,
        "min_similarity": default_min_similarity(), "retriever": "hybrid RRF, dense + BM25",
        "BM25 analyzer": MEASURED_ANALYZER, "crag max_llm_calls": CRAG_MAX_LLM_CALLS,
        "judge max_llm_calls": JUDGE_MAX_LLM_CALLS, "judge max_depth": JUDGE_MAX_DEPTH,
        "pipelines": list(PIPELINES), "index-free pipelines (copied across settings)": list(INDEX_FREE),
        "bootstrap": BOOTSTRAP | {"method": "percentile, resampling questions"},
        "model": ", ".join(sorted(models)),
        "n_threads": sorted({s["n_threads"] for s in sessions if s.get("n_threads")}),
        "load_1min": {"at start": sessions[0].get("load_1min at start") if sessions else None,
                      "at end": sessions[-1].get("load_1min at end") if sessions else None},
        "sessions": sessions, "settings": per_setting,
    }
    return {"setup": setup, "summary": summary, "paired": paired, "where the seconds go": where_seconds_go(every_row)}


def print_tables(cmrc: dict, settings: list[str]) -> None:
    """Per setting: the pipelines with their intervals, then the paired differences."""
    for setting in settings:
        rows = [r for r in cmrc["summary"] if r["setting"] == setting]
        print(f"\n{setting} setting ({cmrc['setup']['settings'][setting]['questions with rows']} questions; "
              "mean [95 % bootstrap interval])")
        print(format_table([
            {"context in": r["context in"], "pipeline": r["pipeline"], "n": r["n"], "errors": r["errors"],
             "EM": with_ci(r, "EM"), "F1": with_ci(r, "F1"), "EM clause": with_ci(r, "EM clause"),
             "F1 clause": with_ci(r, "F1 clause"), "evidence": with_ci(r, "evidence"),
             "LLM calls": f"{r['LLM calls']:.1f}",
             "tokens in/out": f"{r['prompt tokens']:.0f}/{r['completion tokens']:.0f}",
             "s p50": with_ci(r, "s p50", 1), "s mean": f"{r['s']:.1f}"} for r in rows]))
        pairs = [r for r in cmrc["paired"] if r["setting"] == setting]
        if pairs:
            print(f"\n{setting} setting, paired differences on the questions both finished")
            print(format_table([
                {"context in": r["context in"], "comparison": r["comparison"], "n": r["n"],
                 **{f"{label} diff": with_ci(r, f"{label} diff", 1 if label == "s" else 2) for label in DIFFERENCES}}
                for r in pairs]))


def print_seconds(cmrc: dict) -> None:
    """Per pipeline, the seconds llama.cpp spent reading prompts and generating, and the rest."""
    where = cmrc.get("where the seconds go") or {}
    if not where:
        return
    overall = where["overall"]
    print(f"\nwhere the seconds go (llama.cpp's timings of {overall['runs']} runs): "
          f"{overall['prompt tokens read per s']:.0f} prompt tokens read per s, "
          f"{overall['generated tokens per s']:.1f} generated tokens per s")
    print(format_table([{"pipeline": name} | {k: f"{v:.0f}" if k == "runs" else f"{v:.2f}" for k, v in row.items()}
                        for name, row in where["per pipeline"].items()]))
