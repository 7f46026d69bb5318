"""The public /answer endpoint through gradio_client, against the app served on loopback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from tests.support.ui import long_document, serve_directory, served_app, wait_for_reading, watch_readings

DOCUMENT = (
    "<h1>International Space Station</h1>"
    "<p>Assembly began on 20 November 1998, when a Proton rocket launched the first module, Zarya.</p>"
    "<p>The first resident crew, Expedition 1, arrived on 2 November 2000.</p>"
)


@pytest.fixture(scope="module")
def client() -> Client:
    return Client(served_app(), verbose=False)


def test_answer_returns_the_answer_score_offsets_and_n_best_as_json(client):
    result = client.predict(DOCUMENT, "When was Zarya launched?", api_name="/answer")
    assert isinstance(result, dict)
    assert result["answer"] == result["text"][result["start"] : result["end"]]
    assert isinstance(result["score"], float) and 0.0 < result["probability"] <= 1.0
    assert result["no_answer"] is False and 0.0 <= result["answerable_probability"] <= 1.0
    assert 1 <= len(result["n_best"]) <= 5
    for candidate in result["n_best"]:
        assert (
            set(candidate) == {"answer", "score", "probability", "start", "end", "page"} and candidate["page"] is None
        )
        assert result["text"][candidate["start"] : candidate["end"]] == candidate["answer"]
    assert result["n_tokens"] > 0 and result["n_windows"] == 1 and result["device"] == "cpu"
    assert result["page"] is None and result["n_pages"] is None  # pages are a PDF's


def test_answer_takes_a_url(client, tmp_path):
    (tmp_path / "iss.html").write_text(DOCUMENT, encoding="utf-8")
    with serve_directory(tmp_path) as base:
        result = client.predict(f"{base}/iss.html", "Who arrived in 2000?", api_name="/answer")
    assert "Expedition 1" in result["text"] and result["answer"]


def test_answer_takes_the_url_of_a_pdf_and_gives_the_answers_page(client, tmp_path):
    from tests.support.files import report_pdf

    (tmp_path / "report.pdf").write_bytes(report_pdf("en"))
    with serve_directory(tmp_path) as base:
        result = client.predict(f"{base}/report.pdf", "Who designed the Dunmore Library?", api_name="/answer")
    assert result["n_pages"] == 32 and "Riverton Public Libraries" in result["text"]
    for candidate in result["n_best"]:  # the small test model's answers: anywhere, each with its page
        assert 1 <= candidate["page"] <= 32
    assert result["answer"] is None or result["page"] == result["n_best"][0]["page"]


def test_a_bad_document_gives_the_user_facing_message(client):
    with pytest.raises(AppError, match="pasted text is empty"):
        client.predict("   ", "Anything?", api_name="/answer")


@pytest.mark.parametrize("address", ["file:///etc/passwd", "ftp://example.org/notes.txt"])
def test_other_schemes_are_refused_not_read_as_text(client, address):
    with pytest.raises(AppError, match="Only http and https addresses.*only public web pages can be fetched"):
        client.predict(address, "What is in it?", api_name="/answer")


def test_only_the_answer_endpoint_is_public(client):
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert list(endpoints) == ["/answer"]


CLIENT_THAT_LEAVES = """
import sys, time
from gradio_client import Client

client = Client(sys.argv[1], verbose=False)
client.submit(open(sys.argv[2], encoding="utf-8").read(), sys.argv[3], api_name="/answer")
time.sleep(600)  # killed by the test long before
"""


def test_a_client_that_disconnects_stops_its_reading(tmp_path, monkeypatch):
    readings = watch_readings(monkeypatch, pause=1.0)
    document = tmp_path / "long.txt"
    document.write_text(long_document(), encoding="utf-8")
    question = "Where was Jikji printed, asked by a client that leaves?"
    client = subprocess.Popen([sys.executable, "-c", CLIENT_THAT_LEAVES, served_app(), str(document), question])
    try:
        reading = wait_for_reading(readings, question)
    finally:
        client.kill()  # the connections close as when a client's process or network goes away
        client.wait(timeout=30)
    assert reading.ended.wait(60), "the reading went on after its client had gone"
    assert reading.outcome == "stopped" and reading.windows_read < reading.windows_planned
