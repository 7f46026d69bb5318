"""The `littlebird` command as a user runs it: its subcommands, and `ask` on the shipped checkpoint."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from littlebird.cli import PASSED_THROUGH
from littlebird.cli import main as littlebird

ROOT = Path(__file__).resolve().parents[2]
ISS = ROOT / "assets" / "examples" / "en-international-space-station.html"
QUESTION = "Who was the American commander of Expedition 1?"


def test_help_lists_every_subcommand():
    result = subprocess.run(
        [sys.executable, "-m", "littlebird", "--help"], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    for command in ("serve", "ask", "train", "space", *PASSED_THROUGH):
        assert f"\n    {command}" in result.stdout


def test_ask_prints_the_answer_and_its_n_best(capsys):
    assert littlebird(["ask", str(ISS), QUESTION, "--n-best", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "William Shepherd"
    assert lines[1].startswith("probability ")
    assert len([line for line in lines if line.startswith("  ")]) == 3  # the n-best, one a line


def test_ask_json_is_the_endpoints_payload(capsys):
    assert littlebird(["ask", str(ISS), QUESTION, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["answer"] == "William Shepherd"
    assert payload["text"][payload["start"] : payload["end"]] == payload["answer"]
    assert payload["n_windows"] >= 1 and payload["n_best"][0]["answer"] == payload["answer"]


def test_ask_reads_questions_as_json_lines_and_writes_one_answer_line_each(tmp_path, monkeypatch, capsys):
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps({"id": "q1", "question": QUESTION})
        + "\n\n"
        + json.dumps("When was the first module launched?")
        + "\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO(ISS.read_text(encoding="utf-8")))
    assert littlebird(["ask", "-", "--questions", str(questions)]) == 0  # the document from standard input
    answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [a["id"] for a in answers] == ["q1", 3]
    assert answers[0]["answer"] == "William Shepherd" and "text" not in answers[0]
    assert answers[1]["question"] == "When was the first module launched?"


def test_ask_says_what_is_wrong_with_a_document_it_cannot_read(tmp_path, capsys):
    binary = tmp_path / "picture.html"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    assert littlebird(["ask", str(binary), QUESTION]) == 2
    error = capsys.readouterr().err
    assert error.startswith("littlebird ask: ") and len(error.splitlines()) == 1
    assert littlebird(["ask", str(tmp_path / "missing.html"), QUESTION]) == 2


def test_ask_wants_one_question_or_a_questions_file(tmp_path):
    with pytest.raises(SystemExit, match="one question"):
        littlebird(["ask", str(ISS)])
    with pytest.raises(SystemExit, match="n_best"):
        littlebird(["ask", str(ISS), QUESTION, "--n-best", "0"])
