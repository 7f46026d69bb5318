"""Dev F1 against training features seen, from the snapshots of one or more training runs.

A run trained with ``--snapshots`` keeps its model at every save (``<run>/snapshots/step-N``) and at
the end (``<run>/model``). Each is scored with the evaluation CLI (``python -m littlebird.evaluation``)
on the dev files, and the features seen so far (optimizer steps x batch x accumulation, read from
the run's ``state.pt``) go on the x axis. Runs given in order add up: a second round started with
``--init-from`` continues the first one's count, and ``--features-before`` starts the count where
earlier rounds, whose run folders are gone, left it.

    python scripts/learning_curve.py --runs runs/c1-teacher --dev runs/dev --name teacher \\
        --output docs/learning-curve

writes ``<output>.json`` (every point) and ``<output>.md`` (the table), and ``<output>.png`` where
Chromium is installed (a plotly figure rendered headless). Results already in ``<output>.json`` are
kept, so rerunning it after more training scores only the new snapshots.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

from littlebird.training.loop import MODEL_DIR, SNAPSHOT_DIR, STATE_FILE  # noqa: E402

SETS = ("dev-en-paragraph", "dev-ko-paragraph")


def run_points(run_dir: Path) -> list[tuple[int, Path]]:
    """(optimizer step, model folder) of every snapshot and of the final model, in step order."""
    points = [(int(p.name.removeprefix("step-")), p) for p in (run_dir / SNAPSHOT_DIR).glob("step-*") if p.is_dir()]
    summary = run_dir / "summary.json"
    if summary.exists() and (run_dir / MODEL_DIR).is_dir():
        step = json.loads(summary.read_text())["step"]
        points = [p for p in points if p[0] != step] + [(step, run_dir / MODEL_DIR)]
    return sorted(points)


def features_per_step(run_dir: Path) -> int:
    args = torch.load(run_dir / STATE_FILE, map_location="cpu", weights_only=False)["args"]
    return args["batch_size"] * args.get("grad_accum", 1)


def score(model_dir: Path, data: Path, extra: list[str], max_questions: int | None) -> dict:
    """The evaluation CLI's summary for one model and one dev file."""
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "result.json"
        command = [
            sys.executable,
            "-m",
            "littlebird.evaluation",
            "--model",
            str(model_dir),
            "--data",
            str(data),
            "--output",
            str(output),
            *extra,
        ]
        if max_questions:
            command += ["--max-questions", str(max_questions)]
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        return json.loads(output.read_text())["summary"]


HEADER = """# Learning curve

Dev F1 of training snapshots against the training windows they had seen, written by
`scripts/learning_curve.py` (every point is also in `learning-curve.json`, the plot in `learning-curve.png`).
`docs/training-log.md` says what each run was and what came of it.

- **model**: what the run trained, named by its round in the training log.
- **run**: the run's folder under `runs/`, as the training log names it.
- **step**: the optimizer step of the snapshot (the last row of a run is its final model).
- **features seen**: training windows seen up to this snapshot (steps x batch x accumulation), including the
  rounds the model was trained from before this run (`--features-before`); a teacher or a freshly converted
  student counts from zero.
- **dev-... F1**: F1 through the served reader (`python -m littlebird.evaluation`) on the first
  `--max-questions` questions of each dev paragraph file (100 for the points here).
"""


def markdown(points: list[dict], sets: list[str]) -> str:
    """The curve as a Markdown table, under a heading that explains its columns."""
    lines = [
        HEADER,
        "| model | run | step | features seen | " + " | ".join(f"{s} F1" for s in sets) + " |",
        "|---|---|---:|---:|" + "---:|" * len(sets),
    ]
    for p in points:
        cells = " | ".join(f"{p['f1'][s]:.1f}" for s in sets)
        lines.append(f"| {p['name']} | {p['run']} | {p['step']} | {p['features']:,} | {cells} |")
    return "\n".join(lines)


def plot(points: list[dict], sets: list[str], path: Path) -> bool:
    """A PNG of F1 against features seen (one colour per model, one dash per dev set); False without Chromium."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        return False
    import plotly.colors
    import plotly.graph_objects as go

    palette = plotly.colors.qualitative.Dark24  # the default 10 colours repeated after five models
    dashes = ["solid", "dash", "dot", "dashdot"]
    figure = go.Figure()
    for m, name in enumerate(dict.fromkeys(p["name"] for p in points)):
        mine = [p for p in points if p["name"] == name]
        for k, s in enumerate(sets):
            figure.add_trace(
                go.Scatter(
                    x=[p["features"] for p in mine],
                    y=[p["f1"][s] for p in mine],
                    mode="lines+markers",
                    name=f"{name}: {s}",
                    line={"color": palette[m % len(palette)], "dash": dashes[k % len(dashes)]},
                )
            )
    figure.update_layout(
        title="Dev F1 against training features seen",
        xaxis_title="training features seen",
        yaxis_title="F1",
        yaxis_range=[0, 100],
        width=900,
        height=520,
        template="plotly_white",
    )
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "curve.html"
        figure.write_html(html, include_plotlyjs=True, full_html=True)
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--screenshot={path.resolve()}",
                "--window-size=920,540",
                "--virtual-time-budget=5000",
                html.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return path.exists()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", required=True, help="run folders of one model, in training order")
    parser.add_argument("--name", required=True, help="the model's name in the table and the plot")
    parser.add_argument("--dev", default="runs/dev", help="folder of the dev files (littlebird dev-files)")
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--max-questions", type=int, default=None)
    parser.add_argument("--eval-args", default="", help="extra options for the evaluation CLI, e.g. '--max-length 384'")
    parser.add_argument("--output", default="docs/learning-curve")
    parser.add_argument(
        "--features-before",
        type=int,
        default=0,
        help="features the model saw before the first of --runs (earlier rounds, maybe lost)",
    )
    args = parser.parse_args(argv)

    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    store = output.with_suffix(".json")
    points = json.loads(store.read_text()) if store.exists() else []
    done = {(p["name"], p["run"], p["step"]) for p in points}
    offset = args.features_before
    for run in map(Path, args.runs):
        per_step = features_per_step(run)
        for step, model_dir in run_points(run):
            key = (args.name, run.name, step)
            if key in done:
                continue
            f1 = {
                s: score(model_dir, Path(args.dev) / f"{s}.json", args.eval_args.split(), args.max_questions)[
                    "overall"
                ]["f1"]
                for s in args.sets
            }
            points.append(
                {"name": args.name, "run": run.name, "step": step, "features": offset + step * per_step, "f1": f1}
            )
            print(
                f"{args.name} {run.name} step {step}: " + ", ".join(f"{s} {v:.1f}" for s, v in f1.items()), flush=True
            )
            store.write_text(json.dumps(points, indent=1))
        last = run_points(run)
        offset += (last[-1][0] if last else 0) * per_step
    sets = sorted({s for p in points for s in p["f1"]}, key=lambda s: (s not in SETS, s))
    points = [p for p in points if all(s in p["f1"] for s in sets)]
    output.with_suffix(".md").write_text(markdown(points, sets) + "\n")
    print(markdown(points, sets))
    if plot(points, sets, output.with_suffix(".png")):
        print(f"wrote {output.with_suffix('.png')}")


if __name__ == "__main__":
    main()
