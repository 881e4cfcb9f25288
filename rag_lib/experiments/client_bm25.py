"""BM25 computed in the client and served by Milvus: each document a sparse vector of its terms' BM25 term-frequency
parts, each query a sparse vector of its terms' IDF, so that the inner product Milvus ranks by is exactly rank_bm25's
BM25Okapi score (k1, b, and its IDF with the epsilon floor for very common terms).

Milvus's own BM25 function keeps its statistics server-side (per segment on Lite) and weights terms its own way; here
the client holds the statistics (`BM25Encoder.fit` on the collection's texts), which is exact but has a price: adding
many documents changes IDF and the average length, and the documents must then be encoded again. LangChain's
`langchain_milvus.utils.sparse.BM25SparseEmbedding` does the same job through pymilvus[model] and is deprecated in
favour of the server-side function; this module needs neither."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_core.documents import Document
from pymilvus import DataType, MilvusClient

from rag_lib.text import tokenize

FIELD = "bm25"  # the sparse vector field of a client-BM25 collection
SEARCH_PARAMS = {"metric_type": "IP", "params": {"drop_ratio_search": 0.0}}


@dataclass
class BM25Encoder:
    """Corpus statistics and the two encodings; k1, b and epsilon as rank_bm25's BM25Okapi."""

    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    tokenizer: Callable[[str], list[str]] = tokenize
    vocabulary: dict[str, int] = field(default_factory=dict)
    idf: dict[int, float] = field(default_factory=dict)
    average_length: float = 0.0

    def fit(self, texts: list[str]) -> BM25Encoder:
        """Learn the vocabulary, IDF and average length of `texts` (the documents of one collection)."""
        tokenized = [self.tokenizer(t) for t in texts]
        if not tokenized:
            raise ValueError("BM25Encoder.fit needs at least one text: IDF is a corpus statistic")
        frequencies = Counter(term for tokens in tokenized for term in set(tokens))
        self.vocabulary = {term: i for i, term in enumerate(sorted(frequencies))}
        self.average_length = sum(map(len, tokenized)) / len(tokenized)
        n = len(tokenized)
        idf = {term: math.log(n - df + 0.5) - math.log(df + 0.5) for term, df in frequencies.items()}
        floor = self.epsilon * sum(idf.values()) / len(idf)  # rank_bm25: a negative IDF becomes this
        self.idf = {self.vocabulary[term]: value if value >= 0 else floor for term, value in idf.items()}
        return self

    def document(self, text: str) -> dict[int, float]:
        """One document's vector: for each known term, tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl))."""
        tokens = self.tokenizer(text)
        norm = self.k1 * (1 - self.b + self.b * len(tokens) / self.average_length)
        return {self.vocabulary[term]: tf * (self.k1 + 1) / (tf + norm)
                for term, tf in Counter(tokens).items() if term in self.vocabulary}

    def query(self, text: str) -> dict[int, float]:
        """One query's vector: each known term's IDF times how often the query says it (unknown terms score 0)."""
        counts = Counter(self.vocabulary[t] for t in self.tokenizer(text) if t in self.vocabulary)
        return {index: count * self.idf[index] for index, count in counts.items() if self.idf[index]}


def create_collection(client: MilvusClient, name: str, rows: list[dict], encoder: BM25Encoder) -> None:
    """A new collection `name` holding each row's id, text, source, parent id and BM25 vector (SPARSE_INVERTED_INDEX,
    IP): rows as `rag_lib.store.make_row` makes them."""
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("text", DataType.VARCHAR, max_length=65535)
    schema.add_field("source", DataType.VARCHAR, max_length=1024)
    schema.add_field("parent_id", DataType.VARCHAR, max_length=64)
    schema.add_field(FIELD, DataType.SPARSE_FLOAT_VECTOR)
    index_params = client.prepare_index_params()
    index_params.add_index(FIELD, index_type="SPARSE_INVERTED_INDEX", metric_type="IP",
                           params={"drop_ratio_build": 0.0})
    client.drop_collection(name)
    client.create_collection(name, schema=schema, index_params=index_params)
    entities = [{"id": r["id"], "text": r["text"], "source": r["source"], "parent_id": r.get("parent_id", ""),
                 FIELD: encoder.document(r["text"])} for r in rows]
    entities = [e for e in entities if e[FIELD]]  # a text with no known term has no vector to store
    for start in range(0, len(entities), 512):
        client.insert(name, entities[start : start + 512])
    client.flush(name)


@dataclass
class ClientBM25Search:
    """Search a client-BM25 collection: Documents best first with `score` (the BM25 score) and `parent_id`, the
    `ManySearch` shape that `rag_lib.experiments.parent_fusion` fuses."""

    client: MilvusClient
    collection: str
    encoder: BM25Encoder
    limit: int = 30

    def search_many(self, queries: list[str]) -> list[list[Document]]:
        """One Milvus call for every query that has a known term; the others find nothing."""
        vectors = [self.encoder.query(q) for q in queries]
        asked = [i for i, v in enumerate(vectors) if v]
        results: list[list[Document]] = [[] for _ in queries]
        if not asked:
            return results
        found = self.client.search(self.collection, data=[vectors[i] for i in asked], anns_field=FIELD,
                                   limit=self.limit, search_params=SEARCH_PARAMS,
                                   output_fields=["text", "source", "parent_id"])
        for i, hits in zip(asked, found):
            results[i] = [Document(h["entity"]["text"], id=h["id"], metadata={
                "score": h["distance"], "source": h["entity"]["source"], "parent_id": h["entity"]["parent_id"]})
                for h in hits]
        return results

    def lowest_score(self, queries: list[str]) -> list[float]:
        """0.0 for every query: some row shares no term with it (the floor `ParentFusionRetriever` scales from)."""
        return [0.0] * len(queries)

    def best_per_parent(self, queries: list[str], parents: list[list[str]], parent_key: str = "parent_id"
                        ) -> list[dict[str, float]]:
        """Each given parent's best BM25 score per query (a grouped search restricted to them; a parent sharing no
        term with the query scores 0.0): what `ParentFusionRetriever(complete=True)` asks of every signal."""
        best = []
        for query, wanted in zip(queries, parents, strict=True):
            vector, scores = self.encoder.query(query), {}
            if vector and wanted:
                hits = self.client.search(self.collection, data=[vector], anns_field=FIELD, limit=len(wanted),
                                          search_params=SEARCH_PARAMS, output_fields=[parent_key],
                                          filter=f"{parent_key} in {json.dumps(wanted, ensure_ascii=False)}",
                                          group_by_field=parent_key)[0]
                scores = {h["entity"][parent_key]: h["distance"] for h in hits}
            best.append({parent: scores.get(parent, 0.0) for parent in wanted})
        return best
