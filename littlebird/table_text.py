"""How a table reaches the model: each row as one prose-like unit, each cell after its column's header.

The model was trained on prose. A table written as tag tokens between its cells (``<tr> <td> October 17
<td> Michigan``) it cannot read; the same row written as a sentence with the column headers before the
cells (``<p> Date: October 17; Opponent: Michigan; Site: Kinnick Stadium.``) it answers from.

This module plans a table's model text from its cells alone, for every source of tables (the HTML
cleaner, which Word and Markdown files reach too, and the page-shaped training pages), so that all of
them write one form:

1. :func:`grid` lays the rows out by column, expanding ``colspan`` and ``rowspan``;
2. :func:`table_plan` finds the rows that name the columns (``<th>`` rows, or a first row of short labels
   above a table of three or more columns) and :func:`column_headers` what each column is called;
3. :func:`row_plan` writes each data row as a list of :class:`Piece`: tag tokens, model-only text (the
   headers, the separators) and the cells, which the caller writes with their characters mapped to the
   shown text. Inserted text maps to -1, like a tag token.

The forms (:data:`TABLE_FORMS`) are the ones measured on the dev files (``docs/evaluation.md``):

- ``tags``: ``<table> <tr> <th> Date <th> Opponent <tr> <td> October 17 <td> Michigan``;
- ``header-tags``: the same rows with each cell after its header, ``<tr> <td> Date: October 17 <td> ...``;
- ``rows``: one paragraph a row, no cell tags, ``<p> Date: October 17; Opponent: Michigan.``;
- ``named-rows``: ``rows`` with the table's name (its caption, the heading above it, or its title row) before
  each row, ``<p> Schedule, Date: October 17; Opponent: Michigan.``
- ``ranked-rows`` (the default, which reads best): ``named-rows``, then units that say which row holds each
  number column's highest and lowest value and which comes first and last, by the row's key cell (the first
  column of words): ``<p> Schedule, highest, most Attendance: Nebraska, 60,160; lowest, least ...``. Their
  cells are the table's own written again, so an answer there is still a span of the shown table. Most
  questions about a table compare its rows ("which game had the most attendance?"), which an extractive
  reader cannot do by reading the rows one by one.
- ``ordered-rows``: ``ranked-rows`` with each data row naming its neighbours by their key cells, as model-only
  text: ``<p> Medals, Nation: Slovenia; Gold: 3; after Spain; before Turkey.``, written for the questions that
  place a row by the one above or below it ("which country is above Turkey?"); the neighbour's name, not being
  shown text, is no span to answer with. Measured, it reads those questions worse than ``ranked-rows``.

Two-cell rows without column headers (an infobox, a key-value list) become ``<p> Born: June 5, 1950.``,
and a row whose one cell spans the table (a section row) a paragraph of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from .language import has_hangul

TABLE_FORMS = ("tags", "header-tags", "rows", "named-rows", "ranked-rows", "ordered-rows")
_NAMED_FORMS = ("named-rows", "ranked-rows", "ordered-rows")  # the table's name before every row
_RANKED_FORMS = ("ranked-rows", "ordered-rows")  # the ranked units after the rows
DEFAULT_TABLE_FORM = "ranked-rows"  # docs/evaluation.md: the best F1 on real pages' tables

MAX_LABEL_WORDS = 6  # a header is repeated on every row: long ones are cut to their first words ...
MAX_LABEL_CHARACTERS = 40  # ... and characters
MAX_NAME_WORDS = 8  # a table's name before every row (``named-rows``, ``ranked-rows``), cut the same way
MIN_HEADER_COLUMNS = 3  # a first row of <td> labels counts as a header only in a table this wide
MAX_GUESSED_LABEL_WORDS = 5  # ... whose first-row cells are each this short
MAX_COLSPAN = 64  # spans are attributes anyone can write: a cell covers at most this many columns ...
MAX_ROWSPAN = 1000  # ... and rows
MAX_REPEATED_CHARACTERS = 200  # a rowspan's cell is written again in each row it covers only if this short
_ENDS_SENTENCE = ".!?。"
_DIGITS_ONLY = re.compile(r"^[\d\s.,:%+\-–—/()$€£₩]+$")


@dataclass(frozen=True)
class TableCell:
    """One cell as its source gives it: ``content`` is what the caller writes (an element, a text), ``text``
    its plain text (for headers and emptiness), ``header`` whether it is a ``<th>``."""

    content: Any
    text: str
    header: bool = False
    colspan: int = 1
    rowspan: int = 1


@dataclass(frozen=True)
class Slot:
    """A cell at one position of the grid: ``first`` is False where a ``rowspan`` repeats it from above, and
    ``width`` is how many columns it covers from ``column``."""

    cell: TableCell
    column: int
    width: int
    first: bool


@dataclass(frozen=True)
class Piece:
    """One step of a row's model text: ``tag`` (a tag token), ``label`` (model-only text after a space),
    ``glue`` (model-only text right after the last character) or ``cell`` (``slot``'s text, after a space)."""

    kind: str
    text: str = ""
    slot: Slot | None = None


def check_table_form(form: str) -> str:
    """``form`` if it is one of :data:`TABLE_FORMS`, else a ValueError that lists them."""
    if form not in TABLE_FORMS:
        raise ValueError(f"table_form must be one of {', '.join(TABLE_FORMS)}; got {form!r}")
    return form


def plain(text: str) -> str:
    """Whitespace collapsed, as a header or a name is written."""
    return " ".join(text.split())


def _capped(text: str, words: int) -> str:
    parts = plain(text).split(" ")
    short = " ".join(parts[:words])
    if len(short) > MAX_LABEL_CHARACTERS:
        short = short[:MAX_LABEL_CHARACTERS].rsplit(" ", 1)[0] or short[:MAX_LABEL_CHARACTERS]
    return short.rstrip(":：").strip()


def grid(rows: Sequence[Sequence[TableCell]]) -> list[list[Slot]]:
    """Each row's slots in column order, ``rowspan`` cells repeated (``first=False``) in the rows they cover; a
    long one keeps its columns there but is not repeated. Spans are capped (:data:`MAX_COLSPAN`,
    :data:`MAX_ROWSPAN`), so no table's attributes make the work unbounded."""
    laid: list[list[Slot]] = []
    pending: dict[int, tuple[Slot, int]] = {}  # column -> (slot from above, rows it still covers)
    for cells in rows:
        row: list[Slot] = []
        column = 0
        queue = list(cells)
        while queue or any(c >= column for c in pending):
            if column in pending:
                slot, left = pending.pop(column)
                row.append(Slot(slot.cell, column, slot.width, False))
                if left > 1:
                    pending[column] = (slot, left - 1)
                column += slot.width
                continue
            if not queue:
                column = min(c for c in pending if c >= column)  # a gap before a cell a rowspan carries
                continue
            cell = queue.pop(0)
            width = max(1, min(cell.colspan, MAX_COLSPAN))
            slot = Slot(cell, column, width, True)
            row.append(slot)
            if cell.rowspan > 1:
                carried = cell if len(cell.text) <= MAX_REPEATED_CHARACTERS else TableCell(None, "", cell.header)
                pending[column] = (Slot(carried, column, width, True), min(cell.rowspan, MAX_ROWSPAN) - 1)
            column += width
        laid.append(row)
    return laid


def _filled(row: Sequence[Slot]) -> list[Slot]:
    return [slot for slot in row if slot.cell.text.strip()]


def _is_header_row(row: Sequence[Slot]) -> bool:
    """All ``<th>``, and more than one cell: a single header cell across the table titles it, naming no column."""
    filled = _filled(row)
    return len(filled) > 1 and all(slot.cell.header for slot in filled)


def _looks_like_labels(row: Sequence[Slot]) -> bool:
    """A first row of ``<td>`` cells that reads as column names: every cell filled, short and not a number."""
    return all(
        slot.cell.text.strip()
        and len(slot.cell.text.split()) <= MAX_GUESSED_LABEL_WORDS
        and not _DIGITS_ONLY.match(slot.cell.text.strip())
        for slot in row
    )


def _guessed_header(rows: Sequence[Sequence[Slot]], n_columns: int) -> int | None:
    """The index of a first row of ``<td>`` labels in a table without ``<th>`` rows (Word and Markdown tables
    often have none): at least :data:`MIN_HEADER_COLUMNS` columns, two data rows below it."""
    filled_rows = [index for index, row in enumerate(rows) if _filled(row)]
    if n_columns < MIN_HEADER_COLUMNS or len(filled_rows) < 3:
        return None
    first = rows[filled_rows[0]]
    return filled_rows[0] if len(first) >= MIN_HEADER_COLUMNS and _looks_like_labels(first) else None


def width(rows: Sequence[Sequence[Slot]]) -> int:
    """The number of columns of the laid-out table."""
    return max((slot.column + slot.width for row in rows for slot in row), default=0)


@dataclass(frozen=True)
class Headers:
    """The column headers in force: ``stacks[c]`` the header texts above column ``c``, top to bottom, and
    ``labels[c]`` the one its cells carry."""

    stacks: tuple[tuple[str, ...], ...]
    labels: tuple[str, ...]

    def label_of(self, slot: Slot) -> str:
        """A cell's header: its column's; for a cell across columns the lowest header over all of them ("World
        Cup record" over "Did not enter"), else none. None either for a cell that repeats its header."""
        if slot.width == 1:
            label = self.labels[slot.column] if slot.column < len(self.labels) else ""
        else:
            stacks = self.stacks[slot.column : slot.column + slot.width]
            shared = [parts[0] for parts in zip(*stacks) if len(set(parts)) == 1]
            label = _capped(shared[-1], MAX_LABEL_WORDS) if shared and len(stacks) == slot.width else ""
        return "" if label == plain(slot.cell.text) else label


def column_headers(heads: Sequence[Sequence[Slot]], n_columns: int) -> Headers:
    """Each column's header: the lowest header text above it ("Pld" under "World Cup record"), with the one
    above it where two columns would otherwise share a name ("World Cup record W", "Qualifying W"); cut short."""
    stacks = []
    for column in range(n_columns):
        parts: list[str] = []
        for row in heads:
            for slot in row:
                text = plain(slot.cell.text)
                if slot.column <= column < slot.column + slot.width and text and (not parts or parts[-1] != text):
                    parts.append(text)
        stacks.append(tuple(parts))
    lowest = [parts[-1] if parts else "" for parts in stacks]
    labels = []
    for parts, label in zip(stacks, lowest):
        if label and lowest.count(label) > 1 and len(parts) > 1:
            label = f"{parts[-2]} {label}"
        labels.append(_capped(label, MAX_LABEL_WORDS))
    return Headers(tuple(stacks), tuple(labels))


NO_HEADERS = Headers((), ())


def row_plan(row: Sequence[Slot], headers: Headers, form: str, n_columns: int, name: str = "") -> list[Piece]:
    """The pieces of one data row in ``form`` (not ``tags``, whose rows the caller writes as they were)."""
    filled = [slot for slot in row if slot.cell.text.strip()]
    if not filled:
        return []
    spanning = len(filled) == 1 and filled[0].width == n_columns  # a section row: its own unit, no header
    if form == "header-tags":
        pieces = [Piece("tag", "<tr>")]
        for slot in filled:
            pieces.append(Piece("tag", "<th>" if slot.cell.header else "<td>"))
            label = "" if spanning else headers.label_of(slot)
            if label:
                pieces.append(Piece("label", label + ":"))
            pieces.append(Piece("cell", slot=slot))
        return pieces
    pieces = [Piece("tag", "<p>")]
    # The name before every row, a section or title row too (measured: docs/evaluation.md).
    if form in _NAMED_FORMS and name:
        pieces.append(Piece("label", _capped(name, MAX_NAME_WORDS) + ","))
    key_value = not any(headers.labels) and len(filled) == 2
    for index, slot in enumerate(filled):
        if index:
            pieces.append(Piece("glue", ":" if key_value and index == 1 else ";"))
        label = "" if spanning else headers.label_of(slot)
        if label:
            pieces.append(Piece("label", label + ":"))
        pieces.append(Piece("cell", slot=slot))
    pieces.append(Piece("glue", "."))  # the caller drops it after a sentence's own end
    return pieces


def header_plan(row: Sequence[Slot], form: str) -> list[Piece]:
    """A header row's own unit: its cells in order (``<p> Line; From; To.``), so that a question whose answer
    is a column's name finds it on the page, and the rows below read as its continuation."""
    pieces = [Piece("tag", "<tr>" if form == "header-tags" else "<p>")]
    for index, slot in enumerate(slot for slot in row if slot.cell.text.strip() and slot.first):
        if form == "header-tags":
            pieces.append(Piece("tag", "<th>"))
        elif index:
            pieces.append(Piece("glue", ";"))
        pieces.append(Piece("cell", slot=slot))
    if form != "header-tags":
        pieces.append(Piece("glue", "."))
    return pieces


MIN_RANKED_ROWS = 3  # a column is ranked only in a table with this many data rows ...
MIN_NUMBER_SHARE = 0.7  # ... whose filled cells are numbers at least this often
MAX_RANKED_COLUMNS = 8  # at most this many columns' extremes per table
_FOOTNOTE = re.compile(r"\[[^\]]{0,8}\]")
_NUMBER_CELL = re.compile(  # a sign, digits with separators, minutes:seconds, then one unit (m, metres, %, 분)
    r"^[^\d+\-−–]{0,3}([+\-−–]?)(\d[\d,\u00a0\u202f]*(?:\.\d+)?)(?::(\d{1,2}(?:\.\d+)?))?"
    r"\s*(?:[%°'\"″′]|[A-Za-z]{1,10}\.?|[\uac00-\ud7a3]{1,3})?$"
)


def cell_number(text: str) -> float | None:
    """The number a cell holds ("60,160", "12.87", "1:45.30" as seconds, "$3.5", "45%", "+3", "109 m"), or None."""
    text = _FOOTNOTE.sub("", plain(text))
    match = _NUMBER_CELL.match(text)
    if not match:
        return None
    sign, whole, seconds = match.groups()
    digits = whole.replace(",", "").replace("\u00a0", "").replace("\u202f", "")
    try:
        value = float(digits)
    except ValueError:
        return None
    if seconds is not None:
        value = value * 60 + float(seconds)
    return -value if sign and sign not in "+" else value


RANK_WORDS = {
    "en": ("highest, most", "lowest, least", "first", "last"),
    "ko": ("가장 높은, 가장 많은", "가장 낮은, 가장 적은", "첫째", "마지막"),
}
# ``ordered-rows``: after the row above, before the one below, by its key cell
ORDER_WORDS = {"en": ("after {}", "before {}"), "ko": ("{} 다음", "{} 이전")}


def _ranked_table(rows: Sequence[tuple[Sequence[Slot], Headers]], n_columns: int):
    """The data rows (two filled cells or more, under column headers) as ``{column: slot}``, the key column (the
    first of words whose cells differ) and each number column's ``(value, row index)`` pairs; None without a key."""
    data = [rows[index] for index in _ranked_rows(rows)]
    if len(data) < MIN_RANKED_ROWS:
        return None
    by_column = [{slot.column: slot for slot in _filled(row) if slot.width == 1} for row, _ in data]
    numbers: dict[int, list[tuple[float, int]]] = {}
    key = None
    for column in range(n_columns):
        cells = [(index, cells[column]) for index, cells in enumerate(by_column) if column in cells]
        if len(cells) < MIN_RANKED_ROWS:
            continue
        parsed = [(cell_number(slot.cell.text), index) for index, slot in cells]
        found = [(value, index) for value, index in parsed if value is not None]
        if len(found) >= MIN_RANKED_ROWS and len(found) >= MIN_NUMBER_SHARE * len(cells):
            if len({value for value, _ in found}) > 1:
                numbers[column] = found
        elif key is None and len({plain(slot.cell.text) for _, slot in cells}) > 1:
            key = column
    if key is None:
        return None
    return data, by_column, key, numbers


def _ranked_rows(rows: Sequence[tuple[Sequence[Slot], Headers]]) -> list[int]:
    """The indices of the rows :func:`_ranked_table` keeps as its data (two filled cells or more, under headers)."""
    return [index for index, (row, headers) in enumerate(rows) if len(_filled(row)) > 1 and any(headers.labels)]


def _add_neighbours(plans: list[tuple[str, list[Piece]]], plan_indices: Sequence[int], table) -> None:
    """``ordered-rows``: each data row's unit (``plans[plan_indices[i]]``, data row i) ends by naming the rows
    above and below it by their key cells, as model-only labels (``; after Spain; before Turkey.``)."""
    data, by_column, key, _ = table
    words = ORDER_WORDS["ko" if has_hangul(" ".join(data[0][1].labels)) else "en"]

    def key_text(index: int) -> str:
        slot = by_column[index].get(key) if 0 <= index < len(by_column) else None
        return _capped(slot.cell.text, MAX_LABEL_WORDS) if slot else ""

    for index, plan_index in enumerate(plan_indices):
        pieces = plans[plan_index][1]
        if not pieces or pieces[-1].kind != "glue":
            continue
        added = []
        for word, neighbour in ((words[0], index - 1), (words[1], index + 1)):
            text = key_text(neighbour)
            if text:
                added += [Piece("glue", ";"), Piece("label", word.format(text))]
        pieces[-1:-1] = added


def _again(slot: Slot) -> Piece:
    return Piece("cell", slot=Slot(slot.cell, slot.column, slot.width, False))


def _ranked_plans(table, name: str) -> list[list[Piece]]:
    """Units that name each number column's highest and lowest row, and the first and last row, by the row's
    key cell: ``<p> Medals, highest, most Gold: Japan, 12; lowest, least Gold: Peru, 1.`` Their cells are the
    table's own, written again (``first=False``), so an answer there is a span of the shown table."""
    data, by_column, key, numbers = table
    words = RANK_WORDS["ko" if has_hangul(" ".join(data[0][1].labels)) else "en"]
    prefix = [Piece("tag", "<p>")] + ([Piece("label", _capped(name, MAX_NAME_WORDS) + ",")] if name else [])

    def naming(index: int) -> list[Piece]:
        slot = by_column[index].get(key)
        return [_again(slot)] if slot else []

    plans = []
    first_last: list[Piece] = []
    for word, index in ((words[2], 0), (words[3], len(data) - 1)):
        named = naming(index)
        if named:
            first_last += ([Piece("glue", ";")] if first_last else []) + [Piece("label", word + ":")] + named
    if first_last:
        plans.append(prefix + first_last + [Piece("glue", ".")])
    for column, found in list(numbers.items())[:MAX_RANKED_COLUMNS]:
        label = data[0][1].labels[column] if column < len(data[0][1].labels) else ""
        if not label:
            continue
        pieces = list(prefix)
        for word, (_, index) in (
            (words[0], max(found, key=lambda f: f[0])),
            (words[1], min(found, key=lambda f: f[0])),
        ):
            named = naming(index)
            if not named:
                continue
            if len(pieces) > len(prefix):
                pieces.append(Piece("glue", ";"))
            pieces += (
                [Piece("label", f"{word} {label}:")] + named + [Piece("glue", ","), _again(by_column[index][column])]
            )
        if len(pieces) > len(prefix):
            plans.append(pieces + [Piece("glue", ".")])
    return plans


def table_plan(rows: Sequence[Sequence[TableCell]], form: str, name: str = "") -> list[tuple[str, list[Piece]]]:
    """Every unit of a table in ``form``: ``(role, pieces)``, the role "header", "row" or "ranked" (the ranked
    units of ``ranked-rows``, after the rows). A header row is written once as it stands
    (:func:`header_plan`) and its cells label the rows below (consecutive ones combine, "Goals" under "Season"
    naming "Season Goals"); a header row further down (Wikipedia repeats them, or starts a section with one)
    names the columns from there on. A table whose rows are all headers has none: its rows are its data.
    Empty rows have no pieces."""
    laid = grid(rows)
    n_columns = width(laid)
    data_rows = [row for row in laid if _filled(row)]
    all_head = bool(data_rows) and all(_is_header_row(row) for row in data_rows)
    if not any(_is_header_row(row) for row in laid):
        guessed = _guessed_header(laid, n_columns)
    else:
        guessed = None
    first = next(iter(data_rows), [])
    if n_columns > 1 and len(_filled(first)) == 1 and _filled(first)[0].width == n_columns:
        name = plain(_filled(first)[0].cell.text)  # a title row across the table names it (an infobox's)
    headers = NO_HEADERS
    heads: list[Sequence[Slot]] = []
    plans: list[tuple[str, list[Piece]]] = []
    data_rows_seen: list[tuple[Sequence[Slot], Headers]] = []
    plan_of_row: list[int] = []  # each of data_rows_seen's index in plans
    for index, row in enumerate(laid):
        if index == guessed or (not all_head and _is_header_row(row)):
            heads.append(row)
            headers = column_headers(heads, n_columns)
            plans.append(("header", header_plan(row, form)))
            continue
        if _filled(row):
            heads = []
            data_rows_seen.append((row, headers))
            plan_of_row.append(len(plans))
        plans.append(("row", row_plan(row, headers, form, n_columns, name)))
    table = _ranked_table(data_rows_seen, n_columns) if form in _RANKED_FORMS else None
    if table is not None and form == "ordered-rows":
        _add_neighbours(plans, [plan_of_row[i] for i in _ranked_rows(data_rows_seen)], table)
    if table is not None:
        plans.extend(("ranked", pieces) for pieces in _ranked_plans(table, name))
    return plans


def glue_needed(glue: str, before: str) -> bool:
    """Whether model-only ``glue`` goes after text ending in ``before``: no full stop after a sentence's own
    end, no colon after a colon, nothing after nothing."""
    if not before:
        return False
    if glue == ".":
        return before not in _ENDS_SENTENCE
    return before != glue and not (glue == ":" and before in ":：")
