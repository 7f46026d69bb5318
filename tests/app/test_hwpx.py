"""Hangul (.hwpx) files in: headings, prose and tables (with their spans) arrive as the same tag tokens as a Word
file's, with pages where the file records them; locked, empty, damaged and bomb files, and the older binary .hwp,
are refused with a sentence in bounded time."""

from __future__ import annotations

import io
import zipfile

import pytest

from littlebird.documents import formats
from littlebird.documents.clean import clean_document
from littlebird.documents.fetch import fetch_document
from littlebird.documents.hwpx import read_hwpx
from littlebird.documents.sources import read_document
from littlebird.documents.upload import read_upload
from tests.app.test_clean import assert_tokens_round_trip
from tests.app.test_pdf import _refused_in_time
from tests.support.files import hangul_file, hangul_section, word_file, zip_bomb
from tests.support.qa import assert_linked
from tests.support.ui import serve_directory

FERRY_ROWS = [
    ("노선", "출발", "도착", "첫 배", "소요 시간"),
    ("가", "동항", "남항", "06:30", "45분"),
    ("나", "동항", "북항", "07:45", "1시간 20분"),
    ("다", "남항", "북항", "08:15", "55분"),
]
FERRIES = hangul_file(
    "섬 여객선 안내",
    [
        ("h1", "운항 노선"),
        ("p", "섬 여객선 회사는 섬의 항구들 사이에 세 노선을 운항한다. 표는 배에서 판다."),
        ("table", FERRY_ROWS),
        ("h2", "요금"),
        ("p", "어른 요금은 만 원이다."),
    ],
)


def test_headings_prose_and_tables_reach_the_model_and_nothing_is_dropped():
    document = clean_document(read_upload(FERRIES, filename="ferries.hwpx"))
    assert document.text.split("\n") == [
        "섬 여객선 안내",
        "",
        "운항 노선",
        "",
        "섬 여객선 회사는 섬의 항구들 사이에 세 노선을 운항한다. 표는 배에서 판다.",
        "",
        "노선 | 출발 | 도착 | 첫 배 | 소요 시간",
        "가 | 동항 | 남항 | 06:30 | 45분",
        "나 | 동항 | 북항 | 07:45 | 1시간 20분",
        "다 | 남항 | 북항 | 08:15 | 55분",
        "",
        "요금",
        "",
        "어른 요금은 만 원이다.",
    ]
    # The title style and 개요 1 are h1, 개요 2 an h2; each row a sentence of its cells after their headers (title
    # cells, Hangul's header row), named by the heading above the table.
    assert document.model_text.startswith("<h1> 섬 여객선 안내 <h1> 운항 노선 <p> 섬 여객선 회사는")
    assert "<p> 노선; 출발; 도착; 첫 배; 소요 시간. <p> 운항 노선, 노선: 가; 출발: 동항;" in document.model_text
    assert (
        "<p> 운항 노선, 노선: 나; 출발: 동항; 도착: 북항; 첫 배: 07:45; 소요 시간: 1시간 20분." in document.model_text
    )
    # Which rows come first and last, and the number column's extremes (times of day; 1시간 20분 is no number).
    assert (
        "<p> 운항 노선, 첫째: 가; 마지막: 다. <p> 운항 노선, 가장 높은, 가장 많은 첫 배: 다, 08:15; "
        "가장 낮은, 가장 적은 첫 배: 가, 06:30. <h2> 요금 <p> 어른 요금은 만 원이다." in document.model_text
    )
    assert [table for table, _, _ in document.table_rows] == [0] * 6  # the header, three rows, two ranked units
    assert not document.page_starts and document.language == "ko"
    assert_linked(document)
    assert_tokens_round_trip(document)


def test_spanned_cells_keep_their_place_in_the_rows():
    data = hangul_file(
        "운임표",
        [
            (
                "table",
                [
                    ("구간", "어른", "어린이"),
                    (("동항 - 남항", 1, 2), "10,000원", "5,000원"),
                    ("8,000원", "4,000원"),  # the rowspan above carries 동항 - 남항 into this row
                    (("왕복 할인", 2, 1), "10%"),
                ],
            )
        ],
    )
    raw = read_upload(data, filename="fares.hwpx")
    assert '<td rowspan="2">동항 - 남항</td>' in raw.text and '<td colspan="2">왕복 할인</td>' in raw.text
    document = clean_document(raw)
    assert document.text.split("\n")[2:6] == [
        "구간 | 어른 | 어린이",
        "동항 - 남항 | 10,000원 | 5,000원",
        "8,000원 | 4,000원",
        "왕복 할인 | 10%",
    ]
    assert "구간: 동항 - 남항; 어른: 8,000원; 어린이: 4,000원." in document.model_text
    assert_linked(document)


def test_pages_come_from_page_breaks_sections_and_hanguls_last_layout():
    data = hangul_file(
        "항구",
        [
            ("p", "첫째 쪽은 항구를 말한다."),
            ("page", None),  # a page break the author typed
            ("p", "둘째 쪽은 부두를 말한다."),
            ("p", "부두는 넓다."),
            ("rendered page", "셋째 쪽은 배를 말한다."),  # where Hangul's last layout began a page
            ("table", [("배", "선장", "톤수"), ("갈매기호", "김선장", "8,150"), ("북극성호", "이선장", "12,400")]),
        ],
        sections=[[("p", "넷째 쪽은 새 구역이다.")]],
    )  # a section starts a page
    document = clean_document(read_upload(data, filename="harbour.hwpx"))
    assert [document.text[start:].split("\n")[0] for start in document.page_starts] == [
        "항구",
        "둘째 쪽은 부두를 말한다.",
        "셋째 쪽은 배를 말한다.",
        "넷째 쪽은 새 구역이다.",
    ]
    assert document.page_of(document.text.index("김선장")) == 3
    assert document.page_of(document.text.index("부두")) == 2
    assert "\ue000" not in document.text and "\ue000" not in document.model_text
    assert "<p> 첫째 쪽은 항구를 말한다. <p> 둘째 쪽은" in document.model_text  # no empty block for a break
    assert_linked(document)


def test_headings_set_larger_than_the_body_as_most_hangul_files_make_them():
    data = hangul_file(
        "보고서",
        [
            ("big", "1. 추진 배경"),
            ("p", "항구를 드나드는 배가 지난 십 년 사이에 두 배로 늘었다."),
            ("big", "2. 추진 내용"),
            ("p", "부두를 넓히고 여객 대합실을 새로 짓는다."),
            ("big", "글씨가 커도 문장으로 끝나면 제목이 아니다."),
        ],
    )
    document = clean_document(read_upload(data, filename="report.hwpx"))
    assert document.model_text == (
        "<h1> 보고서 <h2> 1. 추진 배경 <p> 항구를 드나드는 배가 지난 십 년 사이에 두 배로 늘었다. <h2> 2. 추진 내용 "
        "<p> 부두를 넓히고 여객 대합실을 새로 짓는다. <p> 글씨가 커도 문장으로 끝나면 제목이 아니다."
    )


def test_real_hangul_files_read_as_they_are_written():
    """Parts of a file as Hangul saves it that a test file lacks: tabs and line breaks inside the text, a text
    box in a shape, a table's caption, a header and a footnote (not body text), and lines that go back up the
    page in the second column of a page, not on a new page."""
    hp = 'xmlns:hp="http://www.hancom.co.kr/hwpml/2011/paragraph" xmlns:hs="http://www.hancom.co.kr/hwpml/2011/section"'
    section = (
        f'<hs:sec {hp}><hp:p paraPrIDRef="0" styleIDRef="0"><hp:run charPrIDRef="0"><hp:ctrl>'
        '<hp:colPr colCount="2"/></hp:ctrl><hp:ctrl><hp:header><hp:subList><hp:p><hp:run><hp:t>머리말</hp:t>'
        "</hp:run></hp:p></hp:subList></hp:header></hp:ctrl><hp:t>성명<hp:tab/>홍길동<hp:lineBreak/>주소</hp:t>"
        "<hp:ctrl><hp:footNote><hp:subList><hp:p><hp:run><hp:t>각주 글</hp:t></hp:run></hp:p></hp:subList>"
        '</hp:footNote></hp:ctrl></hp:run><hp:linesegarray><hp:lineseg textpos="0" vertpos="5000"/>'
        "</hp:linesegarray></hp:p>"
        '<hp:p paraPrIDRef="0" styleIDRef="0"><hp:run charPrIDRef="0"><hp:rect><hp:drawText><hp:subList>'
        '<hp:p><hp:run><hp:t>글상자 안의 글</hp:t></hp:run><hp:linesegarray><hp:lineseg textpos="0" '
        'vertpos="0"/></hp:linesegarray></hp:p></hp:subList></hp:drawText></hp:rect><hp:tbl><hp:caption>'
        "<hp:subList><hp:p><hp:run><hp:t>표 1 요금</hp:t></hp:run></hp:p></hp:subList></hp:caption><hp:tr>"
        "<hp:tc><hp:subList><hp:p><hp:run><hp:t>어른</hp:t></hp:run></hp:p><hp:p><hp:run><hp:t>만 원</hp:t>"
        "</hp:run></hp:p></hp:subList></hp:tc></hp:tr></hp:tbl></hp:run><hp:linesegarray>"
        '<hp:lineseg textpos="0" vertpos="0"/></hp:linesegarray></hp:p></hs:sec>'
    )
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("mimetype", "application/hwp+zip")
        archive.writestr("Contents/section0.xml", section)
    raw = read_hwpx(data.getvalue(), source="form.hwpx")
    assert raw.text == (
        "<html><body><p>성명\t홍길동<br>주소</p><p>글상자 안의 글</p><table><caption>표 1 요금</caption>"
        "<tr><td>어른<br>만 원</td></tr></table></body></html>"
    )  # the second column: no page


def test_a_hangul_file_from_a_web_address_and_by_its_bytes(tmp_path):
    (tmp_path / "ferries.hwpx").write_bytes(FERRIES)  # served as application/octet-stream: the bytes tell
    with serve_directory(tmp_path) as base:
        document = clean_document(fetch_document(f"{base}/ferries.hwpx", allow_local=True))
    assert "나 | 동항 | 북항 | 07:45 | 1시간 20분" in document.text
    assert read_upload(FERRIES).encoding == "hwpx"
    # A Word file and a Hangul file are both ZIP archives: each is told by its own mark.
    assert formats.by_first_bytes(FERRIES).name == "hwpx"
    word = word_file("Harbour", [("p", "A Word file that mentions word/ and application/hwp+zip.")])
    assert formats.by_first_bytes(word).name == "docx"


def _with_part(name: str, content: bytes, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """FERRIES with one part replaced."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(FERRIES)) as source, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as copy:
        for member in source.infolist():
            if member.filename != name:
                copy.writestr(member, source.read(member))
        copy.writestr(name, content, compress_type=method)
    return buffer.getvalue()


# A .hwp: an OLE compound file whose FileHeader stream holds the signature, then the version and the flags (bit 1
# of byte 36: a password).
_HWP = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1016) + b"HWP Document File".ljust(32, b"\0") + bytes(8)


@pytest.mark.parametrize(
    "data, filename, message",
    [
        (b"", "empty.hwpx", "The file is empty"),
        (hangul_file("", [("p", " "), ("table", [("", "")])]), "blank.hwpx", "No text was found in blank.hwpx"),
        (
            hangul_file("잠긴 문서", [("p", "암호가 걸린 글.")], encrypted=True),
            "locked.hwpx",
            "protected with a password",
        ),
        (
            zip_bomb({"mimetype": "application/hwp+zip", "Contents/section0.xml": "<hs:sec/>"}),
            "bomb.hwpx",
            "unpacks to 210 MB, more than the 200 MB",
        ),
        # Under the zip-bomb bound, but more to read than a document has: 200,000 paragraphs in 9 MB of XML that packs
        # into 12 KB, and one paragraph of six million characters.
        (
            hangul_section("<hp:p><hp:run><hp:t>가</hp:t></hp:run></hp:p>" * 200_000),
            "many.hwpx",
            "more than 50,000 paragraphs",
        ),
        (
            hangul_section(f"<hp:p><hp:run><hp:t>{'sea ' * 1_500_000}</hp:t></hp:run></hp:p>"),
            "long.hwpx",
            "more than 5,000,000 characters",
        ),
        (FERRIES[: len(FERRIES) // 2], "cut.hwpx", "not a Hangul document, or it is damaged"),
        (b"<html><body><p>A web page saved as .hwpx</p></body></html>", "page.hwpx", "not a .hwpx archive"),
        (_with_part("Contents/section0.xml", b"<hs:sec><hp:p>"), "broken.hwpx", "its text cannot be read"),
        (_with_part("Contents/section0.xml", b"<hs:sec/>", zipfile.ZIP_BZIP2), "bzip.hwpx", "bzip2 or LZMA"),
        (word_file("Harbour", [("p", "A Word file.")]), "word.hwpx", "no Contents/section0.xml"),
        (b"", "empty.hwp", "The file is empty"),
        (_HWP, "report.hwp", "older binary format \\(.hwp\\), which this app does not read"),
        (_HWP[:1060] + b"\x02\0\0\0", "locked.hwp", "save it as .hwpx without a password"),
    ],
    ids=[
        "empty",
        "no-text",
        "password",
        "zip-bomb",
        "paragraphs",
        "characters",
        "truncated",
        "not-a-zip",
        "bad-xml",
        "bzip2",
        "a-docx",
        "empty-hwp",
        "hwp",
        "password-hwp",
    ],
)
def test_bad_hangul_files_are_refused_with_a_sentence_in_bounded_time(data, filename, message, tmp_path):
    _refused_in_time(data, filename, message)
    # Nothing is lost: the next document is read as before.
    (tmp_path / "good.hwpx").write_bytes(FERRIES)
    assert "1시간 20분" in read_document("upload", upload=str(tmp_path / "good.hwpx")).text


def test_the_older_hangul_format_is_named_but_not_listed_as_read():
    assert formats.by_suffix(".hwp").refusal and formats.by_content_type("application/x-hwp").name == "hwp"
    assert formats.by_first_bytes(_HWP).name == "hwp"
    assert ".hwp" not in formats.suffixes() and ".hwpx" in formats.suffixes() and ".hwp" in formats.upload_suffixes()
    assert "Hangul (.hwpx)" in formats.label_list() and "(.hwp)" not in formats.label_list()
