"""Reading Hangul files: the app's reader (littlebird.documents.hwpx) against the Python libraries that read them.

    python benchmarks/bench_hwpx.py FILE.hwpx FILE.hwp ... [--repeats 3] [--per-file]

Each reader that is installed reads every file it takes, in this process: for .hwpx, python-hwpx (its HTML
export), hwp-hwpx-parser (text and tables) and rhwp-python (its document model's HTML); for .hwp, those two, pyhwp
(AGPL, so never a dependency of the app) and rhwp-python's conversion to HWPX read by the app's reader. The app
needs none of them: ``pip install python-hwpx hwp-hwpx-parser rhwp-python pyhwp`` to compare (olefile, which the
last two bring, reads a .hwp's preview). rhwp-python 0.8.1's Linux wheel imports only with a newer FreeType than
the one it bundles: ``LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libfreetype.so.6`` (DanMeon/rhwp-python#31). What is
counted, for each reader over the files it read:

- read: files read without an error (a refusal of the app counts as not read), of those whose preview has text;
- text: the share of the words of Hangul's own text of the document's start (the preview, ``Preview/PrvText.txt``
  in a .hwpx, ``PrvText`` in a .hwp, its cells' marks aside) that the reader's text holds, as a multiset;
- tables and spans: the tables in the output, and the cells in them that span rows or columns, against the
  body's own (a .hwpx's ``hp:tbl`` and ``hp:cellSpan`` elements outside headers, footers and notes);
- headings: the headings the output marks (HTML h1 to h6);
- pages: the pages the reader gives (the app: where the file records them; rhwp: its own layout);
- seconds: the median of ``--repeats`` reads, averaged over the files.
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import statistics
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

_CELL_MARKS = str.maketrans("<>", "  ")  # the preview writes each table cell as <its text>
_NOT_BODY = {"header", "footer", "footNote", "endNote"}
_BLOCKS = ("p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "td", "th", "tr", "caption", "br", "table")


@dataclass
class Output:
    """What a reader gave for one file."""

    text: str
    tables: int = 0
    spans: int = 0
    headings: int | None = None  # None: the reader has no headings
    pages: int | None = None  # None: the reader gives no pages


def _html_counts(html: str | bytes, **extra) -> Output:
    """An HTML output's text (its blocks apart, the app's page marks as spaces), tables, spanning cells and
    headings."""
    from lxml import html as lxml_html

    root = lxml_html.fromstring(html)
    for block in root.iter(*_BLOCKS):  # blocks apart, as a reader sees them; runs of text stay joined
        block.tail = " " + (block.tail or "")
        block.text = " " + (block.text or "")
    spans = sum(
        1
        for cell in root.iter("td", "th")
        if int(cell.get("colspan", "1") or 1) > 1 or int(cell.get("rowspan", "1") or 1) > 1
    )
    return Output(
        text=root.text_content().replace("\ue000", " "),
        tables=len(root.findall(".//table")),
        spans=spans,
        headings=len(root.xpath("//h1|//h2|//h3|//h4|//h5|//h6")),
        **extra,
    )


def read_littlebird(path: Path) -> Output:
    """The app's reader: its HTML's text, tables and headings, and the pages it marks."""
    from littlebird.documents.clean import PAGE_MARK
    from littlebird.documents.upload import read_upload

    html = read_upload(path).text
    return _html_counts(html, pages=1 + html.count(PAGE_MARK))


def read_python_hwpx(path: Path) -> Output:
    from hwpx.tools.exporter import export_html

    output = _html_counts(export_html(path.read_bytes()))
    output.headings = None  # paragraphs only
    return output


def read_hwp_hwpx_parser(path: Path) -> Output:
    from hwp_hwpx_parser import Reader

    with Reader(str(path)) as reader:
        return Output(text=reader.text, tables=len(reader.get_tables()))


def read_rhwp(path: Path) -> Output:
    import rhwp

    document = rhwp.parse(str(path))
    output = _html_counts(document.to_ir().to_html(), pages=document.page_count)
    output.headings = None  # outline paragraphs become list items
    return output


def read_rhwp_then_littlebird(path: Path) -> Output:
    """A .hwp converted to HWPX by rhwp-python, then read by the app's reader."""
    import rhwp

    from littlebird.documents.clean import PAGE_MARK
    from littlebird.documents.hwpx import read_hwpx

    html = read_hwpx(rhwp.parse(str(path)).to_hwpx_bytes(), source=path.name).text
    return _html_counts(html, pages=1 + html.count(PAGE_MARK))


def read_pyhwp(path: Path) -> Output:
    from contextlib import closing

    from hwp5.hwp5html import HTMLTransform
    from hwp5.xmlmodel import Hwp5File

    buffer = io.BytesIO()
    with closing(Hwp5File(str(path))) as hwp5file:
        HTMLTransform().transform_hwp5_to_xhtml(hwp5file, buffer)
    output = _html_counts(buffer.getvalue())  # XHTML with its encoding declared: as bytes
    output.headings = None  # paragraphs only
    return output


# name -> (reader, the module it imports, the distribution whose licence and version are shown, the suffixes read)
READERS: dict[str, tuple[Callable[[Path], Output], str, str, tuple[str, ...]]] = {
    "littlebird (lxml)": (read_littlebird, "littlebird.documents.hwpx", "lxml", (".hwpx",)),
    "python-hwpx": (read_python_hwpx, "hwpx.tools.exporter", "python-hwpx", (".hwpx",)),
    "hwp-hwpx-parser": (read_hwp_hwpx_parser, "hwp_hwpx_parser", "hwp-hwpx-parser", (".hwpx", ".hwp")),
    "rhwp-python": (read_rhwp, "rhwp", "rhwp-python", (".hwpx", ".hwp")),
    "rhwp-python, then littlebird": (read_rhwp_then_littlebird, "rhwp", "rhwp-python", (".hwp",)),
    "pyhwp": (read_pyhwp, "hwp5.hwp5html", "pyhwp", (".hwp",)),
}


def preview_words(path: Path) -> Counter | None:
    """The words of Hangul's own text of the document's start, without the preview's last (perhaps cut) word."""
    data = path.read_bytes()
    text = None
    if path.suffix.lower() == ".hwpx":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            if "Preview/PrvText.txt" in archive.namelist():
                text = archive.read("Preview/PrvText.txt").decode("utf-8", "replace")
    else:
        try:
            import olefile
        except ImportError:
            return None
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            if ole.exists("PrvText"):
                text = ole.openstream("PrvText").read().decode("utf-16-le", "replace")
    if not text:
        return None
    words = text.translate(_CELL_MARKS).split()[:-1]
    return Counter(words) if words else None


def file_tables(path: Path) -> tuple[int, int] | None:
    """The body's tables and spanning cells a .hwpx holds, those of headers, footers and notes aside (None for a
    .hwp)."""
    from lxml import etree

    if path.suffix.lower() != ".hwpx":
        return None
    tables = spans = 0
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            if not re.fullmatch(r"Contents/section\d+\.xml", name):
                continue
            try:
                root = etree.fromstring(archive.read(name))
            except etree.XMLSyntaxError:  # a part encrypted with a password
                continue
            for table in root.iter("{*}tbl"):
                if any(etree.QName(above).localname in _NOT_BODY for above in table.iterancestors()):
                    continue
                tables += 1
                spans += sum(
                    1
                    for span in table.iterfind("{*}tr/{*}tc/{*}cellSpan")
                    if span.get("colSpan", "1") != "1" or span.get("rowSpan", "1") != "1"
                )
    return tables, spans


@dataclass
class Tally:
    read: int = 0
    files: int = 0
    found: int = 0
    preview: int = 0
    tables: int = 0
    spans: int = 0
    headings: int | None = 0
    pages: int | None = 0
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def measure(paths: list[Path], repeats: int, per_file: bool) -> dict[str, Tally]:
    tallies = {}
    truth_tables = truth_spans = 0
    left_out = [path.name for path in paths if preview_words(path) is None]
    if left_out:  # a file of pictures or shapes alone: nothing to compare
        print(f"left out, no text in Hangul's preview: {', '.join(left_out)}")
    paths = [path for path in paths if path.name not in left_out]
    for path in paths:
        if counts := file_tables(path):
            truth_tables, truth_spans = truth_tables + counts[0], truth_spans + counts[1]
    for name, (read, module, _, suffixes) in READERS.items():
        try:
            importlib.import_module(module)
        except ImportError as error:  # not installed, or (rhwp-python 0.8) installed but not importable
            print(f"{name}: skipped, {type(error).__name__}: {error}")
            continue
        tally = tallies[name] = Tally()
        for path in paths:
            if path.suffix.lower() not in suffixes:
                continue
            tally.files += 1
            seconds = []
            try:
                for _ in range(repeats):
                    start = time.perf_counter()
                    output = read(path)
                    seconds.append(time.perf_counter() - start)
            except Exception as error:  # each library fails in its own way; a failure counts as not read
                tally.errors.append(f"{path.name}: {type(error).__name__}: {str(error)[:80]}")
                continue
            tally.read += 1
            tally.seconds.append(statistics.median(seconds))
            tally.tables += output.tables
            tally.spans += output.spans
            tally.headings = None if output.headings is None else (tally.headings or 0) + output.headings
            tally.pages = None if output.pages is None else (tally.pages or 0) + output.pages
            if words := preview_words(path):
                found = Counter(output.text.split())
                tally.found += sum((words & found).values())
                tally.preview += sum(words.values())
            if per_file:
                print(
                    f"  {name:18s} {path.name[:40]:40s} {statistics.median(seconds):7.3f} s  tables {output.tables}"
                    f"  spans {output.spans}  headings {output.headings}  pages {output.pages}"
                )
    print(f"\n{len(paths)} files")
    if any(path.suffix.lower() == ".hwpx" for path in paths):
        print(f"the .hwpx files' own tables in their bodies: {truth_tables}, spanning cells: {truth_spans}")
    return tallies


def licence(distribution: str) -> str:
    """The distribution's licence and version, as its metadata gives them."""
    try:
        meta = metadata.metadata(distribution)
    except metadata.PackageNotFoundError:
        return "?"
    found = meta.get("License-Expression") or next(
        (value.rsplit("::", 1)[-1].strip() for value in meta.get_all("Classifier") or [] if "License ::" in value),
        meta.get("License") or "?",
    )
    return f"{found}, {meta['Version']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--per-file", action="store_true", help="print each file's counts too")
    args = parser.parse_args()
    tallies = measure(args.files, args.repeats, args.per_file)
    print(
        "\n| reader | licence, version | read | text (preview words) | tables | spanning cells | headings | pages "
        "| seconds a file |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, tally in tallies.items():
        if not tally.files:  # a reader of the other format
            continue
        text = f"{tally.found / tally.preview:.1%}" if tally.preview else "-"
        seconds = f"{statistics.mean(tally.seconds):.4f}" if tally.seconds else "-"
        print(
            f"| {name} | {licence(READERS[name][2])} | {tally.read}/{tally.files} | {text} | {tally.tables} | "
            f"{tally.spans} | {'-' if tally.headings is None else tally.headings} | "
            f"{'-' if tally.pages is None else tally.pages} | {seconds} |"
        )
    for name, tally in tallies.items():
        for error in tally.errors:
            print(f"{name}: {error}")


if __name__ == "__main__":
    main()
