"""Quickstart benchmark: model assembly (first vs cached) and load, indexing throughput, and per question:
retrieval ms, time to first token, generation tokens/s and total seconds."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks import timed, write_results
from benchmarks.builds import venv_build
from rag_lib import gguf
from rag_lib.embeddings import default_min_similarity, raw_embeddings
from rag_lib.experiments.demo import DOCS, quickstart_questions
from rag_lib.experiments.results import format_table
from rag_lib.graphs.rag import answer_messages
from rag_lib.index import index_directory
from rag_lib.llm import local_chat_model
from rag_lib.retriever import Retriever
from rag_lib.store import DEFAULT_COLLECTION, connect, count_rows


def model_timings() -> dict[str, float]:
    """Assemble the GGUF into an empty cache (first run), verify it again (cached run), load it."""
    with tempfile.TemporaryDirectory() as tmp:
        _, first = timed(lambda: gguf.ensure_qwen_gguf(Path(tmp)))
        _, cached = timed(lambda: gguf.ensure_qwen_gguf(Path(tmp)))
    path = gguf.ensure_qwen_gguf()
    llm, load = timed(lambda: local_chat_model(path))
    return {"assembly_first_s": first, "assembly_cached_s": cached, "load_s": load, "llm": llm}


def answer_timings(llm, retriever: Retriever, question: str) -> dict[str, float | str]:
    """Retrieve, then stream the answer, timing the first token and the generation rate."""
    docs, retrieval = timed(lambda: retriever.invoke(question))
    row: dict[str, float | str] = {"question": question[:40], "retrieval_ms": retrieval * 1000}
    if not docs:
        return {**row, "ttft_s": 0.0, "tokens_per_s": 0.0, "total_s": retrieval, "answer": "(refused: no passage)"}
    start = time.perf_counter()
    first, chunks, text = None, 0, []
    for chunk in llm.stream(answer_messages(question, docs)):
        first = first or time.perf_counter()
        chunks += 1
        text.append(str(chunk.content))
    end = time.perf_counter()
    gen_rate = (chunks - 1) / (end - first) if chunks > 1 else 0.0
    return {**row, "ttft_s": first - start, "tokens_per_s": gen_rate, "total_s": retrieval + end - start,
            "answer": "".join(text)[:60]}


def main(argv: list[str]) -> None:
    argparse.ArgumentParser(prog="python -m benchmarks quickstart", description=__doc__).parse_args(argv)
    models = model_timings()
    db = Path(tempfile.mkdtemp()) / "bench.db"
    client = connect(uri=str(db))
    embeddings = raw_embeddings()  # uncached: measure real embedding throughput
    report, _ = timed(lambda: index_directory(client, DOCS, embeddings, progress=False))
    chunks = count_rows(client, DEFAULT_COLLECTION)
    retriever = Retriever(client=client, embeddings=embeddings, k=3, min_similarity=default_min_similarity())
    questions = [answer_timings(models["llm"], retriever, q) for q in quickstart_questions()]
    client.close()
    shutil.rmtree(db.parent, ignore_errors=True)

    setup = {
        "llama.cpp build": venv_build(),
        "model assembly, first run (s)": models["assembly_first_s"],
        "model assembly, cached (s)": models["assembly_cached_s"],
        "model load (s)": models["load_s"],
        "index data/docs (s)": report.seconds,
        "chunks": chunks,
        "chunks/s": chunks / report.seconds,
    }
    print(format_table([{"measure": k, "value": v} for k, v in setup.items()]))
    print()
    print(format_table(questions))
    print("\nwrote", write_results("quickstart", {"setup": setup, "questions": questions}))


if __name__ == "__main__":
    main([])
