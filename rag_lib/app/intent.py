"""What a chat request asks for: the action (save / retrieve / save_then_retrieve / unknown) and the options.

The action comes from one structured LLM call (`route_request`). The 1.5B local model routes poorly from
instructions alone (it picks the first or the longest label) and well with examples given as earlier chat turns,
so the examples are part of the prompt; llama.cpp reuses their processed prefix on the next routing call.
Everything else is read from the request without a model call: chunking method and size, retrieval strategy, a
file name to search in, the note text and the question (`parse_options`, `split_note`). Explicit UI choices override
what the request says (`chosen_options`), and a few rules correct the model's action (`decide_route`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from rag_lib.embeddings import MAX_QUERY_CHARS, cap_query
from rag_lib.structured import StructuredOutputError, structured_output
from rag_lib.text import CJK_CHARS, split_sentences

Action = Literal["save", "retrieve", "save_then_retrieve", "unknown"]

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

HELP = {
    "en": (
        "I keep your documents and answer questions from them, citing the sources.\n"
        "- **Save**: upload .md, .txt or .pdf files, or write \"Save this note: ...\". You may ask for a chunking "
        "method (semantic, fixed, recursive, markdown) and size, e.g. \"fixed chunks of 200 characters\".\n"
        "- **Ask**: \"What does the refund policy say about returns?\"; name a file to search only it "
        "(\"... in policy.md\"); ask for HyDE, BM25 (keyword), dense or hybrid search.\n"
        "- **Both**: \"Remember: the VPN server is vpn2. Which VPN server do we use?\"\n"
        "{count} file(s) are indexed now."
    ),
    "zh": (
        "我可以保存你的文档，并根据文档回答问题、注明来源。\n"
        "- **保存**：上传 .md、.txt 或 .pdf 文件，或输入「请保存：……」；可指定切分方法（semantic、fixed、recursive、"
        "markdown）和长度，例如「按 200 字固定切分」。\n"
        "- **提问**：直接提问；写出文件名（如 policy.md）只在该文件中检索；"
        "可要求 HyDE、BM25（关键词）、向量或混合检索。\n"
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
    re.compile(r"\bchunk\w*\s+(?:it\s+|them\s+)?(?:by|with|using)\s+(semantic|fixed|recursive|markdown)\b",
               re.IGNORECASE),
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
    r"^\s*(?:please\s+)?(?:(?:using|use|with|via|by)\s|请?用|使用|通过)[^,:;，：；?？]{0,60}[,:;，：；]\s*",
    re.IGNORECASE,
)
_RETRIEVAL = [
    ("hyde", re.compile(r"\bhyde\b", re.IGNORECASE)),
    ("bm25", re.compile(r"\bbm25\b|\bkeyword search|关键词", re.IGNORECASE)),
    ("dense", re.compile(r"\bdense (?:search|retrieval)|\b(?:vector|embedding) search|向量检索", re.IGNORECASE)),
    ("hybrid", re.compile(r"\bhybrid (?:search|retrieval)|multi-?path|混合检索|多路", re.IGNORECASE)),
]


class Route(BaseModel):
    """The action for the message."""

    action: Action


@dataclass(frozen=True)
class Options:
    """What the request (or the UI) asks for besides the action."""

    chunking: str | None = None  # one of rag_lib.app.uploads.CHUNKINGS
    chunk_size: int | None = None
    retrieval: str | None = None  # one of rag_lib.app.strategies.RETRIEVALS
    files: tuple[str, ...] = ()  # indexed sources the request names


@dataclass(frozen=True)
class Routing:
    """What `decide_route` settled for one request."""

    action: Action
    routed_by: str  # "model", "rule", or "model+rule" (the model's action corrected by a rule)
    note: str  # text to save from the request
    question: str  # what to search for and answer
    llm_calls: int
    notes: list[str]  # what a rule changed, and why (shown to the user)


# ---------------------------------------------------------------- reading the request (no model calls)


def parse_options(request: str, indexed_sources: list[str] = ()) -> Options:
    """Chunking method and size, retrieval strategy and named files, found by patterns in the request."""
    chunking = next((m.group(1).lower() for p in _CHUNKING if (m := p.search(request))), None)
    chunking = _CHUNKING_ZH.get(chunking, chunking)
    size = next((int(m.group(1)) for p in _CHUNK_SIZE if (m := p.search(request))), None)
    retrieval = next((name for name, p in _RETRIEVAL if p.search(request)), None)
    return Options(chunking, size, retrieval, named_files(request, indexed_sources))


def named_files(request: str, sources: Iterable[str]) -> tuple[str, ...]:
    """The sources whose file name the request spells out whole, case-blind: `a.md` is not named by "data.md" or
    "a.md.bak", nor by "旧a.md" when that is a source too; "在 a.md 里", "(a.md)" and "a.md?" name it."""
    lowered = request.lower()
    found = {s: [m.span() for m in re.finditer(_whole_name(Path(s).name.lower()), lowered)] for s in sources}
    spans = {span for spans in found.values() for span in spans}

    def inside_longer(span: tuple[int, int]) -> bool:
        return any(o[0] <= span[0] and span[1] <= o[1] and o != span for o in spans)

    return tuple(s for s, spans in found.items() if any(not inside_longer(span) for span in spans))


def _whole_name(name: str) -> str:
    """A pattern for `name` not inside a longer word: no letter, digit, `_`, `-` or `.` next to it (CJK characters
    may be, since Chinese has no spaces), nor an extension after it."""
    return rf"(?<![^\W{CJK_CHARS}])(?<![.\-]){re.escape(name)}(?![^\W{CJK_CHARS}]|-|\.[^\W{CJK_CHARS}])"


def chosen_options(
    request: str,
    indexed_sources: list[str],
    chunking: str | None = None,
    chunk_size: int | None = None,
    retrieval: str | None = None,
) -> Options:
    """`parse_options`, with the UI's explicit choices first ("auto" or None: the request decides)."""
    parsed = parse_options(request, indexed_sources)
    return Options(
        chunking=chunking if chunking not in (None, "auto") else parsed.chunking,
        chunk_size=chunk_size or parsed.chunk_size,
        retrieval=retrieval if retrieval not in (None, "auto") else parsed.retrieval,
        files=parsed.files,
    )


def save_text(request: str) -> str:
    """The request without a leading "Save this:" command: the text to save."""
    return _COMMAND.sub("", request, count=1).strip()


def split_note(request: str) -> tuple[str, str]:
    """(text to save, question): a leading "save this:" is dropped; a last sentence ending in "?" is the question."""
    body = save_text(request)
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


# ---------------------------------------------------------------- the action


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


def route_request(llm: BaseChatModel, request: str, has_files: bool = False) -> Action:
    """The model's action for a request (one structured call); StructuredOutputError when its reply is unusable."""
    return structured_output(llm, Route).invoke(router_messages(request, has_files)).action


def fallback_action(request: str) -> Action:
    """The action when the model's route is unusable: a question is answered from the documents, anything else
    gets the help text (nothing is stored on a guess)."""
    return "retrieve" if split_note(request)[1] or request.rstrip().endswith(("?", "？")) else "unknown"


def first_route(llm: BaseChatModel, request: str, has_files: bool) -> tuple[Action, str, int, list[str]]:
    """(action, routed_by, LLM calls, notes): the model's action, or a rule's when the request is empty (no call)
    or the model's reply is unusable."""
    if not request:
        return ("save" if has_files else "unknown"), "rule", 0, []
    try:
        return route_request(llm, request, has_files), "model", 1, []
    except StructuredOutputError as error:
        action = fallback_action(request)
        return action, "rule", 1, [f"the router's reply was unusable ({error}): {action!r} by rule"]


def decide_route(llm: BaseChatModel, request: str, has_files: bool) -> Routing:
    """The action, the text to save and the question for one request: `first_route`, corrected by rules (given files
    are always saved; a note followed by a question is saved, then answered; save_then_retrieve needs a question),
    each action keeping only the text it uses, and an over-long question cut."""
    action, by, calls, notes = first_route(llm, request, has_files)
    if has_files and action in ("retrieve", "unknown"):  # given files are always stored
        notes.append(f"the model said {action!r}, but files were given: they are saved first")
        action, by = ("save_then_retrieve" if action == "retrieve" else "save"), "model+rule"
    note, question = ("", request) if has_files else split_note(request)
    if action == "save" and note and question:  # "Save this: ... . Which ...?" asks too
        notes.append("the model said 'save', but a question follows the text to save: it is answered after saving")
        action, by = "save_then_retrieve", "model+rule"
    if action == "save_then_retrieve" and not question:
        notes.append("no question found after the text to save (end it with '?'): saved only")
        action, by = "save", "model+rule"
    if action == "save":
        note, question = ("" if has_files else save_text(request)), ""
    elif action == "retrieve":
        note, question = "", request
    elif action == "unknown":
        note, question = "", ""
    question = search_question(question)
    if len(question) > MAX_QUERY_CHARS:  # every character costs embedding and prompt time
        notes.append(f"the question is {len(question):,} characters long: only its first {MAX_QUERY_CHARS:,} "
                     "were used; to ask about a long text, save it as a note or a file first")
        question = cap_query(question)
    return Routing(action, by, note, question, calls, notes)
