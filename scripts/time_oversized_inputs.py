"""How long the /answer endpoint's path takes to answer, or to refuse, documents of growing size.

Runs ``app.asking.answer_document`` (what /answer runs, without the network) with the default
checkpoint on plain-text pastes built from the English example page, from a few thousand tokens to
2.4 MB, and on an HTML page over the 5 MB cap, within the limits of ``app/limits.py`` as the
environment sets them. Prints a table: size, outcome (the answer, or the first words of the
refusal) and seconds from the call to its return.

    python scripts/time_oversized_inputs.py
    LITTLEBIRD_QUESTION_SECONDS=5 python scripts/time_oversized_inputs.py   # a tighter time budget
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from littlebird.app.asking import answer_document  # noqa: E402
from littlebird.app.errors import DocumentError  # noqa: E402
from littlebird.app.examples import load_examples  # noqa: E402
from littlebird.app.limits import Limits  # noqa: E402
from littlebird.app.models import load_model  # noqa: E402
from littlebird.inference import resolve_cpu_mode  # noqa: E402

QUESTION = "When did work on the station begin?"


def english_text() -> str:
    """The English example page's text, without its markup."""
    example = next(e for e in load_examples() if e.language == "en")
    text = re.sub(r"<[^>]+>", " ", example.read_html())
    return re.sub(r"[ \t]+", " ", text)


def sized(text: str, characters: int) -> str:
    """``text`` repeated (paragraphs kept) up to ``characters`` characters."""
    return (text * (characters // len(text) + 1))[:characters]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default=None, help="default: the app's default checkpoint")
    args = parser.parse_args(argv)

    load_model(args.checkpoint)
    text = english_text()
    answer_document(text[:2000], QUESTION, checkpoint=args.checkpoint)  # warm up: the first call builds caches
    cases = [(f"{n // 1000:,} KB plain text", sized(text, n)) for n in (30_000, 120_000, 200_000, 1_000_000, 2_400_000)]
    cases.append(("5.2 MB HTML page", "<html><body>" + "<p>" + sized(text, 5_200_000) + "</p></body></html>"))

    limits = Limits.from_environment()
    wall = "no token limit" if limits.max_tokens is None else f"{limits.max_tokens:,} tokens"
    print(f"CPU mode: {resolve_cpu_mode()}; limits: {wall}, {limits.max_characters:,} characters of "
          f"plain text, time budget {limits.question_seconds} s")
    print("| input | characters | outcome | seconds |\n|---|---:|---|---:|")
    for name, document in cases:
        start = time.perf_counter()
        try:
            payload = answer_document(document, QUESTION, checkpoint=args.checkpoint)
            outcome = (f"answer {payload['answer']!r} ({payload['n_tokens']:,} tokens, {payload['n_windows']} of "
                       f"{payload['windows_planned']} windows){'; ' + payload['message'] if payload['message'] else ''}")
        except DocumentError as error:
            outcome = "refused: " + " ".join(str(error).split()[:12]) + " ..."
        print(f"| {name} | {len(document):,} | {outcome} | {time.perf_counter() - start:.2f} |", flush=True)


if __name__ == "__main__":
    main()
