"""Long-term memory: what a user told the app in one conversation, found again in any other.

Facts live in a LangGraph `Store` under ("memories", user_id) with an embedding index, so `recall` finds the ones
relevant to a question whichever thread told them; `open_memory_store` keeps them in SQLite (sqlite-vec). A rule, not
a model, picks what to keep (`statements`): sentences in which the user states something about themselves or their
team ("My team uses Milvus 2.5.", "我们团队用的是 Milvus 2.5。"), not questions or requests. Each can be forgotten.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict

import sqlean
from langchain_core.embeddings import Embeddings
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, Item, SearchItem
from langgraph.store.sqlite import SqliteStore

from rag_lib.embeddings import cap_query, embed_queries
from rag_lib.prompts import TOLD_BY_THE_USER
from rag_lib.text import split_sentences, tokenize

# Cosine similarity (e5 query role on both sides) at or above which a fact is recalled, for multilingual-e5-small;
# chosen on the CALIBRATION_* examples of tests/test_memory.py. Other embeddings need their own.
MIN_SCORE = 0.86
RECALL_LIMIT = 3  # facts recalled per question at most
LIST_LIMIT = 200  # facts `memories` lists at most
MAX_FACT_CHARS = 300  # a longer sentence is a pasted text, not a fact about the user
MAX_MESSAGE_CHARS = 500  # of the message a fact was taken from, kept beside it
MIN_FACT_TOKENS = 3  # content words a fact needs: "I see." / "I got it." say nothing worth keeping
MARKER = re.compile(r"^\s*(?:please\s+)?(?:remember|note)(?:\s+that)?\s*[:：,，]?\s*|^\s*请?记住\s*[:：,，]?\s*", re.I)
ABOUT_ME = re.compile(r"^(?:(?:my|our)\s|(?:i|we)(?:['’](?:m|re|ve|ll|d)\b|\s)|我)", re.IGNORECASE)
ASKING = re.compile(
    r"\b(?:know|ask|wonder(?:ing)?|question|understand|confused|sure|think|tell me|show me|help me)\b"
    r"|知道|问|懂|明白|觉得|帮我|告诉我|请",
    re.IGNORECASE,
)


class Memory(TypedDict, total=False):
    """One remembered fact as graphs and the app pass it around (plain values: a checkpoint keeps them as they are)."""

    key: str  # the item's key in the user's namespace: what `forget` takes
    fact: str  # the user's sentence
    thread_id: str | None  # the conversation it was told in (None: outside a checkpointed thread)
    message: str  # the message it was taken from (cut to MAX_MESSAGE_CHARS)
    saved_at: str  # when it was told (UTC, ISO 8601, seconds)
    score: float  # recall only: cosine similarity to the question


# SqliteStore embeds search queries with embed_documents (langgraph issue #9007): this class gives both the query role.
class QueryRoleEmbeddings(Embeddings):
    """The course's embeddings with the query role for stored facts too (a fact and a question are short sentences)."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return embed_queries(self.embeddings, list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self.embeddings.embed_query(cap_query(text))


def open_memory_store(path: str | Path, embeddings: Embeddings) -> SqliteStore:
    """A SqliteStore on a file with an embedding index over each memory's "fact", ready to use (tables made)."""
    # sqlean is the standard library's sqlite3 with extension loading built in: the store loads sqlite-vec, and
    # many Python builds (pyenv's default, macOS's) leave that out of sqlite3
    conn = sqlean.connect(str(path), check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")  # a deleted memory takes its vector with it (ON DELETE CASCADE)
    role = QueryRoleEmbeddings(embeddings)
    store = SqliteStore(conn, index={"dims": len(role.embed_query("dimensions")), "embed": role, "fields": ["fact"]})
    store.setup()
    return store


def namespace(user_id: str) -> tuple[str, str]:
    """The user's namespace in the store; a clear error for an id the store cannot take."""
    if not user_id or "." in user_id:
        raise ValueError(f"user_id={user_id!r}: give a non-empty id without '.' (the store separates namespace "
                         "labels with dots), e.g. a hash of an e-mail address.")
    return ("memories", user_id)


def statements(message: str) -> list[str]:
    """The sentences of a user's message that state something about the user or their team (see the module doc)."""
    found = []
    for sentence in split_sentences(message):
        fact = MARKER.sub("", sentence, count=1).strip()
        if (ABOUT_ME.match(fact) and not fact.endswith(("?", "？")) and not ASKING.search(fact)
                and len(fact) <= MAX_FACT_CHARS and len(tokenize(fact)) >= MIN_FACT_TOKENS):
            found.append(fact)
    return found


def as_memory(item: Item | SearchItem) -> Memory:
    """A store item as a Memory (with its score when a search found it)."""
    memory = Memory(key=item.key, **item.value, saved_at=item.updated_at.isoformat(timespec="seconds"))
    if getattr(item, "score", None) is not None:
        memory["score"] = round(float(item.score), 3)
    return memory


def remember(store: BaseStore, user_id: str, fact: str, thread_id: str | None, message: str) -> Memory:
    """Keep `fact` for the user with where it came from; the same fact told again is one memory (the last telling)."""
    key = hashlib.sha256(" ".join(fact.lower().split()).encode("utf-8")).hexdigest()[:16]
    value = {"fact": fact, "thread_id": thread_id, "message": message[:MAX_MESSAGE_CHARS]}
    # index=["fact"] on each put: SqliteStore ignores the index config's "fields" (langgraph issue #8808)
    store.put(namespace(user_id), key, value, index=["fact"])
    return as_memory(store.get(namespace(user_id), key))


def recall(store: BaseStore, user_id: str, question: str, limit: int = RECALL_LIMIT,
           min_score: float = MIN_SCORE) -> list[Memory]:
    """The user's facts relevant to `question`, from any thread: semantic search, best first, `min_score` or more."""
    found = store.search(namespace(user_id), query=cap_query(question), limit=limit)
    return [as_memory(item) for item in found if item.score is not None and item.score >= min_score]


def memories(store: BaseStore, user_id: str) -> list[Memory]:
    """Every fact kept for the user, the last told first (at most LIST_LIMIT)."""
    return [as_memory(item) for item in store.search(namespace(user_id), limit=LIST_LIMIT)]


def forget(store: BaseStore, user_id: str, key: str) -> Memory:
    """Delete one fact (its key from `memories` or `recall`) and return it; a clear error for an unknown key."""
    item = store.get(namespace(user_id), key)
    if item is None:
        raise KeyError(f"no memory {key!r} for user {user_id!r}: take a key from memories(store, user_id).")
    store.delete(namespace(user_id), key)
    return as_memory(item)


def recall_and_remember(runtime: Runtime, message: str, question: str) -> dict[str, list[Memory]]:
    """A memory node's update: `recalled`, the user's facts relevant to `question` (looked up before this message's
    facts are kept), and `remembered`, the facts `message` states, kept with the run's thread."""
    user_id = getattr(runtime.context, "user_id", None)
    if runtime.store is None or user_id is None:
        raise ValueError("Long-term memory needs the graph compiled with store=... and a user_id in its context.")
    thread_id = runtime.execution_info.thread_id if runtime.execution_info else None
    recalled = recall(runtime.store, user_id, question) if question.strip() else []
    remembered = [remember(runtime.store, user_id, fact, thread_id, message) for fact in statements(message)]
    return {"recalled": recalled, "remembered": remembered}


def told_by_the_user(recalled: Sequence[Memory]) -> str:
    """The recalled facts as a prompt section marked as the user's own statements, not passages ("" for none)."""
    if not recalled:
        return ""
    lines = "\n".join(f"- {m['fact']} (told on {m['saved_at'][:10]})" for m in recalled)
    return TOLD_BY_THE_USER.format(facts=lines)
