"""rag_lib.experiments.node_groups: parsing and staleness with the scripted TEST DOUBLE chat model of test_advanced;
indexing, search and the mapping back to parent chunks on a real (tiny) Milvus Lite with the real e5 embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from small_docs import DOCS
from test_advanced import ScriptedChatModel

from rag_lib.experiments import node_groups as ng
from rag_lib.experiments.advanced import multi_path_search
from rag_lib.experiments.node_groups import drawn_from
from rag_lib.index import source_name
from rag_lib.retriever import Retriever
from rag_lib.store import field_filter
from rag_lib.structured import StructuredOutputError

GROUPS = {  # hand-written groups of the three DOCS, as the LLM would return them
    "hnsw.md": {"summary": "How the HNSW graph index is built and searched.",
                "keywords": ["HNSW", "M", "efConstruction"],
                "qa_pairs": [{"question": "How many neighbours per node does Milvus use by default?",
                              "answer": "M = 16"}] * 3},
    "bm25.md": {"summary": "The BM25 ranking function for keyword search.", "keywords": ["BM25", "k1", "b"],
                "qa_pairs": [{"question": "Why are long documents penalised in keyword ranking?",
                              "answer": "they repeat words by chance"}] * 3},
    "ivf_zh.txt": {"summary": "IVF 索引用聚类加速向量搜索。", "keywords": ["IVF", "nlist", "nprobe"],
                   "qa_pairs": [{"question": "nprobe 调大会怎样？", "answer": "召回越高、速度越慢"}] * 3},
}


def reply_for(text: str) -> dict:
    return next(g for n, g in GROUPS.items() if DOCS[n].split("\n")[0].lstrip("# ") in text)


def test_derive_group_parses_the_structured_reply_in_the_texts_language():
    llm = ScriptedChatModel(replies=[GROUPS["ivf_zh.txt"]])
    group = ng.derive_group(llm, DOCS["ivf_zh.txt"])
    assert group.keywords == ["IVF", "nlist", "nprobe"] and group.qa_pairs[0].answer == "召回越高、速度越慢"
    prompt, max_tokens = llm.calls[0]
    assert prompt.startswith("IVF 索引") and "全部用中文填写" in prompt and max_tokens == ng.MAX_TOKENS
    assert "in English" in ng.group_prompt(DOCS["hnsw.md"])


def test_a_reply_outside_the_schema_is_rejected():
    one_pair = {**GROUPS["hnsw.md"], "qa_pairs": GROUPS["hnsw.md"]["qa_pairs"][:1]}
    with pytest.raises(StructuredOutputError, match="NodeGroup.*qa_pairs"):
        ng.derive_group(ScriptedChatModel(replies=[one_pair]), DOCS["hnsw.md"])


def test_answers_not_taken_from_the_source_are_dropped():
    text = DOCS["hnsw.md"]
    assert drawn_from("M = 16", text) and drawn_from("milvus uses m=16", text)  # case and spaces ignored
    assert not drawn_from("H2O", text) and not drawn_from("", text)
    assert not drawn_from("Paris", "pairwise comparison of two answers")  # short answers match whole words
    invented = {**GROUPS["hnsw.md"],
                "qa_pairs": [{"question": "What is the chemical formula for water?", "answer": "H2O"},
                             *GROUPS["hnsw.md"]["qa_pairs"][:2]]}
    rows = ng.group_rows(invented, "docs/hnsw.md", "p", "document", text=text)
    assert [r["kind"] for r in rows] == ["summary", "keywords", "qa"] and "water" not in rows[2]["text"]
    assert len(ng.group_rows(invented, "docs/hnsw.md", "p", "document")) == 4  # without the text nothing is checked


def test_group_rows_one_row_per_view_pointing_at_the_parent():
    rows = ng.group_rows(GROUPS["hnsw.md"], "docs/hnsw.md", ng.document_id("docs/hnsw.md"), "document")
    assert [r["kind"] for r in rows] == ["summary", "keywords", "qa"]  # the three identical QA pairs are one row
    assert rows[1]["text"] == "HNSW, M, efConstruction"
    assert {r["parent_id"] for r in rows} == {ng.document_id("docs/hnsw.md")} and len({r["id"] for r in rows}) == 3


class CountingLLM(ScriptedChatModel):
    """TEST DOUBLE: answers every group prompt with the hand-written group of the document in it."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.replies.append(reply_for(str(messages[-1].content)))
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_precompute_is_resumable_and_detects_stale_entries(tmp_path, docs, monkeypatch):
    out = tmp_path / "groups.json"
    (docs / "scan.png").write_bytes(b"\x89PNG\r\n")  # listed by list_files, but no loader: never sent to the LLM
    llm = CountingLLM(replies=[])
    groups = ng.precompute(docs, out, llm, model="m1", progress=False)
    assert len(llm.calls) == 3 and json.loads(out.read_text())["documents"] == groups["documents"]
    assert sorted(Path(s).name for s in groups["documents"]) == ["bm25.md", "hnsw.md", "ivf_zh.txt"]
    entry = groups["documents"][source_name(docs / "bm25.md")]
    assert entry["source_hash"] == ng.content_hash((docs / "bm25.md").read_bytes()) and entry["model"] == "m1"
    assert ng.stale_sources(ng.load_groups(out), docs, "m1") == {}
    ng.precompute(docs, out, llm, model="m1", progress=False)
    assert len(llm.calls) == 3  # nothing recomputed

    (docs / "bm25.md").write_text(DOCS["bm25.md"] + "\n\nk1 is often 1.2.", encoding="utf-8")
    (docs / "ivf_zh.txt").unlink()
    (docs / "new.md").write_text(DOCS["hnsw.md"].replace("HNSW", "HNSW again"), encoding="utf-8")
    assert ng.stale_sources(ng.load_groups(out), docs, "m1") == {
        source_name(docs / "bm25.md"): "changed", source_name(docs / "new.md"): "missing"}
    groups = ng.precompute(docs, out, llm, model="m1", progress=False)
    assert len(llm.calls) == 5 and sorted(Path(s).name for s in groups["documents"]) == ["bm25.md", "hnsw.md", "new.md"]

    assert set(ng.stale_sources(groups, docs, "m2").values()) == {"other model"}
    monkeypatch.setitem(ng.NODE_GROUP_PROMPTS, "en", ng.NODE_GROUP_PROMPTS["en"] + " Be brief.")
    assert set(ng.stale_sources(groups, docs, "m1").values()) == {"other prompt"}


@pytest.fixture()
def groups(milvus, embeddings, docs, chunks) -> str:
    """The hand-written document-level groups, indexed; plus one chunk-level group of chunk 0 of bm25.md."""
    rows = ng.document_rows({"documents": {source_name(docs / n): g for n, g in GROUPS.items()}})
    stored = milvus.query(chunks, filter=field_filter("source", source_name(docs / "bm25.md")),
                          output_fields=["id", "source", "text"])
    chunk = next(c for c in stored if "document length" in c["text"])
    group = {"summary": "Length normalisation in BM25.", "keywords": ["b", "length", "normalisation"], "qa_pairs": [
        {"question": "Which BM25 parameter corrects for document length?", "answer": "b"},
        {"question": "Why do long documents need a correction?", "answer": "they repeat words by chance"},
        {"question": "What does b normalise?", "answer": "document length"}]}
    rows += ng.group_rows(group, chunk["source"], chunk["id"], "chunk")
    assert ng.index_groups(milvus, embeddings, rows, "groups") == 3 * 3 + 5
    return "groups"


def test_group_hits_map_back_to_parent_chunks(milvus, embeddings, chunks, groups):
    search = ng.NodeGroupSearch(milvus, embeddings, chunks, groups, k=3)
    query = "Which BM25 parameter corrects for document length?"
    rows = search.groups(query)
    assert rows[0].metadata["level"] == "chunk" and rows[0].metadata["kind"] == "qa"
    parents = search(query)
    assert parents[0].id == rows[0].metadata["parent_id"] and parents[0].metadata["via"].startswith("qa: Which BM25")
    assert parents[0].metadata["score"] == rows[0].metadata["score"]  # the parent ranks by its group row's score
    assert len({p.id for p in parents}) == len(parents) == 3  # each parent chunk once
    stored = {r["id"]: r["text"] for r in milvus.query(chunks, filter="", output_fields=["id", "text"], limit=100)}
    assert all(stored.get(p.id) == p.page_content for p in parents)  # real chunks, not group rows

    hits = search("nprobe 调大会怎样？")  # a document-level group: the document's chunk closest to the query
    assert Path(hits[0].metadata["source"]).name == "ivf_zh.txt" and "nprobe" in hits[0].page_content


def test_multi_path_includes_the_node_group_path(milvus, embeddings, chunks, groups):
    dense = Retriever(client=milvus, embeddings=embeddings, collection=chunks, search_type="dense", k=3)
    paths = {"dense": dense.invoke, "node groups": ng.NodeGroupSearch(milvus, embeddings, chunks, groups, k=3)}
    hits = multi_path_search("Why are long documents penalised in keyword ranking?", paths, k=3)
    assert Path(hits[0].metadata["source"]).name == "bm25.md"
    assert set(hits[0].metadata["paths"]) == {"dense", "node groups"}
    stored = {r["id"] for r in milvus.query(chunks, filter="", output_fields=["id"], limit=100)}
    assert all(h.id in stored for h in hits)


def test_drawn_from_wants_short_answers_whole_and_long_ones_mostly():
    text = "HNSW builds layered graphs. The parameter M sets how many neighbours each node keeps. Milvus uses M = 16."
    assert drawn_from("M = 16", text) and drawn_from("milvus uses m=16", text)  # case and spaces ignored
    assert not drawn_from("H2O", text) and not drawn_from("", text)
    assert not drawn_from("Paris", "pairwise comparison of two answers")  # short answers match whole words
    assert drawn_from("each node keeps M neighbours", text)  # long: most character pairs are in the text
    assert not drawn_from("the capital of France is Paris", text)
