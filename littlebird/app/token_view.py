"""The explorer's "any token" view: one token of the explained window, the keys it may read in a layer and
head, and each key's score split into the content term q·k/√d and BiALiBi's term, with the resulting weight.

USWAttn gives token i of block q the keys [C_P (s pack slots); block 0 ([CLS] and the question); blocks q-1,
q, q+1] and scores them q_i·k_j/√d - [D_P; D]_ij before one softmax (eq. 3.1 and section 3.2 of the paper).
Holding every layer's q and k for every token of an 8K-token window would take ~150 MB in fp32, so
:func:`keeping_reading` (while a question is read) and :func:`capturing` (during the explorer's pass of a window)
keep only what they are computed from: each layer's input X (in 16 bits, ~74 MB at 8K tokens for 12 layers of
384), its P and C_P (s x H, fp32) and the positions and padding BiALiBi measures distances with.
:func:`token_keys` then projects the one query and its <= s + 4b keys through the layer's own modules and
computes the bias with the model's own :func:`pair_terms` and ``BiALiBi``: milliseconds, for any layer, head
and token; :func:`layer_weights` rebuilds every layer's weights from the same inputs, for the explorer's
summary. :data:`CAPTURES` keeps the last two windows.

:func:`token_figure` draws a :class:`TokenKeys` and never touches torch.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from littlebird.app.figures import LABEL_CHARS, _layout, _message_figure
from littlebird.modeling_littlebird import LittleBirdLayer, attention_weights_dtype, build_block_geometry, pair_terms
from littlebird.reader import _attention_layers, glimpsing, model_device

if TYPE_CHECKING:
    from littlebird.app.asking import ExplorerTarget

KEEP_DTYPE = torch.float16
"""What each layer's input is kept in when the model runs in fp32: half the bytes, ~1e-3 relative error on a
score. A model that reads it in 16 bits anyway (bf16 weights, or bf16 linear layers on CPU) keeps that dtype,
which loses nothing."""

MAX_WINDOWS = 2
"""Windows whose layer inputs :data:`CAPTURES` keeps (~74 MB each at 8K tokens)."""

TITLE = "Any token: its keys, scores and weights"


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

    def capture(self, tokens: Sequence[str], *, question_length: int = 0,
                answer_positions: Sequence[int] = ()) -> TokenCapture:
        """The :class:`TokenCapture` of the pass, its window's tokens labelled ``tokens``. A window the reader ran
        padded to a longer one's length (in a batch) keeps its own blocks only, as a pass of the window alone has
        them."""
        if not self.hidden or not len(self.hidden) == len(self.packed) == len(self.pack_inputs):
            raise ValueError(f"the pass left {len(self.hidden)} layer inputs and {len(self.packed)} pack outputs: "
                             "run the model once inside capturing()")
        n = -(-len(tokens) // self.block_size) * self.block_size  # the window's tokens padded to whole blocks
        return TokenCapture(self.block_size, tuple(x[:n] for x in self.hidden), tuple(self.packed),
                            self.position_ids[:n], self.key_valid[:n], self.compute_dtype, tuple(tokens),
                            question_length, tuple(int(p) for p in answer_positions), tuple(self.pack_inputs))


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
    weights, ``LittleBirdLayer.attention_weights``) rather than run the window again. A model without LittleBird
    layers keeps nothing."""
    kept = ReadingInputs(budget)
    thread = threading.get_ident()

    def end_pass(module, args, output):
        if threading.get_ident() == thread and kept._pass and not glimpsing():
            logits = getattr(output, "answerable_logits", None)
            kept._end_pass([0.0] * len(kept._pass) if logits is None else logits.float().cpu().tolist())

    hooks = _recording(model, kept._start_pass, None)
    if hooks:
        hooks.append(model.register_forward_hook(end_pass))
    try:
        yield kept
    finally:
        for hook in hooks:
            hook.remove()


def _recording(model: Any, start_pass: Callable[[int], list[LayerInputs]], dtype: torch.dtype | None) -> list:
    """Forward hooks on ``model``'s LittleBird layers that fill, as each layer starts and packs in this thread,
    the LayerInputs ``start_pass(batch size)`` gives for the pass's first rows when its first layer starts."""
    layers = _attention_layers(model)
    thread = threading.get_ident()
    rows: list[LayerInputs] = []

    def take_input(layer, args):
        if threading.get_ident() != thread or glimpsing():  # glimpses are not windows read
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
        if threading.get_ident() == thread and not glimpsing():
            for row, inputs in enumerate(rows):
                inputs._take_pack(output[row])

    hooks = [layer.register_forward_pre_hook(take_input) for layer in layers]
    return hooks + [layer.pack_attention.output.register_forward_hook(take_pack) for layer in layers]


def layer_weights(capture: TokenCapture, model: Any) -> Iterator[Any]:
    """Each layer's attention weights (``LittleBirdAttentions``, local, global and packed in float16) rebuilt from
    the layer inputs ``capture`` holds with ``model``'s own layers, one layer at a time: what the window's pass
    made, without its outputs or feed-forwards (``LittleBirdLayer.attention_weights``)."""
    layers = _attention_layers(model)
    device, dtype = model_device(model), capture.compute_dtype
    with torch.inference_mode():
        geometry = build_block_geometry(capture.position_ids[None].to(device), capture.key_valid[None].to(device),
                                        capture.block_size, dtype)
    for layer, x, p, c_p in zip(layers, capture.hidden, capture.pack_inputs, capture.packed):
        with torch.inference_mode(), attention_weights_dtype(torch.float16):
            weights = layer.attention_weights(x[None].to(device, dtype), p[None].to(device, dtype),
                                              c_p[None].to(device, dtype), geometry)
        yield replace(weights, length=capture.n_tokens)


@dataclass(frozen=True)
class TokenKeys:
    """One token's keys in one layer and head, in the model's order: the pack slots, then the tokens of
    block 0 and of its sliding window, by position. Each score is ``content + bias``; ``weight`` is their
    softmax over these keys, the attention the token paid them."""

    layer: int
    head: int
    token: int
    text: str  # the token's text
    n_tokens: int  # tokens of the window
    block_size: int
    slots: int  # the first ``slots`` keys are the pack slots C_P
    positions: np.ndarray  # (K,) int: slot number for the pack slots, then the window token of each key
    labels: tuple[str, ...]  # (K,) each key's text
    content: np.ndarray  # (K,) float32: q·k/√d
    bias: np.ndarray  # (K,) float32: -D_P for a slot, -D (BiALiBi, eq. 3.1) for a token
    weight: np.ndarray  # (K,) float32

    @property
    def score(self) -> np.ndarray:
        """The logit each key got: content + bias."""
        return self.content + self.bias

    def groups(self) -> list[tuple[str, str, int, int]]:
        """(kind, name, first, last + 1) of the keys' runs, kind "pack", "block0" or "window": the pack
        slots, block 0 where it is no neighbour of the token's block, and the blocks of its sliding window."""
        q = self.token // self.block_size
        last = (self.n_tokens - 1) // self.block_size
        tokens = self.positions[self.slots :]
        window = self.slots + (int(np.sum(tokens < self.block_size)) if q >= 2 else 0)
        runs = [("pack", "pack slots (C_P)", 0, self.slots),
                ("block0", "block 0: [CLS], question", self.slots, window),
                ("window", f"blocks {max(q - 1, 0)}–{min(q + 1, last)}: its window", window, len(self.positions))]
        return [run for run in runs if run[3] > run[2]]


def _key_tokens(capture: TokenCapture, token: int) -> torch.Tensor:
    """The window tokens that ``token`` may read, by position: block 0, then blocks q-1, q, q+1, no padding."""
    b = capture.block_size
    n_padded = capture.position_ids.numel()
    q = token // b
    window = torch.arange(max(q - 1, 0) * b, min((q + 2) * b, n_padded))
    keys = torch.cat([torch.arange(b), window]).unique()  # sorted; block 0 once where it is in the window
    return keys[capture.key_valid[keys]]


def token_keys(capture: TokenCapture, model: Any, *, layer: int, head: int, token: int) -> TokenKeys:
    """Token ``token``'s keys in ``layer`` and ``head``, each score split into content and bias.

    The scores are computed with ``model``'s own query and key projections and BiALiBi slopes, from the
    layer's input and C_P in ``capture`` (which ``model`` left). Out-of-range numbers are clamped.
    """
    layer = min(max(int(layer), 0), capture.num_layers - 1)
    module = _attention_layers(model)[layer]
    att, bialibi = module.attention, module.bialibi
    head = min(max(int(head), 0), att.num_heads - 1)
    token = min(max(int(token), 0), capture.n_tokens - 1)
    keys = _key_tokens(capture, token)
    weight = att.query.weight
    x = capture.hidden[layer]
    with torch.inference_mode():
        rows = x[torch.cat([torch.tensor([token]), keys])].to(weight.device, capture.compute_dtype).unsqueeze(0)
        c_p = capture.packed[layer].to(weight.device, capture.compute_dtype).unsqueeze(0)  # (1, s, H)
        q = att.split_heads(att.query(rows[:, :1]))[0, head]  # (1, d)
        k = att.split_heads(att.key(rows[:, 1:]))[0, head]  # (K_x, d)
        packed_k = att.split_heads(att.key(c_p))[0, head]  # (s, d)
        q = q * (1.0 / math.sqrt(q.shape[-1]))  # as usw_attention_blocked scales it
        content = torch.cat([q @ packed_k.T, q @ k.T], dim=-1)[0].float()  # (s + K_x,)
        positions = capture.position_ids
        one = lambda t: t.view(1, 1, -1)  # noqa: E731  (B = 1, one block, its queries or keys)
        left, right, cls = pair_terms(one(positions[token : token + 1]), one(torch.tensor([token])),
                                      one(positions[keys]), one(keys), torch.float32)
        terms = (t.to(bialibi.alpha.device) for t in (left, right, cls))
        distance = bialibi.distance_bias(*terms)[0, head, 0, 0].float()  # D (K_x,)
        pack = bialibi.pack_bias(capture.block_size)[head].float().expand(packed_k.shape[0])  # D_P (s,)
        bias = -torch.cat([pack, distance])
        probability = torch.softmax(content + bias.to(content.device), dim=-1)
    slots = packed_k.shape[0]
    return TokenKeys(
        layer=layer, head=head, token=token, text=capture.tokens[token], n_tokens=capture.n_tokens,
        block_size=capture.block_size, slots=slots,
        positions=np.concatenate([np.arange(slots), keys.numpy()]),
        labels=tuple(f"slot {i}" for i in range(slots)) + tuple(capture.tokens[j] for j in keys.tolist()),
        content=content.cpu().numpy(), bias=bias.cpu().numpy(), weight=probability.float().cpu().numpy(),
    )  # fmt: skip


def window_tokens(window: Any, text: str) -> list[str]:
    """The text of each token of a ``littlebird.reader.WindowAttention`` in ``text``; for the special and
    question tokens, which have no span there, the tokenizer's piece without SentencePiece's word mark."""
    return [piece.replace("▁", " ").strip() or piece if start < 0 else text[start:end]
            for piece, (start, end) in zip(window.tokens, window.token_spans)]


# ----------------------------------------------------------------------------------
# The figure: TokenKeys -> plotly
# ----------------------------------------------------------------------------------

_CONTENT, _BIAS, _SCORE, _WEIGHT = "#1f77b4", "#ff7f0e", "#222222", "#2ca02c"
_GROUP_SHADES = {"pack": "rgba(148,103,189,0.10)", "block0": "rgba(255,201,77,0.20)", "window": "rgba(31,119,180,0.07)"}
MAX_TICKS = 64
"""Most key labels written under the axis; the others show on hover."""


def _short(text: str) -> str:
    """A key's text for a label: whitespace shown as '·', at most LABEL_CHARS characters."""
    text = " ".join(text.split()) or "·"
    return text[:LABEL_CHARS] + ("…" if len(text) > LABEL_CHARS else "")


def token_figure(keys: TokenKeys) -> go.Figure:
    """The token's keys in order (pack slots, block 0, its window): on top, each key's score as the
    content term q·k/√d and BiALiBi's term stacked (the dot is their sum, the logit); below, the weight
    the softmax gave it."""
    x = np.arange(len(keys.labels))
    where = [f"slot {p}" if i < keys.slots else f"token {p}" for i, p in enumerate(keys.positions.tolist())]
    hover = [f"{w}: “{_short(label)}”" for w, label in zip(where, keys.labels)]
    custom = np.stack([keys.content, keys.bias, keys.score, keys.weight], axis=-1).astype(np.float32)
    template = ("%{hovertext}<br>content q·k/√d %{customdata[0]:.3f}<br>BiALiBi %{customdata[1]:.3f}"
                "<br>score %{customdata[2]:.3f}<br>weight %{customdata[3]:.4f}<extra></extra>")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.6, 0.4])
    common = {"x": x, "hovertext": hover, "customdata": custom, "hovertemplate": template}
    fig.add_trace(go.Bar(y=keys.content, name="content q·k/√d", marker={"color": _CONTENT}, **common), row=1, col=1)
    fig.add_trace(go.Bar(y=keys.bias, name="BiALiBi bias", marker={"color": _BIAS}, **common), row=1, col=1)
    fig.add_trace(go.Scatter(y=keys.score, name="score (logit)", mode="markers", marker={"color": _SCORE, "size": 4},
                             **common), row=1, col=1)  # fmt: skip
    fig.add_trace(go.Bar(y=keys.weight, name="weight", marker={"color": _WEIGHT}, **common), row=2, col=1)
    for kind, name, first, end in keys.groups():
        for row in (1, 2):
            fig.add_vrect(x0=first - 0.5, x1=end - 0.5, fillcolor=_GROUP_SHADES[kind], line={"width": 0}, layer="below",
                          row=row, col=1)
        fig.add_annotation(x=(first + end - 1) / 2, y=1.0, xref="x", yref="paper", yanchor="bottom", text=name,
                           showarrow=False, font={"size": 10})
    step = max(1, math.ceil(len(x) / MAX_TICKS))
    fig.update_xaxes(tickvals=x[::step].tolist(), ticktext=[_short(keys.labels[i])[:12] for i in x[::step]],
                     tickangle=-90, tickfont={"size": 8}, row=2, col=1)
    fig.update_yaxes(title_text="score", row=1, col=1)
    fig.update_yaxes(title_text="weight", rangemode="tozero", row=2, col=1)
    fig.update_layout(barmode="relative", bargap=0.1,
                      legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.13, "yanchor": "bottom"})
    title = (f"Token {keys.token} “{_short(keys.text)}”: its {len(x)} keys, layer {keys.layer} head {keys.head}")
    fig = _layout(fig, title, height=500)
    fig.update_layout(margin={"l": 60, "r": 20, "t": 80, "b": 70})
    return fig


def token_message(message: str) -> go.Figure:
    """The view with nothing to draw, saying why."""
    return _message_figure(TITLE, message)


# ----------------------------------------------------------------------------------
# The windows kept
# ----------------------------------------------------------------------------------


def capture_key(target: "ExplorerTarget") -> tuple:
    """What makes a window's capture: the checkpoint, the question, the document, the window, its length."""
    document = target.document
    return (target.checkpoint, target.question, len(document.model_text), hash(document.model_text),
            target.document_start, target.max_length)


class CaptureCache:
    """The last ``size`` windows' :class:`TokenCapture`, least recently used dropped first; shared by the
    page's sessions (their explorers mostly show the same few windows) and safe across threads."""

    def __init__(self, size: int = MAX_WINDOWS) -> None:
        self.size = size
        self._captures: OrderedDict[tuple, TokenCapture] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> TokenCapture | None:
        with self._lock:
            capture = self._captures.get(key)
            if capture is not None:
                self._captures.move_to_end(key)
            return capture

    def put(self, key: tuple, capture: TokenCapture) -> None:
        with self._lock:
            self._captures[key] = capture
            self._captures.move_to_end(key)
            while len(self._captures) > self.size:
                self._captures.popitem(last=False)

    def forget(self, key: tuple | None) -> None:
        """Let ``key``'s window go, if held."""
        with self._lock:
            self._captures.pop(key, None)

    def __len__(self) -> int:
        return len(self._captures)

    def clear(self) -> None:
        with self._lock:
            self._captures.clear()


CAPTURES = CaptureCache()
"""The windows the explorer opened last, for :func:`token_keys`."""
