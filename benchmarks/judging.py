"""How often the judge's 0/1/2 agrees with labels: data/judge_labels.json, judged by the judge node itself.

The labelled set is built from the committed question files by `--build` (deterministic, no model), each passage
a chunk of data/docs or data/web as the indexer cuts it:
- 2, "the passage states the answer": each answerable question of sample_questions.json with the chunk of its
  document that holds its answer;
- 1, "on topic, the answer is not in it": each of the first LABELLED_MULTIHOP questions of multihop_questions.json
  with the chunk that holds its first hop's evidence (the bridge fact), when that chunk does not hold the final answer;
- 0, "about something else": each answerable sample question with the answer-bearing chunk of the next sample
  question that is about another document.
Measuring runs `rag_lib.graphs.judge.judge` on every item (one model call each, as inside the graph, with no cosine
cutoff so that the model decides every label) and compares three scores with the label: the model's own, the score
after the judge's checks (a 2 must bring its answer from the chunk; see `checked`), and the score the graph keeps
(0 for a passage under the cosine cutoff, as the graph gives without asking the model, else the checked one).
Counts per label, the 3x3 confusion table and the agreement with a Wilson 95 % interval.
Results: bench_results/judging.json; `--rescore` recomputes the cutoff part from its rows without the model."""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import cache
from pathlib import Path

from langchain_core.documents import Document
from langgraph.runtime import Runtime

from benchmarks import write_results
from benchmarks.answers_pipelines import GoldRetriever
from rag_lib.embeddings import default_min_similarity, embed_queries, get_embeddings
from rag_lib.experiments.evaluation import wilson
from rag_lib.experiments.results import format_table, load_results
from rag_lib.graphs.judge import JudgeContext, JudgeTask, judge
from rag_lib.index import chunk_rows
from rag_lib.llm import get_chat_model
from rag_lib.matching import occurs_in
from rag_lib.retriever import cosine
from rag_lib.store import PROJECT_ROOT

DATA = PROJECT_ROOT / "data"
LABELS = DATA / "judge_labels.json"
MEANING = {0: "about something else", 1: "on topic, the answer is not in it", 2: "the passage states the answer"}
LABELLED_MULTIHOP = 51  # mh-01 to mh-51: the questions the committed labels and bench_results/judging.json cover
SCORES = {"llm score": "the model's own 0/1/2", "score": "after the judge's checks (graphs.judge.checked)",
          "graph score": "what the graph keeps: 0 under the cosine cutoff without the model, else the checked score"}


@cache
def chunks_of(source: str) -> tuple[str, ...]:
    """The chunk texts of one data/ file ("docs/x.md"), cut as `index_directory` cuts them (once per file)."""
    return tuple(row["text"] for row in chunk_rows(DATA / source))


def holding(source: str, text: str) -> str | None:
    """The first chunk of `source` in which `text` occurs; None when none holds it whole."""
    return next((chunk for chunk in chunks_of(source) if occurs_in(text, chunk)), None)


def best_overlap(source: str, text: str) -> str:
    """The chunk of `source` sharing the most characters with `text` (an evidence sentence a chunk may cut)."""
    return max(chunks_of(source), key=lambda chunk: len(set(chunk) & set(text)) + 10 * occurs_in(text, chunk))


def build_labels() -> list[dict]:
    """The labelled items, from sample_questions.json and multihop_questions.json (see the module docstring)."""
    sample = [q for q in json.loads((DATA / "sample_questions.json").read_text(encoding="utf-8"))
              if q["answer"] and q["source"]]
    bearing = [(q, holding(f"docs/{q['source']}", q["answer"])) for q in sample]
    bearing = [(q, chunk) for q, chunk in bearing if chunk]
    items = [{"question": q["question"], "passage": chunk, "source": f"docs/{q['source']}", "label": 2,
              "why": "the question's own document, the chunk holding its answer"} for q, chunk in bearing]
    for i, (q, _) in enumerate(bearing):
        other = next((o, chunk) for o, chunk in bearing[i + 1:] + bearing[:i] if o["source"] != q["source"])
        items.append({"question": q["question"], "passage": other[1], "source": f"docs/{other[0]['source']}",
                      "label": 0, "why": "the answer-bearing chunk of a question about another document"})
    for q in json.loads((DATA / "multihop_questions.json").read_text(encoding="utf-8"))[:LABELLED_MULTIHOP]:
        first = q["hops"][0]
        chunk = best_overlap(first["source"], first["evidence"])
        if not occurs_in(q["answer"], chunk):
            items.append({"question": q["question"], "passage": chunk, "source": first["source"], "label": 1,
                          "why": f"first hop of {q['id']}: the bridge ({q['bridge']}), not the answer"})
    return items


def judged(item: dict, context: JudgeContext) -> dict:
    """One item through the judge node: the model's score and the score after the checks."""
    document = Document(item["passage"], metadata={"source": item["source"]})
    task = JudgeTask(question=item["question"], index=0, document=document, may_call=True)
    started = time.perf_counter()
    record = judge(task, Runtime(context=context))["judgments"][0]
    return {"llm score": record["llm_score"], "score": record["score"], "answer": record["answer"],
            "follow_up": record["follow_up"], "note": record["note"], "s": round(time.perf_counter() - started, 2)}


def with_cutoff(rows: list[dict]) -> list[dict]:
    """Each row with its passage's cosine similarity to the question (e5, as the retriever scores it) and the score
    the graph keeps: 0 under the course's cutoff, without the model; else the checked score."""
    embeddings, cutoff = get_embeddings(), default_min_similarity()
    queries = embed_queries(embeddings, [r["question"] for r in rows])
    passages = embeddings.embed_documents([r["passage"] for r in rows])
    out = []
    for row, query, passage in zip(rows, queries, passages):
        similarity = cosine(query, passage)
        kept = 0 if cutoff is not None and similarity < cutoff else row["score"]
        out.append(row | {"similarity": round(similarity, 4), "graph score": kept})
    return out


def agreement(rows: list[dict], key: str) -> dict:
    """Counts per label, the confusion table (label -> predicted) and the agreement with its Wilson interval."""
    correct = sum(r[key] == r["label"] for r in rows)
    confusion = {str(label): {str(score): sum(r["label"] == label and r[key] == score for r in rows)
                              for score in (0, 1, 2, None)} for label in (0, 1, 2)}
    per_label = {str(label): {"n": sum(r["label"] == label for r in rows),
                              "agree": sum(r["label"] == label and r[key] == label for r in rows)}
                 for label in (0, 1, 2)}
    return {"score": key, "n": len(rows), "agree": correct, "agreement": correct / len(rows),
            "95% CI": list(wilson(correct, len(rows))), "per label": per_label, "confusion (label -> score)": confusion}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks judging", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="store_true", help="write the labelled set to data/judge_labels.json")
    parser.add_argument("--labels", type=Path, default=LABELS, help="the labelled set to judge")
    parser.add_argument("--limit", type=int, default=None, help="judge only the first N items")
    parser.add_argument("--out", default="judging", help="results name: bench_results/<out>.json")
    parser.add_argument("--rescore", action="store_true",
                        help="recompute similarities and the graph's score from the rows of bench_results/<out>.json")
    args = parser.parse_args(argv)
    if args.build:
        items = build_labels()
        args.labels.write_text(json.dumps(items, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {len(items)} items to {args.labels}:",
              ", ".join(f"{sum(i['label'] == k for i in items)} labelled {k}" for k in MEANING))
        return
    if args.rescore:
        previous = load_results(args.out)
        rows, meta = previous["rows"], previous["meta"]
    else:
        rows, meta = judge_all(json.loads(args.labels.read_text(encoding="utf-8"))[: args.limit]), None
    rows = with_cutoff(rows)
    summary = [agreement(rows, key) for key in SCORES]
    print(format_table([{k: v for k, v in s.items() if k in ("score", "n", "agree", "agreement", "95% CI")}
                        for s in summary]))
    setup = {"labels": args.labels.name, "items": len(rows), "meaning": MEANING, "scores": SCORES,
             "cutoff": default_min_similarity()}
    print("\nwrote", write_results(args.out, {"setup": setup, "summary": summary, "rows": rows}, meta=meta))


def judge_all(items: list[dict]) -> list[dict]:
    """Every item through the judge node with the configured chat model, printed as it goes."""
    # the node judges the passage it is given: the retriever is never called
    context = JudgeContext(retriever=GoldRetriever(documents=[]), llm=get_chat_model())
    rows = []
    for number, item in enumerate(items, 1):
        rows.append(item | judged(item, context))
        r = rows[-1]
        print(f"{number:3}/{len(items)} label {r['label']} model {r['llm score']} checked {r['score']} "
              f"{r['s']:5.1f} s  {r['question'][:50]}", flush=True)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
