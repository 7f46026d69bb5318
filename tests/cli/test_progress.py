"""Progress in the terminal: a tqdm bar with rate and time left on a terminal, plain lines now and then
elsewhere, and the commands that show it."""

from __future__ import annotations

import io
import re

from littlebird.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_with_the_rate_and_the_time_left():
    stream = Terminal()
    with Progress(40, "evaluating", unit="question", stream=stream) as progress:
        for _ in range(10):
            progress.update()
    drawn = stream.getvalue()
    assert "evaluating" in drawn and "10/40" in drawn
    assert re.search(r"\d\d:\d\d<\d\d:\d\d", drawn), drawn  # elapsed < time left
    assert re.search(r"questions/s|s/ questions", drawn), drawn  # the rate


def test_a_file_gets_plain_lines_with_the_rate_and_the_time_left():
    stream = io.StringIO()
    with Progress(40, "evaluating", unit="question", stream=stream, every_seconds=0) as progress:
        for _ in range(10):
            progress.update()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 11 and "\r" not in stream.getvalue()  # a line each update, one at the end; no bar
    assert re.fullmatch(r"evaluating: 10/40 questions, [\d.]+ questions/s, about \d+ (s|min|h) left", lines[9]), lines[
        9
    ]
    assert lines[-1].startswith("evaluating: 10/40 questions")


def test_a_short_run_to_a_file_says_nothing():
    stream = io.StringIO()
    with Progress(3, "answering", unit="question", stream=stream) as progress:
        for _ in range(3):
            progress.update()
    assert stream.getvalue() == ""


def test_training_starts_the_bar_where_it_resumes():
    stream = Terminal()
    with Progress(100, "training", unit="step", initial=60, stream=stream) as progress:
        progress.update(5)
    assert "65/100" in stream.getvalue()


def test_ask_shows_a_bar_over_its_questions_on_a_terminal(tmp_path, monkeypatch, capsys):
    import json
    import sys
    from pathlib import Path

    from littlebird.cli import main

    document = Path(__file__).resolve().parents[2] / "assets" / "examples" / "en-international-space-station.html"
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "\n".join(
            json.dumps(q) for q in ["Who was the American commander of Expedition 1?", "When was Zarya launched?"]
        ),
        encoding="utf-8",
    )
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["ask", str(document), "--questions", str(questions)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2  # the answers stay on standard output, one a line
    assert re.search(r"answering: 100%.*2/2", terminal.getvalue()), terminal.getvalue()
