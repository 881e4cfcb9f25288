"""`bench multihop_retrieval`'s reading of a question's searches (`found`) and its summary (`summarize`), on FAKE
ROWS written by hand in the form the benchmark records them; no model, no index."""

from __future__ import annotations

from benchmarks.multihop_retrieval import CEILING, CUTS, DEEP, SEARCHES, depth_rates, found, summarize

CUTOFF = 0.86


def fake_row(question: list, bridged: list, bridge: list, split: str = "tune", language: str = "en",
             deep: list | None = None) -> dict:
    """A FAKE ROW: per search (question, question + bridge, bridge, the question's k=10) the [hop 1, hop 2] ranks and
    the similarities; the deep search's ranks default to the question's."""

    def search(ranks: list) -> dict:
        return {"chunks": ["a#0", "b#0", "c#0"], "similarities": [0.9, 0.8, 0.7], "hop ranks": ranks}

    return {"id": "mh-x", "split": split, "language": language, "answer_type": "span", "bridge": "B",
            "searches": {"question": search(question), "question + bridge": search(bridged), "bridge": search(bridge),
                         DEEP: search(deep or question)}}


def test_found_reads_ranks_cuts_unions_and_the_ceiling():
    row = fake_row([1, None], [1, 2], [None, 3])  # the question finds hop 1; the bridge finds hop 2 at 0.7
    assert found(row, "question", "top-k", CUTOFF) == [True, False, False]
    assert found(row, "question + bridge", "above cutoff", CUTOFF) == [True, False, False]  # hop 2 at 0.8 < 0.86
    assert found(row, "union with bridge alone", "top-k", CUTOFF) == [True, True, True]
    assert found(row, "union with bridge alone", "above cutoff", CUTOFF) == [True, False, False]
    assert found(row, "union with bridge alone", CUTS[2], CUTOFF) == [True, True, True]  # the bridge keeps its k
    assert found(row, CEILING, CUTS[2], CUTOFF) == [True, True, True]
    lost_first = fake_row([None, None], [None, 1], [1, 1])  # hop 1 only through the gold bridge
    assert found(lost_first, "union with bridge alone", "top-k", CUTOFF) == [True, True, True]
    assert found(lost_first, CEILING, "top-k", CUTOFF) == [False, True, False]  # no bridge to copy without hop 1


def test_summary_rates_have_wilson_intervals_and_paired_differences():
    rows = [fake_row([1, None], [1, 2], [None, 1]), fake_row([1, 2], [1, 2], [None, None], language="zh"),
            fake_row([None, None], [None, None], [None, None], split="held_out")]
    rates, paired = summarize(rows, CUTOFF)
    first = {(r["split"], r["questions"], r["search"], r["cut"]): r for r in rates}
    tune = first["tune", "all", "question", "top-k"]
    assert tune["n"] == 2 and tune["hop 1"] == 1.0 and tune["both"] == 0.5
    assert tune["both ci"][0] < 0.5 < tune["both ci"][1]
    assert first["tune", "all", "union with bridge alone", "top-k"]["both"] == 1.0
    assert first["held_out", "en", CEILING, "top-k"]["both"] == 0.0
    assert ("held_out", "zh", "question", "top-k") not in first  # no Chinese question in that half
    assert {r["search"] for r in rates} == set(SEARCHES)
    pair = next(r for r in paired if r["split"] == "tune" and r["questions"] == "all" and r["cut"] == "top-k"
                and r["comparison"] == "union with bridge alone - question")
    assert pair["n"] == 2 and pair["both diff"] == 0.5 and pair["both diff ci"][0] <= 0.5 <= pair["both diff ci"][1]


def test_depth_rates_count_hops_within_each_depth_with_and_without_the_bridge():
    rows = [fake_row([None, None], [None, None], [None, 2], deep=[4, 9]),  # hop 1 at 4, hop 2 at 9 or via the bridge
            fake_row([1, None], [1, None], [None, None], deep=[1, None]),
            fake_row([None, None], [None, None], [None, None], split="held_out", deep=[None, 1])]
    rates = {(r["split"], r["questions"], r["depth"]): r for r in depth_rates(rows)}
    assert ("held_out", "zh", 3) not in rates  # no question in that group: no row
    three, five, ten = (rates["tune", "all", d] for d in (3, 5, 10))
    assert three["n"] == 2 and three["hop 1"] == 0.5 and three["both"] == 0.0 and three["hop 2 with bridge"] == 0.5
    assert five["hop 1"] == 1.0 and five["both"] == 0.0 and five["both with bridge"] == 0.5
    assert ten["both"] == 0.5 and ten["hop 2"] == 0.5
    low, high = five["hop 1 ci"]
    assert low < 1.0 == high
    assert rates["held_out", "all", 3]["hop 2"] == 1.0 and rates["held_out", "all", 3]["hop 1"] == 0.0
