"""Two-step RAG as a LangChain agent (rag_lib.experiments.two_step): retrieval before the model call, passages in the
system prompt, sources in the state, the refusal without a model call; and one real run of the local model over
Milvus Lite.

Tests marked "fake model" use a TEST DOUBLE chat model that records the messages it was sent and replies with a
fixed text; the retriever is real (Milvus Lite, real embeddings) in every test."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from test_agent import DOC, QUESTION, index_two_docs

from rag_lib.embeddings import default_min_similarity
from rag_lib.experiments.two_step import build_two_step_agent
from rag_lib.graphs.rag import REFUSAL
from rag_lib.llm import get_chat_model
from rag_lib.retriever import Retriever

OFF_TOPIC = "How long should I boil an egg to get a soft, runny yolk?"


@pytest.fixture()
def retriever(milvus, embeddings, tmp_path):
    index_two_docs(milvus, embeddings, tmp_path / "docs")
    return Retriever(client=milvus, embeddings=embeddings, k=2, min_similarity=default_min_similarity())


class RecordingModel(GenericFakeChatModel):
    """Test double: replies with the next fixed message and records the messages of every call."""

    calls: list = []

    def _generate(self, messages, *args, **kwargs):
        self.calls.append(messages)
        return super()._generate(messages, *args, **kwargs)


def test_the_passages_are_in_the_system_prompt_and_the_sources_in_the_state_fake_model(retriever):
    llm = RecordingModel(messages=iter([AIMessage("jieba [1]")]), calls=[])
    state = build_two_step_agent(llm, retriever).invoke({"messages": [HumanMessage(QUESTION)]})
    assert state["messages"][-1].content == "jieba [1]"
    assert state["documents"] and state["documents"][0].metadata["source"].endswith(DOC)
    (sent,) = llm.calls  # one model call
    assert isinstance(sent[0], SystemMessage) and '<passage id=1 source="' in sent[0].content
    assert state["documents"][0].page_content[:40] in sent[0].content
    assert sent[-1].content == QUESTION


def test_nothing_above_the_cutoff_is_refused_without_a_model_call_fake_model(retriever):
    llm = RecordingModel(messages=iter([]), calls=[])
    state = build_two_step_agent(llm, retriever).invoke({"messages": [HumanMessage(OFF_TOPIC)]})
    assert state["messages"][-1].content == REFUSAL["en"]
    assert state["documents"] == [] and llm.calls == []


def test_the_local_model_answers_from_the_retrieved_passages(retriever):
    state = build_two_step_agent(get_chat_model(), retriever).invoke({"messages": [HumanMessage(QUESTION)]})
    assert "jieba" in state["messages"][-1].content.lower()
    assert any(d.metadata["source"].endswith(DOC) for d in state["documents"])
