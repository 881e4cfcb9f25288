"""The durability benchmark (benchmarks.durability) on a short chain: every mode runs, and each leaves the
checkpoints its mode promises (timings are only checked to be positive: they depend on the machine)."""

from __future__ import annotations

from benchmarks.durability import measure


def test_each_mode_is_measured_and_leaves_its_checkpoints(tmp_path) -> None:
    rows = {row["durability"]: row for row in measure(steps=3, chars=10, rounds=2, folder=tmp_path)}
    assert list(rows) == ["no checkpointer", "exit", "async", "sync"]
    assert [rows[mode]["checkpoints per run"] for mode in rows] == [0, 1, 5, 5]  # async/sync: input, 3 steps, end
    assert all(row["runs"] == 2 and row["ms per step (median)"] > 0 for row in rows.values())
