"""Extractive answers (rag_lib.graphs.rag, mode="extractive"): a copied span is kept only when a passage holds it.

The chat models in the first tests are TEST DOUBLES (langchain_core's GenericFakeChatModel with scripted replies,
recording their prompts); the last test uses the real local model on a CMRC 2018 paragraph.
"""

from __future__ import annotations

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.retrievers import BaseRetriever

from rag_lib.experiments.evaluation import cited_passage, clause_scores
from rag_lib.graphs.rag import RAGContext, build_rag_graph, cited_span, cleaned_span, extract, salvaged_span

DOCS = [
    Document("Milvus listens on port 19530 by default.", metadata={"source": "milvus.md"}),
    Document("Reciprocal Rank Fusion usually sets k to 60.", metadata={"source": "rrf.md"}),
]


class FixedRetriever(BaseRetriever):
    """Fake retriever: the same Documents for every query."""

    documents: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.documents)


class RecordingModel(GenericFakeChatModel):
    """Fake chat model: scripted replies; records each prompt and the max_tokens it was bound with."""

    calls: list[tuple[list, object]] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls.append((list(messages), kwargs.get("max_tokens")))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def model(*replies: str) -> RecordingModel:
    return RecordingModel(messages=iter([AIMessage(r) for r in replies]), calls=[])


def test_a_span_found_in_a_passage_is_the_answer_with_its_citation():
    llm = model("k = sixty", "RRF usually sets k to 60 [2].")  # no part of "k = sixty" is a copy from a passage
    assert extract("What k does RRF use?", DOCS, model("60")) == ("60 [2]", True)
    answer, extracted = extract("What k does RRF use?", DOCS, llm)
    assert (answer, extracted) == ("RRF usually sets k to 60 [2].", False)  # the copy failed: a short sentence
    assert len(llm.calls) == 2
    assert llm.calls[0][1] == 48 and llm.calls[1][1] == 96


def test_the_graph_in_extractive_mode_streams_no_unchecked_copy():
    graph = build_rag_graph()
    context = RAGContext(retriever=FixedRetriever(documents=DOCS), llm=model("19530"), mode="extractive")
    events = list(graph.stream({"question": "Which port does Milvus use?"}, context=context,
                               stream_mode=["messages", "values"]))
    final = [payload for mode, payload in events if mode == "values"][-1]
    assert final["answer"] == "19530 [1]" and final["extracted"] is True
    assert not [payload for mode, payload in events if mode == "messages"]  # the copy is checked before it is shown


def test_clause_mode_answers_the_copy_widened_to_its_clause_as_the_benchmark_scores_it():
    docs = [Document("北京是首都。动画在2007年1月4日于千叶电视台开始播放，共12集。", metadata={"source": "a.md"})]
    question, gold = "动画何时开播？", ["动画在2007年1月4日于千叶电视台开始播放"]
    answers = {}
    for mode in ("extractive", "clause"):
        context = RAGContext(retriever=FixedRetriever(documents=docs), llm=model("2007年1月4日"), mode=mode)
        answers[mode] = build_rag_graph().invoke({"question": question}, context=context)["answer"]
    assert answers == {"extractive": "2007年1月4日 [1]", "clause": "动画在2007年1月4日于千叶电视台开始播放 [1]"}
    passage = cited_passage(answers["extractive"], [d.page_content for d in docs])  # bench: no second run needed
    assert clause_scores(answers["extractive"], gold, passage) == {"em_clause": 1.0, "f1_clause": 1.0}
    with pytest.raises(ValueError, match="'clause'"):
        RAGContext(retriever=FixedRetriever(documents=docs), llm=model("x"), mode="span")


@pytest.mark.parametrize(
    ("reply", "span"),
    [("“19530”。\nBecause ...", "19530"), ("60 [2]", "60"), ("  ", ""), ("'BM25'.", "BM25")],
)
def test_a_reply_is_cleaned_to_what_a_copied_span_looks_like(reply: str, span: str):
    assert cleaned_span(reply) == span


def test_a_sentence_around_the_span_is_salvaged_without_a_second_call():
    llm = model("Milvus listens on 19530")  # a sentence, not a copy: its copied part is the answer
    assert extract("Which port does Milvus listen on?", DOCS, llm) == ("19530 [1]", True) and len(llm.calls) == 1
    death = [Document("2003年11月11日于其自宅坠楼身亡，警方依其遗留之字条推定为自杀。")]
    assert salvaged_span("蔡敏的死因是自杀", "蔡敏的死因是什么？", death) == "自杀"


@pytest.mark.parametrize(
    "reply", ["I do not know", "Milvus listens", "The port is 1953", "RRF", "文档中没有提到 60", "It is not 19530"],
)
def test_nothing_is_salvaged_from_question_words_cut_words_or_glued_numbers(reply: str):
    # "o n" of "do not" occurs in "on port", "1953" is glued to "19530": neither is a copy; a reply saying the
    # answer is missing salvages nothing, whatever it quotes
    assert salvaged_span(reply, "Which port does Milvus listen on? What is RRF?", DOCS) == ""


def test_a_span_glued_to_a_longer_number_is_not_a_copy():
    assert cited_span("1953", DOCS) is None and cited_span("", DOCS) is None


def test_an_unknown_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="mode='summary'"):
        RAGContext(retriever=FixedRetriever(documents=DOCS), llm=model(), mode="summary")


def test_real_model_copies_a_span_from_a_cmrc_paragraph(offline_env):
    """The local model on one CMRC 2018 trial paragraph given as the only passage."""
    from rag_lib.experiments.cmrc import load_cmrc
    from rag_lib.llm import get_chat_model

    data = load_cmrc().head(1)
    item = data.questions[1]  # "若游戏中离，则多少分钟内不得进行配对？" (gold: 4分钟)
    context = data.contexts[item.context_id]
    answer, extracted = extract(item.text, [Document(context, metadata={"source": "cmrc"})], get_chat_model())
    assert extracted, answer
    assert answer.endswith(" [1]") and answer[: -len(" [1]")] in context
