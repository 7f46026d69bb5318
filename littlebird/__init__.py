"""LittleBird: a long-input encoder for question answering (Lee et al., 2022) as a transformers model.

Importing the package registers the model with ``AutoConfig``, ``AutoModel`` and
``AutoModelForQuestionAnswering``.
"""

from transformers import AutoConfig, AutoModel, AutoModelForQuestionAnswering

from .configuration_littlebird import LittleBirdConfig
from .modeling_littlebird import (
    BiALiBi,
    LittleBirdAttentions,
    LittleBirdForQuestionAnswering,
    LittleBirdModel,
    LittleBirdPreTrainedModel,
    LittleBirdQuestionAnsweringOutput,
    alibi_slopes,
)

AutoConfig.register(LittleBirdConfig.model_type, LittleBirdConfig, exist_ok=True)
AutoModel.register(LittleBirdConfig, LittleBirdModel, exist_ok=True)
AutoModelForQuestionAnswering.register(LittleBirdConfig, LittleBirdForQuestionAnswering, exist_ok=True)

__all__ = [
    "BiALiBi",
    "LittleBirdAttentions",
    "LittleBirdConfig",
    "LittleBirdForQuestionAnswering",
    "LittleBirdModel",
    "LittleBirdPreTrainedModel",
    "LittleBirdQuestionAnsweringOutput",
    "alibi_slopes",
]
