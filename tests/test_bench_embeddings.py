"""The two-embedding benchmark on a tiny SQuAD-format slice: every pipeline scored, differences paired, speed
measured."""

from __future__ import annotations

from test_bench_retrieval import write_squad

from benchmarks import embeddings


def test_benchmark_scores_both_models_alone_and_fused_and_times_indexing(tmp_path, bench_output):
    path = tmp_path / "mini.json"
    write_squad(path)
    embeddings.main(["--cmrc", str(path), "--scale", "40", "--e5-sample", "8", "--out", "mini"])
    results = bench_output("mini")
    rows = {row["pipeline"]: row for row in results["pipelines"]}
    assert set(rows) == set(embeddings.PIPELINES) and results["setup"]["questions"] == 4
    for row in rows.values():  # three distinct topics, found first by every pipeline; the empty question is a miss
        assert row["R@1"] == 0.75 and row["p50 ms"] > 0
    assert [(d["pipeline"], d["against"]) for d in results["differences"]] == embeddings.PAIRS
    assert all(d["R@1 diff"] == 0.0 and d["R@1 diff 95% CI"] == [0.0, 0.0] for d in results["differences"])
    speed = results["indexing"]
    assert speed["chunks"] == 40 and speed["e5 chunks"] == 8
    assert all(m["chunks/s"] > 0 for m in speed["models"]) and speed["milvus insert + flush + load s (both fields)"] > 0
