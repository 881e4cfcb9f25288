"""`python -m benchmarks multihop_gold` on three committed two-hop questions: one row per question and context (hop 1
alone, hop 2 alone, both), the rates with Wilson intervals, the questions answered from one passage, and a resumed
run that writes nothing twice. Correctness only, no timing.

The chat model is a TEST DOUBLE (`GoldCopier`): it copies the gold answer when its prompt holds it, else says it
does not know, so a context is "right" exactly when its passages hold the gold. The passages are the real chunks of
data/docs and data/web.
"""

from __future__ import annotations

import json

from doubles import ToolCallingDouble
from langchain_core.messages import AIMessage, BaseMessage

from benchmarks import multihop_gold
from rag_lib.experiments.questions import load_questions
from rag_lib.matching import occurs_in

CHOSEN = [q for q in load_questions() if q["id"] in ("mh-01", "mh-03", "mh-04")]


class GoldCopier(ToolCallingDouble):
    """TEST DOUBLE: copies a gold answer found in its prompt, else "I don't know."."""

    def reply(self, messages: list[BaseMessage], tool: str | None) -> AIMessage:
        prompt = "\n".join(str(m.content) for m in messages)
        return AIMessage(next((q["answer"] for q in CHOSEN if q["answer"] in prompt), "I don't know."))


def test_rows_rates_single_passage_and_resume(tmp_path, monkeypatch, bench_output):
    questions = tmp_path / "three.json"
    questions.write_text(json.dumps([{k: v for k, v in q.items() if k != "golds"} for q in CHOSEN]), encoding="utf-8")
    monkeypatch.setattr(multihop_gold, "get_chat_model", GoldCopier)
    runs = tmp_path / "runs" / "gold.jsonl"
    argv = ["--questions", str(questions), "--runs-file", str(runs)]
    multihop_gold.main(argv)
    rows = [json.loads(line) for line in runs.read_text(encoding="utf-8").splitlines()]
    assert sorted((r["id"], r["context"]) for r in rows) == sorted(
        (q["id"], c) for q in CHOSEN for c in multihop_gold.CONTEXTS)
    holds = {}
    for q in CHOSEN:  # which hop's passage holds the gold, read from the real chunks
        passages = [multihop_gold.hop_passages(hop) for hop in q["hops"]]
        holds[q["id"]] = [any(occurs_in(q["answer"], d.page_content) for d in p) for p in passages]
        assert all(p for p in passages)
    for row in rows:
        hop_holds = holds[row["id"]]
        expected = {"hop 1 alone": hop_holds[0], "hop 2 alone": hop_holds[1], "both": any(hop_holds)}[row["context"]]
        assert multihop_gold.right(row) == expected and row["model"] == "GoldCopier"
    results = bench_output("multihop_gold")
    rates = {(r["questions"], r["context"]): r for r in results["rates"]}
    assert rates["all", "both"]["n"] == 3 and rates["all", "both"]["right"] == sum(any(h) for h in holds.values())
    for r in results["rates"]:
        if r["n"]:
            low, high = r["ci"]
            assert low <= r["rate"] <= high
    single = sorted(i for i, h in holds.items() if h[0] or h[1])
    assert results["answered from one passage"] == single and single  # each span answer is quoted in its second hop
    multihop_gold.main(argv)  # resumed: nothing written twice
    assert len(runs.read_text(encoding="utf-8").splitlines()) == len(rows)
    rewritten = [q | {"question": q["question"] + " (rewritten)"} if q["id"] == "mh-01" else q for q in CHOSEN]
    questions.write_text(json.dumps([{k: v for k, v in q.items() if k != "golds"} for q in rewritten]),
                         encoding="utf-8")
    multihop_gold.main(argv)  # a rewritten question is answered again; its old rows no longer count
    assert len(runs.read_text(encoding="utf-8").splitlines()) == len(rows) + len(multihop_gold.CONTEXTS)
    assert bench_output("multihop_gold")["rates"][0]["n"] == len(CHOSEN)
