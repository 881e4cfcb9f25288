"""LangChain's own components beside the rag_lib helpers that do the same job, on CMRC 2018.

Each pair answers the same questions over the same chunks, embeddings and Milvus Lite database, interleaved
question by question (a change of machine load hits both sides alike), scored like `bench retrieval`: a hit is the
question's own context among the top-k contexts. Per pair: R@1, R@5, MRR@5, p50 ms per question, and the paired
R@1 difference (LangChain - rag_lib) with a bootstrap 95% interval over questions. The two splitters are compared
on their chunks too. The LLM pairs (multi-query, HyDE) run on a seeded slice: every call costs seconds on a CPU."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

import numpy as np
from langchain_classic.chains import HypotheticalDocumentEmbedder
from langchain_classic.retrievers import (
    ContextualCompressionRetriever,
    EnsembleRetriever,
    MultiQueryRetriever,
    ParentDocumentRetriever,
)
from langchain_classic.retrievers.document_compressors import EmbeddingsFilter
from langchain_community.retrievers import BM25Retriever
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.stores import InMemoryStore
from langchain_text_splitters import RecursiveCharacterTextSplitter
from pymilvus import MilvusClient
from tqdm import tqdm  # text, also in notebooks: a saved progress widget shows nothing in most viewers

from benchmarks import MEASURED_ANALYZER, write_results
from benchmarks.retrieval import cmrc_chunks, cmrc_parser
from rag_lib.chunking import CHUNK_OVERLAP, CHUNK_SIZE, SEPARATORS, recursive_split
from rag_lib.embeddings import E5_MIN_SIMILARITY
from rag_lib.experiments.advanced import hyde_search, multi_query_search, small_to_big
from rag_lib.experiments.cmrc import Dataset, dataset_label
from rag_lib.experiments.cmrc_search import CANDIDATES, Search, chunk_contexts, load_collection, to_contexts
from rag_lib.experiments.evaluation import paired_difference, percentile, recall_at_k, reciprocal_rank
from rag_lib.experiments.lc_milvus import HYBRID_SEARCH_KWARGS, hybrid_store
from rag_lib.experiments.rerank import EmbeddingReranker
from rag_lib.experiments.results import LLM_BASELINE, format_table
from rag_lib.llm import get_chat_model
from rag_lib.retriever import Retriever
from rag_lib.store import make_row
from rag_lib.text import tokenize

LLM_QUESTIONS = 30  # questions in the LLM slice (multi-query, HyDE)
HYDE_TOKENS = 96  # the hypothetical passage's budget on both sides (hypothetical_passage's default)
RESAMPLES = 2000
SENTENCE_ENDS = tuple("。！？!?.；;”」\"')）")
Split = Callable[[str], list[str]]

HYBRID = "Retriever(search_type='hybrid'): RRF in Milvus"
CUTOFF = "Retriever(min_similarity=0.86)"
RERANKED = "Retriever(ranker='model', EmbeddingReranker)"
# (job, LangChain pipeline, rag_lib pipeline): names of the pipelines built in `main`.
PAIRS = [
    ("fusion of dense + BM25", "EnsembleRetriever(dense, sparse Retriever)", HYBRID),
    ("fusion of dense + BM25", "EnsembleRetriever(BM25Retriever jieba, dense Retriever)", HYBRID),
    ("second-stage rerank", "ContextualCompressionRetriever(EmbeddingReranker)", RERANKED),
    ("similarity cutoff 0.86", "EmbeddingsFilter(threshold, k=None)", CUTOFF),
    ("similarity cutoff 0.86", "EmbeddingsFilter(threshold), default k=20", CUTOFF),
    ("small-to-big", "ParentDocumentRetriever(langchain-milvus, InMemoryStore)", "small_to_big(Retriever on children)"),
    ("chunking 300/50", "RecursiveCharacterTextSplitter defaults + hybrid", HYBRID),
    ("multi-query (LLM)", "MultiQueryRetriever.from_llm(dense Retriever)", "multi_query_search(dense Retriever)"),
    ("HyDE (LLM)", "Retriever(embeddings=HypotheticalDocumentEmbedder)", "hyde_search"),
]


def split_rows(data: Dataset, split: Split) -> list[dict]:
    """Rows for the course schema, each context cut by `split` (the LangChain splitter's chunks)."""
    rows = []
    for context_id, text in data.contexts.items():
        chunks = split(text)
        rows += [make_row(context_id, c, chunk_index=i, chunk_count=len(chunks), parent_id=context_id, language="zh")
                 for i, c in enumerate(chunks)]
    return rows


def splitter_stats(data: Dataset, name: str, split: Split) -> dict:
    """How a splitter cuts every context: chunk count, sizes, how many end at a sentence end, and its time (the
    best of three passes, so a first call's warm-up does not count)."""
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        chunks = [c for text in data.contexts.values() for c in split(text)]
        seconds.append(time.perf_counter() - start)
    sizes = [len(c) for c in chunks]
    return {
        "splitter": name, "chunks": len(chunks), "mean chars": statistics.mean(sizes), "max chars": max(sizes),
        "end at a sentence end": sum(c.rstrip().endswith(SENTENCE_ENDS) for c in chunks) / len(chunks),
        "split ms (all contexts)": min(seconds) * 1000,
    }


def score(pipelines: dict[str, Search], questions: list, desc: str) -> dict[str, dict[str, list[float]]]:
    """Per pipeline and question: R@1, R@5, MRR@5 and milliseconds, pipelines interleaved question by question.
    An empty question is a miss with no time (CMRC has two)."""
    runs = {name: {"R@1": [], "R@5": [], "MRR@5": [], "ms": []} for name in pipelines}
    for q in tqdm(questions, desc=desc):
        for name, search in pipelines.items():
            hits: list[tuple[str, str]] = []
            if q.text:
                start = time.perf_counter()
                hits = search(q.text)
                runs[name]["ms"].append((time.perf_counter() - start) * 1000)
            ranked, _ = to_contexts(hits)
            runs[name]["R@1"].append(recall_at_k(ranked, [q.context_id], 1))
            runs[name]["R@5"].append(recall_at_k(ranked, [q.context_id], 5))
            runs[name]["MRR@5"].append(reciprocal_rank(ranked, [q.context_id], 5))
    return runs


def summary(name: str, run: dict[str, list[float]]) -> dict:
    """One pipeline's row: mean scores and p50 latency."""
    means = {metric: float(np.mean(run[metric])) for metric in ("R@1", "R@5", "MRR@5")}
    return {"pipeline": name, "questions": len(run["R@1"]), **means, "p50 ms": percentile(run["ms"], 50)}


def compare(job: str, langchain: str, course: str, runs: dict[str, dict[str, list[float]]]) -> dict:
    """One pair's row: both sides' scores and p50, and the paired R@1 difference with its 95% interval."""
    lc, rl = runs[langchain], runs[course]
    diff, low, high = paired_difference(lc["R@1"], rl["R@1"], resamples=RESAMPLES)
    row = {"job": job, "langchain": langchain, "rag_lib": course, "questions": len(lc["R@1"])}
    for metric in ("R@1", "R@5", "MRR@5"):
        row[f"{metric} langchain"], row[f"{metric} rag_lib"] = float(np.mean(lc[metric])), float(np.mean(rl[metric]))
    row |= {"R@1 diff": diff, "R@1 diff 95% CI": [low, high],
            "p50 ms langchain": percentile(lc["ms"], 50), "p50 ms rag_lib": percentile(rl["ms"], 50)}
    return row


def as_search(search) -> Search:
    """A LangChain retriever (anything with `invoke`) or a function of the question as a bench pipeline:
    (context id, text) per hit."""
    invoke = getattr(search, "invoke", search)
    return lambda q: [(h.metadata["source"], h.page_content) for h in invoke(q)]


def parent_setup(client, data: Dataset, embeddings, uri: str) -> tuple[ParentDocumentRetriever, Retriever]:
    """Both small-to-big routes over 120/20 children whose parents are the whole contexts: LangChain's
    ParentDocumentRetriever (children in langchain-milvus, parents in an InMemoryStore) and the course's children
    rows carrying `parent_text` (one Milvus collection), both searched with hybrid RRF."""
    children = [{**r, "parent_text": data.contexts[r["parent_id"]]} for r in chunk_contexts(data, 120, 20)]
    load_collection(client, "cmrc_children", children, embeddings, MEASURED_ANALYZER)
    course = Retriever(client=client, embeddings=embeddings, collection="cmrc_children", k=CANDIDATES)
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=120, chunk_overlap=20, separators=SEPARATORS, keep_separator="end"
    )
    langchain = ParentDocumentRetriever(
        vectorstore=hybrid_store(embeddings, uri, "lc_children", drop_old=True, auto_id=True,
                                 analyzer_params=MEASURED_ANALYZER), docstore=InMemoryStore(),
        child_splitter=splitter, search_kwargs={"k": CANDIDATES, **HYBRID_SEARCH_KWARGS},
    )
    parents = [Document(text, metadata={"source": context_id}) for context_id, text in data.contexts.items()]
    langchain.add_documents(parents, ids=list(data.contexts))
    return langchain, course


def llm_pipelines(client, embeddings, dense: Retriever) -> dict[str, Search]:
    """The LLM pairs with the course chat model: each LangChain component with its own prompt, beside the
    rag_lib helper with its defaults, all over the same dense search, and the plain dense search as baseline."""
    llm = get_chat_model()
    hyde = HypotheticalDocumentEmbedder.from_llm(
        llm.bind(max_tokens=HYDE_TOKENS), embeddings, prompt_key="web_search"
    )
    hyde_retriever = Retriever(
        client=client, embeddings=hyde, collection="cmrc_chunks", search_type="dense", k=CANDIDATES
    )
    return {
        LLM_BASELINE: as_search(dense),
        "MultiQueryRetriever.from_llm(dense Retriever)": as_search(MultiQueryRetriever.from_llm(dense, llm)),
        "multi_query_search(dense Retriever)": as_search(lambda q: multi_query_search(llm, dense.invoke, q)),
        "Retriever(embeddings=HypotheticalDocumentEmbedder)": as_search(hyde_retriever),
        "hyde_search": as_search(lambda q: hyde_search(llm, client, embeddings, q, "cmrc_chunks", k=CANDIDATES)[1]),
    }


def retriever_pipelines(
    client: MilvusClient, embeddings: Embeddings, chunks: list[dict], parent_lc: ParentDocumentRetriever,
    parent_course: Retriever,
) -> tuple[dict[str, Search], Retriever]:
    """The non-LLM pipelines, LangChain's and rag_lib's, as searches; and the dense retriever the LLM pairs use."""

    def retriever(collection: str = "cmrc_chunks", **kwargs) -> Retriever:
        return Retriever(client=client, embeddings=embeddings, collection=collection, **{"k": CANDIDATES, **kwargs})

    dense, sparse = retriever(search_type="dense", k=20), retriever(search_type="sparse", k=20)
    bm25 = BM25Retriever.from_documents(
        [Document(r["text"], metadata={"source": r["source"]}) for r in chunks],
        preprocess_func=tokenize, k=20,
    )
    weighted = {"ranker": "weighted", "weights": (0.6, 0.4)}
    reranker = EmbeddingReranker(embeddings, top_n=CANDIDATES)
    # langchain-classic 1.0.8: EmbeddingsFilter's pre_init fills a None field with its default, so k=None becomes k=20
    # and the filter always re-sorts by cosine; the k=None row is kept to show it.
    cutoff = {"similarity_threshold": E5_MIN_SIMILARITY}

    def compressed(compressor, **kwargs) -> Search:
        return as_search(ContextualCompressionRetriever(base_compressor=compressor, base_retriever=retriever(**kwargs)))

    pipelines: dict[str, Search] = {
        HYBRID: as_search(retriever()),
        "EnsembleRetriever(dense, sparse Retriever)": as_search(
            EnsembleRetriever(retrievers=[dense, sparse], id_key="id")),
        "EnsembleRetriever(BM25Retriever jieba, dense Retriever)": as_search(
            EnsembleRetriever(retrievers=[bm25, dense])),
        "ContextualCompressionRetriever(EmbeddingReranker)": compressed(reranker, k=20),
        RERANKED: as_search(retriever(ranker="model", reranker=reranker)),
        "EmbeddingsFilter(threshold, k=None)": compressed(
            EmbeddingsFilter(embeddings=embeddings, k=None, **cutoff), **weighted),
        "EmbeddingsFilter(threshold), default k=20": compressed(
            EmbeddingsFilter(embeddings=embeddings, **cutoff), **weighted),
        CUTOFF: as_search(retriever(**weighted, min_similarity=E5_MIN_SIMILARITY)),
        "ParentDocumentRetriever(langchain-milvus, InMemoryStore)": as_search(parent_lc),
        "small_to_big(Retriever on children)": as_search(lambda q: small_to_big(parent_course, q)),
        "RecursiveCharacterTextSplitter defaults + hybrid": as_search(retriever("cmrc_lc_chunks")),
    }
    return pipelines, dense


def print_tables(rows: list[dict], pairs: list[dict], splitters: list[dict]) -> None:
    """The pipelines, the LangChain / rag_lib pairs with their R@1 difference, the two splitters."""
    print(format_table(rows), "\n")
    print(format_table([{k: pair[k] for k in ("job", "langchain", "rag_lib", "questions", "R@1 diff")}
                        | {"95% CI": "[{:+.3f}, {:+.3f}]".format(*pair["R@1 diff 95% CI"])} for pair in pairs]), "\n")
    print(format_table(splitters))


def main(argv: list[str]) -> None:
    parser = cmrc_parser("components", __doc__)
    parser.add_argument("--llm-n", type=int, default=LLM_QUESTIONS, help="questions for the LLM pairs (0 = skip them)")
    args = parser.parse_args(argv)
    run, chunks, _ = cmrc_chunks(args, MEASURED_ANALYZER)  # --n: questions for the non-LLM pairs
    data, questions, embeddings, client, folder = run.data, run.questions, run.embeddings, run.client, run.folder
    lc_split = RecursiveCharacterTextSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP).split_text
    splitters = [splitter_stats(data, "RecursiveCharacterTextSplitter(300, 50), default separators", lc_split),
                 splitter_stats(data, "rag_lib.chunking.recursive_split(300, 50)", recursive_split)]
    load_collection(client, "cmrc_lc_chunks", split_rows(data, lc_split), embeddings, MEASURED_ANALYZER)
    parent_lc, parent_course = parent_setup(client, data, embeddings, str(folder / "lc.db"))

    pipelines, dense = retriever_pipelines(client, embeddings, chunks, parent_lc, parent_course)
    runs = score(pipelines, questions, f"{len(pipelines)} pipelines per question")
    asked = [q for q in questions if q.text]
    llm_questions = random.Random(0).sample(asked, min(args.llm_n, len(asked)))
    if llm_questions:
        runs |= score(llm_pipelines(client, embeddings, dense), llm_questions, "LLM pipelines per question")
    client.close()

    rows = [summary(name, run) for name, run in runs.items()]
    pairs = [compare(job, lc, rl, runs) for job, lc, rl in PAIRS if lc in runs]
    print_tables(rows, pairs, splitters)
    setup = {"questions": len(questions), "llm questions": len(llm_questions), "contexts": len(data.contexts),
             "candidates": CANDIDATES, "hyde max_tokens": HYDE_TOKENS, "bootstrap resamples": RESAMPLES,
             "min_similarity": E5_MIN_SIMILARITY, "dataset": dataset_label(args.cmrc),
             "BM25 analyzer": MEASURED_ANALYZER}
    payload = {"setup": setup, "pipelines": rows, "pairs": pairs, "splitters": splitters}
    print("\nwrote", write_results(args.out, payload))


if __name__ == "__main__":
    main([])
