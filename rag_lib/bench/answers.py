"""Answer quality of LLM-only, plain RAG, Corrective RAG and the judge graph, and how well the local LLM grades
passages.

Two parts, both written to bench_results/answers.json (a part that is not re-run keeps its old results):
- grader: on data/ (sample + web questions), passages labelled answer-bearing (the best retrieved local chunk
  that contains the gold answer) or off-topic (the top local chunks of questions the docs cannot answer), graded
  by a naive "is it relevant?" yes/no prompt and by CRAG's copy-and-verify grader.
- cmrc: CMRC 2018 trial contexts split in two by a fixed rule (even positions -> local Milvus index, odd -> the
  offline "web" corpus), a fixed random sample of questions, four pipelines on the same questions: LLM-only (no
  retrieval), plain RAG, CRAG (local + offline web) and the judge graph (local index only, bounded depth and
  LLM calls). Per question: EM/F1, answer contains a gold answer, evidence found (a gold answer in the context
  given to the generator), LLM calls, tokens, seconds, and the error if the pipeline raised (recorded, scored 0,
  the run goes on). Summary per pipeline: means, medians and cost ratios to plain RAG.
The CMRC file is --cmrc, else the one `rag_lib.cmrc.cmrc_path` finds (the trial split shipped in the project under
its own licence, CC BY-SA 4.0).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import LLMResult
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field

from rag_lib.bench import RESULTS_DIR, format_table, write_results
from rag_lib.cmrc import Dataset, cmrc_path, load_cmrc
from rag_lib.evaluation import exact_match, f1
from rag_lib.graphs.crag import CRAGContext, PassageAnswer, build_crag_graph, grade_with_llm
from rag_lib.graphs.judge import JudgeContext, build_judge_graph, fold
from rag_lib.graphs.rag import RAGContext, build_rag_graph
from rag_lib.index import index_directory
from rag_lib.matching import any_occurs_in, occurs_in
from rag_lib.models import (
    StructuredOutputError,
    default_min_similarity,
    get_chat_model,
    get_embeddings,
    structured_output,
)
from rag_lib.retriever import Retriever
from rag_lib.store import PROJECT_ROOT, connect
from rag_lib.text import detect_language
from rag_lib.websearch import OfflineWebSearch

DATA = PROJECT_ROOT / "data"
NAIVE_SYSTEM = "You grade retrieved passages."
METRICS = ("em", "f1", "contains", "evidence", "llm_calls", "prompt_tokens", "completion_tokens", "s")
PIPELINES = ("llm_only", "plain", "crag", "judge")
K = 3  # chunks retrieved per question by every retrieving pipeline
CRAG_MAX_LLM_CALLS = 6
JUDGE_MAX_LLM_CALLS, JUDGE_MAX_DEPTH = 6, 2  # a follow-up child gets at most 2 calls: one level is reachable
LLM_ONLY_SYSTEM = (
    "You answer questions from what you know. Answer briefly in the language of the question. "
    "If you do not know the answer, reply only: {unknown}"
)
UNKNOWN = {"zh": "我不知道。", "en": "I don't know."}


class NaiveRelevance(BaseModel):
    """Grade whether a passage is relevant to a question."""

    relevant: bool = Field(description="true if the passage is relevant to the question")


class TokenCounter(BaseCallbackHandler):
    """Counts chat-model calls and the tokens they read and wrote (messages + tool schemas, template tokens
    excluded): a cost measure that does not depend on how busy the machine is. The local model streams, so it
    reports no usage itself; `count_tokens` is its tokenizer (see `token_counter_for`).
    Pass it as config={"callbacks": [counter]}. Thread-safe: the judge graph's parallel tasks share it."""

    def __init__(self, count_tokens: Callable[[str], int]) -> None:
        self.count_tokens = count_tokens
        self.calls = self.prompt_tokens = self.completion_tokens = 0
        self._lock = threading.Lock()

    def on_chat_model_start(self, serialized: dict, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        tools = (kwargs.get("invocation_params") or {}).get("tools") or []
        text = "\n".join(str(m.content) for batch in messages for m in batch)
        text += json.dumps(tools, ensure_ascii=False) if tools else ""
        tokens = self.count_tokens(text)
        with self._lock:
            self.calls += 1
            self.prompt_tokens += tokens

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generation in (g for batch in response.generations for g in batch):
            calls = getattr(getattr(generation, "message", None), "tool_calls", None) or []
            text = generation.text + "".join(json.dumps(c["args"], ensure_ascii=False) for c in calls)
            tokens = self.count_tokens(text)
            with self._lock:
                self.completion_tokens += tokens


def token_counter_for(llm: BaseChatModel) -> Callable[[str], int]:
    """The model's own tokenizer: llama.cpp's for the local GGUF, else LangChain's get_num_tokens."""
    client = getattr(llm, "client", None)
    if hasattr(client, "tokenize"):
        return lambda text: len(client.tokenize(text.encode("utf-8"), add_bos=False, special=True)) if text else 0
    return llm.get_num_tokens


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


def home_of(data: Dataset) -> dict[str, str]:
    """Context id -> where the context lives: "local" (even positions in the file) or "web" (odd positions)."""
    return {context_id: "web" if i % 2 else "local" for i, context_id in enumerate(data.contexts)}


def cmrc_setup(data: Dataset, folder: Path) -> tuple[list[str], list[Document]]:
    """Local contexts -> files in `folder` (the local index), web ones -> offline web pages; returns the local
    context ids and the pages."""
    homes = home_of(data)
    local = [context_id for context_id, home in homes.items() if home == "local"]
    for context_id in local:
        # "# title" becomes the chunks' title metadata, which knowledge refinement scores with each strip
        text = f"# {data.titles[context_id]}\n\n{data.contexts[context_id]}"
        (folder / f"{context_id}.txt").write_text(text, encoding="utf-8")
    pages = [Document(data.contexts[c], metadata={"title": data.titles[c], "url": f"cmrc://{c}"})
             for c, home in homes.items() if home == "web"]
    return local, pages


def sample_questions(data: Dataset, n: int, seed: int) -> list[dict]:
    """A fixed random sample of non-empty questions over all contexts, each tagged with where its context lives."""
    homes = home_of(data)
    pool = [{"question": q.text, "golds": list(q.answers), "id": q.id, "home": homes[q.context_id]}
            for q in data.questions if q.text]
    return random.Random(seed).sample(pool, n)


def score(answer: str, golds: list[str], contexts: list[str]) -> dict[str, float]:
    """EM and F1; whether the answer contains a gold answer (fairer to a sentence-long answer than EM); and
    whether a gold answer was in what the generator saw (evidence)."""
    return {"em": exact_match(answer, golds), "f1": f1(answer, golds),
            "contains": float(any_occurs_in(golds, [answer])), "evidence": float(any_occurs_in(golds, contexts))}


class LLMOnlyState(TypedDict, total=False):
    question: str
    answer: str


def build_llm_only_graph(llm: BaseChatModel) -> CompiledStateGraph:
    """The no-retrieval baseline as a one-node graph: the answer prompt of plain RAG without the passages."""

    def generate(state: LLMOnlyState) -> LLMOnlyState:
        system = LLM_ONLY_SYSTEM.format(unknown=UNKNOWN[detect_language(state["question"])])
        reply = llm.invoke([SystemMessage(system), HumanMessage(f"Question: {state['question']}")])
        return {"answer": str(reply.content).strip()}

    graph = StateGraph(LLMOnlyState)
    graph.add_node("generate", generate)
    graph.add_edge(START, "generate")
    graph.add_edge("generate", END)
    return graph.compile()


def judge_context(state: dict) -> list[str]:
    """What the judge graph's generator read: chunks not scored 0, each with its follow-up's answer folded in."""
    subs = {s["index"]: s for s in state.get("sub_answers", [])}
    return [fold(r, subs.get(r["index"])) for r in sorted(state["judgments"], key=lambda r: r["index"])
            if r["score"] != 0]


# per pipeline: the text its generator saw, read from the final state
CONTEXT_OF: dict[str, Callable[[dict], list[str]]] = {
    "llm_only": lambda state: [],
    "plain": lambda state: [d.page_content for d in state["documents"]],
    "crag": lambda state: [d.page_content for d in state["knowledge"]],
    "judge": judge_context,
}


def run_pipeline(
    graph: CompiledStateGraph, question: str, golds: list[str], count: Callable[[str], int],
    context: Callable[[dict], list[str]],
) -> tuple[dict, dict]:
    """One question through one graph: (scores, LLM calls, tokens, seconds, answer and error; the final state).
    `context` reads what the generator saw from the final state. An exception is recorded in "error" and
    scored as a failed answer (0 everywhere), so one bad question does not end the run."""
    tokens, started, error = TokenCounter(count), time.perf_counter(), ""
    try:
        state = graph.invoke({"question": question}, config={"callbacks": [tokens]})
    except Exception as exc:  # noqa: BLE001 - any failure of the pipeline is a result to count
        state, error = {}, f"{type(exc).__name__}: {exc}"[:300]
    seconds = time.perf_counter() - started
    if "llm_calls" in state and tokens.calls != state["llm_calls"]:
        raise RuntimeError(
            f"the graph counted {state['llm_calls']} LLM calls but the model saw {tokens.calls}: a node that calls "
            "the model must add its calls to llm_calls (the cost columns would be wrong otherwise)"
        )
    usage = {"llm_calls": tokens.calls, "prompt_tokens": tokens.prompt_tokens,
             "completion_tokens": tokens.completion_tokens}
    if error:
        scores = {"em": 0.0, "f1": 0.0, "contains": 0.0, "evidence": 0.0}
    else:
        scores = score(state["answer"], golds, context(state))
    return scores | usage | {"s": seconds, "answer": state.get("answer", ""), "error": error}, state


def ratio(value: float, baseline: float) -> float | None:
    """value / baseline, or None (JSON null) when the baseline is 0."""
    return value / baseline if baseline else None


def summarize_cmrc(rows: list[dict]) -> list[dict]:
    """Per pipeline and where the context lives (local / web / all): errors, mean quality, mean and median cost,
    and cost ratios to plain RAG on the same questions."""
    summary = []
    for home in ("local", "web", "all"):
        part = [r for r in rows if home in ("all", r["home"])]
        if not part:
            continue

        def mean(name: str, metric: str) -> float:
            return statistics.fmean(r[f"{name}_{metric}"] for r in part)

        def median(name: str, metric: str) -> float:
            return statistics.median(r[f"{name}_{metric}"] for r in part)

        def tokens(name: str) -> float:
            return mean(name, "prompt_tokens") + mean(name, "completion_tokens")

        for name in PIPELINES:
            summary.append({
                "pipeline": name, "context in": home, "questions": len(part),
                "errors": sum(bool(r[f"{name}_error"]) for r in part),
                "EM": mean(name, "em"), "F1": mean(name, "f1"), "contains gold": mean(name, "contains"),
                "evidence": mean(name, "evidence"),
                "LLM calls": mean(name, "llm_calls"), "LLM calls p50": median(name, "llm_calls"),
                "prompt tokens": mean(name, "prompt_tokens"), "completion tokens": mean(name, "completion_tokens"),
                "s": mean(name, "s"), "s p50": median(name, "s"),
                "s / plain": ratio(mean(name, "s"), mean("plain", "s")),
                "calls / plain": ratio(mean(name, "llm_calls"), mean("plain", "llm_calls")),
                "tokens / plain": ratio(tokens(name), tokens("plain")),
            })
    return summary


def progress_line(row: dict) -> str:
    """F1/evidence, LLM calls and seconds of each pipeline on one question, for the log."""
    cells = []
    for name in PIPELINES:
        failed = " ERROR" if row[f"{name}_error"] else ""
        cells.append(f"{name} {row[f'{name}_f1']:.2f}/{row[f'{name}_evidence']:.0f} "
                     f"{row[f'{name}_llm_calls']}c {row[f'{name}_s']:.0f}s{failed}")
    return " | ".join(cells)


def run_cmrc(llm, path: Path, n: int, seed: int) -> dict:
    """LLM-only, plain RAG, CRAG and the judge graph on a fixed CMRC sample, half the contexts local and half on
    the offline web (only CRAG searches it)."""
    data = load_cmrc(path)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "cmrc_local"
        folder.mkdir()
        local, pages = cmrc_setup(data, folder)
        client = connect(uri=str(Path(tmp) / "cmrc.db"))
        embeddings = get_embeddings()
        index_directory(client, folder, embeddings, progress=False)
        cutoff = default_min_similarity()

        def retriever(**kwargs: Any) -> Retriever:
            return Retriever(client=client, embeddings=embeddings, k=K, **kwargs)

        graphs = {
            "llm_only": build_llm_only_graph(llm),
            "plain": build_rag_graph().bind(context=RAGContext(retriever=retriever(min_similarity=cutoff), llm=llm)),
            "crag": build_crag_graph().bind(context=CRAGContext(
                retriever=retriever(), llm=llm, web_search=OfflineWebSearch(pages), max_llm_calls=CRAG_MAX_LLM_CALLS)),
            "judge": build_judge_graph().bind(context=JudgeContext(  # bind: every invoke gets this context
                retriever=retriever(), llm=llm, max_depth=JUDGE_MAX_DEPTH, max_llm_calls=JUDGE_MAX_LLM_CALLS,
                min_similarity=cutoff)),
        }
        rows, count = [], token_counter_for(llm)
        for i, q in enumerate(sample_questions(data, n, seed), 1):
            row = {"id": q["id"], "home": q["home"], "question": q["question"], "gold": q["golds"][0]}
            states = {}
            for name, graph in graphs.items():
                result, states[name] = run_pipeline(graph, q["question"], q["golds"], count, CONTEXT_OF[name])
                row |= {f"{name}_{k}": v for k, v in result.items()}
            crag, judge = states["crag"], states["judge"]
            row |= {"crag_action": crag.get("action", ""), "crag_web_query": crag.get("web_query", ""),
                    "judge_follow_ups": len(judge.get("sub_answers", []))}
            rows.append(row)
            print(f"  {i:3}/{n} {q['home']:5} {progress_line(row)} | {q['question'][:24]}", flush=True)
        client.close()
    summary = summarize_cmrc(rows)
    print(format_table([r for r in summary if r["context in"] == "all"]))
    setup = {"file": path.name, "contexts": len(data.contexts), "local contexts": len(local), "web pages": len(pages),
             "questions": n, "seed": seed, "retriever k": K, "plain min_similarity": cutoff,
             "crag max_llm_calls": CRAG_MAX_LLM_CALLS, "judge max_llm_calls": JUDGE_MAX_LLM_CALLS,
             "judge max_depth": JUDGE_MAX_DEPTH, "judge min_similarity": cutoff, "pipelines": list(PIPELINES)}
    return {"setup": setup, "summary": summary, "questions": rows}


def cmrc_golds(path: Path) -> dict[str, list[str]]:
    """Question id -> all its gold answers, from the CMRC file."""
    return {q.id: list(q.answers) for q in load_cmrc(path).questions}


def rescore_cmrc(cmrc: dict, path: Path) -> dict:
    """Recompute EM, F1 and contains-gold of the recorded answers with the current metrics (no model call; the
    evidence, cost and answers stay as measured), and the summary from them."""
    golds = cmrc_golds(path)
    for row in cmrc["questions"]:
        for name in PIPELINES:
            if not row[f"{name}_error"]:
                answer = row[f"{name}_answer"]
                row |= {f"{name}_em": exact_match(answer, golds[row["id"]]), f"{name}_f1": f1(answer, golds[row["id"]]),
                        f"{name}_contains": float(any_occurs_in(golds[row["id"]], [answer]))}
    return cmrc | {"summary": summarize_cmrc(cmrc["questions"])}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m rag_lib.bench answers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cmrc", type=Path, default=None, help="CMRC 2018 JSON (default: rag_lib.cmrc.cmrc_path)")
    parser.add_argument("--n", type=int, default=20, help="CMRC questions in the sample")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", nargs="+", choices=["grader", "cmrc"], default=["grader", "cmrc"])
    parser.add_argument("--rescore", action="store_true",
                        help="only recompute EM/F1 of the recorded CMRC answers (after a metric change); no model")
    args = parser.parse_args(argv)
    if "cmrc" in args.parts or args.rescore:
        try:
            args.cmrc = cmrc_path(args.cmrc)
        except FileNotFoundError as error:
            raise SystemExit(str(error)) from None
    previous = RESULTS_DIR / "answers.json"
    results = json.loads(previous.read_text(encoding="utf-8")) if previous.exists() else {}
    meta = results.pop("meta", None)
    if args.rescore:
        results["cmrc"] = rescore_cmrc(results["cmrc"], args.cmrc)
        print(format_table([r for r in results["cmrc"]["summary"] if r["context in"] == "all"]))
        print("\nwrote", write_results("answers", results, meta))
        return
    llm = get_chat_model()
    if "grader" in args.parts:
        with tempfile.TemporaryDirectory() as tmp:
            client = connect(uri=str(Path(tmp) / "grader.db"))
            embeddings = get_embeddings()
            index_directory(client, DATA / "docs", embeddings, progress=False)
            results["grader"] = run_grader(llm, Retriever(client=client, embeddings=embeddings, k=4))
            client.close()
    if "cmrc" in args.parts:
        results["cmrc"] = run_cmrc(llm, args.cmrc, args.n, args.seed)
    print("\nwrote", write_results("answers", results))


if __name__ == "__main__":
    main([])
