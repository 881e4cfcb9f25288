"""ParentFusionRetriever: per-parent best score, min-max per signal, weighted sum, every candidate scored with
complete=True; checked arguments. Most signals here are canned hit lists (a TEST DOUBLE for Retriever.search_many
and best_per_parent, no Milvus): the arithmetic is the test. The last tests run RetrieverParentScores on a real
Milvus Lite collection with the real embeddings."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from rag_lib.experiments.parent_fusion import ParentFusionRetriever, RetrieverParentScores, Signal
from rag_lib.retriever import RetrieverConfigError


class Canned:
    """Test double for a Retriever: returns fixed (parent, score) hits for every query, best first; asked for given
    parents' best scores, it answers from `every` (a parent missing there: 0.0, as a BM25 search with no shared term);
    its lowest score for any row is `floor`."""

    def __init__(
        self, hits: list[tuple[str, float]], every: dict[str, float] | None = None, floor: float = 0.0
    ) -> None:
        self.hits, self.every, self.floor = hits, every or {}, floor

    def lowest_score(self, queries: list[str]) -> list[float]:
        return [self.floor for _ in queries]

    def best_per_parent(self, queries: list[str], parents: list[list[str]], parent_key: str) -> list[dict[str, float]]:
        return [{p: self.every.get(p, 0.0) for p in wanted} for wanted in parents]

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


def test_complete_scores_every_candidate_in_every_signal_from_its_floor_so_a_missed_parent_is_not_punished():
    children = Canned([("A", 0.9), ("B", 0.8)], every={"A": 0.9, "B": 0.8, "C": 0.85}, floor=0.7)
    titles = Canned([("C", 12.0), ("B", 3.0)], every={"A": 6.0, "B": 3.0, "C": 12.0})
    found_only = ParentFusionRetriever(signals=[Signal("children", children, 0.5), Signal("titles", titles, 0.5)])
    complete = ParentFusionRetriever(signals=[Signal("children", children, 0.5), Signal("titles", titles, 0.5)],
                                     complete=True)
    # found only: children A 1, B 0 (C missed: nothing); titles C 1, B 0 (A missed: nothing) -> A .5, C .5, B 0
    assert {d.metadata["parent_id"]: d.metadata["score"] for d in found_only.search_many(["q"])[0]} == pytest.approx(
        {"A": 0.5, "B": 0.0, "C": 0.5})
    # complete, from each floor: children (0.7 .. 0.9) A 1, B .5, C .75; titles (0 .. 12) A .5, B .25, C 1
    docs = complete.search_many(["q"])[0]
    assert [d.metadata["parent_id"] for d in docs] == ["C", "A", "B"]
    assert [d.metadata["score"] for d in docs] == pytest.approx([0.875, 0.75, 0.375])
    assert docs[0].page_content == "C row 0"  # the titles' hit: the children never returned C
    assert docs[0].metadata["signals"] == pytest.approx({"children": 0.75, "titles": 1.0})


def test_complete_needs_best_per_parent_on_every_signal():
    class SearchOnly:
        def search_many(self, queries):
            return [[] for _ in queries]

    with pytest.raises(RetrieverConfigError, match=r"complete=True needs best_per_parent and lowest_score.*\['bare'\]"):
        ParentFusionRetriever(signals=[Signal("bare", SearchOnly(), 1.0)], complete=True)


@pytest.fixture()
def parented(milvus, embeddings) -> str:
    """Six real rows of three parents in the course schema, embedded and flushed (sealed)."""
    from rag_lib.store import ensure_collection_for, make_row, seal

    texts = {"P1": ["Milvus stores vectors.", "Milvus builds HNSW graphs."],
             "P2": ["Pandas eat bamboo.", "Giant pandas live in Sichuan."],
             "P3": ["jieba cuts Chinese text into words.", "BM25 scores words by rarity."]}
    rows = [make_row(f"{p}.md", t, chunk_index=i, parent_id=p) for p, ts in texts.items() for i, t in enumerate(ts)]
    vectors = embeddings.embed_documents([r["text"] for r in rows])
    collection = ensure_collection_for(milvus, embeddings, "parented")
    milvus.insert(collection, [r | {"dense": v} for r, v in zip(rows, vectors)])
    seal(milvus, collection)  # unflushed rows: Lite's BM25 would take its statistics from the filtered rows only
    return collection


QUERIES = ["Which animal eats bamboo?", "How does Milvus search vectors?"]


def searching(milvus, embeddings, collection: str, kind: str):
    """A single-field Retriever over the six rows that returns all of them."""
    from rag_lib.retriever import Retriever

    return Retriever(client=milvus, embeddings=embeddings, collection=collection, search_type=kind, k=6, candidates=6)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_best_per_parent_is_each_parents_best_row_score(milvus, embeddings, parented, kind):
    retriever = searching(milvus, embeddings, parented, kind)
    every = retriever.search_many(QUERIES)
    best = RetrieverParentScores(retriever).best_per_parent(QUERIES, [["P2", "P3"], ["P1", "P3"]])
    for hits, wanted, scores in zip(every, [["P2", "P3"], ["P1", "P3"]], best):
        assert list(scores) == wanted
        for parent in wanted:
            rows = [d.metadata["score"] for d in hits if d.metadata["parent_id"] == parent]
            assert scores[parent] == pytest.approx(max(rows, default=0.0), rel=1e-5)  # BM25: no shared term -> 0.0
    assert best[0]["P2"] > best[0]["P3"] and best[1]["P1"] > best[1]["P3"]
    assert RetrieverParentScores(retriever).best_per_parent(["x"], [[]]) == [{}]


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_lowest_score_is_the_floor_of_every_rows_score(milvus, embeddings, parented, kind):
    retriever = searching(milvus, embeddings, parented, kind)
    floors = RetrieverParentScores(retriever).lowest_score(QUERIES)
    if kind == "sparse":
        assert floors == [0.0, 0.0]  # some row shares no term with the query
        return
    for floor, hits in zip(floors, retriever.search_many(QUERIES)):  # all six rows: the lowest cosine among them
        assert floor == pytest.approx(min(d.metadata["score"] for d in hits), abs=1e-5)
