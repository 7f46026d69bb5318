"""Random text, HTML fragments and bytes through decoding, cleaning and answering: no crash.

The only exception allowed is DocumentError (a sentence for the user); whatever comes out
keeps its promises: the character map points at equal characters and answers are exact
substrings of the shown text.

Each property runs 40 examples in the suite; ``LITTLEBIRD_FUZZ_EXAMPLES=5000`` runs that many each
(``--hypothesis-show-statistics`` prints how many ran), for a long search before a release.
"""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from littlebird.answer_text import tidy_answer_span
from littlebird.app.qa import answer_question
from littlebird.documents.clean import clean_document
from littlebird.documents.errors import DocumentError
from littlebird.documents.upload import read_pasted_text, read_upload
from littlebird.reader import ReadingOptions
from tests.support.qa import assert_linked, qa_tokenizer, tiny_model_for_tokenizer

WORDS = [
    "세종",
    "대왕이",
    "서울이다",
    "훈민정음을",
    "1443년에",
    "Lake",
    "Baikal",
    "is",
    "deep.",
    "(1,642 m)",
    "《책》",
    "<p>",
    "[QUESTION]",
    "</s>",
    "&amp;",
    "&lt;td&gt;",
    "|",
    "-",
    "#",
    "\u00a0",
    "\t",
    "\n",
    "  ",
    "é",
    "🙂",
    "Байкал",
]
TAGS = [
    "p",
    "div",
    "table",
    "tr",
    "td",
    "th",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "b",
    "a",
    "span",
    "br",
    "script",
    "style",
    "nav",
    "footer",
    "pre",
    "caption",
]

words = st.lists(st.sampled_from(WORDS) | st.text(max_size=8), max_size=30).map(" ".join)


@st.composite
def html_fragments(draw, depth=0):
    """Nested, sometimes unclosed, HTML with text, entities and attributes."""
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        if depth < 3 and draw(st.booleans()):
            tag = draw(st.sampled_from(TAGS))
            attribute = draw(st.sampled_from(["", ' class="infobox"', " id=x", ' role="navigation"']))
            closing = draw(st.sampled_from([f"</{tag}>", "", f"</{tag}"]))
            parts.append(f"<{tag}{attribute}>{draw(html_fragments(depth=depth + 1))}{closing}")
        else:
            parts.append(draw(words))
    return "".join(parts)


pages = st.one_of(
    html_fragments(),
    html_fragments().map(lambda body: f"<!DOCTYPE html><html><head><title>T</title></head><body>{body}</body></html>"),
)
EXAMPLES = int(os.environ.get("LITTLEBIRD_FUZZ_EXAMPLES", "40"))
PROPERTY_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_answers(document, question):
    result = answer_question(
        document,
        question,
        model=tiny_model_for_tokenizer(),
        tokenizer=qa_tokenizer(),
        options=ReadingOptions(max_length=96, stride=48, n_best=3, max_answer_length=8),
    )
    for answer in result.answers:
        assert answer.text == document.text[answer.start : answer.end] and answer.end > answer.start
    if result.answers:
        assert abs(sum(a.probability for a in result.answers) - 1) < 1e-6
    else:
        assert result.no_answer and result.note
    assert result.n_windows == len(result.window_token_spans)


@PROPERTY_SETTINGS
@given(page=pages, question=words)
def test_html_never_crashes(page, question):
    try:
        document = clean_document(read_pasted_text(page))
    except DocumentError as error:
        assert str(error).strip()
        return
    assert_linked(document)
    check_answers(document, question)


@PROPERTY_SETTINGS
@given(text=words, question=words)
def test_plain_text_never_crashes(text, question):
    try:
        document = clean_document(read_pasted_text(text))
    except DocumentError:
        return
    assert_linked(document)
    check_answers(document, question)


@PROPERTY_SETTINGS
@given(
    data=st.binary(max_size=400) | words.map(lambda s: s.encode("cp949", "ignore")),
    filename=st.sampled_from(["a.txt", "a.html", "a.md", None, "a.pdf"]),
)
def test_bytes_never_crash(data, filename):
    try:
        document = clean_document(read_upload(data, filename=filename))
    except DocumentError as error:
        assert str(error).endswith(".")
        return
    assert_linked(document)


@settings(max_examples=200, deadline=None)
@given(text=words, cut=st.tuples(st.integers(0, 200), st.integers(0, 200)))
def test_tidying_moves_inward_only(text, cut):
    start, end = sorted(min(c, len(text)) for c in cut)
    new_start, new_end = tidy_answer_span(text, start, end)
    assert start <= new_start <= new_end <= end
    assert (new_end > new_start) or (end == start)
