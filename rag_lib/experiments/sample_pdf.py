"""A minimal PDF written from lines of text, for the course's demos and tests of the PDF loader."""

from __future__ import annotations

import io

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject


def make_pdf(lines: list[str], title: str = "") -> bytes:
    """A minimal one-page PDF with these lines of text (Helvetica: ASCII only), for demos and tests."""
    writer = PdfWriter()
    page = writer.add_blank_page(612, 792)
    font = DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
    })
    page[NameObject("/Resources")] = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
    )
    escaped = (line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in lines)
    content = DecodedStreamObject()
    content.set_data(
        ("BT /F1 11 Tf 14 TL 72 720 Td " + " ".join(f"({line}) Tj T*" for line in escaped) + " ET").encode("latin-1")
    )
    page.replace_contents(content)
    if title:
        writer.add_metadata({"/Title": title})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
