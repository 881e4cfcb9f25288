"""Neighbour recall, index (re)building on Milvus Lite, Lite's dropped build params, and the index benchmark end
to end."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from rag_lib.experiments.ann import (
    REFUSAL_LOGGERS,
    build_index,
    clustered_vectors,
    create_vector_collection,
    describe_vector_index,
    exact_top_k,
    index_files,
    neighbour_recall,
    search_ids,
    try_index_type,
    unit_vectors,
)

TINY = {"M": 4, "efConstruction": 8}
LITE_DEFAULT = {"M": 16, "efConstruction": 200}


# ── neighbour recall on hand-made cases ─────────────────────────────────────────────────────────────


def test_recall_is_one_for_the_same_ids_in_any_order():
    assert neighbour_recall([[1, 2, 3]], [[3, 1, 2]], k=3) == 1.0


def test_recall_averages_the_overlap_per_query():
    found = [[1, 2, 9, 8], [5, 6, 7, 0]]
    truth = [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert neighbour_recall(found, truth, k=4) == pytest.approx((2 / 4 + 3 / 4) / 2)


def test_recall_only_counts_the_first_k_of_each_list():
    # 1 is a true neighbour but comes back at rank 3, outside the top-2
    assert neighbour_recall([[7, 8, 1]], [[1, 2, 3]], k=2) == 0.0
    assert neighbour_recall([[2, 8, 1]], [[1, 2, 3]], k=2) == 0.5


def test_recall_ignores_padding_and_short_ground_truth():
    # a search that returned only one hit (-1 pads the rest)
    assert neighbour_recall([[1, -1, -1]], [[1, 2, 3]], k=3) == pytest.approx(1 / 3)
    # a collection with fewer rows than k: the ground truth itself is short
    assert neighbour_recall([[2, 1, -1]], [[1, 2, -1]], k=3) == 1.0


def test_recall_rejects_mismatched_rows():
    with pytest.raises(ValueError, match="2 result rows for 1 ground-truth rows"):
        neighbour_recall([[1], [2]], [[1]], k=1)


def test_exact_top_k_orders_by_cosine():
    vectors = np.array([[1, 0], [0.8, 0.6], [0, 1], [-1, 0]], dtype=np.float32)
    queries = np.array([[1, 0], [0, 1]], dtype=np.float32)
    assert exact_top_k(vectors, queries, k=2).tolist() == [[0, 1], [2, 1]]


# ── Milvus Lite: FLAT is exact, build params nested vs flat ───────────────────────────────────────────


@pytest.fixture()
def loaded(milvus, tmp_path: Path):
    """2,000 random unit vectors in a fresh Lite collection, plus 30 queries and the Lite directory."""
    vectors = unit_vectors(2000, seed=0)
    create_vector_collection(milvus, "vectors", vectors)
    return milvus, tmp_path / "test.db", vectors, unit_vectors(30, seed=1)


def test_flat_search_is_exact(loaded):
    client, _, vectors, queries = loaded
    build_index(client, "vectors", "FLAT")
    found, calls = search_ids(client, "vectors", queries, k=10, batch_size=7)
    assert len(calls) == 5  # 30 queries, 7 per call
    assert neighbour_recall(found, exact_top_k(vectors, queries, 10), 10) == 1.0


def test_lite_drops_flat_build_params_and_honours_nested_ones(loaded):
    """Documents a Milvus Lite bug. If this fails because the flat form now shows its params, Lite fixed it:
    the nesting workaround in rag_lib/store.py and rag_lib/experiments/ann.py can go (servers accept both forms)."""
    client, lite_dir, _, queries = loaded

    def build_and_read(params, nested):
        build_index(client, "vectors", "HNSW", params, nested=nested)
        [sidecar] = index_files(lite_dir, "vectors", "HNSW")
        found, _ = search_ids(client, "vectors", queries, k=10, search={"ef": 10})
        return describe_vector_index(client, "vectors"), sidecar.read_bytes(), found

    flat_desc, flat_bytes, flat_found = build_and_read(TINY, nested=False)
    nested_desc, nested_bytes, nested_found = build_and_read(TINY, nested=True)
    default_desc, default_bytes, _ = build_and_read(LITE_DEFAULT, nested=True)

    assert "params" not in flat_desc, "Milvus Lite now keeps flat build params: drop the nesting workaround"
    assert nested_desc["params"] == TINY and default_desc["params"] == LITE_DEFAULT
    # The flat build IS the default one, byte for byte, and not the tiny graph it asked for.
    assert flat_bytes == default_bytes and flat_bytes != nested_bytes
    build_index(client, "vectors", "FLAT")
    truth, _ = search_ids(client, "vectors", queries, k=10)
    assert neighbour_recall(flat_found, truth) > neighbour_recall(nested_found, truth) + 0.1


def test_a_refused_index_type_is_reported_with_only_its_error_logs_silenced(milvus, caplog):
    create_vector_collection(milvus, "probe", unit_vectors(50, seed=2))
    levels = [logging.getLogger(name).level for name in REFUSAL_LOGGERS]
    with caplog.at_level(logging.WARNING):
        assert "IVF_PQ" in try_index_type(milvus, "probe", "IVF_PQ", {"nlist": 16, "m": 8})
        logging.getLogger("rag_lib").warning("other logging still works")
    assert [r.getMessage() for r in caplog.records] == ["other logging still works"]  # Lite's refusal was dropped
    assert [logging.getLogger(name).level for name in REFUSAL_LOGGERS] == levels  # and the loggers are as before
    assert milvus.list_indexes("probe") == []  # the refused index is not left for Lite's background builder
    assert try_index_type(milvus, "probe", "HNSW", {"M": 8, "efConstruction": 16}) == "ok"


def test_rebuilding_replaces_the_index(loaded):
    client, lite_dir, _, _ = loaded
    build_index(client, "vectors", "IVF_FLAT", {"nlist": 8})
    build_index(client, "vectors", "HNSW_SQ", {"M": 8, "efConstruction": 16})
    assert describe_vector_index(client, "vectors")["index_type"] == "HNSW_SQ"
    assert client.list_indexes("vectors") == ["vec"]
    assert index_files(lite_dir, "vectors", "IVF_FLAT") == [] and len(index_files(lite_dir, "vectors", "HNSW_SQ")) == 1


# ── the benchmark, end to end on tiny settings ────────────────────────────────────────────────────────


def test_cmrc_texts_chunks_dedups_and_skips_empty_questions(tmp_path: Path):
    from benchmarks.index import cmrc_texts

    context = "。".join(f"第{i}句话讲的是一个很长的故事的一部分" for i in range(40)) + "。"
    answers = [{"text": "故事", "answer_start": 0}]
    data = {"data": [{"paragraphs": [
        {"id": "P1", "context": context,
         "qas": [{"question": "讲的是什么？", "id": "a", "answers": answers},
                 {"question": " ", "id": "b", "answers": answers}]},
        {"id": "P2", "context": context, "qas": [{"question": "第几句？", "id": "c", "answers": answers}]},
    ]}]}
    path = tmp_path / "trial.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    chunks, questions = cmrc_texts(path)
    assert questions == ["讲的是什么？", "第几句？"]
    assert len(chunks) >= 2 and len(set(chunks)) == len(chunks)  # the repeated context adds no chunk
    assert all(len(c) <= 300 for c in chunks)
    assert cmrc_texts(path, contexts=1)[1] == ["讲的是什么？"]  # --quick: the first contexts only
    with pytest.raises(SystemExit, match="CMRC_PATH"):
        cmrc_texts(tmp_path / "missing.json")


def test_cached_vectors_embeds_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from langchain_core.embeddings import Embeddings

    from benchmarks.index import cached_vectors

    class CountingEmbeddings(Embeddings):  # a fake, for this unit test only: counts calls
        calls = 0

        def embed_documents(self, texts):
            CountingEmbeddings.calls += 1
            return [[float(len(t)), 1.0] for t in texts]

        def embed_query(self, text):
            return [0.0, float(len(text))]

    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path))
    first, seconds = cached_vectors(["ab", "c"], "passage", CountingEmbeddings())
    again, cached = cached_vectors(["ab", "c"], "passage", CountingEmbeddings())
    queries, _ = cached_vectors(["ab", "c"], "query", CountingEmbeddings())
    assert CountingEmbeddings.calls == 1 and seconds is not None and cached is None
    assert again.tolist() == first.tolist() == [[2.0, 1.0], [1.0, 1.0]]
    assert queries.tolist() == [[0.0, 2.0], [0.0, 1.0]]


def test_indexing_throughput_times_every_stage(milvus, embeddings, tmp_path: Path):
    from benchmarks.index import indexing_throughput
    from rag_lib.store import DEFAULT_COLLECTION, count_rows

    files = []
    for name, text in (("a.md", "Milvus Lite 是嵌入式版本。" * 30), ("b.txt", "HNSW builds a layered graph. " * 20)):
        (tmp_path / name).write_text(text, encoding="utf-8")
        files.append(tmp_path / name)
    result = indexing_throughput(milvus, files, embeddings)
    assert [s["stage"] for s in result["stages"]] == ["load", "split", "embed", "insert"]
    assert result["chunks"] == count_rows(milvus, DEFAULT_COLLECTION) > 2
    assert all(s["seconds"] > 0 and s["chunks/s"] > 0 for s in result["stages"])


def test_quick_synthetic_sweep_runs_end_to_end(bench_output):
    from benchmarks.index import main
    main(["--quick", "--sections", "synthetic", "--synthetic-n", "1500", "--queries", "20", "--single", "2"])
    result = bench_output("index_quick")["synthetic"]
    rows = result["settings"]
    assert result["vectors"] == 1500 and result["flat_vs_numpy_recall"] == 1.0
    assert rows[0]["index"] == "FLAT" and rows[0]["recall@10"] == 1.0
    assert {r["index"] for r in rows} >= {"FLAT", "IVF_FLAT", "IVF_SQ8", "HNSW", "HNSW_SQ"}
    assert all(0.0 <= r["recall@10"] <= 1.0 and r["index_mb"] > 0 and r["segments"] == 1 for r in rows)
    ivf = [r["recall@10"] for r in rows if r["index"] == "IVF_FLAT"]
    assert ivf == sorted(ivf)  # probing more lists never finds fewer true neighbours
    flat_form, nested_form = result["dropped_params"]
    assert "params" not in flat_form["describe_index"] and nested_form["describe_index"]["params"] == TINY
    assert [b["batch"] for b in result["batch_study"] if b["index"] == "FLAT"] == [1, 5]


def test_clustered_vectors_are_seeded_unit_vectors_with_near_neighbours():
    data, again, queries = (clustered_vectors(2000, seed=0), clustered_vectors(2000, seed=0),
                            clustered_vectors(50, seed=1))
    assert data.shape == (2000, 384) and data.dtype == np.float32 and np.array_equal(data, again)
    assert np.allclose(np.linalg.norm(data, axis=1), 1.0, atol=1e-5)
    nearest = (queries @ data.T).max(axis=1)
    random_nearest = (queries @ unit_vectors(2000, seed=0).T).max(axis=1)
    assert np.median(nearest) > 0.5 > 0.25 > np.median(random_nearest)  # a topic to be near, unlike random vectors


def test_crossing_benchmark_measures_every_engine_and_finds_where_hnsw_wins(bench_output):
    from benchmarks import crossing
    crossing.main(["--sizes", "300", "900", "--queries", "30", "--single", "3", "--out", "mini"])
    result = bench_output("mini")
    rows = result["rows"]
    per_size = 2 * (1 + len(crossing.EFS)) + 1  # Lite and faiss: FLAT + HNSW per ef; numpy
    assert len(rows) == 2 * per_size and {r["vectors"] for r in rows} == {300, 900}
    assert all(r[f"recall@{crossing.K}"] == 1.0 for r in rows if r["index"] == "FLAT")
    assert all(r["cpu_ms_per_query"] > 0 and r["p50_single_ms"] > 0 for r in rows)
    assert {(c["engine"], c["metric"]) for c in result["crossings"]} == {
        (e, m) for e in ("Milvus Lite", "faiss") for m in ("cpu_ms_per_query", "p50_single_ms")}


def test_crossing_is_the_size_from_which_a_good_enough_hnsw_stays_cheaper():
    from benchmarks.crossing import FLOOR, MARGIN, crossing

    def rows(size: int, flat: float, hnsw: list[tuple[float, float]]) -> list[dict]:
        return [{"vectors": size, "engine": "e", "index": "FLAT", "recall@10": 1.0, "ms": flat}] + [
            {"vectors": size, "engine": "e", "index": "HNSW", "recall@10": r, "ms": ms} for r, ms in hnsw]

    cheaper = 0.99 / MARGIN
    table = rows(1, 1.0, [(FLOOR, cheaper)]) + rows(2, 1.0, [(FLOOR, 0.9), (0.5, 0.1)]) + rows(3, 2.0, [(0.999, 1.7)])
    table += rows(4, 2.0, [(0.999, 2 * cheaper)])
    found = crossing(table, "e", "ms")
    # size 1 wins; size 2 does not (its cheap setting misses the recall, the other is within the margin); nor 3
    assert found["HNSW cheaper from"] == 4
    assert found["by size"][2] == {"FLAT": 1.0, "HNSW": 0.9}
    assert crossing(rows(1, 1.0, [(0.5, 0.1)]), "e", "ms")["HNSW cheaper from"] is None
