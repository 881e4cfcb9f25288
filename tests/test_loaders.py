"""Loaders: every supported type gives text and a title; every bad input gives a LoadError that says why."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from pypdf import PdfWriter

from rag_lib.experiments.sample_pdf import make_pdf
from rag_lib.loaders import LoadError, load_file, max_file_bytes, read_bytes, read_text

HTML = """<!DOCTYPE html><html><head><title>Milvus
  analyzers</title><style>p { color: red }</style><script>var hidden = "SCRIPT TEXT";</script></head>
<body><!-- COMMENT TEXT --><h1>Analyzers</h1><p>An analyzer has a
   <b>tokenizer</b> and filters.</p><h2>jieba</h2><p>jieba 把中文切成词。</p>\
<ul><li>one</li><li>two</li></ul></body></html>"""


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def test_markdown_text_and_title(tmp_path):
    loaded = load_file(write(tmp_path, "notes.md", "intro line\n# Milvus Lite\n\nEmbedded Milvus."))
    assert loaded.title == "Milvus Lite" and "Embedded Milvus." in loaded.text


def test_plain_text_title_falls_back_to_file_name(tmp_path):
    assert load_file(write(tmp_path, "hnsw_notes.txt", "HNSW is a graph index.")).title == "hnsw_notes"


def test_gb18030_text_is_decoded(tmp_path):
    text = "中文编码的旧文件，使用 GB18030 保存。"
    assert read_text(write(tmp_path, "legacy.txt", text.encode("gb18030"))) == text


def test_gb18030_chinese_paragraph_still_loads(tmp_path):
    text = (
        "# 向量数据库\n\nMilvus 是一个开源的向量数据库，用于存储和检索由深度学习模型生成的嵌入向量。"
        "它支持 HNSW、IVF 等多种索引类型，也支持基于 BM25 的全文检索。检索增强生成（RAG）先从知识库中找到相关段落，"
        "再把这些段落交给大语言模型生成答案。"
    )
    loaded = load_file(write(tmp_path, "旧文件.md", text.encode("gb18030")))
    assert loaded.text == text and loaded.title == "向量数据库"


def test_latin1_text_is_not_decoded_into_chinese_garbage(tmp_path):
    data = "Müller straße Grüße".encode("latin-1")
    assert "黮" in data.decode("gb18030")  # what a plain GB18030 fallback would index
    with pytest.raises(LoadError, match="german.txt: not UTF-8 or GB18030 text; re-save it as UTF-8"):
        load_file(write(tmp_path, "german.txt", data))


def test_undecodable_text_is_an_error(tmp_path):
    path = write(tmp_path, "latin1.txt", "café au lait, naïve ÿ".encode("latin-1"))
    with pytest.raises(LoadError, match="latin1.txt: not UTF-8 or GB18030 text; re-save it as UTF-8"):
        load_file(path)


def test_binary_garbage_named_md_is_rejected(tmp_path):
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8
    with pytest.raises(LoadError, match="garbage.md: binary content"):
        load_file(write(tmp_path, "garbage.md", png))


def test_binary_without_nul_bytes_is_rejected_too(tmp_path):
    rng = random.Random(0)
    noise = bytes(rng.randrange(1, 256) for _ in range(4096))  # no NUL byte: decoding is what must catch it
    with pytest.raises(LoadError, match="noise.md: (binary content|not UTF-8)"):
        load_file(write(tmp_path, "noise.md", noise))


def test_control_characters_that_decode_are_still_binary(tmp_path):
    with pytest.raises(LoadError, match="codes.txt: binary content"):
        load_file(write(tmp_path, "codes.txt", bytes(range(1, 32)) * 100))  # valid UTF-8, but not prose


def test_empty_and_whitespace_files_are_rejected(tmp_path):
    for name, data in [("empty.md", b""), ("blank.txt", b" \n\t\n")]:
        with pytest.raises(LoadError, match=f"{name}: empty file"):
            load_file(write(tmp_path, name, data))


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(LoadError, match="gone.md: file does not exist"):
        load_file(tmp_path / "gone.md")


def test_file_over_the_size_limit_says_how_to_raise_it(tmp_path, monkeypatch):
    monkeypatch.delenv("RAG_MAX_FILE_MB", raising=False)
    path = write(tmp_path, "big.txt", b"a" * (10 * 2**20))
    with pytest.raises(LoadError, match=r"big.txt: 10.0 MB is over the 5 MB limit; .*RAG_MAX_FILE_MB=11"):
        load_file(path)
    monkeypatch.setenv("RAG_MAX_FILE_MB", "11")
    assert len(read_bytes(path)) == 10 * 2**20


def test_bad_size_limit_setting_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("RAG_MAX_FILE_MB", "lots")
    with pytest.raises(ValueError, match="RAG_MAX_FILE_MB='lots' is not a number"):
        max_file_bytes()


def test_pdf_text_and_title(tmp_path):
    path = write(tmp_path, "lite.pdf",
                 make_pdf(["Milvus Lite keeps data (on disk).", "Second line."], title="Lite notes"))
    loaded = load_file(path)
    assert loaded.title == "Lite notes"
    assert loaded.text.splitlines() == ["Milvus Lite keeps data (on disk).", "Second line."]


def test_corrupt_pdf_is_an_error(tmp_path):
    good = make_pdf(["Some text."])
    for name, data in [("truncated.pdf", good[: len(good) // 2]), ("fake.pdf", b"this is not a PDF at all")]:
        with pytest.raises(LoadError, match=f"{name}: corrupt or unreadable PDF"):
            load_file(write(tmp_path, name, data))


def test_pdf_without_text_layer_is_an_error(tmp_path):
    with pytest.raises(LoadError, match="scan.pdf: PDF has no text layer"):
        load_file(write(tmp_path, "scan.pdf", make_pdf([])))


def test_html_keeps_visible_text_only_and_reads_the_title(tmp_path):
    loaded = load_file(write(tmp_path, "page.html", HTML))
    assert loaded.title == "Milvus analyzers"
    assert "SCRIPT TEXT" not in loaded.text and "COMMENT TEXT" not in loaded.text and "color" not in loaded.text
    assert "An analyzer has a tokenizer and filters." in loaded.text  # source line breaks are spaces
    assert "# Analyzers" in loaded.text.splitlines() and "## jieba" in loaded.text.splitlines()
    assert "jieba 把中文切成词。" in loaded.text


def test_unsupported_type_names_the_supported_ones(tmp_path):
    with pytest.raises(LoadError, match=r"slides.pptx: unsupported file type '.pptx' \(supported: .*\.pdf.*\.docx\)"):
        load_file(write(tmp_path, "slides.pptx", b"PK\x03\x04 zip"))
    with pytest.raises(LoadError,
                       match=r"unsupported file type '.csv' \(supported: .md, .txt, .pdf, .html, .htm, .docx\)"):
        load_file(write(tmp_path, "table.csv", "a,b\n1,2\n"))


def make_docx(paragraphs: list[str], compression: int = zipfile.ZIP_STORED) -> bytes:
    """A minimal .docx: [Content_Types].xml + word/document.xml, one <w:p> per paragraph (runs split in two)."""
    ns = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = "".join(
        f'<w:p><w:r><w:t xml:space="preserve">{escape(p[:3])}</w:t></w:r><w:r><w:t>{escape(p[3:])}</w:t></w:r></w:p>'
        for p in paragraphs
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        archive.writestr("word/document.xml",
                         f'<?xml version="1.0"?><w:document xmlns:w="{ns}"><w:body>{body}</w:body></w:document>')
    return buffer.getvalue()


def test_docx_paragraphs_become_lines(tmp_path):
    loaded = load_file(write(tmp_path, "notes.docx",
                             make_docx(["# HNSW & IVF", "HNSW 是一种图索引。", "", "Runs join."])))
    assert loaded.text == "# HNSW & IVF\nHNSW 是一种图索引。\nRuns join." and loaded.title == "HNSW & IVF"


@pytest.mark.parametrize(
    "data",
    [b"PK\x03\x04 zip", b"not a zip at all", make_docx(["ok"]).replace(b"word/document.xml", b"word/other___.xml")],
)
def test_corrupt_docx_is_an_error(tmp_path, data):
    with pytest.raises(LoadError, match="bad.docx: corrupt or unreadable .docx"):
        load_file(write(tmp_path, "bad.docx", data))


def test_a_docx_whose_text_unpacks_over_the_limit_is_refused_before_unpacking(tmp_path, monkeypatch):
    """A zip bomb: a small file whose document.xml inflates far beyond the size limit."""
    monkeypatch.setenv("RAG_MAX_FILE_MB", "0.5")
    bomb = make_docx(["HNSW is a graph index. " * 40] * 1200, zipfile.ZIP_DEFLATED)  # ~1.1 MB of XML, a few kB zipped
    assert len(bomb) < 0.1 * 2**20
    with pytest.raises(LoadError, match=r"bomb.docx: its text unpacks to 1\.\d MB, over the 0\.5 MB limit.*MB=2"):
        load_file(write(tmp_path, "bomb.docx", bomb))
    monkeypatch.setenv("RAG_MAX_FILE_MB", "2")
    assert load_file(write(tmp_path, "bomb.docx", bomb)).text.startswith("HNSW is a graph index.")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("bom-le.txt", "\ufeffUTF-16 text from Notepad.\r\n第二行：中文。".encode("utf-16-le")),
        ("bom-be.md", "\ufeffUTF-16 text from Notepad.\r\n第二行：中文。".encode("utf-16-be")),
        ("plain-le.txt", "UTF-16 text from Notepad.\r\n第二行：中文。".encode("utf-16-le")),
        ("plain-be.txt", "UTF-16 text from Notepad.\r\n第二行：中文。".encode("utf-16-be")),
    ],
)
def test_utf16_text_is_decoded(tmp_path, name, data):
    assert load_file(write(tmp_path, name, data)).text == "UTF-16 text from Notepad.\r\n第二行：中文。"


def test_utf16_cut_short_says_so_and_nul_padded_bytes_stay_binary(tmp_path):
    cut = "\ufeffUTF-16 text".encode("utf-16-le")[:-1]
    with pytest.raises(LoadError, match="cut.txt: broken UTF-16 text"):
        load_file(write(tmp_path, "cut.txt", cut))
    for data in (b"\x00\xff" * 50, bytes(range(256)) * 4, b"\x01\x00\x02\x00" * 30):
        with pytest.raises(LoadError, match="binary"):
            load_file(write(tmp_path, "bin.txt", data))


def test_pdf_without_pages_says_so_not_scan(tmp_path):
    buffer = io.BytesIO()
    PdfWriter().write(buffer)
    with pytest.raises(LoadError, match="empty.pdf: PDF has no pages; export it again"):
        load_file(write(tmp_path, "empty.pdf", buffer.getvalue()))
