"""Uploads and pasted text: encodings, file types, binary and empty input."""

import io
from pathlib import Path

import pytest

from littlebird.documents.decode import decode_bytes, looks_like_html
from littlebird.documents.errors import DocumentError
from littlebird.documents.upload import read_pasted_text, read_upload

PAGES = Path(__file__).parents[1] / "fixtures" / "pages"


def test_reads_fixture_pages_from_paths():
    raw = read_upload(PAGES / "ko_wiki_sejong.html")
    assert raw.is_html and raw.encoding == "utf-8" and raw.source == "ko_wiki_sejong.html"
    raw = read_upload(str(PAGES / "cp949_jeju.html"))
    assert raw.encoding == "cp949" and "똠방각하" in raw.text


def test_cp949_without_any_declaration():
    data = (PAGES / "cp949_jeju.html").read_bytes().replace(b"; charset=euc-kr", b"")
    raw = read_upload(data, filename="jeju.htm")
    assert raw.encoding == "cp949" and "한라산" in raw.text


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "cp949", "euc-kr"])
def test_korean_text_in_common_encodings(encoding):
    text = "세종은 조선의 제4대 국왕이다. 훈민정음은 1443년에 완성되었다.\n"
    raw = read_upload(text.encode(encoding), filename="notes.txt")
    assert raw.text == text and not raw.is_html


def test_bytes_file_objects_and_markdown():
    raw = read_upload(io.BytesIO("# Title\n\nSome *notes*.".encode()), filename="notes.md")
    assert not raw.is_html and raw.source == "notes.md"
    raw = read_upload(b"<html><body><p>Hi</p></body></html>")
    assert raw.is_html and raw.source == "uploaded file"


def test_latin_text_in_windows_1252():
    raw = read_upload("Café au lait — naïve façade, déjà vu.".encode("cp1252"), filename="a.txt")
    assert "Café" in raw.text and "façade" in raw.text


@pytest.mark.parametrize(
    "data, filename, message",
    [
        (b"%PDF-1.7\n...", "paper.pdf", "damaged or incomplete"),
        (b"<html><body>Not a PDF</body></html>", "paper.pdf", "is not a PDF"),
        (b"PK\x03\x04 not a zip", "letter.docx", "not a Word document"),
        (b"%PDF-1.7\n...", "paper.txt", "PDF file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "image.html", "PNG image"),
        (b"PK\x03\x04\x14\x00", "doc.txt", "ZIP archive"),
        (bytes(range(99)), "data.txt", "binary"),
        (b"text\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11" * 5, "ctrl.txt", "binary"),
        (b"", "empty.txt", "empty"),
        (b"   \n\t\n", "blank.md", "empty"),
        (b"x" * 101, "big.txt", "larger than"),
        (b"hello", "program.exe", "cannot be read"),
    ],
)
def test_bad_uploads_give_a_sentence(data, filename, message):
    with pytest.raises(DocumentError, match=message) as error:
        read_upload(data, filename=filename, max_bytes=100)
    assert str(error.value).endswith(".")


def test_unreadable_path():
    with pytest.raises(DocumentError, match="could not be read"):
        read_upload("/nonexistent/file.txt")


def test_pasted_text_and_html():
    assert not read_pasted_text("Just a question about prose.").is_html
    assert read_pasted_text("<p>First</p><p>Second</p>").is_html
    assert read_pasted_text("<!DOCTYPE html><html><body>x</body></html>").is_html
    with pytest.raises(DocumentError, match="empty"):
        read_pasted_text("  \n ")


def test_html_detection_does_not_fire_on_prose():
    assert not looks_like_html("Use a <b> tag for bold, she said.")
    assert looks_like_html("<!-- saved page -->\n<html><body></body></html>")


def test_declared_charset_is_used_when_utf8_fails():
    data = "한국어 문서".encode("cp949")
    assert decode_bytes(data, declared="ks_c_5601-1987") == ("한국어 문서", "cp949")
