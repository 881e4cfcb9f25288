"""Checkpointers the course's graphs share: LangGraph's SqliteSaver on a file, so threads survive restarts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver


def sqlite_checkpointer(path: str | Path) -> SqliteSaver:
    """A SqliteSaver on a file; the connection may be used from LangGraph's worker threads (the saver locks)."""
    return SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))
