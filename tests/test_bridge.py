"""The bridge pipeline (rag_lib.experiments.bridge): its copy check, its nodes and the graph they make.

The chat model is a FAKE (`BridgeCopier`, a test double): it replies to the bridge request with a scripted name, to
the yes/no request with a scripted verdict and to the answer request with a scripted span. The retriever is a FAKE
too: a fixed table query -> chunks, recording every query. No model, no index.
"""

from __future__ import annotations

import pytest
from doubles import ToolCallingDouble, tool_call
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.runtime import Runtime

from rag_lib.experiments.bridge import (
    BridgeContext,
    BridgeEntity,
    Verdict,
    build_bridge_graph,
    find_bridge,
    is_yes_no,
    retrieve,
    search_bridge,
    verified_bridge,
)

Q = "RAG-Fusion merges its result lists with a fusion method. In which year was that method introduced?"
BRIDGE = "Reciprocal Rank Fusion"


def chunk(name: str, text: str, score: float, similarity: float = 0.9) -> Document:
    return Document(text, id=name, metadata={"source": f"docs/{name}.md", "score": score, "similarity": similarity})


FUSION = chunk("fusion", f"RAG-Fusion merges the per-query result lists with {BRIDGE} instead of a plain union.", 0.03)
OTHER = chunk("other", "HyDE embeds a hypothetical answer instead of the question.", 0.02, similarity=0.8)
RRF = chunk("rrf", f"{BRIDGE} was introduced by Cormack, Clarke and Buttcher in 2009.", 0.032, similarity=0.8)
CUTOFF = 0.86


class TableRetriever(BaseRetriever):
    """FAKE retriever: a fixed table query -> chunks (an unknown query finds nothing); records every query."""

    table: dict[str, list[Document]]
    queries: list[str] = []

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        self.queries.append(query)
        return list(self.table.get(query, []))


class BridgeCopier(ToolCallingDouble):
    """FAKE chat model: the scripted `name` for the bridge request (or `raw` text that breaks the schema), the
    scripted `span` for the answer request."""

    name: str = ""
    raw: str = ""
    span: str = ""
    verdict: str = "no"

    def reply(self, messages: list[BaseMessage], tool: str | None) -> AIMessage:
        if tool == Verdict.__name__:
            return tool_call(tool, {"verdict": self.verdict})
        if tool:
            assert tool == BridgeEntity.__name__
            return tool_call(tool, self.raw or {"entity": self.name})
        return AIMessage(self.span)


def table(*bridged: Document) -> TableRetriever:
    return TableRetriever(table={Q: [FUSION, OTHER], BRIDGE: list(bridged)}, queries=[])


def test_a_bridge_counts_only_when_a_passage_holds_it_and_it_is_new_to_the_question():
    assert verified_bridge(f'"{BRIDGE}"', Q, [FUSION]) == (BRIDGE, "")  # quotes stripped
    assert verified_bridge("Reciprocal Rank Fusion (RRF)", Q, [FUSION]) == ("Reciprocal Rank", "")  # its longest
    # piece a passage holds with no word of the question ("fusion")
    bridge, note = verified_bridge("Borda count", Q, [FUSION])
    assert bridge == "" and "no passage holds it" in note
    bridge, note = verified_bridge("RAG-Fusion", Q, [FUSION])
    assert bridge == "" and "no word the question lacks" in note
    assert verified_bridge("", Q, [FUSION]) == ("", "no bridge copied")


def test_find_bridge_makes_one_call_and_keeps_a_verified_copy():
    runtime = Runtime(context=BridgeContext(retriever=table(), llm=BridgeCopier(name=BRIDGE)))
    assert find_bridge({"question": Q, "documents": [FUSION, OTHER]}, runtime) == {
        "bridge": BRIDGE, "bridge_source": [FUSION], "bridge_note": "", "llm_calls": 1}  # the chunk it came from
    invented = Runtime(context=BridgeContext(retriever=table(), llm=BridgeCopier(name="Borda count")))
    update = find_bridge({"question": Q, "documents": [FUSION, OTHER]}, invented)
    assert update["bridge"] == "" and "no passage holds it" in update["bridge_note"] and update["llm_calls"] == 1
    assert update["bridge_source"] == []
    broken = Runtime(context=BridgeContext(retriever=table(), llm=BridgeCopier(raw='{"entity": ')))
    update = find_bridge({"question": Q, "documents": [FUSION]}, broken)
    assert update["bridge"] == "" and update["bridge_note"].startswith("no bridge: the reply was unusable")


def test_retrieve_keeps_the_question_chunks_at_or_above_the_cutoff():
    runtime = Runtime(context=BridgeContext(retriever=table(), llm=BridgeCopier(), min_similarity=CUTOFF))
    assert retrieve({"question": Q}, runtime)["documents"] == [FUSION]
    no_cutoff = Runtime(context=BridgeContext(retriever=table(), llm=BridgeCopier()))
    assert retrieve({"question": Q}, no_cutoff)["documents"] == [FUSION, OTHER]


def test_search_bridge_unites_the_bridge_search_with_the_question_search_not_run_again():
    retriever = table(RRF, FUSION)
    update = search_bridge({"question": Q, "documents": [FUSION, OTHER], "bridge": BRIDGE},
                           Runtime(context=BridgeContext(retriever=retriever, llm=BridgeCopier())))
    assert retriever.queries == [BRIDGE]
    assert [d.id for d in update["documents"]] == ["rrf", "fusion", "other"]  # each chunk once, best score first


def test_the_graph_answers_from_the_bridge_search_whose_chunks_keep_below_the_cutoff():
    retriever = table(RRF)
    final = build_bridge_graph().invoke({"question": Q}, context=BridgeContext(
        retriever=retriever, llm=BridgeCopier(name=BRIDGE, span="2009"), min_similarity=CUTOFF))
    assert retriever.queries == [Q, BRIDGE]
    assert [d.id for d in final["documents"]] == ["rrf", "fusion"]  # the question's "other" fell under the cutoff
    assert final["bridge"] == BRIDGE and final["llm_calls"] == 2
    assert final["answer"] == "2009 [1]" and final["extracted"]  # RRF's chunk scores best: passage 1


def test_without_a_bridge_the_graph_answers_from_the_first_search_and_without_passages_refuses():
    retriever = table(RRF)
    final = build_bridge_graph().invoke({"question": Q}, context=BridgeContext(
        retriever=retriever, llm=BridgeCopier(name="", span="a plain union")))
    assert retriever.queries == [Q] and final["bridge"] == "" and final["bridge_note"] == "no bridge copied"
    assert final["answer"] == "a plain union [1]" and final["llm_calls"] == 2
    empty = TableRetriever(table={}, queries=[])
    final = build_bridge_graph().invoke({"question": Q}, context=BridgeContext(retriever=empty, llm=BridgeCopier()))
    assert final["answer"] == "The documents do not contain this information." and final["llm_calls"] == 0


def test_narrow_reads_the_bridge_search_and_the_chunk_the_bridge_came_from_only():
    retriever = table(RRF)
    update = search_bridge({"question": Q, "documents": [FUSION, OTHER], "bridge": BRIDGE, "bridge_source": [FUSION]},
                           Runtime(context=BridgeContext(retriever=retriever, llm=BridgeCopier(), narrow=True)))
    assert [d.id for d in update["documents"]] == ["rrf", "fusion"]  # "other", the question's, is not read
    retriever = table(RRF, FUSION)
    update = search_bridge({"question": Q, "documents": [FUSION, OTHER], "bridge": BRIDGE, "bridge_source": [FUSION]},
                           Runtime(context=BridgeContext(retriever=retriever, llm=BridgeCopier(), narrow=True)))
    assert [d.id for d in update["documents"]] == ["rrf", "fusion"]  # each chunk once


@pytest.mark.parametrize(("question", "asks_yes_no"), [
    ("Is Qwen2.5-3B released under the same licence as Milvus?", True),
    ("Did OpenAI launch function calling before llama.cpp was started?", True),
    ("由 Zilliz 创建的那个开源向量数据库，与 Gradio 采用的是同一种开源许可证吗？", True),
    ("MT-Bench 覆盖的问题类别数，是否多于 2017 年 Transformer 基础模型的注意力头数？", True),
    (Q, False),
    ("Which licence does the jieba library use?", False),
    ("教程里的图逐块判断检索结果是否相关。这个教程所用的网络搜索 API，免费计划每月提供多少积分？", False),
])
def test_a_yes_no_question_is_told_by_its_opening_verb_or_its_last_sentence(question: str, asks_yes_no: bool):
    assert is_yes_no(question) == asks_yes_no


def test_with_yes_no_a_yes_no_question_gets_the_verdict_and_a_span_question_a_span():
    question = "Was the fusion method of RAG-Fusion introduced before 2010?"
    retriever = TableRetriever(table={question: [FUSION], BRIDGE: [RRF]}, queries=[])
    final = build_bridge_graph().invoke({"question": question}, context=BridgeContext(
        retriever=retriever, llm=BridgeCopier(name=BRIDGE, verdict="yes", span="2009"), yes_no=True))
    assert final["answer"] == "yes" and final["llm_calls"] == 2  # the bridge copy, then the verdict
    without = build_bridge_graph().invoke({"question": question}, context=BridgeContext(
        retriever=retriever, llm=BridgeCopier(name=BRIDGE, verdict="yes", span="2009")))
    assert without["answer"] == "2009 [1]"  # the same question without the option: a copied span
    final = build_bridge_graph().invoke({"question": Q}, context=BridgeContext(
        retriever=table(RRF), llm=BridgeCopier(name=BRIDGE, verdict="yes", span="2009"), yes_no=True))
    assert final["answer"] == "2009 [1]"
