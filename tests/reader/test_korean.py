"""Answer-span tidying: Korean particles and copulas, punctuation, on a table of real cases."""

import pytest

from littlebird.answer_text import tidy_answer_span, trim_punctuation
from littlebird.language import detect_language

# (answer as the model might cut it, the answer a reader expects)
KOREAN_CASES = [
    ("서울이다", "서울"),
    ("세종대왕이", "세종대왕"),
    ("서울입니다", "서울"),
    ("학교예요", "학교"),
    ("1446년에", "1446년"),
    ("훈민정음을", "훈민정음"),
    ("장영실과", "장영실"),
    ("측우기는", "측우기"),
    ("자격루도", "자격루"),
    ("제주시로", "제주시"),
    ("태종에게서", "태종"),
    ("물시계인", "물시계"),
    ("삼다도라고", "삼다도"),
    ("영릉이다.", "영릉"),
    ("셋째 아들로", "셋째 아들"),
    ("조선의 제4대 국왕이다", "조선의 제4대 국왕"),
    ("문종(당시 세자)의", "문종(당시 세자)"),
    ("한라산 (해발 1,947 미터)이다", "한라산 (해발 1,947 미터)"),
    ("LittleBird는", "LittleBird"),
    ("“훈민정음”이", "훈민정음"),
    ("《농사직설》을", "농사직설"),
    # already clean: nothing to remove
    ("1443년", "1443년"),
    ("세조(수양대군)", "세조(수양대군)"),
    ("원경왕후 민씨", "원경왕후 민씨"),
    ("1,642 m", "1,642 m"),
]

ENGLISH_CASES = [
    ("Angara.", "Angara"),
    ("  Siberia, ", "Siberia"),
    ('"Lake Baikal,"', "Lake Baikal"),
    ("(1643)", "1643"),
    ("1,642 m (5,387 ft).", "1,642 m (5,387 ft)"),
    ("the U.S.", "the U.S."),
    ("(a) and (b)", "(a) and (b)"),
    ("Selenga |", "Selenga"),
]


@pytest.mark.parametrize("answer, expected", KOREAN_CASES + ENGLISH_CASES)
def test_tidy_answer(answer, expected):
    start, end = tidy_answer_span(answer, 0, len(answer))
    assert answer[start:end] == expected


def test_span_stays_aligned_inside_a_longer_text():
    text = "그는 1418년에 왕위에 올랐다. 그 왕은 세종대왕이다."
    start = text.index("세종대왕이다")
    new_start, new_end = tidy_answer_span(text, start - 1, start + len("세종대왕이다."))
    assert text[new_start:new_end] == "세종대왕" and new_start == start


def test_never_empties_a_span():
    for answer in ("이다", "...", "을", " "):
        start, end = tidy_answer_span(answer, 0, len(answer))
        assert end > start


def test_punctuation_only_moves_inward():
    text = "((x))"
    assert trim_punctuation(text, 0, 5) == (2, 3)


@pytest.mark.parametrize(
    "text, language",
    [
        ("세종은 언제 태어났나?", "ko"),
        ("When was the Circum-Baikal Railway built?", "en"),
        ("LittleBird 모델은 KorQuAD 2.0에서 가장 좋은 성능을 보였다.", "ko"),
        ("The word 한글 means the Korean alphabet.", "en"),
        ("세종 Sejong the Great, 조선 Joseon dynasty king 왕", "mixed"),
        ("Озеро Байкал", "unknown"),
        ("1234 !!", "unknown"),
        ("", "unknown"),
    ],
)
def test_language_by_script(text, language):
    assert detect_language(text) == language
