"""The judge's labelled set (data/judge_labels.json, built by `python -m benchmarks judging --build`) and the
agreement measurement. The committed set must be what the builder makes from the committed question files, and each
label must mean what it says. The measuring run uses a TEST DOUBLE chat model (`AlwaysTwo`: every passage gets a 2
with a made-up answer), so the judge's checks, not the model, decide the scores; no timing."""

from __future__ import annotations

import json

import pytest
from doubles import ToolCallingDouble, tool_call
from langchain_core.messages import AIMessage, BaseMessage

from benchmarks import judging
from rag_lib.matching import occurs_in


def test_the_committed_labelled_set_is_what_the_builder_makes_and_each_label_means_what_it_says():
    items = json.loads(judging.LABELS.read_text(encoding="utf-8"))
    assert items == judging.build_labels()
    assert [sum(i["label"] == k for i in items) for k in (0, 1, 2)] == [23, 51, 23]
    def by_question(name: str) -> dict[str, dict]:
        return {q["question"]: q for q in json.loads((judging.DATA / name).read_text(encoding="utf-8"))}

    sample, multihop = by_question("sample_questions.json"), by_question("multihop_questions.json")
    for item in items:
        assert item["passage"] in judging.chunks_of(item["source"])  # a chunk as the indexer cuts it
        if item["label"] == 2:
            assert occurs_in(sample[item["question"]]["answer"], item["passage"])
        elif item["label"] == 0:
            assert item["source"] != f"docs/{sample[item['question']]['source']}"
        else:
            question = multihop[item["question"]]
            assert occurs_in(question["hops"][0]["evidence"], item["passage"])
            assert not occurs_in(question["answer"], item["passage"])


class AlwaysTwo(ToolCallingDouble):
    """TEST DOUBLE: gives every passage a 2 with an answer that no passage holds."""

    def reply(self, messages: list[BaseMessage], tool: str | None) -> AIMessage:
        return tool_call("Judgment", {"score": 2, "answer": "zyzzyva quux"})


def test_agreement_of_the_models_score_and_of_the_checked_score(monkeypatch, bench_output):
    monkeypatch.setattr(judging, "get_chat_model", AlwaysTwo)
    judging.main(["--limit", "30", "--out", "mini_judging"])  # the first 30: 23 labelled 2, then 7 labelled 0
    results = bench_output("mini_judging")
    raw, checked, kept = results["summary"]
    assert (raw["score"], raw["n"], raw["agree"]) == ("llm score", 30, 23)  # a 2 for everything: right on the 2s
    assert raw["confusion (label -> score)"]["0"]["2"] == 7
    assert checked["agree"] == 0  # the made-up answer is in no chunk: every 2 is lowered to 1
    assert checked["confusion (label -> score)"]["2"]["1"] == 23
    low, high = raw["95% CI"]
    assert low < raw["agreement"] < high
    cutoff = results["setup"]["cutoff"]
    for row in results["rows"]:  # the graph's score: 0 under the cosine cutoff, without the model; else the checked one
        assert row["graph score"] == (0 if row["similarity"] < cutoff else row["score"])
    assert kept["score"] == "graph score" and kept["agree"] == sum(r["graph score"] == r["label"]
                                                                   for r in results["rows"])
    assert kept["confusion (label -> score)"]["0"]["0"] >= 1  # some passage about another document falls under it

    monkeypatch.setattr(judging, "get_chat_model", lambda: pytest.fail("rescoring must not load a model"))
    judging.main(["--rescore", "--out", "mini_judging"])
    again = bench_output("mini_judging")
    assert again["summary"] == results["summary"] and again["meta"] == results["meta"]
