"""Document + question -> what the page shows: :func:`littlebird.reader.read` on a cleaned Document.

The reading itself (layout, windows, decoding, merging, the no-answer rule) is the reader the
evaluation scores, and its :class:`~littlebird.reader.Reading` is what the page and the API show; this module
adds the app's tidying (punctuation, Korean particles), the document's fetch and clean times, and a sentence
for the user when there is no clear answer. :func:`answer_question` gives the answers.
"""

from dataclasses import replace
from typing import Callable

from littlebird.answer_text import tidy_answer_span
from littlebird.documents.clean import Document
from littlebird.documents.limits import check_tokens
from littlebird.language import detect_language
from littlebird.reader import DEFAULT_READING, Answer, Reading, ReadingOptions, encode_text, read

__all__ = ["Answer", "Reading", "answer_question"]


def _message(reading: Reading, document: Document, question_language: str) -> str | None:
    """What the page says when there is no clear answer, or when a language was not recognised."""
    message = None
    if not reading.answers:
        message = "No answer to this question was found in the text."
    elif reading.no_answer:
        message = (
            f"The text may not answer this question (the model is {reading.answerable_probability:.0%} sure "
            f"it does); its best guesses are listed anyway."
        )
    if document.language == "unknown" or question_language == "unknown":
        note = "The language was not recognised; answers may be unreliable (the model reads Korean and English)."
        message = f"{message} {note}" if message else note
    return message


def answer_question(
    document: Document,
    question: str,
    *,
    model,
    tokenizer,
    options: ReadingOptions = DEFAULT_READING,
    max_tokens: int | None = None,
    on_window: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_pass: Callable[[str], None] | None = None,
) -> Reading:
    """Answer ``question`` from ``document`` with an extractive QA model (LittleBird, teacher or baseline).

    Returns the reader's :class:`~littlebird.reader.Reading`, with up to ``options.n_best`` answers as spans of
    ``document.text`` tidied with :func:`littlebird.answer_text.tidy_answer_span`; its ``timings`` begin with the
    document's fetching and cleaning, and its ``note`` is what the page says under the answer. ``options``
    (:class:`littlebird.reader.ReadingOptions`) set the reading: the windows, how many are read, the time budget,
    the no-answer threshold; see :func:`littlebird.reader.read` for ``on_pass``. An empty question or a document
    without text gives a reading with a ``note``, never an exception.

    ``max_tokens``: a document with more tokens is refused with a DocumentError before the model
    runs (None: no limit). ``on_window`` and ``should_stop`` go to the reader: when
    not every window was read, the reader's note ("Read N of M windows ...") opens ``note``; when ``should_stop()``
    turns True, :class:`littlebird.reader.ReadingStopped` is raised between windows.
    """
    timings = {"fetch": document.fetch_seconds, "clean": document.clean_seconds}
    question = (question or "").strip()
    if not any(ch.isalnum() for ch in question):
        timings.update(tokenize=0.0, model=0.0, decode=0.0)
        return Reading([], 0.0, True, 0, [], 0, timings, note="Please type a question about the document.")
    if max_tokens is not None:  # tokenized once: the reader finds these tokens in its cache
        encoded = encode_text(document.model_text, tokenizer, text=document.text, model_to_text=document.model_to_text)
        check_tokens(len(encoded.input_ids), max_tokens)
    reading = read(
        question,
        document.text,
        model=model,
        tokenizer=tokenizer,
        options=options,
        model_text=document.model_text,
        model_to_text=document.model_to_text,
        tidy=tidy_answer_span,
        on_window=on_window,
        should_stop=should_stop,
        on_pass=on_pass,
    )
    if reading.n_windows == 0:
        note = "The document has no text to search."
    else:
        note = " ".join(m for m in (reading.note, _message(reading, document, detect_language(question))) if m) or None
    return replace(reading, timings={**timings, **reading.timings}, note=note)


# Five windows of plain text: the reader's whole path (tokenizing, ranking, several windows, decoding).
WARM_SENTENCE = "The harbour town kept its lighthouse lit from dusk to dawn every night of the year."
WARM_QUESTION = "When was the lighthouse lit?"
_WARM_TEXT = " ".join([WARM_SENTENCE] * 260)


def warm_up(model, tokenizer, should_stop: Callable[[], bool] | None = None) -> None:
    """Read one question through the app's reader, so the first user's question does not pay for the model's
    first forward passes (allocations, kernel choices) or the answer tidying's start. ``should_stop`` ends it
    between windows (:class:`littlebird.reader.ReadingStopped`), as when the app shuts down meanwhile."""
    read(WARM_QUESTION, _WARM_TEXT, model=model, tokenizer=tokenizer, tidy=tidy_answer_span, should_stop=should_stop)
