"""How the support check of generated answers (`rag_lib.matching.supported`) treats good and bad answers.

Answers: every free-text answer in the answer benchmark's rows (bench_results/answers_runs): plain RAG and CRAG
(generative), and the extractive pipelines' fallback sentences (their copy was not found). Each is checked
against the passages its generator read, rebuilt here: retrieval is deterministic, so the same index and
retriever (k=3, hybrid, the calibrated cutoff for RAG, none for CRAG) give the same passages; the gold pipeline
read the question's own context. CRAG's generator read refined strips of its passages (and web pages in the split
setting, which are left out): its answers are checked against the whole passages, citations left out (they number
the strips), a looser check.
Correct = F1 >= 0.5 against the gold answers; a good check passes correct answers and flags wrong ones.
Made-up answers: each RAG answer checked against another question's passages (an unrelated passage), the
LLM-only answers (written from memory) checked against the passages RAG read, and a few written by hand.
`--generate N` adds N generative RAG answers of the next sample questions with the local model (kept in the
results file, so a re-run needs no model). Writes bench_results/support_check.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Iterable
from pathlib import Path

from benchmarks import MEASURED_ANALYZER, write_results
from benchmarks.answers_pipelines import K
from benchmarks.answers_sample import cmrc_setup, sample_questions
from rag_lib.embeddings import default_min_similarity, get_embeddings
from rag_lib.experiments.cmrc import load_cmrc
from rag_lib.experiments.evaluation import f1, without_citations
from rag_lib.experiments.results import RESULTS_DIR, format_table
from rag_lib.graphs.rag import answer_messages, is_refusal
from rag_lib.index import index_directory
from rag_lib.llm import get_chat_model
from rag_lib.matching import CITATION, SUPPORT_MIN_WORDS, support, supported
from rag_lib.retriever import Retriever
from rag_lib.store import connect, ensure_collection_for

RUNS = RESULTS_DIR / "answers_runs"
OUT = RESULTS_DIR / "support_check.json"
CORRECT_F1 = 0.5
PLAIN_RAG = ("rag", "rag (new)")  # generative plain RAG: the benchmark's rows, and the ones --generate adds
MILVUS_DOC = (
    "Milvus Lite runs inside the Python process and stores a database in a local folder. It suits prototypes and "
    "tests; a Milvus server is needed for many clients or billions of vectors."
)
CAFETERIA_DOC = "The Zephyr cafeteria opens at 7:30 on weekdays and at 9:00 on Sundays. It closes at 15:00."
# (answer, passages, whether the answer is right): hand-written cases, the first one as reported
HAND_WRITTEN = [
    ("The cafeteria opens on Sunday from 7:00 AM to 2:00 PM and serves breakfast and lunch [1].", [MILVUS_DOC], False),
    ("The cafeteria opens at 9:00 on Sundays [1].", [CAFETERIA_DOC], True),
    ("The cafeteria opens at 8:00 on Sundays [1].", [CAFETERIA_DOC], False),
    ("Milvus Lite stores its database in a local folder inside the Python process [1].", [MILVUS_DOC], True),
    ("Milvus Lite needs a Kubernetes cluster and an etcd service [1].", [MILVUS_DOC], False),
    ("食堂周日早上7点开门，下午2点关门。[1]", [MILVUS_DOC], False),
    ("Milvus Lite 在 Python 进程内运行，数据库存放在本地文件夹。[1]",
     ["Milvus Lite 在 Python 进程内运行，把数据库存放在本地文件夹中，适合原型和测试。"], True),
    ("Milvus Lite 需要三台服务器和一个 GPU。[1]",
     ["Milvus Lite 在 Python 进程内运行，把数据库存放在本地文件夹中，适合原型和测试。"], False),
]


def free_text_rows() -> list[dict]:
    """The benchmark rows whose answer is a generated sentence: generative pipelines and extractive fallbacks (split
    CRAG rows left out: their web pages are not rebuilt), refusals, failed runs and copied rows left out."""
    rows = []
    for setting in ("local", "split"):
        for line in (RUNS / f"{setting}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            generated = row["pipeline"] in ("rag", "crag") or row.get("extracted") is False
            web = setting == "split" and row["pipeline"].startswith("crag")
            if generated and not row["error"] and not web and "copied_from" not in row:
                rows.append(row)
    return [r for r in rows if not is_refusal(r["answer"])]


def llm_only_rows() -> list[dict]:
    """LLM-only answers of the local setting that are not "I don't know" (they read no passage)."""
    lines = (RUNS / "local.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    return [r for r in rows if r["pipeline"] == "llm_only" and "不知道" not in r["answer"] and not r["error"]]


def indexed(data, setting: str, folder: Path):
    """A new Milvus Lite database in `folder` holding the setting's contexts, as the answer benchmark indexes them."""
    files = folder / setting
    files.mkdir()
    cmrc_setup(data, files, setting)
    client = connect(uri=str(folder / f"{setting}.db"))
    embeddings = get_embeddings()
    ensure_collection_for(client, embeddings, analyzer_params=MEASURED_ANALYZER)
    index_directory(client, files, embeddings, progress=False)
    return client


def retrieved(data, setting: str, questions: dict[str, str], cutoffs: Iterable[bool]) -> dict[tuple, list[str]]:
    """(setting, with the cutoff?, question id) -> the passage texts the benchmark's retriever returns."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="support_check_") as folder:
        client = indexed(data, setting, Path(folder))
        try:
            for with_cutoff in cutoffs:
                minimum = default_min_similarity() if with_cutoff else None
                retriever = Retriever(client=client, embeddings=get_embeddings(), k=K, min_similarity=minimum)
                for qid, question in questions.items():
                    out[setting, with_cutoff, qid] = [d.page_content for d in retriever.invoke(question)]
        finally:
            client.close()
    return out


def as_checked(row: dict) -> str:
    """The row's answer as it is checked here: CRAG's [n] number its refined strips, not the rebuilt passages, so
    its citations are left out (every passage counts)."""
    return CITATION.sub("", row["answer"]) if row["pipeline"].startswith("crag") else row["answer"]


def passages_for(row: dict, data, found: dict[tuple, list[str]]) -> list[str]:
    """What the row's generator read: the question's context (gold), or what its retriever returned."""
    if row["pipeline"].startswith("gold"):
        return [data.contexts[next(q.context_id for q in data.questions if q.id == row["id"])]]
    return found[row["setting"], not row["pipeline"].startswith("crag"), row["id"]]


def generated_answers(data, sample: list[dict], have: set[str], n: int) -> list[dict]:
    """Generative plain-RAG answers (local setting, the RAG graph's retriever and prompt, unchecked) of the first `n`
    sample questions not in `have`."""
    todo = [q for q in sample if q["id"] not in have][:n]
    llm, rows = get_chat_model(), []
    with tempfile.TemporaryDirectory(prefix="support_check_") as folder:
        client = indexed(data, "local", Path(folder))
        try:
            retriever = Retriever(client=client, embeddings=get_embeddings(), k=K,
                                  min_similarity=default_min_similarity())
            for q in todo:
                documents = retriever.invoke(q["question"])
                if not documents:
                    continue  # the graph refuses without calling the model
                llm.client.reset()  # no prompt prefix reused from the previous question
                answer = str(llm.invoke(answer_messages(q["question"], documents, llm)).content).strip()
                rows.append({"setting": "local", "pipeline": "rag (new)", "id": q["id"], "question": q["question"],
                             "golds": q["golds"], "answer": answer})
                print(q["rank"], f"{f1(without_citations(answer), q['golds']):.2f}", answer[:80], flush=True)
        finally:
            client.close()
    return rows


def verdict(answer: str, passages: list[str], golds: list[str] | None = None) -> dict:
    """The support check's parts for one answer, with F1 and correctness when golds are given."""
    missing, share = support(answer, passages)
    out = {"missing numbers": missing, "word share": round(share, 3), "supported": supported(answer, passages)}
    if golds is not None:
        score = f1(without_citations(answer), golds)
        out |= {"f1": round(score, 3), "correct": score >= CORRECT_F1}
    return out


def counts(rows: list[dict], threshold: float = SUPPORT_MIN_WORDS) -> dict:
    """Correct answers that pass and wrong ones flagged, at a word-share threshold."""
    def passes(r: dict) -> bool:
        return not r["missing numbers"] and r["word share"] >= threshold

    good, bad = [r for r in rows if r.get("correct", False)], [r for r in rows if not r.get("correct", False)]
    return {"correct": len(good), "correct passed": sum(map(passes, good)), "wrong": len(bad),
            "wrong flagged": sum(not passes(r) for r in bad)}


def rebuilt_passages(data, rows: list[dict]) -> dict[tuple, list[str]]:
    """The passages every row's retriever returned, by (setting, with the cutoff?, question id)."""
    found: dict[tuple, list[str]] = {}
    for setting in ("local", "split"):
        mine = [r for r in rows if r["setting"] == setting and not r["pipeline"].startswith("gold")]
        questions = {r["id"]: r["question"] for r in mine}
        cutoffs = sorted({not r["pipeline"].startswith("crag") for r in mine})
        if questions:
            found |= retrieved(data, setting, questions, cutoffs)
    return found


def measure(data, rows: list[dict], only_llm: list[dict], generated: list[dict], found: dict) -> dict:
    """Every answer checked; the counts per group and at other thresholds; the unrelated-passage and hand cases."""
    checked = [{"setting": r["setting"], "pipeline": r["pipeline"], "id": r["id"], "answer": r["answer"]}
               | verdict(as_checked(r), passages_for(r, data, found), r["golds"]) for r in rows + generated]
    context_of = {q.id: q.context_id for q in data.questions}
    rag = [(r["answer"], passages_for(r, data, found), context_of[r["id"]]) for r in rows + generated
           if r["pipeline"] in PLAIN_RAG]
    # each RAG answer against the passages of the next question about another context: an unrelated passage
    unrelated = [verdict(answer, next(other for _, other, where in rag[i + 1:] + rag[:i] if where != home))
                 for i, (answer, _, home) in enumerate(rag)]
    memory = [verdict(r["answer"], found["local", True, r["id"]], r["golds"]) for r in only_llm
              if found["local", True, r["id"]]]
    hand = [{"answer": answer, "right": right} | verdict(answer, passages) for answer, passages, right in HAND_WRITTEN]
    kinds = dict.fromkeys(PLAIN_RAG, "generative RAG") | {"crag": "generative CRAG (whole passages)"}
    groups: dict[str, list[dict]] = {}
    for row in checked:
        groups.setdefault(kinds.get(row["pipeline"], "extractive fallbacks"), []).append(row)
    groups["all benchmark answers"] = checked
    summary = [{"answers": name} | counts(part) for name, part in groups.items()]
    summary.append({"answers": "LLM-only (from memory) vs RAG's passages"} | counts(memory))
    sweep = [{"min word share": t} | counts(checked, t) | {"unrelated flagged": sum(
        bool(u["missing numbers"]) or u["word share"] < t for u in unrelated)} for t in (0.4, 0.5, 0.6, 0.7, 0.8)]
    return {"summary": summary, "unrelated passage": {"answers": len(unrelated),
                                                      "flagged": sum(not u["supported"] for u in unrelated)},
            "threshold sweep": sweep, "hand-written": hand, "answers": checked}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generate", type=int, default=0, help="new generative RAG answers to add (local model)")
    args = parser.parse_args(argv)
    data = load_cmrc()
    previous = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {}
    generated = previous.get("generated", [])
    if args.generate:
        sample = sample_questions(data, len(data.questions) // 2, 0)
        have = {r["id"] for r in free_text_rows() if r["pipeline"] == "rag"} | {r["id"] for r in generated}
        generated += generated_answers(data, sample, have, args.generate)
    rows, only_llm = free_text_rows(), llm_only_rows()
    found = rebuilt_passages(data, rows + generated + [r | {"pipeline": "rag"} for r in only_llm])
    results = measure(data, rows, only_llm, generated, found) | {"generated": generated}
    results["setup"] = {"min word share": SUPPORT_MIN_WORDS, "correct": f"F1 >= {CORRECT_F1}", "retriever k": K,
                        "min_similarity": default_min_similarity()}
    print(format_table(results["summary"]))
    print(format_table(results["threshold sweep"]))
    print("wrote", write_results("support_check", results, path=OUT))


if __name__ == "__main__":
    main()
