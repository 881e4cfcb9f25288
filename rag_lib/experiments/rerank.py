"""Second-stage rerankers the course measures: re-score a few first-stage candidates and keep the best `top_k`.

Each has `rerank(query, documents, top_k)`, scoring into `metadata["rerank_score"]`, and is a LangChain document
compressor (`compress_documents` keeps `top_n`), for `Retriever(ranker="model")` or ContextualCompressionRetriever.
`get_reranker()` picks one from environment variables (offline by default):

| variables set                                       | reranker                                        |
| --------------------------------------------------- | ----------------------------------------------- |
| none                                                | `EmbeddingReranker`: e5 cosine                  |
| RAG_RERANK_LLM=1                                    | `LLMReranker`: the chat model scores 0-10       |
| RAG_RERANK_CROSS_ENCODER=<model name or path>       | `SentenceTransformersReranker` (cross-encoder)  |
| RAG_RERANK_MODEL + RAG_RERANK_BASE_URL (+ _API_KEY) | `HttpReranker`: Jina/Cohere/DashScope-style API |
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, Self

import httpx
import numpy as np
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from rag_lib.embeddings import get_embeddings
from rag_lib.settings import ConfigError, settings
from rag_lib.structured import StructuredOutputError, structured_output

RERANK_PROMPT = (
    "Rate how well the passage answers the question, from 0 (unrelated) to 10 (states the answer).\n"
    "Question: {query}\nPassage: {passage}"
)


def ranked(documents: Sequence[Document], scores: Sequence[float], top_k: int) -> list[Document]:
    """Copies of `documents` with metadata["rerank_score"], best first (ties keep input order), `top_k` kept."""
    if top_k < 1:
        raise ValueError(f"top_k={top_k}: keep at least one document")
    if len(documents) != len(scores):
        raise ValueError(f"{len(documents)} documents but {len(scores)} scores")
    order = sorted(range(len(documents)), key=lambda i: -scores[i])[:top_k]
    return [documents[i].model_copy(update={"metadata": {**documents[i].metadata, "rerank_score": float(scores[i])}})
            for i in order]


class BaseReranker(BaseDocumentCompressor):
    """A reranker that is also a LangChain document compressor: subclasses write `rerank`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    top_n: int = 4  # documents kept by compress_documents; Retriever(ranker="model") passes its own k to rerank

    @abstractmethod
    def rerank(self, query: str, documents: list[Document], top_k: int) -> list[Document]:
        """The `top_k` best of `documents` for `query`, best first, each with metadata["rerank_score"]."""

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Callbacks | None = None) -> list[Document]:
        """LangChain's compressor interface: the `top_n` best documents, best first, with metadata["rerank_score"]."""
        return self.rerank(query, list(documents), self.top_n)


class EmbeddingReranker(BaseReranker):
    """Re-score candidates by embedding cosine (e5 by default): the offline default, re-applying the dense model."""

    embeddings: Embeddings

    def __init__(self, embeddings: Embeddings | None = None, **kwargs: Any) -> None:
        super().__init__(embeddings=embeddings or get_embeddings(), **kwargs)

    def rerank(self, query: str, documents: list[Document], top_k: int) -> list[Document]:
        if not documents:
            return []
        q = np.asarray(self.embeddings.embed_query(query), dtype=np.float32)
        p = np.asarray(self.embeddings.embed_documents([d.page_content for d in documents]), dtype=np.float32)
        scores = p @ q / (np.linalg.norm(p, axis=1) * np.linalg.norm(q) + 1e-12)
        return ranked(documents, scores.tolist(), top_k)


class RelevanceScore(BaseModel):
    """How well one passage answers the question."""

    score: int = Field(ge=0, le=10, description="0 = unrelated, 10 = the passage states the answer")


class LLMReranker(BaseReranker):
    """Pointwise LLM reranking: the chat model scores each passage 0-10 (one call per candidate); an unusable score
    is -1, and ties keep the first-stage order."""

    scorer: Runnable  # the chat model with structured output (RelevanceScore)
    max_chars: int = 400  # longer passages are cut: prompt processing is the cost on CPU

    def __init__(self, llm: BaseChatModel | None = None, max_chars: int = 400, **kwargs: Any) -> None:
        if llm is None:
            from rag_lib.llm import get_chat_model  # only here: retrieval alone must not load a chat model provider

            llm = get_chat_model()
        scorer = structured_output(llm, RelevanceScore)
        super().__init__(scorer=scorer, max_chars=max_chars, **kwargs)

    def score(self, query: str, passage: str) -> int | None:
        """The model's 0-10 relevance score for one passage; None when its reply breaks the schema."""
        try:
            result = self.scorer.invoke(RERANK_PROMPT.format(query=query, passage=passage[: self.max_chars]))
        except StructuredOutputError:
            return None
        return int(result.score)

    def rerank(self, query: str, documents: list[Document], top_k: int) -> list[Document]:
        if not documents:
            return []
        scores = [self.score(query, d.page_content) for d in documents]
        return ranked(documents, [-1 if s is None else s for s in scores], top_k)


class SentenceTransformersReranker(BaseReranker):
    """A sentence-transformers CrossEncoder (e.g. BAAI/bge-reranker-base; not installed: it pulls torch); `kwargs`
    go to `CrossEncoder`."""

    model: Any  # sentence_transformers.CrossEncoder

    def __init__(self, model_name: str, top_n: int = 4, **kwargs: Any) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as error:
            raise ImportError(
                "SentenceTransformersReranker needs sentence-transformers, which is not installed: "
                "`pip install sentence-transformers` (pulls torch, ~1.4 GB) and make sure the model "
                f"{model_name!r} is on disk or downloadable, or use EmbeddingReranker / HttpReranker instead."
            ) from error
        super().__init__(model=CrossEncoder(model_name, **kwargs), top_n=top_n)

    def rerank(self, query: str, documents: list[Document], top_k: int) -> list[Document]:
        if not documents:
            return []
        scores = self.model.predict([(query, d.page_content) for d in documents])
        return ranked(documents, [float(s) for s in scores], top_k)


class HttpReranker(BaseReranker):
    """A hosted rerank endpoint (Jina, Cohere, DashScope, vLLM/TEI): POST {model, query, documents, top_n} ->
    results[index, relevance_score]. `close()` it (or use `with`); a `client` passed in is left to its owner."""

    url: str
    model: str
    api_key: str | None = Field(None, repr=False)
    client: httpx.Client
    _owns_client: bool = PrivateAttr(default=False)

    def __init__(self, url: str, model: str, api_key: str | None = None, client: httpx.Client | None = None,
                 **kwargs: Any) -> None:
        super().__init__(url=url, model=model, api_key=api_key, client=client or httpx.Client(timeout=30.0), **kwargs)
        self._owns_client = client is None

    def close(self) -> None:
        """Close the HTTP client this reranker made (one passed in is left to its owner)."""
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def request_body(self, query: str, documents: list[Document], top_k: int) -> dict[str, Any]:
        """The JSON sent to the endpoint."""
        return {"model": self.model, "query": query, "documents": [d.page_content for d in documents],
                "top_n": min(top_k, len(documents)), "return_documents": False}

    def rerank(self, query: str, documents: list[Document], top_k: int) -> list[Document]:
        if not documents:
            return []
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        response = self.client.post(self.url, json=self.request_body(query, documents, top_k), headers=headers)
        response.raise_for_status()
        body = response.json()
        results = body.get("results") or body.get("output", {}).get("results")  # DashScope native: output.results
        if not isinstance(results, list):
            raise ValueError(f"rerank response from {self.url} has no 'results' list: {str(body)[:200]}")
        picked = [documents[int(r["index"])] for r in results]
        return ranked(picked, [float(r["relevance_score"]) for r in results], top_k)


def get_reranker(embeddings: Embeddings | None = None) -> BaseReranker:
    """The reranker chosen by environment variables (see the module table); half settings fail clearly."""
    env = settings()
    model, url, key = env.RAG_RERANK_MODEL, env.RAG_RERANK_BASE_URL, env.RAG_RERANK_API_KEY
    cross_encoder, llm = env.RAG_RERANK_CROSS_ENCODER, env.RAG_RERANK_LLM
    http = bool(model or url or key)
    chosen = [name for name, on in (("RAG_RERANK_MODEL/_BASE_URL", http), ("RAG_RERANK_CROSS_ENCODER", cross_encoder),
                                    ("RAG_RERANK_LLM", llm)) if on]
    if len(chosen) > 1:
        raise ConfigError(f"several rerankers are configured ({', '.join(chosen)}): unset all but one.")
    if http:
        if not (model and url):
            raise ConfigError(
                "an HTTP reranker needs both RAG_RERANK_MODEL (e.g. jina-reranker-v2-base-multilingual, gte-rerank-v2) "
                "and RAG_RERANK_BASE_URL (the full endpoint, e.g. https://api.jina.ai/v1/rerank); "
                "RAG_RERANK_API_KEY if the service needs one. Unset them all to stay offline.")
        return HttpReranker(url, model, key)
    if cross_encoder:
        return SentenceTransformersReranker(cross_encoder)
    if llm:
        return LLMReranker()
    return EmbeddingReranker(embeddings)
