"""The training loop every stage shares, on ``accelerate.Accelerator``.

The same command runs on one CPU, one GPU, or data-parallel under ``accelerate launch`` or
``torchrun`` (the Accelerator reads the launcher's environment; each process reads its own
shard of every batch). A run is:

- time-boxed: ``--max-minutes`` stops at a step boundary, all processes together, and saves;
  ``--stop-at-step`` stops at a given step of the ``--max-steps`` schedule (how a recipe replays a run
  whose model was taken before its schedule ended);
- resumable: ``state.pt`` (trainable weights, optimizer, schedule, step) is written every
  ``--save-minutes`` and at the end; rerunning the command continues from it, and a rerun with
  another ``--max-steps`` / ``--epochs`` continues on that plan's schedule;
- logged: one line per ``--log-every`` optimizer steps in ``<output-dir>/log.txt``;
- cheap per feature: batches of similar length (``--group-by-length``), and bf16 autocast where
  the hardware multiplies bf16 natively (``--mixed-precision auto``).

Frozen parameters (``requires_grad=False``) are neither optimised nor written to ``state.pt``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, set_seed
from torch.utils.data import DataLoader

from ..command_options import Options, option
from ..progress import Progress
from .batching import LengthGroupedBatchSampler

STATE_FILE = "state.pt"
LOG_FILE = "log.txt"
MODEL_DIR = "model"
SNAPSHOT_DIR = "snapshots"


@dataclass(kw_only=True)
class LoopOptions(Options):
    """The shared loop's options: every training stage has them."""

    output_dir: str = option(help="the stage's folder: state.pt, log.txt, model/, snapshots/")
    batch_size: int = option(16, "features per batch and process")
    grad_accum: int = option(1, "batches accumulated per optimizer step")
    lr: float = option(5e-5, "peak learning rate")
    weight_decay: float = option(0.01, "AdamW weight decay on matrices")
    warmup_ratio: float = option(0.06, "share of the steps spent warming the learning rate up")
    epochs: float = option(1.0, "passes over the features (max_steps overrides)")
    max_steps: int | None = option(None, "optimizer steps; overrides epochs; 0 saves the starting model untrained")
    max_minutes: float | None = option(None, "stop (and save) after this much time; a rerun resumes")
    stop_at_step: int | None = option(
        None, "stop (and save) at this optimizer step; the learning-rate schedule stays the one of max_steps / epochs"
    )
    save_minutes: float = option(10.0, "write state.pt this often")
    snapshots: bool = option(False, "also write the model to snapshots/step-N at every save (learning curves)")
    log_every: int = option(10, "one log line per this many optimizer steps")
    seed: int = option(0, "seeds the data order, Padding Insertion and new weights")
    cpu: bool = option(False, "train on CPU even where a GPU is available")
    mixed_precision: str = option(
        "auto",
        "bf16 autocast; auto: where the GPU or the CPU (AMX, AVX512-BF16) has bf16 units",
        choices=("auto", "no", "bf16"),
    )
    group_by_length: bool = option(True, "batch features of similar length together (less padding)")


def resolve_mixed_precision(choice: str, use_cpu: bool) -> str:
    """``auto`` -> ``bf16`` where bf16 products run in hardware; emulated bf16 is slower than fp32."""
    if choice != "auto":
        return choice
    if not use_cpu:
        return "bf16" if torch.cuda.is_bf16_supported() else "no"
    from ..inference import cpu_has_native_bf16

    return "bf16" if cpu_has_native_bf16() else "no"


def make_loader(features: list, collate, args) -> DataLoader:
    """Shuffled batches of ``args.batch_size``; grouped by length unless ``--no-group-by-length``."""
    if getattr(args, "group_by_length", False):
        sampler = LengthGroupedBatchSampler([len(f.input_ids) for f in features], args.batch_size, seed=args.seed)
        return DataLoader(features, batch_sampler=sampler, collate_fn=collate)
    return DataLoader(features, batch_size=args.batch_size, shuffle=True, collate_fn=collate, drop_last=False)


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().cpu().clone() for name, p in model.named_parameters() if p.requires_grad}


def weights_digest(model: torch.nn.Module) -> str:
    """sha256 of the trainable weights: equal on every process when data parallelism kept them in step."""
    digest = hashlib.sha256()
    for name, tensor in sorted(trainable_state(model).items()):
        digest.update(name.encode())
        digest.update(tensor.float().numpy().tobytes())
    return digest.hexdigest()


class RunLog:
    """Appends lines to ``log.txt`` (main process only) and echoes them, above the progress bar while there is one."""

    def __init__(self, accelerator: Accelerator, path: Path):
        self.accelerator, self.path = accelerator, path
        self.progress: Progress | None = None

    def __call__(self, message: str) -> None:
        if self.accelerator.is_main_process:
            line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}"
            if self.progress is not None:
                self.progress.write(line)
            else:
                print(line, flush=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")


class LinearSchedule:
    """Linear warm-up to the peak rate, then linear decay to zero at ``total_steps`` (a LambdaLR factor);
    :meth:`refit` moves the end (a rerun with a new ``max_steps``)."""

    def __init__(self, warmup_ratio: float, total_steps: int):
        self.warmup_ratio = warmup_ratio
        self.refit(total_steps)

    def refit(self, total_steps: int) -> None:
        """End the schedule at ``total_steps``, the warm-up keeping its share."""
        self.total_steps = total_steps
        self.warmup_steps = int(self.warmup_ratio * total_steps)

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / max(1, self.warmup_steps)
        return max(0.0, (self.total_steps - step) / max(1, self.total_steps - self.warmup_steps))


def linear_schedule(optimizer, warmup_ratio: float, total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """A LambdaLR over :class:`LinearSchedule` (its ``lr_lambdas[0]``)."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, LinearSchedule(warmup_ratio, total_steps))


def parameter_groups(model: torch.nn.Module, args, lr_overrides: dict[str, float] | None = None) -> list[dict]:
    """AdamW groups of the trainable parameters: weight decay on matrices only, and ``args.lr``
    except where a parameter's name starts with a prefix in ``lr_overrides`` (prefix -> rate)."""
    groups: dict[tuple[float, bool], list] = {}
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        lr = next((rate for prefix, rate in (lr_overrides or {}).items() if name.startswith(prefix)), args.lr)
        groups.setdefault((lr, parameter.dim() >= 2), []).append(parameter)
    # Matrices first, then the rest, per rate: the group order state.pt files hold, so they resume.
    return [
        {"params": params, "lr": lr, "weight_decay": args.weight_decay if decay else 0.0}
        for (lr, decay), params in sorted(groups.items(), key=lambda item: (item[0][0], not item[0][1]))
    ]


def make_accelerator(args) -> tuple[Accelerator, str]:
    """The run's Accelerator and its mixed precision (``no`` or ``bf16``)."""
    # Without cpu=True, accelerate ignores a torchrun world on a machine without GPUs (one process each).
    use_cpu = args.cpu or not torch.cuda.is_available()
    precision = resolve_mixed_precision(getattr(args, "mixed_precision", "no"), use_cpu)
    accelerator = Accelerator(
        cpu=use_cpu,
        gradient_accumulation_steps=args.grad_accum,
        mixed_precision=precision,
        dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True),
    )
    return accelerator, precision


class RunningMeans:
    """The loss and the objective's extra scalars, averaged over the batches since the last log line."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """Start a new average (after each log line)."""
        self.loss, self.extras, self.count = 0.0, {}, 0

    def add(self, loss: float, extras: dict[str, float]) -> None:
        """Count one batch's loss and extra scalars."""
        self.loss += loss
        for key, value in extras.items():
            self.extras[key] = self.extras.get(key, 0.0) + value
        self.count += 1

    def describe(self) -> str:
        """``loss <mean> <name> <mean> ...``, as the log line shows it."""
        parts = " ".join(f"{k} {v / self.count:.4f}" for k, v in self.extras.items())
        return f"loss {self.loss / self.count:.4f} {parts}"


@dataclass
class TrainingRun:
    """One run after ``accelerator.prepare``: its objects, its schedule and how far it has got."""

    args: LoopOptions
    accelerator: Accelerator
    model: torch.nn.Module
    parameters: list[torch.nn.Parameter]  # the trainable ones, whose gradient norm is clipped
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    loader: DataLoader
    save_model: Callable[[torch.nn.Module, Path], None]
    log: RunLog
    steps_per_epoch: int
    total_steps: int
    started: float
    step: int = 0
    # called after every optimizer step (after its log line), e.g. a held-out evaluation every N steps
    after_step: Callable[["TrainingRun"], None] | None = None

    @property
    def output_dir(self) -> Path:
        """``--output-dir``: state, log, model and snapshots."""
        return Path(self.args.output_dir)

    def unwrapped(self) -> torch.nn.Module:
        """The objective module without the data-parallel wrapper."""
        return self.accelerator.unwrap_model(self.model)

    def resume(self) -> None:
        """Continue from ``state.pt`` when the output folder has one."""
        state_path = self.output_dir / STATE_FILE
        if not state_path.exists():
            return
        state = torch.load(state_path, map_location="cpu", weights_only=False)
        unwrapped = self.unwrapped()
        result = unwrapped.load_state_dict(state["trainable"], strict=False)
        not_restored = set(result.missing_keys) & set(trainable_state(unwrapped))
        if result.unexpected_keys or not_restored:
            raise ValueError(
                f"{state_path} does not fit this model: unexpected {result.unexpected_keys[:5]}, "
                f"missing {sorted(not_restored)[:5]}; use a fresh --output-dir"
            )
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step = state["step"]
        if getattr(self.scheduler.lr_lambdas[0], "total_steps", self.total_steps) != self.total_steps:
            # A new plan (--max-steps / --epochs changed on the rerun, as the recipe raises a schedule part-way):
            # the restored schedule would still end at the old plan's step and train at rate zero after it.
            self.log(
                f"the schedule now ends at step {self.total_steps} instead of "
                f"{self.scheduler.lr_lambdas[0].total_steps} (a new --max-steps / --epochs)"
            )
            self.refit(self.total_steps)
            for group, base, factor in zip(
                self.optimizer.param_groups,
                self.scheduler.base_lrs,  # this step's rate
                self.scheduler.lr_lambdas,
            ):
                group["lr"] = base * factor(self.step)
            self.scheduler._last_lr = [group["lr"] for group in self.optimizer.param_groups]
        self.log(f"resumed from {state_path} at step {self.step}")

    def save_state(self) -> None:
        """``state.pt`` (and a snapshot of the model with ``--snapshots``) from the main process."""
        if self.accelerator.is_main_process:
            # written aside, then renamed: a process killed while saving leaves the last state.pt whole
            partial = self.output_dir / f"{STATE_FILE}.partial"
            torch.save(
                {
                    "trainable": trainable_state(self.unwrapped()),
                    "optimizer": self.optimizer.state_dict(),
                    "scheduler": self.scheduler.state_dict(),
                    "step": self.step,
                    "args": vars(self.args),
                    "total_steps": self.total_steps,
                },
                partial,
            )
            os.replace(partial, self.output_dir / STATE_FILE)
            if getattr(self.args, "snapshots", False):
                self.save_model(self.unwrapped(), self.output_dir / SNAPSHOT_DIR / f"step-{self.step:05d}")
        self.accelerator.wait_for_everyone()

    def minutes(self) -> float:
        """Minutes since the run started."""
        return (time.monotonic() - self.started) / 60

    def refit(self, total_steps: int) -> None:
        """End the run and its learning-rate schedule at ``total_steps``."""
        self.total_steps = total_steps
        self.scheduler.lr_lambdas[0].refit(total_steps)

    def time_is_up(self) -> bool:
        """Whether any process has spent ``--max-minutes``: every process must stop at the same step,
        or the next all-reduce would hang."""
        out_of_time = self.args.max_minutes is not None and self.minutes() > self.args.max_minutes
        flag = self.accelerator.reduce(torch.tensor([float(out_of_time)], device=self.accelerator.device), "max")
        return flag.item() > 0

    def batch_step(self, batch) -> tuple[float, dict[str, float]]:
        """Forward and backward of one batch; the optimizer steps when the accumulation is complete."""
        accelerator = self.accelerator
        with accelerator.accumulate(self.model):
            loss, extras = self.model(batch)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(self.parameters, 1.0)
            self.optimizer.step()
            if accelerator.sync_gradients:
                self.scheduler.step()
            self.optimizer.zero_grad()
        return loss.item(), extras

    def epoch_batches(self):
        """The batches left in the current epoch (all of them unless resuming mid-epoch)."""
        epoch = self.step // self.steps_per_epoch
        if hasattr(self.loader, "set_epoch"):
            self.loader.set_epoch(epoch)
        # A dataset that draws anew each epoch (the masked-LM stage's masks) learns the epoch here: under
        # data parallelism accelerate passes it to the sampler only.
        if hasattr(self.loader.dataset, "set_epoch"):
            self.loader.dataset.set_epoch(epoch)
        skip = (self.step % self.steps_per_epoch) * self.args.grad_accum
        return self.accelerator.skip_first_batches(self.loader, skip) if skip else self.loader

    @property
    def last_step(self) -> int:
        """The step this run ends at: ``total_steps``, or ``--stop-at-step`` where that comes first."""
        stop = getattr(self.args, "stop_at_step", None)
        return self.total_steps if stop is None else min(stop, self.total_steps)

    def optimize(self) -> None:
        """Optimizer steps until ``last_step`` or the time box, logging and saving ``state.pt`` on the way."""
        self.model.train()
        last_save = last_log = time.monotonic()
        means = RunningMeans()
        if self.step >= self.last_step < self.total_steps:
            self.log(f"stopped at step {self.step} of {self.total_steps} (--stop-at-step)")
        # A bar on a terminal only: elsewhere the log lines every --log-every steps are the progress.
        watched = self.accelerator.is_main_process and sys.stderr.isatty()
        progress = Progress(
            self.last_step, "training", unit="step", initial=self.step, interactive=watched, every_seconds=math.inf
        )
        if isinstance(self.log, RunLog):
            self.log.progress = progress
        try:
            self._optimize_steps(means, last_save, last_log, progress)
        finally:
            progress.close()
            if isinstance(self.log, RunLog):
                self.log.progress = None

    def _optimize_steps(self, means: "RunningMeans", last_save: float, last_log: float, progress: Progress) -> None:
        args = self.args
        while self.step < self.last_step:
            epoch = self.step // self.steps_per_epoch
            for batch in self.epoch_batches():
                means.add(*self.batch_step(batch))
                if not self.accelerator.sync_gradients:
                    continue
                self.step += 1
                progress.update()
                if self.step % args.log_every == 0 or self.step == self.total_steps:
                    now = time.monotonic()
                    self.log(
                        f"step {self.step}/{self.total_steps} epoch {epoch} {means.describe()} "
                        f"lr {self.scheduler.get_last_lr()[0]:.2e} s/step {(now - last_log) / args.log_every:.2f} "
                        f"elapsed {(now - self.started) / 60:.1f} min"
                    )
                    means.reset()
                    last_log = now
                if self.after_step is not None:
                    self.after_step(self)
                if self.time_is_up():
                    self.log(f"time is up after {self.minutes():.1f} min, at step {self.step}")
                    return
                if self.step >= self.last_step:
                    if self.step < self.total_steps:
                        self.log(f"stopped at step {self.step} of {self.total_steps} (--stop-at-step)")
                    return
                if time.monotonic() - last_save > 60 * args.save_minutes:
                    self.save_state()
                    last_save = time.monotonic()

    def finish(self) -> Path:
        """The last ``state.pt``, the model folder, the weights digest and ``summary.json``."""
        self.save_state()
        unwrapped = self.unwrapped()
        model_dir = self.output_dir / MODEL_DIR
        if self.accelerator.is_main_process:
            self.save_model(unwrapped, model_dir)
        digest = weights_digest(unwrapped)
        (self.output_dir / f"weights.rank{self.accelerator.process_index}.sha256").write_text(digest + "\n")
        self.log(f"done: step {self.step}, {self.minutes():.1f} min, weights sha256 {digest[:16]}, saved {model_dir}")
        if self.accelerator.is_main_process:
            # one writer, renamed into place: the other ranks read it as soon as the barrier below lets them
            partial = self.output_dir / "summary.json.partial"
            partial.write_text(
                json.dumps(
                    {
                        "step": self.step,
                        "total_steps": self.total_steps,
                        "last_step": self.last_step,
                        "minutes": self.minutes(),
                    }
                )
            )
            os.replace(partial, self.output_dir / "summary.json")
        self.accelerator.wait_for_everyone()
        return model_dir


def prepare_run(
    model: torch.nn.Module,
    features: list,
    collate,
    args,
    save_model: Callable[[torch.nn.Module, Path], None],
    lr_overrides: dict[str, float] | None = None,
) -> TrainingRun:
    """Accelerator, loader, AdamW and schedule for ``model``, resumed from ``state.pt`` where there is one."""
    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    accelerator, precision = make_accelerator(args)
    log = RunLog(accelerator, output_dir / LOG_FILE)
    set_seed(args.seed)
    started = time.monotonic()
    loader = make_loader(features, collate, args)
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameter_groups(model, args, lr_overrides), lr=args.lr)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    steps_per_epoch = max(1, math.ceil(len(loader) / args.grad_accum))
    total_steps = args.max_steps if args.max_steps is not None else max(1, math.ceil(args.epochs * steps_per_epoch))
    scheduler = linear_schedule(optimizer, args.warmup_ratio, total_steps)
    run = TrainingRun(
        args=args,
        accelerator=accelerator,
        model=model,
        parameters=parameters,
        optimizer=optimizer,
        scheduler=scheduler,
        loader=loader,
        save_model=save_model,
        log=log,
        steps_per_epoch=steps_per_epoch,
        total_steps=total_steps,
        started=started,
    )
    run.resume()
    log(
        f"start: {len(features)} features, {accelerator.num_processes} process(es) on {accelerator.device}, "
        f"batch {args.batch_size} x accum {args.grad_accum}, mixed precision {precision}, "
        f"grouped by length {getattr(args, 'group_by_length', False)}, {total_steps} optimizer steps "
        f"({steps_per_epoch} per epoch), {sum(p.numel() for p in parameters):,} trainable parameters"
    )
    return run


def train(
    model: torch.nn.Module,
    features: list,
    collate,
    args,
    save_model: Callable[[torch.nn.Module, Path], None],
    lr_overrides: dict[str, float] | None = None,
) -> Path:
    """Optimise ``model(batch) -> (loss, extra scalars to log)`` (an objective module) over ``features``.

    ``lr_overrides`` maps parameter-name prefixes (names within ``model``) to their own peak
    learning rates (see :func:`parameter_groups`); the schedule scales every group alike.
    Writes ``<output-dir>/model`` with ``save_model`` at the end (main process) and
    ``weights.rank<R>.sha256`` on every process. Returns the model folder.
    """
    run = prepare_run(model, features, collate, args, save_model, lr_overrides)
    run.optimize()
    return run.finish()
