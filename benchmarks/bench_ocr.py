"""Reading scans by OCR: the Tesseract bindings per page, the character error rate against the text the pages were
made from, in English and Korean, and the seconds `littlebird ask` takes on a 10-page scan.

    python benchmarks/bench_ocr.py                 # 4 pages a language for the first two tables, 10 for the last
    python benchmarks/bench_ocr.py --tables bindings --repeats 5

The pages are the example report's (``scripts/make_example_pdf.py``) in English and Korean, scanned at 200 dpi
(``scripts/make_example_scan.py``: rendered to grey images, saved as a PDF of images only) and rendered again at
300 dpi, as the app renders a scanned page. Tables:

1. Bindings: seconds a page with Tesseract 5, ``kor+eng``, layout mode 6, words with their boxes, one thread; the
   tesseract program in a child process per page (the app's, the page sent in PNG, and in PGM), pytesseract
   (which runs that program too, through files) and tesserocr (Tesseract in this process, its model loaded
   once). Rows without their package installed are left out (``pip install pytesseract tesserocr``; the app
   needs neither).
2. Character error rate: edit distance between what OCR read and the page's text (its PDF text layer), over the
   page's characters, with runs of white space as one space ("CER") and with no white space at all ("CER
   without spaces": Tesseract's Korean data often reads a word's syllables apart, "도 서 관 은", which that
   leaves out). The app's reading (:func:`littlebird.documents.pdf.read_pdf`) and other settings of the program.
3. End to end: ``littlebird ask`` on a scan of the report's first pages, in a fresh process (Python, torch and
   the checkpoint load included), for the architect of the branch on page 6, and the reading of the scan alone.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # one thread for every binding, tesserocr's included


def _scan_module():
    spec = importlib.util.spec_from_file_location("make_example_scan", ROOT / "scripts" / "make_example_scan.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def distance(a: str, b: str) -> int:
    """Levenshtein distance between ``a`` and ``b`` (characters)."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def error_rates(read: list[str], truth: list[str]) -> tuple[float, float]:
    """(CER, CER without spaces) of the pages ``read`` against the pages ``truth``, over all their characters."""
    spaced = [(" ".join(r.split()), " ".join(t.split())) for r, t in zip(read, truth)]
    bare = [(re.sub(r"\s", "", r), re.sub(r"\s", "", t)) for r, t in zip(read, truth)]
    return tuple(sum(distance(r, t) for r, t in pairs) / sum(len(t) for _, t in pairs) for pairs in (spaced, bare))


def _png(image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=1)
    return out.getvalue()


def _pgm(image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PPM")
    return out.getvalue()


def program_words(image, languages: str = "kor+eng", layout: int = 6, encode=_png) -> str:
    """The page's words by the tesseract program in a child process, as the app runs it (the page in PNG on its
    standard input; ``encode=_pgm`` sends uncompressed PGM instead)."""
    done = subprocess.run(
        ["tesseract", "stdin", "stdout", "-l", languages, "--psm", str(layout), "--dpi", "300", "tsv"],
        input=encode(image),
        capture_output=True,
        check=True,
    )
    rows = [row.split("\t") for row in done.stdout.decode("utf-8").splitlines()[1:]]
    return " ".join(row[11] for row in rows if len(row) == 12 and row[0] == "5" and row[11].strip())


def _bindings() -> dict:
    """{name: function(image) -> words} for each binding installed."""
    bindings = {
        "tesseract program, a child process per page, PNG on its input (the app's)": program_words,
        "tesseract program, a child process per page, PGM on its input": lambda image: program_words(
            image, encode=_pgm
        ),
    }
    try:
        import pytesseract

        def with_pytesseract(image) -> str:
            data = pytesseract.image_to_data(
                image, lang="kor+eng", config="--psm 6 --dpi 300", output_type=pytesseract.Output.DICT
            )
            return " ".join(word for word, level in zip(data["text"], data["level"]) if level == 5 and word.strip())

        bindings["pytesseract (runs the program, through files)"] = with_pytesseract
    except ImportError:
        pass
    try:
        import tesserocr

        api = tesserocr.PyTessBaseAPI(
            path="/usr/share/tesseract-ocr/5/tessdata/", lang="kor+eng", psm=tesserocr.PSM.SINGLE_BLOCK
        )

        def with_tesserocr(image) -> str:
            api.SetImage(image)
            api.SetSourceResolution(300)
            rows = [row.split("\t") for row in api.GetTSVText(0).splitlines()]
            return " ".join(row[11] for row in rows if len(row) == 12 and row[0] == "5" and row[11].strip())

        bindings[f"tesserocr {tesserocr.__version__} (in this process, model loaded once)"] = with_tesserocr
    except ImportError:
        pass
    return bindings


def _page_texts(raw) -> list[str]:
    """The text the app read on each page of a scanned PDF's RawDocument."""
    pages = [""] * raw.n_pages
    for block in raw.blocks:
        for piece, page in block.pieces:
            pages[page - 1] += " " + piece
    return pages


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=4, help="pages a language for the bindings and error rates")
    parser.add_argument("--ask-pages", type=int, default=10, help="pages of the scan `littlebird ask` reads")
    parser.add_argument("--repeats", type=int, default=3, help="runs a page for the bindings; the median is shown")
    parser.add_argument("--tables", default="bindings,errors,ask", help="which tables to print, by name")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    scan = _scan_module()
    scans = {language: scan.report_scan(language, pages=args.pages) for language in ("en", "ko")}
    images = {language: scan.rendered_pages(data, dpi=300) for language, (data, _) in scans.items()}
    if "bindings" in args.tables:
        _bindings_table(images, args.pages, args.repeats)
    if "errors" in args.tables:
        _errors_table(scans, images, args.pages)
    if "ask" in args.tables:
        _ask_table(scan, args.ask_pages)


def _bindings_table(images: dict, pages: int, repeats: int) -> None:
    """Table 1: each binding's seconds a page, the median of ``repeats`` runs a page, the bindings taking turns
    so that a busy spell of the machine falls on all of them."""
    print(
        f"Bindings: seconds a page ({pages} pages a language at 300 dpi, kor+eng, layout 6, one thread; "
        f"medians of {repeats})\n"
    )
    print("| binding | English s/page | Korean s/page | vs the program |")
    print("|---|---:|---:|---:|")
    bindings = _bindings()
    times = {
        (name, language, page): [] for name in bindings for language in images for page in range(len(images[language]))
    }
    for _ in range(repeats):
        for language, page_images in images.items():
            for page, image in enumerate(page_images):
                for name, binding in bindings.items():
                    start = time.perf_counter()
                    binding(image)
                    times[name, language, page].append(time.perf_counter() - start)
    baseline = None
    for name in bindings:
        seconds = {
            language: statistics.mean(
                statistics.median(times[name, language, page]) for page in range(len(page_images))
            )
            for language, page_images in images.items()
        }
        total = sum(seconds.values())
        baseline = baseline or total
        print(f"| {name} | {seconds['en']:.2f} | {seconds['ko']:.2f} | {total / baseline:.2f}x |")
    from PIL import Image

    blank = Image.new("L", (200, 100), 255)
    starting = []
    for _ in range(5):
        start = time.perf_counter()
        program_words(blank)
        starting.append(time.perf_counter() - start)
    print(
        f"\nThe program on a blank 200 x 100 image (starting and loading kor+eng only, median of 5): "
        f"{statistics.median(starting):.2f} s"
    )


def _errors_table(scans: dict, images: dict, pages: int) -> None:
    """Table 2: the character error rates of the app's reading and of other settings of the program."""
    from littlebird.documents.pdf import read_pdf

    names = {"en": "English", "ko": "Korean"}
    print(f"\nCharacter error rate against the pages' text ({pages} pages a language)\n")
    print("| reading | language | CER | CER without spaces | s/page |")
    print("|---|---|---:|---:|---:|")
    for language, (data, truth) in scans.items():
        start = time.perf_counter()
        raw = read_pdf(data, source="scan.pdf", ocr_seconds=3600)
        seconds = (time.perf_counter() - start) / len(truth)
        cer, bare = error_rates(_page_texts(raw), truth)
        print(
            f"| the app: kor+eng, layout 6, Hangul pages again in kor | {names[language]} | {cer:.3f} | "
            f"{bare:.3f} | {seconds:.2f} (pages two at a time) |"
        )
        for languages, layout in (("kor+eng", 6), ("eng+kor", 6), ("kor+eng", 3)):
            start = time.perf_counter()
            read = [program_words(image, languages, layout) for image in images[language]]
            seconds = (time.perf_counter() - start) / len(truth)
            cer, bare = error_rates(read, truth)
            print(f"| {languages}, layout {layout} | {names[language]} | {cer:.3f} | {bare:.3f} | {seconds:.2f} |")


def _ask_table(scan, n_pages: int) -> None:
    """Table 3: `littlebird ask` on an ``n_pages``-page English scan, and the reading alone."""
    from littlebird.documents.pdf import read_pdf

    print(f"\nEnd to end: a {n_pages}-page English scan\n")
    data, _ = scan.report_scan("en", pages=n_pages)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scan.pdf"
        path.write_bytes(data)
        start = time.perf_counter()
        raw = read_pdf(data, source="scan.pdf")
        reading = time.perf_counter() - start
        fact = scan._report_module().library_facts("en")[3]  # section 4, page 6
        question = f"Which architect designed the building of the {fact['branch']} Library?"
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "littlebird", "ask", str(path), question, "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        asking = time.perf_counter() - start
    payload = json.loads(done.stdout)
    print("| step | seconds |")
    print("|---|---:|")
    print(f"| reading the scan: rendering and OCR, {raw.n_pages} pages | {reading:.1f} |")
    verdict = "right" if payload["answer"] == fact["architect"] and payload["page"] == 6 else "wrong"
    print(
        f"| `littlebird ask` in a fresh process, reading included: {payload['answer']!r} on page {payload['page']} "
        f"({verdict}) | {asking:.1f} |"
    )


if __name__ == "__main__":
    main()
