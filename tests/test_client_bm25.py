"""Client-side BM25 (rag_lib.experiments.client_bm25): the encoder's vectors give rank_bm25's BM25Okapi scores exactly,
and a Milvus Lite collection of them ranks as rank_bm25 does. Real Milvus Lite, real jieba; no fakes."""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from rag_lib.experiments.client_bm25 import BM25Encoder, ClientBM25Search, create_collection
from rag_lib.store import connect, make_row
from rag_lib.text import tokenize

TEXTS = [
    "故宫位于北京市中心，是明清两代的皇家宫殿，旧称紫禁城。",
    "长江是亚洲第一长河，全长约6300公里，最终注入东海。",
    "大熊猫主要生活在四川的山区，以竹子为主要食物。",
    "珠穆朗玛峰是世界最高峰，位于中国与尼泊尔的边境。",
    "Milvus listens on port 19530 and supports BM25 full text search.",
    "Reciprocal Rank Fusion usually sets k to 60 when it merges ranked lists.",
    "北京是中国的首都，故宫和天坛都在北京。",
    "The Yangtze river flows into the East China Sea near Shanghai.",
]
QUERIES = ["故宫旧称什么？", "长江全长多少公里", "BM25 full text search port", "北京的故宫", "熊猫吃什么",
           "unknownword"]


def inner(a: dict[int, float], b: dict[int, float]) -> float:
    return sum(value * b.get(index, 0.0) for index, value in a.items())


def test_vectors_give_rank_bm25_scores_exactly():
    encoder = BM25Encoder().fit(TEXTS)
    reference = BM25Okapi([tokenize(t) for t in TEXTS])
    documents = [encoder.document(t) for t in TEXTS]
    for query in QUERIES:
        expected = reference.get_scores(tokenize(query))
        got = [inner(encoder.query(query), d) for d in documents]
        assert got == pytest.approx(list(expected), abs=1e-9), query
    assert encoder.query("unknownword") == {}  # no known term: nothing to search for


def test_milvus_ranks_the_client_vectors_as_rank_bm25_does(tmp_path):
    rows = [make_row(f"doc{i}", text, parent_id=f"p{i}") for i, text in enumerate(TEXTS)]
    encoder = BM25Encoder().fit(TEXTS)
    client = connect(uri=str(tmp_path / "bm25.db"))
    try:
        create_collection(client, "client_bm25", rows, encoder)
        search = ClientBM25Search(client, "client_bm25", encoder, limit=3)
        results = search.search_many(QUERIES)
        wanted = [["p0", "p6", "p3"]] * len(QUERIES)  # 故宫 twice, and a parent sharing no term with most queries
        best = search.best_per_parent(QUERIES, wanted)
    finally:
        client.close()
    reference = BM25Okapi([tokenize(t) for t in TEXTS])
    for query, hits in zip(QUERIES, results):
        scores = reference.get_scores(tokenize(query))
        positive = [i for i in np.argsort(-scores, kind="stable") if scores[i] > 0][:3]
        assert [h.metadata["source"] for h in hits] == [f"doc{i}" for i in positive], query
        assert [h.metadata["score"] for h in hits] == pytest.approx([scores[i] for i in positive], rel=1e-5)
        assert all(h.metadata["parent_id"] == "p" + h.metadata["source"][3:] for h in hits)
    assert results[-1] == []  # the unknown word finds nothing, without a Milvus call
    for query, scores in zip(QUERIES, best):  # each given parent's exact score (one row each), 0.0 with no shared term
        exact = reference.get_scores(tokenize(query))
        assert scores == pytest.approx({"p0": exact[0], "p6": exact[6], "p3": exact[3]}, rel=1e-5), query
    assert search.lowest_score(QUERIES) == [0.0] * len(QUERIES)


def test_fit_needs_texts():
    with pytest.raises(ValueError, match="at least one text"):
        BM25Encoder().fit([])
