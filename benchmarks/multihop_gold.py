"""Does each two-hop question need both its passages? The model answers from gold context: hop 1's passage alone,
hop 2's alone, and both.

For every question of data/multihop_questions.json, each hop's passage is the chunk (or chunks, when a boundary
falls inside the evidence) of its file that holds the evidence, chunked as `index_directory` chunks it and matched
with `holds_hop` (no search, no embedding). The model then answers as the extractive pipelines do
(`rag_lib.graphs.rag.extractive_answer`: a copied span, else a short answer) from hop 1 alone, hop 2 alone and both.
A question answered from one passage alone (the answer contains the gold, or matches it) can be answered without
the second hop: the set's "no passage alone answers it" check. Rates are given per answer type too (a copied span
is rarely "yes" or "no"). Rows are appended to --runs-file as they finish (a stopped run goes on where it stopped;
a rewritten question is answered again). Results: bench_results/<--out>.json: per split and per answer type,
Wilson intervals of "contains gold" per context, and the ids answered from a single passage."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from tqdm import tqdm

from benchmarks import write_results
from benchmarks.answers_pipelines import clear_prompt_cache, model_name, score
from benchmarks.answers_run import append_row
from benchmarks.multihop import CORPUS, DATA, holds_hop
from rag_lib.chunking import Chunker
from rag_lib.experiments.evaluation import wilson
from rag_lib.experiments.questions import QUESTIONS, SPLITS, load_questions
from rag_lib.experiments.results import RESULTS_DIR, format_table, read_jsonl
from rag_lib.graphs.rag import extractive_answer
from rag_lib.index import chunk_rows
from rag_lib.llm import get_chat_model

CONTEXTS = ("hop 1 alone", "hop 2 alone", "both")


def hop_passages(hop: dict) -> list[Document]:
    """The chunks of the hop's file that hold its evidence, named as the multi-hop index names them."""
    rows = chunk_rows(DATA / hop["source"], Chunker())
    chunks = [Document(r["text"], metadata={"source": str(CORPUS / hop["source"]), "chunk_index": r["chunk_index"],
                                              "title": r.get("title", "")}) for r in rows]
    found = [c for c in chunks if holds_hop(c, hop)]
    if not found:
        raise ValueError(f"no chunk of {hop['source']} holds the evidence {hop['evidence']!r}: fix the question")
    return found


def answer_row(llm: BaseChatModel, question: dict, context: str, documents: list[Document]) -> dict:
    """One extractive answer from `documents`, scored against the question's gold."""
    clear_prompt_cache(llm)
    started = time.perf_counter()
    answer, extracted, calls = extractive_answer(question["question"], documents, llm, (), 2)
    seconds = time.perf_counter() - started
    return ({"id": question["id"], "question": question["question"], "context": context, "split": question["split"],
             "language": question["language"],
             "answer_type": question["answer_type"], "golds": question["golds"], "answer": answer,
             "extracted": extracted, "llm_calls": calls, "chunks": len(documents), "s": round(seconds, 3),
             "load_1min": round(os.getloadavg()[0], 2)}
            | score(answer, question["golds"], [d.page_content for d in documents]))


def run(llm: BaseChatModel, questions: list[dict], runs_file: Path) -> None:
    """Write the missing (question, context) rows to `runs_file`."""
    runs_file.parent.mkdir(parents=True, exist_ok=True)
    done = {(r["question"], r["context"]) for r in read_jsonl(runs_file, repair=True)}
    work = {q["id"]: [c for c in CONTEXTS if (q["question"], c) not in done] for q in questions}
    print(f"{sum(map(len, work.values()))} rows to write, {len(done)} done before, in {runs_file}", flush=True)
    with tqdm(total=sum(map(len, work.values())), unit="answer", smoothing=0, dynamic_ncols=True) as bar:
        for q in (q for q in questions if work[q["id"]]):
            first, second = (hop_passages(hop) for hop in q["hops"])  # chunked once per question
            passages = {"hop 1 alone": first, "hop 2 alone": second, "both": first + second}
            for context in work[q["id"]]:
                row = answer_row(llm, q, context, passages[context]) | {"model": model_name(llm)}
                append_row(runs_file, row)
                bar.update()
                tqdm.write(f"{q['id']} {context:12} contains {row['contains']:.0f} F1 {row['f1']:.2f} {row['s']:.1f} s")


def right(row: dict) -> bool:
    """An answer that holds the gold (contains it, or matches it exactly)."""
    return row["contains"] == 1.0 or row["em"] == 1.0


def rates(rows: list[dict], group: str) -> list[dict]:
    """Per context: how many answers hold the gold, with its 95 % Wilson interval, and the mean F1."""
    table = []
    for context in CONTEXTS:
        chosen = [r for r in rows if r["context"] == context]
        hits = sum(right(r) for r in chosen)
        low, high = wilson(hits, len(chosen))
        table.append({"questions": group, "context": context, "n": len(chosen), "right": hits,
                      "rate": round(hits / len(chosen), 3) if chosen else None, "ci": [round(low, 3), round(high, 3)],
                      "F1": round(sum(r["f1"] for r in chosen) / len(chosen), 3) if chosen else None})
    return table


def summarize(questions: list[dict], runs_file: Path) -> dict:
    """Rates per split and per answer type; the ids answered from one passage alone. A row counts only while its
    question reads as it did when it was answered (a rewritten question is answered again)."""
    wanted = {(q["id"], q["question"]) for q in questions}
    rows = [r for r in read_jsonl(runs_file) if (r["id"], r["question"]) in wanted]
    groups = {"all": rows} | {s: [r for r in rows if r["split"] == s] for s in SPLITS}
    groups |= {t: [r for r in rows if r["answer_type"] == t] for t in sorted({q["answer_type"] for q in questions})}
    table = [line for name, chosen in groups.items() for line in rates(chosen, name)]
    single = sorted({r["id"] for r in rows if r["context"] != "both" and right(r)})
    loads = [r["load_1min"] for r in rows]
    return {"setup": {"questions": len(questions), "file": QUESTIONS.name, "chunker": Chunker().settings(),
                      "answer": "rag_lib.graphs.rag.extractive_answer (copied span, else a short answer)",
                      "model": ", ".join(sorted({r.get("model", "") for r in rows} - {""})) or None,
                      "load_1min over the rows": {"mean": round(sum(loads) / len(loads), 2), "max": max(loads)}
                      if loads else None},
            "rates": table, "answered from one passage": single,
            "answered from one passage, by context": {c: sorted(r["id"] for r in rows if r["context"] == c and right(r))
                                                      for c in CONTEXTS[:2]}}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks multihop_gold", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="the multi-hop questions (JSON)")
    parser.add_argument("--runs-file", type=Path, default=RESULTS_DIR / "answers_runs" / "multihop_gold.jsonl",
                        help="where the rows are appended")
    parser.add_argument("--summarize-only", action="store_true", help="only rebuild the summary from the rows")
    parser.add_argument("--out", default="multihop_gold", help="results name: bench_results/<out>.json")
    args = parser.parse_args(argv)
    questions = load_questions(args.questions)
    if not args.summarize_only:
        llm = get_chat_model()
        print("model:", model_name(llm), flush=True)
        run(llm, questions, args.runs_file)
    results = summarize(questions, args.runs_file)
    print(format_table(results["rates"]))
    print("answered from one passage:", len(results["answered from one passage"]), results["answered from one passage"])
    print("\nwrote", write_results(args.out, results))


if __name__ == "__main__":
    main(sys.argv[1:])
