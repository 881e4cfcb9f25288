"""The course rerankers as LangChain document compressors (ContextualCompressionRetriever, DocumentCompressorPipeline)
on a real Milvus Lite collection with the real e5 embeddings, the old `rerank` call beside them, and the components
benchmark end to end on a tiny slice (its LLM pairs with a canned TEST DOUBLE chat model), and the fusion
benchmark (TF-IDF, RRF k and weight sweeps) on the same slice."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from doubles import ToolCallingDouble
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_classic.retrievers.document_compressors import DocumentCompressorPipeline, EmbeddingsFilter
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.messages import AIMessage, BaseMessage
from test_retriever import CORPUS  # the same four small documents

from benchmarks import components, fusion
from rag_lib.embeddings import E5_MIN_SIMILARITY
from rag_lib.experiments.evaluation import paired_difference
from rag_lib.experiments.rerank import EmbeddingReranker, HttpReranker, LLMReranker
from rag_lib.index import index_directory
from rag_lib.retriever import Reranker, Retriever

# "how many" is in hnsw.md, so hybrid search ranks it first; e5 alone prefers the (Chinese) chunking document.
QUESTION = "How many characters should each chunk have?"


def names(hits: list[Document]) -> list[str]:
    return [Path(h.metadata["source"]).name for h in hits]


@pytest.fixture()
def indexed(milvus, embeddings, tmp_path: Path):
    """The four files above, one chunk each, in a throw-away Milvus Lite database."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in CORPUS.items():
        (folder / name).write_text(text, encoding="utf-8")
    index_directory(milvus, folder, embeddings, progress=False)
    return milvus


def test_every_course_reranker_is_a_langchain_compressor_and_keeps_rerank():
    for kind in (EmbeddingReranker, LLMReranker, HttpReranker):
        assert issubclass(kind, BaseDocumentCompressor)
    http = HttpReranker("https://x.test/rerank", "m", "sk-secret")
    assert isinstance(http, Reranker) and "sk-secret" not in repr(http)  # the key stays out of logs


def test_contextual_compression_with_the_course_reranker_reorders_like_ranker_model(indexed, embeddings):
    base = Retriever(client=indexed, embeddings=embeddings, k=4)
    assert names(base.invoke(QUESTION))[0] == "hnsw.md"
    compressed = ContextualCompressionRetriever(
        base_compressor=EmbeddingReranker(embeddings, top_n=2), base_retriever=base
    ).invoke(QUESTION)
    assert len(compressed) == 2 and names(compressed)[0] == "chunking_zh.txt"  # reordered: e5 puts it first
    scores = [d.metadata["rerank_score"] for d in compressed]
    assert scores == sorted(scores, reverse=True)
    # the same reranker inside the course Retriever gives the same documents and scores
    two_stage = Retriever(client=indexed, embeddings=embeddings, k=2, candidates=4, ranker="model",
                          reranker=EmbeddingReranker(embeddings)).invoke(QUESTION)
    assert [d.id for d in two_stage] == [d.id for d in compressed]
    assert [d.metadata["rerank_score"] for d in two_stage] == pytest.approx(scores)


def test_pipeline_of_embeddings_filter_then_course_reranker(indexed, embeddings):
    base = Retriever(client=indexed, embeddings=embeddings, k=4)
    pipeline = DocumentCompressorPipeline(transformers=[
        EmbeddingsFilter(embeddings=embeddings, similarity_threshold=E5_MIN_SIMILARITY, k=None),
        EmbeddingReranker(embeddings, top_n=3),
    ])
    kept = ContextualCompressionRetriever(base_compressor=pipeline, base_retriever=base).invoke("jieba 分词器")
    # the filter drops the three passages below the calibrated cutoff, the reranker scores the one left
    assert names(kept) == ["bm25_zh.md"]
    assert kept[0].metadata["rerank_score"] >= E5_MIN_SIMILARITY
    off_topic = ContextualCompressionRetriever(base_compressor=pipeline, base_retriever=base)
    assert off_topic.invoke("How long should I boil an egg to get a soft, runny yolk?") == []


def test_rerank_still_works_and_compress_documents_sends_top_n(embeddings):
    docs = [Document(t, metadata={"source": f"{i}.md"}) for i, t in enumerate(["猫在睡觉", "狗在叫", "苹果很甜"])]
    out = EmbeddingReranker(embeddings).rerank("狗", docs, top_k=2)
    assert [d.page_content for d in out][0] == "狗在叫" and len(out) == 2
    assert all("rerank_score" in d.metadata for d in out) and "rerank_score" not in docs[1].metadata
    seen: dict = {}

    def fake_service(request: httpx.Request) -> httpx.Response:  # test double for a Jina/Cohere-style endpoint
        seen.update(json.loads(request.content))
        return httpx.Response(200, json={"results": [{"index": 1, "relevance_score": 0.9}]})

    client = httpx.Client(transport=httpx.MockTransport(fake_service))
    kept = HttpReranker("https://x.test/rerank", "m", top_n=1, client=client).compress_documents(docs, "狗")
    assert seen["top_n"] == 1 and [d.page_content for d in kept] == ["狗在叫"]


# ---------------------------------------------------------------- the benchmark on a tiny slice

CONTEXTS = {
    "C1": "故宫位于北京市中心，是明清两代的皇家宫殿，旧称紫禁城。故宫建成于1420年，占地约72万平方米。",
    "C2": "长江是亚洲第一长河，全长约6300公里，发源于青藏高原，最终注入东海。三峡大坝位于长江上游。",
    "C3": "大熊猫主要生活在中国四川、陕西和甘肃的山区，以竹子为主要食物，是中国的国宝。",
}
QUESTIONS = [("C1", "故宫旧称什么？", "紫禁城"), ("C2", "长江全长约多少公里？", "6300公里"),
             ("C3", "大熊猫主要吃什么？", "竹子"), ("C3", "", "竹子")]  # CMRC has empty questions: misses, not crashes


class CannedChatModel(ToolCallingDouble):
    """TEST DOUBLE, not a language model: a plain call gets a fixed two-line Chinese reply, a structured call
    (a bound tool) gets two search queries."""

    def reply(self, messages: list[BaseMessage], tool: str | None) -> AIMessage:
        if tool:
            return AIMessage(content="", tool_calls=[{"name": tool, "args": {"queries": ["大熊猫的食物", "熊猫吃竹子"]},
                                                      "id": "call-1"}])
        return AIMessage(content="大熊猫以竹子为主要食物。\n大熊猫生活在四川的山区。")


def mini_cmrc(tmp_path: Path) -> Path:
    """CONTEXTS and QUESTIONS as a SQuAD-format file, like the CMRC trial set."""
    paragraphs = {cid: {"id": cid, "context": text, "qas": []} for cid, text in CONTEXTS.items()}
    for i, (cid, question, answer) in enumerate(QUESTIONS):
        answers = [{"text": answer, "answer_start": CONTEXTS[cid].index(answer)}]
        paragraphs[cid]["qas"].append({"id": f"Q{i}", "question": question, "answers": answers})
    path = tmp_path / "mini.json"
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": list(paragraphs.values())}]}, ensure_ascii=False))
    return path


def test_benchmark_writes_every_pair_with_sane_scores(tmp_path, monkeypatch, bench_output):
    path = mini_cmrc(tmp_path)
    monkeypatch.setattr(components, "get_chat_model", CannedChatModel)
    components.main(["--cmrc", str(path), "--llm-n", "1", "--out", "mini"])

    results = bench_output("mini")
    assert "load_average_1min_at_end" in results["meta"]
    assert results["setup"]["questions"] == 4 and results["setup"]["llm questions"] == 1
    pairs = {(p["langchain"], p["rag_lib"]): p for p in results["pairs"]}
    assert set(pairs) == {(lc, rl) for _, lc, rl in components.PAIRS}
    for pair in pairs.values():
        low, high = pair["R@1 diff 95% CI"]
        assert low <= pair["R@1 diff"] <= high
        for side in ("langchain", "rag_lib"):
            assert 0.0 <= pair[f"R@1 {side}"] <= pair[f"R@5 {side}"] <= 1.0 and pair[f"p50 ms {side}"] > 0
    rows = {row["pipeline"]: row for row in results["pipelines"]}
    for row in rows.values():  # three distinct topics: every pipeline finds every real question's context
        assert row["R@5"] == (0.75 if row["questions"] == 4 else 1.0)
    same = pairs[("ContextualCompressionRetriever(EmbeddingReranker)", "Retriever(ranker='model', EmbeddingReranker)")]
    assert same["R@1 diff"] == 0.0 and same["R@1 diff 95% CI"] == [0.0, 0.0]
    splitters = {s["splitter"].split("(")[0]: s for s in results["splitters"]}
    assert set(splitters) == {"RecursiveCharacterTextSplitter", "rag_lib.chunking.recursive_split"}
    assert all(s["chunks"] >= 3 and s["max chars"] <= 300 for s in splitters.values())


def test_the_paired_interval_holds_the_difference():
    diff, low, high = paired_difference([1, 1, 0, 1] * 25, [1, 0, 0, 1] * 25)
    assert diff == pytest.approx(0.25) and low < 0.25 < high and low > 0
    assert paired_difference([1, 0] * 10, [1, 0] * 10) == (0.0, 0.0, 0.0)


# ---------------------------------------------------------------- sparse weighting and fusion knobs


def test_tfidf_ranks_the_chunk_sharing_the_rare_word_first():
    rows = [{"source": cid, "text": text} for cid, text in CONTEXTS.items()]
    search = fusion.tfidf_search(rows)
    assert [cid for cid, _ in search("紫禁城建成于哪一年？")][:1] == ["C1"]
    assert [cid for cid, _ in search("大熊猫的国宝竹子")][:1] == ["C3"]
    assert len(search("完全无关的词语 xyz")) == len(rows)  # no shared word: every chunk scores 0, order kept


def test_fusion_benchmark_sweeps_every_knob_against_the_default(tmp_path, bench_output):
    fusion.main(["--cmrc", str(mini_cmrc(tmp_path)), "--out", "mini_fusion"])
    results = bench_output("mini_fusion")
    rows = {row["pipeline"]: row for row in results["pipelines"]}
    assert {f"hybrid RRF k={k}" for k in fusion.RRF_KS} <= set(rows) and fusion.DEFAULT in rows
    assert len([name for name in rows if name.startswith("weighted")]) == len(fusion.DENSE_SHARES)
    assert rows[fusion.DEFAULT]["R@1 - default"] == 0.0 and rows[fusion.DEFAULT]["95% CI"] == [0.0, 0.0]
    for row in rows.values():  # three distinct topics; the empty fourth question is a miss for every pipeline
        assert row["questions"] == 4 and row["R@5"] == 0.75
        low, high = row["95% CI"]
        assert low <= row["R@1 - default"] <= high
