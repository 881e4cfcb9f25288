"""The grader part of the answers benchmark: a naive yes/no relevance prompt and CRAG's copy-and-verify
grader on labelled passages from data/."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from benchmarks import MEASURED_ANALYZER
from rag_lib.embeddings import get_embeddings
from rag_lib.experiments.results import format_table
from rag_lib.graphs.crag import PassageAnswer, grade_with_llm
from rag_lib.index import index_directory
from rag_lib.matching import occurs_in
from rag_lib.retriever import Retriever
from rag_lib.store import PROJECT_ROOT, connect, ensure_collection_for
from rag_lib.structured import StructuredOutputError, structured_output

DATA = PROJECT_ROOT / "data"
NAIVE_SYSTEM = "You grade retrieved passages."


class NaiveRelevance(BaseModel):
    """Grade whether a passage is relevant to a question."""

    relevant: bool = Field(description="true if the passage is relevant to the question")


def grader_items(retriever: Retriever) -> list[dict]:
    """Labelled passages from data/: answer-bearing local chunks, and top local chunks of unanswerable questions."""
    questions = json.loads((DATA / "sample_questions.json").read_text(encoding="utf-8"))
    questions += [q | {"web": True} for q in json.loads((DATA / "web_questions.json").read_text(encoding="utf-8"))]
    items = []
    for q in questions:
        hits = retriever.invoke(q["question"])
        if q["answer"] and not q.get("web"):
            bearing = [h for h in hits if occurs_in(q["answer"], h.page_content)]
            chosen, label = bearing[:1], True
        else:
            chosen, label = hits[:2], False
        items += [
            {"question": q["question"], "text": h.page_content, "similarity": h.metadata["similarity"], "label": label}
            for h in chosen
        ]
    return items


def confusion(rows: list[dict], key: str) -> dict[str, float]:
    """Counts and accuracy of one grader's predictions against the labels."""
    tp = sum(r[key] and r["label"] for r in rows)
    tn = sum(not r[key] and not r["label"] for r in rows)
    fp = sum(r[key] and not r["label"] for r in rows)
    fn = sum(not r[key] and r["label"] for r in rows)
    return {"grader": key, "answer-bearing kept": tp, "answer-bearing dropped": fn, "off-topic dropped": tn,
            "off-topic kept": fp, "accuracy": (tp + tn) / len(rows)}


def run_grader(llm, retriever: Retriever) -> dict:
    """Both graders on every labelled passage, with the similarity of each so the band can be analysed."""
    naive = structured_output(llm, NaiveRelevance)
    copier = structured_output(llm, PassageAnswer)
    rows = []
    for item in grader_items(retriever):
        prompt = [SystemMessage(NAIVE_SYSTEM), HumanMessage(f"Question: {item['question']}\n\nPassage: {item['text']}")]
        started = time.perf_counter()
        try:
            said_yes = bool(naive.invoke(prompt).relevant)
        except StructuredOutputError:  # an unusable reply keeps nothing, like CRAG's grader
            said_yes = False
        middle = time.perf_counter()
        kept, copied = grade_with_llm(copier, item["question"], item["text"])
        rows.append({"question": item["question"], "similarity": round(item["similarity"], 4), "label": item["label"],
                     "naive_yes_no": said_yes, "copy_and_verify": kept, "copied": copied,
                     "naive_s": middle - started, "copy_s": time.perf_counter() - middle})
        print(f"  {item['label']!s:5} naive={said_yes!s:5} copy={kept!s:5} {copied!r:30.30} {item['question'][:40]}",
              flush=True)
    summary = [confusion(rows, "naive_yes_no"), confusion(rows, "copy_and_verify")]
    print(format_table(summary))
    return {"summary": summary, "passages": rows}


def run_grader_part(llm: BaseChatModel) -> dict:
    """Index data/docs into a throwaway Milvus Lite database and run both graders over its top 4 hits."""
    with tempfile.TemporaryDirectory() as tmp:
        client = connect(uri=str(Path(tmp) / "grader.db"))
        embeddings = get_embeddings()
        ensure_collection_for(client, embeddings, analyzer_params=MEASURED_ANALYZER)
        index_directory(client, DATA / "docs", embeddings, progress=False)
        result = run_grader(llm, Retriever(client=client, embeddings=embeddings, k=4))
        client.close()
    return result
