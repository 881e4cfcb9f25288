"""ParentFusionRetriever: per-parent best score, min-max per signal, weighted sum; checked arguments.
The signals here are canned hit lists (a stand-in for Retriever.search_many, no Milvus): the arithmetic is the test."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rag_lib.parent_fusion import ParentFusionRetriever, Signal
from rag_lib.retriever import RetrieverConfigError


class Canned:
    """Test double for a Retriever: returns fixed (parent, score) hits for every query, best first."""

    def __init__(self, hits: list[tuple[str, float]]) -> None:
        self.hits = hits

    def search_many(self, queries: list[str]) -> list[list[Document]]:
        return [[Document(page_content=f"{p} row {i}", id=f"{p}-{i}", metadata={"parent_id": p, "score": s})
                 for i, (p, s) in enumerate(self.hits)] for _ in queries]


def fusion(*signals: tuple[str, list[tuple[str, float]], float], k: int = 5) -> ParentFusionRetriever:
    return ParentFusionRetriever(signals=[Signal(name, Canned(hits), weight) for name, hits, weight in signals], k=k)


def test_each_signal_counts_a_parent_once_by_its_best_hit_and_scales_to_zero_one():
    retriever = fusion(("children", [("A", 0.9), ("A", 0.8), ("B", 0.7), ("C", 0.5)], 0.6),
                       ("titles", [("C", 12.0), ("B", 3.0)], 0.4))
    docs = retriever.search_many(["q"])[0]
    scores = {d.metadata["parent_id"]: d.metadata["score"] for d in docs}
    # children: A 1.0, B 0.5, C 0.0; titles: C 1.0, B 0.0
    assert scores == pytest.approx({"A": 0.6, "B": 0.3, "C": 0.4})
    assert [d.metadata["parent_id"] for d in docs] == ["A", "C", "B"]
    assert docs[0].page_content == "A row 0" and docs[0].metadata["signals"] == {"children": 1.0}
    assert docs[1].metadata["signals"] == {"children": 0.0, "titles": 1.0}


def test_ties_are_ordered_by_parent_id_and_k_cuts_and_zero_weight_signals_are_not_searched():
    class Exploding:
        def search_many(self, queries):
            raise AssertionError("a signal with weight 0 was searched")

    retriever = ParentFusionRetriever(signals=[Signal("a", Canned([("Y", 1.0), ("X", 1.0)]), 1.0),
                                               Signal("unused", Exploding(), 0.0)], k=1)
    assert [d.metadata["parent_id"] for d in retriever.search_many(["q", "r"])[1]] == ["X"]


def test_a_hit_without_a_parent_id_is_named():
    retriever = fusion(("chunks", [("", 1.0)], 1.0))
    with pytest.raises(ValueError, match="has no 'parent_id'.*make_row"):
        retriever.search_many(["q"])


@pytest.mark.parametrize(("weights", "k", "message"), [
    ([0.0, 0.0], 5, "one at least above 0"), ([1.5, 0.2], 5, r"in \[0, 1\]"), ([0.5, 0.5], 0, "k >= 1")])
def test_bad_arguments_are_refused(weights, k, message):
    signals = [Signal(f"s{i}", Canned([]), w) for i, w in enumerate(weights)]
    with pytest.raises(RetrieverConfigError, match=message):
        ParentFusionRetriever(signals=signals, k=k)


def test_signal_names_must_differ():
    with pytest.raises(RetrieverConfigError, match="its own name"):
        ParentFusionRetriever(signals=[Signal("s", Canned([]), 0.5), Signal("s", Canned([]), 0.5)])
