"""The training loop every stage shares, on ``accelerate.Accelerator``.

The same command runs on one CPU, one GPU, or data-parallel under ``accelerate launch`` or
``torchrun`` (the Accelerator reads the launcher's environment; each process reads its own
shard of every batch). A run is:

- time-boxed: ``--max-minutes`` stops at a step boundary, all processes together, and saves;
- resumable: ``state.pt`` (trainable weights, optimizer, schedule, step) is written every
  ``--save-minutes`` and at the end; rerunning the command continues from it;
- logged: one line per ``--log-every`` optimizer steps in ``<output-dir>/log.txt``;
- cheap per feature: batches of similar length (``--group-by-length``), and bf16 autocast where
  the hardware multiplies bf16 natively (``--mixed-precision auto``).

Frozen parameters (``requires_grad=False``) are neither optimised nor written to ``state.pt``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from pathlib import Path
from typing import Callable

import torch
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, set_seed
from torch.utils.data import DataLoader

from .batching import LengthGroupedBatchSampler

STATE_FILE = "state.pt"
LOG_FILE = "log.txt"
MODEL_DIR = "model"
SNAPSHOT_DIR = "snapshots"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the shared loop (every stage has them)."""
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--batch-size", type=int, default=16, help="per process")
    parser.add_argument("--grad-accum", type=int, default=1)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--warmup-ratio", type=float, default=0.06)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--max-steps", type=int, default=None,
                        help="optimizer steps; overrides --epochs; 0 saves the starting model untrained")
    parser.add_argument("--max-minutes", type=float, default=None, help="stop (and save) after this much time")
    parser.add_argument("--save-minutes", type=float, default=10.0)
    parser.add_argument("--snapshots", action="store_true",
                        help="also write the model to snapshots/step-N at every save (learning curves)")
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cpu", action="store_true", help="train on CPU even where a GPU is available")
    parser.add_argument("--mixed-precision", choices=("auto", "no", "bf16"), default="auto",
                        help="bf16 autocast; auto: where the GPU or the CPU (AMX, AVX512-BF16) has bf16 units")
    parser.add_argument("--group-by-length", action=argparse.BooleanOptionalAction, default=True,
                        help="batch features of similar length together (less padding)")


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
    """Appends lines to ``log.txt`` (main process only) and echoes them."""

    def __init__(self, accelerator: Accelerator, path: Path):
        self.accelerator, self.path = accelerator, path

    def __call__(self, message: str) -> None:
        if self.accelerator.is_main_process:
            line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}"
            print(line, flush=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")


def linear_schedule(optimizer, warmup_steps: int, total_steps: int):
    """Linear warm-up to the peak rate, then linear decay to zero at ``total_steps``."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / max(1, warmup_steps)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def parameter_groups(model: torch.nn.Module, args, lr_overrides: dict[str, float] | None = None) -> list[dict]:
    """AdamW groups of the trainable parameters: weight decay on matrices only, and ``args.lr``
    except where a parameter's name starts with a prefix in ``lr_overrides`` (prefix -> rate)."""
    groups: dict[tuple[float, bool], list] = {}
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        lr = next((rate for prefix, rate in (lr_overrides or {}).items() if name.startswith(prefix)), args.lr)
        groups.setdefault((lr, parameter.dim() >= 2), []).append(parameter)
    # Matrices first, then the rest, per rate: the order of earlier runs' state.pt files.
    return [{"params": params, "lr": lr, "weight_decay": args.weight_decay if decay else 0.0}
            for (lr, decay), params in sorted(groups.items(), key=lambda item: (item[0][0], not item[0][1]))]


def train(model: torch.nn.Module, features: list, collate, args,
          save_model: Callable[[torch.nn.Module, Path], None], lr_overrides: dict[str, float] | None = None) -> Path:
    """Optimise ``model(batch) -> (loss, extra scalars to log)`` (an objective module) over ``features``.

    ``lr_overrides`` maps parameter-name prefixes (names within ``model``) to their own peak
    learning rates (see :func:`parameter_groups`); the schedule scales every group alike.
    Writes ``<output-dir>/model`` with ``save_model`` at the end (main process) and
    ``weights.rank<R>.sha256`` on every process. Returns the model folder.
    """
    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    # Without cpu=True, accelerate ignores a torchrun world on a machine without GPUs (one process each).
    use_cpu = args.cpu or not torch.cuda.is_available()
    precision = resolve_mixed_precision(getattr(args, "mixed_precision", "no"), use_cpu)
    accelerator = Accelerator(cpu=use_cpu, gradient_accumulation_steps=args.grad_accum, mixed_precision=precision,
                              dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True))
    log = RunLog(accelerator, output_dir / LOG_FILE)
    set_seed(args.seed)
    started = time.monotonic()
    loader = make_loader(features, collate, args)
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameter_groups(model, args, lr_overrides), lr=args.lr)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    steps_per_epoch = max(1, math.ceil(len(loader) / args.grad_accum))
    total_steps = args.max_steps if args.max_steps is not None else max(1, math.ceil(args.epochs * steps_per_epoch))
    scheduler = linear_schedule(optimizer, int(args.warmup_ratio * total_steps), total_steps)

    step = 0
    state_path = output_dir / STATE_FILE
    if state_path.exists():
        state = torch.load(state_path, map_location="cpu", weights_only=False)
        unwrapped = accelerator.unwrap_model(model)
        result = unwrapped.load_state_dict(state["trainable"], strict=False)
        not_restored = set(result.missing_keys) & set(trainable_state(unwrapped))
        if result.unexpected_keys or not_restored:
            raise ValueError(f"{state_path} does not fit this model: unexpected {result.unexpected_keys[:5]}, "
                             f"missing {sorted(not_restored)[:5]}; use a fresh --output-dir")
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = state["step"]
        log(f"resumed from {state_path} at step {step}")
    log(f"start: {len(features)} features, {accelerator.num_processes} process(es) on {accelerator.device}, "
        f"batch {args.batch_size} x accum {args.grad_accum}, mixed precision {precision}, "
        f"grouped by length {getattr(args, 'group_by_length', False)}, {total_steps} optimizer steps "
        f"({steps_per_epoch} per epoch), {sum(p.numel() for p in parameters):,} trainable parameters")

    def save_state():
        if accelerator.is_main_process:
            torch.save({"trainable": trainable_state(accelerator.unwrap_model(model)),
                        "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "step": step,
                        "args": vars(args)}, state_path)
            if getattr(args, "snapshots", False):
                save_model(accelerator.unwrap_model(model), output_dir / SNAPSHOT_DIR / f"step-{step:05d}")
        accelerator.wait_for_everyone()

    model.train()
    last_save = last_log = time.monotonic()
    running, extras_sum, counted = 0.0, {}, 0
    stop = step >= total_steps
    while not stop:
        epoch = step // steps_per_epoch
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        skip = (step % steps_per_epoch) * args.grad_accum
        batches = accelerator.skip_first_batches(loader, skip) if skip else loader
        for batch in batches:
            with accelerator.accumulate(model):
                loss, extras = model(batch)
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(parameters, 1.0)
                optimizer.step()
                scheduler.step() if accelerator.sync_gradients else None
                optimizer.zero_grad()
            running += loss.item()
            for key, value in extras.items():
                extras_sum[key] = extras_sum.get(key, 0.0) + value
            counted += 1
            if not accelerator.sync_gradients:
                continue
            step += 1
            if step % args.log_every == 0 or step == total_steps:
                now = time.monotonic()
                parts = " ".join(f"{k} {v / counted:.4f}" for k, v in extras_sum.items())
                log(f"step {step}/{total_steps} epoch {epoch} loss {running / counted:.4f} {parts} "
                    f"lr {scheduler.get_last_lr()[0]:.2e} s/step {(now - last_log) / args.log_every:.2f} "
                    f"elapsed {(now - started) / 60:.1f} min")
                running, extras_sum, counted, last_log = 0.0, {}, 0, now
            out_of_time = args.max_minutes is not None and time.monotonic() - started > 60 * args.max_minutes
            # Every process must stop at the same step, or the next all-reduce would hang.
            flag = accelerator.reduce(torch.tensor([float(out_of_time)], device=accelerator.device), "max")
            if flag.item() > 0 or step >= total_steps:
                if out_of_time or flag.item() > 0:
                    log(f"time is up after {(time.monotonic() - started) / 60:.1f} min, at step {step}")
                stop = True
                break
            if time.monotonic() - last_save > 60 * args.save_minutes:
                save_state()
                last_save = time.monotonic()
    save_state()
    unwrapped = accelerator.unwrap_model(model)
    model_dir = output_dir / MODEL_DIR
    if accelerator.is_main_process:
        save_model(unwrapped, model_dir)
    digest = weights_digest(unwrapped)
    (output_dir / f"weights.rank{accelerator.process_index}.sha256").write_text(digest + "\n")
    accelerator.wait_for_everyone()
    log(f"done: step {step}, {(time.monotonic() - started) / 60:.1f} min, weights sha256 {digest[:16]}, "
        f"saved {model_dir}")
    (output_dir / "summary.json").write_text(json.dumps({"step": step, "total_steps": total_steps,
                                                          "minutes": (time.monotonic() - started) / 60}))
    return model_dir
