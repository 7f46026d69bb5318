"""The list of formats in littlebird/documents/formats.py is the only one: uploads, fetches, the command line's
help, the page's upload box and the refusals all take theirs from it, and a new format is one module and one entry."""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
from pathlib import Path

import pytest

from littlebird.cli import main
from littlebird.documents import formats
from littlebird.documents.decode import RawDocument
from littlebird.documents.errors import DocumentError
from littlebird.documents.formats import Format
from littlebird.documents.sources import read_document
from littlebird.documents.upload import read_upload

PACKAGE = Path(__file__).resolve().parents[2] / "littlebird"


def test_every_format_has_a_reader_or_is_text_and_its_own_suffixes():
    seen: set[str] = set()
    for format in formats.FORMATS:
        assert format.suffixes and all(
            suffix.startswith(".") and suffix == suffix.lower() for suffix in format.suffixes
        )
        assert not seen & set(format.suffixes), format.name  # no suffix belongs to two formats
        seen |= set(format.suffixes)
        if format.refusal is not None:  # recognised, to say why it is not read and what to do
            assert format.reader is None and "{source}" in format.refusal
        elif not format.is_text:
            module, function = format.reader.split(":")
            assert callable(getattr(importlib.import_module(module), function)), format.reader
            assert format.starts, f"{format.name}: a file format must be known by its first bytes too"
        for suffix in format.suffixes:
            assert formats.by_suffix(suffix.upper()) is format
        for content_type in format.content_types:
            assert formats.by_content_type(f"{content_type}; charset=utf-8") is format


def _listed_suffixes(text: str, known: tuple[str, ...]) -> set[str]:
    return {
        suffix
        for suffix in known
        if f"{suffix} " in f"{text} " or f"{suffix}," in text or f"{suffix}/" in text or f"{suffix})" in text
    }


def test_no_module_but_the_registry_writes_out_a_list_of_formats():
    """A string in the package that names two or more of the registered suffixes is a second list of formats, which
    a new format would leave behind."""
    known = formats.suffixes()
    lists = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "formats.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named = _listed_suffixes(node.value, known)
                if len(named) >= 2:
                    lists.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {sorted(named)}")
    assert not lists, "formats listed outside littlebird/documents/formats.py:\n" + "\n".join(lists)


def test_the_help_the_refusals_and_the_upload_box_name_every_format(tmp_path):
    with contextlib.redirect_stdout(io.StringIO()) as shown, contextlib.suppress(SystemExit):
        main(["ask", "--help"])
    help_text = " ".join(shown.getvalue().split())
    assert all(suffix in help_text for suffix in formats.suffixes())

    (tmp_path / "notes.xyz").write_text("text", encoding="utf-8")
    with pytest.raises(DocumentError) as refused:
        read_upload(tmp_path / "notes.xyz")
    assert all(suffix in str(refused.value) for suffix in formats.suffixes())
    with pytest.raises(DocumentError) as asked:
        read_document("upload", upload=None)
    assert all(suffix in str(asked.value) for suffix in formats.suffixes())

    ui = pytest.importorskip("littlebird.app.ui")
    source = Path(ui.__file__).read_text(encoding="utf-8")
    assert "file_types=list(formats.upload_suffixes())" in source  # the upload box's own list is the registry's


def read_toy(data: bytes, *, source: str) -> RawDocument:
    """A toy format's reader: each line of a .toy file is a paragraph, in upper case."""
    lines = data.decode("ascii").splitlines()[1:]
    return RawDocument(text="\n\n".join(line.upper() for line in lines), is_html=False, source=source, encoding="toy")


def test_a_new_format_is_one_reader_and_one_entry(monkeypatch, tmp_path):
    toy = Format(
        "toy", "toy notes", (".toy",), ("application/x-toy",), starts=(b"TOY1",), reader=f"{__name__}:read_toy"
    )
    monkeypatch.setattr(formats, "FORMATS", formats.FORMATS + (toy,))
    path = tmp_path / "lighthouse.toy"
    path.write_bytes(b"TOY1\nthe keeper lit the lamp in 1843\n")
    assert read_upload(path).text == "THE KEEPER LIT THE LAMP IN 1843"
    assert read_upload(path.read_bytes()).encoding == "toy"  # no name: its first bytes tell
    assert ".toy" in formats.suffix_list() and "toy notes" in formats.label_list()
    assert "application/x-toy;q=0.8" in formats.accept_header()
    with contextlib.redirect_stdout(io.StringIO()) as shown, contextlib.suppress(SystemExit):
        main(["ask", "--help"])
    assert ".toy" in shown.getvalue()
