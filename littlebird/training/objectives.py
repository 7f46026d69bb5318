"""Training objectives: QA fine-tuning (stages 1 and 3), distillation (stage 2, section 3.4), the
baselines' QA fine-tuning and the source encoder's masked-LM healing.

Each objective is an ``nn.Module`` whose ``forward(batch)`` returns ``(loss, scalars to log)``, so
the data-parallel wrapper sees the whole computation. The first two work on any QA model that has
the ``.littlebird`` encoder and ``.qa_head`` of :class:`~littlebird.LittleBirdForQuestionAnswering`
(the teacher has them too), and compute the head in float32; :class:`BaselineQAObjective` trains
a BigBird or Longformer behind :class:`~littlebird.baselines.BaselineQAAdapter`, and
:class:`MaskedLMObjective` the encoder of :mod:`~littlebird.training.mlm_model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..modeling_littlebird import _look_around


@dataclass
class QALogits:
    """Head outputs on the gold start: start (B, n), end given the gold start (B, n), answerable (B,)."""

    start: torch.Tensor
    end: torch.Tensor
    answerable: torch.Tensor
    valid: torch.Tensor  # (B, n) bool: real tokens


def qa_logits(qa_head, hidden: torch.Tensor, attention_mask: torch.Tensor, start_positions: torch.Tensor) -> QALogits:
    """Appendix A.2's head, the end teacher-forced on the gold start; impossible positions get -1e4.

    -1e4 rather than the dtype's minimum keeps KL terms finite where both models rule a position out.
    """
    hidden = hidden.float()
    B, n, _ = hidden.shape
    valid = attention_mask.bool()
    start = qa_head.start_logits(hidden).masked_fill(~valid, -1e4)
    starts = start_positions.clamp(0, n - 1).view(B, 1)
    end = qa_head.end_logits(hidden, starts).squeeze(1)
    end = end.masked_fill(~valid | (torch.arange(n, device=hidden.device) < starts), -1e4)
    return QALogits(start, end, qa_head.answerable_logits(hidden), valid)


def qa_loss(logits: QALogits, start_positions: torch.Tensor, end_positions: torch.Tensor) -> torch.Tensor:
    """(CE(start) + CE(end)) / 2 + BCE(answerable): LittleBirdForQuestionAnswering's training loss."""
    n = logits.start.shape[1]
    span = (
        F.cross_entropy(logits.start, start_positions.clamp(0, n - 1))
        + F.cross_entropy(logits.end, end_positions.clamp(0, n - 1))
    ) / 2
    return span + F.binary_cross_entropy_with_logits(logits.answerable, (start_positions > 0).float())


def qa_loss_rows(logits: QALogits, start_positions: torch.Tensor, end_positions: torch.Tensor) -> torch.Tensor:
    """(B,) :func:`qa_loss` of each row of the batch (its mean is :func:`qa_loss`)."""
    n = logits.start.shape[1]
    span = (
        F.cross_entropy(logits.start, start_positions.clamp(0, n - 1), reduction="none")
        + F.cross_entropy(logits.end, end_positions.clamp(0, n - 1), reduction="none")
    ) / 2
    answerable = F.binary_cross_entropy_with_logits(logits.answerable, (start_positions > 0).float(), reduction="none")
    return span + answerable


def anchor_loss_rows(student: QALogits, anchor: QALogits) -> torch.Tensor:
    """(B,) how far each row's start, end and answerable distributions moved from ``anchor``'s:
    (KL(start) + KL(end)) / 2 + KL(answerable), each KL(anchor || student), 0 where they agree."""

    def kl(student_logits: torch.Tensor, anchor_logits: torch.Tensor) -> torch.Tensor:
        student_logits, anchor_logits = student_logits.float(), anchor_logits.float()  # bf16 autocast's heads
        p = F.softmax(anchor_logits, dim=-1)
        return (p * (F.log_softmax(anchor_logits, dim=-1) - F.log_softmax(student_logits, dim=-1))).sum(-1)

    two = lambda logit: torch.stack([F.logsigmoid(-logit), F.logsigmoid(logit)], dim=-1)  # noqa: E731
    return (kl(student.start, anchor.start) + kl(student.end, anchor.end)) / 2 + kl(
        two(student.answerable), two(anchor.answerable)
    )


def soft_target_loss(student: torch.Tensor, teacher: torch.Tensor, temperature: float) -> torch.Tensor:
    """T^2 * KL(softmax(teacher / T) || softmax(student / T)), averaged over the batch (Hinton et al.)."""
    log_p_student = F.log_softmax(student / temperature, dim=-1)
    p_teacher = F.softmax(teacher / temperature, dim=-1)
    return temperature**2 * F.kl_div(log_p_student, p_teacher, reduction="batchmean")


def teacher_windows(teacher: torch.Tensor, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A teacher's dense attention (B, h, n, n) cut to LittleBird's compact form, never building n x n twice.

    Returns ``local`` (B, h, nb, b, 3b), what each query of block q gave to blocks q-1, q, q+1, and
    ``global_`` (B, h, nb, b, b), what it gave to block 0 (zeros for q <= 1, whose window holds block 0):
    the layout of :class:`littlebird.modeling_littlebird.LittleBirdAttentions`.
    """
    B, h, n, _ = teacher.shape
    b = block_size
    nb = -(-n // b)
    size = nb * b
    # Queries padded to whole blocks; keys with one spare block on each side (zeros: no such key).
    padded = F.pad(teacher, (b, size - n + b, 0, size - n)).contiguous()  # (B, h, size, size + 2b)
    st = padded.stride()
    local = padded.as_strided((B, h, nb, b, 3 * b), (st[0], st[1], b * (st[2] + st[3]), st[2], st[3]))
    global_ = padded[..., b : 2 * b].reshape(B, h, nb, b, b).clone()
    global_[:, :, :2] = 0
    return local, global_


def window_key_valid(key_valid: torch.Tensor, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Key validity (B, n) in the compact form: (B, 1, nb, 1, 3b) for the window, (B, 1, nb, 1, b) for block 0."""
    B, n = key_valid.shape
    b = block_size
    nb = -(-n // b)
    blocks = F.pad(key_valid, (0, nb * b - n), value=False).view(B, nb, b)
    local = _look_around(blocks, 1, False)  # (B, nb, 3b): blocks q-1, q, q+1, as the attention builds them
    global_ = blocks[:, :1].expand(B, nb, b).clone()
    global_[:, :2] = False
    return local.view(B, 1, nb, 1, 3 * b), global_.view(B, 1, nb, 1, b)


def attention_distillation_loss(
    student_attentions: Sequence,
    teacher_attentions: Sequence[torch.Tensor],
    layer_map: Sequence[int],
    attention_mask: torch.Tensor,
    block_size: int,
) -> torch.Tensor:
    """Mean over student layers of KL(teacher || student) between self-attention distributions.

    Following Sun et al. (2020) as section 3.4 does. The teacher attends to every token, a
    LittleBird query to its window and the packed vectors: both are compared on the tokens the
    window shows, each renormalised there (the packed share has no teacher counterpart).
    Student layer i learns from teacher layer ``layer_map[i]``.

    Both sides are compared in the student's compact form (window and block 0, O(n b) per head):
    the student's weights are never expanded to n x n, and the teacher's are read through strided views.
    """
    B, n = attention_mask.shape
    valid = attention_mask.bool()
    local_valid, global_valid = window_key_valid(valid, block_size)
    nb = local_valid.shape[2]
    rows = F.pad(valid, (0, nb * block_size - n)).view(B, 1, nb, block_size).float()
    total = 0.0
    eps = 1e-8

    def renormalised(local: torch.Tensor, global_: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        local = local.float() * local_valid
        global_ = global_.float() * global_valid
        norm = (local.sum(-1, keepdim=True) + global_.sum(-1, keepdim=True)).clamp(min=eps)
        return local / norm, global_ / norm

    for student, index in zip(student_attentions, layer_map):
        s_local, s_global = renormalised(student.local, student.global_)
        t_local, t_global = renormalised(*teacher_windows(teacher_attentions[index], block_size))
        kl = (t_local * (torch.log(t_local + eps) - torch.log(s_local + eps))).sum(-1) + (
            t_global * (torch.log(t_global + eps) - torch.log(s_global + eps))
        ).sum(-1)  # (B, h, nb, b)
        total = total + (kl * rows).sum() / (rows.sum() * kl.shape[1])
    return total / len(layer_map)


class QAObjective(nn.Module):
    """Plain extractive QA training of ``model`` (stage 1 on the teacher, stage 3 on the student)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict[str, float]]:
        encoded = self.model.littlebird(
            batch["input_ids"],
            attention_mask=batch["attention_mask"],
            position_ids=batch.get("position_ids"),
            return_dict=True,
        )
        logits = qa_logits(
            self.model.qa_head, encoded.last_hidden_state, batch["attention_mask"], batch["start_positions"]
        )
        return qa_loss(logits, batch["start_positions"], batch["end_positions"]), {}


class AnchoredQAObjective(nn.Module):
    """Gold spans on some windows while the rest keep what the starting model said of them.

    A batch row with ``soft`` set learns the anchor's (a frozen copy of the model the stage started from)
    start, end and answerable distributions on the same input (:func:`anchor_loss_rows`); the other rows
    learn their gold spans (:func:`qa_loss_rows`). A stage that teaches a new kind of window (table rows) marks
    the windows the model already reads well (prose) soft, so that what it knew cannot slide while it learns.
    ``weight`` scales the soft rows' loss against the gold rows': above 1 the prose is held closer to the anchor.
    """

    def __init__(self, model: nn.Module, anchor: nn.Module, weight: float = 1.0):
        super().__init__()
        if weight <= 0:
            raise ValueError(f"the anchor's weight must be above 0, got {weight}")
        self.model = model
        self.anchor = anchor.eval().requires_grad_(False)
        self.weight = weight

    def train(self, mode: bool = True):
        super().train(mode)
        self.anchor.eval()  # no dropout in the targets
        return self

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict[str, float]]:
        mask, starts, ends = batch["attention_mask"], batch["start_positions"], batch["end_positions"]
        encoded = self.model.littlebird(
            batch["input_ids"], attention_mask=mask, position_ids=batch.get("position_ids"), return_dict=True
        )
        logits = qa_logits(self.model.qa_head, encoded.last_hidden_state, mask, starts)
        losses = qa_loss_rows(logits, starts, ends)
        soft = batch.get("soft", torch.zeros_like(starts, dtype=torch.bool)).bool()
        scalars = {}
        if soft.any():
            rows = soft.nonzero().squeeze(1)
            positions = batch.get("position_ids")
            with torch.no_grad():
                anchored = self.anchor.littlebird(
                    batch["input_ids"][rows],
                    attention_mask=mask[rows],
                    position_ids=None if positions is None else positions[rows],
                    return_dict=True,
                )
                target = qa_logits(self.anchor.qa_head, anchored.last_hidden_state, mask[rows], starts[rows])
            student = QALogits(logits.start[rows], logits.end[rows], logits.answerable[rows], logits.valid[rows])
            kept = anchor_loss_rows(student, target)
            losses = losses.float().index_put((rows,), self.weight * kept.float())
            scalars["anchor"] = kept.mean().item()
        if (~soft).any():
            scalars["gold"] = losses[~soft].mean().item()
        return losses.mean(), scalars


class DistillationObjective(nn.Module):
    """Stage 2: the student learns the teacher's start/end distributions and attention distributions.

    loss = hard_weight * QA loss + soft start/end KL (temperature T) + attention_weight * attention KL
    + answerable_weight * BCE(student's answerable, teacher's answerable probability)
    + hidden_weight * hidden-state MSE.
    The teacher reads the plain input (its positions stop at 512); the student reads the same tokens
    with Padding Insertion's shifted positions when the batch carries them. Student layer i learns from
    teacher layer ``layer_map[i]``: its attention distribution, and (hidden_weight) its output on the real
    tokens, as TinyBERT's layer-to-layer loss (Jiao et al., 2020) does for a shallower student.
    """

    def __init__(
        self,
        student: nn.Module,
        teacher: nn.Module,
        layer_map: Sequence[int],
        *,
        temperature: float = 2.0,
        hard_weight: float = 0.5,
        attention_weight: float = 1.0,
        answerable_weight: float = 0.0,
        hidden_weight: float = 0.0,
        attention_loss=attention_distillation_loss,
    ):
        super().__init__()
        self.attention_loss = attention_loss  # the benchmark's dense row passes littlebird.reference's
        self.model = student
        self.teacher = teacher.eval().requires_grad_(False)
        self.layer_map = list(layer_map)
        self.temperature, self.hard_weight, self.attention_weight = temperature, hard_weight, attention_weight
        self.answerable_weight, self.hidden_weight = answerable_weight, hidden_weight

    def train(self, mode: bool = True):
        super().train(mode)
        self.teacher.eval()  # no dropout in the targets
        return self

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict[str, float]]:
        mask, starts = batch["attention_mask"], batch["start_positions"]
        attentions, hidden = self.attention_weight > 0, self.hidden_weight > 0
        with torch.no_grad():
            taught = self.teacher.littlebird(
                batch["input_ids"],
                attention_mask=mask,
                output_attentions=attentions,
                output_hidden_states=hidden,
                return_dict=True,
            )
            target = qa_logits(self.teacher.qa_head, taught.last_hidden_state, mask, starts)
        encoded = self.model.littlebird(
            batch["input_ids"],
            attention_mask=mask,
            position_ids=batch.get("position_ids"),
            output_attentions=attentions,
            output_hidden_states=hidden,
            return_dict=True,
        )
        logits = qa_logits(self.model.qa_head, encoded.last_hidden_state, mask, starts)
        hard = qa_loss(logits, starts, batch["end_positions"])
        soft = (
            soft_target_loss(logits.start, target.start, self.temperature)
            + soft_target_loss(logits.end, target.end, self.temperature)
        ) / 2
        loss = self.hard_weight * hard + soft
        scalars = {"hard": hard.item(), "soft": soft.item()}
        if self.attention_weight > 0:
            attention = self.attention_loss(
                encoded.attentions, taught.attentions, self.layer_map, mask, self.model.config.block_size
            )
            loss = loss + self.attention_weight * attention
            scalars["attention"] = attention.item()
        if self.answerable_weight > 0:
            answerable = F.binary_cross_entropy_with_logits(logits.answerable, torch.sigmoid(target.answerable))
            loss = loss + self.answerable_weight * answerable
            scalars["answerable"] = answerable.item()
        if self.hidden_weight > 0:
            states = hidden_state_loss(encoded.hidden_states, taught.hidden_states, self.layer_map, mask)
            loss = loss + self.hidden_weight * states
            scalars["hidden"] = states.item()
        return loss, scalars


def hidden_state_loss(
    student_states: Sequence[torch.Tensor],
    teacher_states: Sequence[torch.Tensor],
    layer_map: Sequence[int],
    attention_mask: torch.Tensor,
) -> torch.Tensor:
    """Mean over student layers of the squared error between layer i's output and teacher layer
    ``layer_map[i]``'s, per element of the real tokens. States are each model's inputs to every layer and
    its last output (``output_hidden_states``), so layer i's output is entry i + 1."""
    valid = attention_mask.bool().unsqueeze(-1)  # (B, n, 1)
    count = valid.sum() * student_states[0].shape[-1]
    total = 0.0
    for index, source in enumerate(layer_map):
        error = (student_states[index + 1].float() - teacher_states[source + 1].float()) ** 2  # (B, n, H)
        total = total + error.masked_fill(~valid, 0.0).sum() / count
    return total / len(layer_map)


class BaselineQAObjective(nn.Module):
    """QA fine-tuning of the baselines (a :class:`littlebird.baselines.BaselineQAAdapter`).

    The wrapped BigBird or Longformer gets exactly the inputs inference gives it
    (``adapter.model_inputs``: type ids 0, the question masked out of BigBird's answers or given
    Longformer's global attention) and returns its stock loss, (CE(start) + CE(end)) / 2, with
    [CLS] (index 0) as "no answer here", as LittleBird's labels have it. Padding Insertion's
    position ids belong to LittleBird's recipe and are not passed.
    """

    def __init__(self, adapter: nn.Module):
        super().__init__()
        self.model = adapter

    def forward(self, batch: dict) -> tuple[torch.Tensor, dict[str, float]]:
        inputs, _, _ = self.model.model_inputs(batch["input_ids"], batch["attention_mask"])
        out = self.model.model(**inputs, start_positions=batch["start_positions"], end_positions=batch["end_positions"])
        return out.loss, {}


class MaskedLMObjective(nn.Module):
    """The masked-LM healing stage: the mean masked-token loss of a
    :class:`littlebird.training.mlm_model.EncoderForMaskedLM`, and its accuracy to log.

    Dropout draws from the batch's own seed, not from the process's random state, so a resumed run
    (which skips the batches already seen) takes exactly the steps an uninterrupted run takes.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        device = batch["input_ids"].device
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(int(batch["dropout_seed"]))
            loss_sum, correct, count = self.model(batch["input_ids"], batch["attention_mask"], batch["labels"])
        count = max(count, 1)
        return loss_sum / count, {"accuracy": correct.item() / count}
