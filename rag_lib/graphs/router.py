"""The app's router graph: one chat box, four intents (save / retrieve / save_then_retrieve / unknown).

route -> save -> (retrieve) ; route -> retrieve -> answer | refuse -> (evaluate) ; route -> unknown

`route` makes one structured LLM call (`Route`) unless the request is empty. The 1.5B local model was measured
routing 5/12 to 6/12 requests with instructions alone (it picked the first or the longest label), and 21/24 with
nine examples given as earlier chat turns, so the examples are part of the prompt; llama.cpp reuses their
processed prefix on the next routing call. Everything else is read from the request without a model call:
chunking method and size, retrieval strategy, a file name to search in, the note text and the question
(`parse_options`, `split_note`). Explicit UI choices override what the request says.

`save` validates a document (name, type, size, content, duplicate), writes it into the upload folder and indexes
it into the shared collection (`rag_lib.index` row functions, one file at a time, so other files keep their
chunking). `retrieve` searches with the chosen strategy and the calibrated similarity cutoff; `answer` streams a
cited answer (`rag_lib.graphs.rag.answer_messages`); `evaluate` adds retrieval scores (no model) and one
structured LLM grade. LLM calls per request: route 1, answer 1, evaluate 1 (optional), HyDE +1 when asked for.
"""

from __future__ import annotations

import hashlib
import operator
import os
import re
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Annotated, Any, Iterator, Literal, TypedDict

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field
from pymilvus import MilvusClient

from rag_lib.advanced import OUTPUT_FIELDS, hypothetical_passage, search_by_vector
from rag_lib.chunking import Chunker
from rag_lib.graphs.rag import answer_messages, refusal_for
from rag_lib.index import check_source, chunk_rows, embed_rows, shown_name, write_file
from rag_lib.loaders import LoadError, load_file, max_file_bytes
from rag_lib.models import MAX_QUERY_CHARS, StructuredOutputError, cap_query, default_min_similarity, structured_output
from rag_lib.prompts import PASSAGE_RULE, fit_prompt, passage_block
from rag_lib.rerank import get_reranker
from rag_lib.retriever import Retriever, cosine, to_document
from rag_lib.store import DEFAULT_COLLECTION, ensure_collection, quote
from rag_lib.text import detect_language, split_sentences

Action = Literal["save", "retrieve", "save_then_retrieve", "unknown"]
UPLOAD_TYPES = (".md", ".txt", ".pdf")
CHUNKINGS = ("semantic", "fixed", "recursive", "markdown")
RETRIEVALS = ("hybrid", "dense", "bm25_rerank", "hyde")
DEFAULT_CHUNK_SIZE = 300
PARTIAL_NAME = ".{}.partial"  # an upload is written under this name first, then renamed over the real one
PASSAGE_CHARS = 300  # passages shown to the grader are cut here (prompt processing is the cost on CPU)

ROUTER_SYSTEM = (
    "You route messages sent to a document assistant. Actions:\n"
    "save - the message gives text or files to store and asks no question\n"
    "retrieve - the message asks a question to answer from the stored documents\n"
    "save_then_retrieve - the message gives text or files to store AND asks a question about them\n"
    "unknown - greetings, small talk, creative writing, or other tasks"
)
# (message, files attached, action): shown to the model as earlier chat turns
ROUTER_EXAMPLES = [
    ("Remember this: the gym opens at 6 am.", False, "save"),
    ("How do I reset my password?", False, "retrieve"),
    ("Good morning!", False, "unknown"),
    ("Note: Anna's extension is 4312. What is Anna's extension?", False, "save_then_retrieve"),
    ("请保存：项目预算是五万元。", False, "save"),
    ("LangGraph 的检查点保存在哪里？", False, "retrieve"),
    ("Write a haiku about the sea.", False, "unknown"),
    ("What does this contract say about penalties?", True, "save_then_retrieve"),
    ("Add these to the knowledge base.", True, "save"),
]
ROUTER_MAX_CHARS = 400  # a long note costs prompt time; its start and end tell the intent

GRADE_PROMPT = (
    "Grade the answer from 1 (poor) to 5 (excellent).\n"
    "faithfulness: every statement is supported by the passages\n"
    "relevance: the answer addresses the question\n"
    "completeness: the answer gives everything the question asks for\n"
    + PASSAGE_RULE
    + "\n\nPassages:\n{passages}\n\nQuestion: {question}\nAnswer: {answer}"
)
HELP = {
    "en": (
        "I keep your documents and answer questions from them, citing the sources.\n"
        "- **Save**: upload .md, .txt or .pdf files, or write \"Save this note: ...\". You may ask for a chunking "
        "method (semantic, fixed, recursive, markdown) and size, e.g. \"fixed chunks of 200 characters\".\n"
        "- **Ask**: \"What does the refund policy say about returns?\"; name a file to search only it "
        "(\"... in policy.md\"); ask for HyDE, BM25 + rerank, dense or hybrid search.\n"
        "- **Both**: \"Remember: the VPN server is vpn2. Which VPN server do we use?\"\n"
        "{count} file(s) are indexed now."
    ),
    "zh": (
        "我可以保存你的文档，并根据文档回答问题、注明来源。\n"
        "- **保存**：上传 .md、.txt 或 .pdf 文件，或输入「请保存：……」；可指定切分方法（semantic、fixed、recursive、"
        "markdown）和长度，例如「按 200 字固定切分」。\n"
        "- **提问**：直接提问；写出文件名（如 policy.md）只在该文件中检索；可要求 HyDE、BM25 + 重排、向量或混合检索。\n"
        "- **先存后问**：「记住：VPN 服务器是 vpn2。我们用哪个 VPN 服务器？」\n"
        "当前已索引 {count} 个文件。"
    ),
}

# "Save this:", "Please store this with fixed chunks:", "请按 200 字切分保存：": a save verb, then a colon
_COMMAND = re.compile(
    r"^[^:：\n]{0,40}?(?:\b(?:save|store|remember|index|add|keep|note)\b|记住|保存|存储|记录|记下|存下)[^:：\n]*[:：]\s*",
    re.IGNORECASE,
)
_CHUNKING = [
    re.compile(r"\b(semantic|fixed|recursive|markdown)\b[\s-]*(?:size[\s-]*)?chunk", re.IGNORECASE),
    re.compile(r"\bchunk\w*\s+(?:it\s+|them\s+)?(?:by|with|using)\s+(semantic|fixed|recursive|markdown)\b", re.IGNORECASE),
    re.compile(r"(语义|固定|递归|标题|markdown)\s*(?:长度)?\s*(?:切分|分块|切块)", re.IGNORECASE),
]
_CHUNKING_ZH = {"语义": "semantic", "固定": "fixed", "递归": "recursive", "标题": "markdown"}
_CHUNK_SIZE = [
    re.compile(r"(\d{2,5})[\s-]*(?:char(?:acter)?s?|字)", re.IGNORECASE),
    re.compile(r"chunk[\s_-]*size\s*(?:=|:|of)?\s*(\d{2,5})", re.IGNORECASE),
    re.compile(r"chunks?\s+of\s+(\d{2,5})", re.IGNORECASE),
]
# "Using BM25 with rerank, how ...?" -> "how ...?": the strategy words would only add noise to the search
_STRATEGY_CLAUSE = re.compile(
    r"^\s*(?:please\s+)?(?:(?:using|use|with|via|by)\s|请?用|使用|通过)[^,:;，：；?？]{0,60}[,:;，：；]\s*", re.IGNORECASE
)
_RETRIEVAL = [
    ("hyde", re.compile(r"\bhyde\b", re.IGNORECASE)),
    ("bm25_rerank", re.compile(r"\bbm25\b|\brerank|\bkeyword search|关键词|重排", re.IGNORECASE)),
    ("dense", re.compile(r"\bdense (?:search|retrieval)|\b(?:vector|embedding) search|向量检索", re.IGNORECASE)),
    ("hybrid", re.compile(r"\bhybrid (?:search|retrieval)|multi-?path|混合检索|多路", re.IGNORECASE)),
]


class UploadError(ValueError):
    """A document cannot be saved; the message names the file and the reason, and nothing was changed."""


class Route(BaseModel):
    """The action for the message."""

    action: Action


class AnswerGrade(BaseModel):
    """LLM grades of one answer, 1 (poor) to 5 (excellent)."""

    faithfulness: int = Field(ge=1, le=5, description="supported by the passages")
    relevance: int = Field(ge=1, le=5, description="addresses the question")
    completeness: int = Field(ge=1, le=5, description="gives everything the question asks for")


@dataclass(frozen=True)
class Options:
    """What the request (or the UI) asks for besides the action."""

    chunking: str | None = None  # one of CHUNKINGS
    chunk_size: int | None = None
    retrieval: str | None = None  # one of RETRIEVALS
    files: tuple[str, ...] = ()  # indexed sources the request names


@dataclass(frozen=True)
class Saved:
    """The outcome of saving one document."""

    name: str
    status: Literal["indexed", "updated", "duplicate", "error"]
    source: str = ""
    chunks: int = 0
    language: str = ""
    chunking: str = ""
    message: str = ""


class AppState(TypedDict, total=False):
    request: str
    files: list[str]  # paths of documents to save with this request
    chunking: str  # "auto" or one of CHUNKINGS (a UI choice overrides the request)
    chunk_size: int | None
    retrieval: str  # "auto" or one of RETRIEVALS
    evaluate: bool
    action: Action
    routed_by: str  # "model" or "rule"
    options: Options
    note: str  # text to save from the request
    question: str
    saved: list[Saved]
    strategy: dict  # requested / used retrieval, filter, and why
    documents: list[Document]
    answer: str
    scores: dict
    llm_calls: Annotated[int, operator.add]
    notes: Annotated[list[str], operator.add]


# ---------------------------------------------------------------- reading the request (no model calls)


def parse_options(request: str, indexed_sources: list[str] = ()) -> Options:
    """Chunking method and size, retrieval strategy and named files, found by patterns in the request."""
    chunking = next((m.group(1).lower() for p in _CHUNKING if (m := p.search(request))), None)
    chunking = _CHUNKING_ZH.get(chunking, chunking)
    size = next((int(m.group(1)) for p in _CHUNK_SIZE if (m := p.search(request))), None)
    retrieval = next((name for name, p in _RETRIEVAL if p.search(request)), None)
    lowered = request.lower()
    files = tuple(s for s in indexed_sources if Path(s).name.lower() in lowered)
    return Options(chunking, size, retrieval, files)


def split_note(request: str) -> tuple[str, str]:
    """(text to save, question): a leading "save this:" is dropped; a last sentence ending in "?" is the question."""
    body = _COMMAND.sub("", request, count=1).strip()
    sentences = split_sentences(body)
    if sentences and sentences[-1].endswith(("?", "？")):
        question = sentences[-1]
        return body[: body.rfind(question)].strip(), question
    return body, ""


def search_question(question: str) -> str:
    """The question without a leading "Using HyDE," / "用向量检索：" clause that names the search strategy."""
    match = _STRATEGY_CLAUSE.match(question)
    if match and any(p.search(match.group(0)) for _, p in _RETRIEVAL):
        return question[match.end():].strip() or question
    return question


def router_messages(request: str, has_files: bool) -> list:
    """System prompt, the examples as earlier chat turns, then the request (long ones cut in the middle)."""
    if len(request) > ROUTER_MAX_CHARS:
        half = ROUTER_MAX_CHARS // 2
        request = f"{request[:half]} ... {request[-half:]}"

    def turn(text: str, files: bool) -> HumanMessage:
        return HumanMessage(f"Files attached: {'yes' if files else 'none'}\nMessage: {text}")

    messages: list = [SystemMessage(ROUTER_SYSTEM)]
    for text, files, action in ROUTER_EXAMPLES:
        messages += [turn(text, files), AIMessage(f'{{"action": "{action}"}}')]
    return messages + [turn(request, has_files)]


def structured(llm: BaseChatModel, schema: type[BaseModel]) -> Any:
    """`rag_lib.models.structured_output(llm, schema)`: never streamed (in a graph streamed with
    stream_mode="messages" a streamed llama.cpp tool call repeats the tool name in every chunk, and the merged call
    no longer parses); a reply outside the schema raises StructuredOutputError."""
    return structured_output(llm, schema)


def route_request(llm: BaseChatModel, request: str, has_files: bool = False) -> Action:
    """The model's action for a request (one structured call); StructuredOutputError when its reply is unusable."""
    return structured(llm, Route).invoke(router_messages(request, has_files)).action


def fallback_action(request: str) -> Action:
    """The action when the model's route is unusable: a question is answered from the documents, anything else
    gets the help text (nothing is stored on a guess)."""
    return "retrieve" if split_note(request)[1] or request.rstrip().endswith(("?", "？")) else "unknown"


# ---------------------------------------------------------------- saving documents


def safe_name(name: str) -> str:
    """The file name to store an upload under: the base name only; `..`, absolute paths and hidden names refused."""
    raw = name.replace("\\", "/").strip()
    if not raw:
        raise UploadError("the file has no name")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise UploadError(f"{name!r}: absolute paths are not accepted; upload the file itself")
    if ".." in raw.split("/"):
        raise UploadError(f"{name!r}: '..' in a file name would leave the upload folder")
    base = raw.split("/")[-1].strip()
    if not base:
        raise UploadError(f"{name!r}: no file name after the last '/'")
    if base.startswith("."):
        raise UploadError(f"{base!r}: hidden file names (starting with '.') are not accepted")
    try:
        check_source(base)  # not UTF-8, or control characters
    except LoadError as error:
        raise UploadError(str(error)) from None
    return base


def name_limit(folder: Path) -> int:
    """The longest upload name, in bytes, that `folder`'s file system takes, leaving room for PARTIAL_NAME."""
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    return os.pathconf(existing, "PC_NAME_MAX") - len(PARTIAL_NAME.format(""))


def content_hash(data: bytes) -> str:
    """Identifies a document's content whatever its name or chunking (duplicate detection)."""
    return hashlib.sha256(data).hexdigest()[:32]


def check_upload(name: str, data: bytes) -> tuple[str, str]:
    """(safe file name, its text), or UploadError: bad name, wrong type, empty, oversize or unreadable."""
    base = safe_name(name)
    suffix = Path(base).suffix.lower()
    if suffix not in UPLOAD_TYPES:
        raise UploadError(f"{base}: unsupported file type {suffix or '(none)'!r}; upload {', '.join(UPLOAD_TYPES)} files")
    if not data.strip():
        raise UploadError(f"{base}: the file is empty")
    limit = max_file_bytes()
    if len(data) > limit:
        raise UploadError(f"{base}: {len(data) / 2**20:.1f} MB is over the {limit / 2**20:g} MB limit (RAG_MAX_FILE_MB)")
    try:
        return base, load_file(Path(base), data).text
    except LoadError as error:
        raise UploadError(str(error)) from error


def choose_chunker(chunking: str | None, chunk_size: int | None, name: str) -> Chunker:
    """The requested chunker, else markdown headers for .md files and the recursive split for the rest."""
    strategy = chunking or ("markdown" if name.lower().endswith(".md") else "recursive")
    size = min(max(chunk_size or DEFAULT_CHUNK_SIZE, 50), 4000)
    return Chunker(strategy, size, min(50, size // 4))


def find_duplicate(client: MilvusClient, collection: str, digest: str) -> str | None:
    """The source already indexed with this content, if any."""
    if not client.has_collection(collection):
        return None
    rows = client.query(collection, filter=f"content_sha256 == {quote(digest)}", output_fields=["source"], limit=1)
    return rows[0]["source"] if rows else None


def save_document(
    client: MilvusClient,
    embeddings: Embeddings,
    upload_dir: Path,
    name: str,
    data: bytes,
    chunking: str | None = None,
    chunk_size: int | None = None,
    collection: str = DEFAULT_COLLECTION,
) -> Saved:
    """Check one document, write it into `upload_dir` and index it; a refused document changes nothing."""
    try:
        base, text = check_upload(name, data)
    except UploadError as error:
        return Saved(shown_name(Path(name.replace("\\", "/")).name or name), "error", message=str(error))
    upload_dir, size = Path(upload_dir).resolve(), len(base.encode())
    if size > name_limit(upload_dir):
        return Saved(base, "error", message=f"{base}: the name is {size} bytes, over the {name_limit(upload_dir)} "
                     "the upload folder takes; rename the file shorter")
    target = upload_dir / base
    if target.resolve().parent != upload_dir:  # e.g. an existing symlink pointing elsewhere
        return Saved(base, "error", message=f"{base}: this name points outside the upload folder")
    digest = content_hash(data)
    duplicate = find_duplicate(client, collection, digest)
    if duplicate:
        return Saved(base, "duplicate", source=duplicate, message=f"{base}: the same content is already indexed as "
                     f"{Path(duplicate).name}; nothing changed")
    chunker = choose_chunker(chunking, chunk_size, base)
    label = f"{chunker.strategy}/{chunker.chunk_size}"
    language = detect_language(text)
    try:
        rows = chunk_rows(target, chunker, embeddings, data)
    except LoadError as error:
        return Saved(base, "error", message=str(error))
    for row in rows:
        row |= {"content_sha256": digest, "chunking": label, "file_language": language}
    embed_rows(rows, embeddings)
    ensure_collection(client, len(rows[0]["dense"]), collection)
    partial = upload_dir / PARTIAL_NAME.format(base)
    try:
        upload_dir.mkdir(parents=True, exist_ok=True)
        previous = target.read_bytes() if target.exists() else None
        partial.write_bytes(data)
        os.replace(partial, target)
    except OSError as error:  # disk full, no permission...: this file is reported, a batch goes on
        partial.unlink(missing_ok=True)
        return Saved(base, "error", message=f"{base}: cannot be written to the upload folder ({error.strerror}); "
                     "nothing changed")
    try:
        write_file(client, collection, rows)
    except Exception:  # put the folder back as it was, then report the database error
        if previous is None:
            target.unlink()
        else:
            target.write_bytes(previous)
        raise
    status = "updated" if previous is not None else "indexed"
    return Saved(base, status, rows[0]["source"], len(rows), language, label,
                 f"{base}: {status}, {len(rows)} chunk{'s' * (len(rows) != 1)} ({label}), language {language}")


def save_upload(
    client: MilvusClient,
    embeddings: Embeddings,
    upload_dir: Path,
    path: str | Path,
    chunking: str | None = None,
    chunk_size: int | None = None,
    collection: str = DEFAULT_COLLECTION,
) -> Saved:
    """`save_document` for an uploaded file on disk: one over the size limit is refused unread, and one that cannot
    be read is reported, so a bad file in a batch never stops the others."""
    path = Path(path)
    name = shown_name(path.name)
    try:
        size, limit = path.stat().st_size, max_file_bytes()
        if size > limit:
            return Saved(name, "error", message=f"{name}: {size / 2**20:.1f} MB is over the {limit / 2**20:g} MB "
                         "limit (RAG_MAX_FILE_MB); nothing changed")
        data = path.read_bytes()
    except OSError as error:
        return Saved(name, "error", message=f"{name}: cannot be read ({error.strerror}); nothing changed")
    return save_document(client, embeddings, upload_dir, path.name, data, chunking, chunk_size, collection)


def indexed_documents(client: MilvusClient, collection: str = DEFAULT_COLLECTION) -> list[dict]:
    """One row per indexed file (read from Milvus, so the list survives restarts): file, chunks, language, chunking."""
    if not client.has_collection(collection):
        return []
    rows = client.query(
        collection, filter="chunk_index == 0", limit=16384,
        output_fields=["source", "chunk_count", "language", "file_language", "chunking"],
    )
    return sorted(
        ({"file": Path(r["source"]).name, "chunks": r["chunk_count"], "language": r.get("file_language", r["language"]),
          "chunking": r.get("chunking", "?"), "source": r["source"]} for r in rows),
        key=lambda r: r["file"].lower(),
    )


# ---------------------------------------------------------------- retrieval and evaluation


def source_filter(sources: list[str] | tuple[str, ...]) -> str:
    """A Milvus filter expression keeping only these sources ('' = no filter)."""
    return f"source in [{', '.join(quote(s) for s in sources)}]" if sources else ""


def search(
    client: MilvusClient,
    embeddings: Embeddings,
    llm: BaseChatModel,
    question: str,
    strategy: str,
    filter: str = "",
    k: int = 3,
    min_similarity: float | None = None,
    collection: str = DEFAULT_COLLECTION,
) -> tuple[list[Document], str, int]:
    """Documents for `question` with one strategy: (documents, what was used, LLM calls made).

    Every Document has `similarity`, the cosine between the question and the chunk, whatever the strategy, so the
    cutoff and the evaluation mean the same thing for all of them.
    """
    if strategy == "hyde":
        passage = hypothetical_passage(llm, question)
        vector = embeddings.embed_documents([passage])[0]
        hits = search_by_vector(client, collection, vector, k, filter, [*OUTPUT_FIELDS, "dense"])
        query = embeddings.embed_query(question)
        for hit in hits:
            hit["similarity"] = cosine(query, hit.pop("dense"))
        hits = [h for h in hits if min_similarity is None or h["similarity"] >= min_similarity]
        return [to_document(h) for h in hits], f"HyDE: dense search with a hypothetical passage ({passage[:80]}...)", 1
    settings: dict[str, Any] = {
        "hybrid": {"search_type": "hybrid", "ranker": "rrf"},
        "dense": {"search_type": "dense"},
        "bm25_rerank": {"search_type": "sparse", "ranker": "model", "reranker": get_reranker(embeddings)},
    }[strategy]
    retriever = Retriever(client=client, embeddings=embeddings, collection=collection, k=k, filter=filter,
                          min_similarity=min_similarity, **settings)
    used = {
        "hybrid": "hybrid: dense + BM25 fused with RRF in Milvus",
        "dense": "dense: e5 vectors, HNSW",
        "bm25_rerank": f"BM25, then {type(retriever.reranker).__name__} on the top {retriever.candidates}",
    }[strategy]
    return retriever.invoke(question), used, 0


def retrieval_scores(client: MilvusClient, documents: list[Document], collection: str = DEFAULT_COLLECTION) -> dict:
    """Mean similarity to the query, and diversity = 1 - mean pairwise cosine between the retrieved chunks."""
    if not documents:
        return {}
    vectors = {r["id"]: r["dense"] for r in client.get(collection, ids=[d.id for d in documents], output_fields=["dense"])}
    pairs = [cosine(vectors[a.id], vectors[b.id]) for a, b in combinations(documents, 2)]
    return {
        "mean_similarity": float(np.mean([d.metadata["similarity"] for d in documents])),
        "diversity": 1.0 - float(np.mean(pairs)) if pairs else None,
    }


def grade_answer(llm: BaseChatModel, question: str, documents: list[Document], answer: str) -> AnswerGrade:
    """One structured LLM call grading faithfulness, relevance and completeness from 1 to 5 (StructuredOutputError
    when the reply is unusable)."""

    def prompt(question: str, documents: list[Document]) -> list:
        passages = "\n".join(passage_block(i, d.page_content[:PASSAGE_CHARS]) for i, d in enumerate(documents, 1))
        return [HumanMessage(GRADE_PROMPT.format(passages=passages, question=question, answer=answer))]

    return structured(llm, AnswerGrade).invoke(prompt(*fit_prompt(llm, prompt, question, documents)))


# ---------------------------------------------------------------- the graph


def build_router_graph(
    client: MilvusClient,
    embeddings: Embeddings,
    llm: BaseChatModel,
    upload_dir: str | Path,
    collection: str = DEFAULT_COLLECTION,
    k: int = 3,
    min_similarity: float | None | Literal["default"] = "default",
) -> CompiledStateGraph:
    """The app's graph. Input: `request` (+ optional `files`, `chunking`, `chunk_size`, `retrieval`, `evaluate`).
    Stream with stream_mode="messages" and keep the tokens of node "answer" to show the answer as it is written."""
    cutoff = default_min_similarity() if min_similarity == "default" else min_similarity
    upload_dir = Path(upload_dir)

    def route(state: AppState) -> AppState:
        request, files = state.get("request", "").strip(), state.get("files") or []
        known = [d["source"] for d in indexed_documents(client, collection)]
        parsed = parse_options(request, known)
        ui_size = state.get("chunk_size")
        options = Options(
            chunking=state.get("chunking") if state.get("chunking") not in (None, "auto") else parsed.chunking,
            chunk_size=ui_size or parsed.chunk_size,
            retrieval=state.get("retrieval") if state.get("retrieval") not in (None, "auto") else parsed.retrieval,
            files=parsed.files,
        )
        notes = []
        if not request:
            action, by, calls = ("save" if files else "unknown"), "rule", 0
        else:
            try:
                action, by, calls = route_request(llm, request, bool(files)), "model", 1
            except StructuredOutputError as error:
                action, by, calls = fallback_action(request), "rule", 1
                notes.append(f"the router's reply was unusable ({error}): {action!r} by rule")
        if files and action in ("retrieve", "unknown"):  # given files are always stored
            notes.append(f"the model said {action!r}, but files were given: they are saved first")
            action, by = ("save_then_retrieve" if action == "retrieve" else "save"), "model+rule"
        note, question = ("", request) if files else split_note(request)
        if action == "save_then_retrieve" and not question:
            notes.append("no question found after the text to save (end it with '?'): saved only")
            action, by = "save", "model+rule"
        if action == "save":
            note, question = ("" if files else _COMMAND.sub("", request, count=1).strip()), ""
        if action == "retrieve":
            note, question = "", request
        if action == "unknown":
            note, question = "", ""
        question = search_question(question)
        if len(question) > MAX_QUERY_CHARS:  # every character costs embedding and prompt time
            notes.append(f"the question is {len(question):,} characters long: only its first {MAX_QUERY_CHARS:,} "
                         "were used; to ask about a long text, save it as a note or a file first")
            question = cap_query(question)
        return {"action": action, "routed_by": by, "options": options, "note": note, "question": question,
                "llm_calls": calls, "notes": notes}

    def save(state: AppState) -> AppState:
        options = state["options"]
        saved = [save_upload(client, embeddings, upload_dir, path, options.chunking, options.chunk_size, collection)
                 for path in state.get("files") or []]
        if state.get("note"):
            data = state["note"].encode("utf-8")
            saved.append(save_document(client, embeddings, upload_dir, f"note_{content_hash(data)[:10]}.txt", data,
                                       options.chunking, options.chunk_size, collection))
        if not saved:
            saved = [Saved("(nothing)", "error", message="there was no text or file to save: write it after 'Save this:'")]
        if state["action"] == "save" or not any(s.source for s in saved):  # nothing to answer from
            return {"saved": saved, "answer": "\n".join(s.message for s in saved)}
        return {"saved": saved}

    def retrieve(state: AppState) -> AppState:
        options, question = state["options"], state["question"]
        if state["action"] == "save_then_retrieve":
            sources = tuple(s.source for s in state.get("saved", []) if s.source)
            why = "the documents just saved"
        else:
            sources, why = options.files, "files named in the request"
        requested = options.retrieval or "hybrid"
        strategy = {"requested": requested, "filter": source_filter(sources), "filter_reason": why if sources else ""}
        if not client.has_collection(collection):
            return {"documents": [], "strategy": strategy, "notes": ["nothing is indexed yet: upload files or save a note"]}
        documents, used, calls = search(client, embeddings, llm, question, requested, strategy["filter"], k, cutoff,
                                        collection)
        return {"documents": documents, "strategy": strategy | {"used": used}, "llm_calls": calls}

    def answer(state: AppState) -> AppState:
        reply = llm.invoke(answer_messages(state["question"], state["documents"], llm))
        return {"answer": str(reply.content).strip(), "llm_calls": 1}

    def refuse(state: AppState) -> AppState:
        return {"answer": refusal_for(state["question"])}

    def evaluate(state: AppState) -> AppState:
        """Retrieval scores and the LLM grade; an unusable grade leaves the grades None (the answer stands)."""
        scores = retrieval_scores(client, state["documents"], collection)
        try:
            grade = grade_answer(llm, state["question"], state["documents"], state["answer"]).model_dump()
        except StructuredOutputError as error:
            grade = dict.fromkeys(AnswerGrade.model_fields)
            return {"scores": scores | grade, "llm_calls": 1, "notes": [f"LLM evaluation unavailable: {error}"]}
        return {"scores": scores | grade, "llm_calls": 1}

    def unknown(state: AppState) -> AppState:
        count = len(indexed_documents(client, collection))
        return {"answer": HELP[detect_language(state.get("request", ""))].format(count=count)}

    def after_route(state: AppState) -> str:
        return {"save_then_retrieve": "save"}.get(state["action"], state["action"])

    def after_save(state: AppState) -> str:
        return "retrieve" if state["action"] == "save_then_retrieve" and not state.get("answer") else END

    def after_retrieve(state: AppState) -> str:
        return "answer" if state["documents"] else "refuse"

    def after_answer(state: AppState) -> str:
        return "evaluate" if state.get("evaluate") else END

    graph = StateGraph(AppState)
    for name, node in [("route", route), ("save", save), ("retrieve", retrieve), ("answer", answer),
                       ("refuse", refuse), ("evaluate", evaluate), ("unknown", unknown)]:
        graph.add_node(name, node)
    graph.add_edge(START, "route")
    graph.add_conditional_edges("route", after_route, ["save", "retrieve", "unknown"])
    graph.add_conditional_edges("save", after_save, ["retrieve", END])
    graph.add_conditional_edges("retrieve", after_retrieve, ["answer", "refuse"])
    graph.add_conditional_edges("answer", after_answer, ["evaluate", END])
    for name in ("refuse", "evaluate", "unknown"):
        graph.add_edge(name, END)
    return graph.compile()


def stream_request(graph: CompiledStateGraph, request: str, **inputs: Any) -> Iterator[tuple[str, Any]]:
    """Run one request: yields ("node", name) as each node finishes, ("token", text) for the answer as it is
    written, and finally ("done", final state)."""
    final: dict = {}
    for mode, payload in graph.stream({"request": request, **inputs}, stream_mode=["messages", "updates", "values"]):
        if mode == "messages":
            chunk, meta = payload
            if meta.get("langgraph_node") == "answer" and chunk.content:
                yield "token", chunk.content
        elif mode == "updates":
            for name in payload:
                yield "node", name
        else:
            final = payload
    yield "done", final
