"""Chunking strategies: sizes, boundaries and metadata of each one."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import Embeddings

from rag_lib.chunking import (
    Chunker,
    fixed_size_split,
    markdown_header_split,
    parent_child_split,
    recursive_split,
    semantic_split,
)

ZH = "Milvus Lite 是 Milvus 的嵌入式版本。它把数据保存在本地目录里，适合原型开发和教学。" * 3
EN = "LangGraph builds stateful graphs of LLM calls. Nodes return partial state updates that reducers merge. " * 3
MARKDOWN = f"""# Hybrid Search

## Rankers

{EN}

```python
# not a header: a comment in a code block
print("hi")
```

## Analyzers
### jieba
{ZH}
"""
PASTA = ["Boil the pasta in salted water.", "Drain the pasta and keep a cup of water.", "Toss it with the sauce."]
MILVUS = ["Milvus stores vectors in collections.", "An HNSW index speeds up search.", "Load the collection first."]


class TopicEmbeddings(Embeddings):
    """Fake for unit tests: sentences about pasta map to one vector, all others to an orthogonal one."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "pasta" in t or "sauce" in t else [0.0, 1.0] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_fixed_size_windows_overlap_exactly_and_cover_the_text():
    text = "abcdefghij" * 70  # no spaces: stripping cannot change the windows
    chunks = fixed_size_split(text, chunk_size=300, chunk_overlap=50)
    assert [len(c) for c in chunks] == [300, 300, 200]
    assert all(a[-50:] == b[:50] for a, b in zip(chunks, chunks[1:]))
    assert chunks[0] + chunks[1][50:] + chunks[2][50:] == text


def test_recursive_split_respects_size_and_chinese_sentences():
    chunks = recursive_split(ZH + EN, chunk_size=80, chunk_overlap=0)
    assert all(len(c) <= 80 for c in chunks)
    assert chunks[0].endswith("。")


def test_markdown_sections_carry_their_header_path():
    chunks = markdown_header_split(MARKDOWN, chunk_size=120, chunk_overlap=0)
    paths = [c.metadata.get("headers") for c in chunks]
    assert set(paths) == {"Hybrid Search > Rankers", "Hybrid Search > Analyzers > jieba"}
    assert all(c.text.startswith(c.metadata["headers"] + "\n") for c in chunks)
    assert all(len(c.text) <= 120 for c in chunks)  # the long sections were re-split
    assert sum(p == "Hybrid Search > Rankers" for p in paths) > 1
    code = [c for c in chunks if "not a header" in c.text]
    assert code and code[0].metadata["headers"] == "Hybrid Search > Rankers"  # '#' inside ``` is not a header


def test_markdown_split_of_text_without_headers_is_the_recursive_split():
    chunks = markdown_header_split(ZH + EN, chunk_size=100, chunk_overlap=20)
    assert [c.text for c in chunks] == recursive_split(ZH + EN, 100, 20)
    assert all(c.metadata == {} for c in chunks)


def test_semantic_split_cuts_where_the_topic_changes():
    text = " ".join(PASTA + MILVUS)
    chunks = semantic_split(text, TopicEmbeddings(), percentile=50, chunk_size=500, min_chars=10)
    assert chunks == [" ".join(PASTA), " ".join(MILVUS)]


def test_semantic_split_with_e5_finds_the_topic_shift(embeddings):
    text = " ".join(PASTA + MILVUS)
    chunks = semantic_split(text, embeddings, percentile=80, chunk_size=500)
    assert chunks == [" ".join(PASTA), " ".join(MILVUS)]


def test_semantic_split_caps_chunk_size():
    text = " ".join(PASTA * 6)
    assert all(len(c) <= 60 for c in semantic_split(text, TopicEmbeddings(), chunk_size=60, chunk_overlap=0))


def test_parent_child_children_sit_inside_their_parents():
    chunks = parent_child_split(ZH * 4 + "\n\n" + EN * 3, parent_size=400, chunk_size=100, chunk_overlap=20)
    parents = {c.metadata["parent_id"]: c.metadata["parent_text"] for c in chunks}
    assert len(parents) > 1 and all(len(p) <= 400 for p in parents.values())
    assert all(c.text in c.metadata["parent_text"] and len(c.text) <= 100 for c in chunks)
    assert len(chunks) > len(parents)


def test_chunker_dispatches_dedupes_and_describes_its_settings():
    assert ([c.text for c in Chunker("fixed", 100, 0).split("x" * 100 + "y" * 100 + "z" * 50)]
            == ["x" * 100, "y" * 100, "z" * 50])
    assert [c.text for c in Chunker("recursive", 12, 0).split("Same line.\n\nSame line.")] == ["Same line."]
    assert Chunker().settings() != Chunker("markdown").settings() != Chunker(chunk_size=200).settings()
    with pytest.raises(ValueError, match="the semantic strategy embeds sentences: pass `embeddings`"):
        Chunker("semantic").split("One. Two. Three.")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategy": "sentences"}, "unknown chunking strategy 'sentences': choose one of fixed, recursive"),
        ({"chunk_size": 100, "chunk_overlap": 100}, "chunk_overlap=100 must be >= 0 and smaller than chunk_size=100"),
        ({"strategy": "parent_child", "parent_size": 300}, "parent_size=300 must be larger than chunk_size=300"),
        ({"strategy": "semantic", "percentile": 100}, "percentile=100 must be between 0 and 100"),
    ],
)
def test_chunker_rejects_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Chunker(**kwargs)
