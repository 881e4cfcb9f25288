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
  same with two passages instead of three: a shorter prompt), crag and judge (each
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
import os
import random
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field
from tqdm import tqdm

from benchmarks import MEASURED_ANALYZER, write_results
from rag_lib.embeddings import default_min_similarity, get_embeddings
from rag_lib.experiments.cmrc import Dataset, cmrc_path, load_cmrc
from rag_lib.experiments.evaluation import (
    any_occurs_in,
    bootstrap_ci,
    cited_passage,
    clause_scores,
    exact_match,
    f1,
    paired_difference,
    rescored,
    without_citations,
)
from rag_lib.experiments.results import RESULTS_DIR, format_table, read_jsonl, with_ci
from rag_lib.experiments.tokens import TokenCounter, token_counter_for
from rag_lib.graphs.crag import CRAGContext, PassageAnswer, build_crag_graph, grade_with_llm
from rag_lib.graphs.judge import JudgeContext, answer_documents, build_judge_graph
from rag_lib.graphs.rag import RAGContext, build_rag_graph
from rag_lib.index import index_directory, source_name
from rag_lib.llm import get_chat_model
from rag_lib.matching import occurs_in
from rag_lib.retriever import Retriever
from rag_lib.store import PROJECT_ROOT, connect, ensure_collection_for
from rag_lib.structured import StructuredOutputError, structured_output
from rag_lib.text import detect_language
from rag_lib.websearch import OfflineWebSearch

DATA = PROJECT_ROOT / "data"
NAIVE_SYSTEM = "You grade retrieved passages."
METRICS = ("em", "f1", "em_clause", "f1_clause", "contains", "evidence", "llm_calls", "prompt_tokens",
           "completion_tokens", "s")
PIPELINES = ("llm_only", "rag", "rag_extractive", "rag_extractive_k2", "crag", "crag_extractive", "judge",
             "judge_extractive", "gold", "gold_generative")
INDEX_FREE = ("llm_only", "gold", "gold_generative")  # read no index: one run per question serves every setting
SETTINGS = ("local", "split")
# paired differences reported (first - second), when both pipelines have rows
PAIRS = (("rag", "llm_only"), ("rag_extractive", "rag"), ("rag_extractive_k2", "rag_extractive"), ("crag", "rag"),
         ("crag_extractive", "rag_extractive"),
         ("crag_extractive", "crag"), ("judge", "rag"), ("judge_extractive", "rag_extractive"),
         ("judge_extractive", "judge"), ("gold", "rag_extractive"), ("gold_generative", "rag"),
         ("gold", "gold_generative"))
# summary label -> row field: a mean with its bootstrap interval
MEANS = {"EM": "em", "F1": "f1", "EM clause": "em_clause", "F1 clause": "f1_clause", "contains gold": "contains",
         "evidence": "evidence", "LLM calls": "llm_calls", "prompt tokens": "prompt_tokens",
         "completion tokens": "completion_tokens", "s": "s"}
DIFFERENCES = ("EM", "F1", "EM clause", "F1 clause", "evidence", "LLM calls", "s")  # the paired differences
BOOTSTRAP = {"confidence": 0.95, "resamples": 2000, "seed": 0}
DEFAULT_QUESTIONS = 200
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


def home_of(data: Dataset, setting: str = "split") -> dict[str, str]:
    """Context id -> where the context lives: every one "local" in the local setting; in the split setting "local"
    (even positions in the file) or "web" (odd positions)."""
    if setting not in SETTINGS:
        raise ValueError(f"setting {setting!r}: choose from {', '.join(SETTINGS)}")
    if setting == "local":
        return dict.fromkeys(data.contexts, "local")
    return {context_id: "web" if i % 2 else "local" for i, context_id in enumerate(data.contexts)}


def cmrc_setup(data: Dataset, folder: Path, setting: str = "split") -> tuple[list[str], list[Document]]:
    """Local contexts -> files in `folder` (the local index), web ones -> offline web pages; returns the local
    context ids and the pages."""
    homes = home_of(data, setting)
    local = [context_id for context_id, home in homes.items() if home == "local"]
    for context_id in local:
        # "# title" becomes the chunks' title metadata, which knowledge refinement scores with each strip
        text = f"# {data.titles[context_id]}\n\n{data.contexts[context_id]}"
        (folder / f"{context_id}.txt").write_text(text, encoding="utf-8")
    pages = [Document(data.contexts[c], metadata={"title": data.titles[c], "url": f"cmrc://{c}"})
             for c, home in homes.items() if home == "web"]
    return local, pages


def sample_questions(data: Dataset, n: int, seed: int) -> list[dict]:
    """The first `n` non-empty questions of a shuffle fixed by `seed` (so the sample for a smaller n is the start of
    the one for a larger n), each with its rank in that order, its context and where the context lives when split."""
    homes = home_of(data)
    pool = [{"question": q.text, "golds": list(q.answers), "id": q.id, "context_id": q.context_id,
             "home": homes[q.context_id]} for q in data.questions if q.text and q.answers]
    if n > len(pool):
        raise ValueError(f"--n {n}: the CMRC file has only {len(pool)} questions with a text and an answer")
    random.Random(seed).shuffle(pool)
    return [q | {"rank": rank} for rank, q in enumerate(pool[:n], 1)]


def score(answer: str, golds: list[str], contexts: list[str]) -> dict[str, Any]:
    """EM and F1 of the answer without its citation markers, and of its clause (`clause_scores`, from the passage
    it was copied from, kept in the row); whether it contains a gold answer (fairer to a sentence-long answer than
    EM); and whether a gold answer was in what the generator saw (evidence)."""
    passage = cited_passage(answer, contexts)
    answer = without_citations(answer)
    return ({"em": exact_match(answer, golds), "f1": f1(answer, golds)} | clause_scores(answer, golds, passage)
            | {"contains": float(any_occurs_in(golds, [answer])), "evidence": float(any_occurs_in(golds, contexts)),
               "cited_passage": passage})


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
    """What the generative judge graph's writer read (`answer_documents`, follow-up answers folded in)."""
    return [d.page_content for d in answer_documents(state)]


def judge_extractive_context(state: dict) -> list[str]:
    """What the extractive judge graph copied from (`answer_documents` without the follow-ups' answers)."""
    return [d.page_content for d in answer_documents(state, folded=False)]


def crag_context(state: dict) -> list[str]:
    """What CRAG's generator read: the refined knowledge (kept strips of local passages and web pages)."""
    return [d.page_content for d in state["knowledge"]]


def rag_context(state: dict) -> list[str]:
    """What a RAG graph's generator read: the passages that passed the retriever."""
    return [d.page_content for d in state["documents"]]


# per pipeline: the text its generator saw, read from the final state
CONTEXT_OF: dict[str, Callable[[dict], list[str]]] = {
    "llm_only": lambda state: [],
    "rag": rag_context,
    "rag_extractive": rag_context,
    "rag_extractive_k2": rag_context,
    "crag": crag_context,
    "crag_extractive": crag_context,
    "judge": judge_context,
    "judge_extractive": judge_extractive_context,
    "gold": rag_context,
    "gold_generative": rag_context,
}


class GoldRetriever(BaseRetriever):
    """Perfect retrieval, for the upper bound: the question's own context, whatever the query."""

    documents: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.documents)


def llama_timings(llm: BaseChatModel | None) -> tuple[float, float, int, int] | None:
    """llama.cpp's own running totals for the local model (seconds reading prompts, seconds generating, prompt
    tokens read, i.e. not reused from its cache, and prompt tokens given, chat template included); None for any
    other model."""
    client = getattr(llm, "client", None)
    from llama_cpp import Llama, llama_perf_context

    if not isinstance(client, Llama):
        return None
    data = llama_perf_context(client.ctx)
    return data.t_p_eval_ms / 1000, data.t_eval_ms / 1000, data.n_p_eval, given_tokens(client)


def given_tokens(client: Any) -> int:
    """Prompt tokens handed to llama.cpp so far, chat template included: counted by wrapping the client's `generate`
    (which every completion calls with the whole prompt) on first use. Given minus read is the prefix llama.cpp
    reused from its KV cache."""
    if not hasattr(client, "given_tokens"):
        client.given_tokens, generate = 0, client.generate

        def counting(tokens: Any, *args: Any, **kwargs: Any) -> Any:
            client.given_tokens += len(tokens)
            return generate(tokens, *args, **kwargs)

        client.generate = counting
    return client.given_tokens


def run_pipeline(
    graph: Runnable, question: str, golds: list[str], count: Callable[[str], int],
    context: Callable[[dict], list[str]], llm: BaseChatModel | None = None,
) -> tuple[dict, dict]:
    """One question through one graph: (scores, LLM calls, tokens, seconds, answer and error; the final state).
    `context` reads what the generator saw from the final state. An exception is recorded in "error" and
    scored as a failed answer (0 everywhere), so one bad question does not end the run. With the local model as
    `llm`, llama.cpp's timings split the seconds: reading the prompt, generating, and the rest."""
    tokens, started, error, before = TokenCounter(count), time.perf_counter(), "", llama_timings(llm)
    try:
        state = graph.invoke({"question": question}, config={"callbacks": [tokens]})
    except Exception as exc:  # noqa: BLE001 - any failure of the pipeline is a result to count
        state, error = {}, f"{type(exc).__name__}: {exc}"[:300]
    seconds, after = time.perf_counter() - started, llama_timings(llm)
    if "llm_calls" in state and tokens.calls != state["llm_calls"]:
        raise RuntimeError(
            f"the graph counted {state['llm_calls']} LLM calls but the model saw {tokens.calls}: a node that calls "
            "the model must add its calls to llm_calls (the cost columns would be wrong otherwise)"
        )
    usage = {"llm_calls": tokens.calls, "prompt_tokens": tokens.prompt_tokens,
             "completion_tokens": tokens.completion_tokens}
    if before and after:
        usage |= {"s_prompt": round(after[0] - before[0], 3), "s_generate": round(after[1] - before[1], 3),
                  "prompt_tokens_read": after[2] - before[2], "prompt_tokens_given": after[3] - before[3]}
    if error:
        scores = {"em": 0.0, "f1": 0.0, "em_clause": 0.0, "f1_clause": 0.0, "contains": 0.0, "evidence": 0.0}
    else:
        scores = score(state["answer"], golds, context(state))
    return scores | usage | {"s": seconds, "answer": state.get("answer", ""), "error": error}, state


def indexed_retrievers(files: Path, database: Path, stack: ExitStack) -> Callable[..., BaseRetriever]:
    """Index `files` into a new Milvus Lite database (closed by `stack`); a maker of K-hit retrievers over it."""
    client = connect(uri=str(database))
    stack.callback(client.close)  # also stops Lite's in-process server before its folder is removed
    embeddings = get_embeddings()
    ensure_collection_for(client, embeddings, analyzer_params=MEASURED_ANALYZER)
    index_directory(client, files, embeddings, progress=False)

    def retriever(**kwargs: Any) -> BaseRetriever:
        return Retriever(client=client, embeddings=embeddings, **({"k": K} | kwargs))

    return retriever


def model_name(llm: BaseChatModel) -> str:
    """A short name of the chat model for the records: the GGUF file, the endpoint's model, or the class."""
    path = getattr(llm, "model_path", None)
    if path:
        return Path(path).name
    return str(getattr(llm, "model_name", None) or type(llm).__name__)


def clear_prompt_cache(llm: BaseChatModel) -> None:
    """Make llama.cpp forget its last prompt, so a run does not start from the prefix another pipeline left in its
    KV cache: every pipeline pays for its whole prompt, whatever ran before. A no-op for any other model."""
    client = getattr(llm, "client", None)
    if client is None:
        return
    from llama_cpp import Llama

    if isinstance(client, Llama):
        client.reset()


def index_free_pipelines(llm: BaseChatModel, data: Dataset) -> dict[str, Callable[[dict], Runnable]]:
    """llm_only and the gold bound (the RAG graph with a retriever that returns the question's own context), per
    question: they read no index, so one set serves every setting."""
    llm_only, rag = build_llm_only_graph(llm), build_rag_graph()

    def gold(mode: str) -> Callable[[dict], Runnable]:
        def bound(q: dict) -> Runnable:
            context_id = q["context_id"]
            document = Document(data.contexts[context_id],
                                metadata={"source": f"{context_id}.txt", "title": data.titles[context_id]})
            return rag.bind(context=RAGContext(retriever=GoldRetriever(documents=[document]), llm=llm, mode=mode))

        return bound

    return {"llm_only": lambda q: llm_only, "gold": gold("extractive"), "gold_generative": gold("generative")}


def indexed_pipelines(
    llm: BaseChatModel, data: Dataset, setting: str, folder: Path, stack: ExitStack,
) -> dict[str, Callable[[dict], Runnable]]:
    """Index the setting's local contexts into a new Milvus Lite database in `folder` (closed by `stack`) and bind
    rag, crag (web: the setting's web pages, none when local) and judge, generative and extractive, to it, with the
    course's runtime contexts."""
    files = folder / setting
    files.mkdir()
    _, pages = cmrc_setup(data, files, setting)
    retriever = indexed_retrievers(files, folder / f"{setting}.db", stack)
    cutoff = default_min_similarity()
    rag = build_rag_graph()
    graphs = {  # bind: every invoke gets this context
        "rag": rag.bind(context=RAGContext(retriever=retriever(min_similarity=cutoff), llm=llm)),
        "rag_extractive": rag.bind(context=RAGContext(retriever=retriever(min_similarity=cutoff), llm=llm,
                                                      mode="extractive")),
        "rag_extractive_k2": rag.bind(context=RAGContext(retriever=retriever(min_similarity=cutoff, k=2), llm=llm,
                                                         mode="extractive")),  # a shorter prompt: two passages
    }
    crag, judge, web = build_crag_graph(), build_judge_graph(), OfflineWebSearch(pages)
    for suffix, mode in (("", "generative"), ("_extractive", "extractive")):
        graphs["crag" + suffix] = crag.bind(context=CRAGContext(
            retriever=retriever(), llm=llm, web_search=web, max_llm_calls=CRAG_MAX_LLM_CALLS, mode=mode))
        graphs["judge" + suffix] = judge.bind(context=JudgeContext(
            retriever=retriever(), llm=llm, max_depth=JUDGE_MAX_DEPTH, max_llm_calls=JUDGE_MAX_LLM_CALLS,
            min_similarity=cutoff, mode=mode))
    return {name: (lambda q, graph=graph: graph) for name, graph in graphs.items()}


def details(pipeline: str, state: dict) -> dict:
    """What a pipeline decided on its way, for reading the rows: passages, span found, CRAG's action, follow-ups."""
    extracted = {"extracted": state["extracted"]} if "extracted" in state else {}
    if CONTEXT_OF[pipeline] is crag_context:
        return {"crag_action": state.get("action", ""), "web_query": state.get("web_query", ""),
                "web_pages": len(state.get("web_results", []))} | extracted
    if CONTEXT_OF[pipeline] in (judge_context, judge_extractive_context):
        return {"follow_ups": len(state.get("sub_answers", []))}
    if CONTEXT_OF[pipeline] is rag_context:
        return {"passages": len(state.get("documents", []))} | extracted
    return {}


# ---------------------------------------------------------------- resumable runs: one JSONL file per setting

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


def run_cmrc(
    llm: BaseChatModel, data: Dataset, sample: list[dict], settings: list[str], pipelines: list[str],
    runs_dir: Path, limit: int | None = None,
) -> int:
    """Write the missing rows of the sample to the runs files (at most `limit` of them), each as soon as it is done;
    Ctrl-C (or SIGTERM, see `main`) stops after the rows already written. Returns how many rows were written."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    model, done = model_name(llm), finished_rows(runs_dir)
    foreign = sorted({row.get("model", "?") for row in done.values()} - {model})
    if foreign:
        raise SystemExit(f"{runs_dir} holds rows measured with {', '.join(foreign)} and this run uses {model}: pass "
                         "another --runs-dir so that the rows of two models are not mixed")
    work = plan_work(sample, settings, pipelines, done)[:limit]
    session = {"session": datetime.now().isoformat(timespec="milliseconds"), "model": model,
               "n_threads": getattr(llm, "n_threads", None), "settings": settings, "pipelines": pipelines,
               "questions": len(sample), "rows planned": len(work)}
    append_row(runs_dir / SESSIONS, session | {"event": "start", "load_1min": round(os.getloadavg()[0], 2)})
    homes = {setting: home_of(data, setting) for setting in settings}
    count, free, indexed = token_counter_for(llm), index_free_pipelines(llm, data), {}
    written, started = 0, time.perf_counter()
    runs = sum(source is None for *_, source in work)
    print(f"{len(work)} rows to write ({runs} pipeline runs, {len(work) - runs} copies), "
          f"{len(done)} done before, in {runs_dir}", flush=True)
    with ExitStack() as stack, tqdm(total=runs, unit="run", smoothing=0, dynamic_ncols=True) as bar:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="answers_bench_")))
        try:
            for q, setting, pipeline, source in work:
                where = {"setting": setting, "home": homes[setting][q["context_id"]]}
                if source is not None:
                    row = done[source, pipeline, q["id"]] | where | {"copied_from": source}
                else:
                    if pipeline in INDEX_FREE:
                        pipeline_for = free[pipeline]
                    else:
                        if setting not in indexed:
                            bar.set_postfix_str(f"indexing the {setting} setting")
                            indexed[setting] = indexed_pipelines(llm, data, setting, folder, stack)
                        pipeline_for = indexed[setting][pipeline]
                    clear_prompt_cache(llm)
                    result, state = run_pipeline(pipeline_for(q), q["question"], q["golds"], count,
                                                 CONTEXT_OF[pipeline], llm)
                    row = (where | {"pipeline": pipeline, "id": q["id"], "rank": q["rank"], "question": q["question"],
                                    "golds": q["golds"]} | result | {"s": round(result["s"], 3)}
                           | details(pipeline, state)
                           | {"model": model, "session": session["session"],
                              "load_1min": round(os.getloadavg()[0], 2)})
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


# ---------------------------------------------------------------- summary with bootstrap intervals


def interval(values: list[float], statistic: Callable[..., Any] = np.mean) -> tuple[float, list[float]]:
    """(estimate, [low, high]): the statistic over questions and its 95 % bootstrap interval (fixed seed)."""
    estimate, low, high = bootstrap_ci(values, statistic, **BOOTSTRAP)
    return estimate, [low, high]


def describe(rows: list[dict]) -> dict:
    """n, errors, and every mean of MEANS plus the median seconds, each with its bootstrap interval."""
    out: dict[str, Any] = {"n": len(rows), "errors": sum(bool(r["error"]) for r in rows)}
    for label, field in MEANS.items():
        out[label], out[f"{label} ci"] = interval([r[field] for r in rows])
    out["s p50"], out["s p50 ci"] = interval([r["s"] for r in rows], np.median)
    return out


def compare(first: dict[str, dict], second: dict[str, dict]) -> dict:
    """Paired differences first - second (rows by question id) on the questions both have, with intervals."""
    shared = [question for question in first if question in second]
    out: dict[str, Any] = {"n": len(shared)}
    for label in DIFFERENCES:
        field = MEANS[label]
        difference, low, high = paired_difference([first[q][field] for q in shared], [second[q][field] for q in shared],
                                                  **BOOTSTRAP)
        out[f"{label} diff"], out[f"{label} diff ci"] = difference, [low, high]
    return out


def summarize_setting(setting: str, rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(summary, paired) rows of one setting: over all its questions and, when the contexts live in two places
    (split), over each place alone."""
    homes = sorted({row["home"] for row in rows})
    groups = {"all": rows}
    if len(homes) > 1:
        groups |= {home: [r for r in rows if r["home"] == home] for home in homes}
    summary, paired = [], []
    for group, part in groups.items():
        found = {name: {r["id"]: r for r in part if r["pipeline"] == name} for name in PIPELINES}
        summary += [{"setting": setting, "context in": group, "pipeline": name} | describe(list(by_id.values()))
                    for name, by_id in found.items() if by_id]
        paired += [{"setting": setting, "context in": group, "comparison": f"{a} - {b}"} | compare(found[a], found[b])
                   for a, b in PAIRS if set(found[a]) & set(found[b])]
    return summary, paired


def where_seconds_go(rows: list[dict]) -> dict:
    """Where an answer's seconds go, per pipeline, as llama.cpp timed them (rows run on the local model, not copied,
    no error): mean seconds reading the prompt, generating and the rest (retrieval, embedding, graph, parsing), and
    the share of prompt tokens read rather than reused from llama.cpp's prompt cache."""
    timed = [r for r in rows if "s_prompt" in r and not r["error"] and "copied_from" not in r]
    per_pipeline = {}
    for name in dict.fromkeys(r["pipeline"] for r in timed):
        mine = [r for r in timed if r["pipeline"] == name]
        mean = {key: float(np.mean([r[key] for r in mine]))
                for key in ("s", "s_prompt", "s_generate", "prompt_tokens", "prompt_tokens_read")}
        per_pipeline[name] = {
            "runs": len(mine), "s (mean)": mean["s"], "s reading the prompt": mean["s_prompt"],
            "s generating": mean["s_generate"], "s rest": mean["s"] - mean["s_prompt"] - mean["s_generate"],
            "prompt tokens read / counted": mean["prompt_tokens_read"] / max(mean["prompt_tokens"], 1),
        }
    if not timed:
        return {}
    read, generated = sum(r["prompt_tokens_read"] for r in timed), sum(r["completion_tokens"] for r in timed)
    overall = {"runs": len(timed), "prompt tokens read per s": read / sum(r["s_prompt"] for r in timed),
               "generated tokens per s": generated / max(sum(r["s_generate"] for r in timed), 1e-9)}
    return {"overall": overall, "per pipeline": per_pipeline}


def sample_rows(runs_dir: Path, setting: str, sample: list[dict]) -> list[dict]:
    """The setting's rows for the questions of the sample (the first row of each pipeline and question), re-scored."""
    wanted, seen, rows = {q["id"] for q in sample}, set(), []
    for row in read_jsonl(runs_file(runs_dir, setting)):
        if row["id"] in wanted and (row["pipeline"], row["id"]) not in seen:
            seen.add((row["pipeline"], row["id"]))
            rows.append(rescored(row))
    return rows


def sessions_of(runs_dir: Path) -> list[dict]:
    """Every run recorded in the runs folder, its start and end events merged (a killed run has no end)."""
    sessions: dict[str, dict] = {}
    for event in read_jsonl(runs_dir / SESSIONS):
        kind = event.pop("event")
        load = event.pop("load_1min")
        sessions.setdefault(event["session"], {}).update(event | {f"load_1min at {kind}": load})
    return list(sessions.values())


def summarize_cmrc(
    previous: dict, data: Dataset, path: Path, sample: list[dict], settings: list[str], runs_dir: Path, seed: int,
) -> dict:
    """The cmrc part from the runs files: setup, summary and paired rows of `settings`, with the other settings'
    rows kept from `previous` (the cmrc part already in the results file)."""
    keep = previous if "paired" in previous else {}  # an older layout is replaced whole
    setup_before = keep.get("setup", {}).get("settings", {})
    summary = [r for r in keep.get("summary", []) if r["setting"] not in settings]
    paired = [r for r in keep.get("paired", []) if r["setting"] not in settings]
    per_setting, models, every_row = {k: v for k, v in setup_before.items() if k not in settings}, set(), []
    for setting in settings:
        rows = sample_rows(runs_dir, setting, sample)
        every_row += rows
        models |= {row.get("model", "?") for row in rows}
        part, pairs = summarize_setting(setting, rows)
        summary, paired = summary + part, paired + pairs
        homes = home_of(data, setting).values()
        loads = [row["load_1min"] for row in rows if "load_1min" in row]
        per_setting[setting] = {
            "indexed contexts": sum(home == "local" for home in homes),
            "web pages": sum(home == "web" for home in homes),
            "questions with rows": len({row["id"] for row in rows}), "rows": len(rows),
            "runs file": source_name(runs_file(runs_dir, setting)),
            "load_1min over the rows": {"mean": round(float(np.mean(loads)), 2), "max": max(loads)} if loads else None,
        }
    order = {name: i for i, name in enumerate(SETTINGS)}
    summary.sort(key=lambda r: (order[r["setting"]], r["context in"] != "all", r["context in"]))
    paired.sort(key=lambda r: (order[r["setting"]], r["context in"] != "all", r["context in"]))
    sessions = sessions_of(runs_dir)
    setup = {
        "file": path.name, "contexts": len(data.contexts), "questions": len(sample), "seed": seed,
        "sample": "the first n non-empty questions of a shuffle fixed by the seed", "retriever k": K,
        "min_similarity": default_min_similarity(), "retriever": "hybrid RRF, dense + BM25",
        "BM25 analyzer": MEASURED_ANALYZER, "crag max_llm_calls": CRAG_MAX_LLM_CALLS,
        "judge max_llm_calls": JUDGE_MAX_LLM_CALLS, "judge max_depth": JUDGE_MAX_DEPTH,
        "pipelines": list(PIPELINES), "index-free pipelines (copied across settings)": list(INDEX_FREE),
        "bootstrap": BOOTSTRAP | {"method": "percentile, resampling questions"},
        "model": ", ".join(sorted(models)),
        "n_threads": sorted({s["n_threads"] for s in sessions if s.get("n_threads")}),
        "load_1min": {"at start": sessions[0].get("load_1min at start") if sessions else None,
                      "at end": sessions[-1].get("load_1min at end") if sessions else None},
        "sessions": sessions, "settings": per_setting,
    }
    return {"setup": setup, "summary": summary, "paired": paired, "where the seconds go": where_seconds_go(every_row)}


def print_tables(cmrc: dict, settings: list[str]) -> None:
    """Per setting: the pipelines with their intervals, then the paired differences."""
    for setting in settings:
        rows = [r for r in cmrc["summary"] if r["setting"] == setting]
        print(f"\n{setting} setting ({cmrc['setup']['settings'][setting]['questions with rows']} questions; "
              "mean [95 % bootstrap interval])")
        print(format_table([
            {"context in": r["context in"], "pipeline": r["pipeline"], "n": r["n"], "errors": r["errors"],
             "EM": with_ci(r, "EM"), "F1": with_ci(r, "F1"), "EM clause": with_ci(r, "EM clause"),
             "F1 clause": with_ci(r, "F1 clause"), "evidence": with_ci(r, "evidence"),
             "LLM calls": f"{r['LLM calls']:.1f}",
             "tokens in/out": f"{r['prompt tokens']:.0f}/{r['completion tokens']:.0f}",
             "s p50": with_ci(r, "s p50", 1), "s mean": f"{r['s']:.1f}"} for r in rows]))
        pairs = [r for r in cmrc["paired"] if r["setting"] == setting]
        if pairs:
            print(f"\n{setting} setting, paired differences on the questions both finished")
            print(format_table([
                {"context in": r["context in"], "comparison": r["comparison"], "n": r["n"],
                 **{f"{label} diff": with_ci(r, f"{label} diff", 1 if label == "s" else 2) for label in DIFFERENCES}}
                for r in pairs]))


def print_seconds(cmrc: dict) -> None:
    """Per pipeline, the seconds llama.cpp spent reading prompts and generating, and the rest."""
    where = cmrc.get("where the seconds go") or {}
    if not where:
        return
    overall = where["overall"]
    print(f"\nwhere the seconds go (llama.cpp's timings of {overall['runs']} runs): "
          f"{overall['prompt tokens read per s']:.0f} prompt tokens read per s, "
          f"{overall['generated tokens per s']:.1f} generated tokens per s")
    print(format_table([{"pipeline": name} | {k: f"{v:.0f}" if k == "runs" else f"{v:.2f}" for k, v in row.items()}
                        for name, row in where["per pipeline"].items()]))


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


def main(argv: list[str]) -> None:
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
    args = parser.parse_args(argv)
    settings = names(args.settings, SETTINGS, "--settings")
    pipelines = names(args.pipelines, PIPELINES, "--pipelines")
    out = args.out or RESULTS_DIR / "answers.json"
    runs_dir = args.runs_dir or RESULTS_DIR / "answers_runs"
    cmrc_wanted = "cmrc" in args.parts or args.summarize_only
    if cmrc_wanted:
        try:
            args.cmrc = cmrc_path(args.cmrc)
        except FileNotFoundError as error:
            raise SystemExit(str(error)) from None
        data = load_cmrc(args.cmrc)
        try:
            sample = sample_questions(data, args.n, args.seed)
        except ValueError as error:
            raise SystemExit(str(error)) from None
    results = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    meta = results.pop("meta", None)
    if args.summarize_only:
        results["cmrc"] = summarize_cmrc(results.get("cmrc", {}), data, args.cmrc, sample, settings, runs_dir,
                                         args.seed)
        print_tables(results["cmrc"], settings)
        print_seconds(results["cmrc"])
        print("\nwrote", write_results("answers", results, meta, path=out))  # the measurement's own record stays
        return
    llm = get_chat_model()
    if "grader" in args.parts:
        with tempfile.TemporaryDirectory() as tmp:
            client = connect(uri=str(Path(tmp) / "grader.db"))
            embeddings = get_embeddings()
            ensure_collection_for(client, embeddings, analyzer_params=MEASURED_ANALYZER)
            index_directory(client, DATA / "docs", embeddings, progress=False)
            results["grader"] = run_grader(llm, Retriever(client=client, embeddings=embeddings, k=4))
            client.close()
    if "cmrc" in args.parts:
        restore = stop_on_sigterm()
        try:
            run_cmrc(llm, data, sample, settings, pipelines, runs_dir, args.limit)
        finally:
            restore()
        results["cmrc"] = summarize_cmrc(results.get("cmrc", {}), data, args.cmrc, sample, settings, runs_dir,
                                         args.seed)
        print_tables(results["cmrc"], settings)
        print_seconds(results["cmrc"])
    print("\nwrote", write_results("answers", results, path=out))


if __name__ == "__main__":
    main([])
