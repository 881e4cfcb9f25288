"""Reading the committed benchmark results in bench_results/ for the notebooks: load them, print them as tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rag_lib.store import PROJECT_ROOT

LLM_BASELINE = "dense Retriever alone (no LLM)"  # the row the LLM query transforms of components.json are compared to

RESULTS_DIR = PROJECT_ROOT / "bench_results"


def load_results(name: str) -> dict[str, Any]:
    """Read committed results (for notebooks that plot them)."""
    return json.loads((RESULTS_DIR / f"{name}.json").read_text(encoding="utf-8"))


def format_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of `rows` (keys of the first row are the columns); floats get 3 significant digits."""
    if not rows:
        return "(no rows)"
    columns = list(rows[0])

    def cell(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def with_ci(row: dict, label: str, digits: int = 2) -> str:
    """'0.42 [0.35, 0.49]': a value with its interval, for the printed tables."""
    low, high = row[f"{label} ci"]
    return f"{row[label]:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def read_jsonl(path: Path, repair: bool = False) -> list[dict]:
    """The records of a JSONL file ([] when absent). A last line without its newline was torn by a killed run (or is
    being written now): it is left out, and with `repair` (a run about to append) cut off the file, so it runs again."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    complete, _, torn = text.rpartition("\n")
    if torn and repair:
        print(f"{path}: dropping a torn last line (the run was stopped while writing it); that row runs again")
        with path.open("r+", encoding="utf-8") as file:
            file.truncate(len((complete + "\n").encode("utf-8")) if complete else 0)
    records = []
    for number, line in enumerate(complete.splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}, line {number}: not JSON ({error}); delete the line to rerun it") from None
    return records


def pair_table(results: dict, jobs: list[str]) -> list[dict]:
    """The pairs doing `jobs` in a components result, rounded for reading: LangChain / rag_lib per metric."""
    rows = []
    for pair in (p for p in results["pairs"] if p["job"] in jobs):
        low, high = pair["R@1 diff 95% CI"]
        row = {"job": pair["job"], "LangChain": pair["langchain"], "rag_lib": pair["rag_lib"]}
        row["questions"] = pair["questions"]
        for metric in ("R@1", "R@5", "MRR@5"):
            row[f"{metric} LC / rag_lib"] = f"{pair[f'{metric} langchain']:.3f} / {pair[f'{metric} rag_lib']:.3f}"
        row["R@1 diff [95% CI]"] = f"{pair['R@1 diff']:+.3f} [{low:+.3f}, {high:+.3f}]"
        row["p50 ms LC / rag_lib"] = f"{pair['p50 ms langchain']:,.0f} / {pair['p50 ms rag_lib']:,.0f}"
        rows.append(row)
    return rows


def advanced_table(results: dict) -> list[dict]:
    """The summary of an advanced result, rounded for reading: per set and pipeline, the means, the differences to
    the baseline with their 95% intervals, LLM calls and seconds per question."""
    rows = []
    for row in results["summary"]:
        shown = {"set": f"{row['set']} ({row['questions']})", "pipeline": row["pipeline"],
                 "recall@3": round(row["recall@3"], 3), "MRR@10": round(row["MRR@10"], 3)}
        for metric in ("recall@3", "MRR@10"):
            shown[f"{metric} diff [95% CI]"] = "{:+.3f} [{:+.3f}, {:+.3f}]".format(
                row[f"{metric} diff"], *row[f"{metric} diff 95% CI"])
        rows.append(shown | {"LLM calls": row["LLM calls"], "s/question": round(row["seconds"], 1)})
    return rows


# The questions Corrective RAG was tuned on: its similarity cutoff was calibrated on the sample questions (notebook
# 00) and its grader rule checked on the web questions (notebook 09), so on these it is measured in-sample.
CRAG_TUNED_ON = ("sample_questions.json", "web_questions.json")


def crag_tuned_on() -> set[str]:
    """The questions of CRAG_TUNED_ON's files, the ones Corrective RAG was measured in-sample on."""
    files = (PROJECT_ROOT / "data" / name for name in CRAG_TUNED_ON)
    return {q["question"] for file in files for q in json.loads(file.read_text(encoding="utf-8"))}


def agent_paired(bench: dict[str, Any]) -> dict[str, Any]:
    """Agent minus CRAG, paired per question, from bench_results/agent.json: the gold held on all the questions both
    answers were scored on, on those CRAG was not tuned on (CRAG_TUNED_ON) and on the web ones among them; then the
    seconds, the LLM calls and the first step right (CRAG's is always "search the documents") on every question.
    Returns {"tuned on": kinds of the questions CRAG was tuned on, "all": kinds of all questions, "held out": kinds of
    the scored questions it was not tuned on (in-process), "table": {path: {row: "diff [low, high]"}}}, a 95% paired
    bootstrap each; a negative difference means the agent scored lower."""
    from collections import Counter

    from rag_lib.experiments.evaluation import paired_difference

    seen = crag_tuned_on()
    kinds = {q["question"]: q["kind"]
             for q in json.loads((PROJECT_ROOT / "data" / "agent_questions.json").read_text(encoding="utf-8"))}
    paired: dict[str, Any] = {"tuned on": dict(Counter(k for q, k in kinds.items() if q in seen)),
                              "all": dict(Counter(kinds.values())), "held out": {}, "table": {}}
    for label in ("local", "qwen-local"):
        if label not in bench:
            continue
        rows = bench[label]["compare"]["rows"]
        per = {field: {p: {r["question"]: r[field] for r in rows if r["pipeline"] == p} for p in ("agent", "crag")}
               for field in ("correct", "s", "llm_calls", "first_step_right")}

        def agent_minus_crag(field: str, group: list[str], digits: int = 3) -> str:
            diff, low, high = paired_difference([per[field]["agent"][q] for q in group],
                                                [per[field]["crag"][q] for q in group])
            return f"{diff:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"

        correct, questions = per["correct"], list(per["s"]["crag"])
        scored = [q for q, ok in correct["crag"].items() if ok is not None and correct["agent"][q] is not None]
        unseen = [q for q in scored if q not in seen]
        web_unseen = [q for q in unseen if kinds[q] == "web"]
        if label == "local" or not paired["held out"]:
            paired["held out"] = dict(Counter(kinds[q] for q in unseen))
        paired["table"][label] = {
            f"agent minus CRAG, gold held: all {len(scored)} paired": agent_minus_crag("correct", scored),
            f"... the {len(unseen)} CRAG was not tuned on": agent_minus_crag("correct", unseen),
            f"... the {len(web_unseen)} web ones among them": agent_minus_crag("correct", web_unseen),
            f"agent minus CRAG, seconds: {len(questions)} paired": agent_minus_crag("s", questions, digits=1),
            f"agent minus CRAG, LLM calls: {len(questions)} paired": agent_minus_crag("llm_calls", questions),
            f"agent minus always-docs, first step right: {len(questions)} paired": agent_minus_crag(
                "first_step_right", questions),
        }
    return paired


def agent_tables(label: str, parts: dict[str, Any]) -> str:
    """The first-step table and the agent-vs-CRAG table of one model's results."""
    choices = [
        {"model": label, "decoding": name.removeprefix("choice_"), "first step right": s["all"]["rate"],
         "95% CI": s["all"]["ci95"], "docs": s["docs"]["rate"], "web": s["web"]["rate"], "direct": s["direct"]["rate"]}
        for name in ("choice_constrained", "choice_native") if name in parts
        for s in [parts[name]["summary"]]
    ]
    compared = [
        {"model": label, "pipeline": pipeline, "correct": s["correct"]["all"]["rate"],
         "95% CI": s["correct"]["all"]["ci95"], "first step right": s["first_step_right"]["all"]["rate"],
         "first step 95% CI": s["first_step_right"]["all"]["ci95"],
         "expected trajectory": s["expected_trajectory"]["all"]["rate"],
         "LLM calls": s["mean_llm_calls"], "tool calls": s["mean_tool_calls"], "median s": s["median_s"]}
        for pipeline, s in parts.get("compare", {}).get("summary", {}).items()
    ]
    return "\n\n".join(format_table(rows) for rows in (choices, compared) if rows)


