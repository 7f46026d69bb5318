"""Keeping what one window's forward pass needs for the explorer, without its attention weights.

USWAttn gives token i of block q the keys [C_P (s pack slots); block 0 ([CLS] and the question); blocks q-1,
q, q+1] and scores them q_i·k_j/√d - [D_P; D]_ij before one softmax (eq. 3.1 and section 3.2 of the paper).
Holding every layer's q and k for every token of an 8K-token window would take ~150 MB in fp32, so
:func:`keeping_reading` (while a question is read) and :func:`capturing` (during the explorer's pass of a window)
keep, through forward hooks, only what they are computed from: each layer's input X (in 16 bits, ~74 MB at 8K
tokens for 12 layers of 384), its P and C_P (s x H, fp32) and the positions and padding BiALiBi measures
distances with (a :class:`TokenCapture`). ``explorer.keys`` computes a token's keys, and every layer's weights,
from them; ``explorer.cache`` keeps the last windows' captures.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from littlebird.app.explorer.window import attention_layers
from littlebird.modeling_littlebird import LittleBirdLayer

KEEP_DTYPE = torch.float16
"""What each layer's input is kept in when the model runs in fp32: half the bytes, ~1e-3 relative error on a
score. A model that reads it in 16 bits anyway (bf16 weights, or bf16 linear layers on CPU) keeps that dtype,
which loses nothing."""


@dataclass(frozen=True)
class TokenCapture:
    """What one window's pass leaves for :func:`token_keys`: per layer its input X and its C_P, and the
    window's positions and padding. Tensors live on the CPU."""

    block_size: int
    hidden: tuple[torch.Tensor, ...]  # per layer (n_padded, H): the layer's input X, in 16 bits (see KEEP_DTYPE)
    packed: tuple[torch.Tensor, ...]  # per layer (s, H) fp32: C_P = Attn(P, X), what the unpack attention reads
    position_ids: torch.Tensor  # (n_padded,) the positions BiALiBi measures distances with
    key_valid: torch.Tensor  # (n_padded,) bool: a real token, not padding
    compute_dtype: torch.dtype  # the dtype the layers ran in
    tokens: tuple[str, ...]  # per window token, its text (the tokenizer's piece for special and question tokens)
    question_length: int = 0  # tokens of [CLS] [QUESTION] question [SEP]
    answer_positions: tuple[int, ...] = ()  # the window tokens of the answer followed
    pack_inputs: tuple[torch.Tensor, ...] = ()  # per layer (s, H) fp32: the layer's P, which its pack attention reads

    @property
    def n_tokens(self) -> int:
        """Tokens of the window (before padding to blocks)."""
        return len(self.tokens)

    @property
    def num_layers(self) -> int:
        return len(self.hidden)

    @property
    def default_token(self) -> int:
        """The token the view opens on: the answer's first, else the first document token."""
        if self.answer_positions:
            return self.answer_positions[0]
        return self.question_length if self.question_length < self.n_tokens else 0

    @property
    def nbytes(self) -> int:
        """Bytes held by the tensors."""
        return _nbytes((*self.hidden, *self.packed, *self.pack_inputs, self.position_ids, self.key_valid))


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


class LayerInputs:
    """What :func:`capturing` or :func:`keeping_reading` collected of one window's forward pass, layer by layer."""

    def __init__(self) -> None:
        self.hidden: list[torch.Tensor] = []
        self.packed: list[torch.Tensor] = []
        self.pack_inputs: list[torch.Tensor] = []
        self.position_ids: torch.Tensor | None = None
        self.key_valid: torch.Tensor | None = None
        self.block_size = 0
        self.compute_dtype = torch.float32
        self._buffers: tuple[torch.Tensor, torch.Tensor] | None = None

    @property
    def nbytes(self) -> int:
        """Bytes held by the tensors."""
        return _nbytes((*self.hidden, *self.packed, *self.pack_inputs, self.position_ids, self.key_valid))

    def _allocate(self, layers: int, n: int, s: int, H: int, dtype: torch.dtype) -> None:
        # One block per kind for the whole pass, filled layer by layer: a dozen separate copies a window, held
        # while the model's temporaries come and go, fragment the allocator's heap, and the reading's own
        # allocations then fault in fresh pages: the windows read slower (performance.md, the explorer).
        self._buffers = (torch.empty(layers, n, H, dtype=dtype), torch.empty(2, layers, s, H))

    def _take_input(self, x: torch.Tensor, p: torch.Tensor) -> None:
        layer = len(self.hidden)
        self.hidden.append(self._buffers[0][layer].copy_(x))  # (n_padded, H)
        self.pack_inputs.append(self._buffers[1][0, layer].copy_(p))  # (s, H)

    def _take_pack(self, c_p: torch.Tensor) -> None:
        self.packed.append(self._buffers[1][1, len(self.packed)].copy_(c_p))  # C_P (s, H)

    def capture(
        self, tokens: Sequence[str], *, question_length: int = 0, answer_positions: Sequence[int] = ()
    ) -> TokenCapture:
        """The :class:`TokenCapture` of the pass, its window's tokens labelled ``tokens``. A window the reader ran
        padded to a longer one's length (in a batch) keeps its own blocks only, as a pass of the window alone has
        them."""
        if not self.hidden or not len(self.hidden) == len(self.packed) == len(self.pack_inputs):
            raise ValueError(
                f"the pass left {len(self.hidden)} layer inputs and {len(self.packed)} pack outputs: "
                "run the model once inside capturing()"
            )
        n = -(-len(tokens) // self.block_size) * self.block_size  # the window's tokens padded to whole blocks
        return TokenCapture(
            self.block_size,
            tuple(x[:n] for x in self.hidden),
            tuple(self.packed),
            self.position_ids[:n],
            self.key_valid[:n],
            self.compute_dtype,
            tuple(tokens),
            question_length,
            tuple(int(p) for p in answer_positions),
            tuple(self.pack_inputs),
        )


def _keep_dtype(layer: LittleBirdLayer, x: torch.Tensor) -> torch.dtype:
    """16 bits for X: its own dtype when it has 16, that of the query's weights when they read it in 16
    (``littlebird.inference.BF16Linear``), else :data:`KEEP_DTYPE`."""
    if x.element_size() == 2:
        return x.dtype
    weight = getattr(layer.attention.query, "weight", None)
    return weight.dtype if weight is not None and weight.element_size() == 2 else KEEP_DTYPE


@contextmanager
def capturing(model: Any, *, dtype: torch.dtype | None = None) -> Iterator[LayerInputs]:
    """Keep each LittleBird layer's input X and P and its C_P while ``model`` runs once (batch row 0), through
    forward hooks that copy them to the CPU as each layer starts and packs. ``dtype`` overrides the 16 bits X is
    kept in (tests keep fp32 to compare with the model exactly). Only this thread's passes are taken: the app's
    model serves other questions meanwhile. A model without LittleBird layers leaves nothing."""
    inputs = LayerInputs()
    hooks = _recording(model, lambda batch: [inputs], dtype)
    try:
        yield inputs
    finally:
        for hook in hooks:
            hook.remove()


KEEP_BYTES = 128 * 2**20
"""What :func:`keeping_reading` may hold while a question is read: ten 1,024-token windows of the shipped model
(~11 MB each in 16 bits), or one 8K-token window (~74 MB) and the one being read."""


class ReadingInputs:
    """The layer inputs of the windows one reading passed through the model (:func:`keeping_reading`), by their
    place in the reading order (``littlebird.reader.WindowRecord.read``). Past ``budget`` bytes the windows the
    model found least answerable are let go, the most answerable always kept: the explorer opens on the best
    answer's window, which is almost always among them."""

    def __init__(self, budget: int = KEEP_BYTES) -> None:
        self.budget = budget
        self._kept: dict[int, tuple[float, LayerInputs]] = {}  # reading place -> (answerable logit, inputs)
        self._pass: list[LayerInputs] = []
        self._read = 0
        self._glimpsing = False

    def on_pass(self, kind: str) -> None:
        """The reader's ``on_pass`` (``littlebird.reader.read``): the passes after "glimpse" are glimpses, not
        windows read, and are not kept; those after "read" are."""
        self._glimpsing = kind == "glimpse"

    @contextmanager
    def keeping(self, model: Any) -> Iterator[Callable[[str], None]]:
        """Keep here, while a question is read in this thread, each window's layer inputs (see
        :func:`keeping_reading`); yields :meth:`on_pass`, for the reading. The ``observe`` of
        ``littlebird.app.asking.ask``."""
        thread = threading.get_ident()

        def end_pass(module, args, output):
            if threading.get_ident() == thread and self._pass and not self._glimpsing:
                logits = getattr(output, "answerable_logits", None)
                self._end_pass([0.0] * len(self._pass) if logits is None else logits.float().cpu().tolist())

        hooks = _recording(model, self._start_pass, None, skip=lambda: self._glimpsing)
        if hooks:
            hooks.append(model.register_forward_hook(end_pass))
        try:
            yield self.on_pass
        finally:
            for hook in hooks:
                hook.remove()

    def window(self, place: int) -> LayerInputs | None:
        """The inputs of the window read ``place``-th, if kept."""
        kept = self._kept.get(place)
        return None if kept is None else kept[1]

    @property
    def nbytes(self) -> int:
        return sum(inputs.nbytes for _, inputs in self._kept.values())

    def _start_pass(self, batch: int) -> list[LayerInputs]:
        self._pass = [LayerInputs() for _ in range(batch)]
        return self._pass

    def _end_pass(self, answerable_logits: Sequence[float]) -> None:
        for row, inputs in enumerate(self._pass):
            if inputs.hidden:
                self._kept[self._read + row] = (float(answerable_logits[row]), inputs)
        self._read += len(self._pass)
        self._pass = []
        while len(self._kept) > 1 and self.nbytes > self.budget:
            # the least answerable goes; of equals, the one read later (ranked lower by the first pass)
            del self._kept[min(self._kept, key=lambda place: (self._kept[place][0], -place))]


@contextmanager
def keeping_reading(model: Any, *, budget: int = KEEP_BYTES) -> Iterator[ReadingInputs]:
    """Keep, while a question is read in this thread, each window's layer inputs as :func:`capturing` does, within
    ``budget`` bytes, so the explorer can rebuild the attention of the window it opens on from them (each layer's
    weights, ``LittleBirdLayer.attention_weights``) rather than run the window again. Give the reading the kept
    inputs' :meth:`ReadingInputs.on_pass` (``read(..., on_pass=kept.on_pass)``), so that glimpses are not taken
    for windows read. A model without LittleBird layers keeps nothing."""
    kept = ReadingInputs(budget)
    with kept.keeping(model):
        yield kept


def _recording(
    model: Any,
    start_pass: Callable[[int], list[LayerInputs]],
    dtype: torch.dtype | None,
    *,
    skip: Callable[[], bool] = lambda: False,
) -> list:
    """Forward hooks on ``model``'s LittleBird layers that fill, as each layer starts and packs in this thread,
    the LayerInputs ``start_pass(batch size)`` gives for the pass's first rows when its first layer starts;
    passes while ``skip()`` is true are left alone."""
    layers = attention_layers(model)
    thread = threading.get_ident()
    rows: list[LayerInputs] = []

    def take_input(layer, args):
        if threading.get_ident() != thread or skip():  # e.g. glimpses, which are not windows read
            return
        x, p, geometry = args[:3]  # LittleBirdLayer.forward(x, p, geometry, output_attentions)
        if layer is layers[0]:
            rows[:] = start_pass(x.shape[0])[: x.shape[0]]
            for row, inputs in enumerate(rows):
                inputs.position_ids = geometry.position_ids[row].cpu().clone()
                inputs.key_valid = geometry.key_valid[row].cpu().clone()
                inputs.block_size = geometry.block_size
                inputs.compute_dtype = x.dtype
                inputs._allocate(len(layers), x.shape[1], p.shape[1], x.shape[2], dtype or _keep_dtype(layer, x))
        for row, inputs in enumerate(rows):
            inputs._take_input(x[row], p[row])

    def take_pack(module, args, output):
        if threading.get_ident() == thread and not skip():
            for row, inputs in enumerate(rows):
                inputs._take_pack(output[row])

    hooks = [layer.register_forward_pre_hook(take_input) for layer in layers]
    return hooks + [layer.pack_attention.output.register_forward_hook(take_pack) for layer in layers]
