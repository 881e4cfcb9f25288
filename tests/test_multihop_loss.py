"""Where a two-hop question was lost (`benchmarks.multihop.loss`), which chunk is a hop's passage (`holds_hop`) and
which chunks of a search a pipeline reads (`search_records`).

The loss classifier is checked on FAKE ROWS written by hand (scores and searches as `bench multihop` records them),
the hop matcher and the search records on hand-made Documents; no model, no index.
"""

from __future__ import annotations

from langchain_core.documents import Document

from benchmarks.multihop import LOSSES, chunk_id, holds_hop, hops_found, loss, losses, read_chunks, search_records

HOP = {"source": "docs/rankers.md",
       "evidence": "the value used by Cormack, Clarke and Büttcher in the 2009 SIGIR paper"}


def fake_row(searches: list[tuple[bool, bool]], em: float = 0.0, contains: float = 0.0) -> dict:
    """A FAKE ROW: its scores and one search per (hop 1 found, hop 2 found), the question's own first."""
    return {"em": em, "contains": contains,
            "searches": [{"query": f"q{i}", "chunks": [], "hops": list(hops)} for i, hops in enumerate(searches)]}


def test_each_loss_class_from_fake_rows():
    assert loss(fake_row([(True, True)], em=1.0)) == "right"
    assert loss(fake_row([(False, False)], contains=1.0)) == "right"  # right is right, whatever was retrieved
    assert loss(fake_row([(True, True)])) == "both passages, answer wrong"
    assert loss(fake_row([(True, False), (False, True)])) == "both passages, answer wrong"  # a follow-up found hop 2
    assert loss(fake_row([(False, True)])) == "first hop not retrieved"
    assert loss(fake_row([(False, False), (False, False)])) == "first hop not retrieved"
    assert loss(fake_row([(True, False)])) == "bridge not recognised"  # no second search was asked
    assert loss(fake_row([(True, False), (False, False), (True, False)])) == "follow-up missed hop 2"
    assert loss(fake_row([])) == "first hop not retrieved"  # nothing searched (a pipeline that raised)


def test_losses_count_every_class_and_skip_rows_without_searches():
    rows = [fake_row([(True, False)]), fake_row([(True, False)]), fake_row([(True, True)], em=1.0), {"em": 0.0}]
    counts = losses(rows)
    assert list(counts) == list(LOSSES) and sum(counts.values()) == 3
    assert counts["bridge not recognised"] == 2 and counts["right"] == 1
    assert losses([{"em": 1.0}]) == {}  # rows from before the searches were recorded: no classes


def chunk(source: str, text: str, index: int = 4) -> Document:
    return Document(text, metadata={"source": f"/tmp/corpus/{source}", "chunk_index": index})


def test_a_hop_passage_is_a_chunk_of_its_file_holding_its_evidence_or_half_of_it():
    whole = chunk("docs/rankers.md", f"k = 60 is {HOP['evidence']} that introduced RRF.")
    first_half = chunk("docs/rankers.md", "Why 60? It is the value used by Cormack, Clarke and")  # ends mid-quote
    second_half = chunk("docs/rankers.md", "and Büttcher in the 2009 SIGIR paper that introduced RRF.")
    elsewhere = chunk("web/rrf.md", HOP["evidence"])  # the same words in another file are not the passage
    unrelated = chunk("docs/rankers.md", "Weighted ranking scales each field's scores.")
    assert chunk_id(whole) == "docs/rankers.md#4"
    assert holds_hop(whole, HOP) and holds_hop(first_half, HOP) and holds_hop(second_half, HOP)
    assert not holds_hop(elsewhere, HOP) and not holds_hop(unrelated, HOP)
    question = {"hops": [{"source": "web/rrf.md", "evidence": "RRF sums reciprocal ranks"}, HOP]}
    assert hops_found([unrelated, whole], question) == [False, True]


def scored(source: str, text: str, similarity: float, index: int) -> Document:
    return Document(text, metadata={"source": f"/tmp/corpus/{source}", "chunk_index": index, "similarity": similarity})


def test_search_records_count_the_hops_in_the_chunks_the_pipeline_reads():
    hop_1 = {"source": "web/rrf.md", "evidence": "RAG-Fusion merges the lists with RRF"}
    question = {"hops": [hop_1, HOP]}
    first = [scored("web/rrf.md", "RAG-Fusion merges the lists with RRF.", 0.90, 0),
             scored("docs/rankers.md", f"k = 60 is {HOP['evidence']}.", 0.80, 1)]  # hop 2, under the cutoff
    later = [scored("docs/other.md", "Nothing here.", 0.84, 2), scored("docs/rankers.md", HOP["evidence"], 0.82, 1)]
    judge = search_records([("q", first), ("follow-up", later)], question, cutoff=0.86)
    assert judge[0]["chunks"] == ["web/rrf.md#0", "docs/rankers.md#1"] and judge[0]["read"] == ["web/rrf.md#0"]
    assert judge[0]["hops"] == [True, False]  # the hop-2 chunk fell under the cutoff: not read
    assert judge[1]["read"] == ["docs/other.md#2"] and judge[1]["hops"] == [False, False]  # only the best is waived
    bridge = search_records([("q", first), ("bridge", later)], question, cutoff=0.86, keeps_all=True)
    assert bridge[1]["read"] == bridge[1]["chunks"] and bridge[1]["hops"] == [False, True]
    assert read_chunks(first, True, None, False) == first  # no cutoff: every chunk is read
