"""The shipped checkpoint answers from PDF, Word and Hangul files: a Korean and an English 32-page report, whose
answers lie past the tenth page, and a Word and a Hangul file whose answers are in a table, through the /answer
endpoint's function (by web address, as a client gives one) and ``littlebird ask``; each answer with its page
(the Word file's from the page break before its table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from littlebird.app.asking import answer_document
from littlebird.cli import main
from tests.support.files import branch_fact, hangul_file, report_pdf, table_pdf, word_file
from tests.support.ui import serve_directory

CHECKPOINT = str(Path(__file__).resolve().parents[2] / "assets" / "littlebird-qa")
HARBOUR = word_file(
    "Riverton harbour",
    [
        (
            "p",
            "Riverton harbour is the port of the town of Riverton, on the estuary of the river Riv. It serves fishing "
            "boats, ferries and small cargo ships.",
        ),
        ("page", None),
        (
            "table",
            [
                ("Riverton harbour", ""),
                ("Opened", "1871"),
                ("Harbour master", "Tomas Berg"),
                ("Berths", "14"),
                ("Depth at low tide", "6.5 metres"),
                ("Lighthouse", "Old Point Light"),
            ],
        ),
        ("h1", "History"),
        (
            "p",
            "The harbour was dug in the nineteenth century to replace the silted river quays. Its breakwater was "
            "lengthened twice in the twentieth century.",
        ),
    ],
)


# Five lines of a timetable, the answer in row B, and four other crossing times the model could pick.
FERRY_ROWS = [
    ("Line", "From", "To", "First sailing", "Crossing time"),
    ("A", "Port Elma", "Southbay", "06:30", "45 minutes"),
    ("B", "Port Elma", "Northhaven", "07:45", "1 hour 20 minutes"),
    ("C", "Southbay", "Northhaven", "08:15", "55 minutes"),
    ("D", "Port Elma", "Gull Island", "09:00", "25 minutes"),
    ("E", "Northhaven", "Gull Island", "10:30", "40 minutes"),
]
FERRY_TEXT = "The ferry company runs five lines between the harbours of the islands. Tickets are sold on board."
FERRIES = word_file(
    "Island ferries",
    [
        ("p", FERRY_TEXT),
        ("table", FERRY_ROWS),
    ],
)

# The same timetable in Korean, as a Hangul file with a heading and prose before it: the answer in row 나.
FERRIES_KO = hangul_file(
    "섬 여객선 안내",
    [
        ("h1", "운항 노선"),
        ("p", "섬 여객선 회사는 섬의 항구들 사이에 다섯 노선을 운항한다. 표는 배에서 판다."),
        (
            "table",
            [
                ("노선", "출발", "도착", "첫 배", "소요 시간"),
                ("가", "동항", "남항", "06:30", "45분"),
                ("나", "동항", "북항", "07:45", "1시간 20분"),
                ("다", "남항", "북항", "08:15", "55분"),
                ("라", "동항", "갈매기섬", "09:00", "25분"),
                ("마", "북항", "갈매기섬", "10:30", "40분"),
            ],
        ),
    ],
)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("files")
    for language in ("en", "ko"):
        (folder / f"report-{language}.pdf").write_bytes(report_pdf(language))
    (folder / "harbour.docx").write_bytes(HARBOUR)
    (folder / "ferries.docx").write_bytes(FERRIES)
    (folder / "ferries.pdf").write_bytes(table_pdf("Island ferries", FERRY_TEXT, FERRY_ROWS))
    (folder / "ferries.hwpx").write_bytes(FERRIES_KO)
    with serve_directory(folder) as base:
        yield folder, base


def _asked(base: str, name: str, question: str) -> dict:
    payload = answer_document(f"{base}/{name}", question, checkpoint=CHECKPOINT, allow_local=True)
    assert payload["text"][payload["start"] : payload["end"]] == payload["answer"]
    return payload


def test_an_english_report_answer_past_the_tenth_page(files):
    _, base = files
    fact = branch_fact("en", 20)  # section 21, page 23
    payload = _asked(base, "report-en.pdf", f"Which architect designed the building of the {fact['branch']} Library?")
    assert payload["answer"] == fact["architect"]
    assert payload["page"] == 23 and payload["n_pages"] == 32 and payload["n_best"][0]["page"] == 23


def test_a_korean_report_answer_past_the_tenth_page(files):
    _, base = files
    fact = branch_fact("ko", 15)  # section 16, page 18
    payload = _asked(base, "report-ko.pdf", f"{fact['branch']} 도서관은 몇 년에 문을 열었는가?")
    assert payload["answer"] == f"{fact['opened']}년"
    assert payload["page"] == 18 and payload["n_pages"] == 32


def test_a_word_file_answer_from_its_table(files):
    _, base = files
    payload = _asked(base, "harbour.docx", "When did Riverton harbour open?")
    assert payload["answer"] == "1871" and payload["page"] == 2 and payload["n_pages"] == 2
    assert "Opened | 1871" in payload["text"]


def test_ask_prints_the_answer_and_its_page(files, capsys):
    folder, _ = files
    fact = branch_fact("en", 20)
    assert (
        main(
            [
                "ask",
                str(folder / "report-en.pdf"),
                f"Which architect designed the building of the {fact['branch']} Library?",
                "--model",
                CHECKPOINT,
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [fact["architect"], "page 23 of 32"]
    assert lines[3].endswith("page 23")  # the n-best list gives each answer's page


@pytest.mark.parametrize("name", ["ferries.docx", "ferries.pdf"])
def test_a_timetable_is_answered_from_the_right_row(files, capsys, name):
    """Each row reaches the model as a sentence of its cells after their headers ("From: Port Elma; To:
    Northhaven; ...; Crossing time: 1 hour 20 minutes."), so the question finds row B, not another crossing: in a
    Word file's table, and in a PDF's, whose text layer gives each row as one line of its cells."""
    folder, _ = files
    question = "How long does the crossing from Port Elma to Northhaven take?"
    assert main(["ask", str(folder / name), question, "--model", CHECKPOINT, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["answer"] == "1 hour 20 minutes" and not payload["no_answer"]
    line = payload["text"][: payload["start"]].rsplit("\n", 1)[-1] + payload["answer"]
    assert line == "B | Port Elma | Northhaven | 07:45 | 1 hour 20 minutes"  # the answer stands in row B


def test_a_hangul_timetable_is_answered_from_the_right_row(files, capsys):
    """A Korean .hwpx: its table's rows reach the model as sentences as a Word file's do, so the question finds
    row 나."""
    folder, _ = files
    question = "동항에서 북항까지 가는 배는 얼마나 걸리는가?"
    assert main(["ask", str(folder / "ferries.hwpx"), question, "--model", CHECKPOINT, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["answer"] == "1시간 20분" and not payload["no_answer"]
    line = payload["text"][: payload["start"]].rsplit("\n", 1)[-1] + payload["answer"]
    assert line == "나 | 동항 | 북항 | 07:45 | 1시간 20분"  # the answer stands in row 나
