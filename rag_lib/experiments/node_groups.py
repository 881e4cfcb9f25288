"""Node groups: LLM-derived views of a document or chunk (a summary, keywords, question-answer pairs), each
indexed as its own searchable row that points back to what it was derived from.

Why: a user's question is often closer to "a question the document answers" or to "what the document is about"
than to any one raw chunk. Searching these derived rows and mapping each hit back to its parent adds a path that
plain chunk search lacks (see `rag_lib.experiments.advanced.multi_path_search`).

Rows live in their own collection (`rag_lib.store.build_schema`, so dense + BM25 work as usual) with
`parent_id` = the parent chunk's id (level "chunk") or `document_id(source)` (level "document"), `source` = the
parent's file and a dynamic `kind` field: "summary", "keywords" or "qa".

A local CPU model is slow at this (one long structured reply per document), so the groups of `data/docs` are
precomputed once:

    python -m rag_lib.experiments.node_groups --out data/derived/node_groups.json

Only files with a loader (`rag_lib.loaders.LOADERS`) get a group. The JSON records the model, a hash of the prompt
and schema, and a sha256 of each source file; `stale_sources` lists entries that no longer match (file changed, new
file, other model or prompt), and a re-run recomputes exactly those. It saves after each document, so an interrupted
run resumes where it stopped (with a progress bar).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Annotated, Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field, StringConstraints
from pymilvus import MilvusClient
from tqdm.auto import tqdm

from rag_lib.experiments.advanced import OUTPUT_FIELDS, search_by_vector
from rag_lib.experiments.evaluation import tokens_occur_in
from rag_lib.index import list_files, source_name
from rag_lib.loaders import LOADERS, LoadError, load_file
from rag_lib.retriever import to_document, with_metadata
from rag_lib.store import PROJECT_ROOT, chunk_id, ensure_collection_for, field_filter, make_row
from rag_lib.structured import StructuredOutputError, structured_output
from rag_lib.text import detect_language

# Text first, instructions after, in the text's language: the 1.5B model then answers in that language
# (an English instruction before a Chinese text gave English rows, and "summary: 1-2 sentences" was copied).
NODE_GROUP_PROMPTS = {
    "zh": "{text}\n\n请为上面的文本建立检索索引，全部用中文填写：summary 用自己的话写一句话的摘要；"
    "keywords 列出最多 6 个关键词；"
    "qa_pairs 写 3 个文本能回答的具体问题，每个配一个从文本中摘出的简短答案。",
    "en": "{text}\n\nIndex the text above for search, in English: summary = what it is about, in one sentence "
    "of your own; "
    "keywords = up to 6 key terms; qa_pairs = 3 specific questions the text answers, each with a short answer "
    "copied from the text.",
}

DEFAULT_OUT = PROJECT_ROOT / "data" / "derived" / "node_groups.json"
GROUP_COLLECTION = "node_groups"
GROUP_FIELDS = [*OUTPUT_FIELDS, "kind", "level"]
MAX_TOKENS = 600  # fits the longest output the schema's length limits allow, so the JSON is never cut off
MAX_CHARS = 3200  # every data/docs file fits; longer texts are cut (prompt processing is the cost on CPU)
DRAWN_MIN_PAIRS = 0.7  # share of an answer's character pairs that must occur in its source (see `drawn_from`)
DRAWN_SHORT_CHARS = 12  # an answer this short (spaces left out) must occur whole: a few pairs occur anywhere


# A schema's docstring is part of the PROMPT: with_structured_output sends it as the tool description, which
# llama.cpp puts in the system prompt. Given any description of NodeGroup ("what the LLM derives from one text",
# "search index entries for the user's text"), the 1.5B model summarised that sentence instead of the text (the
# first for a short chunk, the second for some documents); with none it stayed on the text, so NodeGroup has
# no docstring. The length limits
# become grammar limits on llama.cpp: the 1.5B model tends to copy whole paragraphs (costly to generate, so they
# are cut) and to stop after one QA pair.


class QAPair(BaseModel):
    """A question the text answers, and the answer taken from the text."""

    question: str = Field(max_length=60)
    answer: str = Field(max_length=50)


class NodeGroup(BaseModel):  # what the LLM derives from one text; no docstring on purpose (see above)
    summary: str = Field(max_length=120)
    keywords: list[Annotated[str, StringConstraints(max_length=20)]] = Field(min_length=3, max_length=6)
    qa_pairs: list[QAPair] = Field(min_length=3, max_length=3)  # without a minimum it often wrote one


def drawn_from(answer: str, text: str) -> bool:
    """Whether an LLM-written answer comes from `text`: a short answer must occur in it whole (`tokens_occur_in`),
    a longer one must share at least DRAWN_MIN_PAIRS of its character pairs with it."""

    def squeeze(s: str) -> str:
        return "".join(s.lower().split())

    def pairs(s: str) -> set[str]:
        return {s[i : i + 2] for i in range(len(s) - 1)}

    if not answer.strip():
        return False
    if len(squeeze(answer)) <= DRAWN_SHORT_CHARS:  # "paris" would be found in "comparison": whole words only
        return tokens_occur_in(answer, text)
    wanted = pairs(squeeze(answer))
    return len(wanted & pairs(squeeze(text))) / len(wanted) >= DRAWN_MIN_PAIRS


def group_prompt(text: str) -> str:
    """The one prompt that derives a node group (in the text's own language, so rows match its questions)."""
    return NODE_GROUP_PROMPTS[detect_language(text)].format(text=text[:MAX_CHARS])


def derive_group(llm: BaseChatModel, text: str) -> NodeGroup:
    """One structured LLM call: summary, keywords and QA pairs of `text` (grammar-forced JSON on llama.cpp)."""
    return structured_output(llm, NodeGroup, max_tokens=MAX_TOKENS).invoke(group_prompt(text))


def content_hash(data: bytes) -> str:
    """sha256 of a source file's bytes: a changed file makes its stored group stale."""
    return hashlib.sha256(data).hexdigest()


def prompt_hash() -> str:
    """Identifies the prompt and output schema: changing either makes every stored group stale."""
    spec = json.dumps([NODE_GROUP_PROMPTS, NodeGroup.model_json_schema()], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(spec.encode()).hexdigest()[:16]


def document_id(source: str) -> str:
    """The `parent_id` of a document-level group: a stable id of the source name."""
    return chunk_id(source, "")


def configured_model() -> str:
    """The configured chat model's name, recorded with each group."""
    from rag_lib.providers import chat_settings

    return Path(chat_settings().model or "unknown").name


def load_groups(path: str | Path = DEFAULT_OUT) -> dict[str, Any]:
    """The precomputed file ({"model", "documents": {source: entry}}), or an empty one when missing."""
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"model": "", "documents": {}}


def save_groups(groups: dict[str, Any], path: str | Path) -> None:
    """Write the groups file (documents sorted by source, so a re-run gives a small diff)."""
    groups["documents"] = dict(sorted(groups["documents"].items()))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(groups, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def group_files(folder: str | Path) -> list[Path]:
    """The files of `folder` that get a group: those with a loader (`list_files` also lists the others, which
    indexing reports as unsupported)."""
    return [p for p in list_files(Path(folder)) if p.suffix.lower() in LOADERS]


def stale_sources(groups: dict[str, Any], folder: str | Path, model: str) -> dict[str, str]:
    """source -> why its entry must be (re)computed: "missing", "changed" (file hash differs), "other model" or
    "other prompt" (the prompt or schema changed since)."""
    stale = {}
    for path in group_files(folder):
        entry = groups["documents"].get(source_name(path))
        if entry is None:
            stale[source_name(path)] = "missing"
        elif entry["source_hash"] != content_hash(path.read_bytes()):
            stale[source_name(path)] = "changed"
        elif entry["model"] != model:
            stale[source_name(path)] = "other model"
        elif entry.get("prompt_hash") != prompt_hash():
            stale[source_name(path)] = "other prompt"
    return stale


def precompute(
    folder: str | Path, out: str | Path = DEFAULT_OUT, llm: BaseChatModel | None = None, model: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Derive a group per document of `folder` that lacks an up-to-date one, saving after each (resumable: an
    interrupted run keeps what it finished). An unreadable file, or a reply outside the schema, is reported and
    skipped."""
    if llm is None:
        from rag_lib.llm import get_chat_model

        llm = get_chat_model()
    model = model or configured_model()
    out = Path(out)
    groups = load_groups(out)
    groups["model"] = model
    todo = stale_sources(groups, folder, model)
    present = {source_name(p): p for p in group_files(folder)}
    groups["documents"] = {s: e for s, e in groups["documents"].items() if s in present}  # deleted files go
    save_groups(groups, out)
    bar = tqdm(sorted(todo), desc="node groups", unit="doc", disable=not progress)
    for source in bar:
        bar.set_postfix_str(Path(source).name)
        data = present[source].read_bytes()
        try:
            text = load_file(present[source], data).text
        except LoadError as error:
            tqdm.write(f"skipped {source}: {error}")
            continue
        started = time.perf_counter()
        try:
            group = derive_group(llm, text)
        except StructuredOutputError as error:  # stays stale: the next run tries again
            tqdm.write(f"skipped {source}: {error}")
            continue
        groups["documents"][source] = {
            "source_hash": content_hash(data), "model": model, "prompt_hash": prompt_hash(),
            "seconds": round(time.perf_counter() - started, 1), **group.model_dump(),
        }
        save_groups(groups, out)
    return groups


def group_rows(
    group: NodeGroup | dict, source: str, parent_id: str, level: str, title: str = "", text: str | None = None
) -> list[dict]:
    """The searchable rows of one group (no vectors yet): one summary, one keywords, one per QA pair; given the
    source `text`, only the QA pairs whose answer is `drawn_from` it (a small model invents some
    QA pairs; their rows are not indexed)."""
    group = group if isinstance(group, NodeGroup) else NodeGroup.model_validate(group)
    texts = [("summary", group.summary), ("keywords", ", ".join(group.keywords))]
    qa_pairs = [qa for qa in group.qa_pairs if text is None or drawn_from(qa.answer, text)]
    texts += [("qa", f"{qa.question}\n{qa.answer}") for qa in qa_pairs]
    texts = list(dict.fromkeys((kind, text.strip()) for kind, text in texts if text.strip()))  # one row per text
    return [
        make_row(source, text, id=chunk_id(f"{level}:{parent_id}", f"{kind}:{text}"), chunk_index=i,
            chunk_count=len(texts), parent_id=parent_id, title=title, kind=kind, level=level)
        for i, (kind, text) in enumerate(texts)
    ]


def document_rows(groups: dict[str, Any]) -> list[dict]:
    """Rows for every document-level group of a precomputed file, QA pairs checked against the document."""
    return [
        row for source, entry in groups["documents"].items()
        for row in group_rows(entry, source, document_id(source), "document",
                              text=load_file(PROJECT_ROOT / source).text)
    ]


def index_groups(
    client: MilvusClient, embeddings: Embeddings, rows: list[dict], collection: str = GROUP_COLLECTION
) -> int:
    """Embed the rows as passages and upsert them into the node-group collection; returns the row count."""
    if not rows:
        return 0
    ensure_collection_for(client, embeddings, collection)
    for entity, vector in zip(rows, embeddings.embed_documents([r["text"] for r in rows])):
        entity["dense"] = vector
    client.upsert(collection, rows)
    return len(rows)


def to_parents(
    client: MilvusClient, group_hits: list[Document], vector: list[float], chunk_collection: str
) -> list[Document]:
    """Map node-group hits to parent chunks, in the groups' rank order, each chunk once: a chunk-level group
    gives its chunk; a document-level group gives the document's chunk most similar to the query (`vector`).
    Each parent keeps the group's `score` and says `via` which group row it was found."""
    groups = [h.metadata for h in group_hits]
    chunk_ids = [g["parent_id"] for g in groups if g.get("level") == "chunk"]
    rows = client.get(chunk_collection, ids=chunk_ids, output_fields=OUTPUT_FIELDS) if chunk_ids else []
    by_id = {r["id"]: to_document(r) for r in rows}
    sources = list(dict.fromkeys(g["source"] for g in groups if g.get("level") == "document"))
    best_chunk: dict[str, Document] = {}
    if sources:
        where = field_filter("source", sources)
        for hit in search_by_vector(client, chunk_collection, vector, k=min(16 * len(sources), 1000), filter=where):
            best_chunk.setdefault(hit.metadata["source"], hit)  # hits come best first
    parents: dict[str, Document] = {}
    for hit, group in zip(group_hits, groups):
        parent = by_id.get(group["parent_id"]) if group.get("level") == "chunk" else best_chunk.get(group["source"])
        if parent is not None and parent.id not in parents:
            parents[parent.id] = with_metadata(parent, score=group["score"], via=f"{group['kind']}: {hit.page_content}")
    return list(parents.values())


class NodeGroupSearch:
    """A search path over node groups: dense search of the group rows, hits mapped back to parent chunks.

    Use it alone or as one path of `rag_lib.experiments.advanced.multi_path_search`.
    """

    def __init__(
        self, client: MilvusClient, embeddings: Embeddings, chunk_collection: str, collection: str = GROUP_COLLECTION,
        k: int = 4, candidates: int = 12,
    ) -> None:
        self.client, self.embeddings = client, embeddings
        self.chunk_collection, self.collection = chunk_collection, collection
        self.k, self.candidates = k, candidates  # several rows of one document often rank together: fetch more
        client.load_collection(collection)

    def groups(self, query: str, vector: list[float] | None = None) -> list[Document]:
        """The best-matching group rows themselves (summary / keywords / qa), best first."""
        vector = vector or self.embeddings.embed_query(query)
        return search_by_vector(self.client, self.collection, vector, self.candidates, output_fields=GROUP_FIELDS)

    def __call__(self, query: str) -> list[Document]:
        vector = self.embeddings.embed_query(query)
        return to_parents(self.client, self.groups(query, vector), vector, self.chunk_collection)[: self.k]


def main() -> None:
    """CLI: precompute the node groups of a folder into a JSON file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default=str(PROJECT_ROOT / "data" / "docs"), help="folder of documents")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="JSON file to create or update")
    args = parser.parse_args()
    groups = precompute(args.docs, args.out)
    print(f"{len(groups['documents'])} documents in {args.out} (model {groups['model']})")


if __name__ == "__main__":
    main()
