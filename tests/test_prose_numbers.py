"""Numbers quoted in the notebooks' prose (and in docs/benchmarks.md's answer section) agree with the data they quote.

Each claim names a notebook, a regular expression whose first group captures a number in that notebook's markdown,
and where the true value lives: a committed JSON file in bench_results/ (`bench`), the notebook's own committed outputs
(`output`, `outputs`), its code (`code`, for constants the prose repeats) or its execution times (`cell_seconds`). A
number written with d decimals must be the true value rounded to d decimals (a tolerance of half a unit of its last
digit), unless the claim gives its own: `tol` (absolute) or `rel` (relative, for "about" numbers such as run times).
Every match of a pattern is checked, and a pattern that no longer matches fails too (the prose changed: update the
claim). Reads JSON only: no kernel, no model, no database.

To cover another notebook, append claims to CLAIMS with the same helpers.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from functools import cache, partial
from pathlib import Path
from typing import Any, Callable

import pytest

from rag_lib.embeddings import E5_MIN_SIMILARITY
from rag_lib.graphs.crag import E5_CONFIDENT_SIMILARITY
from rag_lib.text import has_cjk

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
BENCH = ROOT / "bench_results"


# ------------------------------------------------------------------------------------------ reading the sources


@dataclass(frozen=True)
class Value:
    """A true value and where it comes from (named in failure messages)."""

    where: str
    get: Callable[[], float]


@cache
def notebook(name: str) -> dict:
    """The committed notebook `name` (file stem), parsed."""
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))


def markdown(nb: dict) -> str:
    """All markdown cells of a parsed notebook, in order."""
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


BENCHMARKS = "docs/benchmarks.md"  # a claim's "notebook" that names the benchmarks page instead


SOLUTIONS = " solutions"  # a claim's "notebook" ending in this reads that notebook's solution cells


def solutions(name: str) -> str:
    """The claim name for the answers written as comments in notebook `name`'s solution cells."""
    return name + SOLUTIONS


def prose(name: str) -> str:
    """The prose a claim reads: a notebook's markdown cells, its solution cells' source, or the benchmarks page."""
    if name == BENCHMARKS:
        return (ROOT / BENCHMARKS).read_text(encoding="utf-8")
    if name.endswith(SOLUTIONS):
        cells = notebook(name.removesuffix(SOLUTIONS))["cells"]
        return "\n\n".join("".join(c["source"]) for c in cells if "solution" in c["metadata"].get("tags", []))
    return markdown(notebook(name))


@cache
def results(name: str) -> dict:
    """bench_results/<name>.json, parsed."""
    return json.loads((BENCH / f"{name}.json").read_text(encoding="utf-8"))


def walk(data: Any, path: tuple) -> Any:
    """Follow keys and indexes; a dict step picks the one list element whose fields equal it."""
    for step in path:
        if isinstance(step, dict):
            found = [row for row in data if all(row.get(k) == v for k, v in step.items())]
            if len(found) != 1:
                raise LookupError(f"{len(found)} rows match {step}: make the selector unique")
            data = found[0]
        else:
            data = data[step]
    return data


def bench(name: str, *path: Any, scale: float = 1.0) -> Value:
    """A number in bench_results/<name>.json at `path` (times `scale`)."""
    return Value(f"bench_results/{name}.json {list(path)}", lambda: scale * float(walk(results(name), path)))


def derived(where: str, fn: Callable[[], float]) -> Value:
    """A value computed from the sources (a ratio, a sum, a minimum...)."""
    return Value(where, fn)


CONFIDENT = derived("rag_lib.graphs.crag.E5_CONFIDENT_SIMILARITY", lambda: E5_CONFIDENT_SIMILARITY)
CUTOFF_12 = derived("rag_lib.embeddings.E5_MIN_SIMILARITY", lambda: E5_MIN_SIMILARITY)  # the web fallback's cutoff


def agent_first_steps(kind: str, first: str = "") -> Value:
    """How many of the in-process agent's questions of `kind` began with `first` (a tool, or "answer"; "": all)."""
    def count() -> float:
        rows = [r for r in results("agent")["local"]["compare"]["rows"]
                if r["pipeline"] == "agent" and r["kind"] == kind]
        return float(sum(not first or (r["tools"] or ["answer"])[0] == first for r in rows))

    return derived(f"bench_results/agent.json, agent's first step on {kind} questions", count)


def agent_scored(pipeline: str, kind: str, first: str = "", held: bool = False) -> Value:
    """How many in-process questions of `kind` with a gold answer `pipeline` began with `first` ("": any first step),
    as notebook 10's per-kind table counts them; `held`: only those whose answer held the gold."""
    def count() -> float:
        rows = [r for r in results("agent")["local"]["compare"]["rows"]
                if r["pipeline"] == pipeline and r["kind"] == kind and r["correct"] is not None]
        return float(sum((not first or (r["tools"] or ["answer"])[0] == first) and (not held or r["correct"])
                         for r in rows))

    return derived(f"bench_results/agent.json, {pipeline} on {kind} questions, first step {first or 'any'}", count)


def native_choice(kinds: tuple[str, ...], called: bool) -> Value:
    """Of the server's native tool-choice rows of `kinds`: how many chose a tool (`called`), or all of them."""
    def count() -> float:
        rows = [r for r in results("agent")["qwen-local"]["choice_native"]["rows"] if r["kind"] in kinds]
        return float(sum(not called or r["chosen"] != "answer" for r in rows))

    return derived(f"bench_results/agent.json qwen-local choice_native rows of {kinds}", count)


def output_text(name: str, cell: int) -> str:
    """The committed outputs of one cell: streams and plain-text results, joined."""
    parts = []
    for out in notebook(name)["cells"][cell].get("outputs", []):
        if out["output_type"] == "stream":
            parts.append("".join(out["text"]))
        elif "data" in out:
            parts.append("".join(out["data"].get("text/plain", "")))
    return "\n".join(parts)


def first_number(text: str, pattern: str, where: str) -> float:
    match = re.search(pattern, text)
    if not match:
        raise LookupError(f"{pattern!r} not found in {where}: the output changed, update the claim")
    return float(match.group(1).replace(",", ""))


def output(name: str, cell: int, pattern: str) -> Value:
    """The first group of `pattern` in the committed outputs of cell `cell`."""
    where = f"{name} cell {cell} output"
    return Value(where, lambda: first_number(output_text(name, cell), pattern, where))


def outputs(name: str, pattern: str, reduce: Callable[[list[float]], float]) -> Value:
    """`reduce` (min, max, sum, len...) of every match of `pattern` in all committed outputs of the notebook."""

    def get() -> float:
        text = "\n".join(output_text(name, i) for i in range(len(notebook(name)["cells"])))
        return float(reduce([float(m.group(1)) for m in re.finditer(pattern, text)]))

    return Value(f"{name} outputs, {reduce.__name__} of {pattern!r}", get)


def code(name: str, cell: int, pattern: str) -> Value:
    """A constant in the source of code cell `cell` (numbers the prose repeats from the code)."""
    where = f"{name} cell {cell} source"
    return Value(where, lambda: first_number("".join(notebook(name)["cells"][cell]["source"]), pattern, where))


def cell_seconds(name: str) -> Value:
    """Seconds the committed run spent executing the notebook's cells (from each cell's execution metadata)."""

    def get() -> float:
        total = 0.0
        for cell in notebook(name)["cells"]:
            run = cell.get("metadata", {}).get("execution")
            if run:
                start = run.get("iopub.execute_input") or run["shell.execute_reply.started"]
                end = run["shell.execute_reply"]
                total += (datetime.fromisoformat(end.replace("Z", "+00:00"))
                          - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
        return total

    return Value(f"{name} cell execution times", get)


def minutes(name: str) -> Value:
    """`cell_seconds` in minutes."""
    return derived(f"{name} cell execution times / 60", lambda: cell_seconds(name).get() / 60)


def cmrc_empty_questions() -> int:
    """Questions with no text in the CMRC 2018 trial file the retrieval benchmark reads (SQuAD format)."""
    data = json.loads((ROOT / "data" / "cmrc2018" / "cmrc2018_trial.json").read_text(encoding="utf-8"))
    return sum(not qa["question"].strip() for doc in data["data"] for p in doc["paragraphs"] for qa in p["qas"])


# ------------------------------------------------------------------------------------------ claims


@dataclass(frozen=True)
class Claim:
    """A number in a notebook's prose and the source it must agree with."""

    notebook: str
    pattern: str  # group 1 captures the number in the prose
    truth: Value
    tol: float | None = None  # absolute; default: half a unit of the number's last written digit
    rel: float | None = None  # relative to the true value, for "about" numbers

    def __str__(self) -> str:
        return f"{self.notebook}: {self.pattern}"


def parse(written: str) -> tuple[float, float]:
    """(value, half a unit of its last digit) of a number as written in prose: '1,002', '.976', '24.0'."""
    plain = written.replace(",", "").rstrip(".")  # a full stop after the number is not a decimal point
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    return float(plain), 0.5 * 10**-decimals


def check(claim: Claim, prose: str) -> list[str]:
    """What is wrong with `claim` in `prose` (empty when every match agrees with the data)."""
    matches = list(re.finditer(claim.pattern, prose))
    if not matches:
        return [f"{claim}: pattern not found in the prose; if the text changed, update the claim"]
    truth = claim.truth.get()
    problems = []
    for match in matches:
        said, half_unit = parse(match.group(1))
        tol = claim.tol if claim.tol is not None else claim.rel * abs(truth) if claim.rel is not None else half_unit
        if abs(said - truth) > tol + 1e-9:
            problems.append(f"{claim.notebook}: the prose says {match.group(1)} in {match.group(0)!r}, but "
                            f"{claim.truth.where} gives {truth:.4g} (tolerance {tol:g})")
    return problems


# Sources used by several claims.
def pipeline(name: str, metric: str, scale: float = 1.0) -> Value:
    """One pipeline's metric in bench_results/retrieval.json."""
    return bench("retrieval", "pipelines", {"pipeline": name}, metric, scale=scale)


def lite_scale(chunks: int, name: str, metric: str, scale: float = 1.0) -> Value:
    """One route at one corpus size in the scale part of bench_results/lite.json."""
    return bench("lite", "scale", {"chunks": chunks}, "pipelines", {"pipeline": name}, metric, scale=scale)


def setting(file: str, index: str, metric: str, **match: Any) -> Value:
    """One ANN setting's metric in bench_results/<file>.json (random vectors, or the CMRC run with cmrc=True)."""
    section = "cmrc" if file == "index" and match.pop("cmrc", False) else "synthetic"
    return bench(file, section, "settings", {"index": index, **match}, metric)


def answers_row(setting_name: str, pipeline_name: str, metric: str, *index: int, home: str = "all") -> Value:
    """One pipeline's number in the answer benchmark's summary (a setting; "context in": all, local or web)."""
    return bench("answers", "cmrc", "summary",
                 {"setting": setting_name, "context in": home, "pipeline": pipeline_name}, metric, *index)


def multihop_pair(pipeline: str, metric: str, *index: int) -> Value:
    """`pipeline` minus plain RAG on all questions of bench_results/multihop_held_out.json (an index picks an
    interval end)."""
    return bench("multihop_held_out", "paired", {"questions": "all", "comparison": f"{pipeline} - rag_extractive"},
                 metric, *index)


def multihop_row(pipeline: str, *path: str) -> Value:
    """One pipeline's summary value on all held-out two-hop questions (bench_results/multihop_held_out.json)."""
    return bench("multihop_held_out", "summary", {"questions": "all", "pipeline": pipeline}, *path)


def answers_pair(setting_name: str, comparison: str, metric: str, *index: int, home: str = "all") -> Value:
    """One paired difference in the answer benchmark (an index picks an interval end)."""
    return bench("answers", "cmrc", "paired",
                 {"setting": setting_name, "context in": home, "comparison": comparison}, metric, *index)


def bench_rows(file: str, *path: Any) -> list[dict]:
    """The raw rows at `path` in bench_results/<file>.json."""
    return walk(results(file), path)


BM25, DENSE, RRF, WEIGHTED = ("Milvus BM25 (jieba + stop filter)", "Milvus dense HNSW", "hybrid RRF(60)",
                              "hybrid weighted 0.6 dense / 0.4 BM25, min-max")
BM25_JIEBA = "Milvus BM25 (jieba alone)"  # the course analyzer without its stop filter
PEER_BM25, PEER_DENSE = "peer: rank_bm25 (jieba), numpy", "peer: dense e5, numpy brute force"
CUTOFF, RERANK = "hybrid weighted + similarity cutoff", "hybrid RRF + e5 rerank (two-stage)"
PARENT = "parent-child: 120-char children -> context"
FUSED = "per-context fusion: children + chunks + contexts + titles"
FUSED_COMPLETE = "per-context fusion, every candidate scored by every search"
HYBRIDS = (RRF, WEIGHTED, CUTOFF)  # the hybrids without rerank
SINGLES = (PEER_BM25, PEER_DENSE, BM25, DENSE, RERANK)


def over(names: tuple[str, ...], metric: str, reduce: Callable, scale: float = 1.0) -> Value:
    """`reduce` (min, max) of one retrieval metric over several pipelines."""
    return derived(f"bench_results/retrieval.json, {reduce.__name__} of {metric} over {names}",
                   lambda: scale * reduce(pipeline(n, metric).get() for n in names))


def lift(reduce: Callable) -> Value:
    """Recall@1 points the two hybrids gain over Milvus's BM25 or dense search alone."""
    return derived("bench_results/retrieval.json, R@1 of hybrids minus single retrievers",
                   lambda: 100 * reduce(pipeline(h, "R@1").get() - pipeline(s, "R@1").get()
                                        for h in (RRF, WEIGHTED) for s in (BM25, DENSE)))


def batch_ratios(column: str, reduce: Callable) -> Value:
    """Per-query cost at 1 query per call over the cost at 100 per call, per index (bench_results/index.json)."""

    def get() -> float:
        rows = bench_rows("index", "synthetic", "batch_study")
        cost = {(r["index"], r["batch"]): r[column] for r in rows}
        return reduce(cost[i, 1] / cost[i, 100] for i in {r["index"] for r in rows})

    return derived(f"bench_results/index.json batch_study, {reduce.__name__} of {column} 1/100", get)


def crossing_cost(metric: str, size: int | None, side: str = "", engine: str = "Milvus Lite") -> Value:
    """bench_results/crossing.json: FLAT's or the cheapest good HNSW's `metric` at `size` vectors, or (size None)
    the size from which HNSW is the cheaper one."""
    path = ("by size", str(size), side) if size is not None else ("HNSW cheaper from",)
    return bench("crossing", "crossings", {"engine": engine, "metric": metric}, *path)


def crossing_table_ratio(metric: str, size: int) -> Value:
    """Notebook 03's crossing table: Milvus Lite's FLAT / HNSW `metric` at `size` vectors, HNSW being the setting
    with the lowest CPU per query that reaches the recall floor (bench_results/crossing.json rows)."""

    def get() -> float:
        rows = [r for r in bench_rows("crossing", "rows") if r["engine"] == "Milvus Lite" and r["vectors"] == size]
        flat = next(r for r in rows if r["index"] == "FLAT")
        good = [r for r in rows if r["index"] == "HNSW" and r["recall@10"] >= results("crossing")["floor"]]
        return flat[metric] / min(good, key=lambda r: r["cpu_ms_per_query"])[metric]

    return derived(f"bench_results/crossing.json, Milvus Lite FLAT / HNSW {metric} at {size:,} vectors", get)


def lite_hnsw_cpu_200k(ef: int) -> Value:
    """bench_results/crossing.json: Milvus Lite's HNSW CPU ms per query at 200,000 vectors with this `ef`."""
    return bench("crossing", "rows", {"engine": "Milvus Lite", "vectors": 200_000, "index": "HNSW", "ef": ef},
                 "cpu_ms_per_query")


def hnsw_cpu(reduce: Callable, metric: str = "cpu_ms_per_query") -> Value:
    """`metric` (CPU ms per query, or recall@10) of HNSW (M = 8 to 32) at ef 320 and 640 on the 20,000 random vectors,
    reduced by `reduce`."""

    def get() -> float:
        rows = bench_rows("index", "synthetic", "settings")
        return reduce(r[metric] for r in rows
                      if r["index"] == "HNSW" and r["M"] in (8, 16, 32) and r["ef"] in (320, 640))

    return derived(f"bench_results/index.json, HNSW M=8-32 at ef 320-640, {reduce.__name__} {metric}", get)


def one_per_call(reduce: Callable) -> Value:
    """p50 wall-clock ms of a query sent alone (batch 1), over the indexes of the batch study."""
    return derived(f"bench_results/index.json batch_study, {reduce.__name__} p50 at 1 query per call",
                   lambda: reduce(r["p50_ms_per_query"] for r in bench_rows("index", "synthetic", "batch_study")
                                  if r["batch"] == 1))


CRAG_PAIR, JUDGE_PAIR = "crag_extractive - rag_extractive", "judge_extractive - rag_extractive"
WEB_PAIR, GRADED_PAIR = "rag_web_extractive - rag_extractive", "crag_extractive - rag_web_extractive"
ANSWER_UNIT = 31  # notebook 12's cell that prints the CMRC answer lengths
DEFAULT_HNSW = "HNSW default (flat params dropped)"  # the Lite default build (M=16, efConstruction=200)
M16 = {"M": 16, "efConstruction": 64}


CMRC_M16_EF40 = setting("index", "HNSW", "recall@10", cmrc=True, M=16, ef=40)
N00, N01, N03, N06, N07, N12, N13 = ("00_quickstart", "01_milvus_setup", "03_hnsw_index_params",
                                     "06_streaming_modes", "07_subgraphs_and_send", "12_evaluation",
                                     "13_app_router_ui")
JOINED = "joined to the first question"  # notebook 08's third way to search a follow-up


def joined_minus_written_08(index: int) -> Value:
    """(difference, low, high)[index] of the paired bootstrap, joined minus as written, over the follow-ups' "kept
    above the cutoff" in bench_results/chat.json (notebook 08 cell 41 re-searches them and prints the same pair)."""

    def get() -> float:
        from rag_lib.experiments.evaluation import paired_difference

        kept = [saved["kept above the cutoff"] for saved in results("chat")["conversations"]]
        return paired_difference([float(k[JOINED]) for k in kept], [float(k["as written"]) for k in kept])[index]

    return Value(f"bench_results/chat.json, paired bootstrap of {JOINED} minus as written, item {index}", get)
N07B = "07b_checkpoints_time_travel"
N08, N09, N10, N11 = "08_memory_context_hitl", "09_crag_web_search", "10_agentic_rag", "11_rag_with_judge"
HUNDRED_K = "index_100k"
# Single-query wall clock of the HNSW setting the crossing table picks at 100,000 vectors (cheapest CPU, ef = 128).
LITE_HNSW_SINGLE_100K = bench("crossing", "rows", {"engine": "Milvus Lite", "vectors": 100_000, "index": "HNSW",
                                                  "ef": 128}, "p50_single_ms")
SIMS_00 = 25  # notebook 00: the sample questions' similarities and the cutoff
HELD_OUT_00 = 27  # notebook 00: the held-out error table, one row per cutoff
LANG_00 = 28  # notebook 00: false answers by the question's language
TOKENS_00 = 32  # notebook 00: prompt tokens of the quickstart questions
PER_LANG_00 = 39  # notebook 00: exercise 1, a cutoff per language against the shared one
OFF_TOPIC_00 = output(N00, SIMS_00, r"off-topic:\s+(\d+)")
QUESTIONS_00 = derived(f"{N00} cell {SIMS_00} output, answerable + off-topic",
                       lambda: output(N00, SIMS_00, r"answerable: (\d+)").get() + OFF_TOPIC_00.get())
CUTOFF_00 = output(N00, SIMS_00, r"these embeddings: ([\d.]+)")


def held_out_00(cutoff: str, column: int) -> Value:
    """Number `column` (0-4: false refusals, answerable questions, rate %, CI low %, CI high %; 5-9: the same for false
    answers over unanswerable questions) of the row for `cutoff` in notebook 00's held-out error table."""
    where = f"{N00} cell {HELD_OUT_00} output, row {cutoff}, number {column}"

    def get() -> float:
        row = re.search(rf"(?m)^{re.escape(cutoff)}\s+(.*)$", output_text(N00, HELD_OUT_00))
        if not row:
            raise LookupError(f"no row {cutoff} in {where}: the output changed, update the claim")
        return float(re.findall(r"\d+", row.group(1))[column])

    return derived(where, get)


DRIFT_12 = 27  # notebook 12: the web fallback's rows against plain RAG's where it never searched the web
SLICE_SETUP = 16  # notebook 12: the slice's index and questions
SLICE_TABLE = 18  # notebook 12: the slice's quality table
PAIRED_10 = 29  # notebook 10: agent minus CRAG, paired, in-process (local)


def first_step_paired_10(i: int) -> Value:
    """Notebook 10: agent minus "always search the documents" (CRAG's fixed first step), first step right, paired over
    the in-process run's questions: (difference, low, high)[i], as agent_paired computes it for cell PAIRED_10."""

    def get() -> float:
        from rag_lib.experiments.evaluation import paired_difference

        rows = results("agent")["local"]["compare"]["rows"]
        first = {p: {r["question"]: float(r["first_step_right"]) for r in rows if r["pipeline"] == p}
                 for p in ("agent", "crag")}
        questions = list(first["crag"])
        return paired_difference([first["agent"][q] for q in questions], [first["crag"][q] for q in questions])[i]

    return derived("bench_results/agent.json local rows, first step right, agent minus crag, paired bootstrap", get)
MEASURED_11 = 34  # notebook 11: the judged chunks against their hand-read scores
HELD_OUT_ROWS_11 = 42  # notebook 11: the held-out rows per question (right, follow-ups, F1 differences)
MH93_PLAIN_11 = r"(?m)^mh-93:[^\n]*\n[^\n]*\n\s+plain F1 ([\d.]+)"  # plain RAG's F1 on mh-93, in that cell's output


def f1_pairs_11() -> list[tuple[float, float]]:
    """(judge F1, plain RAG F1) per question printed by notebook 11's held-out rows cell, in order."""
    return [(float(j), float(r)) for j, r in re.findall(r"judge F1 ([\d.]+):[^\n]*\n\s+plain F1 ([\d.]+):",
                                                          output_text(N11, HELD_OUT_ROWS_11))]

# Notebook 01, cell 5: how many document openings were embedded (printed as "N openings;", formerly "N sentences;").
OPENINGS_01 = r"(\d+) (?:openings|sentences);"
# Notebook 01, section 7: the hard set's summary line, up to its count of cross-lingual questions (the output from
# before the answer's-language filter ends the line with "changed)", the current one with "(N cross-lingual)").
HARD_01 = r"14 questions, \d+ changed(?:\)\s+|[^\n]*\()"
CHANGED_01 = r"hard: 14 questions, \d+ changed by lang == question's, (\d+) by lang == answer's"


def moved_right_01(right: bool) -> Value:
    """Hard questions whose top hit the answer-language filter changed, to their document (True) or not (False)."""

    def get() -> float:
        text = output_text(N01, 36).split("with it):")[1]
        rows = [line.split() for line in text.splitlines() if "->" in line]
        return float(sum((row[0] == row[-1]) == right for row in rows))

    return Value(f"{N01} cell 36 output, changed top hits {'to' if right else 'not to'} the answer", get)


N02, N04, N05 = "02_hybrid_indexing", "04_retriever_design", "05_advanced_retrieval"


def same_language_rank_05(reduce: Callable[[list[float]], float]) -> Value:
    """`reduce` of the baseline ranks of notebook 05's hard questions asked in their document's language (cell 9)."""

    def get() -> float:
        ranks = re.findall(r"(?:en -> en|zh -> zh)\s+\S+\s+(\d+)\s", output_text(N05, 9))
        return float(reduce([float(r) for r in ranks]))

    return Value(f"{N05} cell 9 output, {reduce.__name__} rank of the same-language hard questions", get)


def fusion_value(pipeline: str, field: str, index: int | None = None) -> float:
    """One field of one row of bench_results/fusion.json."""
    value = walk(results("fusion"), ("pipelines", {"pipeline": pipeline}, field))
    return float(value if index is None else value[index])


def fusion_row(pipeline: str, field: str, index: int | None = None, scale: float = 1.0) -> Value:
    """A fusion-benchmark number (bench_results/fusion.json, the row named `pipeline`)."""
    path = [pipeline, field] + ([] if index is None else [index])
    return Value(f"bench_results/fusion.json {path}", lambda: scale * fusion_value(pipeline, field, index))
LC_SPLITTER, OUR_SPLITTER = ("RecursiveCharacterTextSplitter(300, 50), default separators",
                             "rag_lib.chunking.recursive_split(300, 50)")


def component(langchain: str, *metric: Any, scale: float = 1.0) -> Value:
    """One LangChain-vs-rag_lib pair's metric in bench_results/components.json (pairs are named by LangChain's side);
    `metric` is a key, then an index for the confidence interval's bounds."""
    return bench("components", "pairs", {"langchain": langchain}, *metric, scale=scale)


def components_pipeline(name: str, metric: str) -> Value:
    """One pipeline's metric in bench_results/components.json."""
    return bench("components", "pipelines", {"pipeline": name}, metric)


def splitter_row(name: str, metric: str, scale: float = 1.0) -> Value:
    """One splitter's row in bench_results/components.json."""
    return bench("components", "splitters", {"splitter": name}, metric, scale=scale)


def mid_sentence(name: str) -> Value:
    """Percent of one splitter's chunks that end mid-sentence: 100 minus its "end at a sentence end" share."""
    ends = splitter_row(name, "end at a sentence end", scale=100)
    return derived(f"100 - {ends.where}", lambda: 100 - ends.get())


def rows_of(name: str, cell: int, pattern: str) -> list[tuple[str, ...]]:
    """The groups of every line of a cell's committed output that matches `pattern` (the rows of a printed table)."""
    return [m if isinstance(m, tuple) else (m,) for m in re.findall(pattern, output_text(name, cell), flags=re.M)]


# Notebook 04, section 2: cell 23 counts the hand-made queries' ranks per strategy and kind of query.
SUMMARY_04 = r"(\d+) first, (\d+) in top 3 \(of (\d+)\)"
RAW_TOP_04 = output(N04, 16, r"weighted 0\.9/0\.1, raw\s+\S+ #\d+ \(([\d.]+)\)")


def ranked_04(rank: int, bm25: bool = False) -> Value:
    """One score of notebook 04's cell 9 printout: the hit at `rank`, BM25's (two or more integer digits) or dense's."""
    number = r"\d{2,}\.\d+" if bm25 else r"0\.\d+"
    return output(N04, 10, rf"(?m)^{rank}\s+\S+ #\d+ \(({number})\)\s*$")


def summary_04(strategy: str, kind: str, what: str) -> Value:
    """One count of notebook 04's summary table: `what` is "first", "top 3" or "of" (queries of that kind)."""
    column = ("keyword", "paraphrase").index(kind) * 3 + ("first", "top 3", "of").index(what) + 1
    pattern = rf"(?m)^{re.escape(strategy)}\s+{SUMMARY_04}\s+{SUMMARY_04}\s*$"

    def get() -> float:
        match = re.search(pattern, output_text(N04, 24))
        if not match:
            raise LookupError(f"no row {strategy!r} in {N04} cell 24 output: the output changed, update the claim")
        return float(match.group(column))

    return derived(f"{N04} cell 24 output, {strategy} {kind} {what}", get)


def fusion_diff_04(pipeline: str) -> Callable[..., Value]:
    """For interval_claims: a fusion.json row's R@1 difference to hybrid RRF k=60, or an end of its 95% interval."""
    return lambda key, *end: fusion_row(pipeline, "95% CI" if end else key, *end)


# Notebook 05, section 1: the hand-written questions and the baseline rank of their file.
HARD_05 = r"^\d+\s+.*\s(?:en|zh) -> (?:en|zh)\s+\S+\s+(\d+|-)\s+\S+\s*$"
HARD_COUNT_05 = derived(f"{N05} cell 9 output, rows of the hard-question table", lambda: len(rows_of(N05, 9, HARD_05)))
K_05 = code(N05, 6, r"K = (\d+)")
SAMPLE_05 = output(N05, 9, r"\{1: (\d+)\}")
MISSED_05 = derived(f"{N05} cell 9 output, hard questions ranked '-'",
                    lambda: sum(r == ("-",) for r in rows_of(N05, 9, HARD_05)))


def crosslingual_05(same_language: bool) -> Value:
    """How many of the 37 questions (translated sample + hard) of data/crosslingual_questions.json are asked in their
    document's language (`same_language`) or in the other one; a document is Chinese when its name has `_zh`."""
    def get() -> float:
        rows = json.loads((ROOT / "data" / "crosslingual_questions.json").read_text(encoding="utf-8"))
        asked_zh = [(re.search(r"[\u4e00-\u9fff]", r["question"]) is not None, "_zh" in r["source"])
                    for r in rows if r["set"] in ("translated sample", "hard")]
        return sum((question == document) == same_language for question, document in asked_zh)

    return derived("data/crosslingual_questions.json, questions " + ("in" if same_language else "not in")
                   + " their document's language", get)


def source_constant(path: str, pattern: str) -> Value:
    """A constant in a file of the repository (`pattern`'s group 1), for numbers the prose repeats from rag_lib."""
    return Value(path, lambda: first_number((ROOT / path).read_text(encoding="utf-8"), pattern, path))


# Notebook 05, section 6: bench_results/advanced.json (python -m benchmarks advanced), per pipeline and question
# set.
CROSS_05, TRANSLATED_05, HARD_SET_05, WRITTEN_05 = "translated + hard", "translated sample", "hard", "sample as written"
BASE_05, TRANSLATION_05, UNION_05 = "baseline: hybrid RRF", "translation", "question + translation (union)"
RRF_05, MULTI_QUERY_05 = "question + translation (RRF)", "multi-query (question, translation, 2 wordings)"
HYDE_Q_05, HYDE_O_05 = "HyDE (passage in the question's language)", "HyDE (passage in the other language)"
AGAINST_UNION_05 = 32  # notebook 05: each pipeline minus the union, paired (section 6)
HYDE_CELL_05 = 26  # notebook 05: HyDE on one hard question (section 5)
PATHS_05 = 37  # notebook 05: exercise 1, the hard questions' ranks per search path
CROSS_ROW_05 = r"^(\d+)\s.*\s(en -> zh|zh -> en)\s+(\S+)\s+(\S+)\s+(\S+)\s*$"  # row, languages, hybrid, dense, BM25


def advanced_05(pipeline: str, set_name: str, *metric: Any, scale: float = 1.0) -> Value:
    """One pipeline's metric on one question set in bench_results/advanced.json (`metric`: a key, then 0 or 1 for
    an interval's bounds)."""
    return bench("advanced", "summary", {"pipeline": pipeline, "set": set_name}, *metric, scale=scale)


def set_size_05(set_name: str) -> Value:
    """Questions in one set of bench_results/advanced.json."""
    return advanced_05(BASE_05, set_name, "questions")


def half_width_05(pipeline: str, set_name: str) -> Value:
    """Half the width of a pipeline's 95% interval on the recall@3 difference to the baseline."""
    bounds = [advanced_05(pipeline, set_name, "recall@3 diff 95% CI", i) for i in (0, 1)]
    return derived(f"bench_results/advanced.json {pipeline} / {set_name}: (high - low) / 2",
                   lambda: (bounds[1].get() - bounds[0].get()) / 2)


MULTI_QUERY_COST_05 = derived(
    "bench_results/advanced.json: multi-query seconds / union seconds (37 questions)",
    lambda: advanced_05(MULTI_QUERY_05, CROSS_05, "seconds").get() / advanced_05(UNION_05, CROSS_05, "seconds").get())


def against_union_05(pipeline: str) -> Callable[..., Value]:
    """Notebook 05 cell AGAINST_UNION_05's table: `pipeline`'s recall@3 difference to "question + translation (union)",
    as `interval_claims` asks for it (a key, then 0 or 1 for the interval's ends)."""
    number = r"[+-][\d.]+"

    def value(_key: str, *end: int) -> Value:
        parts = [number, number, number]
        parts[0 if not end else end[0] + 1] = f"({number})"
        return output(N05, AGAINST_UNION_05, re.escape(pipeline) + r"\s+{} \[{}, {}\]".format(*parts))

    return value


def paired_union_05(pipeline: str, metric: str = "recall@3") -> Callable[..., Value]:
    """`against_union_05` computed from bench_results/advanced.json's per-question rows instead of the cell's output:
    `pipeline` minus the union in `metric` on the translated sample and hard questions, paired, as the cell does."""
    def value(_key: str, *end: int) -> Value:
        def get() -> float:
            from rag_lib.experiments.evaluation import paired_difference

            cross = [row for row in results("advanced")["questions"] if row["set"] != WRITTEN_05]
            diff = paired_difference([row["pipelines"][pipeline][metric] for row in cross],
                                     [row["pipelines"][UNION_05][metric] for row in cross])
            return diff[0 if not end else end[0] + 1]

        return derived(f"bench_results/advanced.json, {pipeline} minus the union, {metric}, paired", get)

    return value


def interval_claims(notebook: str, prefix: str, value: Callable[..., Value], key: str, sep: str = r"\s+\[",
                    suffix: str = "") -> list[Claim]:
    """Three claims for "<prefix>-0.123<sep>-0.200, +0.050]<suffix>": a difference and both ends of its 95% interval,
    signs read as written; `value(key)` is the difference, `value(f"{key} 95% CI", 0 or 1)` an end."""
    d, sign = r"[+-][\d.]+", r"([+-][\d.]+)"

    def whole(diff: str, low: str, high: str) -> str:
        return prefix + diff + sep + low + ", " + high + r"\]" + suffix

    return [Claim(notebook, whole(sign, d, d), value(key)),
            Claim(notebook, whole(d, sign, d), value(f"{key} 95% CI", 0)),
            Claim(notebook, whole(d, d, sign), value(f"{key} 95% CI", 1))]


def metric_claims(notebook: str, template: str, value: Callable[[str], Value]) -> list[Claim]:
    """One claim per metric for a sentence quoting R@1, R@5 and MRR@5 in that order: `template` is a regex with three
    `{}` slots, `value(metric)` the true value."""
    metrics = ("R@1", "R@5", "MRR@5")
    return [Claim(notebook, template.format(*(r"([.\d]+)" if j == i else r"[.\d]+" for j in range(3))), value(metric))
            for i, metric in enumerate(metrics)]


def diff_claims_05(prefix: str, pipeline: str, set_name: str, metric: str = "recall@3") -> list[Claim]:
    """`interval_claims` for a transform of notebook 05 against its baseline (bench_results/advanced.json)."""
    return interval_claims(N05, prefix, lambda *m: advanced_05(pipeline, set_name, *m), f"{metric} diff")


CLAIMS: list[Claim] = [
    # ---- 00 quickstart
    Claim(N00, r"also embeds the (\d+) chunks", output(N00, 4, r"'chunks written': (\d+)")),
    Claim(N00, r"chunks: (\d+) s on an idle machine", bench("quickstart", "setup", "index data/docs (s)")),
    Claim(N00, r"runs from ([\d.]+) \(the highest off-topic",
          output(N00, SIMS_00, r"highest best-similarity ([\d.]+)")),
    Claim(N00, r"to ([\d.]+) \(the lowest answerable", output(N00, SIMS_00, r"lowest best-similarity ([\d.]+)")),
    Claim(N00, r"cutoff, ([\d.]+), sits in it", CUTOFF_00),
    Claim(N00, r"these same (\d+) questions", QUESTIONS_00),
    Claim(N00, r"only (\d+) off-topic questions", OFF_TOPIC_00),
    Claim(N00, r"already among the (\d+) above", QUESTIONS_00),
    Claim(N00, r"\(hybrid, `k=(\d+)`, no cutoff\)", code(N00, 7, r"k=(\d+)")),
    Claim(N00, r"so chunk 0 \(([\d.]+)\) comes before", output(N00, 7, r"bm25_zh\.md\s+0\s+[\d.]+\s+([\d.]+)")),
    Claim(N00, r"the more similar chunk 4 \(([\d.]+)\)", output(N00, 7, r"bm25_zh\.md\s+4\s+[\d.]+\s+([\d.]+)")),
    Claim(N00, r"At ([\d.]+) it refuses", CUTOFF_00),
    Claim(N00, r"it refuses (\d+) of the \d+\s+answerable", held_out_00("0.86", 0)),
    Claim(N00, r"it refuses \d+ of the (\d+)\s+answerable", held_out_00("0.86", 1)),
    Claim(N00, r"answerable questions \((\d+)%, 95% CI", held_out_00("0.86", 2)),
    Claim(N00, r"answerable questions \(\d+%, 95% CI (\d+)-", held_out_00("0.86", 3)),
    Claim(N00, r"answerable questions \(\d+%, 95% CI \d+-(\d+)%\)", held_out_00("0.86", 4)),
    Claim(N00, r"lets (\d+) of the \d+ unanswerable ones through", held_out_00("0.86", 5)),
    Claim(N00, r"lets \d+ of the (\d+) unanswerable ones through", held_out_00("0.86", 6)),
    Claim(N00, r"through \((\d+)%, 95% CI", held_out_00("0.86", 7)),
    Claim(N00, r"through \(\d+%, 95% CI (\d+)-", held_out_00("0.86", 8)),
    Claim(N00, r"through \(\d+%, 95% CI \d+-(\d+)%\)", held_out_00("0.86", 9)),
    Claim(N00, r"(\d+) of the \d+ unanswerable questions with Chinese", output(N00, LANG_00, r"Chinese text: (\d+)/")),
    Claim(N00, r"\d+ of the (\d+) unanswerable questions with Chinese",
          output(N00, LANG_00, r"Chinese text: \d+/(\d+)")),
    Claim(N00, r"against (\d+) of the \d+\s+English ones", output(N00, LANG_00, r"English only: (\d+)/")),
    Claim(N00, r"against \d+ of the (\d+)\s+English ones", output(N00, LANG_00, r"English only: \d+/(\d+)")),
    Claim(N00, r"at ([\d.]+) only \d+ of the", code(N00, HELD_OUT_00, r"for cut in \([\d.]+, CUTOFF, ([\d.]+)\)")),
    Claim(N00, r"only (\d+) of the \d+ unanswerable questions gets? through", held_out_00("0.88", 5)),
    Claim(N00, r"only \d+ of the (\d+) unanswerable questions gets? through", held_out_00("0.88", 6)),
    Claim(N00, r"but (\d+)\s+of the \d+ answerable ones are refused", held_out_00("0.88", 0)),
    Claim(N00, r"but \d+\s+of the (\d+) answerable ones are refused", held_out_00("0.88", 1)),
    Claim(N00, r"answerable ones are refused \((\d+)%\)", held_out_00("0.88", 2)),
    Claim(N00, r"at ([\d.]+) false refusals stay at", code(N00, HELD_OUT_00, r"for cut in \(([\d.]+), CUTOFF")),
    Claim(N00, r"false refusals stay at (\d+) of \d+", held_out_00("0.84", 0)),
    Claim(N00, r"false refusals stay at \d+ of (\d+)", held_out_00("0.84", 1)),
    Claim(N00, r"and (\d+) of the \d+ unanswerable\s+ones pass", held_out_00("0.84", 5)),
    Claim(N00, r"and \d+ of the (\d+) unanswerable\s+ones pass", held_out_00("0.84", 6)),
    Claim(N00, r"here ([\d.]+) refused", CUTOFF_00),
    Claim(N00, r"refused (\d+)% of the answerable", held_out_00("0.86", 2)),
    Claim(N00, r"let (\d+)% of the unanswerable", held_out_00("0.86", 7)),
    Claim(N00, r"on the (\d+) sample questions, midway", QUESTIONS_00),
    Claim(N00, r"first\s+token came after ([\d.]+) s against", bench("quickstart", "questions", 0, "ttft_s")),
    Claim(N00, r"came after [\d.]+ s against ([\d.]+) s \(one run", bench("quickstart", "questions", 1, "ttft_s")),
    Claim(N00, r"first prompt is (\d+) tokens against", output(N00, TOKENS_00, r"(\d+) prompt tokens  Milvus")),
    Claim(N00, r"tokens against (\d+) \(the cell just above",
          output(N00, TOKENS_00, r"(\d+) prompt tokens  In Reciprocal")),
    Claim(N00, r"Generation then ran at ([\d.]+) tokens/s", bench("quickstart", "questions", 0, "tokens_per_s")),
    Claim(N00, r"first question and\s+([\d.]+) on the second", bench("quickstart", "questions", 1, "tokens_per_s")),
    Claim(N00, r"answer took ([\d.]+) − [\d.]+ ≈", bench("quickstart", "questions", 1, "total_s")),
    Claim(N00, r"answer took [\d.]+ − ([\d.]+) ≈", bench("quickstart", "questions", 1, "ttft_s")),
    Claim(N00, r"≈ (\d+) s to write", derived(
        "bench_results/quickstart.json, second question total_s - ttft_s",
        lambda: bench("quickstart", "questions", 1, "total_s").get()
        - bench("quickstart", "questions", 1, "ttft_s").get())),
    Claim(solutions(N00), r"on the (\d+) held-out questions", output(N00, PER_LANG_00, r"of (\d+) questions change")),
    Claim(solutions(N00), r"only (\d+) change and the interval",
          output(N00, PER_LANG_00, r"; (\d+) of \d+ questions change")),
    Claim(solutions(N00), r"the interval, \[([-+][\d.]+),",
          output(N00, PER_LANG_00, r"difference [-+][\d.]+ \[([-+][\d.]+),")),
    Claim(solutions(N00), r"the interval, \[[-+][\d.]+, ([-+][\d.]+)\]",
          output(N00, PER_LANG_00, r"difference [-+][\d.]+ \[[-+][\d.]+, ([-+][\d.]+)\]")),
    # ---- 01 Milvus setup
    Claim(N01, r"about (\d+) s of cells", cell_seconds(N01), rel=0.5),
    Claim(N01, r"embed (\d+) openings", output(N01, 5, OPENINGS_01)),
    Claim(N01, r"opening sentences of the (\d+) documents", output(N01, 5, OPENINGS_01)),
    Claim(N01, r"Insert the same (\d+) openings", output(N01, 5, OPENINGS_01)),
    Claim(N01, r"up to ~(\d+)k vectors", bench(HUNDRED_K, "synthetic", "vectors", scale=1e-3)),
    Claim(N01, r"(\d+) of the 23 sample questions find", output(N01, 36, r"sample\s+no filter\s+(\d+)/")),
    Claim(N01, r"(\d+) of the 23 sample questions find", output(N01, 36, r"sample\s+lang == question's\s+(\d+)/")),
    Claim(N01, r"only (\d+) of the 14 hard", output(N01, 36, r"hard\s+no filter\s+(\d+)/")),
    Claim(N01, r"only (\d+) of the 14 hard", output(N01, 36, r"hard\s+lang == question's\s+(\d+)/")),
    Claim(N01, r"\(notebook 05\), (\d+) of them in the other", output(N01, 36, HARD_01 + r"(\d+) cross-lingual")),
    Claim(N01, r"changed the top hit of (\d+) hard questions \(printed", output(N01, 36, CHANGED_01)),
    Claim(N01, r"top hit of (\d+) hard questions, \d+ of them", output(N01, 36, CHANGED_01)),
    Claim(N01, r"(\d+) of them now find their document", moved_right_01(True)),
    Claim(N01, r"hard questions, (\d+) of them to the right", moved_right_01(True)),
    Claim(N01, r"the other (\d+) swap one wrong", moved_right_01(False)),
    Claim(N01, r"so (\d+) of the 14 against", output(N01, 36, r"hard\s+lang == answer's\s+(\d+)/")),
    Claim(N01, r"of the 14 against (\d+) without a filter", output(N01, 36, r"hard\s+no filter\s+(\d+)/")),
    Claim(N01, r"\((\d+)/14 against \d+/14, intervals", output(N01, 36, r"hard\s+lang == answer's\s+(\d+)/")),
    Claim(N01, r"\(\d+/14 against (\d+)/14, intervals", output(N01, 36, r"hard\s+no filter\s+(\d+)/")),
    Claim(N01, r"\((\d+)/23 sample and \d+/14 hard", output(N01, 36, r"sample\s+no filter\s+(\d+)/")),
    Claim(N01, r"\((\d+)/23 sample and \d+/14 hard", output(N01, 36, r"sample\s+lang == question's\s+(\d+)/")),
    Claim(N01, r"\(\d+/23 sample and (\d+)/14 hard", output(N01, 36, r"hard\s+no filter\s+(\d+)/")),
    Claim(N01, r"\(\d+/23 sample and (\d+)/14 hard", output(N01, 36, r"hard\s+lang == question's\s+(\d+)/")),
    Claim(N01, r"\((\d+) of 23 and \d+ of 14 questions changed\)", output(N01, 36, r"23 questions, (\d+) changed")),
    Claim(N01, r"\(\d+ of 23 and (\d+) of 14 questions changed\)", output(N01, 36, r"14 questions, (\d+) changed")),
    # ---- 03 HNSW and IVF
    Claim(N03, r"\(about (\d+) minutes on 2 cores, CMRC", derived("bench_results/index.json total_s / 60",
                                                lambda: bench("index", "total_s").get() / 60)),
    Claim(N03, r"the ([\d,]+) CMRC questions", bench("index", "cmrc", "queries")),
    Claim(N03, r"~(\d+)-character chunks", bench("index", "cmrc", "chunk_chars")),
    Claim(N03, r"batched\s+queries \((\d+) per call", bench("index", "batch")),
    Claim(N03, r"reaches recall\s+([\d.]+) at `ef` = 40", CMRC_M16_EF40),
    Claim(N03, r"`ef` = 40 already gives recall ([\d.]+)", CMRC_M16_EF40),
    Claim(N03, r"to pass 0\.85 \(([\d.]+)\)",
          setting("index", "HNSW", "recall@10", M=16, efConstruction=64, ef=640)),
    Claim(N03, r"`nprobe` = 4: ([\d.]+), printed above\)",
          setting("index", "IVF_FLAT", "recall@10", cmrc=True, nlist=16, nprobe=4)),
    Claim(N03, r"FLAT / HNSW CPU ([\d.]+) at 100,000", derived(
        "bench_results/crossing.json, Milvus Lite FLAT / HNSW CPU ms per query at 100,000 vectors",
        lambda: crossing_cost("cpu_ms_per_query", 100_000, "FLAT").get()
        / crossing_cost("cpu_ms_per_query", 100_000, "HNSW").get())),
    Claim(N03, r"M=32 reaches ([\d.]+) at `ef` = 320", setting("index", "HNSW", "recall@10", M=32, ef=320)),
    Claim(N03, r"`ef` = 640 for ([\d.]+)", setting("index", "HNSW", "recall@10", M=16, efConstruction=64, ef=640)),
    Claim(N03, r"points \(([\d.]+) → [\d.]+ at", setting("index", "HNSW", "recall@10", **M16, ef=640)),
    Claim(N03, r"points \([\d.]+ → ([\d.]+) at",
          setting("index", DEFAULT_HNSW, "recall@10", ef=640)),
    Claim(N03, r"between ([\d.]+) and\s+[\d.]+ ms of CPU", derived(
        "bench_results/index.json, min CMRC CPU ms per query",
        lambda: min(r["cpu_ms_per_query"] for r in bench_rows("index", "cmrc", "settings")))),
    Claim(N03, r"between [\d.]+ and\s+([\d.]+) ms of CPU", derived(
        "bench_results/index.json, max CMRC CPU ms per query",
        lambda: max(r["cpu_ms_per_query"] for r in bench_rows("index", "cmrc", "settings")))),
    Claim(N03, r"exact FLAT \(([\d.]+) ms of CPU", setting("index", "FLAT", "cpu_ms_per_query")),
    Claim(N03, r"\(([\d.]+) to [\d.]+ ms for M = 8 to 32\)", hnsw_cpu(min)),
    Claim(N03, r"\([\d.]+ to ([\d.]+) ms for M = 8 to 32\)", hnsw_cpu(max)),
    Claim(N03, r"HNSW finds only ([\d.]+) to\s+[\d.]+ of the true", hnsw_cpu(min, "recall@10")),
    Claim(N03, r"HNSW finds only [\d.]+ to\s+([\d.]+) of the true", hnsw_cpu(max, "recall@10")),
    Claim(N03, r"\(([\d.]+) CPU seconds on the 20,000 vectors\)",
          setting("index", DEFAULT_HNSW, "build_cpu_s", ef=640)),
    Claim(N03, r"on the ([\d,]+) vectors", bench("index", "synthetic", "vectors")),
    Claim(N03, r"On the (\d+) CMRC chunks", bench("index", "cmrc", "vectors")),
    Claim(N03, r"On ([\d,]+) random vectors exact FLAT", bench("index", "synthetic", "vectors")),
    Claim(N03, r"about (\d+) to \d+ chunks per cell", derived(
        "bench_results/index.json, CMRC vectors / the largest nlist",
        lambda: bench("index", "cmrc", "vectors").get()
        / max(r["nlist"] or 0 for r in bench_rows("index", "cmrc", "settings"))), tol=1),
    Claim(N03, r"about \d+ to (\d+) chunks per cell", derived(
        "bench_results/index.json, CMRC vectors / the smallest nlist",
        lambda: bench("index", "cmrc", "vectors").get()
        / min(r["nlist"] for r in bench_rows("index", "cmrc", "settings") if r["nlist"])), tol=1),
    Claim(N03, r"At ([\d,]+) vectors", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"sweep on ([\d,]+) random vectors", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"side by side at ([\d,]+) and", bench("index", "synthetic", "vectors")),
    Claim(N03, r"side by side at [\d,]+ and ([\d,]+)", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"Reading the ([\d,]+)-vector run", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"at ([\d,]+) vectors to", bench("index", "synthetic", "vectors")),
    Claim(N03, r"to [\d.]+ at ([\d,]+), M=16", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"on ([\d,]+) random vectors\s+took", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"indexes are ([\d.]+)× and", derived(
        "bench_results/index.json, IVF_FLAT / IVF_SQ8 index_mb (nlist=256)",
        lambda: setting("index", "IVF_FLAT", "index_mb", nlist=256, nprobe=1).get()
        / setting("index", "IVF_SQ8", "index_mb", nlist=256, nprobe=1).get())),
    Claim(N03, r"and ([\d.]+)× smaller", derived(
        "bench_results/index.json, HNSW / HNSW_SQ index_mb (M=16, efC=64)",
        lambda: setting("index", "HNSW", "index_mb", M=16, efConstruction=64, ef=10).get()
        / setting("index", "HNSW_SQ", "index_mb", ef=10).get())),
    Claim(N03, r"measured at load ([\d.]+)-[\d.]+, printed below", bench(HUNDRED_K, "loadavg_start", 0)),
    Claim(N03, r"measured at load [\d.]+-([\d.]+), printed below", bench(HUNDRED_K, "loadavg_end", 0)),
    Claim(N03, r"about (\d+) minutes on 2\s+cores, measured at load",
          derived(f"bench_results/{HUNDRED_K}.json total_s / 60", lambda: bench(HUNDRED_K, "total_s").get() / 60)),
    Claim(N03, r"falls from recall ([\d.]+) at 20,000", setting("index", "HNSW", "recall@10", M=32, ef=640)),
    Claim(N03, r"to ([\d.]+) at 100,000", setting(HUNDRED_K, "HNSW", "recall@10", M=32, ef=640)),
    Claim(N03, r"M=16 from ([\d.]+) to", setting("index", "HNSW", "recall@10", M=16, efConstruction=64, ef=640)),
    Claim(N03, r"M=16 from [\d.]+ to ([\d.]+)", setting(HUNDRED_K, "HNSW", "recall@10", **M16, ef=640)),
    Claim(N03, r"grew\s+([\d.]+)x for", derived(
        "FLAT CPU ms per query, bench_results/index_100k.json / index.json",
        lambda: setting(HUNDRED_K, "FLAT", "cpu_ms_per_query").get()
        / setting("index", "FLAT", "cpu_ms_per_query").get())),
    Claim(N03, r"for (\d+)x the vectors", derived(
        "vectors, bench_results/index_100k.json / index.json",
        lambda: bench(HUNDRED_K, "synthetic", "vectors").get() / bench("index", "synthetic", "vectors").get())),
    Claim(N03, r"\(([\d.]+) → [\d.]+ ms per query, batched\)", setting("index", "FLAT", "cpu_ms_per_query")),
    Claim(N03, r"\([\d.]+ → ([\d.]+) ms per query, batched\)", setting(HUNDRED_K, "FLAT", "cpu_ms_per_query")),
    Claim(N03, r"the best one \(([\d.]+)\)", derived(
        f"bench_results/{HUNDRED_K}.json, best HNSW recall@10",
        lambda: max(r["recall@10"] for r in bench_rows(HUNDRED_K, "synthetic", "settings") if "HNSW" in r["index"]))),
    Claim(N03, r"costs (\d+) to \d+ ms of\s+wall clock", one_per_call(min)),
    Claim(N03, r"costs \d+ to (\d+) ms of\s+wall clock", one_per_call(max)),
    Claim(N03, r"Sent (\d+)\s+per call", derived(
        "bench_results/index.json batch_study, largest batch",
        lambda: max(r["batch"] for r in bench_rows("index", "synthetic", "batch_study")))),
    Claim(N03, r"and ([\d.]+) to [\d.]+\s+times in\s+wall clock", batch_ratios("p50_ms_per_query", min)),
    Claim(N03, r"and [\d.]+ to ([\d.]+)\s+times in\s+wall clock", batch_ratios("p50_ms_per_query", max)),
    Claim(N03, r"falls ([\d.]+) to [\d.]+\s+times in\s+CPU", batch_ratios("cpu_ms_per_query", min)),
    Claim(N03, r"falls [\d.]+ to ([\d.]+)\s+times in\s+CPU", batch_ratios("cpu_ms_per_query", max)),
    Claim(N03, r"took (\d+) CPU seconds inside", setting(HUNDRED_K, DEFAULT_HNSW, "build_cpu_s", ef=640)),
    Claim(N03, r"its\s+size \(([\d.]+) MB\) is that of the\s+M=16 build",
          setting("index", DEFAULT_HNSW, "index_mb", ef=640)),
    Claim(N03, r"its\s+size \(([\d.]+) MB\) is that of the\s+M=16 build",
          setting("index", "HNSW", "index_mb", **M16, ef=640)),
    Claim(N03, r"twice as long \(([\d.]+) against", setting("index", DEFAULT_HNSW, "build_cpu_s", ef=640)),
    Claim(N03, r"twice as long \([\d.]+ against ([\d.]+) CPU s",
          setting("index", "HNSW", "build_cpu_s", **M16, ef=640)),
    Claim(N03, r"twice as long \(([\d.]+) against", derived(
        "bench_results/index.json, twice the M=16 efC=64 build's CPU seconds",
        lambda: 2 * setting("index", "HNSW", "build_cpu_s", **M16, ef=640).get()), rel=0.1),
    Claim(N03, r"the same recall to\s+within ([\d.]+) \(printed", derived(
        "bench_results/index.json, largest IVF_FLAT - IVF_SQ8 recall@10 gap at the same nlist and nprobe",
        lambda: max(abs(f["recall@10"] - q["recall@10"])
                    for name in ("cmrc", "synthetic") for f in bench_rows("index", name, "settings")
                    for q in bench_rows("index", name, "settings")
                    if (f["index"], q["index"]) == ("IVF_FLAT", "IVF_SQ8")
                    and (f["nlist"], f["nprobe"]) == (q["nlist"], q["nprobe"]))), tol=0.0005),
    # section 5, where HNSW overtakes FLAT (bench_results/crossing.json)
    Claim(N03, r"\(about (\d+) minutes, load printed", derived("bench_results/crossing.json total_s / 60",
                                                            lambda: bench("crossing", "total_s").get() / 60), rel=0.5),
    Claim(N03, r"collections of ([\d,]+) to [\d,]+ such", derived(
        "bench_results/crossing.json smallest size",
        lambda: min(r["vectors"] for r in bench_rows("crossing", "rows")))),
    Claim(N03, r"collections of [\d,]+ to ([\d,]+) such", derived(
        "bench_results/crossing.json largest size", lambda: max(r["vectors"] for r in bench_rows("crossing", "rows")))),
    Claim(N03, r"`ef` from (\d+) to \d+\)", bench("crossing", "efs", 0)),
    Claim(N03, r"`ef` from \d+ to (\d+)\)", bench("crossing", "efs", -1)),
    Claim(N03, r"whose\s+recall@10 reaches ([\d.]+)", bench("crossing", "floor")),
    Claim(N03, r"pulls ahead from ([\d,]+) vectors on", crossing_cost("cpu_ms_per_query", None)),
    Claim(N03, r"pulls ahead from ([\d,]+) vectors on", crossing_cost("p50_single_ms", None)),
    Claim(N03, r"at least ([\d.]+) times\s+cheaper than FLAT", bench("crossing", "margin")),
    Claim(N03, r"cheaper than FLAT at recall ≥ ([\d.]+)", bench("crossing", "floor")),
    Claim(N03, r"at 100,000 vectors FLAT\s+takes ([\d.]+) ms", crossing_cost("cpu_ms_per_query", 100_000, "FLAT")),
    Claim(N03, r"ms of CPU per query against ([\d.]+) ms \(one", crossing_cost("cpu_ms_per_query", 100_000, "HNSW")),
    Claim(N03, r"one query per call: (\d+) ms against", crossing_cost("p50_single_ms", 100_000, "FLAT")),
    Claim(N03, r"ms against (\d+) ms of wall clock\), and", LITE_HNSW_SINGLE_100K),
    Claim(N03, r"200,000 ([\d.]+) ms against", crossing_cost("cpu_ms_per_query", 200_000, "FLAT")),
    Claim(N03, r"200,000 [\d.]+ ms against ([\d.]+) ms", crossing_cost("cpu_ms_per_query", 200_000, "HNSW")),
    Claim(N03, r"faiss' HNSW is (\d+) times cheaper", derived(
        "bench_results/crossing.json faiss FLAT / HNSW CPU per query at 100,000",
        lambda: crossing_cost("cpu_ms_per_query", 100_000, "FLAT", "faiss").get()
        / crossing_cost("cpu_ms_per_query", 100_000, "HNSW", "faiss").get())),
    Claim(N03, r"\(([\d.]+) against [\d.]+ ms per query\)",
          crossing_cost("cpu_ms_per_query", 100_000, "HNSW", "faiss")),
    Claim(N03, r"\([\d.]+ against ([\d.]+) ms per query\)",
          crossing_cost("cpu_ms_per_query", 100_000, "FLAT", "faiss")),
    Claim(N03, r"takes ([\d.]+) ms per query at 100,000",
          bench("crossing", "rows", {"engine": "numpy", "vectors": 100_000}, "cpu_ms_per_query")),
    Claim(N03, r"and (\d+) ms one query at a time", bench("crossing", "rows", {"engine": "numpy", "vectors": 100_000},
                                                          "p50_single_ms")),
    Claim(N03, r"against Lite's (\d+) ms", LITE_HNSW_SINGLE_100K),
    Claim(N03, r"e5's sit between ([\d.]+) and", output(N00, SIMS_00, r"5th-95th percentile ([\d.]+)-")),
    Claim(N03, r"e5's sit between [\d.]+ and ([\d.]+)", output(N00, SIMS_00, r"5th-95th percentile [\d.]+-([\d.]+)")),
    Claim(N03, r"The load average was ([\d.]+) at\s+the start", bench("index", "loadavg_start", 0)),
    Claim(N03, r"at\s+the start and ([\d.]+) at the end \(printed below\)", bench("index", "loadavg_end", 0)),
    # notebook 03, exercise 3's answer: one-run CPU ms per query at 200,000 vectors
    Claim(solutions(N03), r"M=16/efC=64 gets there at ef = (\d+)", output(N03, 47, r"HNSW M=16 efC=64\s+(\d+)")),
    Claim(solutions(N03), r"M=8/efC=32 needs ef = (\d+)", output(N03, 47, r"HNSW\s+M=8 efC=32\s+(\d+)")),
    Claim(solutions(N03), r"cost more \(([\d.]+) and [\d.]+ ms against", lite_hnsw_cpu_200k(32)),
    Claim(solutions(N03), r"cost more \([\d.]+ and ([\d.]+) ms against", lite_hnsw_cpu_200k(64)),
    Claim(solutions(N03), r"ms against ([\d.]+)\)", lite_hnsw_cpu_200k(128)),
    Claim(N03, r"\(CPU ([\d.]+), [\d.]+; single query", crossing_table_ratio("cpu_ms_per_query", 1_000)),
    Claim(N03, r"\(CPU [\d.]+, ([\d.]+); single query", crossing_table_ratio("cpu_ms_per_query", 2_000)),
    Claim(N03, r"single query ([\d.]+), [\d.]+\)", crossing_table_ratio("p50_single_ms", 1_000)),
    Claim(N03, r"single query [\d.]+, ([\d.]+)\)", crossing_table_ratio("p50_single_ms", 2_000)),
    Claim(N03, r"ratio \(([\d.]+) at 5,000", crossing_table_ratio("cpu_ms_per_query", 5_000)),
    Claim(N03, r"at 5,000, ([\d.]+) at 10,000\)", crossing_table_ratio("cpu_ms_per_query", 10_000)),
    Claim(N03, r"one run per size \(([\d.]+) at 20,000\)", derived(
        "bench_results/crossing.json, Milvus Lite FLAT / HNSW CPU ms per query at 20,000 vectors",
        lambda: crossing_cost("cpu_ms_per_query", 20_000, "FLAT").get()
        / crossing_cost("cpu_ms_per_query", 20_000, "HNSW").get())),
    # ---- 06 streaming
    Claim(N06, r"about ([\d.]+) minutes? on a 2-core", minutes(N06), rel=0.5),
    Claim(N06, r"writes ([\d.]+)-[\d.]+ tokens per second", bench("quickstart", "questions", 0, "tokens_per_s")),
    Claim(N06, r"writes [\d.]+-([\d.]+) tokens per second", bench("quickstart", "questions", 1, "tokens_per_s")),
    Claim(N06, r"\(([\d.]+)-[\d.]+ per\s+second in", bench("quickstart", "questions", 0, "tokens_per_s")),
    Claim(N06, r"\([\d.]+-([\d.]+) per\s+second in", bench("quickstart", "questions", 1, "tokens_per_s")),
    Claim(N06, r"Two nodes give (\d+) `tasks` items", output(N06, 28, r"items: tasks (\d+),")),
    Claim(N06, r"`generate`, and (\d+) checkpoints:", output(N06, 28, r"checkpoints (\d+), debug")),
    Claim(N06, r"the empty input \(step (-?\d+)\)", output(N06, 28, r"step +(-?\d+), state keys \[\],")),
    Claim(N06, r"the question written \(step (-?\d+)\)", output(N06, 28, r"step +(-?\d+), state keys \['question'\],")),
    # ---- 07 subgraphs and Send
    Claim(N07, r"about (\d+) s of cells", cell_seconds(N07), rel=0.5),
    Claim(N07, r"passed the ([\d.]+) cutoff", output(N07, 2, r"cutoff: ([\d.]+)")),
    Claim(N07, r"waits took ([\d.]+) s in a\s+loop", output(N07, 35, r"one call after another\s+\d+\s+([\d.]+)")),
    Claim(N07, r"loop and ([\d.]+) s fanned out, but", output(N07, 35, r"branches wait apart\s+\d+\s+([\d.]+)")),
    Claim(N07, r"but ([\d.]+) s fanned out behind one lock", output(N07, 35, r"one shared lock\s+\d+\s+([\d.]+)")),
    # ---- 07b checkpoints and time travel
    Claim(N07B, r"about (\d+) s of cells", cell_seconds(N07B), rel=0.5),
    Claim(N07B, r"(\d+) checkpoints for a run", output(N07B, 10, r"(\d+) checkpoints in thread")),
    Claim(N07B, r"the first run made (\d+) model calls", output(N07B, 8, r"from (\d+) model calls")),
    Claim(N07B, r"fork each\s+added (\d+) checkpoints", output(N07B, 24, r"short style\s+(\d+)")),
    Claim(N07B, r"fork each\s+added (\d+) checkpoints", output(N07B, 24, r"\[3\] corrected\s+(\d+)")),
    Claim(N07B, r"for (\d+) new checkpoints each", output(N07B, 24, r"short style\s+(\d+)")),
    Claim(N07B, r"paid the same (\d+) model calls, all after",
          output(N07B, 24, r"resumed after restart\s+\d+\s+(\d+)")),
    Claim(N07B, r"paid the same (\d+) model calls, all after", output(N07B, 8, r"from (\d+) model calls")),
    Claim(N07B, r"its (\d+) \+ \d+ checkpoints add up", output(N07B, 24, r"stopped after retrieve\s+(\d+)")),
    Claim(N07B, r"its \d+ \+ (\d+) checkpoints add up", output(N07B, 24, r"resumed after restart\s+(\d+)")),
    Claim(N07B, r"add up\s+to the first run's (\d+):", output(N07B, 24, r"(?m)^run\s+(\d+)")),
    Claim(N07B, r"add up\s+to the first run's (\d+):",
          output(N07B, 24, r"(?s)in its thread.*resumed after restart\s+(\d+)")),
    # ---- 11 evaluation: header, setup and references
    Claim(N12, r"about (\d+) s of cells on a 2-core", cell_seconds(N12), rel=0.5),
        Claim(N12, r"all ([\d,]+)", bench("retrieval", "setup", "questions")),
    Claim(N12, r"the full ([\d,]+)", bench("retrieval", "setup", "questions")),
    Claim(N12, r"indexes the (\d+) trial contexts", bench("retrieval", "setup", "contexts")),
    Claim(N12, r"(\d+) chunks are fetched", bench("retrieval", "setup", "candidates")),
    Claim(N12, r"recall@1/3/5 = ([.\d]+)/[.\d]+/[.\d]+, and MRR@5", code(N12, 8, r'"R@1": ([\d.]+)')),
    Claim(N12, r"recall@1/3/5 = [.\d]+/([.\d]+)/[.\d]+, and MRR@5", code(N12, 8, r'"R@3": ([\d.]+)')),
    Claim(N12, r"recall@1/3/5 = [.\d]+/[.\d]+/([.\d]+), and MRR@5", code(N12, 8, r'"R@5": ([\d.]+)')),
    Claim(N12, r"MRR@5 = ([.\d]+) \*with\*", code(N12, 8, r'"MRR@5": ([\d.]+)')),
    Claim(N12, r"\(LazyLLM BM25: ([.\d]+)/", code(N12, 8, r'"R@1": ([\d.]+)')),
    Claim(N12, r"\(LazyLLM BM25: [.\d]+/([.\d]+)/", code(N12, 8, r'"R@3": ([\d.]+)')),
    Claim(N12, r"\(LazyLLM BM25: [.\d]+/[.\d]+/([.\d]+)\)", code(N12, 8, r'"R@5": ([\d.]+)')),
    # ---- 11: the retrieval benchmark
    *[Claim(N12, r"reaches\s+recall@1/3/5 = " + "/".join(r"([.\d]+)" if j == i else r"[.\d]+" for j in range(3)),
            pipeline(PEER_BM25, metric)) for i, metric in enumerate(("R@1", "R@3", "R@5"))],
    Claim(N12, r"by ([\d.]+) to [\d.]+\s+points", lift(min)),
    Claim(N12, r"by [\d.]+ to ([\d.]+)\s+points", lift(max)),
    Claim(N12, r"\(([.\d]+) and [.\d]+ → [.\d]+ and [.\d]+\)", pipeline(BM25, "R@1")),
    Claim(N12, r"\([.\d]+ and ([.\d]+) → [.\d]+ and [.\d]+\)", pipeline(DENSE, "R@1")),
    Claim(N12, r"\([.\d]+ and [.\d]+ → ([.\d]+) and [.\d]+\)", pipeline(RRF, "R@1")),
    Claim(N12, r"\([.\d]+ and [.\d]+ → [.\d]+ and ([.\d]+)\)", pipeline(WEIGHTED, "R@1")),
    Claim(N12, r"recall@5 ([.\d]+),\s+MRR@5", pipeline(PARENT, "R@5")),
    Claim(N12, r"recall@5 ([.\d]+) → [.\d]+\)", pipeline(WEIGHTED, "R@5")),
    Claim(N12, r"recall@5 [.\d]+ → ([.\d]+)\)", pipeline(CUTOFF, "R@5")),
    Claim(N12, r"relevance \(([.\d]+) → [.\d]+\)", pipeline(WEIGHTED, "ctx relevance@3")),
    Claim(N12, r"relevance \([.\d]+ → ([.\d]+)\)", pipeline(CUTOFF, "ctx relevance@3")),
    # ---- 11: the live slice (its quality outputs are deterministic and compared by nbval)
    Claim(N12, r"pipelines on (\d+) questions", output(N12, SLICE_SETUP, r"(\d+) questions in the slice")),
    Claim(N12, r"one question is ([\d.]+) of recall", derived(
        f"{N12} cell {SLICE_SETUP} output, 1 / questions",
        lambda: 1 / output(N12, SLICE_SETUP, r"(\d+) questions in the slice").get())),
    Claim(N12, r"(\d+) questions are a coarse ruler", output(N12, SLICE_SETUP, r"(\d+) questions in the slice")),
    Claim(N12, r"share the top MRR@5 \(([.\d]+)\)",
          output(N12, SLICE_TABLE, r"hybrid RRF\(60\)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)")),
    Claim(N12, r"BM25\s+follows \(([.\d]+)\)",
          output(N12, SLICE_TABLE, r"Milvus BM25 \(jieba \+ stop filter\)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)")),
    Claim(N12, r"dense search comes last \(([.\d]+)\)",
          output(N12, SLICE_TABLE, r"Milvus dense HNSW\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)")),
    *[Claim(N12, pattern, derived(f"{N12} cell {SLICE_TABLE} output, {reduce.__name__} of the slice's R@1", partial(
        lambda reduce: reduce(float(v) for v in re.findall(r"(?m)^(?:peer|Milvus|hybrid)[^\n]*?\s{2,}(0\.\d{3})\s",
                                                          output_text(N12, SLICE_TABLE))), reduce)))
      for pattern, reduce in ((r"\(([.\d]+) to [.\d]+\), so the slice", min),
                              (r"\([.\d]+ to ([.\d]+)\), so the slice", max))],
    # ---- 11: the answer benchmark
    # ---- 11: the judge's budget, its hand-checked pairs and the held-out two-hop run (multihop_held_out.json)
    Claim(N11, r"that is (\d+) calls", output(N11, 15, r"(?m)^k=3\s+\d+\s+\d+\s+(\d+)")),
    Claim(N11, r"\(section 2's\s+worst-case table: (\d+) calls", output(N11, 15, r"(?m)^k=3\s+\d+\s+\d+\s+(\d+)")),
    Claim(N11, r"needs one or two \(([\d.]+) s per", multihop_row("rag_extractive", "s p50"), rel=0.01),
    *[Claim(N11, pattern, output(N11, MEASURED_11, source))
      for pattern, source in ((r"right for \*\*(\d+) of the \d+\*\* chunks", r"model's score right on (\d+)"),
                              (r"right for \*\*\d+ of the (\d+)\*\* chunks", r"judged by the model: (\d+) chunks"),
                              (r"are right for (\d+) of \d+;", r"grounding check\) on (\d+) of"),
                              (r"are right for \d+ of (\d+);", r"grounding check\) on \d+ of (\d+)"),
                              (r"cutoff\s+scored (\d+) chunks 0", r"scored 0 by the cutoff: (\d+) chunks"),
                              (r"chunks 0 and was right on (\d+)", r"by the cutoff: \d+ chunks; right on (\d+)"))],
    *[Claim(N11, pattern, output(N11, 22, r"chunk 1 \([^,]+, similarity ([\d.]+)\)"))
      for pattern in (r"scores ([\d.]+) against\s+the question", r"RRF formula \(([\d.]+)\)")],
    *[Claim(N11, pattern, bench("multihop_held_out", "setup", "questions"))
      for pattern in (r"on\s+the\s+same\s+(\d+)\s+questions,\s+the\s+judge",
                      r"On\s+(\d+)\s+held-out\s+two-hop",
                      r"misses\s+the\s+first\s+hop's\s+passage\s+on\s+\d+\s+of\s+the\s+(\d+)")],
    Claim(N11, r"the\s+model\s+answers\s+(\d+)\s+of\s+the\s+112\s+from\s+one\s+passage", derived(
        "bench_results/multihop_gold.json: ids answered from one passage",
        lambda: float(len(results("multihop_gold")["answered from one passage"])))),
    *[Claim(N11, prefix + pattern, multihop_pair(pipeline, metric + (" ci" if index else ""), *index))
      for prefix, pipeline, metric in ((r"its\s+F1\s+is\s+no\s+better\s+\(", "judge_extractive", "F1 diff"),
                                       (r"no\s+more\s+often\s+\(", "judge_extractive", "evidence diff"),
                                       (r"F1\s+difference\s+holds\s+zero\s+\(", "bridge", "F1 diff"),
                                       (r"evidence\s+interval\s+touches\s+zero\s+\(", "bridge", "evidence diff"),
                                       (r"against\s+plain\s+RAG\s+\(", "judge_extractive", "F1 diff"),
                                       (r"no\s+measurable\s+difference\s+\(F1\s+", "bridge", "F1 diff"))
      for pattern, index in ((r"([+-][\d.]+)\s+\[", ()), (r"[+-][\d.]+\s+\[([+-]?[\d.]+),", (0,)),
                             (r"[+-][\d.]+\s+\[[+-]?[\d.]+,\s+([+-]?[\d.]+)\]", (1,)))],
    *[Claim(N11, pattern, multihop_row(pipeline, "s p50"), rel=0.01)
      for pattern, pipeline in ((r"medians\s+([\d.]+)\s+s\s+\[", "judge_extractive"),
                                (r"\]\s+and\s+([\d.]+)\s+s\s+\[[\d.]+,\s+[\d.]+\]\s+against", "bridge"),
                                (r"\]\s+against\s+([\d.]+)\s+s;", "rag_extractive"))],
    *[Claim(N11, pattern, multihop_row(pipeline, "s p50 ci", index))
      for pattern, pipeline, index in (
          (r"medians\s+[\d.]+\s+s\s+\[([\d.]+),", "judge_extractive", 0),
          (r"medians\s+[\d.]+\s+s\s+\[[\d.]+,\s+([\d.]+)\]", "judge_extractive", 1),
          (r"\]\s+and\s+[\d.]+\s+s\s+\[([\d.]+),\s+[\d.]+\]\s+against", "bridge", 0),
          (r"\]\s+and\s+[\d.]+\s+s\s+\[[\d.]+,\s+([\d.]+)\]\s+against", "bridge", 1))],
    Claim(N11, r"about\s+(\d+)\s+s\s+more\s+per\s+question", multihop_pair("judge_extractive", "s diff"), rel=0.1),
    *[Claim(N11, pattern, multihop_row(pipeline, "losses", "first hop not retrieved"))
      for pattern, pipeline in ((r"passage\s+on\s+(\d+)\s+of\s+the\s+\d+\s+for\s+plain\s+RAG", "rag_extractive"),
                                (r"for\s+plain\s+RAG\s+\((\d+)\s+for\s+the\s+other\s+two\)", "bridge"),
                                (r"for\s+plain\s+RAG\s+\((\d+)\s+for\s+the\s+other\s+two\)", "judge_extractive"))],
    *[Claim(N11, pattern, derived("bench_results/multihop_gold.json, held_out, both passages, right", lambda: float(
        next(r for r in results("multihop_gold")["rates"] if r["questions"] == "held_out" and r["context"] == "both")
        ["right"]))) for pattern in (r"answers\s+only\s+(\d+)\s+of\s+\d+:",
                                     r"only\s+(\d+)\s+of\s+\d+\s+even\s+from\s+both")],
    Claim(N11, r"still\s+wrong\s+on\s+(\d+)\s+to\s+\d+",
          multihop_row("rag_extractive", "losses", "both passages, answer wrong")),
    Claim(N11, r"still\s+wrong\s+on\s+\d+\s+to\s+(\d+)", multihop_row("judge_extractive", "losses",
                                                             "both passages, answer wrong")),
    # ---- 11: the setup, section 3's similarities, the child's calls, and the held-out rows per question
    Claim(N11, r"similarity\s+cutoff\s+([\d.]+)\s+\(chunks", output(N11, 2, r"cutoff=([\d.]+)")),
    Claim(N11, r"child's\s+#1\s+scores\s+([\d.]+)", output(N11, 18, r"two-hop/0\s+#1 \S+\s+([\d.]+)")),
    Claim(N11, r"child's\s+#1\s+scores\s+[\d.]+\s+and\s+#0\s+([\d.]+)",
          output(N11, 18, r"two-hop/0\s+#0 \S+\s+([\d.]+)")),
    Claim(N11, r"The\s+child's\s+(\d+)\s+calls", output(N11, 22, r"answered: \w+, (\d+) LLM calls\)")),
    *[Claim(N11, pattern, output(N11, HELD_OUT_ROWS_11, source))
      for pattern, source in ((r"path\s+is\s+rare:\s+a\s+follow-up\s+on\s+(\d+)\s+of",
                               r"judge: a follow-up on (\d+) of"),
                              (r"path\s+is\s+rare:\s+a\s+follow-up\s+on\s+\d+\s+of\s+(\d+),",
                               r"judge: a follow-up on \d+ of (\d+) questions"),
                              (r"of\s+\d+,\s+right\s+after\s+one\s+on\s+(\d+)\.", r"right after one on (\d+)"),
                              (r"answers\s+yes\s+\(([\d.]+),\s+mh-106\)", r"(?m)^mh-106:[^\n]*\n\s+judge F1 ([\d.]+)"),
                              (r"plain\s+RAG's\s+F1\s+\(([\d.]+)\)\s+is\s+a\s+partial",
                               r"(?m)^mh-73:[^\n]*\n[^\n]*\n\s+plain F1 ([\d.]+)"),
                              (r"'0\.5 分'\s+gets\s+([\d.]+)\s+only", MH93_PLAIN_11),
                              (r"of\s+which\s+([\d.]+)/\d+\s+is\s+mh-93's", MH93_PLAIN_11),
                              (r"judge\s+is\s+right\s+on\s+(\d+)\s+question", r"judge_extractive: right on (\d+) of"),
                              (r"against\s+plain\s+RAG's\s+(\d+)\s+and\s+its\s+F1",
                               r"rag_extractive: right on (\d+) of"))],
    Claim(N11, r"of\s+which\s+[\d.]+/(\d+)\s+is\s+mh-93's", bench("multihop_held_out", "setup", "questions")),
    Claim(N11, r"judge's\s+F1\s+of\s+([\d.]+)\s+comes\s+from", multihop_row("judge_extractive", "F1")),
    Claim(N11, r"It\s+loses\s+F1\s+on\s+(\d+)\s+questions", derived(
        f"{N11} cell {HELD_OUT_ROWS_11} output, questions where the judge's F1 is below plain RAG's",
        lambda: float(sum(judge < plain for judge, plain in f1_pairs_11())))),
    # ---- 11: the judge's agreement with the labelled passages (bench_results/judging.json)
    *[Claim(N11, pattern, bench("judging", "summary", {"score": score}, key))
      for pattern, score, key in ((r"agrees with the label on (\d+) of", "llm score", "agree"),
                                  (r"agrees with the label on \d+ of (\d+) passages", "llm score", "n"),
                                  (r"of \d+ passages \(([.\d]+) \[", "llm score", "agreement"),
                                  (r"check brings agreement\s+to (\d+) of", "score", "agree"),
                                  (r"check brings agreement\s+to \d+ of \d+ \(([.\d]+) \[", "score", "agreement"),
                                  (r"supplies the 0s, to (\d+) of", "graph score", "agree"),
                                  (r"supplies the 0s, to \d+ of \d+ \(([.\d]+) \[", "graph score", "agreement"),
                                  (r"on 97 labelled passages its own score agrees on (\d+)", "llm score", "agree"),
                                  (r"bring the graph's score to (\d+)", "graph score", "agree"))],
    Claim(N12, r"top-(\d+) chunks", bench("answers", "cmrc", "setup", "retriever k")),
    Claim(N12, r"best strips \| ≤ (\d+)", bench("answers", "cmrc", "setup", "crag max_llm_calls")),
    Claim(N12, r"≤ (\d+), depth", bench("answers", "cmrc", "setup", "judge max_llm_calls")),
    Claim(N12, r"depth ≤ (\d+)", bench("answers", "cmrc", "setup", "judge max_depth")),
    *[Claim(N12, r"answers.json`: (\d+) questions in each setting",
            bench("answers", "cmrc", "setup", "settings", name, "questions with rows")) for name in ("local", "split")],
    Claim(N12, r"LLM-only scores F1 ([.\d]+)", answers_row("local", "llm_only", "F1")),
    Claim(N12, r"for ([.\d]+) of the local\s+questions", answers_row("local", "rag_extractive", "evidence")),
    Claim(N12, r"and scores F1 ([.\d]+)\. Given the right", answers_row("local", "rag_extractive", "F1")),
    Claim(N12, r"\(gold F1 ([.\d]+)\)", answers_row("local", "gold", "F1")),
    *interval_claims(N12, r"F1 is level \(", lambda key, *end: answers_pair(
        "local", "gold - rag_extractive", "F1 diff" if not end else "F1 diff ci", *end), "F1 diff", sep=r" \["),
    *interval_claims(N12, r"F1 clause gains\s+", lambda key, *end: answers_pair(
        "local", "gold - rag_extractive", "F1 clause diff" if not end else "F1 clause diff ci", *end),
        "F1 clause diff", sep=r" \["),
    Claim(N12, r"As copied, plain RAG's EM is ([.\d]+)", answers_row("local", "rag_extractive", "EM")),
    Claim(N12, r"widened to the clause it is ([.\d]+)", answers_row("local", "rag_extractive", "EM clause")),
    # ---- 12 split setting: plain RAG with a web fallback, and CRAG against it
    *[Claim(N12, prefix + pattern, answers_pair("split", pair, metric + key, *i))
      for prefix, pair, metric in ((r"plain RAG gains ", WEB_PAIR, "F1 diff"),
                                   (r"CRAG still beats it by ", GRADED_PAIR, "F1 diff"),
                                   (r"CRAG still beats it by \+[.\d]+ \[[.\d]+, [.\d]+\] \(evidence ", GRADED_PAIR,
                                    "evidence diff"),
                                   (r"beats plain RAG with a web fallback, F1\s+", GRADED_PAIR, "F1 diff"))
      for pattern, key, i in ((r"(\+[.\d]+) \[", "", ()), (r"\+[.\d]+ \[([.\d]+),", " ci", (0,)),
                              (r"\+[.\d]+ \[[.\d]+, ([.\d]+)\]", " ci", (1,)))],
    Claim(N12, r"beats plain RAG by F1\s+\+([.\d]+)", answers_pair("split", CRAG_PAIR, "F1 diff")),
    Claim(N12, r"beats plain RAG by F1\s+\+[.\d]+ \[([.\d]+),", answers_pair("split", CRAG_PAIR, "F1 diff ci", 0)),
    Claim(N12, r"beats plain RAG by F1\s+\+[.\d]+ \[[.\d]+, ([.\d]+)\]",
          answers_pair("split", CRAG_PAIR, "F1 diff ci", 1)),
    Claim(N12, r"\(evidence \+([.\d]+)\)", answers_pair("split", CRAG_PAIR, "evidence diff")),
    Claim(N12, r"median time is lower \(([\d.]+) s against", answers_row("local", "crag_extractive", "s p50")),
    Claim(N12, r"lower \([\d.]+ s against ([\d.]+) s\)", answers_row("local", "rag_extractive", "s p50")),
    *[Claim(N12, prefix + pattern, answers_pair(setting_name, JUDGE_PAIR, *key))
      for prefix, setting_name, metric in ((r"its F1 difference, ", "local", "F1 diff"),
                                           (r"clause it is a measured loss,\s+", "local", "F1 clause diff"),
                                           (r"split setting F1 loses too \(", "split", "F1 diff"))
      for pattern, key in ((r"(-[.\d]+) \[", (metric,)), (r"-[.\d]+ \[(-[.\d]+),", (f"{metric} ci", 0)),
                           (r"-[.\d]+ \[-[.\d]+, (-?[.\d]+)\]", (f"{metric} ci", 1)))],
    # ---- 12: fusion's paired gain over dense search alone (bench_results/fusion.json), and batching
    *[Claim(N12, prefix + pattern, bench("fusion", "pipelines", {"pipeline": "weighted, dense share 1.0"}, *key,
                                          scale=-1))
      for prefix in (r"hybrid RRF gains ", r"hybrid RRF adds ")
      for pattern, key in ((r"\+([.\d]+)\s+\[", ("R@1 - default",)), (r"\+[.\d]+\s+\[\+([.\d]+),", ("95% CI", 1)),
                           (r"\+[.\d]+\s+\[\+[.\d]+, \+([.\d]+)\]", ("95% CI", 0)))],
    Claim(N12, r"costs ([\d.]+) s more per\s+question locally", answers_pair("local", JUDGE_PAIR, "s diff")),
    Claim(N12, r"and ([\d.]+) s more in the split\s+setting", answers_pair("split", JUDGE_PAIR, "s diff")),
    # ---- 12: held-out retrieval, the slimmed retrieval reading, CRAG's local evidence loss
    Claim(N12, r"dev split\s+\((\d+) contexts no choice", bench("retrieval_dev", "setup", "contexts")),
    Claim(N12, r"parent-child takes\s+(\d+) ms a question", pipeline(PARENT, "p50 ms")),
    Claim(N12, r"ms a question against (\d+): \"best\"", pipeline(FUSED_COMPLETE, "p50 ms")),
    Claim(N12, r"course analyzer scores recall@1 ([.\d]+)", pipeline(BM25, "R@1")),
    *metric_claims(N12, r"return their context\) reaches\s+recall@1 {}, recall@5 {}, MRR@5 {}",
                   lambda m: pipeline(PARENT, m)),
    Claim(N12, r"only (\d+)-\d+ % of\s+the time", over(SINGLES + HYBRIDS, "ctx recall@3", min, scale=100)),
    Claim(N12, r"only \d+-(\d+) % of\s+the time", over(SINGLES + HYBRIDS, "ctx recall@3", max, scale=100)),
    Claim(N12, r"gold-context bound: ([.\d]+)\)", answers_row("local", "gold", "EM clause")),
    Claim(N12, r"F1 difference with plain RAG is\s+\+([.\d]+) \[", answers_pair("local", CRAG_PAIR, "F1 diff")),
    Claim(N12, r"F1 difference with plain RAG is\s+\+[.\d]+ \[(-?[.\d]+),",
          answers_pair("local", CRAG_PAIR, "F1 diff ci", 0)),
    Claim(N12, r"F1 difference with plain RAG is\s+\+[.\d]+ \[-?[.\d]+, ([.\d]+)\]",
          answers_pair("local", CRAG_PAIR, "F1 diff ci", 1)),
    *[Claim(N12, prefix + r"(-[.\d]+) \[-[.\d]+, -[.\d]+\]", answers_pair("local", CRAG_PAIR, "evidence diff"))
      for prefix in (r"its evidence is lower, ", r"and less evidence \(")],
    *[Claim(N12, prefix + r"-[.\d]+ \[(-[.\d]+), -[.\d]+\]", answers_pair("local", CRAG_PAIR, "evidence diff ci", 0))
      for prefix in (r"its evidence is lower, ", r"and less evidence \(")],
    *[Claim(N12, prefix + r"-[.\d]+ \[-[.\d]+, (-[.\d]+)\]", answers_pair("local", CRAG_PAIR, "evidence diff ci", 1))
      for prefix in (r"its evidence is lower, ", r"and less evidence \(")],
    # ---- 12: the web fallback's later run, checked where it never searched the web (cell DRIFT_12)
    Claim(N12, r"answered (\d+) of those \d+\s+questions", output(N12, DRIFT_12, r"a different answer on (\d+)")),
    Claim(N12, r"answered \d+ of those (\d+)\s+questions", output(N12, DRIFT_12, r"never searched the web on (\d+)")),
    *[Claim(N12, r"questions differently \(F1 " + pattern, output(N12, DRIFT_12, r"answer on \d+, F1 " + pattern))
      for pattern in (r"(\+[.\d]+) \[", r"\+[.\d]+ \[(-[.\d]+),", r"\+[.\d]+ \[-[.\d]+, (\+[.\d]+)\]")],
    # ---- 12: the part of CRAG's gain over the fallback where the fallback's cutoff kept it from searching
    Claim(N12, r"About (\+[.\d]+) of it comes from", output(N12, DRIFT_12, r"never searched: (\+[.\d]+) of")),
    Claim(N12, r"of it comes from (\d+) web questions", output(N12, DRIFT_12, r"on the (\d+) web questions")),
    Claim(N12, r"passed the fallback's ([.\d]+) cutoff", CUTOFF_12),
    Claim(N12, r"a fallback at CRAG's ([.\d]+)\.", CONFIDENT),
    Claim(N12, r"\(about (\+[.\d]+) of it where the", output(N12, DRIFT_12, r"never searched: (\+[.\d]+) of")),
    Claim(N12, r"where the fallback's ([.\d]+) cutoff kept it", CUTOFF_12),
    Claim(N12, r"is a fallback at ([.\d]+)\)", CONFIDENT),
    # ---- 08 memory: the condensing benchmark (no cutoff, cell 38; answers, cell 39), re-searched live above the
    # app's cutoff (cell 41) and per follow-up (cell 43)
    *[Claim(N08, r"is first for " + before + r"(\d+) of 12", output(N08, 38, rf"(?m)^{row}\s+(\d+)/"))
      for before, row in [("", "as written"), (r"\d+ of 12 follow-ups as\s+written, ", "condensed"),
                          (r"\d+ of 12 follow-ups as\s+written, \d+ of 12 condensed and ", JOINED)]],
    *[Claim(N08, r"survives for " + before + r"(\d+) of 12", output(N08, 41, rf"(?m)^{row}\s+(\d+)/"))
      for before, row in [("", "as written"), (r"\d+ of 12 follow-ups as written, ", "condensed"),
                          (r"\d+ of 12 follow-ups as written, \d+ of 12 condensed and ", JOINED)]],
    Claim(N08, r"Condensing rescued (\d)\s+follow-ups", derived(
        f"{N08} cell 41 output, follow-ups kept condensed and not as written",
        lambda: len(re.findall(r"(?m)\s+False\s+True\s+(?:True|False)\s*$", output_text(N08, 41))))),
    *[Claim(N08, r"follow-ups and lost none, " + pattern, output(N08, 41, r"condensed minus as written: " + pattern))
      for pattern in (r"(\+[\d.]+) \[", r"\+[\d.]+ \[(\+[\d.]+),", r"\+[\d.]+ \[\+[\d.]+, (\+[\d.]+)\]")],
    *[Claim(N08, prefix + pattern, joined_minus_written_08(i))
      for prefix in (r"measured gain over searching as written: ", r"12 of 12 \(")
      for i, pattern in enumerate((r"(\+[\d.]+) \[", r"\+[\d.]+ \[(\+[\d.]+),", r"\+[\d.]+ \[\+[\d.]+, (\+[\d.]+)\]"))],
    *[Claim(N08, r"condensed minus joined (?:is )?" + pattern,
            output(N08, 41, r"condensed minus joined to the first question: " + pattern))
      for pattern in (r"(-[\d.]+) \[", r"-[\d.]+ \[(-[\d.]+),", r"-[\d.]+ \[-[\d.]+, ([+-]?[\d.]+)\]")],
    Claim(N08, r"(\d) by the model's\s+rewrite",
          output(N08, 43, r"only once condensed, by: \{.the model's rewrite.: (\d+)")),
    Claim(N08, r"(\d) by the fallback join", output(N08, 43, r"only once condensed, by: \{[^}]*'the join': (\d+)")),
    Claim(N08, r"cutoff on: (\d+) of 12 hold", output(N08, 39, r"gold answer \(condensed query, cutoff on\): (\d+)/")),
    Claim(N08, r"Of the (\d) answers that\s+were not right", derived(
        f"{N08} cell 43 output, answers wrong or refused",
        lambda: len(re.findall(r"(?m)^kept \w+\s+answer (?:wrong|refused)", output_text(N08, 43))))),
    Claim(N08, r"were not right, (\d) is a refusal after the search lost the gold file", derived(
        f"{N08} cell 43 output, refusals whose gold file was not kept",
        lambda: len(re.findall(r"(?m)^kept False\s+answer refused", output_text(N08, 43))))),
    Claim(N08, r"follow-up alone kept the gold file for (\d+) of\s+12", output(N08, 41, r"(?m)^as written\s+(\d+)/")),
    Claim(N08, r"joined to the first question, (\d+) of 12", output(N08, 41, rf"(?m)^{JOINED}\s+(\d+)/")),
    Claim(N08, r"condensing kept (\d+)\s+\(in-sample\)", output(N08, 41, r"(?m)^condensed\s+(\d+)/")),
    Claim(N08, r"rewrite passed the guard on (\d) of 12",
          output(N08, 43, r"searched with: \{.the model's rewrite.: (\d+)")),
    Claim(N08, r"passed the guard on \d of 12 follow-ups and rescued (\d+);",
          output(N08, 43, r"only once condensed, by: \{.the model's rewrite.: (\d+)")),
    Claim(N08, r"the fallback join rescued (\d+)[,.]",
          output(N08, 43, r"only once condensed, by: \{[^}]*'the join': (\d+)")),
    Claim(N08, r"the other (\d) had the gold file", derived(
        f"{N08} cell 43 output, wrong answers whose gold file was kept",
        lambda: len(re.findall(r"(?m)^kept True\s+answer (?:wrong|refused)", output_text(N08, 43))))),
    # ---- 09 CRAG beside plain RAG (extractive), paired differences
    Claim(N09, r"the floor stays at ([.\d]+) whether", output(N09, 22, r"min_strip_score=0\.1: floor ([.\d]+)")),
    Claim(N09, r"still reaches down to ([.\d]+)\.",
          output(N09, 35, r"similarity_band_then_copy \|[^|]*\|[^|]*\| 39/39 \[([.\d]+),")),
    *[Claim(N09, prefix + pattern, output(N09, 35, r"band then copy minus similarity only[^:]*: " + pattern))
      for prefix in (r"Paired against similarity alone it is a measured\s+gain, ",
                     r"a measured gain in-sample over similarity alone\s+\(")
      for pattern in (r"(\+[.\d]+) \[", r"\+[.\d]+ \[(\+[.\d]+),", r"\+[.\d]+ \[\+[.\d]+, (\+[.\d]+)\]")],
    Claim(N09, r"on the (\d+) passages the band\s+was tuned on",
          output(N09, 35, r"paired bootstrap, (\d+) passages")),
    Claim(N09, r"graded right \(the (\d) that differ\)", output(N09, 35, r"passages, (\d+) differ\)")),
    Claim(N09, r"it said yes to all (\d+) passages in section 6", output(N09, 35, r"paired bootstrap, (\d+) passages")),
    Claim(N09, r"in section 6, the (\d+) off-topic ones included",
          output(N09, 35, r"naive_yes_no \| \d+/\d+ \[[^]]*\] \| 0/(\d+) ")),
    Claim(N09, r"\]\),\s+([.\d]+) model calls against", answers_row("local", "crag_extractive", "LLM calls")),
    Claim(N09, r"\]\),\s+[.\d]+ model calls against ([.\d]+)\.", answers_row("local", "rag_extractive", "LLM calls")),
    # ---- 09: the split setting's cost, CRAG against the web fallback; what the fallback reads
    Claim(N09, r"at ([.\d]+) calls against", answers_row("split", "crag_extractive", "LLM calls")),
    Claim(N09, r"at [.\d]+ calls against ([.\d]+), mostly", answers_row("split", "rag_web_extractive", "LLM calls")),
    # ---- 09: cell 42's breakdown of CRAG minus the web fallback on the web half (both searched first, then not)
    *[Claim(N09, prefix + pattern, output(N09, 42, group + r"CRAG minus fallback, F1: " + pattern))
      for prefix, group in ((r"\.90 or above, did \(F1 ", r"above the cutoff[\s\S]*?"), (r"CRAG scored F1 ", ""))
      for pattern in (r"([-+][.\d]+) \[", r"[-+][.\d]+ \[([-+][.\d]+),", r"[-+][.\d]+ \[[-+][.\d]+, ([-+][.\d]+)\]")],
    Claim(N09, r"evidence about level \(([.\d]+) against",
          output(N09, 42, r"fallback  mean F1 [.\d]+, evidence ([.\d]+)")),
    Claim(N09, r"evidence about level \([.\d]+ against\s+([.\d]+)\)",
          output(N09, 42, r"CRAG      mean F1 [.\d]+, evidence ([.\d]+)")),
    Claim(N09, r"hands the\s+extractor the top (\d+) pages whole", bench("answers", "cmrc", "setup", "retriever k")),
    # ---- 09: the heading strip refinement kept for the RRF question (cell 12)
    Claim(N09, r"section heading, which shares the question's\s+words \(score ([.\d]+)\)",
          output(N09, 12, r"keep strip, score ([.\d]+) \(local\): ## Reciprocal")),
    *[Claim(N09, prefix + pattern, answers_pair("split", CRAG_PAIR, "s diff" + key, *i, home=home))
      for prefix, home in ((r"was measurably faster there \(", "local"),)
      for pattern, key, i in ((r"([-+][.\d]+) s \[", "", ()), (r"[-+][.\d]+ s \[([-+][.\d]+),", " ci", (0,)),
                              (r"[-+][.\d]+ s \[[-+][.\d]+, ([-+][.\d]+)\]", " ci", (1,)))],
    Claim(N09, r"makes ([.\d]+) calls on average", answers_row("split", "rag_extractive", "LLM calls", home="web")),
    Claim(N09, r"takes a median of ([.\d]+) s\.", answers_row("split", "rag_extractive", "s p50", home="web")),
    # ---- 09 time, all local: the mean paired difference beside the medians, and CRAG's two modes (cell 40)
    Claim(N09, r"CRAG minus plain RAG is\s+(-[.\d]+) s \[", answers_pair("local", CRAG_PAIR, "s diff")),
    Claim(N09, r"CRAG minus plain RAG is\s+-[.\d]+ s \[(-[.\d]+),", answers_pair("local", CRAG_PAIR, "s diff ci", 0)),
    Claim(N09, r"CRAG minus plain RAG is\s+-[.\d]+ s \[-[.\d]+, (\+[.\d]+)\]",
          answers_pair("local", CRAG_PAIR, "s diff ci", 1)),
    Claim(N09, r"the medians are ([.\d]+) s against", answers_row("local", "crag_extractive", "s p50")),
    Claim(N09, r"the medians are [.\d]+ s against ([.\d]+) s", answers_row("local", "rag_extractive", "s p50")),
    Claim(N09, r"passages \((\d+) of 200\)", output(N09, 41, r"graded correct\s+(\d+) questions")),
    Claim(N09, r"few strips,\s+a median of ([.\d]+) s", output(N09, 41, r"graded correct[^\n]*median\s+([.\d]+)")),
    Claim(N09, r"detours \((\d+) ambiguous", output(N09, 41, r"graded ambiguous\s+(\d+) questions")),
    Claim(N09, r"ambiguous, (\d+) incorrect\)", output(N09, 41, r"graded incorrect\s+(\d+) questions")),
    Claim(N09, r"take a median of ([.\d]+) s and", output(N09, 41, r"graded ambiguous[^\n]*median\s+([.\d]+)")),
    Claim(N09, r"take a median of [.\d]+ s and ([.\d]+) s",
          output(N09, 41, r"graded incorrect[^\n]*median\s+([.\d]+)")),
    Claim(N09, r"CRAG minus plain RAG: F1 (\+[.\d]+)", answers_pair("local", CRAG_PAIR, "F1 diff")),
    Claim(N09, r"CRAG minus plain RAG: F1 \+[.\d]+\s+\[(-?[.\d]+),", answers_pair("local", CRAG_PAIR, "F1 diff ci", 0)),
    Claim(N09, r"CRAG minus plain RAG: F1 \+[.\d]+\s+\[-?[.\d]+, (-?[.\d]+)\]",
          answers_pair("local", CRAG_PAIR, "F1 diff ci", 1)),
    Claim(N09, r"but evidence (-[.\d]+) \[", answers_pair("local", CRAG_PAIR, "evidence diff")),
    Claim(N09, r"but evidence -[.\d]+ \[(-[.\d]+),", answers_pair("local", CRAG_PAIR, "evidence diff ci", 0)),
    Claim(N09, r"but evidence -[.\d]+ \[-[.\d]+, (-[.\d]+)\]", answers_pair("local", CRAG_PAIR, "evidence diff ci", 1)),
    Claim(N09, r"evidence lost\s+\((-[.\d]+) \[", answers_pair("local", CRAG_PAIR, "evidence diff")),
    Claim(N09, r"evidence lost\s+\(-[.\d]+ \[(-[.\d]+),", answers_pair("local", CRAG_PAIR, "evidence diff ci", 0)),
    Claim(N09, r"web-only context \(F1 ([.\d]+) there\)", answers_row("split", "rag_extractive", "F1", home="web")),
    # ---- 09: the bars for trusting a local passage (the cutoff, and CRAG's confident similarity)
    Claim(N09, r"passed the ([.\d]+) cutoff, so the fallback", derived("E5_MIN_SIMILARITY", lambda: E5_MIN_SIMILARITY)),
    Claim(N09, r"web only for a passage at ([.\d]+) or above", CONFIDENT),
    # ---- 09 split setting: the web fallback beside plain RAG and CRAG (answers.json, cell 42's breakdown)
    *[Claim(N09, prefix + pattern, answers_pair("split", pair, metric + key, *i))
      for prefix, pair, metric in ((r"With the web fallback it gains F1 ", WEB_PAIR, "F1 diff"),
                                   (r"CRAG beats the fallback by F1 ", GRADED_PAIR, "F1 diff"),
                                   (r"CRAG beats the fallback by F1 \+[.\d]+ \[[.\d]+, [.\d]+\] \(evidence ",
                                    GRADED_PAIR, "evidence diff"),
                                   (r"beat a plain RAG with a web fallback\s+\(F1 ", GRADED_PAIR, "F1 diff"))
      for pattern, key, i in ((r"(\+[.\d]+) \[", "", ()), (r"\+[.\d]+ \[([.\d]+),", " ci", (0,)),
                              (r"\+[.\d]+ \[[.\d]+, ([.\d]+)\]", " ci", (1,)))],
    Claim(N09, r"on\s+(\d+) of the \d+ web questions", output(N09, 42, r"above the cutoff: (\d+) questions")),
    Claim(N09, r"on\s+\d+ of the (\d+) web questions", answers_row("split", "rag_web_extractive", "n", home="web")),
    Claim(N09, r"evidence loss is back \((-[.\d]+) \[",
          answers_pair("split", CRAG_PAIR, "evidence diff", home="local")),
    Claim(N09, r"evidence loss is back \(-[.\d]+ \[(-[.\d]+),",
          answers_pair("split", CRAG_PAIR, "evidence diff ci", 0, home="local")),
    Claim(N09, r"evidence loss is back \(-[.\d]+ \[-[.\d]+, (-[.\d]+)\]",
          answers_pair("split", CRAG_PAIR, "evidence diff ci", 1, home="local")),
    Claim(N08, r"A budget of 60 tokens let (\d) of", output(N08, 20, r"history_tokens= 60: (\d+) of")),
    Claim(N08, r"of Alice's (\d) earlier", output(N08, 20, r"history_tokens= 60: \d+ of (\d+)")),
    # ---- 10 agentic RAG
    # ---- 10: where the in-process agent's first step went on the documents questions (agent.json rows)
    Claim(N10, r"right on only (\d+) of the \d+ documents\s+questions", agent_first_steps("docs", "search_docs")),
    Claim(N10, r"right on only \d+ of the (\d+) documents\s+questions", agent_first_steps("docs")),
    Claim(N10, r"sent (\d+) to the web and answered", agent_first_steps("docs", "web_search")),
    Claim(N10, r"and answered (\d+) without a search", agent_first_steps("docs", "answer")),
    # ---- 10: the paired table: each row's first interval is in-process (local), the second through the server
    *[Claim(N10, prefix + pattern, output(N10, PAIRED_10, r"all \d+ paired\s+" + pattern))
      for prefix in (r"held the gold less often on all \d+\s+paired questions \(agent minus CRAG, ",)
      for pattern in (r"(-[.\d]+) \[", r"-[.\d]+ \[(-[.\d]+),", r"-[.\d]+ \[-[.\d]+, (-[.\d]+)\]")],
    # ---- 10: the per-kind table (kind x pipeline x first step, gold held), agent.json local rows
    Claim(N10, r"of the (\d+)\s+documents questions it sent to the documents",
          agent_scored("agent", "docs", "search_docs")),
    Claim(N10, r"it sent to the documents, its answer held the gold on (\d+)",
          agent_scored("agent", "docs", "search_docs", held=True)),
    Claim(N10, r"\(CRAG: (\d+) of \d+\)", agent_scored("crag", "docs", held=True)),
    Claim(N10, r"\(CRAG: \d+ of (\d+)\)", agent_scored("crag", "docs")),
    Claim(N10, r"should help: (\d+) of \d+ against", agent_scored("agent", "web", held=True)),
    Claim(N10, r"should help: \d+ of (\d+) against", agent_scored("agent", "web")),
    Claim(N10, r"against CRAG's (\d+) of \d+\.", agent_scored("crag", "web", held=True)),
    Claim(N10, r"against CRAG's \d+ of (\d+)\.", agent_scored("crag", "web")),
    Claim(N10, r"It sent (\d+) of them to the\s+documents first", agent_scored("agent", "web", "search_docs")),
    Claim(N10, r"only (\d+) of those ended with the gold", agent_scored("agent", "web", "search_docs", held=True)),
    Claim(N10, r"the (\d+) it sent to the web first all did", agent_scored("agent", "web", "web_search")),
    Claim(N10, r"the (\d+) it sent to the web first all did", agent_scored("agent", "web", "web_search", held=True)),
    # ---- 10: native tool choice through the server (qwen-local choice_native rows)
    *[Claim(N10, pattern, value) for pattern, value in (
        (r"a tool call on (\d+) of the \d+ questions that needed a search", native_choice(("docs", "web"), True)),
        (r"a tool call on \d+ of the (\d+) questions that needed a search", native_choice(("docs", "web"), False)),
        (r"right only on the\s+(\d+) that needed none", bench("agent", "qwen-local", "choice_native", "summary",
                                                             "direct", "k")),
        (r"right only on the\s+(\d+) that needed none", native_choice(("direct",), False)),
        (r"called a tool on (\d+) of\s+the \d+ labelled questions", native_choice(("docs", "web"), True)),
        (r"called a tool on \d+ of\s+the (\d+) labelled questions", native_choice(("docs", "web"), False)))],
    *[Claim(N10, pattern, output(N10, PAIRED_10, r"not tuned on, by kind: \{[^}]*'" + kind + r"': (\d+)"))
      for pattern, kind in ((r"are (\d+) web and \d+ no-lookup", "web"),
                            (r"are \d+ web and (\d+) no-lookup", "direct"))],
    Claim(N10, r"The (\d+) scored questions CRAG was not tuned on",
          output(N10, PAIRED_10, r"the (\d+) CRAG was not tuned")),
    Claim(N10, r"All (\d+) documents questions", output(N10, PAIRED_10, r"tuned on, per kind: \{'docs': (\d+)")),
    Claim(N10, r"and (\d+) of the \d+ web questions are those",
          output(N10, PAIRED_10, r"tuned on, per kind: [^|]*'web': (\d+)")),
    Claim(N10, r"and \d+ of the (\d+) web questions are those",
          output(N10, PAIRED_10, r"all questions: [^\n]*'web': (\d+)")),
    Claim(N10, r"set on (\d+) of these questions", derived(
        f"{N10} cell {PAIRED_10} output, questions CRAG was tuned on",
        lambda: sum(int(n) for n in re.findall(r": (\d+)", output_text(N10, PAIRED_10).split("|")[0])))),
    Claim(N10, r"its first step was right ([.\d]+) \[",
          bench("agent", "local", "compare", "summary", "agent", "first_step_right", "all", "rate")),
    *[Claim(N10, r"its first step was right [.\d]+ " + pattern,
            bench("agent", "local", "compare", "summary", "agent", "first_step_right", "all", "ci95", end))
      for end, pattern in ((0, r"\[([.\d]+),"), (1, r"\[[.\d]+, ([.\d]+)\]"))],
    *[Claim(N10, prefix + pattern, first_step_paired_10(i))
      for prefix in (r"\(paired, ",)
      for i, pattern in enumerate((r"([+-][.\d]+) \[", r"[+-][.\d]+ \[([+-][.\d]+),",
                                   r"[+-][.\d]+ \[[+-][.\d]+, ([+-][.\d]+)\]"))],
    *[Claim(N10, pattern, bench("agent", "qwen-local", "choice_constrained", "summary", kind, count))
      for pattern, kind in ((r"right on all (\d+) documents", "docs"), (r"and all (\d+) no-lookup questions", "direct"))
      for count in ("k", "n")],
    Claim(N10, r"on only (\d+) of the \d+ web questions",
          bench("agent", "qwen-local", "choice_constrained", "summary", "web", "k")),
    Claim(N10, r"on only \d+ of the (\d+) web questions",
          bench("agent", "qwen-local", "choice_constrained", "summary", "web", "n")),
    # ---- 13 the app
    Claim(N08, r"about (\d+) s on a 2-core CPU", cell_seconds(N08), rel=0.5),
    Claim(N09, r"about (\d+) minutes on a 2-core CPU", minutes(N09), rel=0.5),
    Claim(N13, r"about (\d+) minutes on a 2-core", minutes(N13), rel=0.5),
    Claim(N13, r"The router sends (\d+) of them", derived(
        f"{N13} cell 10 output, rows of the examples table",
        lambda: len(re.findall(r"(?m)^\d+\s+(?:save_then_retrieve|save|retrieve|unknown)\s*$", output_text(N13, 10))))),
    Claim(N13, r"stops at similarity ([\d.]+)",
          output(N13, 34, r"salad bar close\? \| hybrid[^\n]*\n\s+\w+\s+\S+\s+#\d+\s+similarity ([\d.]+)")),
    Claim(N13, r"the cutoff \(([\d.]+), chosen", CUTOFF_00),
    Claim(N13, r"here (\d) to \d: none", outputs(N13, r"LLM calls: (\d+)", min)),
    Claim(N13, r"here \d to (\d): none", outputs(N13, r"LLM calls: (\d+)", max)),
    Claim(N13, r"(\d) for a\s+follow-up\)", output(N13, 32, r"cafeteria thread[^\n]*LLM calls: (\d+)")),
    Claim(N13, r"routes the (\d+) labelled requests", bench("router", "local", "requests")),
    Claim(N13, r"opening time got faithfulness (\d)", output(N13, 28, r"wrong time\s+faithfulness (\d)")),
    Claim(N13, r"still got relevance (\d) and", output(N13, 28, r"other question\s+faithfulness \d\s+relevance (\d)")),
    Claim(N13, r"and completeness (\d)\. The support check", output(N13, 28, r"other question[^\n]*completeness (\d)")),
    Claim(N13, r"\((\d+) per action, \d+ of them", bench("router", "local", "accuracy app", "save", "n")),
    Claim(N13, r"per action, (\d+) of them in Chinese", derived("data/router_requests.json, requests with Chinese text",
          lambda: sum(has_cjk(r["request"])
                      for r in json.loads((ROOT / "data" / "router_requests.json").read_text(encoding="utf-8"))))),
    Claim(N13, r"the 1.5B model\s+alone routed (\d+) of \d+ labelled",
          bench("router", "local", "accuracy model", "all", "correct")),
    Claim(N13, r"the 1.5B model\s+alone routed \d+ of (\d+) labelled", bench("router", "local", "requests")),
    Claim(N13, r"labelled requests\s+right \[(\d+)%, \d+%\]",
          bench("router", "local", "accuracy model", "all", "95% CI", 0, scale=100)),
    Claim(N13, r"labelled requests\s+right \[\d+%, (\d+)%\]",
          bench("router", "local", "accuracy model", "all", "95% CI", 1, scale=100)),
    Claim(N13, r"app's rules (\d+) of \d+, optimistic", bench("router", "local", "accuracy app", "all", "correct")),
    Claim(N13, r"app's rules \d+ of (\d+), optimistic", bench("router", "local", "accuracy app", "all", "n")),
    Claim(N13, r"`save_then_retrieve` \((\d+) of \d+\)",
          bench("router", "local", "accuracy model", "save_then_retrieve", "correct")),
    Claim(N13, r"`save_then_retrieve` \(\d+ of (\d+)\)",
          bench("router", "local", "accuracy model", "save_then_retrieve", "n")),
    Claim(N13, r"The model alone routes (\d+) of the \d+ right",
          bench("router", "local", "accuracy model", "all", "correct")),
    Claim(N13, r"The model alone routes \d+ of the (\d+) right",
          bench("router", "local", "accuracy model", "all", "n")),
    Claim(N13, r"`save_then_retrieve` from (\d+) to \d+ of",
          bench("router", "local", "accuracy model", "save_then_retrieve", "correct")),
    Claim(N13, r"`save_then_retrieve` from \d+ to (\d+) of",
          bench("router", "local", "accuracy app", "save_then_retrieve", "correct")),
    Claim(N13, r"`save_then_retrieve` from \d+ to \d+ of (\d+) and",
          bench("router", "local", "accuracy app", "save_then_retrieve", "n")),
    Claim(N13, r"the total to (\d+) of \d+\.", bench("router", "local", "accuracy app", "all", "correct")),
    Claim(N13, r"the total to \d+ of (\d+)\.", bench("router", "local", "accuracy app", "all", "n")),
    # the takeaways repeat the wrong time's grade (cell 28) and the salad-bar similarity (cell 34)
    Claim(N13, r"wrong opening time (\d)/\d/\d", output(N13, 28, r"wrong time\s+faithfulness (\d)")),
    Claim(N13, r"wrong opening time \d/(\d)/\d", output(N13, 28, r"wrong time\s+faithfulness \d\s+relevance (\d)")),
    Claim(N13, r"wrong opening time \d/\d/(\d)", output(N13, 28, r"wrong time[^\n]*completeness (\d)")),
    Claim(N13, r"salad-bar question, whose chunk scored ([\d.]+)",
          output(N13, 34, r"salad bar close\? \| hybrid[^\n]*\n\s+\w+\s+\S+\s+#\d+\s+similarity ([\d.]+)")),
    # ---- 13 exercise 2's solution: the salad-bar chunks and the off-topic questions at a 0.84 cutoff (cell 43)
    Claim(solutions(N13), r"note pass \(([\d.]+) and [\d.]+ in section 5\)",
          output(N13, 43, r"kept \S+\s+#0\s+similarity ([\d.]+)")),
    Claim(solutions(N13), r"note pass \([\d.]+ and ([\d.]+) in section 5\)",
          output(N13, 43, r"kept \S+\s+#1\s+similarity ([\d.]+)")),
    Claim(solutions(N13), r"note pass \(([\d.]+) and [\d.]+ in section 5\)",
          output(N13, 34, r"salad bar close\? \| hybrid[^\n]*\n[^\n]*#0\s+similarity ([\d.]+)")),
    Claim(solutions(N13), r"note pass \([\d.]+ and ([\d.]+) in section 5\)",
          output(N13, 34, r"salad bar close\? \| hybrid[^\n]*\n[^\n]*\n[^\n]*#1\s+similarity ([\d.]+)")),
    Claim(solutions(N13), r"off-topic questions \(([\d.]+) and [\d.]+\) reach",
          output(N13, 43, r"off-topic ([\d.]+)\s+reaches the model")),
    Claim(solutions(N13), r"off-topic questions \([\d.]+ and ([\d.]+)\) reach",
          output(N13, 43, r"off-topic [\d.]+\s+reaches the model[^\n]*\noff-topic ([\d.]+)\s+reaches the model")),
    # ---- 02 hybrid indexing
    Claim(N02, r"\((\d+) s on an idle machine in", bench("quickstart", "setup", "index data/docs (s)")),
    # section 4, parent-child: the children and parents of the HNSW question (cells 34-35)
    Claim(N02, r"Ranks 2 and 3 are a\s+(\d+)-character header",
          output(N02, 34, r"(?m)^\d+\s+2\s+\S+\s+\S+\s+(\d+)\s*$")),
    Claim(N02, r"and a (\d+)-character fragment", output(N02, 34, r"(?m)^\d+\s+3\s+\S+\s+\S+\s+(\d+)\s*$")),
    Claim(N02, r"shared parent \((\d+) characters\)",
          output(N02, 35, r"\((\d+) chars\) of milvus_hnsw_index\.md:\s+best child: ## Build")),
    Claim(N02, r"(\d+) characters of children", output(N02, 35, r"(\d+) -> \d+ characters of context")),
    Claim(N02, r"became (\d+) of parents", output(N02, 35, r"\d+ -> (\d+) characters of context")),
    Claim(N02, r"`RAG_MAX_FILE_MB` \(default (\d+)\)", output(N02, 3, r"over the (\d+) MB limit")),
    Claim(N02, r"fills every chunk to (\d+)", output(N02, 9, r"fixed\s+\d+\s+\d+\s+\d+\s+(\d+)")),
    Claim(N02, r"Its (\d+) tiny chunks are", output(N02, 9, r"(?m)^1\s+\d+%\s+(\d+)")),
    Claim(N02, r"above the plot\): (\d+) of its", output(N02, 10, r"mid-sentence, (\d+) of them tiny")),
    Claim(N02, r"of its (\d+) mid-sentence endings", output(N02, 10, r"recursive: (\d+) chunks end mid-sentence")),
    Claim(N02, r"\((\d+)% and \d+ tiny ones", output(N02, 9, r"(?m)^2\s+(\d+)%")),
    Claim(N02, r"\(\d+% and (\d+) tiny ones", output(N02, 9, r"(?m)^2\s+\d+%\s+(\d+)")),
    Claim(N02, r"~([\d,]+)-character parents", code(N02, 34, r"parent_size=(\d+)")),
    Claim(N02, r"\((\d+) children against", output(N02, 9, r"parent_child \(children\)\s+\d+\s+(\d+)")),
    Claim(N02, r"children against (\d+) recursive", output(N02, 9, r"recursive \(default\)\s+24\s+(\d+)")),
    Claim(N02, r"Now the (\d+)\s+answerable sample questions", output(N02, 31, r"(?m)^0\s+dense\s+(\d+)")),
    Claim(N02, r"three searches on all (\d+) questions", output(N02, 31, r"(?m)^0\s+dense\s+(\d+)")),
    Claim(N02, r"first for all (\d+) questions \(hit@1", output(N02, 31, r"(?m)^0\s+dense\s+\d+\s+(\d+)")),
    Claim(N02, r"first for all (\d+) questions \(hit@1", output(N02, 31, r"(?m)^1\s+BM25\s+\d+\s+(\d+)")),
    Claim(N02, r"first for all (\d+) questions \(hit@1",
          output(N02, 31, r"(?m)^2\s+dense \+ TEXT_MATCH\s+\d+\s+(\d+)")),
    Claim(N02, r"Of the (\d+)\s+chunks returned", output(N02, 31, r"(?m)^0\s+dense\s+\d+\s+\d+\s+(\d+)")),
    Claim(N02, r"Only \d+, not (\d+):", output(N02, 31, r"(?m)^0\s+dense\s+\d+\s+\d+\s+(\d+)")),
    Claim(N02, r"Only (\d+), not \d+:", output(N02, 31, r"(?m)^2\s+dense \+ TEXT_MATCH\s+\d+\s+\d+\s+(\d+)")),
    Claim(N02, r"returned, (\d+) hold the key term", output(N02, 31, r"(?m)^0\s+dense\s+\d+\s+\d+\s+\d+\s+(\d+)")),
    Claim(N02, r"dense search and (\d+) with BM25", output(N02, 31, r"(?m)^1\s+BM25\s+\d+\s+\d+\s+\d+\s+(\d+)")),
    Claim(N02, r"the filter returns only (\d+) chunks", output(N02, 31,
                                                           r"(?m)^2\s+dense \+ TEXT_MATCH\s+\d+\s+\d+\s+(\d+)")),
    Claim(N02, r"chunks, (\d+) of\s+them holding it", output(N02, 31,
                                                        r"(?m)^2\s+dense \+ TEXT_MATCH\s+\d+\s+\d+\s+\d+\s+(\d+)")),
    Claim(N02, r"after three edits, (\d+) files were skipped", output(N02, 38,
                                                                r"after edit: .*'files skipped \(unchanged\)': (\d+)")),
    Claim(N02, r"one added, (\d+) skipped", output(N02, 38, r"after edit: .*'files skipped \(unchanged\)': (\d+)")),
    Claim(N02, r"\((\d+)% against \d+%, the table above\)", output(N02, 42, r"(?m)^0\s+\d+\s+(\d+)%")),
    Claim(N02, r"\(\d+% against (\d+)%, the table above\)", output(N02, 42, r"(?m)^1\s+\d+\s+(\d+)%")),
    Claim(N02, r"\((\d+)% against \d+%\); CMRC", output(N02, 42, r"(?m)^0\s+\d+\s+\d+%\s+(\d+)%")),
    Claim(N02, r"\(\d+% against (\d+)%\); CMRC", output(N02, 42, r"(?m)^1\s+\d+\s+\d+%\s+(\d+)%")),
    Claim(N02, r"the (\d+) CMRC\s+paragraphs", bench("components", "setup", "contexts")),
    Claim(N02, r"\(R@1 ([\d.]+) both", component("RecursiveCharacterTextSplitter defaults + hybrid", "R@1 langchain")),
    Claim(N02, r"\(R@1 ([\d.]+) both", component("RecursiveCharacterTextSplitter defaults + hybrid", "R@1 rag_lib")),
    Claim(N02, r"both,\s+difference \+([\d.]+), 95% CI", component("RecursiveCharacterTextSplitter defaults + hybrid",
                                                               "R@1 diff")),
    Claim(N02, r"95% CI\s+\[-([\d.]+), \+[\d.]+\]\): no measurable", bench(
        "components", "pairs", {"job": "chunking 300/50"}, "R@1 diff 95% CI", 0, scale=-1)),
    Claim(N02, r"95% CI\s+\[-[\d.]+, \+([\d.]+)\]\): no measurable", bench(
        "components", "pairs", {"job": "chunking 300/50"}, "R@1 diff 95% CI", 1)),
    Claim(N02, r"the default (\d+)% of the\s+chunks end mid-sentence", mid_sentence(LC_SPLITTER)),
    Claim(N02, r"end mid-sentence against (\d+)% with the course's", mid_sentence(OUR_SPLITTER)),
    Claim(N02, r"with hybrid search on ([\d,]+) questions", bench(
        "components", "pairs", {"job": "chunking 300/50"}, "questions")),
    # ---- 04 hybrid search
    # section 1: the fusions of one paraphrase
    Claim(N04, r"fused score of ([\d.]+) \(section 1\)", RAW_TOP_04),
    Claim(N04, r"tenth spans 0\.1 × \(([\d.]+) − ", ranked_04(1, bm25=True)),
    Claim(N04, r"tenth spans 0\.1 × \([\d.]+ − ([\d.]+)\)", ranked_04(5, bm25=True)),
    Claim(N04, r"nine tenths 0\.9 × \(([\d.]+) − ", ranked_04(1)),
    Claim(N04, r"nine tenths 0\.9 × \([\d.]+ − ([\d.]+)\)", ranked_04(5)),
    Claim(N04, r"cosines lie within [\d.]+ of each other \(([\d.]+) to",
          ranked_04(1)),
    Claim(N04, r"of each other \([\d.]+ to ([\d.]+)\)", ranked_04(5)),
    Claim(N04, r"cosines lie within ([\d.]+) of each other",
          derived(f"{N04} cell 10 output, dense scores 1st minus 5th",
                  lambda: ranked_04(1).get()
                  - ranked_04(5).get())),
    Claim(N04, r"BM25 scores run from ([\d.]+) to", ranked_04(1, bm25=True)),
    Claim(N04, r"BM25 scores run from [\d.]+ to ([\d.]+)\.",
          ranked_04(5, bm25=True)),
    # section 2: the hand-made queries (cell 23 counts the ranks table of cell 22)
    Claim(N04, r"BM25 ranks the right file first on (\d) of the \d \(second", summary_04("sparse", "keyword", "first")),
    Claim(N04, r"BM25 ranks the right file first on \d of the (\d) \(second", summary_04("sparse", "keyword", "of")),
    Claim(N04, r"dense ranks the right file first on (\d) of the \d; BM25", summary_04("dense", "paraphrase", "first")),
    Claim(N04, r"dense ranks the right file first on \d of the (\d); BM25", summary_04("dense", "paraphrase", "of")),
    Claim(N04, r"of the \d; BM25 on (\d), because", summary_04("sparse", "paraphrase", "first")),
    Claim(N04, r"but first on only (\d) of the \d \(BM25 alone", summary_04("RRF", "keyword", "first")),
    Claim(N04, r"but first on only \d of the (\d) \(BM25 alone", summary_04("RRF", "keyword", "of")),
    Claim(N04, r"\(BM25 alone: (\d)\):", summary_04("sparse", "keyword", "first")),
    Claim(N04, r"gets 1/62 \+ 1/62 = ([\d.]+), against", output(N04, 40, r"by hand ([\d.]+)")),
    Claim(N04, r"against 1/63 \+ 1/63 = ([\d.]+) for",
          output(N04, 40, r"by hand [\d.]+ \| Milvus [\d.]+\s+True \| by hand ([\d.]+)")),
    Claim(N04, r"ranks it first on (\d) keywords and \d paraphrases", summary_04("min-max", "keyword", "first")),
    Claim(N04, r"ranks it first on \d keywords and (\d) paraphrases", summary_04("min-max", "paraphrase", "first")),
    Claim(N04, r"top 3 on all (\d+) queries", derived(f"{N04} cell 24 output, min-max top-3 counts, both kinds",
                                                      lambda: sum(summary_04("min-max", k, "top 3").get()
                                                                  for k in ("keyword", "paraphrase")))),
    Claim(N04, r"top 3 on all (\d+) queries", derived(f"{N04} cell 24 output, queries of both kinds",
                                                      lambda: sum(summary_04("min-max", k, "of").get()
                                                                  for k in ("keyword", "paraphrase")))),
    Claim(N04, r"BM25 ranks the right file first on (\d) of \d\s+keywords", summary_04("sparse", "keyword", "first")),
    Claim(N04, r"BM25 ranks the right file first on \d of (\d)\s+keywords", summary_04("sparse", "keyword", "of")),
    Claim(N04, r"dense ranks it first on (\d) of \d paraphrases", summary_04("dense", "paraphrase", "first")),
    Claim(N04, r"dense ranks it first on \d of (\d) paraphrases", summary_04("dense", "paraphrase", "of")),
    Claim(N04, r"paraphrases and BM25 on (\d) \(section 2\)", summary_04("sparse", "paraphrase", "first")),
    # section 3: bench_results/fusion.json
    Claim(N04, r"Measure it on ([\d,]+) questions", bench("fusion", "setup", "questions")),
    Claim(N04, r"the ([\d,]+) questions of the CMRC 2018 trial", bench("fusion", "setup", "questions")),
    Claim(N04, r"What the ([\d,]+) questions say", bench("fusion", "setup", "questions")),
    Claim(N04, r"On ([\d,]+) CMRC questions", bench("fusion", "setup", "questions")),
    Claim(N04, r"comprehension, (\d+) chunks of 300", bench("fusion", "setup", "chunks")),
    Claim(N04, r"BM25 in Milvus scores R@1 ([\d.]+)", fusion_row("BM25 (jieba, Milvus)", "R@1")),
    Claim(N04, r"dense alone \(dense share 1\.0\) ([\d.]+)", fusion_row("weighted, dense share 1.0", "R@1")),
    Claim(N04, r"hybrid RRF ([\d.]+); both single", fusion_row("hybrid RRF k=60", "R@1")),
    Claim(N04, r"hybrid RRF \(([\d.]+)\) beats", fusion_row("hybrid RRF k=60", "R@1")),
    Claim(N04, r"beats BM25 \(([\d.]+)\)", fusion_row("BM25 (jieba, Milvus)", "R@1")),
    Claim(N04, r"and dense \(([\d.]+)\);", fusion_row("weighted, dense share 1.0", "R@1")),
    Claim(N04, r"Every `k` from (\d+) to \d+ gives the same",
          derived("fusion.json: smallest k whose R@1 equals k=60's", lambda: min(
              k for k in (1, 5, 20, 60, 200, 1000)
              if fusion_value(f"hybrid RRF k={k}", "R@1") == fusion_value("hybrid RRF k=60", "R@1")))),
    Claim(N04, r"Every `k` from \d+ to (\d+) gives the same",
          derived("fusion.json: largest k whose R@1 equals k=60's", lambda: max(
              k for k in (1, 5, 20, 60, 200, 1000)
              if fusion_value(f"hybrid RRF k={k}", "R@1") == fusion_value("hybrid RRF k=60", "R@1")))),
    *interval_claims(N04, r"`k = 1` gives ", fusion_diff_04("hybrid RRF k=1"), "R@1 - default"),
    *interval_claims(N04, r"`k = 5` gives ", fusion_diff_04("hybrid RRF k=5"), "R@1 - default"),
    Claim(N04, r"dense share of 0\.5 scores ([\d.]+),", fusion_row("weighted, dense share 0.5", "R@1")),
    *interval_claims(N04, r"dense share of 0\.5 scores [\d.]+, ", fusion_diff_04("weighted, dense share 0.5"),
                     "R@1 - default", sep=r"\s+\["),
    *interval_claims(N04, r"min-max at about equal weights is level with it or a little above \(",
                     fusion_diff_04("weighted, dense share 0.5"), "R@1 - default", suffix=" at 0.5"),
    *interval_claims(N04, r"0\.6 gives ", fusion_diff_04("weighted, dense share 0.6"), "R@1 - default"),
    Claim(N04, r"and 0\.4 \+([\d.]+): no", fusion_row("weighted, dense share 0.4", "R@1 - default")),
    # the exercises' answers, written as comments in their solution cells
    Claim(solutions(N04), r"2nd in both lists: 2 / 62 = ([\d.]+)", output(N04, 40, r"by hand ([\d.]+)")),
    Claim(solutions(N04), r"on all (\d+) questions \(MRR", output(N04, 42, r"(\d+) questions \|")),
    Claim(solutions(N04), r"\(MRR ([\d.]+)\)", output(N04, 42, r"'min-max': ([\d.]+)")),
    Claim(solutions(N04), r"RRF and raw \(([\d.]+) = ", output(N04, 42, r"'sparse': ([\d.]+)")),
    Claim(solutions(N04), r"RRF and raw \(([\d.]+) = ", output(N04, 42, r"'RRF': ([\d.]+)")),
    Claim(solutions(N04), r"RRF and raw \(([\d.]+) = ", output(N04, 42, r"'raw': ([\d.]+)")),
    Claim(solutions(N04), r"dense \(([\d.]+) = ", output(N04, 42, r"'dense': ([\d.]+)")),
    Claim(solutions(N04), r"= [\d.]+ / (\d+)\)", output(N04, 42, r"(\d+) questions \|")),
    Claim(solutions(N04), r"second on two questions \((\d+) and", output(N04, 42, r"'dense': \{(\d+): 2, \d+: 2\}")),
    Claim(solutions(N04), r"second on two questions \(\d+ and (\d+)\)",
          output(N04, 42, r"'dense': \{\d+: 2, (\d+): 2\}")),
    # ---- 05 query transformation
    Claim(N05, r"about ([\d.]+) minutes? on a 2-core", minutes(N05), rel=0.5),
    Claim(N05, r"measurement on (\d+) questions is read", set_size_05(CROSS_05)),
    Claim(N05, r"(\d+) chunks per\s+question", K_05),
    Claim(N05, r"All (\d+) sample questions find", SAMPLE_05),
    Claim(N05, r"Of the (\d+) hard ones", HARD_COUNT_05),
    Claim(N05, r"hard ones, (\d+) miss", MISSED_05),
    Claim(N05, r"cross-lingual\s+question ranks its file (\d+)th",
          output(N05, 9, r"reranking_cross_encoders_zh\.md\s+(\d+)")),
    Claim(N05, r"The (\d+) same-language ones rank", derived(
        f"{N05} cell 9 output, hard questions asked in their document's language",
        lambda: float(len(re.findall(r"(en -> en|zh -> zh)", output_text(N05, 9)))))),
    Claim(N05, r"same-language ones rank it (\d+)nd", same_language_rank_05(max)),
    Claim(N05, r"same-language ones rank it (\d+)nd", same_language_rank_05(min)),
    Claim(N05, r"\(section 2\) ranked it (\d+)st", output(N05, 15, r"第二阶段重新排序候选人。\s+(\d+)")),
    Claim(N05, r"output, (\d+) tokens at most",
          source_constant("rag_lib/experiments/advanced.py", r"Terms, max_tokens=(\d+)")),
    Claim(N05, r"\(rank (\d) and rank \d; asked", output(N05, 15, r"(?m)^0\s.*\s(\d+)\s*$")),
    Claim(N05, r"\(rank \d and rank (\d); asked", output(N05, 15, r"(?m)^1\s.*\s(\d+)\s*$")),
    Claim(N05, r"the second ranks it (\d)th\)", output(N05, 15, r"(?m)^1\s.*?\?\s+(\d+)\s")),
    Claim(N05, r"\(rank (\d) -> \d\)", output(N05, 22, r"搜索？\s+(\d+)")),
    Claim(N05, r"\(rank \d -> (\d)\)", output(N05, 22, r"union \(best score per chunk\)\s+(\d+)")),
    Claim(N05, r"ranks it only\s+(\d)th, because", output(N05, 22, r"RRF over the queries\s+(\d+)")),
    Claim(N05, r"for the same (\d+) places", K_05),
    Claim(N05, r"reranking\s+document: rank (\d)", output(N05, HYDE_CELL_05, r"Chinese: rank (\d+)")),
    # ---- 05, exercise 1: the cross-lingual hard questions per search path
    Claim(solutions(N05), r"Of the (\d+) cross-lingual questions", derived(
        f"{N05} cell {PATHS_05} output, cross-lingual rows", lambda: len(rows_of(N05, PATHS_05, CROSS_ROW_05)))),
    Claim(solutions(N05), r"BM25 one \(row (\d+), rank", derived(
        f"{N05} cell {PATHS_05} output, the cross-lingual row BM25 ranks", lambda: float(
            next(r[0] for r in rows_of(N05, PATHS_05, CROSS_ROW_05) if r[4] != "-")))),
    Claim(solutions(N05), r"BM25 one \(row \d+, rank (\d+)\)", derived(
        f"{N05} cell {PATHS_05} output, BM25's rank on the one cross-lingual row it finds", lambda: float(
            next(r[4] for r in rows_of(N05, PATHS_05, CROSS_ROW_05) if r[4] != "-")))),
    # ---- 05, section 6: the benchmark on the cross-lingual questions (bench_results/advanced.json)
    Claim(N05, r"the (\d+) answerable sample questions translated", set_size_05(TRANSLATED_05)),
    Claim(N05, r"plus the (\d+) hard ones", set_size_05(HARD_SET_05)),
    Claim(N05, r"hard ones, (\d+) questions in all", set_size_05(CROSS_05)),
    Claim(N05, r"questions in all \((\d+) cross-lingual,", crosslingual_05(False)),
    Claim(N05, r"cross-lingual, (\d+) vague same-language\)", crosslingual_05(True)),
    Claim(N05, r"control, the (\d+) sample questions as\s+written", set_size_05(WRITTEN_05)),
    Claim(N05, r"Reading the tables \(the (\d+) questions,", set_size_05(CROSS_05)),
    Claim(N05, r"Reading the tables \(the \d+ questions, (\d+) of them cross-lingual", crosslingual_05(False)),
    Claim(N05, r"On the (\d+) translated sample questions, not", set_size_05(TRANSLATED_05)),
    Claim(N05, r"alone takes recall@3 from ([\d.]+) to", advanced_05(BASE_05, TRANSLATED_05, "recall@3")),
    Claim(N05, r"alone takes recall@3 from [\d.]+ to ([\d.]+)", advanced_05(TRANSLATION_05, TRANSLATED_05, "recall@3")),
    *diff_claims_05(r"alone takes recall@3 from [\d.]+ to [\d.]+, ", TRANSLATION_05, TRANSLATED_05),
    Claim(N05, r"On all (\d+), hard ones included", set_size_05(CROSS_05)),
    Claim(N05, r"the\s+(\d+) hard ones were selected", set_size_05(HARD_SET_05)),
    Claim(N05, r"so the (\d+) translated ones are", set_size_05(TRANSLATED_05)),
    Claim(N05, r"included: recall@3 from ([\d.]+) to [\d.]+, [+-]", advanced_05(BASE_05, CROSS_05, "recall@3")),
    Claim(N05, r"included: recall@3 from [\d.]+ to ([\d.]+), [+-]", advanced_05(TRANSLATION_05, CROSS_05, "recall@3")),
    *interval_claims(N05, r"included: recall@3 from [\d.]+ to [\d.]+, ",
                     lambda *m: advanced_05(TRANSLATION_05, CROSS_05, *m),
                     "recall@3 diff", sep=r",\s+95% CI \["),
    Claim(N05, r"short LLM call \(([\d.]+) s per", advanced_05(TRANSLATION_05, CROSS_05, "seconds")),
    Claim(N05, r"as\s+written from\s+recall@3 ([\d.]+) to", advanced_05(BASE_05, WRITTEN_05, "recall@3")),
    Claim(N05, r"as\s+written from\s+recall@3 [\d.]+ to ([\d.]+)", advanced_05(TRANSLATION_05, WRITTEN_05, "recall@3")),
    *diff_claims_05(r"as\s+written from\s+recall@3 [\d.]+ to [\d.]+ \(", TRANSLATION_05, WRITTEN_05),
    Claim(N05, r"The union keeps them all and reaches ([\d.]+) on", advanced_05(UNION_05, CROSS_05, "recall@3")),
    Claim(N05, r"reaches [\d.]+ on the (\d+)\.", set_size_05(CROSS_05)),
    # the union's price on the 37 and what it buys back on the sample as written (section 7 and the takeaways)
    Claim(N05, r"\(MRR@10 ([\d.]+) against [\d.]+[;,] ", advanced_05(UNION_05, CROSS_05, "MRR@10")),
    Claim(N05, r"\(MRR@10 [\d.]+ against ([\d.]+)[;,] ", advanced_05(TRANSLATION_05, CROSS_05, "MRR@10")),
    *interval_claims(N05, r"RR@10, translation minus union, ", paired_union_05(TRANSLATION_05, "RR@10"), "diff"),
    *interval_claims(N05, r"against [\d.]+, difference ", paired_union_05(TRANSLATION_05, "RR@10"), "diff"),
    Claim(N05, r"MRR@10: translation ([\d.]+), union", advanced_05(TRANSLATION_05, WRITTEN_05, "MRR@10")),
    Claim(N05, r"MRR@10: translation [\d.]+, union ([\d.]+)\)", advanced_05(UNION_05, WRITTEN_05, "MRR@10")),
    *interval_claims(N05, r"multi-query changes recall@3 by\s+", against_union_05(MULTI_QUERY_05), "diff"),
    Claim(N05, r"no measurable difference on (\d+) questions, at", set_size_05(CROSS_05)),
    *interval_claims(N05, r"instead of the union changes\s+recall@3 by ", paired_union_05(RRF_05), "diff"),
    Claim(N05, r"at about (\d+) times its time", MULTI_QUERY_COST_05, rel=0.2),
    Claim(N05, r"its time\s+\(([\d.]+) vs", advanced_05(MULTI_QUERY_05, CROSS_05, "seconds")),
    Claim(N05, r"vs\s+([\d.]+) s per question\)", advanced_05(UNION_05, CROSS_05, "seconds")),
    *interval_claims(N05, r"in the question's language\s+", against_union_05(HYDE_Q_05), "diff"),
    *interval_claims(N05, r"in the other language ", against_union_05(HYDE_O_05), "diff"),
    *diff_claims_05(r"question's language is a measured loss \(", HYDE_Q_05, CROSS_05),
    *diff_claims_05(r"in the other language,\s+", HYDE_O_05, CROSS_05),
    Claim(N05, r"Only (\d+)% of\s+those",
          bench("advanced", "setup", "replies in the other language", "hyde other language", scale=100)),
    Claim(N05, r"about ([\d.]+) wide on each side", half_width_05(TRANSLATION_05, CROSS_05), tol=0.05),
    Claim(N05, r"wide on each side on (\d+) questions", set_size_05(CROSS_05)),
    # ---- 05, takeaways
    Claim(N05, r"first;\s+(\d+) hand-written", HARD_COUNT_05),
    Claim(N05, r"miss it (\d+) times", MISSED_05),
    Claim(N05, r"recall@3 ([\d.]+) -> [\d.]+ \(", advanced_05(BASE_05, TRANSLATED_05, "recall@3")),
    Claim(N05, r"recall@3 [\d.]+ -> ([\d.]+) \(", advanced_05(UNION_05, TRANSLATED_05, "recall@3")),
    *diff_claims_05(r"recall@3 [\d.]+ -> [\d.]+ \(", UNION_05, TRANSLATED_05),
    Claim(N05, r"\]\) on the (\d+) translated sample", set_size_05(TRANSLATED_05)),
    Claim(N05, r"and ([\d.]+) -> [\d.]+\s+\(", advanced_05(BASE_05, CROSS_05, "recall@3")),
    Claim(N05, r"and [\d.]+ -> ([\d.]+)\s+\(", advanced_05(UNION_05, CROSS_05, "recall@3")),
    *diff_claims_05(r"and [\d.]+ -> [\d.]+\s+\(", UNION_05, CROSS_05),
    Claim(N05, r"\]\) on all (\d+) questions \(\d+ cross-lingual\)", set_size_05(CROSS_05)),
    Claim(N05, r"\]\) on all \d+ questions \((\d+) cross-lingual\)", crosslingual_05(False)),
    Claim(N05, r"at (\d+) times the time", MULTI_QUERY_COST_05, rel=0.2),
    *diff_claims_05(r"worse than the hybrid baseline\s+\(", HYDE_Q_05, CROSS_05),
]



def answers_load(statistic: str) -> Value:
    """The 1-minute load over the answer benchmark's rows: the mean over both settings' means, or the max."""
    def get() -> float:
        loads = [v["load_1min over the rows"] for v in results("answers")["cmrc"]["setup"]["settings"].values()]
        return max(x["max"] for x in loads) if statistic == "max" else sum(x["mean"] for x in loads) / len(loads)

    return derived(f"bench_results/answers.json, {statistic} 1-minute load over the rows", get)


# The answer section of docs/benchmarks.md, generated by rag_lib.experiments.leaderboard (its tables:
# test_benchmark_answer_tables_are_the_json); these read the JSON independently of the generator.
CLAIMS += [
    Claim(BENCHMARKS, r"holds all \*\*(\d+) questions\*\*", bench("answers", "cmrc", "setup", "questions")),
    Claim(BENCHMARKS, r"a 1-minute load of ([\d.]+) on average", answers_load("mean")),
    Claim(BENCHMARKS, r"on average \(([\d.]+) at most\)", answers_load("max")),
    Claim(BENCHMARKS, r"split setting\*\* \(F1 \+([.\d]+) \[", answers_pair("split", CRAG_PAIR, "F1 diff")),
    Claim(BENCHMARKS, r"split setting\*\* \(F1 \+[.\d]+ \[\+([.\d]+),",
          answers_pair("split", CRAG_PAIR, "F1 diff ci", 0)),
    Claim(BENCHMARKS, r"split setting\*\* \(F1 \+[.\d]+ \[\+[.\d]+, \+([.\d]+)\]",
          answers_pair("split", CRAG_PAIR, "F1 diff ci", 1)),
    Claim(BENCHMARKS, r"reaches \*\*F1 ([.\d]+) and EM", answers_row("local", "rag_extractive", "F1 clause")),
    Claim(BENCHMARKS, r"reaches \*\*F1 [.\d]+ and EM ([.\d]+) with",
          answers_row("local", "rag_extractive", "EM clause")),
    Claim(BENCHMARKS, r"\(as copied: F1 ([.\d]+), EM", answers_row("local", "rag_extractive", "F1")),
    Claim(BENCHMARKS, r"\(as copied: F1 [.\d]+, EM ([.\d]+)\)", answers_row("local", "rag_extractive", "EM")),
    Claim(BENCHMARKS, r"gold-context bound \(([.\d]+) / [.\d]+\)", answers_row("local", "gold", "F1 clause")),
    Claim(BENCHMARKS, r"gold-context bound \([.\d]+ / ([.\d]+)\)", answers_row("local", "gold", "EM clause")),
    Claim(BENCHMARKS, r"is\s+the limit \(evidence ([.\d]+)\)", answers_row("local", "rag_extractive", "evidence")),
    Claim(BENCHMARKS, r"at about (\d+) tokens per second",
          bench("answers", "cmrc", "where the seconds go", "overall", "prompt tokens read per s")),
    *interval_claims(BENCHMARKS, r"single-passage questions \(F1 ", lambda key, *end: answers_pair(
        "local", JUDGE_PAIR, "F1 diff ci" if end else key, *end), "F1 diff", sep=r" \[", suffix=r"\)"),
    Claim(BENCHMARKS, r"\) for ([\d.]+) s more\s+per question", answers_pair("local", JUDGE_PAIR, "s diff")),
]

def split_runs(pipeline: str, home: str = "") -> dict[str, dict]:
    """The answer benchmark's split-setting rows of one pipeline by question id (`home`: only the questions whose
    paragraph is `local` or `web`)."""
    lines = (BENCH / "answers_runs" / "split.jsonl").read_text(encoding="utf-8").splitlines()
    rows = (json.loads(line) for line in lines if line.strip())
    return {r["id"]: r for r in rows if r["pipeline"] == pipeline and not r["error"] and home in ("", r["home"])}


def never_searched(what: str) -> Value:
    """On the split questions where plain RAG with a web fallback searched no web page: their count ("n"), how many
    of its answers differ from plain RAG's ("changed"), its mean F1 minus plain RAG's ("f1")."""
    def get() -> float:
        fallback, plain = split_runs("rag_web_extractive"), split_runs("rag_extractive")
        ids = [i for i, r in fallback.items() if not r["web_pages"] and i in plain]
        if what == "n":
            return float(len(ids))
        if what == "changed":
            return float(sum(fallback[i]["answer"] != plain[i]["answer"] for i in ids))
        return sum(fallback[i]["f1"] - plain[i]["f1"] for i in ids) / len(ids)

    return derived(f"answers_runs/split.jsonl, fallback rows with no web page: {what}", get)


def web_half_mean(pipeline: str, field: str) -> Value:
    """The mean of a row field (prompt_tokens, llm_calls) over a pipeline's split-setting web half."""
    def get() -> float:
        rows = split_runs(pipeline, "web").values()
        return sum(r[field] for r in rows) / len(rows)

    return derived(f"answers_runs/split.jsonl, {pipeline} on the web half, mean {field}", get)


CLAIMS += [
    Claim(BENCHMARKS, r"On the (\d+) questions where it never searched", never_searched("n")),
    Claim(BENCHMARKS, r"yet (\d+) of its answers differ", never_searched("changed")),
    Claim(BENCHMARKS, r"differ from plain RAG's: F1 ([+-][.\d]+) \[", never_searched("f1")),
    Claim(BENCHMARKS, r"\((\d+) prompt tokens per question on the web",
          web_half_mean("rag_web_extractive", "prompt_tokens")),
    Claim(BENCHMARKS, r"on the web half over ([\d.]+) calls", web_half_mean("rag_web_extractive", "llm_calls")),
    Claim(BENCHMARKS, r"against CRAG's (\d+) over", web_half_mean("crag_extractive", "prompt_tokens")),
    Claim(BENCHMARKS, r"against CRAG's \d+ over ([\d.]+)\)", web_half_mean("crag_extractive", "llm_calls")),
]

ANSWER_PIPELINES = {"llm_only": "LLM only", "rag_extractive": "plain RAG", "crag_extractive": "Corrective RAG",
                    "judge_extractive": "RAG with judge", "gold": "gold context (the bound)"}


def two_places(value: float, signed: bool = False) -> str:
    """A share as the benchmarks page writes it: .47, -.02, +.10 (signed), 1.00, and .00 for any zero."""
    text = f"{value:+.2f}" if signed else f"{value:.2f}"
    text = text.replace("0.", ".", 1) if abs(value) < 0.995 else text
    return ".00" if text in ("+.00", "-.00") else text


def with_interval(value: float, interval: list[float], form: Callable[[float], str],
                  end: Callable[[float], str] | None = None) -> str:
    """`value [low, high]`, the value written by `form`, the ends by `end` (default: `form` too)."""
    if end and value == 0 and list(interval) == [0, 0]:  # a paired difference where no question changed
        return "no question changed"
    end = end or form
    return f"{form(value)} [{end(interval[0])}, {end(interval[1])}]"


def signed_end(value: float) -> str:
    """A paired interval's end as the page writes it: two signed places, three when two would show a nonzero end
    as .00 (the third digit says which side of zero the interval lies on), and 0 for an end exactly at zero."""
    if value == 0:
        return "0"
    text = two_places(value, signed=True)
    return f"{value:+.3f}".replace("0.", ".", 1) if text == ".00" and value else text


def answer_table_lines() -> list[str]:
    """The rows of the benchmarks page's answer tables, rendered here from bench_results/answers.json."""
    data = results("answers")["cmrc"]
    share, signed = two_places, lambda v: two_places(v, signed=True)
    lines = []
    for setting_name in ("local", "split"):
        for key, label in ANSWER_PIPELINES.items():
            r = walk(data["summary"], ({"setting": setting_name, "context in": "all", "pipeline": key},))
            cells = [with_interval(r[m], r[f"{m} ci"], share)
                     for m in ("F1", "EM", "F1 clause", "EM clause", "evidence")]
            lines.append(f"| {label} | {r['n']} | " + " | ".join(cells) + f" | {r['LLM calls']:.1f} | "
                         + with_interval(r["s p50"], r["s p50 ci"], lambda v: f"{v:.1f}") + " |")
    for setting_name, home in (("local", "all"), ("split", "all"), ("split", "web")):
        for comparison, label in ((CRAG_PAIR, "CRAG - plain RAG"), (JUDGE_PAIR, "judge - plain RAG")):
            r = walk(data["paired"], ({"setting": setting_name, "context in": home, "comparison": comparison},))
            cells = [with_interval(r[m], r[f"{m} ci"], signed, signed_end)
                     for m in ("F1 diff", "EM clause diff", "evidence diff")]
            lines.append(f"| {setting_name} | {home} | {label} | {r['n']} | " + " | ".join(cells) + " | "
                         + with_interval(r["s diff"], r["s diff ci"], lambda v: f"{v:+.1f}") + " |")
    return lines


# Prose that must not appear: files outside the repo, or how the course was made.
FORBIDDEN = [r"STACK\.md", r"\.\./shared", r"/work/", r"\byardsticks?\b", r"\bsessions?\b", r"\bthe issue\b"]
CHECKED = sorted({c.notebook for c in CLAIMS if not c.notebook.endswith(SOLUTIONS)} - {BENCHMARKS})  # the notebooks


@pytest.mark.parametrize("claim", CLAIMS, ids=str)
def test_prose_number_matches_its_source(claim: Claim) -> None:
    problems = check(claim, prose(claim.notebook))
    assert not problems, "\n".join(problems)


def far_from(written: str) -> str:
    """A number clearly different from `written`, with as many decimals (moved away from zero, so a negative
    number cannot land back on itself)."""
    value, half_unit = parse(written)
    decimals = max(0, -round(math.log10(2 * half_unit)))
    return f"{value * 3 + math.copysign(20 * half_unit, value):.{decimals}f}"


@pytest.mark.parametrize("claim", CLAIMS, ids=str)
def test_an_edited_number_is_caught(claim: Claim) -> None:
    text = prose(claim.notebook)
    match = re.search(claim.pattern, text)
    assert match, f"{claim}: pattern not found"
    edited = text[: match.start(1)] + far_from(match.group(1)) + text[match.end(1):]
    assert check(claim, edited), f"{claim}: an edited number went unnoticed"


def test_an_edited_notebook_file_fails(tmp_path: Path) -> None:
    """End to end on a file: a copy of notebook 12 whose slice recall was mistyped fails its claims."""
    copy = tmp_path / f"{N12}.ipynb"
    shutil.copy(NOTEBOOKS / f"{N12}.ipynb", copy)
    nb = json.loads(copy.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and "top MRR@5" in "".join(c["source"]))
    cell["source"] = [line.replace("top MRR@5 (.983)", "top MRR@5 (.938)") for line in cell["source"]]
    copy.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")
    edited = markdown(json.loads(copy.read_text(encoding="utf-8")))
    problems = [p for claim in CLAIMS if claim.notebook == N12 for p in check(claim, edited)]
    assert len(problems) == 1 and ".938" in problems[0], problems


@pytest.mark.parametrize("name", CHECKED)
def test_prose_speaks_to_the_learner(name: str) -> None:
    text = markdown(notebook(name))
    found = [m.group(0) for pattern in FORBIDDEN for m in re.finditer(pattern, text, flags=re.IGNORECASE)]
    assert not found, f"{name}: the prose mentions {found}: cite files in the repo and speak about the subject only"


@pytest.mark.parametrize("name", CHECKED)
def test_every_checked_notebook_ends_with_sources_and_exercises(name: str) -> None:
    text = markdown(notebook(name))
    assert "## Sources" in text and "## Exercises" in text, f"{name}: add a Sources and an Exercises section"
    hidden = [c for c in notebook(name)["cells"] if c["cell_type"] == "code"
              and "solution" in c["metadata"].get("tags", []) and c["metadata"].get("jupyter", {}).get("source_hidden")]
    solutions = text.count("<details><summary>Solution</summary>") + len(hidden)
    assert solutions >= 2, f"{name}: give worked solutions, collapsed (code cells tagged solution, source hidden)"


def test_benchmark_answer_tables_are_the_json() -> None:
    """Every row of the benchmarks page's answer tables as bench_results/answers.json renders it."""
    missing = [line for line in answer_table_lines() if line not in prose(BENCHMARKS)]
    rerun = "run python -m rag_lib.experiments.leaderboard"
    assert not missing, f"rows not in docs/benchmarks.md ({rerun}):\n" + "\n".join(missing)


# Notebook 14: the numbers of its markdown, takeaways included, against its outputs, the JSON and, for the intervals
# the leaderboard bootstraps from per-question rows, rag_lib.experiments.leaderboard (which reads the JSON only).
N14 = "14_technique_leaderboard"
SPLIT_14, PAIRED_14, DEV_14, WEB_PARTS_14 = 12, 14, 16, 26  # cells printing the split front, the paired table and
# grader actions, the dev split, and exercise 4's split of the web half
COMPLETE_14 = ("per-context fusion", "all", "per-context fusion, every candidate scored by every search")


def complete_vs_fusion(*end: int) -> Value:
    """The fully scored fusion minus the plain fusion on the trial questions (retrieval.json stores the reverse)."""
    if not end:
        return bench("retrieval", *COMPLETE_14, "fused - this, R@1", scale=-1)
    return bench("retrieval", *COMPLETE_14, "fused - this, R@1 95% CI", 1 - end[0], scale=-1)


def p50_14(pipeline: str) -> Value:
    return bench("retrieval", "pipelines", {"pipeline": pipeline}, "p50 ms")


CLAIMS += [
    Claim(N14, r"accepts the local passages \((\d+) of the", output(N14, PAIRED_14, r"graded correct\s+(\d+) answers")),
    Claim(N14, r"a median of (\d+) prompt\s+tokens",
          output(N14, PAIRED_14, r"graded correct\s+\d+ answers, median\s+(\d+)")),
    Claim(N14, r"against plain RAG's (\d+), and", output(N14, PAIRED_14, r"plain RAG\s+\d+ answers, median\s+(\d+)")),
    Claim(N14, r"no\s+measurable\s+difference from plain RAG on (\d+) questions",
          output(N14, PAIRED_14, r"CRAG - plain RAG, (\d+) questions")),
    *interval_claims(N14, r"the best pipeline, ", lambda key, *end: complete_vs_fusion(*end), "diff", sep=r" \["),
    Claim(N14, r"measurable difference on\s+([\d,]+) questions", output(N14, DEV_14, r"([\d,]+) questions on")),
    Claim(N14, r"fully scored minus parent-child \((\+[.\d]+) in point", derived(
        f"{N14} cell {DEV_14} output, R@1 fully scored - parent-child", lambda: first_number(
            output_text(N14, DEV_14), r"R@1 ([.\d]+)  per-context fusion, every", "")
        - first_number(output_text(N14, DEV_14), r"R@1 ([.\d]+)  parent-child", ""))),
    # the CRAG row's mean seconds, and the medians of the first answer plot
    *interval_claims(N14, r"in F1 or in mean time\*\* \(", lambda key, *end: answers_pair(
        "local", CRAG_PAIR, "s diff" if not end else "s diff ci", *end), "s", sep=r" s \["),
    Claim(N14, r"median time is lower, though \(([.\d]+) s", output(N14, 10, r"F1 [.\d]+ at\s+([.\d]+) s  Corr")),
    Claim(N14, r"median time is lower, though \([.\d]+ s against ([.\d]+) s",
          output(N14, 10, r"plain RAG \(F1 [.\d]+ at ([.\d]+) s")),
    Claim(N14, r"parent-child is the cheapest of the three\s+\((\d+) ms",
          p50_14("parent-child: 120-char children -> context")),
    Claim(N14, r"ms per query against (\d+) and", p50_14("per-context fusion: children + chunks + contexts + titles")),
    Claim(N14, r"against \d+ and (\d+) ms in the", p50_14(COMPLETE_14[-1])),
    Claim(N14, r"Corrective RAG gains \+([.\d]+) F1 over plain RAG", answers_pair("split", CRAG_PAIR, "F1 diff")),
    # the split setting's front
    Claim(N14, r"fallback \(F1 ([.\d]+) at [.\d]+ s against",
          output(N14, SPLIT_14, r"F1 ([.\d]+) at\s+[.\d]+ s  Corr")),
    Claim(N14, r"fallback \(F1 [.\d]+ at ([.\d]+) s against",
          output(N14, SPLIT_14, r"F1 [.\d]+ at\s+([.\d]+) s  Corr")),
    Claim(N14, r"s against ([.\d]+) at [.\d]+ s\), so the fallback",
          output(N14, SPLIT_14, r"web fallback \(F1 ([.\d]+) at")),
    Claim(N14, r"s against [.\d]+ at ([.\d]+) s\), so the fallback",
          output(N14, SPLIT_14, r"web fallback \(F1 [.\d]+ at ([.\d]+) s")),
    # where CRAG lost the answer's passage, by grader action
    Claim(N14, r"On (\d+) of the \d+ questions where CRAG lost",
          output(N14, PAIRED_14, r"graded correct.*had it: (\d+)")),
    Claim(N14, r"On \d+ of the (\d+) questions where CRAG lost", outputs(N14, r"plain RAG had it: (\d+)", sum)),
    Claim(N14, r"at or above the ([.\d]+) cutoff, the ones", derived("E5_MIN_SIMILARITY", lambda: E5_MIN_SIMILARITY)),
    # exercise 4
    Claim(N14, r"with a web fallback by \+([.\d]+) F1", answers_pair("split", GRADED_PAIR, "F1 diff")),
    Claim(solutions(N14), r"both searched the web \((\d+) questions\)",
          output(N14, WEB_PARTS_14, r"searched the web: (\d+) questions")),
    Claim(solutions(N14), r"passed the\s+# cutoff \((\d+) questions\)",
          output(N14, WEB_PARTS_14, r"kept a local passage: (\d+) questions")),
    Claim(solutions(N14), r"read better \(F1 ([.\d]+) against", output(N14, WEB_PARTS_14, r"\n.*?CRAG ([.\d]+);")),
    Claim(solutions(N14), r"read better \(F1 [.\d]+ against ([.\d]+)\)",
          output(N14, WEB_PARTS_14, r"F1 fallback ([.\d]+)")),
    Claim(solutions(N14), r"reached F1 ([.\d]+) against",
          output(N14, WEB_PARTS_14, r"local passage[^\n]*\n.*?CRAG ([.\d]+);")),
    Claim(solutions(N14), r"reached F1 [.\d]+ against ([.\d]+)\.",
          output(N14, WEB_PARTS_14, r"local passage[^\n]*\n\s+F1 fallback ([.\d]+)")),
    Claim(solutions(N14), r"answer's page \(evidence ([.\d]+)\)",
          output(N14, WEB_PARTS_14, r"evidence fallback ([.\d]+)")),
    Claim(solutions(N14), r"trusts a local passage only at ([.\d]+) and above", CONFIDENT),
    Claim(solutions(N14), r"the two add (\+[.\d]+) and", output(N14, WEB_PARTS_14, r"questions: (\+[.\d]+)")),
    Claim(solutions(N14), r"the two add \+[.\d]+ and (\+[.\d]+) of",
          output(N14, WEB_PARTS_14, r"local passage[^\n]*\n[^\n]*questions: (\+[.\d]+)")),
    Claim(solutions(N14), r"of the (\+[.\d]+)\.", answers_pair("split", GRADED_PAIR, "F1 diff")),
]


def pair_14(where: str, pair: Callable[[], tuple]) -> Callable[..., Value]:
    """interval_claims' `value` for a (difference, (low, high)) pair computed by `pair()`."""
    return lambda key, *end: derived(where, (lambda: pair()[0]) if not end else (lambda: pair()[1][end[0]]))


def bench_pair_14(file: str, *path: Any, diff: str, ci: str, negate: bool = False) -> Callable[..., Value]:
    """interval_claims' `value` for a difference and its interval in a JSON row; `negate` reads it the other way
    round (the interval's ends swap)."""
    def value(key: str, *end: int) -> Value:
        if not end:
            return bench(file, *path, diff, scale=-1 if negate else 1)
        return bench(file, *path, ci, 1 - end[0] if negate else end[0], scale=-1 if negate else 1)
    return value


def retrieval_point_14(file: str, name: str, baseline: str) -> Value:
    """The difference of two pipelines' R@1 point values in a retrieval JSON."""
    rows = lambda: {p["pipeline"]: p["R@1"] for p in results(file)["pipelines"]}  # noqa: E731
    return derived(f"bench_results/{file}.json, R@1 {name} - {baseline}", lambda: rows()[name] - rows()[baseline])


def leaderboard_14():
    from rag_lib.experiments import leaderboard

    return leaderboard


STOP_14 = ("segments", "pipelines", {"pipeline": "BM25, flushed once, stop filter"})
UNION_14, HYDE_14 = "question + translation (union)", "HyDE (passage in the question's language)"
FUSED_14 = "per-context fusion: children + chunks + contexts + titles"
PLAIN_14 = r"the model alone, F1 on \d+ questions: "
TWO_HOP_14 = {"judge": {"comparison": "judge_extractive - rag_extractive", "questions": "all"},
              "bridge": {"comparison": "bridge - rag_extractive", "questions": "all"}}

CLAIMS += [
    # ---- section 4's takeaways, bullet 1: retrieval
    *interval_claims(N14, r"Hybrid RRF over dense search\s+gains ", bench_pair_14(
        "fusion", "pipelines", {"pipeline": "weighted, dense share 1.0"}, diff="R@1 - default", ci="95% CI",
        negate=True), "diff", sep=r" \["),
    Claim(N14, r"for about (\d+) ms more", derived("retrieval.json p50 ms, hybrid RRF - dense", lambda: (
        walk(results("retrieval"), ("pipelines", {"pipeline": RRF}, "p50 ms"))
        - walk(results("retrieval"), ("pipelines", {"pipeline": DENSE}, "p50 ms")))), rel=0.5),
    Claim(N14, r"on the dev split, \+([.\d]+) \(point value", retrieval_point_14("retrieval_dev", RRF, DENSE)),
    *interval_claims(N14, r"The fully scored fusion gains ", lambda key, *end: complete_vs_fusion(*end), "diff",
                     sep=r" \["),
    *interval_claims(N14, r"over the plain fusion on trial; on dev,\s+", bench_pair_14(
        "retrieval_dev", *COMPLETE_14, diff="fused - this, R@1", ci="fused - this, R@1 95% CI", negate=True),
        "diff", sep=r" \["),
    *interval_claims(N14, r"no measurable difference on trial \(", bench_pair_14(
        "lite", *STOP_14, diff="R@1 - flushed once", ci="95% CI"), "diff", sep=r" \["),
    *interval_claims(N14, r"and\s+gains ", bench_pair_14(
        "lite_dev", *STOP_14, diff="R@1 - flushed once", ci="95% CI"), "diff", sep=r" \[", suffix=" on the dev"),
    Claim(N14, r"Parent-child \(([+-][.\d]+)\)", retrieval_point_14("retrieval", PARENT, WEIGHTED)),
    Claim(N14, r"against hybrid RRF \(([+-][.\d]+)\)", retrieval_point_14("retrieval", RERANK, RRF)),
    *interval_claims(N14, r"fusion's searches loses\s+", bench_pair_14(
        "retrieval", "per-context fusion", "all", "LangChain EnsembleRetriever (weighted RRF) of the same searches",
        diff="fused - this, R@1", ci="fused - this, R@1 95% CI", negate=True), "diff", sep=r" \["),
    # bullet 2: query transforms
    *interval_claims(N14, r"Question \+ translation gains ", bench_pair_14(
        "advanced", "summary", {"pipeline": UNION_14, "set": "translated + hard"}, diff="recall@3 diff",
        ci="recall@3 diff 95% CI"), "diff", sep=r" \["),
    Claim(N14, r"recall@3 on the (\d+) cross-lingual",
          bench("advanced", "summary", {"pipeline": UNION_14, "set": "translated + hard"}, "questions")),
    Claim(N14, r"on the (\d+) questions that need no",
          bench("advanced", "summary", {"pipeline": UNION_14, "set": "sample as written"}, "questions")),
    Claim(N14, r"changed none of the (\d+) retrievals",
          bench("advanced", "summary", {"pipeline": UNION_14, "set": "sample as written"}, "questions")),
    *interval_claims(N14, r"HyDE in the question's language loses ", bench_pair_14(
        "advanced", "summary", {"pipeline": HYDE_14, "set": "translated + hard"}, diff="recall@3 diff",
        ci="recall@3 diff 95% CI"), "diff", sep=r" \["),
    # bullet 3: retrieval and reading
    Claim(N14, r"Plain RAG adds ([+-][.\d]+) \[", output(N14, 4, PLAIN_14 + r"([+-][.\d]+) \[")),
    Claim(N14, r"Plain RAG adds [+-][.\d]+ \[([+-][.\d]+),", output(N14, 4, PLAIN_14 + r"[+-][.\d]+ \[([+-][.\d]+),")),
    Claim(N14, r"Plain RAG adds [+-][.\d]+ \[[+-][.\d]+, ([+-][.\d]+)\]",
          output(N14, 4, PLAIN_14 + r"[+-][.\d]+ \[[+-][.\d]+, ([+-][.\d]+)\]")),
    Claim(N14, r"over plain RAG on (\d+) CMRC trial", answers_pair("local", "gold - rag_extractive", "n")),
    *interval_claims(N14, r"CMRC trial questions \(", lambda key, *end: answers_pair(
        "local", "gold - rag_extractive", "F1 diff" if not end else "F1 diff ci", *end), "F1 diff", sep=r" \["),
    Claim(N14, r"reaches only F1 ([.\d]+)", answers_row("local", "gold", "F1")),
    *interval_claims(N14, r"widened to its clause \(notebook 12\), it gains ", lambda key, *end: answers_pair(
        "local", "gold - rag_extractive", "EM clause diff" if not end else "EM clause diff ci", *end),
        "EM clause diff", sep=r" \["),
    # bullet 4: Corrective RAG, and the evidence figure of section 2
    *interval_claims(N14, r"CRAG gains ", lambda key, *end: answers_pair(
        "split", CRAG_PAIR, "F1 diff" if not end else "F1 diff ci", *end), "F1 diff", sep=r" \[", suffix=" F1"),
    Claim(N14, r"trusts local passages only at ([.\d]+) and above", CONFIDENT),
    *interval_claims(N14, r"plain RAG with a web fallback gains ", lambda key, *end: answers_pair(
        "split", WEB_PAIR, "F1 diff" if not end else "F1 diff ci", *end), "F1 diff", sep=r" \["),
    *interval_claims(N14, r"CRAG beats the\s+fallback by ", lambda key, *end: answers_pair(
        "split", GRADED_PAIR, "F1 diff" if not end else "F1 diff ci", *end), "F1 diff", sep=r" \["),
    *interval_claims(N14, r"refinement lose evidence\s+\(", lambda key, *end: answers_pair(
        "local", CRAG_PAIR, "evidence diff" if not end else "evidence diff ci", *end), "e", sep=r" \["),
    *interval_claims(N14, r"held the\s+answer \(evidence ", lambda key, *end: answers_pair(
        "local", CRAG_PAIR, "evidence diff" if not end else "evidence diff ci", *end), "e", sep=r" \["),
    # bullet 5: the judge, the bridge and the agent
    *interval_claims(N14, r"every paragraph indexed it makes no\s+measurable difference \(",
                     lambda key, *end: answers_pair("local", JUDGE_PAIR, "F1 diff" if not end else "F1 diff ci", *end),
                     "F1 diff", sep=r" \["),
    *interval_claims(N14, r"loses ", lambda key, *end: answers_pair(
        "split", JUDGE_PAIR, "F1 diff" if not end else "F1 diff ci", *end), "F1 diff", sep=r" \[",
        suffix=" in the split setting"),
    Claim(N14, r"costs ([\d.]+) s\s+more per answer", answers_pair("local", JUDGE_PAIR, "s diff")),
    Claim(N14, r"On (\d+) held-out two-hop", bench("multihop_held_out", "paired", TWO_HOP_14["judge"], "n")),
    *interval_claims(N14, r"a follow-up is for, it\s+loses ", lambda key, *end: bench(
        "multihop_held_out", "paired", TWO_HOP_14["judge"], "F1 diff" if not end else "F1 diff ci", *end),
        "F1 diff", sep=r" \[", suffix=" F1"),
    *interval_claims(N14, r"bridge pipeline shows no measurable difference \(", lambda key, *end: bench(
        "multihop_held_out", "paired", TWO_HOP_14["bridge"], "F1 diff" if not end else "F1 diff ci", *end),
        "F1 diff", sep=r" \["),
    Claim(N14, r"on the (\d+) questions Corrective RAG was not\s+tuned", derived(
        "leaderboard.agent_pair(held_out=True)", lambda: leaderboard_14().agent_pair(held_out=True)[2])),
    Claim(N14, r"\((\d+) web, \d+ direct;", derived("leaderboard.agent_held_out_kinds()", lambda: float(
        leaderboard_14().agent_held_out_kinds().split(" web")[0]))),
    Claim(N14, r"\(\d+ web, (\d+) direct;", derived("leaderboard.agent_held_out_kinds()", lambda: float(
        leaderboard_14().agent_held_out_kinds().split(", ")[1].split()[0]))),
    *interval_claims(N14, r"\d+ direct; ", pair_14("leaderboard.agent_pair(held_out=True)",
                                                   lambda: leaderboard_14().agent_pair(held_out=True)), "d",
                     sep=r" \["),
    Claim(N14, r"its loss over all (\d+)", derived("leaderboard.agent_pair()",
                                                 lambda: leaderboard_14().agent_pair()[2])),
    *interval_claims(N14, r"its loss over all \d+\s+\(", pair_14("leaderboard.agent_pair()",
                                                                 lambda: leaderboard_14().agent_pair()), "d",
                     sep=r" \["),
]
