"""The pipelines the answers benchmark compares, bound as the course runs them, and one question through one of
them, scored."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from benchmarks import MEASURED_ANALYZER
from benchmarks.answers_sample import cmrc_setup
from rag_lib.embeddings import default_min_similarity, get_embeddings
from rag_lib.experiments.cmrc import Dataset
from rag_lib.experiments.evaluation import (
    any_occurs_in,
    cited_passage,
    clause_scores,
    exact_match,
    f1,
    without_citations,
)
from rag_lib.experiments.tokens import TokenCounter
from rag_lib.graphs.crag import CRAGContext, build_crag_graph
from rag_lib.graphs.judge import JudgeContext, answer_documents, build_judge_graph
from rag_lib.graphs.rag import RAGContext, build_rag_graph
from rag_lib.index import index_directory
from rag_lib.retriever import Retriever
from rag_lib.store import connect, ensure_collection_for
from rag_lib.text import detect_language
from rag_lib.websearch import OfflineWebSearch

PIPELINES = ("llm_only", "rag", "rag_extractive", "rag_extractive_k2", "rag_web_extractive", "crag",
             "crag_extractive", "judge", "judge_extractive", "gold", "gold_generative")
INDEX_FREE = ("llm_only", "gold", "gold_generative")  # read no index: one run per question serves every setting
K = 3  # chunks retrieved per question by every retrieving pipeline
CRAG_MAX_LLM_CALLS = 6
JUDGE_MAX_LLM_CALLS, JUDGE_MAX_DEPTH = 6, 2  # a follow-up child gets at most 2 calls: one level is reachable
LLM_ONLY_SYSTEM = (
    "You answer questions from what you know. Answer briefly in the language of the question. "
    "If you do not know the answer, reply only: {unknown}"
)
UNKNOWN = {"zh": "我不知道。", "en": "I don't know."}


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
    "rag_web_extractive": rag_context,
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


class WebFallbackRetriever(BaseRetriever):
    """Plain RAG's retriever with a web route and no grader: the local hits that pass the cutoff, else the web's
    top pages for the question as asked. The baseline that tells what CRAG's model calls add to a web route."""

    local: BaseRetriever
    web: Any  # a rag_lib.websearch.WebSearch
    k: int = K

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.local.invoke(query, config={"callbacks": run_manager.get_child()})
        return hits or self.web.search(query, k=self.k)


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


def indexed_retrievers(files: Path, database: Path, stack: ExitStack,
                       analyzer_params: dict = MEASURED_ANALYZER) -> Callable[..., BaseRetriever]:
    """Index `files` into a new Milvus Lite database (closed by `stack`), BM25 over `analyzer_params`; a maker of
    K-hit retrievers over it."""
    client = connect(uri=str(database))
    stack.callback(client.close)  # also stops Lite's in-process server before its folder is removed
    embeddings = get_embeddings()
    ensure_collection_for(client, embeddings, analyzer_params=analyzer_params)
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
    fallback = WebFallbackRetriever(local=retriever(min_similarity=cutoff), web=web)
    graphs["rag_web_extractive"] = rag.bind(context=RAGContext(retriever=fallback, llm=llm, mode="extractive"))
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
        documents = state.get("documents", [])
        web = {"web_pages": sum("backend" in d.metadata for d in documents)} if pipeline == "rag_web_extractive" else {}
        return {"passages": len(documents)} | web | extracted
    return {}
