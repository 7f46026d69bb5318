"""The masked-LM stage's held-out scores: masked-token loss and accuracy on sequences the training never sees
(the documents of the QA dev split, with fixed masks), one JSON line per evaluation in ``heldout.jsonl``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from . import loop
from .mlm_data import MaskedLMCollator, MaskedSequences

HELDOUT_FILE = "heldout.jsonl"


class HeldOutEvaluation:
    """The masked-token loss and accuracy on the held-out sequences (fixed masks), one JSON line per
    evaluation in ``heldout.jsonl``; a resumed run first drops the lines of steps it will redo."""

    def __init__(
        self, datasets: dict[str, MaskedSequences], collate: MaskedLMCollator, batch_size: int, path: Path, every: int
    ):
        self.datasets, self.collate, self.batch_size, self.path, self.every = datasets, collate, batch_size, path, every

    def rows(self) -> list[dict]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def forget_after(self, step: int) -> None:
        """Drop the lines of steps after ``step`` (a resumed run redoes them)."""
        kept = [row for row in self.rows() if row["step"] <= step]
        self.path.write_text("".join(json.dumps(row) + "\n" for row in kept))

    @torch.no_grad()
    def scores(self, run: loop.TrainingRun) -> dict[str, float]:
        """``{"<language>_loss", "<language>_accuracy", "<language>_masked"}`` of the current model."""
        model = run.unwrapped().model
        was_training = model.training
        model.eval()
        out = {}
        for language, dataset in self.datasets.items():
            loss_sum = correct = count = 0.0
            for first in range(0, len(dataset), self.batch_size):
                batch = self.collate([dataset[i] for i in range(first, min(first + self.batch_size, len(dataset)))])
                batch = {k: v.to(run.accelerator.device) for k, v in batch.items()}
                with run.accelerator.autocast():
                    s, c, n = model(batch["input_ids"], batch["attention_mask"], batch["labels"])
                loss_sum, correct, count = loss_sum + s.item(), correct + c.item(), count + n
            out[f"{language}_loss"] = loss_sum / max(count, 1)
            out[f"{language}_accuracy"] = correct / max(count, 1)
            out[f"{language}_masked"] = int(count)
        model.train(was_training)
        return out

    def __call__(self, run: loop.TrainingRun) -> None:
        """After an optimizer step: score every ``every`` steps and at the run's last step."""
        if run.step % self.every and run.step != run.last_step:
            return
        self.record(run)

    def record(self, run: loop.TrainingRun) -> None:
        """Score now and append the line (main process; every process waits)."""
        if run.accelerator.is_main_process:
            started = time.monotonic()
            scores = self.scores(run)
            row = {
                "step": run.step,
                **{k: round(v, 5) if isinstance(v, float) else v for k, v in scores.items()},
                "seconds": round(time.monotonic() - started, 1),
                "minutes": round(run.minutes(), 1),
                "time": time.strftime("%Y-%m-%d %H:%M:%S"),
            }
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row) + "\n")
            run.log("held-out " + " ".join(f"{k} {v}" for k, v in row.items() if k != "time"))
        run.accelerator.wait_for_everyone()
