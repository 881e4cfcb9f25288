"""Advanced retrieval: change the query (rewrite, expand, decompose, multi-step, HyDE), change what is returned
(small-to-big, similarity thresholds), or search several ways at once and merge (multi-query, multi-path).

A hit is a LangChain Document, as a LangChain retriever returns it: the passage as `page_content`, and `id`,
`score`, `similarity`, `source`, ... in `metadata`. A "search" is any callable from a query string to Documents,
best first (e.g. `retriever.invoke`), so the techniques compose; a technique that adds a field (`queries`,
`paths`, `via`) returns new Documents and leaves the ones it was given unchanged. LLM calls are short prompts
with small `max_tokens` (`rag_lib.structured.structured_output(..., max_tokens=)` where the answer is parsed,
`llm.bind(max_tokens=)` for free text): on a local CPU model each call costs seconds of prompt processing, so use
them where plain retrieval fails.
A reply that breaks its schema never fails a search: each helper then falls back to doing nothing (the question
as it is, no variants, no sub-questions, no further step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field
from pymilvus import MilvusClient

from rag_lib.index import parent_documents
from rag_lib.retriever import Reranker, Retriever, to_document, with_metadata
from rag_lib.store import DENSE_SEARCH_PARAMS, METADATA_FIELDS
from rag_lib.structured import StructuredOutputError, structured_output
from rag_lib.text import detect_language

Search = Callable[[str], list[Document]]
OUTPUT_FIELDS = ["text", *METADATA_FIELDS]
PASSAGE_CHARS = 200  # passages shown to the multi-step judge are cut here (prompt processing is the cost)

DOMAIN = "RAG, vector databases (Milvus) and LangGraph agents"  # what the corpus is about: keeps the model on topic
LANGUAGES = {"zh": "Chinese", "en": "English"}

# The query transformations' prompts: short, fixed part first (llama.cpp reuses a shared prompt prefix), one worked
# example where the 1.5B model otherwise echoed the question or returned an empty list.
REWRITE_PROMPT = (
    "You search documentation about {domain}. Which technical terms would a document that answers the question "
    "use? Give 2-5 terms.\nExample: how do I avoid embedding the same text twice? -> embedding cache, "
    "CacheBackedEmbeddings\nQuestion: {question}"
)
TRANSLATE_PROMPT = "Translate into {language}. Reply with the translation only.\n{question}"
EXPAND_PROMPT = (
    "You search documentation about {domain}. Write {n} different search queries for the question: other wordings "
    "and the technical terms it implies.\nQuestion: {question}"
)
DECOMPOSE_PROMPT = (
    "Split the question into simple sub-questions, one per thing it asks about.\n"
    "Example: How do BM25 and dense search differ in speed? -> How fast is BM25 search? | How fast is dense search?\n"
    "Question: {question}"
)
# Asked "answered?", the 1.5B model said yes to a two-part question whose second part was not in the passages;
# asked to name the missing part first, it found it.
GAP_PROMPT = (
    "Passages:\n{passages}\n\nQuestion: {question}\n"
    "Which part of the question do the passages NOT state? Write it in missing (empty if every part is stated) "
    "and a search query for it."
)
HYDE_PROMPT = (
    "Write a short passage of technical documentation that answers the question, in {language}.\nQuestion: {question}"
)

# The docstring of an output schema is part of the PROMPT: with_structured_output sends it to the model as the
# tool's description (llama.cpp puts it in the system prompt). So it says what to return, and notes for readers
# go in comments.


class Terms(BaseModel):
    """Technical search terms for the question."""

    # terms, not a rewritten sentence: asked for a query, the 1.5B model echoed the question
    terms: list[str] = Field(min_length=2, max_length=5)


class Variants(BaseModel):
    """Other search queries for the question."""

    queries: list[str] = Field(min_length=2, max_length=4)  # with no minimum the 1.5B model often returned none


class SubQuestions(BaseModel):
    """The simple questions the question is made of."""

    questions: list[str] = Field(min_length=1, max_length=4)


class Gap(BaseModel):
    """What the passages do not state yet, and a search query for it."""

    missing: str
    next_query: str


def domain_terms_query(llm: BaseChatModel, question: str, domain: str = DOMAIN) -> str:
    """Query rewriting: turn a vague or chatty question into a search query of the technical terms it is about.

    Why: "how does the second stage re-sort things?" does not contain the word "reranking" that its document uses.
    """
    try:
        prompt = REWRITE_PROMPT.format(domain=domain, question=question)
        terms = structured_output(llm, Terms, max_tokens=48).invoke(prompt).terms
    except StructuredOutputError:
        return question
    return " ".join(unique([t.strip() for t in terms if t.strip()])) or question


def translate_query(llm: BaseChatModel, question: str) -> str:
    """Cross-lingual rewriting: the question in the corpus's other language (Chinese <-> English).

    Why: e5 is multilingual, but a small model matches same-language text much better; an English question
    about a Chinese-only topic often misses its document entirely.
    """
    target = LANGUAGES["en" if detect_language(question) == "zh" else "zh"]
    reply = llm.bind(max_tokens=64).invoke(TRANSLATE_PROMPT.format(language=target, question=question))
    return str(reply.content).strip().splitlines()[0].strip() if str(reply.content).strip() else question


def expand_query(llm: BaseChatModel, question: str, n: int = 3, domain: str = DOMAIN) -> list[str]:
    """Query expansion: up to `n` alternative wordings of the question (for `multi_query_search`), question excluded."""
    try:
        prompt = EXPAND_PROMPT.format(domain=domain, n=n, question=question)
        queries = structured_output(llm, Variants, max_tokens=32 * n).invoke(prompt).queries
    except StructuredOutputError:
        return []
    return unique([q.strip() for q in queries if q.strip() and q.strip() != question])[:n]


def decompose(llm: BaseChatModel, question: str, n: int = 3) -> list[str]:
    """Sub-question decomposition: a question about several things becomes one simple question per thing.

    Why: one embedding of "compare A and B" sits between A and B and may match neither document well.
    """
    try:
        prompt = DECOMPOSE_PROMPT.format(question=question)
        questions = structured_output(llm, SubQuestions, max_tokens=32 * n).invoke(prompt).questions
    except StructuredOutputError:
        return [question]
    return unique([q.strip() for q in questions if q.strip()])[:n] or [question]


def unique(items: Sequence[str]) -> list[str]:
    """Items without repeats, in first-seen order."""
    return list(dict.fromkeys(items))


def score_of(document: Document) -> float:
    """The ranking score a search gave the Document (`metadata["score"]`)."""
    return document.metadata["score"]


def union_search(search: Search, queries: Sequence[str], k: int | None = None) -> list[Document]:
    """Multi-query union: run every query, keep each hit once with its best score (and in `queries` the queries
    that found it), best first. Scores must be comparable across queries (cosine, or rank-based fusion scores)."""
    best: dict[str, Document] = {}
    for query in unique(queries):
        for hit in search(query):
            found = best.get(hit.id)
            queries_so_far = [*(found.metadata["queries"] if found else []), query]
            kept = hit if found is None or score_of(hit) > score_of(found) else found
            best[hit.id] = with_metadata(kept, queries=queries_so_far)
    return sorted(best.values(), key=score_of, reverse=True)[:k]


def multi_query_search(
    llm: BaseChatModel, search: Search, question: str, n: int = 2, translate: bool = True, k: int | None = None
) -> list[Document]:
    """Multi-query: the question, its translation (`translate_query`) and `n` LLM wordings of it, each searched,
    then united (LangChain's MultiQueryRetriever, plus the cross-lingual variant that this corpus needs)."""
    queries = [question, *([translate_query(llm, question)] if translate else []), *expand_query(llm, question, n)]
    return union_search(search, queries, k)


def decomposed_search(
    llm: BaseChatModel, search: Search, question: str, n: int = 3, k: int | None = None
) -> tuple[list[str], list[Document]]:
    """Search the question and each sub-question of `decompose`, and unite the hits, so every part of the question
    gets passages; returns the sub-questions too (they show what was searched)."""
    parts = decompose(llm, question, n)
    return parts, union_search(search, [question, *parts], k)


@dataclass
class MultiStepResult:
    """Hits gathered over the steps, and per step the query searched and what the judge then found missing."""

    hits: list[Document] = field(default_factory=list)
    steps: list[tuple[str, str]] = field(default_factory=list)


def multi_step_search(
    llm: BaseChatModel, search: Search, question: str, max_steps: int = 3, k: int = 2
) -> MultiStepResult:
    """Multi-step retrieval: retrieve -> a judge names what is still missing -> search its next query; stop when
    nothing is missing, the query repeats, a search brings nothing new, or after `max_steps` retrievals (the bound
    keeps a confused judge from looping). Returns all hits, deduplicated, in the order found.

    Why: a question with several parts, or whose second hop depends on the first, is not answered by one search.
    """
    judge = structured_output(llm, Gap, max_tokens=64)
    result, seen, query = MultiStepResult(), set(), question
    for _ in range(max_steps):
        new = [h for h in search(query)[:k] if h.id not in seen]
        if not new and result.hits:
            break
        seen.update(h.id for h in new)
        result.hits += new
        passages = "\n".join(f"- {h.page_content[:PASSAGE_CHARS]}" for h in result.hits)
        try:
            gap = judge.invoke(GAP_PROMPT.format(passages=passages, question=question))
        except StructuredOutputError:  # an unusable verdict counts as "nothing missing": stop here
            result.steps.append((query, ""))
            break
        result.steps.append((query, gap.missing.strip()))
        next_query = gap.next_query.strip()
        if not gap.missing.strip() or not next_query or next_query in (q for q, _ in result.steps):
            break
        query = next_query
    return result


def hypothetical_passage(llm: BaseChatModel, question: str, language: str | None = None, max_tokens: int = 96) -> str:
    """HyDE step 1: the LLM writes a passage that *would* answer the question, in `language` (default: the
    question's). Its facts may be wrong; only its wording and topic are used."""
    language = language or LANGUAGES[detect_language(question)]
    prompt = HYDE_PROMPT.format(language=language, question=question)
    return str(llm.bind(max_tokens=max_tokens).invoke(prompt).content).strip()


def search_by_vector(
    client: MilvusClient, collection: str, vector: list[float], k: int = 4, filter: str = "",
    output_fields: list[str] = OUTPUT_FIELDS,
) -> list[Document]:
    """Dense search with a ready vector (public `client.search`), best first; `score` and `similarity` in the
    metadata are the cosine to `vector`, the other `output_fields` (besides `text`) are metadata too."""
    results = client.search(
        collection, data=[vector], anns_field="dense", search_params=DENSE_SEARCH_PARAMS, limit=k, filter=filter,
        output_fields=output_fields,
    )[0]
    return [
        to_document({"id": h["id"], "score": float(h["distance"]), "similarity": float(h["distance"]), **h["entity"]})
        for h in results
    ]


def hyde_search(
    llm: BaseChatModel, client: MilvusClient, embeddings: Embeddings, question: str, collection: str, k: int = 4,
    language: str | None = None,
) -> tuple[str, list[Document]]:
    """HyDE (Hypothetical Document Embeddings): search with the embedding of a hypothetical answer passage.

    Why: a passage looks more like the stored passages than a question does. The passage is embedded as a
    *passage* (`embed_documents`, e5 prefix "passage: "), not as a query, so it is compared like with like.
    """
    passage = hypothetical_passage(llm, question, language)
    return passage, search_by_vector(client, collection, embeddings.embed_documents([passage])[0], k)


def small_to_big(retriever: Retriever, question: str) -> list[Document]:
    """Small-to-big: search small child chunks (precise matches), return their larger parents (context for the
    model), one per parent. Needs a collection indexed with `Chunker("parent_child", ...)`."""
    return parent_documents(retriever.client, retriever.invoke(question), retriever.collection)


def threshold_filter(
    hits: list[Document], min_similarity: float | None = None, max_drop: float | None = None
) -> list[Document]:
    """Similarity thresholds: drop hits whose cosine `similarity` (metadata) is below an absolute `min_similarity`
    (off-topic questions then get nothing) or more than `max_drop` below the best one (a relative cut that adapts
    to each query)."""
    if min_similarity is not None:
        hits = [h for h in hits if h.metadata["similarity"] >= min_similarity]
    if max_drop is not None and hits:
        best = max(h.metadata["similarity"] for h in hits)
        hits = [h for h in hits if h.metadata["similarity"] >= best - max_drop]
    return hits


def rrf_merge(ranked: dict[str, list[Document]], k: int | None = None, rrf_k: int = 60) -> list[Document]:
    """Reciprocal Rank Fusion of named hit lists by Document id: score = sum of 1/(rrf_k + rank); `paths` records
    the rank in each list that found the hit. Ranks only, so lists with incomparable scores merge fairly."""
    first: dict[str, Document] = {}  # the hit as the first list that found it has it
    paths: dict[str, dict[str, int]] = {}
    for name, hits in ranked.items():
        for rank, hit in enumerate(hits, 1):
            first.setdefault(hit.id, hit)
            paths.setdefault(hit.id, {}).setdefault(name, rank)  # a list that repeats an id counts its best rank once
    fused = [
        with_metadata(hit, score=sum(1.0 / (rrf_k + rank) for rank in paths[id_].values()), paths=paths[id_])
        for id_, hit in first.items()
    ]
    return sorted(fused, key=score_of, reverse=True)[:k]


def multi_path_search(
    question: str, paths: dict[str, Search], k: int = 4, reranker: Reranker | None = None, rrf_k: int = 60
) -> list[Document]:
    """Multi-path retrieval: run several searches (granularities, similarities, e.g. dense chunks, BM25 chunks,
    node groups mapped back to chunks), merge them with RRF, then optionally rerank the merged candidates.

    Why: each path finds what the others miss; one merged list gives the model the best of all of them.
    """
    merged = rrf_merge({name: search(question) for name, search in paths.items()}, rrf_k=rrf_k)
    if reranker is None or not merged:
        return merged[:k]
    return [with_metadata(d, score=d.metadata["rerank_score"]) for d in reranker.rerank(question, merged, k)]
