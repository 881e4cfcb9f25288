"""Two-hop questions through plain RAG, the recursive judge and a bridge pipeline: does a second search find the
second passage, where is each question lost, and what does it cost?

data/multihop_questions.json holds 112 questions (55 English, 57 Chinese; span, comparison and yes/no answers), each
needing one fact from each of two passages of data/docs and data/web (the file names them, with the evidence), in
two fixed halves balanced by language and answer type: --split tune to choose settings, --split held_out to report.
Both folders are indexed into one Milvus Lite collection, and each pipeline of --pipelines answers every question as
the course runs it (a graph with its runtime context, k=3 chunks, the calibrated cutoff): rag_extractive,
judge_extractive and bridge (rag_lib.experiments.bridge: the copied bridge searched too, extractive) by default;
on request bridge_narrow (the answer step reads the bridge's chunks and the chunk it was copied from only),
bridge_yes_no (the bridge pipeline with a yes-or-no verdict for yes/no questions), rag_extractive_k10 (plain RAG
reading the question's top 10 chunks, no cutoff), rag and judge (generative). Scores per row as in `bench answers`:
EM, F1, contains gold, evidence (the gold answer in what the generator read, follow-up answers included), LLM calls,
prompt and generated tokens, seconds, the judge's follow-ups, the bridge copied; every search the pipeline made (the
question's, then each follow-up's: query,
chunk ids as the retriever returned them, those the pipeline read after the cutoff, and whether these hold hop 1 and
hop 2) and the `loss` class of the question (where it was lost, or right). Rows are appended to --runs-file as they
finish (a stopped run goes on where it stopped); the summary has 95 % bootstrap intervals per pipeline, paired
differences (judge or bridge - rag, ...) on the questions both answered, and the count per loss class. Results:
bench_results/<--out>.json."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import NamedTuple

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from pydantic import Field
from tqdm import tqdm

from benchmarks import write_results
from benchmarks.answers import names
from benchmarks.answers_pipelines import (
    JUDGE_MAX_DEPTH,
    JUDGE_MAX_LLM_CALLS,
    K,
    clear_prompt_cache,
    indexed_retrievers,
    judge_context,
    judge_extractive_context,
    model_name,
    rag_context,
    run_pipeline,
)
from benchmarks.answers_run import append_row
from benchmarks.answers_summary import compare, describe, print_seconds, where_seconds_go
from rag_lib.embeddings import default_min_similarity
from rag_lib.experiments.bridge import BridgeContext, build_bridge_graph
from rag_lib.experiments.evaluation import rescored
from rag_lib.experiments.questions import QUESTIONS, SPLITS, load_questions
from rag_lib.experiments.results import RESULTS_DIR, format_table, read_jsonl, with_ci
from rag_lib.experiments.tokens import token_counter_for
from rag_lib.graphs.judge import JudgeContext, below_cutoff, build_judge_graph
from rag_lib.graphs.rag import RAGContext, build_rag_graph
from rag_lib.index import source_name
from rag_lib.llm import get_chat_model
from rag_lib.matching import occurs_in
from rag_lib.store import ANALYZER_PARAMS, PROJECT_ROOT

DATA = PROJECT_ROOT / "data"
CORPUS = PROJECT_ROOT / "tmp" / "multihop_corpus"  # what is indexed: a copy of data/docs and data/web (git-ignored)
PIPELINES = ("rag_extractive", "judge_extractive", "bridge", "bridge_narrow", "bridge_yes_no",
             "rag_extractive_k10", "rag", "judge")
DEEP_K = 10  # rag_extractive_k10 reads the question's top DEEP_K chunks, no cutoff: retrieve more, decide nothing
DEFAULT_PIPELINES = "rag_extractive,judge_extractive,bridge"
PAIRS = (("judge_extractive", "rag_extractive"), ("bridge", "rag_extractive"), ("bridge", "judge_extractive"),
         ("bridge_narrow", "bridge"), ("bridge_yes_no", "bridge"), ("bridge_yes_no", "rag_extractive"),
         ("rag_extractive_k10", "rag_extractive"), ("rag_extractive_k10", "judge_extractive"),
         ("judge", "rag"), ("judge_extractive", "judge"))
CONTEXT_OF = {"rag_extractive": rag_context, "rag": rag_context, "judge_extractive": judge_extractive_context,
              "judge": judge_context, "bridge": rag_context, "bridge_narrow": rag_context,
              "bridge_yes_no": rag_context, "rag_extractive_k10": rag_context}


def indexed_corpus(folder: Path, stack: ExitStack) -> Callable[..., BaseRetriever]:
    """data/docs and data/web copied into CORPUS and indexed with the course analyzer into one new Lite database in
    `folder` (closed by `stack`): a maker of K-hit retrievers over it. CORPUS has a fixed place in the project, so
    every run stores the same chunk ids (a hash of source and text) and the hybrid search breaks ties the same way."""
    shutil.rmtree(CORPUS, ignore_errors=True)  # a file removed from data/ must not stay indexed
    for part in ("docs", "web"):
        shutil.copytree(DATA / part, CORPUS / part)
    return indexed_retrievers(CORPUS, folder / "multihop.db", stack, ANALYZER_PARAMS)


def chunk_id(document: Document) -> str:
    """A retrieved chunk's name in the records, in the form of a hop's source: `docs/<file>#<chunk index>`."""
    source = Path(document.metadata["source"])
    return f"{source.parent.name}/{source.name}#{document.metadata['chunk_index']}"


def holds_hop(document: Document, hop: dict) -> bool:
    """Whether a chunk is a hop's passage: from the hop's file, holding its evidence (`occurs_in`) or one half of it
    (cut at the first space after the middle), since a chunk boundary may fall inside the quoted sentence."""
    if chunk_id(document).split("#")[0] != hop["source"]:
        return False
    evidence = hop["evidence"]
    middle = evidence.find(" ", len(evidence) // 2)
    middle = len(evidence) // 2 if middle < 0 else middle
    return any(occurs_in(part.strip(), document.page_content)
               for part in (evidence, evidence[:middle], evidence[middle:]) if part.strip())


def hops_found(documents: list[Document], question: dict) -> list[bool]:
    """Per hop of `question` (hop 1, hop 2): whether one of `documents` is its passage (`holds_hop`)."""
    return [any(holds_hop(d, hop) for d in documents) for hop in question["hops"]]


LOSSES = ("first hop not retrieved", "bridge not recognised", "follow-up missed hop 2", "both passages, answer wrong",
          "right")


def loss(row: dict) -> str:
    """Where a run's question was lost, one of LOSSES, from its scores and its `searches` (the first one the
    question's own): right (EM, or the answer contains the gold); else both hops' passages retrieved by some search
    (the answer is wrong); else hop 1's passage missing from the first search; else (hop 2's missing) no second search
    asked (the bridge was not recognised) or every second search missed it (badly worded)."""
    if row["em"] == 1.0 or row["contains"] == 1.0:
        return LOSSES[4]
    searches = row["searches"]
    if all(any(s["hops"][i] for s in searches) for i in range(2)):
        return LOSSES[3]
    if not searches or not searches[0]["hops"][0]:
        return LOSSES[0]
    return LOSSES[1] if len(searches) == 1 else LOSSES[2]


class LoggedRetriever(BaseRetriever):
    """A retriever that keeps every search it serves, (query, chunks) in order, for the per-run records; empty
    `searches` before each run."""

    retriever: BaseRetriever
    searches: list[tuple[str, list[Document]]] = Field(default_factory=list)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        documents = self.retriever.invoke(query, config={"callbacks": run_manager.get_child()})
        self.searches.append((query, documents))
        return documents


def read_chunks(documents: list[Document], first: bool, cutoff: float | None, keeps_all: bool) -> list[Document]:
    """The chunks of one search that the pipeline reads: at or above the cutoff (`below_cutoff`); of a later search,
    all of them when the pipeline `keeps_all` (the bridge), else the most similar one too (the judge's waiver)."""
    if not first and keeps_all:
        return documents
    similarities = [d.metadata.get("similarity") or 0.0 for d in documents]
    waived = None if first or not documents else similarities.index(max(similarities))
    return [d for i, d in enumerate(documents)
            if i == waived or not below_cutoff(d.metadata.get("similarity"), cutoff)]


def search_records(searches: list[tuple[str, list[Document]]], question: dict, cutoff: float | None,
                   keeps_all: bool = False) -> list[dict]:
    """A run's searches for its row: the query, the chunk ids found, those the pipeline reads (`read_chunks`) and
    whether these hold hop 1 and hop 2."""
    records = []
    for i, (query, documents) in enumerate(searches):
        read = read_chunks(documents, i == 0, cutoff, keeps_all)
        records.append({"query": query, "chunks": [chunk_id(d) for d in documents],
                        "read": [chunk_id(d) for d in read], "hops": hops_found(read, question)})
    return records


class Pipeline(NamedTuple):
    """A graph bound to its runtime context, the logged retriever it searches through, and how its searches are
    recorded: the cutoff of its first search (None: it reads every chunk) and whether it reads a later search whole."""

    graph: Runnable
    logged: LoggedRetriever
    cutoff: float | None
    keeps_all: bool = False


def pipelines(llm: BaseChatModel, folder: Path, stack: ExitStack) -> dict[str, Pipeline]:
    """data/docs and data/web indexed into one new Lite database in `folder` (closed by `stack`), and every graph
    of PIPELINES bound to it with the course's runtime contexts."""
    retriever = indexed_corpus(folder, stack)
    cutoff = default_min_similarity()
    rag, judge = build_rag_graph(), build_judge_graph()
    graphs = {}
    for suffix, mode in (("", "generative"), ("_extractive", "extractive")):
        logged = LoggedRetriever(retriever=retriever(min_similarity=cutoff))
        graphs["rag" + suffix] = Pipeline(rag.bind(context=RAGContext(retriever=logged, llm=llm, mode=mode)), logged,
                                          cutoff)
        logged = LoggedRetriever(retriever=retriever())
        graphs["judge" + suffix] = Pipeline(judge.bind(context=JudgeContext(
            retriever=logged, llm=llm, max_depth=JUDGE_MAX_DEPTH, max_llm_calls=JUDGE_MAX_LLM_CALLS,
            min_similarity=cutoff, mode=mode)), logged, cutoff)
    logged = LoggedRetriever(retriever=retriever(k=DEEP_K))
    graphs["rag_extractive_k10"] = Pipeline(rag.bind(context=RAGContext(retriever=logged, llm=llm,
                                                                        mode="extractive")), logged, None)
    bridge = build_bridge_graph()
    for name, narrow, yes_no in (("bridge", False, False), ("bridge_narrow", True, False),
                                 ("bridge_yes_no", False, True)):
        logged = LoggedRetriever(retriever=retriever())
        graphs[name] = Pipeline(bridge.bind(context=BridgeContext(
            retriever=logged, llm=llm, min_similarity=cutoff, narrow=narrow, yes_no=yes_no)), logged, cutoff, True)
    return graphs


def run(llm: BaseChatModel, questions: list[dict], chosen: list[str], runs_file: Path, limit: int | None) -> int:
    """Write the missing (pipeline, question) rows to `runs_file`, question after question (a rewritten question is
    answered again); returns how many."""
    runs_file.parent.mkdir(parents=True, exist_ok=True)
    done = {(r["pipeline"], r["question"]) for r in read_jsonl(runs_file, repair=True)}
    work = [(q, name) for q in questions for name in chosen if (name, q["question"]) not in done][:limit]
    model, count, written = model_name(llm), token_counter_for(llm), 0
    print(f"{len(work)} rows to write, {len(done)} done before, in {runs_file}", flush=True)
    if not work:
        return 0
    with ExitStack() as stack, tqdm(total=len(work), unit="run", smoothing=0, dynamic_ncols=True) as bar:
        graphs = pipelines(llm, Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="multihop_"))), stack)
        try:
            for q, name in work:
                clear_prompt_cache(llm)
                pipeline = graphs[name]
                pipeline.logged.searches.clear()
                result, state = run_pipeline(pipeline.graph, q["question"], q["golds"], count, CONTEXT_OF[name], llm)
                row = ({"pipeline": name, "id": q["id"], "question": q["question"], "golds": q["golds"],
                        "language": q["language"], "answer_type": q["answer_type"]} | result
                       | {"s": round(result["s"], 3), "follow_ups": len(state.get("sub_answers", [])),
                          "searches": search_records(pipeline.logged.searches, q, pipeline.cutoff,
                                                     pipeline.keeps_all),
                          "gold_bridge": q["bridge"],
                          **{key: state[key] for key in ("bridge", "bridge_note") if key in state},
                          "model": model, "load_1min": round(os.getloadavg()[0], 2)})
                row["loss"] = loss(row)
                append_row(runs_file, row)
                written += 1
                bar.update()
                tqdm.write(f"{q['id']} {name:16} F1 {row['f1']:.2f} contains {row['contains']:.0f} evidence "
                           f"{row['evidence']:.0f} {row['llm_calls']} calls {row['follow_ups']} follow-ups "
                           f"{row['s']:.1f} s: {row['loss']}")
        except KeyboardInterrupt:
            tqdm.write(f"stopped: {written} rows written; the same command goes on from there")
    return written


def losses(rows: list[dict]) -> dict[str, int]:
    """How many rows each LOSSES class holds, over the rows that recorded their searches."""
    counts = Counter(loss(r) for r in rows if "searches" in r)
    return {name: counts[name] for name in LOSSES} if counts else {}


def summarize(questions: list[dict], runs_file: Path, split: str | None = None) -> dict:
    """Per pipeline (all questions, then per language) the means with intervals; paired differences."""
    wanted, rows = {(q["id"], q["question"]) for q in questions}, {}
    for row in read_jsonl(runs_file):
        if (row["id"], row["question"]) in wanted:  # a rewritten question's old rows no longer count
            rows.setdefault(row["pipeline"], {}).setdefault(row["id"], rescored(row))
    summary, paired = [], []
    for group in ("all", "en", "zh"):
        by = {name: {i: r for i, r in found.items() if group in ("all", r["language"])} for name, found in rows.items()}
        summary += [{"questions": group, "pipeline": name} | describe(list(found.values()))
                    | {"follow-ups": sum(r["follow_ups"] for r in found.values()) / len(found),
                       "losses": losses(list(found.values()))}
                    for name, found in by.items() if found]
        paired += [{"questions": group, "comparison": f"{a} - {b}"} | compare(by[a], by[b])
                   for a, b in PAIRS if set(by.get(a, {})) & set(by.get(b, {}))]
    loads = [r["load_1min"] for found in rows.values() for r in found.values()]
    setup = {"questions": len(questions), "file": QUESTIONS.name, "split": split or "all",
             "corpus": "data/docs + data/web, one collection",
             "retriever k": K, "BM25 analyzer": ANALYZER_PARAMS, "min_similarity": default_min_similarity(),
             "judge max_llm_calls": JUDGE_MAX_LLM_CALLS,
             "judge max_depth": JUDGE_MAX_DEPTH, "runs file": source_name(runs_file),
             "model": ", ".join(sorted({r["model"] for found in rows.values() for r in found.values()})),
             "load_1min over the rows": {"mean": round(sum(loads) / len(loads), 2), "max": max(loads)}
             if loads else None}
    every_row = [r for found in rows.values() for r in found.values()]
    return {"setup": setup, "summary": summary, "paired": paired, "where the seconds go": where_seconds_go(every_row)}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks multihop", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipelines", default=DEFAULT_PIPELINES, help=f"comma list of {', '.join(PIPELINES)}")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="the multi-hop questions (JSON)")
    parser.add_argument("--split", choices=SPLITS, default=None, help="only one half of the questions (default: all)")
    parser.add_argument("--runs-file", type=Path, default=None,
                        help="where the rows are appended (default bench_results/answers_runs/multihop.jsonl)")
    parser.add_argument("--limit", type=int, default=None, help="write at most this many rows, then summarize")
    parser.add_argument("--summarize-only", action="store_true", help="only rebuild the summary from the rows")
    parser.add_argument("--out", default=None,
                        help="results name: bench_results/<out>.json (default multihop, or multihop_<split>)")
    args = parser.parse_args(argv)
    chosen = names(args.pipelines, PIPELINES, "--pipelines")
    questions = load_questions(args.questions, args.split)
    runs_file = args.runs_file or RESULTS_DIR / "answers_runs" / "multihop.jsonl"
    started = time.perf_counter()
    if not args.summarize_only:
        run(get_chat_model(), questions, chosen, runs_file, args.limit)
    results = summarize(questions, runs_file, args.split)
    results["setup"]["seconds this run"] = round(time.perf_counter() - started, 1)
    print(format_table([{"questions": r["questions"], "pipeline": r["pipeline"], "n": r["n"], "errors": r["errors"],
                         "EM": with_ci(r, "EM"), "F1": with_ci(r, "F1"), "contains gold": with_ci(r, "contains gold"),
                         "evidence": with_ci(r, "evidence"), "LLM calls": f"{r['LLM calls']:.1f}",
                         "follow-ups": f"{r['follow-ups']:.2f}", "s p50": with_ci(r, "s p50", 1)}
                        for r in results["summary"]]))
    if results["paired"]:
        print(format_table([{"questions": r["questions"], "comparison": r["comparison"], "n": r["n"],
                             **{k: f"{v:.2f}" for k, v in r.items() if k.endswith("diff")}}
                            for r in results["paired"]]))
    classified = [{"pipeline": r["pipeline"], **r["losses"]} for r in results["summary"]
                  if r["losses"] and r["questions"] == "all"]
    if classified:
        print(format_table(classified))
    print_seconds(results)
    out = args.out or (f"multihop_{args.split}" if args.split else "multihop")
    print("\nwrote", write_results(out, results))


if __name__ == "__main__":
    main(sys.argv[1:])
