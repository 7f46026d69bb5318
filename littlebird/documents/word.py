"""Word (.docx) bytes -> RawDocument: mammoth writes the document as clean HTML (headings, lists, tables,
paragraphs, without Word's styling), which then goes through the same cleaner as a web page. Where the file
records its pages (Word's marks of its last layout, or page breaks the author typed), the document keeps them."""

from __future__ import annotations

import io
import re
import zipfile

from lxml import etree
from lxml import html as lxml_html

from littlebird.documents.archive import open_archive
from littlebird.documents.clean import PAGE_MARK
from littlebird.documents.decode import RawDocument
from littlebird.documents.errors import DocumentError

_STYLE_MAP = "p[style-name='Title'] => h1:fresh\np[style-name='Subtitle'] => h2:fresh"  # mammoth's are <p>
_OLE = b"\xd0\xcf\x11\xe0"  # the container of old .doc files and of password-protected Office files
# Where a page begins: Word's own mark of its last layout (written when Word saves) and a page break typed by the
# author. Each becomes a run of text holding PAGE_MARK, which mammoth carries into its HTML and the cleaner reads
# as the start of a page.
_PAGE_BREAK = re.compile(rb"<w:lastRenderedPageBreak\s*/>|<w:br\b[^>]*\bw:type=\"page\"[^>]*/>")
_PAGE_MARK_RUN = b"<w:t>" + PAGE_MARK.encode("utf-8") + b"</w:t>"


def read_docx(data: bytes, *, source: str) -> RawDocument:
    """The .docx file ``data`` as HTML for :func:`littlebird.documents.clean.clean_document`.

    Raises DocumentError, with a sentence for the user, for a password-protected or old-format (.doc) file,
    one that is not a Word document or is damaged, and a zip bomb (:func:`littlebird.documents.archive.open_archive`).
    """
    if data.startswith(_OLE):
        raise DocumentError(
            f"{source} is protected with a password or saved in the old Word format (.doc), so its "
            "text cannot be read. Please save it as a .docx without a password and upload that."
        )
    archive = open_archive(
        data,
        source=source,
        not_archive=f"{source} is not a Word document, or it is damaged: "
        "it is not a .docx archive. Please save or export it again and upload that.",
    )
    if "word/document.xml" not in archive.namelist():
        raise DocumentError(
            f"{source} is not a Word document: it has no word/document.xml. Please upload a .docx "
            "saved by Word, LibreOffice or Google Docs."
        )
    import mammoth

    try:
        converted = mammoth.convert_to_html(io.BytesIO(_with_page_marks(archive)), style_map=_STYLE_MAP)
    except Exception:  # mammoth raises assorted errors (KeyError, XML parse errors) on damaged parts
        raise DocumentError(
            f"{source} could not be read: the Word document is damaged. Please save or export it again and upload that."
        ) from None
    return RawDocument(
        text=f"<html><body>{_cells_without_paragraphs(converted.value)}</body></html>",
        is_html=True,
        source=source,
        encoding="docx",
        whole=True,
    )


def _with_page_marks(archive: zipfile.ZipFile) -> bytes:
    """The .docx again, its page breaks in word/document.xml written as runs of PAGE_MARK."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as copy:
        for member in archive.infolist():
            content = archive.read(member)
            if member.filename == "word/document.xml":
                content = _PAGE_BREAK.sub(_PAGE_MARK_RUN, content)
            copy.writestr(member, content)
    return buffer.getvalue()


def _cells_without_paragraphs(fragment: str) -> str:
    """Word keeps a cell's text in paragraphs, which a web page's cell seldom has: they become line breaks, so
    that a row reads as one line of cells."""
    if "<table" not in fragment:
        return fragment
    root = lxml_html.fragment_fromstring(fragment, create_parent="div")
    for cell in root.iter("td", "th"):
        paragraphs = [child for child in cell if child.tag == "p"]
        for number, paragraph in enumerate(paragraphs):
            if number:
                paragraph.addprevious(etree.Element("br"))
            paragraph.drop_tag()
    return "".join(lxml_html.tostring(child, encoding="unicode") for child in root) if len(root) else root.text or ""
