"""The chat benchmark's summary (benchmarks.chat.summarise) on hand-made conversation rows (no model, no index):
hits per query form, the gold file kept above the cutoff, and the condensed query's paired gain in kept files."""

from __future__ import annotations

from benchmarks.chat import QUERIES, summarise


def row(ranks: tuple, kept: tuple) -> dict:
    """One conversation's recorded ranks (no cutoff) and kept flags (cutoff), in QUERIES order."""
    return {"ranks": dict(zip(QUERIES, ranks)), "kept above the cutoff": dict(zip(QUERIES, kept))}


def test_summary_counts_hits_kept_files_and_the_condensed_gain() -> None:
    rows = [row((1, 1, 1), (False, True, True)), row((2, 1, 1), (True, True, True)),
            row((None, 3, 1), (False, False, True)), row((1, 1, 1), (True, True, True))]
    table = {r["query"]: r for r in summarise(rows)}
    assert [table[q]["hit@1"] for q in QUERIES] == [0.5, 0.75, 1.0]
    assert [table[q]["hit@3"] for q in QUERIES] == [0.75, 1.0, 1.0]
    assert [table[q]["kept above the cutoff"] for q in QUERIES] == [0.5, 0.75, 1.0]
    assert table["as written"]["condensed minus this, kept"] == 0.25  # one rescued, none lost
    assert table["joined to the first question"]["condensed minus this, kept"] == -0.25
    assert "condensed minus this, kept" not in table["condensed"]
    low, high = table["as written"]["condensed minus this, kept 95% CI"]
    assert 0 <= low <= 0.25 <= high <= 1  # resampling the four conversations, pairs kept together
