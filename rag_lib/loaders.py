"""Turn a file into plain text plus a title: Markdown, text, PDF (pypdf), HTML (BeautifulSoup) and Word .docx
(the standard library's zipfile + ElementTree: a .docx is a zip of XML files).

Every problem is a `LoadError` naming the file and the fix; files (and unpacked .docx text) above RAG_MAX_FILE_MB
are refused before they are read.
"""

from __future__ import annotations

import codecs
import io
import re
import unicodedata
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

from bs4 import BeautifulSoup, NavigableString
from pypdf import PdfReader

from rag_lib.settings import settings

# Tags whose text a reader never sees on the page.
INVISIBLE_TAGS = ["script", "style", "noscript", "template", "head"]
# Block tags end a paragraph; headings become Markdown headers so the header-based chunker can use them.
BLOCK_TAGS = ["p", "div", "li", "tr", "pre", "blockquote", "section", "article", "table", "ul", "ol", "br"]
HEADINGS = {f"h{level}": "#" * level for level in range(1, 7)}
# Latin-1/Windows-1252 bytes usually decode as GB18030 too, into CJK garbage ("Müller" -> "M黮ler"): a GB18030
# decode is accepted only when at least this share of its letters are CJK ideographs.
MIN_CJK_SHARE = 0.3
WORD_NS = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
# BOM-less UTF-16 is recognised when at least this share of its byte pairs are an ASCII character and a NUL byte,
# the NULs always on the same side; text in other scripts without a byte-order mark cannot be told from binary cheaply.
MIN_UTF16_ASCII_SHARE = 0.25


class LoadError(ValueError):
    """A file cannot be indexed; the message says why (empty, binary, undecodable, unsupported...)."""


@dataclass(frozen=True)
class LoadedFile:
    """The text of one file and the title to show in citations."""

    text: str
    title: str


def max_file_bytes() -> int:
    """The size limit in bytes, from RAG_MAX_FILE_MB (megabytes, default 5; not a number: ConfigError)."""
    return int(settings().RAG_MAX_FILE_MB * 1024 * 1024)


def read_bytes(path: Path) -> bytes:
    """The raw bytes of a file that exists, is not empty and is not over the size limit (checked before reading)."""
    if not path.exists():
        raise LoadError(f"{path.name}: file does not exist (deleted, or a broken link?)")
    size, limit = path.stat().st_size, max_file_bytes()
    if size > limit:
        raise LoadError(
            f"{path.name}: {size / 2**20:.1f} MB is over the {limit / 2**20:g} MB limit; split the file or raise the "
            f"limit, e.g. RAG_MAX_FILE_MB={int(size / 2**20) + 1}")
    data = path.read_bytes()
    if not data.strip():
        raise LoadError(f"{path.name}: empty file")
    return data


def decode_gb18030(data: bytes, name: str) -> str:
    """Legacy Chinese text; refused unless mostly CJK, since most Latin-1 text also "decodes" as GB18030."""
    not_text = LoadError(f"{name}: not UTF-8 or GB18030 text; re-save it as UTF-8")
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        raise not_text from None
    letters = [ch for ch in text if ch.isalpha()]
    cjk = sum(unicodedata.name(ch, "").startswith("CJK") for ch in letters)
    if not letters or cjk < MIN_CJK_SHARE * len(letters):
        raise not_text
    return text


def utf16_encoding(data: bytes) -> str | None:
    """The UTF-16 codec for `data`: "utf-16" with a byte-order mark (Windows Notepad's "Unicode"), "utf-16-le" /
    "utf-16-be" for BOM-less UTF-16 of mostly ASCII characters (see MIN_UTF16_ASCII_SHARE); None otherwise."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    head = data[:8192]
    if len(data) % 2 or not head:
        return None
    for encoding, low, high in (("utf-16-le", head[0::2], head[1::2]), ("utf-16-be", head[1::2], head[0::2])):
        ascii_pairs = sum(h == 0 and (32 <= b < 127 or b in (9, 10, 13)) for b, h in zip(low, high))
        if 0 not in low and ascii_pairs >= MIN_UTF16_ASCII_SHARE * len(high):
            return encoding
    return None


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 (with or without BOM), UTF-16 (see `utf16_encoding`), else GB18030 for legacy Chinese files; binary
    content is rejected."""
    encoding = utf16_encoding(data)
    if encoding:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            raise LoadError(f"{name}: broken UTF-16 text (cut short?); re-save it as UTF-8") from None
    elif b"\x00" in data[:8192]:
        raise LoadError(f"{name}: binary content, not text (wrong extension?)")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = decode_gb18030(data, name)
    controls = sum(1 for ch in text if ch not in "\t\n\r\f" and unicodedata.category(ch) == "Cc")
    if controls > len(text) / 100:  # bytes that happened to decode, but are not prose
        raise LoadError(f"{name}: binary content, not text (wrong extension?)")
    return text


def read_text(path: Path) -> str:
    """Decode a text file (UTF-8, else GB18030); reject missing, oversized, empty or binary files."""
    return decode_text(read_bytes(path), path.name)


def title_of(text: str, path: Path) -> str:
    """The first markdown header, else the file name without extension."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()[:500]
    return path.stem


def load_text(data: bytes, path: Path) -> LoadedFile:
    """Markdown or plain text: the decoded text; title from the first `# ` header."""
    text = decode_text(data, path.name)
    return LoadedFile(text, title_of(text, path))


def load_pdf(data: bytes, path: Path) -> LoadedFile:
    """Text of every page (pypdf), pages separated by blank lines; title from the PDF metadata."""
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise LoadError(f"{path.name}: encrypted PDF; save an unprotected copy")
        if len(reader.pages) == 0:
            raise LoadError(f"{path.name}: PDF has no pages; export it again from the program that made it")
        pages = [page.extract_text() or "" for page in reader.pages]
        meta_title = (reader.metadata.title if reader.metadata else None) or ""
    except LoadError:
        raise
    except Exception as error:  # pypdf raises many exception types on damaged files: all mean "unreadable"
        raise LoadError(f"{path.name}: corrupt or unreadable PDF ({type(error).__name__}: {error})") from error
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        raise LoadError(f"{path.name}: PDF has no text layer (a scan?); run OCR on it first")
    return LoadedFile(text, meta_title.strip()[:500] or path.stem)


def load_html(data: bytes, path: Path) -> LoadedFile:
    """The visible text of a page (no scripts, styles or head); headings as `#` lines; title from <title>."""
    soup = BeautifulSoup(decode_text(data, path.name), "html.parser")
    title = " ".join(soup.title.get_text(" ").split()) if soup.title else ""
    for tag in soup(INVISIBLE_TAGS):
        tag.decompose()
    for string in soup.find_all(string=True):  # line breaks in the HTML source are just spaces on the page
        if type(string) is NavigableString and string.parent.name != "pre":  # not comments
            string.replace_with(re.sub(r"\s+", " ", string))
    for tag in soup(list(HEADINGS)):
        tag.insert_before(f"\n\n{HEADINGS[tag.name]} ")
        tag.insert_after("\n\n")
    for tag in soup(BLOCK_TAGS):
        tag.insert_after("\n\n" if tag.name != "br" else "\n")
    text = re.sub(r" *\n\s*\n\s*", "\n\n", soup.get_text()).strip()
    if not text:
        raise LoadError(f"{path.name}: HTML page has no visible text")
    return LoadedFile(text, title[:500] or title_of(text, path))


def load_docx(data: bytes, path: Path) -> LoadedFile:
    """Word .docx: the paragraphs of word/document.xml (size-checked as unpacked), one per line; title from the first
    `# ` line, else the name."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            check_unpacked_size(archive.getinfo("word/document.xml").file_size, path)
            body = ElementTree.fromstring(archive.read("word/document.xml"))
    except (zipfile.BadZipFile, KeyError, ElementTree.ParseError) as error:
        raise LoadError(
            f"{path.name}: corrupt or unreadable .docx ({type(error).__name__}); re-save it in Word or LibreOffice"
        ) from error
    paragraphs = ("".join(t.text or "" for t in p.iter(f"{WORD_NS}t")) for p in body.iter(f"{WORD_NS}p"))
    text = "\n".join(p.strip() for p in paragraphs if p.strip())
    if not text:
        raise LoadError(f"{path.name}: .docx has no text")
    return LoadedFile(text, title_of(text, path))


def check_unpacked_size(size: int, path: Path) -> None:
    """Refuse a zipped part that would unpack beyond the size limit (a zip bomb packs a huge text in a small file)."""
    limit = max_file_bytes()
    if size > limit:
        raise LoadError(
            f"{path.name}: its text unpacks to {size / 2**20:.1f} MB, over the {limit / 2**20:g} MB limit; split the "
            f"document or raise the limit, e.g. RAG_MAX_FILE_MB={int(size / 2**20) + 1}")


LOADERS: dict[str, Callable[[bytes, Path], LoadedFile]] = {
    ".md": load_text,
    ".txt": load_text,
    ".pdf": load_pdf,
    ".html": load_html,
    ".htm": load_html,
    ".docx": load_docx,
}


def check_supported(path: Path) -> None:
    """Raise LoadError for a file type without a loader, naming the supported ones."""
    suffix = path.suffix.lower()
    if suffix not in LOADERS:
        raise LoadError(f"{path.name}: unsupported file type {suffix or '(none)'!r} (supported: {', '.join(LOADERS)})")


def load_file(path: Path, data: bytes | None = None) -> LoadedFile:
    """Load any supported file (`data`: its bytes, when already read) or raise LoadError saying why not."""
    check_supported(path)
    return LOADERS[path.suffix.lower()](read_bytes(path) if data is None else data, path)
