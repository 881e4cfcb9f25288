"""`make demo`: index data/docs into Milvus Lite, then answer the three quickstart questions, streaming."""

from __future__ import annotations

import json
import sys

from rag_lib.embeddings import default_min_similarity, get_embeddings
from rag_lib.graphs.rag import RAGContext, build_rag_graph
from rag_lib.index import index_directory
from rag_lib.llm import get_chat_model
from rag_lib.retriever import Retriever
from rag_lib.store import DEFAULT_COLLECTION, PROJECT_ROOT, connect, count_rows

DOCS = PROJECT_ROOT / "data" / "docs"
QUESTIONS = PROJECT_ROOT / "data" / "sample_questions.json"


def quickstart_questions() -> list[str]:
    """The first three sample questions: Chinese, English, and one the corpus cannot answer."""
    return [q["question"] for q in json.loads(QUESTIONS.read_text(encoding="utf-8"))[:3]]


def stream_answer(graph, question: str, out=sys.stdout, *, context: RAGContext) -> dict:
    """Print the answer token by token as the model writes it, then the sources; return the final state."""
    final: dict = {}
    streamed = False
    for mode, payload in graph.stream({"question": question}, stream_mode=["messages", "values"], context=context):
        if mode == "messages":
            chunk, meta = payload
            if meta.get("langgraph_node") == "generate" and chunk.content:
                out.write(chunk.content)
                out.flush()
                streamed = True
        else:
            final = payload
    if not streamed:  # the graph refused without calling the model: nothing was streamed
        out.write(final.get("answer", ""))
    return final


def print_sources(state: dict, out=sys.stdout) -> None:
    """List the retrieved passages the answer could cite, with their scores."""
    if not state.get("documents"):
        out.write("  (no passage passed the similarity cutoff)\n")
    for i, doc in enumerate(state.get("documents", []), 1):
        m = doc.metadata
        out.write(f"  [{i}] {m['source']} (chunk {m['chunk_index']}, similarity {m['similarity']:.3f})\n")


def main() -> None:
    """Open the chat model, index data/docs, then answer the quickstart questions."""
    chat = get_chat_model()  # first: a half-configured provider fails now, not after minutes of embedding
    client = connect("rag")
    try:  # closed however the demo ends, so the database is free for a notebook or the app
        embeddings = get_embeddings()
        report = index_directory(client, DOCS, embeddings)
        print(f"index: {report.summary()} -> {count_rows(client, DEFAULT_COLLECTION)} chunks in {DEFAULT_COLLECTION}")
        for path, error in report.errors.items():
            print(f"  skipped {path}: {error}")
        retriever = Retriever(client=client, embeddings=embeddings, k=3, min_similarity=default_min_similarity())
        graph, context = build_rag_graph(), RAGContext(retriever=retriever, llm=chat)
        for question in quickstart_questions():
            print(f"\nQ: {question}\nA: ", end="", flush=True)
            state = stream_answer(graph, question, context=context)
            print("\nsources:")
            print_sources(state)
    finally:
        client.close()


if __name__ == "__main__":
    main()
