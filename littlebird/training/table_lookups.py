"""Lookups in tables: questions that name a row by its cells and ask for another cell of it.

WikiTableQuestions' questions are mostly comparisons ("which ... had the most") and English only. A table in a
document people upload is often asked the other way: "how long does the crossing from Port Elma to Northhaven
take?" names its row by two cells (From, To), each shared with other rows, and asks for a third (Crossing time).
Trained on comparisons alone, a model reads such a table by the words the question shares with it and answers
from a row that shares most of them (the timetables of ``tests/app/test_file_answers.py``).

This module writes gold-labelled lookups of that kind, as SQuAD articles over the app's own model text (each
table row a sentence of its cells after their headers, :func:`littlebird.documents.clean.clean_document`):

- **English**: the tables of WikiTableQuestions' training pages (``qa/wtq-train-pages.jsonl.gz``; the dev
  split's pages are never read), on the whole cleaned page. A question names its row by one cell that no other
  row of its table holds, or by two cells that together fix it where each alone is shared with another row; it
  asks for one other cell, by its column's header. It is kept only where the page's model text has exactly one
  table row holding the key cells, and the asked cell once in that row.
- **Korean**: there are no Korean pages with tables in the shared data, so each page is built: a Korean
  Wikipedia article's opening (``text/kowiki-sample.jsonl.gz``), a heading and a table of one of a few common
  kinds (routes, match results, town figures, election results, broadcast works, a week's schedule), its names
  drawn from the sample's article titles and its figures at random, so that rows share key cells, then the
  article's next paragraphs. The questions
  are written as the English ones are, in Korean word order with the right particles.

The question forms are templates: a natural question, a question naming the key columns, and a keyword query.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

from .page_tables import TABLE_PAGES_FILE, page_html, read_table_pages, split_table_pages, value_occurrences
from .splits import is_dev_title

KOWIKI_FILE = "text/kowiki-sample.jsonl.gz"
_MAX_CELL = 40  # longer cells are sentences, not keys or answers
_MAX_HEADER = 30
_SPACES = re.compile(r"\s+")
_FOOTNOTE = re.compile(r"\[\s*(?:\d+|[a-z]|note \d+|citation needed)\s*\]")


# ----------------------------------------------------------------------------------------------------------------
# Choosing the question: which row, which key cells, which asked cell


def lookups_in_table(header: list[str], rows: list[list[str]], rng: random.Random, per_table: int) -> list[dict]:
    """Up to ``per_table`` lookups in one table (``rows`` of cells under ``header``), each a dict with ``row``
    (its index), ``keys`` (column indexes naming the row) and ``target`` (the asked column). Two-key lookups
    (each key shared with another row, both together only in this row) come first, then one-key ones."""
    width = len(header)
    usable = [
        c
        for c in range(width)
        if header[c] and len(header[c]) <= _MAX_HEADER and header.count(header[c]) == 1 and not header[c].isdigit()
    ]

    def ok(cell: str) -> bool:
        return bool(cell) and len(cell) <= _MAX_CELL and cell not in header

    two, one = [], []
    for r, row in enumerate(rows):
        for t in usable:
            if not ok(row[t]):
                continue
            keys = [c for c in usable if c != t and ok(row[c]) and row[c] != row[t]]
            for a in keys:
                share_a = sum(other[a] == row[a] for other in rows)
                if share_a == 1:
                    one.append({"row": r, "keys": [a], "target": t})
                    continue
                for b in keys:
                    if b <= a or row[b] == row[a]:
                        continue
                    share_b = sum(other[b] == row[b] for other in rows)
                    both = sum(other[a] == row[a] and other[b] == row[b] for other in rows)
                    if share_b > 1 and both == 1:
                        two.append({"row": r, "keys": [a, b], "target": t})
    rng.shuffle(two)
    rng.shuffle(one)
    chosen, used_rows = [], set()
    for pool, share in ((two, (per_table + 1) // 2 if one else per_table), (one, per_table)):
        for item in pool:
            if len(chosen) >= per_table or sum(len(i["keys"]) == len(item["keys"]) for i in chosen) >= share:
                break
            if (item["row"], item["target"]) in used_rows:
                continue
            used_rows.add((item["row"], item["target"]))
            chosen.append(item)
    if len(chosen) < per_table:  # too few one-key lookups: fill with more two-key ones
        for item in two:
            if len(chosen) >= per_table:
                break
            if (item["row"], item["target"]) not in used_rows:
                used_rows.add((item["row"], item["target"]))
                chosen.append(item)
    return chosen


def locate(document, key_values: list[str], value: str) -> tuple[int, list[int]] | None:
    """The start of ``value`` in ``document``'s model text and the ``[start, end)`` of its table row, where
    exactly one table row holds every key value and ``value`` once (each as whole words from the page, none of
    the headers the cleaner writes); None otherwise."""
    text, mapping = document.model_text, document.model_to_text
    key_starts = [(key, value_occurrences(text, key, mapping)) for key in key_values]
    holding = [
        (start, end)
        for _, start, end in document.table_rows
        if all(any(start <= s and s + len(key) <= end for s in starts) for key, starts in key_starts)
    ]
    innermost = [
        (s, e) for s, e in holding if not any(s <= s2 and e2 <= e and (s2, e2) != (s, e) for s2, e2 in holding)
    ]
    if len(innermost) != 1:
        return None
    start, end = innermost[0]
    found = [s for s in value_occurrences(text, value, mapping) if start <= s and s + len(value) <= end]
    return (found[0], [start, end]) if len(found) == 1 else None


def table_lookups(document, header, rows, rng: random.Random, per_table: int, ask, id_prefix: str) -> list[dict]:
    """The SQuAD questions of one table of ``document`` (:func:`lookups_in_table`, each kept where
    :func:`locate` finds its answer), each worded by ``ask(row, keys, target)``, with its answer's
    ``table_row`` and its ``keys`` (the cells naming the row)."""
    qas = []
    for item in lookups_in_table(header, rows, rng, per_table):
        row = rows[item["row"]]
        value = row[item["target"]]
        keys = [row[k] for k in item["keys"]]
        found = locate(document, keys, value)
        if found is None:
            continue
        qas.append(
            {
                "id": f"{id_prefix}-{item['row']}-{item['target']}",
                "question": ask(row, item["keys"], item["target"]),
                "answers": [{"text": value, "answer_start": found[0]}],
                "table_row": found[1],
                "keys": keys,
            }
        )
    return qas


# ----------------------------------------------------------------------------------------------------------------
# English: the tables of WikiTableQuestions' training pages


def html_tables(html: str) -> list[tuple[list[str], list[list[str]]]]:
    """The page's plain tables as (header, rows): a first row of header cells, then rows as wide as it, no cell
    spanning rows or columns (a spanning table's rows hold cells the question could not name)."""
    import lxml.html

    tree = lxml.html.fromstring(html)
    tables = []
    for table in tree.iter("table"):
        if table.xpath(".//table"):  # a layout table around others
            continue
        rows = [tr for tr in table.iter("tr") if tr.getparent() is table or tr.getparent().getparent() is table]
        if len(rows) < 4:
            continue
        # a cell spanning rows or columns, or whose span is no number ("{{{rows}}}" of an unexpanded template)
        if any((c.get(span) or "1").strip() != "1" for tr in rows for c in tr for span in ("rowspan", "colspan")):
            continue
        first = [c for c in rows[0] if c.tag in ("th", "td")]
        if not first or any(c.tag != "th" for c in first):
            continue
        header = [_cell_text(c) for c in first]
        body = [[_cell_text(c) for c in tr if c.tag in ("th", "td")] for tr in rows[1:]]
        body = [row for row in body if len(row) == len(header)]
        if len(body) >= 3:
            tables.append((header, body))
    return tables


def _cell_text(cell) -> str:
    for sup in cell.xpath(".//sup | .//style | .//script"):
        sup.drop_tree()
    text = _SPACES.sub(" ", cell.text_content()).strip()
    return _FOOTNOTE.sub("", text).strip()


def _english_question(header: list[str], row: list[str], keys: list[int], target: int, rng: random.Random) -> str:
    asked = header[target]
    asked_lower = asked.lower() if not asked.isupper() else asked
    values = [row[k] for k in keys]
    named = [f"{header[k].lower() if not header[k].isupper() else header[k]} {row[k]}" for k in keys]
    form = rng.randrange(4)
    if form == 0:  # a keyword query
        return " ".join([*values, asked_lower])
    if form == 1:
        conditions = " and ".join(f"the {header[k]} is {row[k]}" for k in keys)
        return f"What is the {asked_lower} where {conditions}?"
    if form == 2:
        return f"What {asked_lower} is listed for {' and '.join(named)}?"
    return f"What is the {asked_lower} of {' with '.join(values)}?"


def english_lookup_articles(
    data_dir: str | Path, dev_fraction: float, count: int, seed: int, per_table: int = 3, split: str = "train"
):
    """Up to ``count`` English lookups on the ``split`` ("train" or "dev") pages of WikiTableQuestions' file, as
    SQuAD articles over each cleaned page's model text."""
    from .page_tables import clean_page

    rng = random.Random(seed)
    train, dev = split_table_pages(read_table_pages(Path(data_dir) / TABLE_PAGES_FILE), dev_fraction)
    pages = train if split == "train" else dev
    rng.shuffle(pages)
    articles, total = [], 0
    for page in pages:
        if total >= count:
            break
        tables = html_tables(page_html(page))
        if not tables:
            continue
        document = clean_page(page)
        qas = []
        for t, (header, rows) in enumerate(tables):
            qas += table_lookups(
                document,
                header,
                rows,
                rng,
                per_table,
                lambda row, keys, target, header=header: _english_question(header, row, keys, target, rng),
                f"lookup-en-{page['curid']}-{t}",
            )
        qas = qas[: count - total]
        if qas:
            total += len(qas)
            articles.append({"title": page["title"], "paragraphs": [{"context": document.model_text, "qas": qas}]})
    return articles


# ----------------------------------------------------------------------------------------------------------------
# Korean: built pages, a Korean article's opening and a table of a common kind


def has_final_consonant(word: str) -> bool:
    """Whether ``word`` ends in a closed syllable, which picks the particle after it (은/는, 이/가, 을/를, 과/와)."""
    last = word.rstrip()[-1:] or "가"
    if "가" <= last <= "힣":
        return (ord(last) - ord("가")) % 28 != 0
    if last.isdigit():  # 영 일 이 삼 사 오 육 칠 팔 구
        return last in "013678"
    return last.lower() in "lmnr"  # a Latin letter or unit, read as in English: el, em, en, ar


def particle(word: str, closed: str, open_: str) -> str:
    """``word`` with the particle its last syllable takes: ``particle("동항", "은", "는")`` is "동항은"."""
    return word + (closed if has_final_consonant(word) else open_)


def _time(rng: random.Random) -> str:
    return f"{rng.randrange(5, 23):02d}:{rng.choice(range(0, 60, 5)):02d}"


def _duration(rng: random.Random) -> str:
    minutes = rng.randrange(10, 200, 5)
    hours, minutes = divmod(minutes, 60)
    return " ".join(part for part in (f"{hours}시간" if hours else "", f"{minutes}분" if minutes else "") if part)


def _date(rng: random.Random) -> str:
    return f"{rng.randrange(1, 13)}월 {rng.randrange(1, 29)}일"


def _score(rng: random.Random) -> str:
    return f"{rng.randrange(0, 6)}–{rng.randrange(0, 6)}"


# Each kind: (heading, columns); a column is (header, kind of cell, key?, question word). A key column draws its
# cells from few values, so rows share them; the others differ in every row.
_KINDS = [
    (
        "운행 시간표",
        [
            ("노선", "line", True, "무엇인가"),
            ("출발", "place", True, "어디인가"),
            ("도착", "place", True, "어디인가"),
            ("첫차", "time", False, "언제인가"),
            ("소요 시간", "duration", False, "얼마인가"),
            ("요금", "won", False, "얼마인가"),
        ],
    ),
    (
        "경기 결과",
        [
            ("날짜", "date", False, "언제인가"),
            ("상대", "place", True, "누구인가"),
            ("장소", "venue", True, "어디인가"),
            ("결과", "score", False, "무엇인가"),
            ("관중", "people", False, "몇 명인가"),
        ],
    ),
    (
        "연도별 현황",
        [
            ("지역", "place", True, "어디인가"),
            ("연도", "year", True, "언제인가"),
            ("인구", "people", False, "몇 명인가"),
            ("면적", "area", False, "얼마인가"),
            ("학교 수", "count", False, "몇 개인가"),
        ],
    ),
    (
        "선거 결과",
        [
            ("선거구", "place", True, "어디인가"),
            ("정당", "name", True, "무엇인가"),
            ("후보", "name", False, "누구인가"),
            ("득표수", "count", False, "얼마인가"),
            ("득표율", "percent", False, "얼마인가"),
        ],
    ),
    (
        "출연 작품",
        [
            ("연도", "year", True, "언제인가"),
            ("방송사", "name", True, "어디인가"),
            ("제목", "name", False, "무엇인가"),
            ("역할", "name", False, "무엇인가"),
            ("회차", "episodes", False, "몇 회인가"),
        ],
    ),
    (
        "주간 일정",
        [
            ("요일", "weekday", True, "언제인가"),
            ("장소", "place", True, "어디인가"),
            ("시작", "time", False, "언제인가"),
            ("프로그램", "name", False, "무엇인가"),
            ("담당", "name", False, "누구인가"),
        ],
    ),
]


def _cell(kind: str, rng: random.Random, names: dict[str, list[str]], used: set[str]) -> str:
    for _ in range(20):
        value = {
            "line": lambda: (
                rng.choice(["가", "나", "다", "라", "마", "바"]) if rng.random() < 0.5 else f"{rng.randrange(1, 99)}번"
            ),
            "place": lambda: rng.choice(names["place"]),
            "name": lambda: rng.choice(names["name"]),
            "venue": lambda: rng.choice(["홈", "원정", "중립"]),
            "time": lambda: _time(rng),
            "duration": lambda: _duration(rng),
            "won": lambda: f"{rng.randrange(10, 300) * 100:,}원",
            "date": lambda: _date(rng),
            "score": lambda: _score(rng),
            "people": lambda: f"{rng.randrange(1_000, 900_000):,}명",
            "year": lambda: f"{rng.randrange(1960, 2025)}년",
            "area": lambda: f"{rng.randrange(50, 9_000) / 10:.1f} km²",
            "count": lambda: f"{rng.randrange(3, 90_000):,}",
            "percent": lambda: f"{rng.randrange(50, 700) / 10:.1f}%",
            "episodes": lambda: f"{rng.randrange(8, 120)}회",
            "weekday": lambda: rng.choice(["월요일", "화요일", "수요일", "목요일", "금요일", "토요일", "일요일"]),
        }[kind]()
        if value not in used:
            return value
    return value


def korean_table(
    rng: random.Random, names: dict[str, list[str]], kinds: list[str] | None = None
) -> tuple[str, list[str], list[list[str]], list[str]]:
    """(heading, header, rows, question words) of one built table: 4 to 8 rows, its key columns drawing from 2 or
    3 values each so that rows share them, every other cell different from all others. ``names`` gives the
    cells of its "place" and "name" columns; ``kinds`` (headings of :data:`_KINDS`) limits its kind."""
    heading, columns = rng.choice([kind for kind in _KINDS if kinds is None or kind[0] in kinds])
    others = [i for i, column in enumerate(columns) if not column[2]]
    dropped = set(rng.sample(others, rng.randrange(0, min(2, len(others) - 1) + 1)))
    columns = [column for i, column in enumerate(columns) if i not in dropped]  # every key column stays
    n_rows = rng.randrange(4, 9)
    used: set[str] = set()
    pools = {}
    for header, kind, key, _ in columns:
        if key:
            pool = []
            while len(pool) < rng.randrange(2, 4):
                value = _cell(kind, rng, names, used | set(pool))
                pool.append(value)
            used.update(pool)
            pools[header] = pool
    rows, seen = [], set()
    for _ in range(n_rows * 4):
        if len(rows) >= n_rows:
            break
        keys = tuple(rng.choice(pools[header]) for header, _, key, _ in columns if key)
        if keys in seen:
            continue
        seen.add(keys)
        key_cells = iter(keys)
        row = []
        for header, kind, key, _ in columns:
            if key:
                row.append(next(key_cells))
            else:
                value = _cell(kind, rng, names, used)
                used.add(value)
                row.append(value)
        rows.append(row)
    return heading, [c[0] for c in columns], rows, [c[3] for c in columns]


# Questions that ask for a cell by what it means, not by its column's header: "how long does it take" for the
# crossing time, as people ask. Each names its row with {k}: "A에서 B까지" for a route, else the key cells.
_PLAIN = {
    "소요 시간": ["{k} 가는 데 얼마나 걸리는가?", "{k} 얼마나 걸리는가?", "{k} 가려면 시간이 얼마나 드는가?"],
    "요금": ["{k} 가려면 얼마를 내야 하는가?", "{k} 가는 데 드는 돈은 얼마인가?"],
    "첫차": ["{k} 가장 먼저 떠나는 차는 몇 시인가?", "{k} 몇 시에 처음 출발하는가?"],
    "날짜": ["{k} 경기는 언제 열렸는가?"],
    "결과": ["{k} 경기는 어떻게 끝났는가?"],
    "관중": ["{k} 경기에는 몇 명이 왔는가?"],
    "인구": ["{k} 몇 명이 살았는가?"],
    "면적": ["{k} 넓이는 얼마인가?"],
    "학교 수": ["{k} 학교는 몇 개였는가?"],
    "득표수": ["{k} 몇 표를 얻었는가?"],
    "득표율": ["{k} 몇 퍼센트를 얻었는가?"],
    "후보": ["{k} 누가 나왔는가?"],
    "제목": ["{k} 어떤 작품에 나왔는가?"],
    "역할": ["{k} 누구를 연기했는가?"],
    "회차": ["{k} 몇 회까지 방송되었는가?"],
    "시작": ["{k} 몇 시에 시작하는가?"],
    "프로그램": ["{k} 무엇을 하는가?"],
    "담당": ["{k} 누가 맡는가?"],
}


# The same for a route table that names its vehicle in a column's header ("첫 배"), the question naming it too:
# "동항에서 북항까지 가는 배는 얼마나 걸리는가" asks for the crossing time, not for the column with "배" in it.
_PLAIN_VEHICLE = {
    "소요 시간": ["{k} {w}를 타고 가면 얼마나 걸리는가?", "{k} 가는 {v} 시간이 얼마나 드는가?"],
    "요금": ["{k} 가는 {v} 얼마인가?", "{k} 가는 {w} 요금은 얼마인가?"],
    "첫": ["{k} 가는 {v} 몇 시에 처음 떠나는가?", "{k} 가는 {v} 언제 처음 출발하는가?"],
}


def _korean_question(
    header: list[str],
    row: list[str],
    keys: list[int],
    target: int,
    word: str,
    rng,
    plain_share: float = 0.0,
    vehicle: str | None = None,
) -> str:
    """A Korean lookup question; with ``plain_share``, that share asks by the cell's meaning where the column
    has such a question (:data:`_PLAIN`, or :data:`_PLAIN_VEHICLE` naming the table's ``vehicle``), without its
    header."""
    asked = header[target]
    values = [row[k] for k in keys]
    route = len(keys) == 2 and header[keys[0]] == "출발" and header[keys[1]] == "도착"
    plain = _PLAIN.get(asked)
    if vehicle is not None:
        plain = _PLAIN_VEHICLE.get("첫" if asked == f"첫 {vehicle}" else asked)
    if plain_share and plain and rng.random() < plain_share:
        named = f"{values[0]}에서 {values[1]}까지" if route else f"{', '.join(values)}의 경우"
        return rng.choice(plain).format(k=named, v=particle(vehicle or "", "은", "는"), w=vehicle)
    # With the vehicle named, a question about another column names it too ("가는 배의 소요 시간"), so that the
    # vehicle's word is in the questions about every column, not mostly in those about the one it heads.
    ride = f"{vehicle} " if vehicle is not None and asked != f"첫 {vehicle}" else ""
    if route and rng.random() < 0.5:
        go = f"가는 {vehicle}의 " if ride else ""
        return f"{values[0]}에서 {values[1]}까지 {go}{particle(asked, '은', '는')} {word}?"
    form = rng.randrange(3)
    if form == 0:  # a keyword query
        return " ".join([*values, f"{ride}{asked}"])
    if form == 1:
        conditions = ", ".join(f"{particle(header[k], '이', '가')} {row[k]}" for k in keys)
        return f"{conditions}인 경우 {ride}{particle(asked, '은', '는')} {word}?"
    return f"{' '.join(values)}의 {ride}{particle(asked, '은', '는')} {word}?"


_PLACE_ENDINGS = "시군구역항섬읍면동산강주"


def _korean_names(data_dir: str | Path) -> tuple[dict[str, list[str]], list[dict]]:
    """The sample's short one-word titles ("place": those that end as a place's name does) and its articles."""
    names, articles = [], []
    with gzip.open(Path(data_dir) / KOWIKI_FILE, "rt", encoding="utf-8") as handle:
        for line in handle:
            article = json.loads(line)
            title = article["title"].strip()
            if 2 <= len(title) <= 6 and re.fullmatch(r"[가-힣]+", title):
                names.append(title)
            if len(article["text"]) > 300:
                articles.append(article)
    places = [name for name in names if len(name) >= 3 and name[-1] in _PLACE_ENDINGS]
    return {"place": places, "name": names}, articles


def korean_lookup_articles(
    data_dir: str | Path,
    count: int,
    seed: int,
    per_table: int = 3,
    dev_fraction: float | None = None,
    plain_share: float = 0.0,
    vehicle_share: float = 0.0,
    kinds: list[str] | None = None,
) -> list[dict]:
    """Up to ``count`` Korean lookups on built pages (a Korean article with one table), as SQuAD articles over
    each page's model text as the app's cleaner writes it; with ``dev_fraction``, only on the articles of the
    dev split. ``plain_share`` of the questions ask by what the cell means (where its column has such a
    question), and ``vehicle_share`` of the route tables name their vehicle ("첫 배") there and in those
    questions; ``kinds`` (headings of :data:`_KINDS`) limits the tables' kinds."""
    import html as html_module

    from ..documents.clean import clean_document
    from ..documents.decode import RawDocument

    rng = random.Random(seed)
    names, sources = _korean_names(data_dir)
    if dev_fraction is not None:  # a dev file: only the articles of the dev split, by the stable title hash
        sources = [source for source in sources if is_dev_title(source["title"], dev_fraction)]
    rng.shuffle(sources)
    articles, total = [], 0
    for n, source in enumerate(sources):
        if total >= count:
            break
        heading, header, rows, words = korean_table(rng, names, kinds)
        vehicle = None
        if vehicle_share and "첫차" in header and rng.random() < vehicle_share:  # "첫 배": the vehicle named
            vehicle = rng.choice(["배", "버스", "열차"])
            header = [f"첫 {vehicle}" if name == "첫차" else name for name in header]
        paragraphs = [p.strip() for p in source["text"].split("\n") if len(p.strip()) > 40]
        cut = rng.randrange(1, 3)
        cells = "".join("<tr>" + "".join(f"<td>{html_module.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        page = (
            f"<!DOCTYPE html><html><head><title>{html_module.escape(source['title'])}</title></head><body>"
            f"<h1>{html_module.escape(source['title'])}</h1>"
            + "".join(f"<p>{html_module.escape(p)}</p>" for p in paragraphs[:cut])
            + f"<h2>{heading}</h2><table><tr>"
            + "".join(f"<th>{html_module.escape(h)}</th>" for h in header)
            + f"</tr>{cells}</table>"
            + "".join(f"<p>{html_module.escape(p)}</p>" for p in paragraphs[cut : cut + 2])
            + "</body></html>"
        )
        document = clean_document(RawDocument(page, True, f"built-{n}", "utf-8"))
        qas = table_lookups(
            document,
            header,
            rows,
            rng,
            per_table,
            lambda row, keys, target: _korean_question(
                header, row, keys, target, words[target], rng, plain_share, vehicle
            ),
            f"lookup-ko-{n}",
        )
        qas = qas[: count - total]
        if qas:
            total += len(qas)
            articles.append({"title": source["title"], "paragraphs": [{"context": document.model_text, "qas": qas}]})
    return articles
