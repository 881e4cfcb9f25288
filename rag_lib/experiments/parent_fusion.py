"""Fusion per parent: several searches at different granularities and fields (small children, chunks, whole
documents, titles; dense or BM25) each vote for the parent their hits belong to. Each search keeps every parent's
best hit score, min-max scales those per query, and a weighted sum ranks the parents.

Unlike RRF over chunks, a parent found by several of its chunks counts once per search, and a search that finds
the parent only by its title still adds its say. By default each search scales over the parents it found, and a
parent it missed adds nothing. With `complete=True` every search also scores every candidate parent (a second,
filtered search each), so a parent one search missed is not punished for it, and scales them from about the lowest
score any row gets (its floor), so that close candidates stay close instead of being stretched to 0 and 1."""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from rag_lib.retriever import Retriever, RetrieverConfigError, min_max, with_metadata
from rag_lib.store import query_all


@runtime_checkable
class ManySearch(Protocol):
    """What a signal needs from its search: `rag_lib.retriever.Retriever.search_many` (Documents best first, each
    with `score` and the parent id in its metadata)."""

    def search_many(self, queries: list[str]) -> list[list[Document]]: ...


@runtime_checkable
class ParentScores(Protocol):
    """What `complete=True` also needs from a search (`RetrieverParentScores` gives a `Retriever` both)."""

    def best_per_parent(
        self, queries: list[str], parents: list[list[str]], parent_key: str
    ) -> list[dict[str, float]]: ...

    def lowest_score(self, queries: list[str]) -> list[float]: ...


class RetrieverParentScores(NamedTuple):
    """`complete=True`'s two extra searches for a single-field `Retriever`: every candidate parent's best score and
    the lowest score of any row. They read the Retriever's resolved fields and search parameters, and only this
    experiment needs them, so they live here rather than on the Retriever."""

    retriever: Retriever

    def best_per_parent(
        self, queries: list[str], parents: list[list[str]], parent_key: str = "parent_id"
    ) -> list[dict[str, float]]:
        """For each query, the best score of each of its `parents` over their rows: the score a parent the first
        search missed would have had. BM25: Milvus's grouping search restricted to the parents (a parent sharing no
        term with the query scores 0.0; seal the collection first, since on unflushed rows Lite takes BM25's
        statistics from the filtered rows alone). Dense: the exact cosine over the parents' rows, fetched by a scalar
        query (an HNSW search under so narrow a filter misses rows)."""
        r = self.retriever
        if len(r._fields) != 1:
            raise RetrieverConfigError(f"best_per_parent searches one field; this retriever searches {r._fields}.")
        field, vectors = r._fields[0], r._query_vectors(queries)
        best: list[dict[str, float]] = []
        for i, (query, wanted) in enumerate(zip(queries, parents, strict=True)):
            restrict = f"{parent_key} in {json.dumps(wanted, ensure_ascii=False)}"
            restrict = f"({r.filter}) and {restrict}" if r.filter else restrict
            if not wanted:
                scores = {}
            elif field in r._text_fields:
                hits = r.client.search(
                    r.collection, data=[query], anns_field=field, search_params=r._params[field],
                    limit=len(wanted), filter=restrict, output_fields=[parent_key], group_by_field=parent_key,
                )[0]
                scores = {h[parent_key]: h["score"] for h in r._hits(hits, text_field=True)}
            else:
                scores = self._best_cosine(field, vectors[field][i], restrict, parent_key)
            best.append({parent: scores.get(parent, 0.0) for parent in wanted})
        return best

    def lowest_score(self, queries: list[str]) -> list[float]:
        """For each query, about the lowest score any row gets: 0.0 for BM25, where some row shares no term with the
        query; for a dense field, the score of the row nearest the negated query vector. A fusion scaling its
        candidates from this floor keeps their gaps in proportion to the corpus."""
        r = self.retriever
        if len(r._fields) != 1:
            raise RetrieverConfigError(f"lowest_score searches one field; this retriever searches {r._fields}.")
        field = r._fields[0]
        if field in r._text_fields:
            return [0.0] * len(queries)
        metric = r._params[field].get("metric_type")
        if metric not in ("COSINE", "IP"):
            raise RetrieverConfigError(
                f"lowest_score negates the query, which needs COSINE or IP; {field!r} uses {metric}."
            )
        negated = [[-x for x in vector] for vector in r._query_vectors(queries)[field]]
        results = r.client.search(r.collection, data=negated, anns_field=field, limit=1,
                                  search_params=r._params[field], filter=r.filter)
        return [-float(hits[0]["distance"]) if hits else 0.0 for hits in results]

    def _best_cosine(self, field: str, vector: list[float], restrict: str, parent_key: str) -> dict[str, float]:
        """Each parent's best cosine between `vector` and its rows' `field` vectors (the rows `restrict` selects)."""
        r = self.retriever
        metric = r._params[field].get("metric_type")
        if metric != "COSINE":
            raise RetrieverConfigError(
                f"best_per_parent scores dense fields by cosine; {field!r} is searched by {metric}."
            )
        rows = query_all(r.client, r.collection, restrict, [field, parent_key])
        if not rows:
            return {}
        matrix, query = np.asarray([row[field] for row in rows], dtype=np.float32), np.asarray(vector, dtype=np.float32)
        cosines = matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query) + 1e-12)
        best: dict[str, float] = {}
        for row, value in zip(rows, cosines.tolist()):
            best[row[parent_key]] = max(best.get(row[parent_key], -1.0), value)
        return best


def parent_scores(search: ManySearch) -> ParentScores | None:
    """What scores every candidate of a signal's search for `complete=True`: the search itself when it has the two
    methods (e.g. `ClientBM25Search`), a `RetrieverParentScores` for a `Retriever`, else None."""
    if isinstance(search, ParentScores):
        return search
    return RetrieverParentScores(search) if isinstance(search, Retriever) else None


class Signal(NamedTuple):
    """One search and its say in the fused score."""

    name: str
    retriever: ManySearch
    weight: float


class ParentFusionRetriever(BaseRetriever):
    """Rank parents (metadata `parent_key` of each hit) by a weighted sum of each signal's min-max scaled best score.
    Returns one Document per parent: its best hit in the first signal that found it, with `score` (the fused score),
    `signals` (each signal's scaled score) and the parent id under `parent_key`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    signals: list[Signal]
    parent_key: str = "parent_id"
    k: int = 5
    complete: bool = False  # every search scores every candidate parent (one more search per signal and query)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        names = [s.name for s in self.signals]
        if not self.signals or len(set(names)) != len(names):
            raise RetrieverConfigError(f"signals {names}: give at least one signal, each with its own name.")
        if not all(0.0 <= s.weight <= 1.0 for s in self.signals) or not any(s.weight for s in self.signals):
            weights = {s.name: s.weight for s in self.signals}
            raise RetrieverConfigError(f"weights {weights}: each must be in [0, 1], one at least above 0.")
        if self.k < 1:
            raise RetrieverConfigError(f"k={self.k}: k is how many parents to return; give k >= 1.")
        partial = [s.name for s in self.signals if parent_scores(s.retriever) is None]
        if self.complete and partial:
            raise RetrieverConfigError(f"complete=True needs best_per_parent and lowest_score on every signal; "
                                       f"{partial} lack them: use rag_lib.retriever.Retriever searches, "
                                       "or complete=False.")

    def parent_of(self, document: Document) -> str:
        """The parent id of a hit; a hit without one is an indexing mistake, named here."""
        parent = document.metadata.get(self.parent_key)
        if not parent:
            raise ValueError(
                f"hit {document.id!r} has no {self.parent_key!r}: index every searched collection with the parent "
                "id in that field (rag_lib.store.make_row(..., parent_id=...)), or pass the field as parent_key."
            )
        return parent

    def first_hits(self, hits: dict[str, list[Document]]) -> dict[str, Document]:
        """Each parent found by any signal, with its best hit in the first signal that found it (signal order)."""
        first: dict[str, Document] = {}
        for signal in (s for s in self.signals if s.weight):
            for document in hits[signal.name]:  # best first: the first hit of a parent is its best
                first.setdefault(self.parent_of(document), document)
        return first

    def fuse(self, hits: dict[str, list[Document]], exact: dict[str, dict[str, float]] | None = None,
             floors: dict[str, float] | None = None) -> list[Document]:
        """One query: the signals' hit lists (by signal name) fused into the top-k parents. With `exact` (per signal,
        every candidate's best score) and `floors` (per signal, the lowest score of any row), each signal scales
        every candidate from its floor to the best candidate; else over the parents it found."""
        fused: dict[str, float] = {}
        scaled: dict[str, dict[str, float]] = {}
        for signal in (s for s in self.signals if s.weight):
            if exact is not None and floors is not None:
                best = exact[signal.name]
                values = min_max([*best.values(), floors[signal.name]])[:-1]
            else:
                best = {}
                for document in hits[signal.name]:
                    best.setdefault(self.parent_of(document), document.metadata["score"])
                values = min_max(list(best.values()))
            for parent, value in zip(best, values):
                fused[parent] = fused.get(parent, 0.0) + signal.weight * value
                scaled.setdefault(parent, {})[signal.name] = value
        first = self.first_hits(hits)
        ranked = sorted(fused, key=lambda p: (-fused[p], p))[: self.k]
        return [with_metadata(first[p], score=fused[p], signals=scaled[p], **{self.parent_key: p}) for p in ranked]

    def search_many(self, queries: list[str]) -> list[list[Document]]:
        """Every signal searches all queries at once (one Milvus call per field), then each query is fused; with
        `complete`, every signal then scores each query's candidates (one grouped, filtered search per query)."""
        active = [s for s in self.signals if s.weight]
        per_signal = {s.name: s.retriever.search_many(queries) for s in active}
        hits = [{name: lists[i] for name, lists in per_signal.items()} for i in range(len(queries))]
        if not self.complete:
            return [self.fuse(h) for h in hits]
        candidates = [list(self.first_hits(h)) for h in hits]
        scorers = {s.name: parent_scores(s.retriever) for s in active}
        exact = {name: scorer.best_per_parent(queries, candidates, self.parent_key) for name, scorer in scorers.items()}
        floors = {name: scorer.lowest_score(queries) for name, scorer in scorers.items()}
        return [self.fuse(h, {name: scores[i] for name, scores in exact.items()},
                          {name: lows[i] for name, lows in floors.items()}) for i, h in enumerate(hits)]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self.search_many([query])[0]
