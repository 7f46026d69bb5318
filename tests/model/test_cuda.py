"""LittleBird on a CUDA device: both attention backends against the dense reference, and a bf16 training step.

Skipped where no GPU is present (CI and the 2-core machines); a machine with a GPU runs it (`python -m pytest -m cuda`).
FlexAttention needs head dimensions of at least 16 there, hence hidden 64 over 4 heads.
"""

import pytest
import torch

from tests.support.models import tiny_qa_model, with_backend

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]
SIZES = dict(hidden_size=64, intermediate_size=128)


def encoder(backend, seed=10):
    return with_backend(tiny_qa_model(seed=seed, **SIZES), backend).littlebird.cuda().eval()


@pytest.mark.parametrize("backend", ["blocked", "flex"])
@pytest.mark.parametrize("n", [200, 1000])
def test_backend_matches_the_dense_reference_on_cuda(dense_reference, backend, n):
    ids = torch.randint(3, 300, (2, n), device="cuda")
    mask = torch.ones(2, n, dtype=torch.long, device="cuda")
    mask[1, 3 * n // 4 :] = 0
    with torch.no_grad():
        reference = encoder(dense_reference)(ids, attention_mask=mask).last_hidden_state
        fast = encoder(backend)(ids, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(fast[0], reference[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fast[1, : 3 * n // 4], reference[1, : 3 * n // 4], atol=1e-5, rtol=1e-5)


def test_a_bf16_training_step_on_cuda_moves_every_part():
    model = tiny_qa_model(seed=6, **SIZES).cuda().train()
    ids = torch.randint(3, 300, (3, 300), device="cuda")
    starts, ends = torch.tensor([5, 0, 270], device="cuda"), torch.tensor([9, 0, 280], device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(ids, start_positions=starts, end_positions=ends)
    assert out.loss.isfinite()
    out.loss.backward()
    for name in (
        "qa_head.start.weight",
        "qa_head.answerable.weight",
        "littlebird.encoder.layer.0.bialibi.beta",
        "littlebird.encoder.layer.1.bialibi.alpha",
        "littlebird.encoder.pack_embeddings",
    ):
        grad = model.get_parameter(name).grad
        assert grad is not None and grad.isfinite().all() and grad.abs().sum() > 0, name
