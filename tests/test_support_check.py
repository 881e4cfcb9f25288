"""The support check of generated answers: its numbers and most of its content words must occur in the passages it
cites (rag_lib.matching.supported), and the graphs flag an answer that fails it (note + "unsupported": True).

The chat models here are TEST DOUBLES (langchain_core's GenericFakeChatModel with scripted replies) and the
retriever is a fake that returns fixed Documents; the graphs, the check and jieba are real.
"""

from __future__ import annotations

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.runtime import Runtime

from rag_lib.graphs.chat import ChatContext, build_chat_graph
from rag_lib.graphs.chat import generate as chat_generate
from rag_lib.graphs.crag import CRAGContext, build_crag_graph
from rag_lib.graphs.rag import REFUSAL, UNSUPPORTED_NOTE, RAGContext, build_rag_graph
from rag_lib.matching import supported
from rag_lib.websearch import OfflineWebSearch

MILVUS = Document("Milvus Lite runs inside the Python process and stores its database in a local folder.",
                  metadata={"source": "milvus_lite.md"})
CAFETERIA = Document("The Zephyr cafeteria opens at 7:30 on weekdays and at 9:00 on Sundays.",
                     metadata={"source": "cafeteria.md"})
MILVUS_ZH = Document("Milvus Lite 在 Python 进程内运行，把数据库存放在本地文件夹中，适合原型和测试。",
                     metadata={"source": "milvus_lite_zh.md"})
SUNDAY = "When does the cafeteria open on Sunday?"


class FixedRetriever(BaseRetriever):
    """Fake retriever: the same Documents for every query."""

    documents: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.documents)


def fake_model(*replies: str) -> GenericFakeChatModel:
    """Fake chat model: answers with the scripted replies, in order."""
    return GenericFakeChatModel(messages=iter([AIMessage(r) for r in replies]))


def ask(question: str, reply: str, documents: list[Document], mode: str = "generative") -> dict:
    """One run of the plain RAG graph whose (fake) model replies `reply`."""
    context = RAGContext(retriever=FixedRetriever(documents=documents), llm=fake_model(reply), mode=mode)
    return build_rag_graph().invoke({"question": question}, context=context)


def test_the_reported_case_an_answer_made_up_beside_an_unrelated_passage_is_flagged():
    question = SUNDAY + " " + "Please answer carefully. " * 1000  # 25 kB: the graph cuts it to fit the window
    reply = "The cafeteria opens on Sunday from 7:00 AM to 2:00 PM and serves breakfast [1]."
    state = ask(question, reply, [MILVUS])
    assert state["unsupported"] is True
    assert state["answer"] == f"{reply}\n{UNSUPPORTED_NOTE['en']}"


def test_an_answer_drawn_from_its_passage_passes_unchanged():
    reply = "Milvus Lite runs inside the Python process and keeps its database in a local folder [1]."
    state = ask("Where does Milvus Lite keep its data?", reply, [MILVUS])
    assert state["answer"] == reply and "unsupported" not in state


def test_a_number_that_is_not_in_the_passage_fails_even_when_every_word_is():
    state = ask(SUNDAY, "The cafeteria opens at 8:00 on Sundays [1].", [CAFETERIA])
    assert state["unsupported"] is True and state["answer"].endswith(UNSUPPORTED_NOTE["en"])
    assert "unsupported" not in ask(SUNDAY, "The cafeteria opens at 9:00 on Sundays [1].", [CAFETERIA])


def test_chinese_answers_are_checked_with_jieba_words_and_flagged_in_chinese():
    good = "Milvus Lite 在 Python 进程内运行，数据库存放在本地文件夹。[1]"
    assert ask("Milvus Lite 的数据存在哪里？", good, [MILVUS_ZH])["answer"] == good
    made_up = ask("Milvus Lite 需要什么硬件？", "Milvus Lite 需要三台服务器和一个显卡。[1]", [MILVUS_ZH])
    assert made_up["unsupported"] is True and made_up["answer"].endswith(UNSUPPORTED_NOTE["zh"])
    assert not supported("食堂周日早上7点开门。", [MILVUS_ZH.page_content])


def test_the_refusal_is_not_checked():
    for question, language in ((SUNDAY, "en"), ("食堂周日几点开门？", "zh")):
        state = ask(question, REFUSAL[language], [MILVUS])
        assert state["answer"] == REFUSAL[language] and "unsupported" not in state


def test_citations_choose_the_passages_that_must_hold_the_answer():
    passages = [MILVUS.page_content, CAFETERIA.page_content]
    assert supported("The cafeteria opens at 9:00 on Sundays [2].", passages)
    assert not supported("The cafeteria opens at 9:00 on Sundays [1].", passages)  # cites the Milvus passage
    assert supported("The cafeteria opens at 9:00 on Sundays.", passages)  # no citation: every passage counts
    assert not supported("The cafeteria opens at 9:00 on Sundays [3].", passages)  # no passage 3
    assert supported("The cafeteria opens at 9:00 on Sundays [1, 2].", passages)


def test_numbers_are_matched_whole_and_words_loosely():
    passages = ["Milvus listens on port 19530 by default and Qwen2.5 runs on llama.cpp."]
    assert not supported("Milvus listens on port 1953 [1].", passages)  # "1953" is not found inside "19530"
    assert supported("Milvus listen on port 19530 with Qwen2.5 [1].", passages)  # "listen" / "listens"
    assert supported("Steps:\n1. Run Qwen2.5 on llama.cpp.\n2. Milvus listens on 19530.", passages)  # list marks
    assert supported("其2M3T编组的性能更好。", ["211系2M3T编组的性能甚至可超越2M2T编组。"])  # digits glued to letters
    assert not supported("其2M4T编组的性能更好。", ["211系2M3T编组的性能甚至可超越2M2T编组。"])


def test_an_extractive_fallback_sentence_is_checked_and_a_checked_copy_is_not_flagged():
    copy = ask(SUNDAY, "9:00", [CAFETERIA], mode="extractive")
    assert copy["answer"] == "9:00 [1]" and copy["extracted"] and "unsupported" not in copy
    context = RAGContext(retriever=FixedRetriever(documents=[CAFETERIA]), mode="extractive",
                         llm=fake_model("at noon", "The cafeteria serves free pancakes at noon [1]."))
    fallback = build_rag_graph().invoke({"question": SUNDAY}, context=context)
    assert fallback["extracted"] is False and fallback["unsupported"] is True


def test_the_chat_graph_flags_a_made_up_answer_and_passes_a_supported_one():
    context = ChatContext(retriever=FixedRetriever(documents=[MILVUS]), llm=fake_model("It opens at 7:00 AM [1]."))
    state = build_chat_graph().invoke({"messages": [("user", SUNDAY)]}, context=context)
    assert state["unsupported"] is True and state["messages"][-1].content.endswith(UNSUPPORTED_NOTE["en"])
    reply = "Milvus Lite runs inside the Python process [1]."
    context = ChatContext(retriever=FixedRetriever(documents=[MILVUS]), llm=fake_model(reply))
    state = build_chat_graph().invoke({"messages": [("user", "Where does Milvus Lite run?")]}, context=context)
    assert state["messages"][-1].content == reply and "unsupported" not in state


def test_the_chat_answer_may_use_what_the_user_told_earlier():
    reply = "Milvus Lite runs inside the Python process on your laptop with 64 GB of memory [1]."
    state = {"messages": [HumanMessage("Where does Milvus Lite run?")], "documents": [MILVUS]}
    recalled = [{"fact": "My laptop has 64 GB of memory.", "saved_at": "2025-01-01T00:00:00"}]

    def answer(with_facts: list) -> dict:
        context = ChatContext(retriever=FixedRetriever(documents=[MILVUS]), llm=fake_model(reply))
        return chat_generate(state | {"recalled": with_facts}, Runtime(context=context))

    assert "unsupported" not in answer(recalled) and answer([])["unsupported"] is True


@pytest.mark.parametrize("reply, flagged", [("The cafeteria opens at 9:00 on Sundays [1].", False),
                                            ("The cafeteria opens at 6:00 on Sundays [1].", True)])
def test_crag_checks_its_generated_answer_against_the_knowledge(reply, flagged):
    document = CAFETERIA.model_copy(update={"metadata": {"source": "cafeteria.md", "similarity": 0.95}})
    context = CRAGContext(retriever=FixedRetriever(documents=[document]), llm=fake_model(reply),
                          web_search=OfflineWebSearch([]), thresholds=(0.5, 0.9))
    state = build_crag_graph().invoke({"question": SUNDAY}, context=context)
    assert state["answer"].startswith(reply) and state.get("unsupported", False) is flagged
