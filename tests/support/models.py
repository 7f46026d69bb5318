"""Small LittleBird models for tests: seeded, random, quick to run."""

import torch

from littlebird import LittleBirdConfig, LittleBirdForQuestionAnswering


def tiny_config(**overrides) -> LittleBirdConfig:
    """A two-layer LittleBird with the paper's b = s = 64 and no dropout."""
    fields = dict(
        vocab_size=300,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        block_size=64,
        pack_size=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    fields.update(overrides)
    return LittleBirdConfig(**fields)


def with_backend(model: LittleBirdForQuestionAnswering, backend: str) -> LittleBirdForQuestionAnswering:
    """``model`` with every layer on the attention backend ``backend`` (a key of USW_ATTENTION_BACKENDS)."""
    for layer in model.littlebird.encoder.layer:
        layer.config.attention_backend = backend
    return model


def tiny_qa_model(seed: int = 0, **overrides) -> LittleBirdForQuestionAnswering:
    """A seeded tiny QA model whose BiALiBi slopes are perturbed so heads differ in every term."""
    torch.manual_seed(seed)
    model = LittleBirdForQuestionAnswering(tiny_config(**overrides)).eval()
    with torch.no_grad():
        for layer in model.littlebird.encoder.layer:
            for p in (layer.bialibi.alpha, layer.bialibi.beta, layer.bialibi.gamma):
                p.add_(torch.rand_like(p) * 0.05)
    return model
