"""Document + question -> what the page shows: :func:`littlebird.reader.read` on a cleaned Document.

The reading itself (layout, windows, decoding, merging, the no-answer rule) is the reader the
evaluation scores; this module adds the app's tidying (punctuation, Korean particles), the
question's language, the device, and a sentence for the user when there is no clear answer.
:func:`answer_question` gives the answers.
"""

from dataclasses import dataclass, field
from typing import Callable

from littlebird.documents.clean import Document
from littlebird.documents.limits import check_tokens
from littlebird.answer_text import tidy_answer_span
from littlebird.language import detect_language
from littlebird.reader import DEFAULT_READING, Answer, ReadingOptions, WindowRecord, encode_text, model_device, read

__all__ = ["Answer", "QAResult", "answer_question"]


@dataclass
class QAResult:
    """Everything the UI shows for one question."""

    answers: list[Answer]  # n-best, best first; kept even when ``no_answer`` so nothing is lost
    no_answer: bool
    answerable_probability: float
    timings: dict[str, float]  # seconds: "fetch", "clean", "tokenize", "model", "decode"
    n_tokens: int  # document tokens
    n_windows: int  # windows the model read
    question_language: str
    device: str
    window_token_spans: list[tuple[int, int]]  # document token range [start, end) of each window read, in reading order
    message: str | None = None  # a sentence for the user when there is no clear answer or only part was read
    windows_planned: int = 0  # windows that cover the whole document; more than ``n_windows`` when only some were read
    windows: list[WindowRecord] = field(default_factory=list)  # every window, document order: rank, and what was read


def _message(result: QAResult, document: Document) -> str | None:
    message = None
    if not result.answers:
        message = "No answer to this question was found in the text."
    elif result.no_answer:
        message = (f"The text may not answer this question (the model is {result.answerable_probability:.0%} sure "
                   f"it does); its best guesses are listed anyway.")
    if document.language == "unknown" or result.question_language == "unknown":
        note = "The language was not recognised; answers may be unreliable (the model reads Korean and English)."
        message = f"{message} {note}" if message else note
    return message


def answer_question(document: Document, question: str, *, model, tokenizer, options: ReadingOptions = DEFAULT_READING,
                    max_tokens: int | None = None, on_window: Callable[[int, int], None] | None = None,
                    should_stop: Callable[[], bool] | None = None,
                    on_pass: Callable[[str], None] | None = None) -> QAResult:
    """Answer ``question`` from ``document`` with an extractive QA model (LittleBird, teacher or baseline).

    Returns the result, with up to ``options.n_best`` answers as spans of ``document.text`` tidied with
    :func:`littlebird.answer_text.tidy_answer_span`. ``options`` (:class:`littlebird.reader.ReadingOptions`)
    set the reading: the windows, how many are read, the time budget, the no-answer threshold; see
    :func:`littlebird.reader.read` for ``on_pass``. An empty question or a document without text gives a result
    with a ``message``, never an exception.

    ``max_tokens``: a document with more tokens is refused with a DocumentError before the model
    runs (None: no limit). ``on_window`` and ``should_stop`` go to the reader: when
    not every window was read, the reader's note ("Read N of M windows ...") opens ``message``; when ``should_stop()`` turns
    True, :class:`littlebird.reader.ReadingStopped` is raised between windows.
    """
    timings = {"fetch": document.fetch_seconds, "clean": document.clean_seconds}
    question = (question or "").strip()
    question_language = detect_language(question)
    device = str(model_device(model))
    if not any(ch.isalnum() for ch in question):
        timings.update(tokenize=0.0, model=0.0, decode=0.0)
        return QAResult([], True, 0.0, timings, 0, 0, question_language, device, [],
                        message="Please type a question about the document.")
    if max_tokens is not None:  # tokenized once: the reader finds these tokens in its cache
        encoded = encode_text(document.model_text, tokenizer, text=document.text, model_to_text=document.model_to_text)
        check_tokens(len(encoded.input_ids), max_tokens)
    reading = read(question, document.text, model=model, tokenizer=tokenizer, options=options,
                   model_text=document.model_text, model_to_text=document.model_to_text, tidy=tidy_answer_span,
                   on_window=on_window, should_stop=should_stop, on_pass=on_pass)
    timings.update(reading.timings)
    result = QAResult(reading.answers, reading.no_answer, reading.answerable_probability, timings, reading.n_tokens,
                      reading.n_windows, question_language, device, reading.window_token_spans,
                      windows_planned=reading.windows_planned, windows=reading.windows)
    if reading.n_windows == 0:
        result.message = "The document has no text to search."
    else:
        result.message = " ".join(m for m in (reading.note, _message(result, document)) if m) or None
    return result


# Five windows of plain text: the reader's whole path (tokenizing, ranking, several windows, decoding).
WARM_SENTENCE = "The harbour town kept its lighthouse lit from dusk to dawn every night of the year."
WARM_QUESTION = "When was the lighthouse lit?"
_WARM_TEXT = " ".join([WARM_SENTENCE] * 260)


def warm_up(model, tokenizer, should_stop: Callable[[], bool] | None = None) -> None:
    """Read one question through the app's reader, so the first user's question does not pay for the model's
    first forward passes (allocations, kernel choices) or the answer tidying's start. ``should_stop`` ends it
    between windows (:class:`littlebird.reader.ReadingStopped`), as when the app shuts down meanwhile."""
    read(WARM_QUESTION, _WARM_TEXT, model=model, tokenizer=tokenizer, tidy=tidy_answer_span, should_stop=should_stop)
