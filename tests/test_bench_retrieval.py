"""The CMRC retrieval benchmark runs end to end on a tiny SQuAD-format slice (correctness only, no timing)."""

from __future__ import annotations

import json

from benchmarks import retrieval
from rag_lib.experiments import cmrc_search
from rag_lib.experiments.cmrc import load_cmrc
from rag_lib.store import PROJECT_ROOT

CONTEXTS = {
    "C1": "故宫位于北京市中心，是明清两代的皇家宫殿，旧称紫禁城。故宫建成于1420年，占地约72万平方米。",
    "C2": "长江是亚洲第一长河，全长约6300公里，发源于青藏高原，最终注入东海。三峡大坝位于长江上游。",
    "C3": "大熊猫主要生活在中国四川、陕西和甘肃的山区，以竹子为主要食物，是中国的国宝。",
}
QUESTIONS = [
    ("C1", "故宫旧称什么？", "紫禁城"),
    ("C2", "长江全长约多少公里？", "6300公里"),
    ("C3", "大熊猫主要吃什么？", "竹子"),
    ("C3", "", "竹子"),  # CMRC has empty questions: they must count as misses, not crash
]


def write_squad(path) -> None:
    paragraphs = {cid: {"id": cid, "context": text, "qas": []} for cid, text in CONTEXTS.items()}
    for i, (cid, question, answer) in enumerate(QUESTIONS):
        start = CONTEXTS[cid].index(answer)
        paragraphs[cid]["qas"].append({"id": f"Q{i}", "question": question,
                                       "answers": [{"text": answer, "answer_start": start}]})
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": list(paragraphs.values())}]}, ensure_ascii=False))


def test_loader_reads_contexts_questions_and_answers(tmp_path):
    path = tmp_path / "mini.json"
    write_squad(path)
    data = load_cmrc(path)
    assert set(data.contexts) == {"C1", "C2", "C3"}
    assert [q.answers for q in data.questions][:2] == [("紫禁城",), ("6300公里",)]


def test_the_held_out_dev_split_loads_and_shares_no_paragraph_with_trial():
    trial, dev = (load_cmrc(PROJECT_ROOT / "data" / "cmrc2018" / f"cmrc2018_{split}.json")
                  for split in ("trial", "dev"))
    assert (len(dev.contexts), len(dev.questions)) == (848, 3219)
    assert not set(dev.contexts) & set(trial.contexts) and not set(dev.contexts.values()) & set(trial.contexts.values())


def test_benchmark_writes_every_pipeline_with_sane_scores(tmp_path, bench_output):
    path = tmp_path / "mini.json"
    write_squad(path)
    retrieval.main(["--cmrc", str(path), "--out", "mini"])
    results = bench_output("mini")
    rows = {row["pipeline"]: row for row in results["pipelines"]}
    assert len(rows) == 17 and results["setup"]["questions"] == 4
    assert results["setup"]["dataset"] == "CMRC 2018, mini.json (CC BY-SA 4.0)"  # the file it ran on, by name
    for row in rows.values():
        assert 0.0 <= row["R@1"] <= row["R@3"] <= row["R@5"] <= 0.75  # the empty question is always a miss
    # three distinct topics: BM25 and dense each find all three real questions' contexts first
    assert rows[cmrc_search.BM25]["R@1"] == rows[retrieval.BM25_JIEBA]["R@1"] == 0.75
    assert rows["Milvus dense HNSW"]["R@1"] == 0.75
    assert rows["hybrid RRF(60)"]["MRR@5"] == 0.75
    assert rows["hybrid RRF + e5 rerank (two-stage)"]["R@1"] == 0.75
    # parent-child hands over the whole context: every found context holds its answer
    parents = rows["parent-child: 120-char children -> context"]
    assert parents["ctx recall@3"] == parents["R@3"] == 0.75
    unbatched = {"peer: rank_bm25 (jieba), numpy", retrieval.ENSEMBLE, retrieval.FUSED_JIEBA, retrieval.FUSED_WIDE}
    for name, row in rows.items():  # no batch API or only scored: no batched time rather than a borrowed one
        assert (row["batched ms/q (64 per call)"] is None) == (name in unbatched), name
        assert name in unbatched or row["batched ms/q (64 per call)"] > 0
    assert rows[cmrc_search.BM25]["p50 / peer"] == rows[cmrc_search.BM25]["p50 ms"] / rows[
        "peer: rank_bm25 (jieba), numpy"]["p50 ms"]  # compared with the in-process BM25, not the dense peer
    # the per-context fusion and LangChain's ensemble of the same searches find every context first
    for name in (retrieval.FUSED, retrieval.FUSED_COMPLETE, retrieval.FUSED_JIEBA, retrieval.FUSED_WIDE,
                 retrieval.FUSED_CLIENT, retrieval.ENSEMBLE):
        assert rows[name]["R@1"] == 0.75
    peer = rows["peer: rank_bm25 (jieba), numpy"]  # client-side BM25 in Milvus ranks as rank_bm25 does
    assert {m: rows[retrieval.CLIENT_BM25][m] for m in ("R@1", "R@3", "MRR@5")} == {
        m: peer[m] for m in ("R@1", "R@3", "MRR@5")}
    fusion = results["per-context fusion"]
    assert fusion["weights"] == retrieval.FUSION_WEIGHTS
    held = fusion["half B (held out)"]
    assert set(held) == {retrieval.FUSED, retrieval.FUSED_COMPLETE, retrieval.FUSED_JIEBA, retrieval.FUSED_WIDE,
                         retrieval.FUSED_CLIENT, retrieval.ENSEMBLE, retrieval.PARENT_CHILD,
                         "hybrid weighted 0.6 dense / 0.4 BM25, min-max"}
    assert 0 < held[retrieval.FUSED]["questions"] < fusion["all"][retrieval.FUSED]["questions"] == 4
    assert fusion["all"][retrieval.PARENT_CHILD]["fused - this, R@1"] == 0.0


def test_fusion_weights_are_the_ones_bench_ceiling_chose_on_half_a():
    ceiling = json.loads((PROJECT_ROOT / "bench_results" / "ceiling.json").read_text(encoding="utf-8"))
    chosen = {name: w for name, w in ceiling["halves"][0]["weights"].items() if w}
    assert ceiling["halves"][0]["tuned on"] == "A" and chosen == retrieval.FUSION_WEIGHTS


def test_evaluate_scores_a_search_and_hides_its_progress_bar_when_asked(tmp_path, capsys) -> None:
    """`evaluate(progress=False)` scores as usual and writes no progress bar (a stand-in search, no index)."""
    write_squad(tmp_path / "tiny.json")
    questions = load_cmrc(tmp_path / "tiny.json").questions

    def perfect(question: str) -> list[tuple[str, str]]:  # a fake search: the gold context first
        gold = next(q for q in questions if q.text == question)
        return [(gold.context_id, CONTEXTS[gold.context_id])]

    rows, _ = cmrc_search.evaluate({"perfect": perfect}, questions, progress=False)
    assert capsys.readouterr().err == ""
    assert rows[0]["R@1"] == 0.75  # the empty question counts as a miss
