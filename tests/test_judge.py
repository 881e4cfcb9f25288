"""Recursive RAG with an LLM judge (rag_lib.graphs.judge), with no model and no database.

The chat model is a TEST DOUBLE: `ScriptedModel` returns scripted Judgment objects from
`with_structured_output` (looked up by question and passage, so the order of the parallel judge calls does
not matter) and answers "ANSWER(<question>)" to every generation call. It records every call, so the tests
can check the LLM-call budget against the calls really made. The retriever is a fake too: a fixed table
question -> Documents.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import Runtime
from pydantic import PrivateAttr

from rag_lib.experiments.judge_tree import Tree, rebuild_tree, tree_rows
from rag_lib.graphs.checkpoints import sqlite_checkpointer
from rag_lib.graphs.judge import (
    JudgeContext,
    JudgeTask,
    Judgment,
    answer_documents,
    build_judge_graph,
    checked,
    grounded,
    judge,
    plan,
)
from rag_lib.prompts import EXTRACT_PROMPT

ROOT = Path(__file__).resolve().parent.parent


class ScriptedModel(BaseChatModel):
    """TEST DOUBLE for the chat model: scripted judgments per (question, passage), canned answers."""

    script: dict[tuple[str, str], Judgment]
    span: str = ""  # the reply to an extractive answer's copy request
    _calls: list[tuple[str, str]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted-test-double"

    @property
    def calls(self) -> list[tuple[str, str]]:
        return list(self._calls)

    def _record(self, kind: str, question: str) -> None:
        with self._lock:  # judge tasks run in parallel threads
            self._calls.append((kind, question))

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        question = str(messages[-1].content)  # the answer prompt's user turn is the question alone
        if str(messages[0].content).startswith(EXTRACT_PROMPT):
            self._record("copy", question)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(self.span))])
        self._record("answer", question)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(f"ANSWER({question})"))])

    def with_structured_output(self, schema: Any, **kwargs: Any) -> RunnableLambda:
        assert schema is Judgment

        def judge(messages: list[BaseMessage]) -> Judgment:
            question, rest = str(messages[-1].content).removeprefix("Question: ").split("\nPassage:\n<passage ", 1)
            passage = rest.split(">\n", 1)[1].removesuffix("\n</passage>")
            self._record("judge", question)
            return self.script.get((question, passage), Judgment(score=0))

        return RunnableLambda(judge)


class TableRetriever(BaseRetriever):
    """Fake retriever: a fixed table question -> Documents (unknown questions find nothing)."""

    table: dict[str, list[Document]]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.table.get(query, []))


def doc(text: str, similarity: float = 0.9) -> Document:
    return Document(text, metadata={"source": f"data/docs/{text.split()[0].lower()}.md", "similarity": similarity})


Q = "Who described the index whose default M in Milvus is 30?"
M30 = doc("HNSW in Milvus: M defaults to 30.")
TITLE = doc("HNSW overview title.")
AUTHORS = doc("HNSW was described by Malkov and Yashunin.")
FU = "Who described HNSW?"


def run(table, script, thread="root", checkpointer=None, span="", **kwargs):
    model = ScriptedModel(script=script, span=span)
    graph = build_judge_graph(checkpointer)
    context = JudgeContext(retriever=TableRetriever(table=table), llm=model, **kwargs)
    final = graph.invoke({"question": next(iter(table))}, {"configurable": {"thread_id": thread}}, context=context)
    return graph, model, final


def test_a_chunk_scoring_2_is_answered_without_recursion():
    script = {
        (Q, M30.page_content): Judgment(score=1, follow_up=FU),
        (Q, AUTHORS.page_content): Judgment(score=2, answer="Malkov and Yashunin"),
    }
    _, model, final = run({Q: [M30, AUTHORS]}, script)
    assert [k for k, _ in model.calls] == ["judge", "judge", "answer"]  # no follow-up ran
    assert final["llm_calls"] == 3
    assert final["answer"] == f"ANSWER({Q})"
    assert final["sub_answers"] == []
    assert final["plan"] == [{"index": 0, "explore": False, "why": "a chunk scores 2: no follow-up needed"}]
    assert sorted((r["index"], r["score"]) for r in final["judgments"]) == [(0, 1), (1, 2)]


def test_extractive_mode_answers_with_a_checked_copy_of_the_judges_answer_and_no_answer_call():
    script = {
        (Q, M30.page_content): Judgment(score=1, follow_up=FU),
        (Q, AUTHORS.page_content): Judgment(score=2, answer="Malkov and Yashunin"),
    }
    _, model, final = run({Q: [M30, AUTHORS]}, script, mode="extractive")
    assert [k for k, _ in model.calls] == ["judge", "judge"]
    assert (final["answer"], final["llm_calls"]) == ("Malkov and Yashunin [2]", 2)  # cites the second kept chunk
    _, _, final = run({Q: [M30, AUTHORS]}, script, mode="clause")  # the same copy, widened to its clause
    assert final["answer"] == "HNSW was described by Malkov and Yashunin [2]"


def test_extractive_mode_without_a_usable_copy_asks_for_one_and_falls_back_within_the_budget():
    script = {(Q, M30.page_content): Judgment(score=1)}  # no 2, no follow-up: extract from the chunk
    _, model, final = run({Q: [M30]}, script, span="30", mode="extractive")
    assert [k for k, _ in model.calls] == ["judge", "copy"] and final["answer"] == "30 [1]"
    _, model, final = run({Q: [M30]}, script, span="thirty", mode="extractive")  # not a copy: a sentence
    assert [k for k, _ in model.calls] == ["judge", "copy", "answer"] and final["llm_calls"] == 3
    _, model, final = run({Q: [M30]}, script, span="thirty", mode="extractive", max_llm_calls=2)
    assert [k for k, _ in model.calls] == ["judge", "copy"] and final["llm_calls"] == 2  # no call left for it
    assert final["answer"] == "The documents do not contain this information."


def test_chunks_scored_1_run_the_same_graph_on_their_follow_ups(tmp_path):
    fu2 = "What is the default M in hnswlib?"
    hnswlib = doc("hnswlib uses M=16 by default.")
    table = {Q: [M30, TITLE], FU: [AUTHORS], fu2: [hnswlib]}
    script = {
        (Q, M30.page_content): Judgment(score=1, follow_up=FU),
        (Q, TITLE.page_content): Judgment(score=1, follow_up=fu2),
        (FU, AUTHORS.page_content): Judgment(score=2, answer="Malkov and Yashunin"),
        (fu2, hnswlib.page_content): Judgment(score=2, answer="16"),
    }
    saver = sqlite_checkpointer(tmp_path / "judge.sqlite")
    graph, model, final = run(table, script, checkpointer=saver, max_llm_calls=12)

    expected = [("judge", Q), ("judge", Q), ("judge", FU), ("answer", FU), ("judge", fu2), ("answer", fu2),
                ("answer", Q)]
    assert sorted(model.calls) == sorted(expected)
    assert final["llm_calls"] == len(model.calls) == 7
    subs = {s["thread_id"]: s for s in final["sub_answers"]}
    first = subs["root/0"]
    assert (first["question"], first["answer"], first["answered"]) == (FU, f"ANSWER({FU})", True)
    assert subs["root/1"]["question"] == fu2
    # each follow-up ran on its own thread, derived from the parent's
    child = graph.get_state({"configurable": {"thread_id": "root/0"}}).values
    assert child["question"] == FU and child["depth"] == 1 and child["llm_calls"] == 2
    assert graph.get_state({"configurable": {"thread_id": "root/1"}}).values["answer"] == f"ANSWER({fu2})"


def test_sub_answer_is_folded_into_its_chunk():
    table = {Q: [M30], FU: [AUTHORS]}
    script = {
        (Q, M30.page_content): Judgment(score=1, follow_up=FU),
        (FU, AUTHORS.page_content): Judgment(score=2, answer="Malkov"),
    }
    seen = []

    class Spy(ScriptedModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            seen.append((str(messages[-1].content), str(messages[0].content)))  # (question, rules + passages)
            return super()._generate(messages, stop, run_manager, **kwargs)

    graph = build_judge_graph()
    graph.invoke({"question": Q}, {"configurable": {"thread_id": "t"}},
                 context=JudgeContext(retriever=TableRetriever(table=table), llm=Spy(script=script)))
    root_prompt = next(passages for question, passages in seen if question == Q)
    assert f"{M30.page_content}\n(Follow-up: {FU} -> ANSWER({FU}))" in root_prompt


def chain(levels: int, chunks_per_level: int = 1):
    """Every question's chunks score 1 and ask a deeper follow-up: recursion only stops at a limit."""
    table, script = {}, {}
    questions = ["q0?"]
    for level in range(levels):
        next_questions = []
        for question in questions:
            documents = [doc(f"{question} passage {i}") for i in range(chunks_per_level)]
            table[question] = documents
            for i, document in enumerate(documents):
                follow_up = f"{question[:-1]}.{i}?"
                script[(question, document.page_content)] = Judgment(score=1, follow_up=follow_up)
                next_questions.append(follow_up)
        questions = next_questions
    return table, script


def test_depth_limit_stops_recursion(tmp_path):
    table, script = chain(levels=5)
    saver = sqlite_checkpointer(tmp_path / "judge.sqlite")
    _, model, final = run(table, script, checkpointer=saver, max_depth=1, max_llm_calls=50)
    assert {q for _, q in model.calls} == {"q0?", "q0.0?"}  # root and one level of follow-ups, nothing deeper
    tree = rebuild_tree(saver, "root")
    child = tree.chunks[0].child
    assert child.depth == 1 and child.question == "q0.0?"
    assert child.chunks[0].child is None and "depth limit 1 reached" in child.chunks[0].note
    assert saver.get_tuple({"configurable": {"thread_id": "root/0/0"}}) is None


@pytest.mark.parametrize("budget", range(1, 16))
def test_llm_call_budget_holds_across_the_recursion(budget):
    table, script = chain(levels=6, chunks_per_level=2)
    _, model, final = run(table, script, max_depth=6, max_llm_calls=budget)
    assert len(model.calls) <= budget
    assert final["llm_calls"] == len(model.calls)  # children counted up to the root
    assert final["answer"] == "ANSWER(q0?)"  # the root always keeps one call for its answer


def test_budget_is_what_limits_a_deep_tree():
    table, script = chain(levels=6, chunks_per_level=2)
    _, model, final = run(table, script, max_depth=6, max_llm_calls=15)
    assert len(model.calls) == 15  # 2 judges + 1 answer at the root, the 12 spare calls split among 2 children
    assert sorted(s["thread_id"] for s in final["sub_answers"]) == ["root/0", "root/1"]
    assert sorted(s["llm_calls"] for s in final["sub_answers"]) == [6, 6]


def test_chunks_below_the_similarity_cutoff_score_0_without_a_call():
    far = doc("Boiling eggs takes minutes.", similarity=0.80)
    script = {(Q, far.page_content): Judgment(score=2, answer="minutes")}  # a lenient judge would say 2
    _, model, final = run({Q: [far]}, script, min_similarity=0.86)
    assert model.calls == []
    assert final["judgments"][0]["score"] == 0 and "0.800 < 0.86" in final["judgments"][0]["note"]
    assert final["answer"] == "The documents do not contain this information."


def test_a_follow_ups_best_chunk_is_judged_even_below_the_cutoff():
    near, far = doc("HNSW was described by Malkov and Yashunin.", 0.84), doc("Boiling eggs takes minutes.", 0.70)
    script = {
        (Q, M30.page_content): Judgment(score=1, follow_up=FU),
        (FU, near.page_content): Judgment(score=2, answer="Malkov and Yashunin"),
    }
    _, model, final = run({Q: [M30], FU: [far, near]}, script, min_similarity=0.86)
    assert ("judge", FU) in model.calls and model.calls.count(("judge", FU)) == 1  # near only, not far
    child = final["sub_answers"][0]
    assert child["answered"] and [p["text"] for p in child["passages"]] == [near.page_content]
    _, model, final = run({Q: [far, near]}, {}, min_similarity=0.86)  # the user's question: no waiver
    assert model.calls == [] and final["answer"] == "The documents do not contain this information."


def test_the_answer_reads_the_passages_its_follow_ups_answered_from():
    table = {Q: [M30], FU: [AUTHORS]}
    script = {(Q, M30.page_content): Judgment(score=1, follow_up=FU), (FU, AUTHORS.page_content): Judgment(score=1)}
    _, model, final = run(table, script, span="Malkov and Yashunin", mode="extractive")
    assert final["answer"] == "Malkov and Yashunin [2]"  # copied from the follow-up's passage, the second one read
    assert [d.page_content for d in answer_documents(final, folded=False)] == [M30.page_content, AUTHORS.page_content]
    folded = [d.page_content for d in answer_documents(final)]
    assert folded[0].startswith(f"{M30.page_content}\n(Follow-up: {FU} -> ") and folded[1] == AUTHORS.page_content


def test_an_ungrounded_2_is_lowered_to_1_and_explored():
    script = {
        (Q, TITLE.page_content): Judgment(score=2, answer="Malkov", follow_up=FU),  # "Malkov" is not in the chunk
        (FU, AUTHORS.page_content): Judgment(score=2, answer="Malkov and Yashunin"),
    }
    _, model, final = run({Q: [TITLE], FU: [AUTHORS]}, script)
    record = final["judgments"][0]
    assert (record["llm_score"], record["score"]) == (2, 1) and "no fact from the chunk" in record["note"]
    assert [s["question"] for s in final["sub_answers"]] == [FU]


def test_grounding_check():
    assert grounded("Malkov and Yashunin", AUTHORS.page_content, Q)
    assert not grounded("60", "## Reciprocal Rank Fusion (RRF)", "What value is used for k in RRF?")  # invented
    # the question said back is no answer
    assert not grounded("RRF", "## Reciprocal Rank Fusion (RRF)", "What value is used for k in RRF?")
    assert not grounded("", AUTHORS.page_content, Q)
    crag = "In the paper the evaluator is a fine-tuned T5-large model (about 0.77B parameters)."
    crag_q = "How many parameters does the model that CRAG fine-tuned as its retrieval evaluator have?"
    assert grounded("The model has approximately 0.77B parameters.", crag, crag_q)  # a paraphrase around the fact
    assert not grounded("3", crag, crag_q)
    assert grounded("2023 年 6 月 13 日", "OpenAI 于 2023 年 6 月 13 日推出了函数调用。",
                    "OpenAI 是在哪一天推出函数调用功能的？")
    assert checked(Judgment(score=2, answer="Malkov"), AUTHORS.page_content, Q) == (2, "", "")


def test_only_a_new_question_is_kept_as_follow_up():
    assert checked(Judgment(score=1, follow_up=FU), M30.page_content, Q) == (1, FU, "")
    # a 2 needs no follow-up
    assert checked(Judgment(score=2, answer="Malkov", follow_up=FU), AUTHORS.page_content, Q) == (2, "", "")
    score, follow_up, note = checked(Judgment(score=1, follow_up="Feel free to ask more."), M30.page_content, Q)
    assert (score, follow_up) == (1, "") and "not a new question" in note
    assert checked(Judgment(score=1, follow_up=Q.lower()), M30.page_content, Q)[1] == ""  # repeats the question


def test_a_thread_asked_again_starts_clean():
    table = {Q: [AUTHORS], "Other question?": [M30]}
    script = {
        (Q, AUTHORS.page_content): Judgment(score=2, answer="Malkov"),
        ("Other question?", M30.page_content): Judgment(score=2, answer="30"),
    }
    from langgraph.checkpoint.memory import InMemorySaver

    graph = build_judge_graph(InMemorySaver())
    context = JudgeContext(retriever=TableRetriever(table=table), llm=ScriptedModel(script=script))
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"question": Q}, config, context=context)
    second = graph.invoke({"question": "Other question?"}, config, context=context)
    assert [r["text"] for r in second["judgments"]] == [M30.page_content] and second["llm_calls"] == 2


def test_tree_rebuilt_in_a_fresh_process_matches(tmp_path):
    table, script = chain(levels=3, chunks_per_level=2)
    db = tmp_path / "judge.sqlite"
    saver = sqlite_checkpointer(db)
    _, model, final = run(table, script, checkpointer=saver, max_depth=2, max_llm_calls=40)
    here = rebuild_tree(saver, "root")

    # what the tree must hold, from the scripted run
    assert here.question == "q0?" and here.llm_calls == final["llm_calls"] == len(model.calls)
    assert [c.child.thread_id for c in here.chunks] == ["root/0", "root/1"]
    assert [c.follow_up for c in here.chunks] == ["q0.0?", "q0.1?"]
    grandchildren = [g.child for c in here.chunks for g in c.child.chunks]
    assert [g.thread_id for g in grandchildren] == ["root/0/0", "root/0/1", "root/1/0", "root/1/1"]
    assert all(g.depth == 2 and g.chunks[0].child is None for g in grandchildren)
    assert here.chunks[1].sub_answer == "ANSWER(q0.1?)" and here.checkpoints > 3
    assert len(tree_rows(here)) == 2 + 4 + 8

    script_text = (
        "import json, sys; from dataclasses import asdict; from rag_lib.experiments.judge_tree import rebuild_tree; "
        "print(json.dumps(asdict(rebuild_tree(sys.argv[1], 'root'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script_text, str(db)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    there = Tree.from_dict(json.loads(done.stdout))
    assert there == here and asdict(there) == asdict(here)


def threads(tree: Tree) -> list[Tree]:
    """Every run of the tree, depth first."""
    return [tree] + [run for c in tree.chunks if c.child for run in threads(c.child)]


def test_tree_is_what_get_state_and_get_state_history_of_the_judge_graph_say(tmp_path, caplog):
    table, script = chain(levels=3, chunks_per_level=2)
    saver = sqlite_checkpointer(tmp_path / "judge.sqlite")
    graph, model, _ = run(table, script, checkpointer=saver, max_depth=2, max_llm_calls=40)
    context = JudgeContext(retriever=TableRetriever(table=table), llm=model, max_depth=2, max_llm_calls=40)
    graph.invoke({"question": "q0.1?"}, {"configurable": {"thread_id": "root/1"}}, context=context)  # asked again
    tree = rebuild_tree(tmp_path / "judge.sqlite", "root")
    runs = threads(tree)
    assert len(runs) == 7
    for thread in runs:
        config = {"configurable": {"thread_id": thread.thread_id}}
        state = graph.get_state(config).values
        assert (thread.question, thread.answer, thread.llm_calls) == (state["question"], state["answer"],
                                                                       state["llm_calls"])
        assert [c.index for c in thread.chunks] == sorted(r["index"] for r in state["judgments"])
        assert thread.checkpoints == len(list(graph.get_state_history(config)))
    first, second = runs[1], runs[4]  # depth first: root/0 and its two children come before root/1
    assert (first.thread_id, second.thread_id) == ("root/0", "root/1")
    assert second.checkpoints > first.checkpoints  # the history holds both runs of root/1, the tree the latest
    assert not [r for r in caplog.records if r.levelname == "WARNING"]  # the reader knows every node it meets


def test_a_graph_built_with_only_a_checkpointer_reads_the_tree(tmp_path):
    """Reading needs no retriever and no model: a second graph built on the same saver sees every thread."""
    table, script = chain(levels=2, chunks_per_level=2)
    saver = sqlite_checkpointer(tmp_path / "judge.sqlite")
    graph, _, _ = run(table, script, checkpointer=saver, max_depth=1, max_llm_calls=40)
    reader = build_judge_graph(saver)
    for thread in ("root", "root/0", "root/1"):
        config = {"configurable": {"thread_id": thread}}
        assert reader.get_state(config).values == graph.get_state(config).values
        assert len(list(reader.get_state_history(config))) == len(list(graph.get_state_history(config)))
    assert reader.get_graph().draw_mermaid() == graph.get_graph().draw_mermaid()
    tree = rebuild_tree(saver, "root")
    assert [c.child.thread_id for c in tree.chunks] == ["root/0", "root/1"]
    assert tree.answer == reader.get_state({"configurable": {"thread_id": "root"}}).values["answer"]


def test_the_graph_needs_its_context_to_run_and_checks_its_limits(tmp_path):
    saver = sqlite_checkpointer(tmp_path / "judge.sqlite")
    with pytest.raises(ValueError, match="without its context: pass context=JudgeContext"):
        build_judge_graph(saver).invoke({"question": Q}, {"configurable": {"thread_id": "t"}})
    with pytest.raises(KeyError, match="'nobody' has no checkpoint"):
        rebuild_tree(saver, "nobody")
    with pytest.raises(ValueError, match="need max_llm_calls >= 1 and max_depth >= 0"):
        JudgeContext(retriever=TableRetriever(table={}), llm=ScriptedModel(script={}), max_llm_calls=0)


def test_nodes_run_alone_on_a_state_and_a_context():
    """`judge` and `plan` are plain functions: a task or a state, a Runtime holding a JudgeContext, no graph."""
    model = ScriptedModel(script={(Q, AUTHORS.page_content): Judgment(score=2, answer="Malkov and Yashunin")})
    runtime = Runtime(context=JudgeContext(retriever=TableRetriever(table={}), llm=model, max_depth=1,
                                           min_similarity=0.86))
    update = judge(JudgeTask(question=Q, index=3, document=AUTHORS, may_call=True), runtime)
    (record,) = update["judgments"]
    assert (record["index"], record["score"], record["answer"], update["llm_calls"]) == (3, 2, "Malkov and Yashunin", 1)
    far = judge(JudgeTask(question=Q, index=0, document=doc("Boiling eggs.", similarity=0.5), may_call=True), runtime)
    assert far["judgments"][0]["score"] == 0 and "llm_calls" not in far and model.calls == [("judge", Q)]

    ones = [{"index": i, "score": 1, "follow_up": f"q{i}?"} for i in range(3)]
    state = {"question": Q, "depth": 0, "budget": 7, "llm_calls": 2, "judgments": ones}
    entries = plan(state, runtime, {"configurable": {"thread_id": "t"}})["plan"]  # 4 spare calls: 2 follow-ups
    assert [(e["explore"], e.get("thread_id"), e.get("budget")) for e in entries] == [
        (True, "t/0", 2), (True, "t/1", 2), (False, None, None)]
    deep = plan({**state, "depth": 1}, runtime, {"configurable": {"thread_id": "t/0"}})["plan"]
    assert all(not e["explore"] and e["why"] == "depth limit 1 reached" for e in deep)


def test_rebuild_tree_names_a_missing_database(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint database"):
        rebuild_tree(tmp_path / "missing.sqlite", "root")


def test_an_over_long_follow_up_is_cut_not_thrown_away_with_the_score():
    """JSON mode on a server does not enforce the schema's max_length (llama.cpp's grammar does)."""
    from rag_lib.graphs.judge import Judgment

    judgment = Judgment.model_validate({"score": 2, "answer": "60 " * 40, "follow_up": "What is k? " * 20})
    assert judgment.score == 2
    assert judgment.answer == ("60 " * 40)[:60] and judgment.follow_up == ("What is k? " * 20)[:100]
