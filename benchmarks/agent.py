"""Agentic RAG beside Corrective RAG, on data/agent_questions.json (44 questions, each labelled with the right
first step: search the documents, search the web, or answer without a lookup).

Two parts, written to bench_results/agent.json under the chat model's label ("local" for the GGUF in-process,
else the model name of the OpenAI-compatible endpoint set by RAG_LLM_MODEL / RAG_LLM_BASE_URL):
- compare (the default): the agent (`build_agent`, default knobs) and the CRAG graph answer every question over the
  same index and the same offline web; per question: the answer holds the gold, the agent's first step, the tools
  called and whether that is the expected trajectory, LLM calls, tokens and seconds.
- choice: the first step alone, one model call per question: constrained decoding (`rag_lib.agent.next_step`),
  and with --native the model's own tool calling (bind_tools, tool_choice "auto"), for endpoints that offer it.
Proportions come with 95% Wilson intervals (the set is small).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from benchmarks import MEASURED_ANALYZER, write_results
from benchmarks.answers_pipelines import clear_prompt_cache
from rag_lib.agent import agent_prompt, build_agent, docs_tool, next_step, run_agent, web_tool
from rag_lib.embeddings import get_embeddings
from rag_lib.experiments.demo import DOCS
from rag_lib.experiments.evaluation import wilson
from rag_lib.experiments.results import RESULTS_DIR, agent_tables
from rag_lib.experiments.tokens import TokenCounter, token_counter_for
from rag_lib.graphs.crag import CRAGContext, build_crag_graph
from rag_lib.index import index_directory
from rag_lib.llm import get_chat_model
from rag_lib.matching import occurs_in
from rag_lib.retriever import Retriever
from rag_lib.store import PROJECT_ROOT, connect, ensure_collection_for
from rag_lib.websearch import get_web_search

QUESTIONS = PROJECT_ROOT / "data" / "agent_questions.json"
K = 3  # passages per search, for the agent's tool and CRAG alike


def load_questions(path: Path = QUESTIONS) -> list[dict]:
    """The labelled questions: question, answer (or null), source, kind (docs/web/direct), first_step."""
    return json.loads(path.read_text(encoding="utf-8"))


def model_label(llm: BaseChatModel) -> str:
    """"local" for the in-process GGUF, else the endpoint's model name."""
    return "local" if hasattr(llm, "client") and hasattr(llm.client, "reset") else str(getattr(llm, "model_name", llm))


def expected_trajectory(kind: str, tools: list[str]) -> bool:
    """docs: the documents searched first; web: the web searched at some point; direct: no tool at all."""
    if kind == "docs":
        return bool(tools) and tools[0] == "search_docs"
    if kind == "web":
        return "web_search" in tools
    return not tools


def holds_gold(answer: str, gold: str | None) -> bool | None:
    """Whether the answer contains the gold answer (None when the question has none to check)."""
    return None if gold is None else occurs_in(gold, answer)


def first_choice(llm: BaseChatModel, tools: list, question: str, native: bool) -> str:
    """The first step's action: a tool name or "answer"."""
    messages = [HumanMessage(question)]
    if native:
        reply = llm.bind_tools(tools, tool_choice="auto").invoke([("system", agent_prompt(tools)), *messages])
    else:
        reply = next_step(llm, tools, messages)
    return reply.tool_calls[0]["name"] if reply.tool_calls else "answer"


def run_choice(llm: BaseChatModel, tools: list, questions: list[dict], native: bool) -> dict[str, Any]:
    """First-step accuracy overall and per kind, with the confusion of wanted -> chosen."""
    rows = []
    for item in questions:
        clear_prompt_cache(llm)
        started = time.perf_counter()
        try:
            chosen, error = first_choice(llm, tools, item["question"], native), None
        except Exception as failure:  # an endpoint that refuses tools: recorded, counted wrong
            chosen, error = "error", f"{type(failure).__name__}: {failure}"[:300]
        rows.append({"question": item["question"], "kind": item["kind"], "wanted": item["first_step"],
                     "chosen": chosen, "right": chosen == item["first_step"], "error": error,
                     "s": round(time.perf_counter() - started, 2)})
        print(f"  {'ok ' if rows[-1]['right'] else 'BAD'} {item['first_step']:11} -> {chosen:11} "
              f"{item['question'][:50]}", flush=True)
    return {"rows": rows, "summary": proportions(rows, "right")}


def proportions(rows: list[dict], key: str) -> dict[str, Any]:
    """Share of rows where `key` is true, overall and per kind, with 95% Wilson intervals (None values skipped)."""
    out = {}
    for kind in ("all", "docs", "web", "direct"):
        values = [r[key] for r in rows if (kind == "all" or r["kind"] == kind) and r[key] is not None]
        hits = sum(bool(v) for v in values)
        low, high = wilson(hits, len(values))
        out[kind] = {"n": len(values), "k": hits, "rate": round(hits / len(values), 3) if values else None,
                     "ci95": [round(low, 3), round(high, 3)]}
    return out


def crag_tools(state: dict) -> list[str]:
    """CRAG's trajectory in the agent's terms: it always searches the documents; the web when it went there."""
    return ["search_docs"] + (["web_search"] if state.get("web_results") or state.get("web_error") else [])


def run_compare(llm: BaseChatModel, retriever: Retriever, web, questions: list[dict]) -> dict[str, Any]:
    """The agent and CRAG on every question, one after the other, each from an empty prompt cache."""
    agent = build_agent(llm, [docs_tool(retriever), web_tool(web, k=K)])
    crag = build_crag_graph()
    context = CRAGContext(retriever=retriever, llm=llm, web_search=web, web_k=K)
    rows = []
    for item in questions:
        for pipeline in ("agent", "crag"):
            counter = TokenCounter(token_counter_for(llm))
            clear_prompt_cache(llm)
            started = time.perf_counter()
            if pipeline == "agent":
                out = run_agent(agent, item["question"], config={"callbacks": [counter]})
                answer, tools = out["answer"], [name for name, _ in out["tools"]]
                queries = [query for _, query in out["tools"]]
            else:
                state = crag.invoke({"question": item["question"]}, {"callbacks": [counter]}, context=context)
                answer, tools, queries = state.get("answer", ""), crag_tools(state), [state.get("web_query", "")]
            rows.append({
                "pipeline": pipeline, "question": item["question"], "kind": item["kind"],
                "correct": holds_gold(answer, item["answer"]), "tools": tools, "queries": queries,
                "first_step_right": (tools[0] if tools else "answer") == item["first_step"],
                "expected_trajectory": expected_trajectory(item["kind"], tools), "answer": answer[:400],
                "llm_calls": counter.calls, "prompt_tokens": counter.prompt_tokens,
                "completion_tokens": counter.completion_tokens, "s": round(time.perf_counter() - started, 2),
            })
            r = rows[-1]
            print(f"  {pipeline:5} {str(r['correct']):5} {'+'.join(tools) or '-':24} {r['s']:6}s "
                  f"{item['question'][:40]}", flush=True)
    return {"rows": rows, "summary": compare_summary(rows)}


def compare_summary(rows: list[dict]) -> dict[str, Any]:
    """Per pipeline: correct and expected-trajectory rates (Wilson intervals), mean calls/tool calls, median s."""
    out = {}
    for pipeline in ("agent", "crag"):
        mine = [r for r in rows if r["pipeline"] == pipeline]
        if not mine:
            continue
        out[pipeline] = {
            "correct": proportions(mine, "correct"),
            "first_step_right": proportions(mine, "first_step_right"),
            "expected_trajectory": proportions(mine, "expected_trajectory"),
            "mean_llm_calls": round(statistics.mean(r["llm_calls"] for r in mine), 2),
            "mean_tool_calls": round(statistics.mean(len(r["tools"]) for r in mine), 2),
            "mean_prompt_tokens": round(statistics.mean(r["prompt_tokens"] for r in mine)),
            "median_s": round(statistics.median(r["s"] for r in mine), 1),
        }
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks agent", description=__doc__)
    parser.add_argument("--parts", default="compare", help="comma list of: choice, compare (compare also scores "
                        "the agent's first step, so choice alone is for endpoints: --parts choice --native)")
    parser.add_argument("--native", action="store_true", help="also measure the model's native tool choice")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions (a smoke run)")
    parser.add_argument("--out", type=Path, default=None, help="results file (default bench_results/agent.json)")
    args = parser.parse_args(argv)
    questions = load_questions()[: args.limit]
    llm, embeddings = get_chat_model(), get_embeddings()
    label = model_label(llm)
    with tempfile.TemporaryDirectory() as folder:
        client = connect(str(Path(folder) / "agent.db"))
        ensure_collection_for(client, embeddings, analyzer_params=MEASURED_ANALYZER)
        index_directory(client, DOCS, embeddings, progress=False)
        retriever = Retriever(client=client, embeddings=embeddings, k=K)
        web = get_web_search()
        tools = [docs_tool(retriever), web_tool(web, k=K)]
        parts: dict[str, Any] = {"load_at_start": [round(x, 2) for x in os.getloadavg()], "questions": len(questions),
                                "BM25 analyzer": MEASURED_ANALYZER}
        wanted = args.parts.split(",")
        if "choice" in wanted:
            parts["choice_constrained"] = run_choice(llm, tools, questions, native=False)
            if args.native:
                parts["choice_native"] = run_choice(llm, tools, questions, native=True)
        if "compare" in wanted:
            parts["compare"] = run_compare(llm, retriever, web, questions)
        parts["load_at_end"] = [round(x, 2) for x in os.getloadavg()]
    path = args.out or RESULTS_DIR / "agent.json"
    results = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    results.pop("meta", None)  # write_results records this run's machine
    previous = results.get(label, {}) if isinstance(results.get(label), dict) else {}
    results[label] = {**previous, **parts}
    write_results("agent", results, path=path)
    print(agent_tables(label, results[label]))
