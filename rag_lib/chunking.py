"""Chunking strategies: how a document's text becomes the pieces that are embedded, stored and retrieved.

| strategy       | function                | cuts                                                        | chunk metadata           |
|----------------|-------------------------|-------------------------------------------------------------|--------------------------|
| `fixed`        | `fixed_size_split`      | every `chunk_size` characters, blind to words and sentences | -                        |
| `recursive`    | `recursive_split`       | paragraphs, then Chinese/English sentences, clauses, words  | -                        |
| `markdown`     | `markdown_header_split` | at `#`..`###` headers; the header path heads every chunk    | `headers`                |
| `semantic`     | `semantic_split`        | where consecutive sentences' embeddings drift apart         | -                        |
| `parent_child` | `parent_child_split`    | small children (searched) inside large parents (returned)   | `parent_id`, `parent_text` |

All sizes are in characters. A `Chunker` (a strategy and its settings) is what `rag_lib.index.index_directory` takes.
Parent-child: only children are rows with vectors, each with its parent's id (`parent_id`) and text (`parent_text`);
`rag_lib.index.parent_documents` swaps found children for their parents.
"""  # noqa: E501  (the table is printed as it is by notebook 02)

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_text_splitters import RecursiveCharacterTextSplitter

from rag_lib.text import split_sentences

# Paragraphs first, then Chinese and English sentence ends, then clauses, then words.
SEPARATORS = ["\n\n", "\n", "。", "！", "？", ". ", "! ", "? ", "；", "; ", "，", ", ", " ", ""]
# The default chunk size and overlap, in characters: every chunker and the benchmarks' chunk rows use them.
CHUNK_SIZE = 300
CHUNK_OVERLAP = 50
STRATEGIES = ("fixed", "recursive", "markdown", "semantic", "parent_child")
_HEADER = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Chunk:
    """One chunk's text and the metadata that goes into its row (e.g. `headers`, `parent_id`)."""

    text: str
    metadata: dict[str, str] = field(default_factory=dict)


def fixed_size_split(text: str, chunk_size: int = CHUNK_SIZE, chunk_overlap: int = CHUNK_OVERLAP) -> list[str]:
    """Windows of `chunk_size` characters, each starting `chunk_size - chunk_overlap` after the previous one."""
    step = chunk_size - chunk_overlap
    windows = (text[start : start + chunk_size] for start in range(0, max(len(text) - chunk_overlap, 1), step))
    return [w.strip() for w in windows if w.strip()]


def recursive_split(text: str, chunk_size: int = CHUNK_SIZE, chunk_overlap: int = CHUNK_OVERLAP) -> list[str]:
    """Recursive split on paragraph, sentence (Chinese and English) and clause boundaries, in characters.

    Tries the coarsest separator first and only falls back to finer ones for pieces still over `chunk_size`,
    so chunks end at paragraph or sentence ends whenever they can. The course default.
    """
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size, chunk_overlap=chunk_overlap, separators=SEPARATORS, keep_separator="end"
    )
    return [c.strip() for c in splitter.split_text(text) if c.strip()]


def markdown_header_split(text: str, chunk_size: int = CHUNK_SIZE, chunk_overlap: int = CHUNK_OVERLAP,
                          max_level: int = 3) -> list[Chunk]:
    """One section per `#`..`###` header (not inside code fences), re-split recursively when over `chunk_size`;
    each chunk starts with its header path ("A > B") on a line of its own and keeps it as metadata `headers`."""
    sections: list[tuple[str, list[str]]] = []  # (header path, body lines)
    headers: dict[int, str] = {}
    body: list[str] = []
    in_code = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        match = None if in_code else _HEADER.match(line)
        if match and len(match.group(1)) <= max_level:
            sections.append((" > ".join(headers[level] for level in sorted(headers)), body))
            level = len(match.group(1))
            headers = {lvl: title for lvl, title in headers.items() if lvl < level} | {level: match.group(2)}
            body = []
        else:
            body.append(line)
    sections.append((" > ".join(headers[level] for level in sorted(headers)), body))
    chunks = []
    for path, lines in sections:
        prefix = f"{path}\n" if path else ""
        budget = max(chunk_size - len(prefix), chunk_size // 2)  # room left for the body after the header path
        for piece in recursive_split("\n".join(lines), budget, min(chunk_overlap, budget // 2)):
            chunks.append(Chunk(prefix + piece, {"headers": path} if path else {}))
    return chunks


def semantic_split(text: str, embeddings: Embeddings, percentile: float = 90.0, chunk_size: int = CHUNK_SIZE,
                   chunk_overlap: int = CHUNK_OVERLAP, min_chars: int = 50) -> list[str]:
    """Cut where neighbouring sentences' embeddings are further apart than the `percentile`-th distance (unless the
    group before would be under `min_chars`), then re-split groups over `chunk_size`. One embedding per sentence."""
    sentences = split_sentences(text)
    if len(sentences) < 3:
        return recursive_split(text, chunk_size, chunk_overlap)
    starts, position = [], 0
    for sentence in sentences:  # where each sentence starts, so chunks keep the original text and line breaks
        position = text.find(sentence, position)
        starts.append(position)
    vectors = np.asarray(embeddings.embed_documents(sentences), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
    distances = 1.0 - np.sum(vectors[:-1] * vectors[1:], axis=1)
    threshold = np.percentile(distances, percentile)
    cuts = [0]
    for i, distance in enumerate(distances):
        if distance > threshold and starts[i + 1] - cuts[-1] >= min_chars:  # no cut after a tiny group
            cuts.append(starts[i + 1])
    cuts.append(len(text))
    return [piece for a, b in zip(cuts, cuts[1:]) for piece in recursive_split(text[a:b], chunk_size, chunk_overlap)]


def parent_child_split(text: str, parent_size: int = 1200, chunk_size: int = CHUNK_SIZE,
                       chunk_overlap: int = CHUNK_OVERLAP) -> list[Chunk]:
    """Small children to search, each pointing at its parent (recursive splits of `parent_size`) for the model."""
    chunks = []
    for parent in recursive_split(text, parent_size, 0):
        parent_id = hashlib.sha256(parent.encode()).hexdigest()[:32]
        for child in recursive_split(parent, chunk_size, chunk_overlap):
            chunks.append(Chunk(child, {"parent_id": parent_id, "parent_text": parent}))
    return chunks


@dataclass(frozen=True)
class Chunker:
    """A chunking strategy and its settings (sizes in characters); `split` applies it to one text."""

    strategy: str = "recursive"
    chunk_size: int = CHUNK_SIZE
    chunk_overlap: int = CHUNK_OVERLAP
    percentile: float = 90.0  # semantic: cut at distances above this percentile
    parent_size: int = 1200  # parent_child: size of the parents

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown chunking strategy {self.strategy!r}: choose one of {', '.join(STRATEGIES)}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ValueError(
                f"chunk_overlap={self.chunk_overlap} must be >= 0 and smaller than chunk_size={self.chunk_size}")
        if self.strategy == "parent_child" and self.parent_size <= self.chunk_size:
            raise ValueError(f"parent_size={self.parent_size} must be larger than chunk_size={self.chunk_size}")
        if not 0 < self.percentile < 100:
            raise ValueError(f"percentile={self.percentile} must be between 0 and 100 (e.g. 90)")

    def settings(self) -> str:
        """A stable description of the settings, hashed into `file_hash` so a change re-indexes the files."""
        return json.dumps(asdict(self), sort_keys=True)

    def split(self, text: str, embeddings: Embeddings | None = None) -> list[Chunk]:
        """The chunks of `text`, without repeats (`embeddings` is needed by the semantic strategy only)."""
        size, overlap = self.chunk_size, self.chunk_overlap
        if self.strategy == "markdown":
            chunks = markdown_header_split(text, size, overlap)
        elif self.strategy == "parent_child":
            chunks = parent_child_split(text, self.parent_size, size, overlap)
        elif self.strategy == "semantic":
            if embeddings is None:
                raise ValueError("the semantic strategy embeds sentences: pass `embeddings`")
            chunks = [Chunk(c) for c in semantic_split(text, embeddings, self.percentile, size, overlap)]
        else:
            split = fixed_size_split if self.strategy == "fixed" else recursive_split
            chunks = [Chunk(c) for c in split(text, size, overlap)]
        unique: dict[str, Chunk] = {}
        for chunk in chunks:  # the same text twice in a file would get the same row id
            unique.setdefault(chunk.text, chunk)
        return list(unique.values())
