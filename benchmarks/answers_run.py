"""The resumable CMRC run of the answers benchmark: rows appended to one JSONL file per setting as each is done."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from tqdm import tqdm

from benchmarks.answers_pipelines import (
    CONTEXT_OF,
    INDEX_FREE,
    clear_prompt_cache,
    details,
    index_free_pipelines,
    indexed_pipelines,
    model_name,
    run_pipeline,
)
from benchmarks.answers_sample import SETTINGS, home_of
from rag_lib.experiments.cmrc import Dataset
from rag_lib.experiments.results import read_jsonl
from rag_lib.experiments.tokens import token_counter_for

SESSIONS = "sessions.jsonl"  # in the runs folder: when each run started and ended, with the machine's load


def runs_file(runs_dir: Path, setting: str) -> Path:
    """Where the rows of one setting are appended."""
    return runs_dir / f"{setting}.jsonl"


def append_row(path: Path, record: dict) -> None:
    """Append one record as a line and close the file at once, so a killed run loses at most the row it was on."""
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(record, ensure_ascii=False) + "\n")


def finished_rows(runs_dir: Path) -> dict[tuple[str, str, str], dict]:
    """(setting, pipeline, question id) -> the first row written for it, over every setting's file."""
    done: dict[tuple[str, str, str], dict] = {}
    for setting in SETTINGS:
        for row in read_jsonl(runs_file(runs_dir, setting), repair=True):
            done.setdefault((row["setting"], row["pipeline"], row["id"]), row)
    return done


def plan_work(
    sample: list[dict], settings: Iterable[str], pipelines: Iterable[str], done: dict[tuple[str, str, str], dict],
) -> list[tuple[dict, str, str, str | None]]:
    """The rows still to write, question after question (each through every setting and pipeline), each with the
    setting to copy it from (None: run it): an index-free pipeline runs once per question and is copied."""
    work: list[tuple[dict, str, str, str | None]] = []
    runs: dict[tuple[str, str], str] = {}  # (pipeline, id) -> the setting where it runs in this plan
    for q in sample:
        for setting in settings:
            for pipeline in pipelines:
                if (setting, pipeline, q["id"]) in done:
                    continue
                source = None
                if pipeline in INDEX_FREE:
                    earlier = [s for s in SETTINGS if (s, pipeline, q["id"]) in done]
                    source = earlier[0] if earlier else runs.get((pipeline, q["id"]))
                    if source is None:
                        runs[pipeline, q["id"]] = setting
                work.append((q, setting, pipeline, source))
    return work


def progress_line(row: dict, total: int) -> str:
    """One finished row for the log: question rank, setting, pipeline, F1, evidence, LLM calls, seconds."""
    failed = f" ERROR {row['error'][:80]}" if row["error"] else ""
    return (f"{row['rank']:4}/{total} {row['setting']:5} {row['home']:5} {row['pipeline']:15} F1 {row['f1']:.2f} "
            f"evidence {row['evidence']:.0f} {row['llm_calls']:2} calls {row['s']:6.1f} s{failed}")


def start_session(
    llm: BaseChatModel, runs_dir: Path, settings: list[str], pipelines: list[str], sample: list[dict], rows: int,
) -> dict:
    """Record the start of a run (model, threads, what it plans, the machine's load) in the sessions file."""
    session = {"session": datetime.now().isoformat(timespec="milliseconds"), "model": model_name(llm),
               "n_threads": getattr(llm, "n_threads", None), "settings": settings, "pipelines": pipelines,
               "questions": len(sample), "rows planned": rows}
    append_row(runs_dir / SESSIONS, session | {"event": "start", "load_1min": round(os.getloadavg()[0], 2)})
    return session


def unmixed_rows(runs_dir: Path, model: str) -> dict[tuple[str, str, str], dict]:
    """The rows already in `runs_dir` (`finished_rows`); stops the run if another model wrote any of them."""
    done = finished_rows(runs_dir)
    foreign = sorted({row.get("model", "?") for row in done.values()} - {model})
    if foreign:
        raise SystemExit(f"{runs_dir} holds rows measured with {', '.join(foreign)} and this run uses {model}: pass "
                         "another --runs-dir so that the rows of two models are not mixed")
    return done


class PipelineRunner:
    """Runs one pipeline on one question into a row; indexes a setting's contexts the first time it is needed."""

    def __init__(self, llm: BaseChatModel, data: Dataset, session: dict, folder: Path, stack: ExitStack) -> None:
        self.llm, self.data, self.session, self.folder, self.stack = llm, data, session, folder, stack
        self.count, self.free = token_counter_for(llm), index_free_pipelines(llm, data)
        self.indexed: dict[str, dict[str, Callable[[dict], Runnable]]] = {}

    def graph(self, q: dict, setting: str, pipeline: str, bar: tqdm) -> Runnable:
        """The pipeline's graph for question `q`, bound to its runtime context."""
        if pipeline in INDEX_FREE:
            return self.free[pipeline](q)
        if setting not in self.indexed:
            bar.set_postfix_str(f"indexing the {setting} setting")
            self.indexed[setting] = indexed_pipelines(self.llm, self.data, setting, self.folder, self.stack)
        return self.indexed[setting][pipeline](q)

    def row(self, q: dict, setting: str, pipeline: str, where: dict, bar: tqdm) -> dict:
        """One run from an empty prompt cache: the row with its scores, usage, details and the machine's load."""
        graph = self.graph(q, setting, pipeline, bar)
        clear_prompt_cache(self.llm)
        result, state = run_pipeline(graph, q["question"], q["golds"], self.count, CONTEXT_OF[pipeline], self.llm)
        return (where | {"pipeline": pipeline, "id": q["id"], "rank": q["rank"], "question": q["question"],
                         "golds": q["golds"]} | result | {"s": round(result["s"], 3)} | details(pipeline, state)
                | {"model": self.session["model"], "session": self.session["session"],
                   "load_1min": round(os.getloadavg()[0], 2)})


def run_cmrc(
    llm: BaseChatModel, data: Dataset, sample: list[dict], settings: list[str], pipelines: list[str],
    runs_dir: Path, limit: int | None = None,
) -> int:
    """Write the missing rows of the sample to the runs files (at most `limit` of them), each as soon as it is done;
    Ctrl-C (or SIGTERM, see `benchmarks.answers.main`) stops after the rows already written. Returns how many rows
    were written."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    done = unmixed_rows(runs_dir, model_name(llm))
    work = plan_work(sample, settings, pipelines, done)[:limit]
    session = start_session(llm, runs_dir, settings, pipelines, sample, len(work))
    homes = {setting: home_of(data, setting) for setting in settings}
    written, started = 0, time.perf_counter()
    runs = sum(source is None for *_, source in work)
    print(f"{len(work)} rows to write ({runs} pipeline runs, {len(work) - runs} copies), "
          f"{len(done)} done before, in {runs_dir}", flush=True)
    with ExitStack() as stack, tqdm(total=runs, unit="run", smoothing=0, dynamic_ncols=True) as bar:
        runner = PipelineRunner(llm, data, session, Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="answers_bench_"))), stack)
        try:
            for q, setting, pipeline, source in work:
                where = {"setting": setting, "home": homes[setting][q["context_id"]]}
                if source is not None:
                    row = done[source, pipeline, q["id"]] | where | {"copied_from": source}
                else:
                    row = runner.row(q, setting, pipeline, where, bar)
                append_row(runs_file(runs_dir, setting), row)
                done[setting, pipeline, q["id"]] = row
                written += 1
                if source is None:
                    bar.update()
                    bar.set_postfix_str(f"q{q['rank']} {setting} {pipeline} {row['s']:.0f} s")
                    tqdm.write(progress_line(row, len(sample)))
        except KeyboardInterrupt:
            tqdm.write(f"stopped: {written} rows written this run; the same command goes on from there")
    end = {"event": "end", "load_1min": round(os.getloadavg()[0], 2), "rows written": written,
           "seconds": round(time.perf_counter() - started, 1)}
    append_row(runs_dir / SESSIONS, {"session": session["session"]} | end)
    return written
