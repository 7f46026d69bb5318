"""Write the example PDF, ``assets/examples/en-riverton-libraries-report.pdf``: a 34-page annual report of a town's
public libraries, written for this project (CC0), one branch library a page, with running heads, page numbers,
headings and an outline, as office software sets a report.

    python scripts/make_example_pdf.py                    # the English example in assets/examples/
    python scripts/make_example_pdf.py --language ko --output /tmp/report-ko.pdf

The same report in Korean, and :func:`report_pdf` for any sections, serve the tests and the PDF benchmark.
Needs fpdf2 (the ``test`` extra) and a TrueType font with Hangul (Debian's fonts-nanum).
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timezone
from pathlib import Path

from fpdf import FPDF

FONT = "/usr/share/fonts/truetype/nanum/NanumGothic.ttf"
FONT_BOLD = "/usr/share/fonts/truetype/nanum/NanumGothicBold.ttf"
EXAMPLE = Path(__file__).resolve().parents[1] / "assets" / "examples" / "en-riverton-libraries-report.pdf"

Section = tuple[str, list[str]]  # a heading and its paragraphs

_EN = {
    "branches": [
        "Harbor Street",
        "Millbrook",
        "Oak Hill",
        "Cedar Park",
        "Lantern Square",
        "Fairview",
        "Stonebridge",
        "Willow Creek",
        "North Quay",
        "Elm Row",
        "Kingsway",
        "Bramble Lane",
        "Foundry",
        "Hawthorn",
        "Meadowgate",
        "Old Mill",
        "Pinecrest",
        "Queen's Wharf",
        "Riverside",
        "Saltmarsh",
        "Thornbury",
        "Upper Vale",
        "Victoria Road",
        "Westfield",
        "Ashgrove",
        "Bellhaven",
        "Copper Hill",
        "Dunmore",
        "Eastgate",
        "Larkfield",
    ],
    "people": [
        "Margaret Ellison",
        "Thomas Okafor",
        "Ingrid Halvorsen",
        "Samuel Whitcombe",
        "Rosa Delgado",
        "Henry Blackwood",
        "Amelia Thornton",
        "Victor Laszlo",
        "Clara Fairbanks",
        "Jonah Pemberton",
        "Lucia Moretti",
        "Edmund Achebe",
        "Fiona McAllister",
        "George Nakamura",
        "Helena Sorensen",
        "Isaac Abernathy",
        "Julia Castellano",
        "Kenneth Osei",
        "Laura Whitfield",
        "Martin Ravensworth",
        "Nadia Petrova",
        "Oliver Ashcombe",
        "Priya Raman",
        "Quentin Harlow",
        "Rebecca Lindqvist",
        "Simon Achterberg",
        "Teresa Vance",
        "Ulrich Brenner",
        "Vera Kowalski",
        "Walter Penhaligon",
        "Yusuf Demir",
        "Zoe Hartley",
        "Arthur Greaves",
        "Beatrice Coulson",
        "Conrad Ferris",
        "Daphne Mercer",
        "Elliot Marsh",
        "Frances Okoye",
        "Gideon Wray",
        "Harriet Lowe",
        "Ivan Sokolov",
        "Jasmine Tull",
        "Leon Fairweather",
        "Miriam Oduya",
        "Nathaniel Crewe",
        "Ophelia Stroud",
        "Percy Langford",
        "Rowena Tate",
        "Sebastian Quill",
        "Tabitha Rowe",
        "Hugo Vennard",
        "Winifred Hale",
        "Basil Okonjo",
        "Cordelia Vance",
        "Dorian Pike",
        "Esme Calloway",
        "Felix Marlowe",
        "Gwendolyn Ash",
        "Horace Bell",
        "Iris Whitlock",
    ],
    "collections": [
        "maritime history",
        "local newspapers",
        "children's picture books",
        "botanical drawings",
        "railway timetables",
        "folk music recordings",
        "early photography",
        "cookery manuscripts",
        "civic architecture",
        "weaving patterns",
        "astronomy",
        "shipbuilding plans",
        "chess literature",
        "regional maps",
        "poetry pamphlets",
        "trade union records",
        "herbal medicine",
        "clock making",
        "bird song recordings",
        "theatre posters",
        "mining surveys",
        "school yearbooks",
        "lace making",
        "lighthouse logs",
        "jazz records",
        "bookbinding",
        "tide tables",
        "orchard records",
        "glass making",
        "migration letters",
    ],
}
_KO = {
    "branches": [
        "항구길",
        "물레방아",
        "참나무언덕",
        "삼나무공원",
        "등불광장",
        "맑은들",
        "돌다리",
        "버들개울",
        "북부나루",
        "느릅나무",
        "큰길",
        "찔레골",
        "주물공장",
        "산사나무",
        "풀밭문",
        "옛방앗간",
        "솔마루",
        "여왕부두",
        "강변",
        "갯벌",
        "가시울",
        "윗골",
        "빅토리아로",
        "서쪽들",
        "물푸레",
        "종소리",
        "구리언덕",
        "둔덕",
        "동문",
        "종달새들",
    ],
    "people": [
        "김서연",
        "이도윤",
        "박하은",
        "최민준",
        "정지우",
        "강서준",
        "조예린",
        "윤하준",
        "장수아",
        "임지호",
        "한유진",
        "오승민",
        "서다인",
        "신재원",
        "권나연",
        "황동현",
        "안소율",
        "송민재",
        "전하린",
        "홍준서",
        "문채원",
        "양시우",
        "손지안",
        "배도현",
        "백서윤",
        "허건우",
        "유다은",
        "남궁현",
        "심은서",
        "노태윤",
        "하주원",
        "곽예준",
        "성가은",
        "차현우",
        "주서아",
        "우지훈",
        "구민서",
        "민예성",
        "진소민",
        "지하람",
        "엄태오",
        "채윤서",
        "원지성",
        "천다온",
        "방시현",
        "공태민",
        "현서우",
        "함보람",
        "변재희",
        "염하늘",
        "여도경",
        "추민아",
        "도윤재",
        "소은비",
        "석준호",
        "선지유",
        "설태양",
        "마서진",
        "길나래",
        "연수빈",
    ],
    "collections": [
        "해양사",
        "지역 신문",
        "그림책",
        "식물 세밀화",
        "철도 시간표",
        "민요 음반",
        "초기 사진",
        "요리 필사본",
        "근대 건축",
        "직물 무늬",
        "천문학",
        "선박 설계도",
        "바둑 서적",
        "옛 지도",
        "시 소책자",
        "노동조합 기록",
        "약초",
        "시계 제작",
        "새소리 녹음",
        "연극 포스터",
        "광산 조사",
        "졸업 앨범",
        "매듭 공예",
        "등대 일지",
        "재즈 음반",
        "제본",
        "조석표",
        "과수원 기록",
        "유리 공예",
        "이민 편지",
    ],
}


def library_facts(language: str = "en", *, branches: int = 30, seed: int = 74) -> list[dict]:
    """One record per branch library, the same for both languages but for the names: when it opened, who
    designed it and leads it, what it lends and collects."""
    names = _EN if language == "en" else _KO
    rng = random.Random(seed)
    people = rng.sample(range(len(names["people"])), 2 * branches)
    facts = []
    for index in range(branches):
        facts.append(
            {
                "branch": names["branches"][index],
                "opened": 1871 + 4 * index + rng.randrange(4),
                "architect": names["people"][people[2 * index]],
                "librarian": names["people"][people[2 * index + 1]],
                "since": 1998 + rng.randrange(26),
                "loans": rng.randrange(40, 400) * 1000 + rng.randrange(1000),
                "members": rng.randrange(3, 60) * 100 + rng.randrange(100),
                "collection": names["collections"][index],
                "seats": 20 + rng.randrange(180),
                "hours": 40 + rng.randrange(30),
            }
        )
    return facts


def _english_section(number: int, fact: dict) -> Section:
    f = fact
    return f"{number}. The {f['branch']} Library", [
        f"The {f['branch']} Library opened its doors in {f['opened']}. Its building was designed by the architect "
        f"{f['architect']}, whose plans gave the reading room tall windows facing the street so that readers "
        "could work by daylight for most of the year. The branch has been extended twice since then, but the "
        "original front and its stone steps remain as they were built.",
        f"In the year of this report the branch lent {f['loans']:,} items to {f['members']:,} registered members. "
        f"Its head librarian, {f['librarian']}, has led the branch since {f['since']}. The branch offers "
        f"{f['seats']} reading seats and is open {f['hours']} hours a week, including two evenings.",
        f"The branch is best known for its {f['collection']} collection, which scholars from other towns come to "
        "consult. Most of the collection can be read in the reading room; the rarest items are shown on request, "
        "and a catalogue of the collection was published by the library service during the year.",
        "Visitors to the branch praised its quiet study corners, its helpful staff and its programme of "
        "talks, which covered local history, gardening and the care of old books. The branch also hosted a "
        "weekly reading hour for young children and a homework club for older pupils after school.",
        "Looking ahead, the branch plans to improve access for wheelchair users, to extend its opening hours "
        "on Saturdays and to digitise the most fragile parts of its collection, so that they can be read "
        "online without being handled.",
    ]


def _particle(word: str, after_consonant: str, after_vowel: str) -> str:
    """``word`` with the Korean particle its last syllable takes (이/가, 은/는): the first after a final consonant."""
    last = ord(word[-1]) - 0xAC00
    return word + (after_consonant if 0 <= last < 11172 and last % 28 else after_vowel)


def _korean_section(number: int, fact: dict) -> Section:
    f = fact
    return f"{number}. {f['branch']} 도서관", [
        f"{f['branch']} 도서관은 {f['opened']}년에 문을 열었다. "
        f"도서관 건물은 건축가 {_particle(f['architect'], '이', '가')} 설계하였으며, "
        "열람실에는 거리를 향한 높은 창을 내어 독자들이 한 해의 대부분을 햇빛 아래에서 책을 읽을 수 있게 하였다. "
        "그 뒤로 건물은 두 차례 증축되었으나 처음 지은 정면과 돌계단은 그대로 남아 있다.",
        f"보고 연도에 이 분관은 등록 회원 {f['members']:,}명에게 자료 {f['loans']:,}점을 대출하였다. "
        f"분관장 {_particle(f['librarian'], '은', '는')} {f['since']}년부터 분관을 이끌어 왔다. "
        f"분관에는 열람석 {f['seats']}석이 있으며 "
        f"저녁 두 차례를 포함하여 일주일에 {f['hours']}시간 문을 연다.",
        f"이 분관은 {f['collection']} 자료로 가장 널리 알려져 있으며, 다른 도시의 연구자들도 이 자료를 보러 찾아온다. "
        "자료 대부분은 열람실에서 볼 수 있고, 가장 귀한 자료는 요청하면 보여 준다. 한 해 동안 도서관 본부는 "
        "이 자료의 목록을 펴냈다.",
        "분관을 찾은 이용자들은 조용한 학습 공간과 친절한 직원, 그리고 지역사와 원예, 옛 책 관리를 다룬 강연 "
        "프로그램을 칭찬하였다. 분관은 어린이를 위한 주간 책 읽기 시간과 "
        "고학년 학생을 위한 방과 후 숙제 모임도 열었다.",
        "앞으로 분관은 휠체어 이용자의 접근성을 높이고, 토요일 개관 시간을 늘리며, 가장 손상되기 쉬운 자료를 "
        "디지털로 옮겨 손대지 않고도 온라인에서 읽을 수 있게 할 계획이다.",
    ]


def library_report(language: str = "en") -> tuple[str, str, list[Section]]:
    """The report's title, running head and sections: an introduction, a summary and one section a branch."""
    facts = library_facts(language)
    if language == "en":
        title, head = "Riverton Public Libraries: Annual Report", "Riverton Public Libraries - Annual Report"
        opening = [
            (
                "Introduction",
                [
                    f"This report describes the work of the {len(facts)} branch libraries of the town of Riverton "
                    "during the year. Each branch has its own page, giving when it opened, who designed its building, "
                    "who leads it, how much it lent and what it collects. "
                    "The figures were gathered by the branches themselves.",
                    "The library service as a whole lent more items than in any year before, and the number of "
                    "registered members grew in every part of the town. New members were most often families with "
                    "young children and students preparing for examinations.",
                ],
            ),
            (
                "Summary of the year",
                [
                    "Three themes ran through the year: opening hours, digitisation and the care of the special "
                    "collections. Each branch reports on them in its own section. The service thanks its volunteers, "
                    "who gave more than eleven thousand hours of their time.",
                ],
            ),
        ]
        sections = [_english_section(number, fact) for number, fact in enumerate(facts, start=1)]
    else:
        title, head = "리버턴 공공도서관 연간 보고서", "리버턴 공공도서관 - 연간 보고서"
        opening = [
            (
                "머리말",
                [
                    f"이 보고서는 리버턴 시의 분관 도서관 {len(facts)}곳이 한 해 동안 한 일을 정리한 것이다. "
                    "분관마다 한 쪽을 두어 언제 문을 열었는지, 누가 건물을 설계하였는지, "
                    "누가 이끄는지, 얼마나 대출하였는지, 무엇을 모으는지를 "
                    "적었다. 수치는 각 분관이 직접 모았다.",
                    "도서관 전체의 대출 건수는 어느 해보다 많았으며, 등록 회원 수는 시의 모든 지역에서 늘었다. "
                    "새 회원은 어린 자녀를 둔 가족과 시험을 준비하는 학생이 가장 많았다.",
                ],
            ),
            (
                "한 해의 요약",
                [
                    "한 해를 관통한 주제는 개관 시간, 디지털화, 특별 자료의 관리 세 가지였다. "
                    "각 분관은 자기 장에서 이 주제를 다룬다. "
                    "도서관은 만 천 시간이 넘는 시간을 내어 준 자원봉사자들에게 감사한다.",
                ],
            ),
        ]
        sections = [_korean_section(number, fact) for number, fact in enumerate(facts, start=1)]
    return title, head, opening + sections


class _Report(FPDF):
    """An A4 page with the running head above and the page number below, as office software sets a report."""

    running_head = ""

    def header(self) -> None:
        self.set_font("body", size=8)
        self.cell(0, 6, self.running_head, align="C", new_x="LMARGIN", new_y="NEXT")
        self.ln(6)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("body", size=8)
        self.cell(0, 10, f"- {self.page_no()} -", align="C")


def report_pdf(
    title: str,
    sections: list[Section],
    *,
    running_head: str = "",
    page_per_section: bool = True,
    font: str = FONT,
    bold_font: str = FONT_BOLD,
) -> bytes:
    """A PDF of ``sections``: the title page's heading, then each section's heading (larger, bold, in the
    outline) and paragraphs, a new page for each section when ``page_per_section``."""
    pdf = _Report(format="A4")
    pdf.running_head = running_head
    pdf.add_font("body", "", font)
    pdf.add_font("body", "B", bold_font)
    pdf.set_title(title)
    pdf.set_creation_date(datetime(2026, 1, 1, tzinfo=timezone.utc))  # the same bytes on every run
    pdf.set_auto_page_break(True, margin=22)
    pdf.add_page()
    pdf.set_font("body", "B", 20)
    pdf.multi_cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(4)
    for number, (heading, paragraphs) in enumerate(sections):
        if page_per_section and number:
            pdf.add_page()
        pdf.set_font("body", "B", 15)
        pdf.start_section(heading)
        pdf.multi_cell(0, 8, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
        pdf.set_font("body", "", 11)
        for paragraph in paragraphs:
            pdf.multi_cell(0, 6, paragraph, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(3)
    return bytes(pdf.output())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", choices=("en", "ko"), default="en")
    parser.add_argument("--output", type=Path, default=EXAMPLE)
    args = parser.parse_args()
    title, head, sections = library_report(args.language)
    args.output.write_bytes(report_pdf(title, sections, running_head=head))
    print(f"wrote {args.output} ({args.output.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
