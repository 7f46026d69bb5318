"""How much of a real web page survives cleaning: headings, answers, boilerplate and time per page.

Every page of ``../shared/data/qa/wtq-train-pages.jsonl.gz`` (1,678 whole English Wikipedia articles as
Wikipedia renders them, each with questions about one of its tables) goes through three extractions:

- ``clean_document``, the app's cleaner (what the model reads and the user sees);
- trafilatura alone (``extract(..., include_tables=True, favor_recall=True)``), the baseline;
- the page's visible text: lxml's text of the whole page with scripts, styles, ``display:none`` elements and
  the table of contents removed, and no other boilerplate removal (the ceiling for answers).

Columns:

- ``headings``: the page's section headings (h1-h6 outside the table of contents) found as a heading of the
  cleaned model text (a ``<h1>``/``<h2>`` token before the heading's words); trafilatura's Markdown headings
  for its row;
- ``answers``: of the questions whose every answer value is in the visible text (as words, whitespace and
  case aside), the share whose values are all still in the extraction;
- ``boilerplate``: characters of the page's boilerplate elements (table of contents, edit links, reference
  markers, navboxes and "v t e" bars, hidden elements, citation metadata) whose text is still in the
  extraction, per page; an element counts when its text (3 or more characters) appears verbatim;
- ``ms/page``: the median extraction time.

With ``--other-sites DIR`` (a fetched copy of trafilatura's repository, which keeps about a hundred saved real
pages of other sites with the strings its tests expect in and out of the extraction in
``tests/realworld_tests.py``), a second table gives, for the same cleaners, the share of expected strings
kept and of unwanted strings dropped. Those pages are read from the copy; none is committed here.

    python benchmarks/clean_real_pages.py --data ../shared/data --other-sites /path/to/trafilatura
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import trafilatura
from lxml import html as lxml_html

from littlebird.documents.clean import clean_document
from littlebird.documents.decode import RawDocument, decode_bytes
from littlebird.vocabulary import TAG_TOKENS

# What the issue calls boilerplate on a MediaWiki page, by class and id.
BOILERPLATE_CLASSES = {
    "toc",
    "mw-editsection",
    "reference",
    "navbox",
    "navbar",
    "vertical-navbox",
    "Z3988",
    "mw-cite-backlink",
    "sortkey",
}  # Wikipedia's style sheet hides sort keys
BOILERPLATE_IDS = {"toc", "toctitle"}
_HIDDEN = re.compile(r"display\s*:\s*none", re.IGNORECASE)
_HEADING_SPLIT = re.compile("|".join(re.escape(token) for token in TAG_TOKENS))


def normalize(text: str) -> str:
    """Words joined by single spaces, lower case, non-breaking spaces as spaces."""
    return " ".join(text.replace("\xa0", " ").split()).lower()


def contains(haystack: str, needle: str) -> bool:
    """``needle`` in ``haystack`` as whole words (both normalized); a number must not sit inside a longer one."""
    needle = normalize(needle)
    if not needle:
        return False
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = haystack[max(0, start - 2) : start].rjust(2)
        after = haystack[end : end + 2].ljust(2)
        glued_before = before[1].isalnum() or (before[1] in ".," and before[0].isdigit())
        glued_after = after[0].isalnum() or (after[0] in ".," and after[1].isdigit())
        if not (glued_before and needle[0].isalnum()) and not (glued_after and needle[-1].isalnum()):
            return True
        start = haystack.find(needle, start + 1)
    return False


def page_html(row: dict) -> str:
    """The page as a browser would get it: the article body with its title in <title>."""
    return f"<html><head><title>{row['title']} - Wikipedia</title></head><body>{row['html']}</body></html>"


@dataclass
class PageFacts:
    """What the raw page holds: its visible text, section headings and boilerplate texts."""

    visible: str
    headings: list[str]
    boilerplate: list[str]


def _classes(element) -> set[str]:
    return set((element.get("class") or "").split())


def page_facts(html: str) -> PageFacts:
    """Visible text, section headings and boilerplate element texts of one raw page."""
    root = lxml_html.document_fromstring(html)
    for element in list(root.iter("script", "style", "title")):
        element.drop_tree()
    boilerplate, furniture = [], []
    for element in list(root.iter()):
        if not isinstance(element.tag, str):
            continue
        if (
            _classes(element) & BOILERPLATE_CLASSES
            or element.get("id") in BOILERPLATE_IDS
            or _HIDDEN.search(element.get("style") or "")
        ):
            furniture.append(element)
            text = " ".join(element.text_content().split())
            if len(text) >= 3:
                boilerplate.append(text)
    # Hidden elements and the table of contents (whose numbers and titles repeat the headings) are not
    # part of what the page shows as content; reference markers and edit links are left out of headings.
    for element in furniture:
        if (
            _HIDDEN.search(element.get("style") or "")
            or element.get("id") in BOILERPLATE_IDS
            or _classes(element) & {"toc", "sortkey"}
        ):
            element.drop_tree()
    headings = []
    for element in root.iter("h1", "h2", "h3", "h4", "h5", "h6"):
        for marker in [m for m in element.iter() if _classes(m) & BOILERPLATE_CLASSES]:
            marker.drop_tree()
        text = " ".join(element.text_content().split())
        if text:
            headings.append(text)
    return PageFacts(" ".join(root.text_content().split()), headings, boilerplate)


@dataclass
class Extraction:
    """One extractor's text and headings for one page."""

    text: str
    headings: list[str]
    seconds: float


def with_littlebird(html: str) -> Extraction:
    """The app's cleaner: shown text, and the headings as the model reads them."""
    start = time.perf_counter()
    document = clean_document(RawDocument(html, True, "page.html", "utf-8"))
    seconds = time.perf_counter() - start
    headings = []
    pieces = _HEADING_SPLIT.split(document.model_text)
    tokens = _HEADING_SPLIT.findall(document.model_text)
    for token, piece in zip(tokens, pieces[1:]):
        if token in ("<h1>", "<h2>"):
            headings.append(" ".join(piece.split()))
    return Extraction(document.text, headings, seconds)


def with_trafilatura(html: str) -> Extraction:
    """trafilatura alone, as Markdown, so that its headings show."""
    start = time.perf_counter()
    text = (
        trafilatura.extract(
            html, include_tables=True, include_formatting=True, favor_recall=True, output_format="markdown"
        )
        or ""
    )
    seconds = time.perf_counter() - start
    headings = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    return Extraction(text, headings, seconds)


EXTRACTORS: dict[str, Callable[[str], Extraction]] = {
    "littlebird clean_document": with_littlebird,
    "trafilatura alone": with_trafilatura,
}


@dataclass
class Tally:
    """Counts over pages for one extractor."""

    headings: int = 0
    headings_kept: int = 0
    answers: int = 0
    answers_kept: int = 0
    boilerplate_chars: int = 0
    pages: int = 0
    seconds: list[float] = field(default_factory=list)
    lost: list[tuple[str, str]] = field(default_factory=list)  # (page title, answer) the extraction dropped


def read_pages(data: Path, limit: int | None) -> Iterator[dict]:
    """The WikiTableQuestions training pages, in file order."""
    with gzip.open(data / "qa" / "wtq-train-pages.jsonl.gz", "rt", encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if limit is not None and index >= limit:
                return
            yield json.loads(line)


def score_pages(rows, extractors) -> tuple[dict[str, Tally], int, int]:
    """Tally every extractor over the pages; also the questions seen and those answerable from the visible text."""
    tallies = {name: Tally() for name in extractors}
    questions = visible_questions = 0
    for row in rows:
        html = page_html(row)
        facts = page_facts(html)
        visible = normalize(facts.visible)
        answerable = [q for q in row["questions"] if all(contains(visible, value) for value in q["answers"])]
        questions += len(row["questions"])
        visible_questions += len(answerable)
        for name, extract in extractors.items():
            extraction = extract(html)
            tally = tallies[name]
            tally.pages += 1
            tally.seconds.append(extraction.seconds)
            kept = {normalize(h) for h in extraction.headings}
            tally.headings += len(facts.headings)
            tally.headings_kept += sum(normalize(h) in kept for h in facts.headings)
            text = normalize(extraction.text)
            for question in answerable:
                tally.answers += 1
                if all(contains(text, value) for value in question["answers"]):
                    tally.answers_kept += 1
                else:
                    tally.lost.append((row["title"], " | ".join(question["answers"])))
            tally.boilerplate_chars += sum(len(b) for b in facts.boilerplate if normalize(b) in text)
    return tallies, questions, visible_questions


# --- other sites: trafilatura's saved real pages ------------------------------------------------


@dataclass
class SiteCase:
    """One saved page of trafilatura's real-world tests with the strings expected in and out."""

    file: Path
    wanted: list[str]
    unwanted: list[str]


def _string_checks(test: ast.AST, variable: str) -> tuple[list[str], list[str]]:
    wanted, unwanted = [], []
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        left, right = node.left, node.comparators[0]
        if not (isinstance(left, ast.Constant) and isinstance(left.value, str)):
            continue
        if not (isinstance(right, ast.Name) and right.id == variable):
            continue
        (wanted if isinstance(node.ops[0], ast.In) else unwanted).append(left.value)
    return wanted, unwanted


def site_cases(repository: Path) -> list[SiteCase]:
    """Pages of trafilatura's ``tests/realworld_tests.py`` checked as ``"..." in result`` / ``not in result``.

    Each ``result = load_mock_page(URL)`` (default options) is followed by its string checks, up to the
    next assignment of ``result``.
    """
    source = (repository / "tests" / "realworld_tests.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    pages: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MOCK_PAGES" for t in node.targets):
            pages = ast.literal_eval(node.value)
    cases = []
    for function in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")):
        statements = list(function.body)
        for index, statement in enumerate(statements):
            if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)):
                continue
            call = statement.value
            if getattr(call.func, "id", None) not in ("load_mock_page", "do_load_page") or len(call.args) != 1:
                continue
            url = call.args[0].value if isinstance(call.args[0], ast.Constant) else None
            target = statement.targets[0]
            if url not in pages or not isinstance(target, ast.Name):
                continue
            block = []
            for following in statements[index + 1 :]:
                if isinstance(following, ast.Assign) and any(
                    getattr(t, "id", None) == target.id for t in following.targets
                ):
                    break
                block.append(following)
            wanted, unwanted = _string_checks(ast.Module(body=block, type_ignores=[]), target.id)
            file = repository / "tests" / "cache" / pages[url]
            if (wanted or unwanted) and file.exists():
                cases.append(SiteCase(file, wanted, unwanted))
    return cases


def score_sites(cases: list[SiteCase], extractors) -> dict[str, tuple[int, int, int, int]]:
    """Per extractor: (wanted kept, wanted, unwanted dropped, unwanted)."""
    scores = {}
    for name, extract in extractors.items():
        kept = wanted = dropped = unwanted = 0
        for case in cases:
            html, _ = decode_bytes(case.file.read_bytes())
            text = " ".join(extract(html).text.split())
            wanted += len(case.wanted)
            kept += sum(" ".join(s.split()) in text for s in case.wanted)
            unwanted += len(case.unwanted)
            dropped += sum(" ".join(s.split()) not in text for s in case.unwanted)
        scores[name] = (kept, wanted, dropped, unwanted)
    return scores


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--pages", type=int, default=None, help="only the first N pages (default: all 1,678)")
    parser.add_argument(
        "--other-sites",
        type=Path,
        default=None,
        help="a fetched copy of trafilatura's repository, for its saved real pages",
    )
    parser.add_argument("--only", choices=sorted(EXTRACTORS), default=None, help="one extractor")
    parser.add_argument("--show-lost", type=int, default=0, help="print up to N answers the cleaner lost")
    args = parser.parse_args(argv)
    extractors = {args.only: EXTRACTORS[args.only]} if args.only else EXTRACTORS

    tallies, questions, visible_questions = score_pages(read_pages(args.data, args.pages), extractors)
    pages = next(iter(tallies.values())).pages
    print(f"{pages} pages, {questions} questions, {visible_questions} with every answer value in the visible text")
    print()
    print("| extraction | headings kept | answers kept | boilerplate chars / page | ms / page (median) |")
    print("|---|---:|---:|---:|---:|")
    for name, tally in tallies.items():
        print(
            f"| {name} | {tally.headings_kept / max(1, tally.headings):.1%} ({tally.headings_kept:,} of "
            f"{tally.headings:,}) | {tally.answers_kept / max(1, tally.answers):.1%} ({tally.answers_kept:,} of "
            f"{tally.answers:,}) | {tally.boilerplate_chars / max(1, tally.pages):,.0f} | "
            f"{1000 * statistics.median(tally.seconds):.0f} |"
        )
    if args.show_lost:
        for name, tally in tallies.items():
            print(f"\nlost by {name}:")
            for title, answer in tally.lost[: args.show_lost]:
                print(f"  {title}: {answer}")
    if args.other_sites:
        cases = site_cases(args.other_sites)
        print(f"\n{len(cases)} saved pages of other sites (trafilatura's real-world tests)\n")
        print("| extraction | expected strings kept | unwanted strings dropped |")
        print("|---|---:|---:|")
        for name, (kept, wanted, dropped, unwanted) in score_sites(cases, extractors).items():
            print(
                f"| {name} | {kept / max(1, wanted):.1%} ({kept} of {wanted}) | "
                f"{dropped / max(1, unwanted):.1%} ({dropped} of {unwanted}) |"
            )


if __name__ == "__main__":
    main()
