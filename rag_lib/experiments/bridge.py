"""A two-hop pipeline that copies the bridge: search, copy the entity the question needs next, search again."""

from __future__ import annotations


def bridged_query(question: str, bridge: str) -> str:
    """The second search's query: the question followed by the bridge entity it describes without naming."""
    return f"{question} {bridge}"
