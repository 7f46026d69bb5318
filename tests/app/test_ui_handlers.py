"""The app's handlers as plain functions: examples, documents, asking, cancelling, rendering, the API payload,
loading."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from littlebird.app import asking, models, payloads, ui
from littlebird.app.cancellation import Cancellation
from littlebird.app.examples import choose_example, find_example, load_examples, web_pages
from littlebird.app.explorer.cache import CAPTURES, capture_key
from littlebird.app.explorer.capture import ReadingInputs, keeping_reading
from littlebird.app.explorer.explaining import after_reading, explain, explain_token, warm_explorer
from littlebird.app.explorer.keys import layer_weights
from littlebird.app.explorer.plots import (
    atlas_cell,
    atlas_cells,
    atlas_figure,
    explore,
    reading_map_figure,
    rollout_document,
)
from littlebird.app.explorer.target import AnswerChoice, WindowChoice
from littlebird.documents import sources as documents
from littlebird.documents.clean import clean_document
from littlebird.documents.errors import DocumentError
from littlebird.documents.limits import (
    DEFAULT_MAX_CHARACTERS,
    DEFAULT_QUESTION_SECONDS,
    MAX_HTML_CHARACTERS,
    Limits,
    check_characters,
)
from littlebird.documents.upload import read_pasted_text, read_upload
from littlebird.reader import Answer, Reading, ReadingOptions, ReadingStopped
from tests.support.qa import qa_tokenizer
from tests.support.ui import TEST_MODEL, serve_directory, tiny_answering_model, tiny_loaded_model

SHORT_DOCUMENT = (
    "<h1>Jikji</h1><p>Jikji was printed with movable metal type at Heungdeoksa temple in 1377.</p>"
    "<p>The surviving volume is kept at the National Library of France in Paris.</p>"
)


@pytest.fixture(scope="module")
def settings() -> asking.Settings:
    tiny_loaded_model()
    return asking.Settings(checkpoint=TEST_MODEL)


def ask_as_the_page(source: str, question: str, settings: asking.Settings, **options):
    """``asking.ask`` as the page asks: keeping the layer inputs of the windows read, then the explorer's target of
    the answer (``explaining.after_reading``). Returns (view, target)."""
    kept = ReadingInputs()
    view = asking.ask(source, question, settings, observe=kept.keeping, **options)
    return view, after_reading(view, question, settings, kept)


def make_result(answers: list[tuple[int, int]], text: str, *, no_answer: bool = False) -> Reading:
    """A Reading with the given spans of ``text`` as its n-best, best first, as the page gets one."""
    n = len(answers)
    return Reading(
        answers=[
            Answer(text[s:e], s, e, score=1.0 - i, probability=1 / n, window=0) for i, (s, e) in enumerate(answers)
        ],
        no_answer=no_answer,
        answerable_probability=0.9,
        timings={"fetch": 0.0, "clean": 0.01, "model": 0.5},
        n_tokens=1234,
        window_token_spans=[(0, 1000), (500, 1234)],
        question_length=12,
    )


# ---- examples ----------------------------------------------------------------------


def test_examples_are_long_bilingual_documents_whose_answers_are_in_the_text():
    examples = load_examples()
    assert sorted(e.language for e in web_pages(examples)) == ["en", "en", "ko", "ko"]
    assert [e.path.suffix for e in examples if not e.is_page] == [".pdf"]
    tokenizer = qa_tokenizer()
    for example in examples:
        if example.is_page:
            source = example.read_html()
            for tag in ("<h1>", "<h2>", "<p>", "<table>", "<li>"):
                assert tag in source, f"{example.id} has no {tag}"
        else:
            assert example.path.stat().st_size < 1_000_000
        document = clean_document(read_upload(example.path))
        assert document.language == example.language
        assert len(tokenizer(document.model_text)["input_ids"]) > 3000, f"{example.id} is not long"
        assert 3 <= len(example.questions) <= 5
        for suggestion in example.questions:
            assert suggestion.answer in document.text, f"{example.id}: {suggestion.answer!r} is not in the text"


def test_choose_example_fills_the_paste_box_and_the_suggestions():
    example = load_examples()[0]
    html, path, questions, first = choose_example(example.label)
    assert html == example.read_html() and path is None
    assert questions == [q.question for q in example.questions] and first == questions[0]
    pdf = find_example("en-libraries-report")
    assert choose_example(pdf.label)[:2] == (None, str(pdf.path))  # a file is uploaded, not pasted
    with pytest.raises(ValueError, match="not an HTML page"):
        pdf.read_html()
    assert find_example(example.id) is example
    with pytest.raises(KeyError):
        find_example("no such example")


# ---- rendering ---------------------------------------------------------------------


def test_highlight_escapes_the_document_and_marks_answers_by_rank():
    text = 'A <script>alert("x")</script> B & C: the answer is here, alternatives nearby.'
    best = (text.index("the answer"), text.index(", alt"))
    alternative = (text.index("answer is"), text.index("nearby") + len("nearby"))  # overlaps the best
    rendered = payloads.highlight_document(text, make_result([best, alternative], text))
    assert "<script>" not in rendered and "&lt;script&gt;" in rendered and "&amp; C" in rendered
    assert rendered.count('id="lb-answer"') == 1
    # the overlap belongs to the better answer: the best span is marked whole, the rest of the alternative lighter
    assert '<mark class="lb-best" id="lb-answer" title="#1 · 50%">the </mark>' in rendered
    assert '<mark class="lb-best" title="#1 · 50%">answer is here</mark>' in rendered
    assert '<mark class="lb-alt" title="#2 · 50%">, alternatives nearby</mark>' in rendered


def test_highlight_tints_spans_around_the_answer_marks():
    text = "One block of text. Another block, with the answer inside it. A third."
    best = (text.index("the answer"), text.index(" inside"))
    second = (text.index("Another"), text.index(" A third"))
    rendered = payloads.highlight_answers(
        text, make_result([best], text).answers, tints=[(second[0], second[1], "rollout #1: 40%"), (0, 18, "<#2>")]
    )
    assert rendered.count('id="lb-answer"') == 1
    assert (
        '<span class="lb-tint lb-tint-1" title="rollout #1: 40%"><mark class="lb-best" id="lb-answer" '
        'title="#1 · 100%">the answer</mark></span>'
    ) in rendered
    assert '<span class="lb-tint lb-tint-2" title="&lt;#2&gt;">One block of text.</span>' in rendered
    assert rendered.count("lb-tint-1") == 3  # before, on and after the answer


def test_highlight_without_answers_and_with_a_weak_best():
    text = "Nothing <b>to</b> see."
    assert (
        payloads.highlight_document(text, None)
        == '<div class="lb-doc" lang="en">Nothing &lt;b&gt;to&lt;/b&gt; see.</div>'
    )
    weak = payloads.highlight_document(text, make_result([(0, 7)], text, no_answer=True))
    assert 'class="lb-best-weak"' in weak


def test_answer_card_says_no_answer_plainly_and_escapes():
    text = "The <i>answer</i> is 42."
    tagged, number = (4, text.index(" is")), (text.index("42"), text.index("42") + 2)
    found = payloads.answer_card(make_result([tagged, number], text))
    assert "&lt;i&gt;answer&lt;/i&gt;" in found and "<i>" not in found
    assert found.count("<tr>") == 3  # header + two n-best rows
    missing = payloads.answer_card(make_result([number], text, no_answer=True))
    assert "No answer found." in missing and "42" in missing  # the guess stays in the table


def test_stats_line_names_tokens_windows_device_and_every_stage():
    from littlebird.inference import resolve_cpu_mode

    result = make_result([(0, 1)], "xy")
    line = payloads.stats_line(result, tiny_loaded_model())
    mode = resolve_cpu_mode(os.environ.get("LITTLEBIRD_CPU_MODE", "auto"))
    precision = "float32" if mode == "fp32" else f"float32, {mode}"  # the CPU mode the app chose is shown
    assert line.startswith(f"1,234 tokens · 2 windows · cpu ({precision})")
    for stage in ("fetch 0.00 s", "clean 0.01 s", "model 0.50 s"):
        assert stage in line
    partial = payloads.stats_line(replace(result, windows_planned=7), tiny_loaded_model())
    assert partial.startswith("1,234 tokens · 2 of 7 windows read · cpu")


# ---- documents -----------------------------------------------------------------------


def test_read_document_caches_pasted_text():
    first = documents.read_document("paste", pasted=SHORT_DOCUMENT + "<p>cache me</p>")
    again = documents.read_document("paste", pasted=SHORT_DOCUMENT + "<p>cache me</p>")
    assert again.text == first.text and again.clean_seconds == 0.0


def test_read_document_from_upload_and_url(tmp_path):
    path = tmp_path / "jikji.html"
    path.write_text(SHORT_DOCUMENT, encoding="utf-8")
    assert "Heungdeoksa" in documents.read_document("upload", upload=str(path)).text

    with serve_directory(tmp_path) as base:
        url = f"{base}/jikji.html"
        assert "Heungdeoksa" in documents.read_document("url", url=url, allow_local=True).text
        # the same page (a query string keeps it out of the cache) is refused for its loopback address unless asked for
        with pytest.raises(
            DocumentError, match=r"points to a loopback address \(this computer\).*only public web pages"
        ):
            documents.read_document("url", url=f"{url}?again")


@pytest.mark.parametrize(
    "source, kwargs",
    [
        ("paste", {"pasted": "   "}),
        ("url", {"url": ""}),
        ("upload", {"upload": None}),
        ("url", {"url": "ftp://example.com/x"}),
        ("url", {"url": "file:///etc/passwd"}),
    ],
)
def test_read_document_errors_are_sentences_for_the_user(source, kwargs):
    with pytest.raises(DocumentError) as error:
        documents.read_document(source, **kwargs)
    assert str(error.value).endswith(".")


def test_unknown_source_and_bad_settings_are_rejected():
    with pytest.raises(ValueError, match="source must be one of"):
        documents.read_document("clipboard")
    with pytest.raises(ValueError, match="max_length"):
        asking.Settings(reading=ReadingOptions(max_length=100))
    with pytest.raises(ValueError, match="n_best"):
        asking.Settings(reading=ReadingOptions(n_best=0))
    with pytest.raises(ValueError, match="no_answer_threshold"):
        asking.Settings(reading=ReadingOptions(no_answer_threshold=1.5))


# ---- asking --------------------------------------------------------------------------


def test_ask_reports_progress_and_returns_everything_the_page_shows(settings):
    reports = []
    view, target = ask_as_the_page(
        "paste",
        "Where was Jikji printed?",
        settings,
        pasted=SHORT_DOCUMENT + "<p>Not cached yet.</p>",
        report=lambda fraction, message: reports.append((fraction, message)),
    )
    fractions = [f for f, _ in reports]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    for stage in ("Reading", "Cleaning", "model"):
        assert any(stage in message for _, message in reports), stage
    assert "attention" not in view.reading.timings  # asking never reruns a window for its attention

    best = view.reading.answers[0]
    assert view.document.text[best.start : best.end] == best.text
    assert view.n_best[0][1] == best.text and len(view.n_best) == len(view.reading.answers)
    assert 'id="lb-answer"' in view.document_html
    assert "tokens" in view.stats

    # opening the explorer reads the answer's window again, for its attention
    summary, plots, seconds = explain(target, layer=1, head=3)
    assert summary is not None and summary.num_layers == 2 and summary.num_heads == 4 and seconds > 0
    assert summary.answer_tokens  # the best answer's tokens were found in the window
    assert set(plots) == {"block_map", "answer", "pack", "curves", "atlas", "rollout"}
    assert "layer 1 head 3" in plots["block_map"].layout.title.text
    assert len(plots["rollout"].data) == 2 * len(summary.rollout_tokens) + 1  # a map and bars per token, the strip
    # the document view, redrawn with the rollout's top blocks tinted around the answer marks
    tinted = rollout_document(target, summary)
    assert 'id="lb-answer"' in tinted and 'class="lb-tint lb-tint-1" title="rollout #1: ' in tinted
    assert rollout_document(target, None) == view.document_html


def test_explore_redraws_one_head_and_copes_without_a_summary(settings):
    _, target = ask_as_the_page("paste", "When was it printed?", settings, pasted=SHORT_DOCUMENT)
    summary, _, _ = explain(target)
    plots = explore(summary, TEST_MODEL, layer=0, head=2)
    assert "layer 0 head 2" in plots["pack"].layout.title.text
    empty = explore(None, TEST_MODEL, layer=0, head=0)
    assert "Ask a question" in empty["block_map"].layout.annotations[0].text


def test_the_head_atlas_menu_lists_the_heads_highest_first_and_sets_layer_and_head(settings):
    _, target = ask_as_the_page("paste", "When was it printed?", settings, pasted=SHORT_DOCUMENT)
    summary, plots, _ = explain(target, layer=1, head=2, metric="distance")
    assert "distance" in plots["atlas"].layout.title.text
    cells = atlas_cells(summary, "distance")
    values = summary.head_metrics["distance"]
    assert len(cells) == values.size == 2 * 4
    ranked = [values[atlas_cell(value)] for _, value in cells]
    assert ranked == sorted(ranked, reverse=True)
    assert atlas_cell(cells[0][1]) == np.unravel_index(np.argmax(values), values.shape)
    redrawn = atlas_figure(summary, TEST_MODEL, "entropy", layer=0, head=3)
    assert "entropy" in redrawn.layout.title.text and redrawn.layout.shapes[0].x0 == 2.5
    assert atlas_cells(None, "pack") == []


def test_the_explorer_without_a_question_shows_what_to_do(settings):
    quick = asking.Settings(checkpoint=TEST_MODEL, reading=ReadingOptions(n_best=2, max_length=512))
    view, target = ask_as_the_page("paste", "When was it printed?", quick, pasted=SHORT_DOCUMENT)
    assert target is not None and len(view.reading.answers) <= 2
    summary, plots, _ = explain(None)
    assert summary is None and "Ask a question" in plots["answer"].layout.annotations[0].text


def test_the_explorer_can_be_aimed_at_any_answer_or_window_of_the_reading(settings):
    pasted = "\n\n".join(f"Paragraph {i}: the bell of the town hall was cast in {1700 + i}." for i in range(120))
    settings = replace(settings, reading=replace(settings.reading, max_length=512, max_windows=3))
    view, target = ask_as_the_page("paste", "When was the bell cast?", settings, pasted=pasted)
    result = view.reading
    assert len(target.windows) == result.windows_planned > 3 and target.answers == tuple(result.answers)
    best = result.answers[0]
    assert target.aim == AnswerChoice(0) and target.answer_span == (best.start, best.end)
    assert target.document_start == result.window_token_spans[best.window][0]
    aims = [aim for _, aim in target.choices()]
    assert aims == [AnswerChoice(k) for k in range(len(result.answers))] + [
        WindowChoice(i) for i in range(len(target.windows))
    ]
    # the page's menu holds them as strings, and reads them back
    assert [ui.aim_of(ui.aim_value(aim)) for aim in aims] == aims and ui.aim_value(WindowChoice(3)) == "window:3"
    with pytest.raises(ValueError, match="answer:K"):
        ui.aim_of("the third one")

    # another n-best answer: its own window and span
    last = len(result.answers) - 1
    other = target.aimed(AnswerChoice(last))
    assert other.answer_span == (result.answers[last].start, result.answers[last].end)
    assert other.document_start == result.window_token_spans[result.answers[last].window][0]
    # a window nobody read: its tokens, no answer; the explorer reads it now
    unread = next(i for i, w in enumerate(target.windows) if w.read is None)
    aimed = target.aimed(WindowChoice(unread))
    assert aimed.aim == WindowChoice(unread) and aimed.answer_span is None
    assert aimed.document_start == target.windows[unread].start
    summary, plots, _ = explain(aimed)
    best_summary, _, _ = explain(target)
    width = {i: target.windows[i].end - target.windows[i].start for i in (unread, target.window)}
    assert summary.n_tokens - width[unread] == best_summary.n_tokens - width[target.window] > 0  # the same question
    assert (
        best_summary.answer_tokens
        and summary.answer_tokens == ()
        and "No answer span" in plots["answer"].layout.annotations[0].text
    )
    reading_map = reading_map_figure(aimed, TEST_MODEL)
    assert reading_map.layout.shapes[0].x0 == unread - 0.5  # the window explored is shaded
    with pytest.raises(ValueError, match="no window 9999"):
        target.aimed(WindowChoice(9999))
    with pytest.raises(TypeError, match="AnswerChoice or a WindowChoice"):
        target.aimed("answer:0")


@pytest.mark.parametrize(
    "address", ["file:///etc/passwd", "ftp://example.org/notes.txt", "javascript:alert(1)", "http://10.0.0.1/admin"]
)
def test_answer_document_refuses_other_schemes_like_internal_addresses(settings, address):
    with pytest.raises(DocumentError, match="for safety, only public web pages can be fetched"):
        asking.answer_document(address, "What is in it?", checkpoint=TEST_MODEL)


def test_answer_document_payload_is_json_with_offsets_into_its_text(settings):
    payload = asking.answer_document(SHORT_DOCUMENT, "Where is the surviving volume kept?", checkpoint=TEST_MODEL)
    json.dumps(payload)
    assert payload["answer"] == payload["text"][payload["start"] : payload["end"]]
    assert payload["n_best"][0]["answer"] == payload["answer"] and not payload["no_answer"]
    assert set(payload["timings"]) >= {"clean", "tokenize", "model", "decode"}


# ---- cancellation: a question asked again, a client that has gone --------------------------


def test_a_newer_question_or_a_closed_session_stops_the_questions_before():
    cancellation = Cancellation()
    first = cancellation.new_question("page")
    with cancellation.answering("page", first) as first_wanted_no_more:
        with cancellation.answering("client", None) as api_question, cancellation.answering(None) as direct_call:
            assert not first_wanted_no_more() and not api_question()
            second = cancellation.new_question("page")
            with cancellation.answering("page", second) as second_wanted_no_more:
                assert first_wanted_no_more() and not second_wanted_no_more()
                assert not api_question()  # another session's questions are not touched
                cancellation.end_session("page")
                assert second_wanted_no_more()
            cancellation.end_session("client")
            assert api_question() and not direct_call()
    with cancellation.answering("page", first) as late:  # asked before the page closed, started after
        assert late()
    assert cancellation.new_question("other page") == 1


def test_ask_passes_should_stop_to_the_reader(settings):
    with pytest.raises(ReadingStopped):
        asking.ask("paste", "When was it printed?", settings, pasted=SHORT_DOCUMENT, should_stop=lambda: True)
    view = asking.ask("paste", "When was it printed?", settings, pasted=SHORT_DOCUMENT, should_stop=lambda: False)
    assert view.reading.answers


# ---- bounds: document size and time per question ----------------------------------------


@pytest.fixture
def no_cleaning_or_model(monkeypatch) -> list[str]:
    """Cleaning and the model record their calls instead of running: what a refusal must never reach."""
    calls: list[str] = []
    monkeypatch.setattr(documents, "clean_document", lambda raw: calls.append("clean"))
    monkeypatch.setattr(asking, "load_model", lambda checkpoint=None: calls.append("load_model"))
    monkeypatch.setattr(asking, "run_qa", lambda *args, **kwargs: calls.append("run_qa"))
    return calls


def test_an_oversized_paste_is_refused_at_once_with_its_size_and_the_limit(no_cleaning_or_model):
    paste = "Jikji was printed with movable metal type in 1377. " * 48_000  # 2.4 MB
    with pytest.raises(DocumentError) as error:
        asking.answer_document(paste, "When was Jikji printed?", checkpoint=TEST_MODEL)
    message = str(error.value)
    limits = Limits()
    assert f"{len(paste):,} characters" in message and f"{limits.max_characters:,} characters" in message
    assert "Please paste or upload only the part" in message
    assert no_cleaning_or_model == []


def test_the_character_limit_applies_to_uploads_and_fetched_pages(tmp_path, monkeypatch, no_cleaning_or_model):
    monkeypatch.setenv("LITTLEBIRD_MAX_CHARACTERS", "800")
    path = tmp_path / "long.txt"
    path.write_text("Jikji was printed in 1377. " * 40, encoding="utf-8")  # 1,080 characters
    with pytest.raises(DocumentError, match="1,080 characters long; this app reads at most 800 characters"):
        documents.read_document("upload", upload=str(path))
    with serve_directory(tmp_path) as base, pytest.raises(DocumentError, match="at most 800 characters"):
        documents.read_document("url", url=f"{base}/long.txt", allow_local=True)
    html = read_pasted_text(
        SHORT_DOCUMENT * 8
    )  # markup is mostly not text: HTML has the byte cap, text the character limit
    assert html.is_html and 800 < len(html.text) < MAX_HTML_CHARACTERS
    check_characters(html, Limits(max_characters=800))
    assert no_cleaning_or_model == []


def test_the_limits_come_from_the_environment():
    assert Limits.from_environment({}) == Limits(DEFAULT_MAX_CHARACTERS, DEFAULT_QUESTION_SECONDS, None)
    environ = {
        "LITTLEBIRD_MAX_CHARACTERS": "4096",
        "LITTLEBIRD_QUESTION_SECONDS": "none",
        "LITTLEBIRD_MAX_TOKENS": "512",
    }
    assert Limits.from_environment(environ) == Limits(4096, None, 512)
    with pytest.raises(ValueError, match="question_seconds must be positive"):
        Limits.from_environment({"LITTLEBIRD_QUESTION_SECONDS": "0"})


def test_a_document_over_the_token_limit_is_refused_before_the_model_reads_it(settings, monkeypatch):
    monkeypatch.setenv("LITTLEBIRD_MAX_TOKENS", "20")  # 160 characters pass, but they are more than 20 tokens
    calls = []
    monkeypatch.setattr("littlebird.app.qa.read", lambda *args, **kwargs: calls.append("read"))
    with pytest.raises(DocumentError, match=r"tokens long; this app reads at most 20 tokens per question"):
        asking.ask(
            "paste",
            "When?",
            settings,
            pasted="Jikji was printed with movable metal type at Heungdeoksa in 1377, and the volume is in Paris.",
        )
    assert calls == []


def test_a_spent_time_budget_shows_a_note_and_the_windows_read(settings, monkeypatch):
    monkeypatch.setenv("LITTLEBIRD_QUESTION_SECONDS", "1e-9")  # spent after the first window
    pasted = "Jikji was printed with movable metal type at Heungdeoksa temple in 1377. " * 120  # about 2,000 tokens
    reports = []
    settings = replace(settings, reading=replace(settings.reading, max_length=512))
    view = asking.ask(
        "paste",
        "When was Jikji printed?",
        settings,
        pasted=pasted,
        report=lambda fraction, message: reports.append(message),
    )
    planned = view.reading.windows_planned
    assert view.reading.n_windows == 1 < planned
    assert f"Read 1 of {planned} windows" in view.reading.note and "ran out" in view.reading.note
    assert f"Read 1 of {planned} windows" in view.answer_html and f"1 of {planned} windows read ·" in view.stats
    assert any("window 1 of" in message for message in reports)
    assert payloads.api_payload(view.reading, view.document, view.device)["message"] == view.reading.note


# ---- the model -------------------------------------------------------------------------


def test_load_model_reads_a_checkpoint_directory_once(tmp_path):
    tiny = tiny_loaded_model()
    tiny_answering_model().save_pretrained(tmp_path)  # the fp32 model, whichever CPU mode the app picked
    tiny.tokenizer.save_pretrained(tmp_path)
    loaded = models.load_model(str(tmp_path))
    assert models.load_model(str(tmp_path)) is loaded
    assert (loaded.device, loaded.dtype, loaded.warning) == ("cpu", tiny.dtype, None)  # same CPU mode as in memory
    assert loaded.dtype.startswith("float32")
    assert loaded.num_layers == 2 and loaded.num_heads == 4 and loaded.block_size == 64
    torch.testing.assert_close(loaded.slopes["beta"], tiny.slopes["beta"])


def test_the_app_reads_bialibi_slopes_from_the_model():
    model, _ = models.random_model()
    with torch.no_grad():
        for i, layer in enumerate(model.littlebird.encoder.layer):
            layer.bialibi.alpha.copy_(torch.arange(4.0) + 10 * i)
    slopes = model.bialibi_slopes()
    assert set(slopes) == {"alpha", "beta", "gamma"} and slopes["gamma"].shape == (2, 4)
    assert slopes["alpha"].tolist() == [[0.0, 1.0, 2.0, 3.0], [10.0, 11.0, 12.0, 13.0]]
    torch.testing.assert_close(slopes["beta"][1], model.littlebird.encoder.layer[1].bialibi.beta.detach())
    arrays = models.bialibi_slopes(model)  # what LoadedModel.slopes holds: float32 numpy, for the plots
    assert arrays["alpha"].dtype == "float32" and arrays["alpha"].tolist() == slopes["alpha"].tolist()


def test_a_checkpoint_without_tokenizer_files_gets_the_e5_tokenizer(tmp_path):
    tiny_answering_model().save_pretrained(tmp_path)  # as compact checkpoints are saved
    tokenizer = models.load_model(str(tmp_path)).tokenizer
    assert tokenizer("훈민정음")["input_ids"] == qa_tokenizer()("훈민정음")["input_ids"]
    assert tokenizer.convert_tokens_to_ids("[QUESTION]") == qa_tokenizer().convert_tokens_to_ids("[QUESTION]")


def test_a_model_the_app_loaded_in_fp32_saves_the_same_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("LITTLEBIRD_CPU_MODE", "fp32")
    tiny_answering_model().save_pretrained(tmp_path / "source")
    loaded = models.load_model(str(tmp_path / "source"))
    assert loaded.dtype == "float32"
    loaded.model.save_pretrained(tmp_path / "copy")
    again = models.load_model(str(tmp_path / "copy")).model.state_dict()
    for name, tensor in tiny_answering_model().state_dict().items():
        assert torch.equal(again[name], tensor), name


def test_a_model_the_app_loaded_in_bf16_linear_refuses_to_save_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("LITTLEBIRD_CPU_MODE", "bf16-linear")  # emulated, so slow, on AVX2 CPUs; fine for a tiny model
    tiny_answering_model().save_pretrained(tmp_path / "source")
    loaded = models.load_model(str(tmp_path / "source"))
    assert loaded.dtype == "float32, bf16-linear"
    with pytest.raises(ValueError, match="converted for CPU inference.*LITTLEBIRD_CPU_MODE=fp32"):
        loaded.model.save_pretrained(tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


def test_missing_checkpoints(tmp_path, monkeypatch):
    with pytest.raises(models.CheckpointError, match="no checkpoint"):
        models.load_model(str(tmp_path / "nowhere"))
    # a missing default never stops the app: a random model with a warning stands in
    monkeypatch.setattr(models, "DEFAULT_CHECKPOINT", str(tmp_path / "littlebird-qa"))
    fallback = models.load_model(None)
    assert "randomly initialised" in fallback.warning
    assert fallback.tokenizer.convert_tokens_to_ids("[QUESTION]") == fallback.model.config.question_token_id


def test_pick_device_prefers_a_gpu_in_half_precision(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    assert models.pick_device() == (torch.device("cuda"), torch.float16)
    monkeypatch.setenv("LITTLEBIRD_DEVICE", "cpu")
    assert models.pick_device() == (torch.device("cpu"), torch.float32)


def test_build_demo_exposes_only_the_answer_api(settings):
    demo = ui.build_demo(TEST_MODEL)
    api = demo.get_api_info()
    assert list(api["named_endpoints"]) == ["/answer"]
    parameters = [p["parameter_name"] for p in api["named_endpoints"]["/answer"]["parameters"]]
    assert parameters == ["document", "question"]
    assert Path(models.DEFAULT_CHECKPOINT).name == "littlebird-qa"


def test_the_explorers_view_exports_as_an_npz_with_its_json(settings):
    from littlebird.app.explorer.export import ARRAYS, METADATA, export_view, read_explorer_file

    view, target = ask_as_the_page("paste", "Where was Jikji printed?", settings, pasted=SHORT_DOCUMENT)
    summary, _, _ = explain(target)
    path = export_view(target, summary, layer=1, head=2, metric="entropy")
    assert path.suffix == ".npz" and path.name == "littlebird-explorer-window0-layer1-head2.npz"
    arrays, metadata = read_explorer_file(path)
    assert set(arrays) == set(ARRAYS) == set(metadata["arrays"]) and metadata["token"] is None
    for name in ("block_maps", "answer_blocks", "answer_pack", "pack_reads", "rollout", "rollout_pack_share"):
        np.testing.assert_array_equal(arrays[name], getattr(summary, name))
    np.testing.assert_array_equal(arrays["metric_entropy"], summary.head_metrics["entropy"])
    np.testing.assert_array_equal(arrays["metric_prior"], summary.head_metrics["prior"])
    assert tuple(arrays["rollout_tokens"]) == summary.rollout_tokens and arrays["rollout"].shape[:2] == (2, 3)
    assert (
        tuple(arrays["block_labels"]) == summary.block_labels
        and tuple(arrays["answer_tokens"]) == summary.answer_tokens
    )
    best = view.reading.answers[0]
    assert metadata["question"] == "Where was Jikji printed?" and metadata["checkpoint"] == TEST_MODEL
    assert (metadata["layer"], metadata["head"], metadata["metric"]) == (1, 2, "entropy")
    assert metadata["window"] == {
        "index": 0,
        "tokens": [0, view.reading.n_tokens],
        "first_pass_rank": 1,
        "read": 1,
        "windows": 1,
    }
    assert metadata["answer"]["text"] == best.text and metadata["answer"]["rank"] == 1
    import zipfile

    with zipfile.ZipFile(path) as archive:  # any unzip tool gives the JSON beside the arrays
        assert json.loads(archive.read(METADATA)) == metadata


def test_the_start_opens_the_explorer_once_and_keeps_nothing_for_the_token_view(settings):

    for (
        thread
    ) in threading.enumerate():  # an earlier test's app start may still be warming (and keeping) in the background
        if thread.name == "warm-model":
            thread.join(timeout=300)
    CAPTURES.clear()
    summary = warm_explorer(TEST_MODEL)
    # a real explorer pass over the warm-up's one window: both layers of the tiny model reduced
    assert summary is not None and summary.block_maps.shape[0] == 2 and summary.n_tokens > 100
    assert len(CAPTURES) == 0  # the cache's two windows stay the users'
    view = asking.ask("paste", "Where was Jikji printed?", settings, pasted=SHORT_DOCUMENT)  # keeps nothing
    target = after_reading(view, "Where was Jikji printed?", settings)
    explain(target, remember=False)
    assert len(CAPTURES) == 0
    explain(target)
    assert len(CAPTURES) == 1


def test_a_stopping_app_asks_its_warm_up_to_stop_and_waits_for_it_a_bounded_time_in_all(monkeypatch):
    stop = threading.Event()  # set by the test's end, so no thread outlives it
    monkeypatch.setattr(ui, "_STOP_WARMING", threading.Event())
    monkeypatch.setattr(ui, "WARM_EXIT_SECONDS", 0.5)
    listening = threading.Thread(target=lambda: ui._STOP_WARMING.wait(60) and None, name="warm-listening")
    stuck = [threading.Thread(target=stop.wait, args=(60,), name=f"warm-stuck-{n}") for n in range(3)]
    try:
        for thread in [listening, *stuck]:
            thread.start()
        ui._end_warming([listening, *stuck])  # returns although three threads never end by themselves
        assert ui._STOP_WARMING.is_set()
        listening.join(timeout=5)
        assert not listening.is_alive()  # a warm-up that watches the event ends
        assert all(thread.is_alive() for thread in stuck)  # the others were not waited for past the bound
    finally:
        stop.set()
        for thread in stuck:
            thread.join(timeout=5)


def test_the_token_view_shows_any_token_of_the_explained_window(settings):

    view, target = ask_as_the_page("paste", "Where was Jikji printed?", settings, pasted=SHORT_DOCUMENT)
    CAPTURES.clear()
    summary, _, _ = explain(target)
    capture = CAPTURES.get(capture_key(target))
    assert len(CAPTURES) == 1 and capture.n_tokens == summary.n_tokens and capture.num_layers == 2
    keys, figure = explain_token(target, layer=1, head=2)  # opens on the answer's first token
    best = view.reading.answers[0]
    assert keys.token == capture.default_token and keys.text in best.text
    assert (keys.layer, keys.head) == (1, 2) and f"Token {keys.token}" in figure.layout.title.text
    assert keys.weight.sum() == pytest.approx(1.0, abs=1e-5)
    other, _ = explain_token(target, layer=0, head=0, token=3)
    assert other.token == 3 and other.positions[other.slots] == 0  # after the pack slots, [CLS] and the question
    assert other.text == "was" and other.labels[other.slots] == capture.tokens[0] == "<s>"  # pieces without "▁"
    # once the cache has let the window go, the view runs it again
    CAPTURES.clear()
    again, _ = explain_token(target, layer=1, head=2, token=keys.token)
    np.testing.assert_allclose(again.weight, keys.weight, rtol=1e-6)
    assert explain_token(None)[0] is None

    from littlebird.app.explorer.export import ARRAYS, TOKEN_ARRAYS, export_view, read_explorer_file

    arrays, metadata = read_explorer_file(export_view(target, summary, layer=1, head=2, metric="pack", token=keys))
    assert set(arrays) == set(ARRAYS) | set(TOKEN_ARRAYS) == set(metadata["arrays"])
    assert metadata["token"] == {"position": keys.token, "text": keys.text, "layer": 1, "head": 2, "pack_slots": 64}
    np.testing.assert_array_equal(arrays["token_content"] + arrays["token_bias"], keys.score)
    np.testing.assert_array_equal(arrays["token_weight"], keys.weight)
    assert tuple(arrays["token_key_labels"]) == keys.labels and arrays["token_keys"].tolist() == keys.positions.tolist()


BELLS = "\n\n".join(f"Paragraph {i}: the bell of the town hall was cast in {1700 + i}." for i in range(120))


def test_every_window_a_reading_keeps_gives_the_weights_of_a_pass_of_that_window_alone(settings):
    """The layer inputs kept while the reader reads, one window a pass or several (each row its own window),
    rebuild each layer's weights as a pass of the window alone computes them."""
    from littlebird.app.explorer.window import window_attention
    from littlebird.documents.sources import read_document
    from littlebird.reader import read

    loaded = models.load_model(TEST_MODEL)
    document = read_document("paste", pasted=BELLS)
    options = dict(
        model=loaded.model,
        tokenizer=loaded.tokenizer,
        model_text=document.model_text,
        model_to_text=document.model_to_text,
    )
    question = "When was the bell cast?"
    with keeping_reading(loaded.model, budget=2**40) as kept:
        reading = read(
            question,
            document.text,
            **options,
            options=ReadingOptions(max_length=512, max_windows=None, window_batch_size=3),
        )
    assert reading.n_windows == reading.windows_planned >= 4
    for place, (start, _) in enumerate(reading.window_token_spans):
        passed = window_attention(question, document.text, document_start=start, max_length=512, **options)
        inputs = kept.window(place)
        capture = inputs.capture(passed.tokens)
        assert capture.n_tokens == len(passed.tokens) and capture.hidden[0].shape[0] % 64 == 0
        rebuilt = list(layer_weights(capture, loaded.model))
        assert len(rebuilt) == len(passed.attentions) == 2
        for got, expected in zip(rebuilt, passed.attentions):
            assert got.local.shape == expected.local.shape and got.pack.shape == expected.pack.shape
            for name in ("local", "global_", "packed", "pack"):  # X kept in 16 bits: close, not equal
                torch.testing.assert_close(
                    getattr(got, name).float(), getattr(expected, name).float(), atol=2e-3, rtol=0
                )


def test_past_its_budget_a_reading_keeps_its_most_answerable_windows():
    from littlebird.reader import read
    from tests.support.qa import tiny_model_for_tokenizer

    model = tiny_model_for_tokenizer(0)  # its windows' answerable logits differ
    with keeping_reading(model, budget=1) as kept:
        reading = read(
            "When was the bell cast?",
            BELLS,
            model=model,
            tokenizer=qa_tokenizer(),
            options=ReadingOptions(max_length=512, max_windows=4, stop_confidence=None, give_up_below=None),
        )
    logits = {w.read: w.answerable_logit for w in reading.windows if w.read is not None}
    assert len(logits) == 4
    best = max(logits, key=logits.get)
    assert [place for place in logits if kept.window(place) is not None] == [best]  # one window: the most answerable
    assert 0 < kept.nbytes == kept.window(best).nbytes


def test_the_explorer_opens_on_the_answers_window_from_what_the_reading_kept(settings):
    """After a question the explorer draws the answer's window without running the model, and draws what a pass
    of the window draws; the API's questions keep nothing."""

    CAPTURES.clear()
    loaded = models.load_model(TEST_MODEL)
    settings = replace(settings, reading=replace(settings.reading, max_length=512, max_windows=3))
    _, target = ask_as_the_page("paste", "When was the bell cast?", settings, pasted=BELLS)
    capture = CAPTURES.get(capture_key(target))
    assert len(CAPTURES) == 1 and capture is not None and capture.pack_inputs
    passes = []
    hook = loaded.model.register_forward_hook(lambda *args: passes.append(1))
    try:
        kept_summary, kept_plots, _ = explain(target, layer=1, head=2)
        assert passes == []  # nothing ran through the model
        CAPTURES.clear()
        pass_summary, _, _ = explain(target, layer=1, head=2)
        assert passes == [1]
    finally:
        hook.remove()
    assert kept_summary.n_tokens == pass_summary.n_tokens and kept_summary.answer_tokens == pass_summary.answer_tokens
    assert kept_summary.answer_tokens  # the answer's tokens followed
    for name in ("block_maps", "answer_blocks", "answer_pack", "pack_reads", "rollout"):
        np.testing.assert_allclose(getattr(kept_summary, name), getattr(pass_summary, name), atol=3e-3, rtol=0)
    for metric, values in pass_summary.head_metrics.items():
        np.testing.assert_allclose(kept_summary.head_metrics[metric], values, atol=3e-2, rtol=3e-3, err_msg=metric)
    assert set(kept_plots) >= {"atlas", "rollout"}
    # the token view reads the same inputs
    keys, _ = explain_token(target, layer=1, head=2)
    assert keys.token == CAPTURES.get(capture_key(target)).default_token

    CAPTURES.clear()
    asking.answer_document(BELLS, "When was the bell cast?", checkpoint=TEST_MODEL)
    assert len(CAPTURES) == 0
