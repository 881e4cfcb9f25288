"""Answer quality of LLM-only, plain RAG (generative and extractive), Corrective RAG, the judge graph and the
gold-context bound on CMRC 2018, with confidence intervals; and how well the local LLM grades passages.

Two parts, both written to --out (default bench_results/answers.json; a part or setting not re-run keeps its old
results):
- cmrc (the default part): a fixed sample of CMRC 2018 trial questions (--n, --seed: the first n of a seeded
  shuffle of the non-empty questions, so a larger --n extends a smaller one) in two settings (--settings):
  "local", every context indexed in Milvus Lite (the standard RAG setting; CRAG's web is empty), and "split",
  even contexts indexed, odd ones only in the offline "web" corpus (where only CRAG can reach them).
  Pipelines (--pipelines), each run as the course runs it, a graph with its runtime context: llm_only (no
  retrieval), rag (RAGContext, generative), rag_extractive (RAGContext(mode="extractive")), rag_extractive_k2 (the
  same with two passages instead of three: a shorter prompt), rag_web_extractive (the same with a web route and
  no grader: the web's top pages for the question when no local passage passes the cutoff), crag and judge (each
  generative, and extractive as crag_extractive and judge_extractive), and the bound with retrieval taken as
  perfect: gold (the extractive RAG graph whose retriever returns the question's own context) and gold_generative
  (the same, generative). llm_only and the gold pipelines read no index, so they run once per question and their
  row is copied into the other setting ("copied_from").
  Per (setting, pipeline, question) row: EM, F1, contains gold, evidence (a gold answer in what the generator
  read), EM and F1 of the answer widened to its clause (what mode="clause" answers: CMRC's annotators mark clauses;
  computed from the passage the copy came from, kept in the row as cited_passage), LLM calls, prompt and generated
  tokens, seconds, and the error if the pipeline raised (recorded, scored 0, the run goes on). Each row is appended
  at once to <runs-dir>/<setting>.jsonl: a run stopped at any point and started again with the same arguments skips
  the finished rows. Questions are interleaved (question 1 through
  every setting and pipeline, then question 2, ...), so a partial run compares the pipelines on the same
  questions, and llama.cpp's prompt cache is cleared before every pipeline run, so no pipeline reuses another's.
  Summary per setting, pipeline and where the context lives: n, errors, means of EM, F1, contains gold, evidence,
  LLM calls and tokens, mean and median seconds, each with a 95 % percentile-bootstrap interval over the
  questions (fixed seed); and paired differences between pipelines on the questions both finished, with their
  intervals. --summarize-only rebuilds it from the JSONL files (re-scoring the recorded answers) with no model.
- grader (--parts grader): on data/ (sample + web questions), passages labelled answer-bearing (the best
  retrieved local chunk that contains the gold answer) or off-topic (the top local chunks of questions the docs
  cannot answer), graded by a naive "is it relevant?" yes/no prompt and by CRAG's copy-and-verify grader.
The CMRC file is --cmrc, else the one `rag_lib.experiments.cmrc.cmrc_path` finds (the trial split shipped in the
project under
its own licence, CC BY-SA 4.0).
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import write_results
from benchmarks.answers_grader import run_grader_part
from benchmarks.answers_pipelines import PIPELINES
from benchmarks.answers_run import run_cmrc
from benchmarks.answers_sample import SETTINGS, sample_questions
from benchmarks.answers_summary import print_seconds, print_tables, summarize_cmrc
from rag_lib.experiments.cmrc import Dataset, cmrc_path, load_cmrc
from rag_lib.experiments.results import RESULTS_DIR
from rag_lib.llm import get_chat_model

DEFAULT_QUESTIONS = 200


def stop_on_sigterm() -> Callable[[], None]:
    """Let `kill PID` stop a run as Ctrl-C does (rows written stay, Milvus closes, the summary is written); returns
    the function that puts the previous handler back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, stop)
    return lambda: signal.signal(signal.SIGTERM, previous)


def names(text: str, allowed: tuple[str, ...], option: str) -> list[str]:
    """A comma list of names from `allowed`, in the order given; a clear error for an unknown one."""
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in allowed]
    if unknown or not chosen:
        raise SystemExit(f"{option} {text!r}: give a comma list of {', '.join(allowed)}")
    return list(dict.fromkeys(chosen))


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks answers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cmrc", type=Path, default=None, help="CMRC 2018 JSON (default: cmrc_path())")
    parser.add_argument("--n", type=int, default=DEFAULT_QUESTIONS, help="CMRC questions in the sample")
    parser.add_argument("--seed", type=int, default=0, help="the shuffle the sample is taken from")
    parser.add_argument("--parts", nargs="+", choices=["grader", "cmrc"], default=["cmrc"])
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"comma list of {', '.join(SETTINGS)}")
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help=f"comma list of {', '.join(PIPELINES)}")
    parser.add_argument("--runs-dir", type=Path, default=None,
                        help="where the rows are appended, one JSONL per setting (default bench_results/answers_runs)")
    parser.add_argument("--out", type=Path, default=None, help="the results file (default bench_results/answers.json)")
    parser.add_argument("--limit", type=int, default=None, help="write at most this many rows, then summarize")
    parser.add_argument("--summarize-only", action="store_true",
                        help="only rebuild the cmrc summary from the runs files (re-scoring the answers); no model")
    return parser.parse_args(argv)


def cmrc_sample(args: argparse.Namespace) -> tuple[Dataset, list[dict]]:
    """The CMRC file (args.cmrc is set to the one found) and its question sample; a clear error before any model."""
    try:
        args.cmrc = cmrc_path(args.cmrc)
    except FileNotFoundError as error:
        raise SystemExit(str(error)) from None
    data = load_cmrc(args.cmrc)
    try:
        return data, sample_questions(data, args.n, args.seed)
    except ValueError as error:
        raise SystemExit(str(error)) from None


def summarize_and_print(
    args: argparse.Namespace, results: dict, data: Dataset, sample: list[dict], settings: list[str], runs_dir: Path,
) -> None:
    """Rebuild the cmrc part of `results` from the runs files and print its tables."""
    results["cmrc"] = summarize_cmrc(results.get("cmrc", {}), data, args.cmrc, sample, settings, runs_dir, args.seed)
    print_tables(results["cmrc"], settings)
    print_seconds(results["cmrc"])


def main(argv: list[str]) -> None:
    args = parse_args(argv)
    settings = names(args.settings, SETTINGS, "--settings")
    pipelines = names(args.pipelines, PIPELINES, "--pipelines")
    out = args.out or RESULTS_DIR / "answers.json"
    runs_dir = args.runs_dir or RESULTS_DIR / "answers_runs"
    if "cmrc" in args.parts or args.summarize_only:
        data, sample = cmrc_sample(args)
    results = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    meta = results.pop("meta", None)
    if args.summarize_only:
        summarize_and_print(args, results, data, sample, settings, runs_dir)
        print("\nwrote", write_results("answers", results, meta, path=out))  # the measurement's own record stays
        return
    llm = get_chat_model()
    if "grader" in args.parts:
        results["grader"] = run_grader_part(llm)
    if "cmrc" in args.parts:
        restore = stop_on_sigterm()
        try:
            run_cmrc(llm, data, sample, settings, pipelines, runs_dir, args.limit)
        finally:
            restore()
        summarize_and_print(args, results, data, sample, settings, runs_dir)
    print("\nwrote", write_results("answers", results, path=out))


if __name__ == "__main__":
    main([])
