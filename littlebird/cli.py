"""The ``littlebird`` command: one entry point for the app, questions from the terminal, and the tools.

littlebird serve                                   # the web app on http://127.0.0.1:7860
littlebird ask page.html "Who commanded Expedition 1?"
littlebird ask https://example.org/page "..." --json
littlebird ask page.html --questions questions.jsonl > answers.jsonl
littlebird train recipes/default.yaml --dry-run
littlebird evaluate --model assets/littlebird-qa --data runs/dev/dev-en-paragraph.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from importlib import import_module
from typing import Any, TextIO

# Tools whose own command line is passed through unchanged: subcommand -> (module with main(argv), help).
PASSED_THROUGH = {
    "convert": ("littlebird.convert", "lengthen a BERT-family encoder into a LittleBird checkpoint"),
    "evaluate": ("littlebird.evaluation", "score a checkpoint on dev files through the app's reader"),
    "dev-files": ("littlebird.training.dev_files", "carve the by-article dev files from the QA data"),
    "export": ("littlebird.training.export", "write a checkpoint compact (this repository) or standalone (the Hub)"),
}


def _page_settings(args: argparse.Namespace, command: str):
    """The ReadingOptions of ``ask``'s or ``serve``'s flags (the page's settings); a usage error when out of range."""
    from .reading_options import PAGE_SETTINGS, ReadingOptions

    try:
        return ReadingOptions(**{name: getattr(args, name) for name in PAGE_SETTINGS})
    except ValueError as error:
        raise SystemExit(f"littlebird {command}: {error}") from None


def _serve(args: argparse.Namespace) -> int:
    import os

    from .app.ui import build_demo

    reading = _page_settings(args, "serve")
    build_demo(args.model or os.environ.get("LITTLEBIRD_CHECKPOINT") or None, reading=reading).launch(
        server_name=args.host, server_port=args.port
    )
    return 0


def _questions(lines: Iterable[str]) -> Iterable[tuple[Any, str]]:
    """(id, question) of each JSON line ({"question": ..., "id": ...}, or a bare string); blank lines skipped."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise SystemExit(f"line {number} of the questions is not JSON: {error}") from None
        if isinstance(item, str):
            item = {"question": item}
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            raise SystemExit(f'line {number} of the questions has no "question" text')
        yield item.get("id", number), item["question"]


def _source(document: str) -> dict[str, Any]:
    """What :func:`littlebird.app.asking.ask` takes for a file path, a web address or ``-`` (standard input)."""
    from pathlib import Path

    from .documents import formats
    from .documents.errors import DocumentError
    from .documents.fetch import looks_like_address

    if document == "-":
        return {"source": "paste", "pasted": sys.stdin.read()}
    if looks_like_address(document):
        return {"source": "url", "url": document}
    if not Path(document).is_file():
        raise DocumentError(
            f"{document} is no file; give a {formats.suffix_list()} file, an http(s) address, or - for standard input"
        )
    return {"source": "upload", "upload": document}


def _print_answer(payload: dict, out: TextIO) -> None:
    if payload["answer"] is None:
        guess = payload["n_best"][0]["answer"] if payload["n_best"] else None
        out.write("No answer found" + (f" (best guess: {guess})" if guess else "") + "\n")
    else:
        out.write(f"{payload['answer']}\n")
    if payload["answer"] is not None and payload.get("page") is not None:
        out.write(f"page {payload['page']} of {payload['n_pages']}\n")
    out.write(
        f"probability {payload['probability'] or 0:.2f} among the n-best; the document answers the question "
        f"with probability {payload['answerable_probability']:.2f}\n"
    )
    for candidate in payload["n_best"]:
        page = f"  page {candidate['page']}" if candidate.get("page") is not None else ""
        out.write(
            f"  {candidate['probability']:.2f}  {candidate['answer']}  "
            f"[{candidate['start']}:{candidate['end']}]{page}\n"
        )
    if payload["message"]:
        out.write(payload["message"] + "\n")


def _ask(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from transformers.utils import logging as transformers_logging

    from .app.asking import Settings, ask
    from .app.models import CheckpointError
    from .app.payloads import api_payload
    from .documents.errors import DocumentError

    if (args.question is None) == (args.questions is None):
        raise SystemExit("give one question, or --questions FILE (JSON lines), not both")
    try:
        settings = Settings(checkpoint=args.model, reading=_page_settings(args, "ask"))
    except ValueError as error:
        raise SystemExit(f"littlebird ask: {error}") from None
    out = out or sys.stdout
    transformers_logging.disable_progress_bar()  # the checkpoint's "Loading weights" bar is no part of an answer

    def answer(question: str) -> dict:
        view = ask(question=question, settings=settings, **source)
        return api_payload(view.reading, view.document, view.device)

    try:
        source = _source(args.document)
        if args.question is not None:
            payload = answer(args.question)
            if args.json:
                out.write(json.dumps(payload, ensure_ascii=False) + "\n")
            else:
                _print_answer(payload, out)
            return 0
        from .progress import Progress

        handle = sys.stdin if args.questions == "-" else open(args.questions, encoding="utf-8")
        with handle:
            questions = list(_questions(handle))
        with Progress(len(questions), "answering", unit="question") as progress:  # on standard error
            for identifier, question in questions:
                payload = answer(question)
                payload.pop("text")  # the document, the same on every line
                out.write(json.dumps({"id": identifier, "question": question, **payload}, ensure_ascii=False) + "\n")
                out.flush()
                progress.update()
        return 0
    except (DocumentError, CheckpointError) as error:
        print(f"littlebird ask: {error}", file=sys.stderr)
        return 2


def _train(args: argparse.Namespace) -> int:
    from .training.recipe import STAGES, describe_plan, load_recipe, run_recipe, select

    if args.list_stages:
        from .command_options import describe_options

        for name, kind in STAGES.items():
            print(f"{name}: {kind.options_class().__doc__}")
            for option, default, help_text in describe_options(kind.options_class()):
                print(f"    {option} = {default}  {help_text}")
        return 0
    if args.recipe is None:
        raise SystemExit("littlebird train: give a recipe file (recipes/default.yaml), or --list-stages")
    try:
        recipe = load_recipe(
            args.recipe, runs=args.runs, data=args.data, settings=args.set, require_data=not args.dry_run
        )
        stages = select(recipe, from_stage=args.from_stage, until_stage=args.until_stage)
    except ValueError as error:
        raise SystemExit(f"littlebird train: {error}") from None
    print(describe_plan(recipe, stages), flush=True)
    if not args.dry_run:
        run_recipe(recipe, stages)
    return 0


def _space(args: argparse.Namespace) -> int:
    from .space import push_space, write_space

    try:
        folder = write_space(args.directory, root=args.root, hardware=args.hardware)
    except ValueError as error:
        raise SystemExit(f"littlebird space: {error}") from None
    print(f"wrote the Space for {args.hardware} hardware into {folder}")
    if args.push:
        push_space(folder, args.push)
        print(f"uploaded to the Space {args.push}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``littlebird`` command line (the passed-through tools parse their own options)."""
    from .command_options import add_options
    from .documents import formats
    from .reading_options import PAGE_SETTINGS, ReadingOptions

    parser = argparse.ArgumentParser(
        prog="littlebird", description="Question answering over long Korean and English documents with LittleBird."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = commands.add_parser("serve", help="run the web app")
    serve.add_argument(
        "--model",
        default=None,
        help="a checkpoint folder or Hub id (default: the shipped one, or $LITTLEBIRD_CHECKPOINT)",
    )
    serve.add_argument("--host", default=None, help="address to serve (default 127.0.0.1, or $GRADIO_SERVER_NAME)")
    serve.add_argument("--port", type=int, default=None, help="port (default 7860, or $GRADIO_SERVER_PORT)")
    add_options(
        serve.add_argument_group("the page's settings as it opens (and the /answer API's)"),
        ReadingOptions,
        only=PAGE_SETTINGS,
    )
    serve.set_defaults(handler=_serve)

    ask = commands.add_parser("ask", help="answer a question about a file, a web address or standard input")
    ask.add_argument("document", help=f"a {formats.suffix_list()} file, an http(s) address, or - for standard input")
    ask.add_argument("question", nargs="?", default=None, help="the question (or --questions)")
    ask.add_argument(
        "--questions",
        metavar="FILE",
        help='JSON lines of {"question": ..., "id": ...} ("-": standard '
        "input); one JSON line of answers each on standard output",
    )
    ask.add_argument("--json", action="store_true", help="print the /answer endpoint's JSON instead of text")
    ask.add_argument("--model", default=None, help="a checkpoint folder or Hub id (default: the shipped one)")
    add_options(ask.add_argument_group("reading, as the page's settings"), ReadingOptions, only=PAGE_SETTINGS)
    ask.set_defaults(handler=_ask)

    train = commands.add_parser("train", help="run (or resume) a recipe's stages: recipes/*.yaml")
    train.add_argument("recipe", nargs="?", help="the recipe file")
    train.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    train.add_argument("--from-stage", help="start at this stage")
    train.add_argument("--until-stage", help="stop after this stage")
    train.add_argument("--runs", help="the folder the stages write in (default: the recipe's runs)")
    train.add_argument("--data", help="the data folder (default: $LITTLEBIRD_DATA)")
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="STAGE.OPTION=VALUE",
        help="override one stage option (repeatable), e.g. --set convert.source=klue/roberta-base",
    )
    train.add_argument("--list-stages", action="store_true", help="print every kind of stage and its options")
    train.set_defaults(handler=_train)

    space = commands.add_parser("space", help="write the files of a Hugging Face Space (and upload them)")
    space.add_argument("directory", help="the folder to write")
    space.add_argument("--root", default=".", help="the checkout whose files it takes (default: the current folder)")
    space.add_argument(
        "--hardware",
        choices=("cpu", "zero-gpu", "gpu"),
        default="cpu",
        help="what the Space runs on: cpu (a free Space; the CPU-only torch wheel), zero-gpu (ZeroGPU: "
        "spaces and the CUDA wheel) or gpu (the CUDA wheel); default cpu",
    )
    space.add_argument("--push", metavar="OWNER/NAME", help="upload the folder to this Space")
    space.set_defaults(handler=_space)

    for name, (_, help_text) in PASSED_THROUGH.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``littlebird`` with ``argv`` (default: the process's arguments)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PASSED_THROUGH:
        module, _ = PASSED_THROUGH[argv[0]]
        sys.argv[0] = f"littlebird {argv[0]}"
        import_module(module).main(argv[1:])
        return 0
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())
