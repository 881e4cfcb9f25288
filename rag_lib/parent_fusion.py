"""Fusion per parent: several searches at different granularities and fields (small children, chunks, whole
documents, titles; dense or BM25) each vote for the parent their hits belong to. Each search keeps every parent's
best hit score, min-max scales those per query over the parents it found, and a weighted sum ranks the parents.

Unlike RRF over chunks, a parent found by several of its chunks counts once per search, and a search that finds
the parent only by its title still adds its say."""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from rag_lib.retriever import RetrieverConfigError, min_max, with_metadata


@runtime_checkable
class ManySearch(Protocol):
    """What a signal needs from its search: `rag_lib.retriever.Retriever.search_many` (Documents best first, each
    with `score` and the parent id in its metadata)."""

    def search_many(self, queries: list[str]) -> list[list[Document]]: ...


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

    def parent_of(self, document: Document) -> str:
        """The parent id of a hit; a hit without one is an indexing mistake, named here."""
        parent = document.metadata.get(self.parent_key)
        if not parent:
            raise ValueError(
                f"hit {document.id!r} has no {self.parent_key!r}: index every searched collection with the parent "
                "id in that field (rag_lib.store.make_row(..., parent_id=...)), or pass the field as parent_key."
            )
        return parent

    def fuse(self, hits: dict[str, list[Document]]) -> list[Document]:
        """One query: the signals' hit lists (by signal name) fused into the top-k parents."""
        fused: dict[str, float] = {}
        scaled: dict[str, dict[str, float]] = {}
        first: dict[str, Document] = {}
        for signal in (s for s in self.signals if s.weight):
            best: dict[str, Document] = {}
            for document in hits[signal.name]:  # best first: the first hit of a parent is its best
                best.setdefault(self.parent_of(document), document)
            scores = min_max([d.metadata["score"] for d in best.values()])
            for (parent, document), value in zip(best.items(), scores):
                fused[parent] = fused.get(parent, 0.0) + signal.weight * value
                scaled.setdefault(parent, {})[signal.name] = value
                first.setdefault(parent, document)
        ranked = sorted(fused, key=lambda p: (-fused[p], p))[: self.k]
        return [with_metadata(first[p], score=fused[p], signals=scaled[p], **{self.parent_key: p}) for p in ranked]

    def search_many(self, queries: list[str]) -> list[list[Document]]:
        """Every signal searches all queries at once (one Milvus call per field), then each query is fused."""
        per_signal = {s.name: s.retriever.search_many(queries) for s in self.signals if s.weight}
        return [self.fuse({name: lists[i] for name, lists in per_signal.items()}) for i in range(len(queries))]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self.search_many([query])[0]
