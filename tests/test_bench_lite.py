"""Milvus Lite's segments and BM25 statistics, and the `bench lite` benchmark on a tiny SQuAD-format slice."""

from __future__ import annotations

import numpy as np
from test_bench_retrieval import CONTEXTS, write_squad

from benchmarks import lite
from rag_lib.store import SPARSE_SEARCH_PARAMS, ensure_collection, make_row, seal

# Four documents about fruit and one about a river: "苹果" is common in the first four, rare in the last.
DOCS = ["苹果是一种水果，苹果很甜。", "苹果树在春天开花。", "这里种了很多苹果。", "苹果可以做成果汁。",
        "长江边上也有一棵苹果树。"]


def bm25_scores(client, name: str, query: str) -> dict[str, float]:
    hits = client.search(name, data=[query], anns_field="sparse", limit=10, search_params=SPARSE_SEARCH_PARAMS,
                         output_fields=["text"])[0]
    return {h["entity"]["text"]: abs(h["distance"]) for h in hits}


def load_docs(client, name: str, groups: list[list[str]]) -> None:
    ensure_collection(client, 4, name)
    for group in groups:
        client.insert(name, [make_row("doc", text) | {"dense": [1.0, 0.0, 0.0, 0.0]} for text in group])
        seal(client, name)


def test_lite_scores_bm25_with_each_segments_own_statistics(milvus):
    """The same document gets another BM25 score for the same query when it sits in its own segment: Lite counts
    document frequencies and lengths per segment (notebook 04 measures what this costs on CMRC)."""
    load_docs(milvus, "together", [DOCS])
    load_docs(milvus, "apart", [DOCS[:4], DOCS[4:]])
    together, apart = bm25_scores(milvus, "together", "长江"), bm25_scores(milvus, "apart", "长江")
    assert list(together) == list(apart) == [DOCS[4]]
    assert apart[DOCS[4]] != together[DOCS[4]]
    assert len(bm25_scores(milvus, "apart", "苹果")) == len(bm25_scores(milvus, "together", "苹果")) == 5


def test_grown_rows_are_distinct_real_sentences_cut_to_300_characters():
    contexts = ["第一句。第二句很长很长。第三句！", "另一段的第一句。另一段的第二句？"]
    rows = lite.grown_rows(contexts, 50)
    assert rows == lite.grown_rows(contexts, 50)  # seeded
    assert len({r["id"] for r in rows}) == 50 and all(0 < len(r["text"]) <= 300 for r in rows)
    sentences = {s for c in contexts
                 for s in ("第一句。", "第二句很长很长。", "第三句！", "另一段的第一句。", "另一段的第二句？")}
    for row in rows:
        text = row["text"]
        while text:
            first = next(s for s in sentences if text.startswith(s))
            text = text[len(first):]


def test_benchmark_writes_segments_scale_and_profile(tmp_path, bench_output):
    path = tmp_path / "mini.json"
    write_squad(path)
    lite.main(["--cmrc", str(path), "--sizes", "60", "--out", "mini"])
    results = bench_output("mini")
    rows = {row["pipeline"]: row for row in results["segments"]["pipelines"]}
    assert len(rows) == 3 * 3 + 2 and results["segments"]["chunks"] == len(CONTEXTS)
    assert rows[lite.STOPPED]["R@1"] == 0.75 and rows[lite.STOPPED][f"R@1 - {lite.ONE_FLUSH}"] == 0.0
    for route in lite.ROUTES:  # three distinct topics, found by every load; the empty question is a miss
        for load in results["segments"]["rows per flush"]:
            row = rows[f"{route}, {load}"]
            assert row["R@1"] == 0.75 and row["p50 ms"] > 0
            if load != lite.ONE_FLUSH:
                assert row[f"R@1 - {lite.ONE_FLUSH}"] == 0.0
    [scale] = results["scale"]
    assert scale["chunks"] == 60 and scale["insert + flush + load s"] > 0
    names = {row["pipeline"] for row in scale["pipelines"]}
    assert set(lite.SCALE_ROUTES) < names and "BM25, rank_bm25 (in-process)" in names
    assert {lite.CLIENT_BM25, lite.CLIENT_HYBRID, *lite.SCALE_STOPPED} < names
    assert scale["client-side BM25 fit + encode + load s"] > 0
    assert all(row["p50 ms"] > 0 for row in scale["pipelines"])
    assert all(row[f"batched ms/q ({lite.BATCH} per call)"] > 0 for row in scale["pipelines"]
               if row["pipeline"] in {*lite.SCALE_ROUTES, *lite.SCALE_STOPPED, lite.CLIENT_BM25, lite.CLIENT_HYBRID})
    shares = [row["share of samples"] for row in results["profile"]]
    assert shares and 0 < sum(shares) <= 1.0 + 1e-9


def test_known_queries_hand_back_the_models_vectors(embeddings):
    known = lite.KnownQueries(embeddings, ["故宫旧称什么？"])
    assert np.allclose(known.embed_query("故宫旧称什么？"), embeddings.embed_query("故宫旧称什么？"), atol=1e-6)

