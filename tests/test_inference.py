"""CPU inference modes: same answers as fp32 within the precision of the mode."""

import pytest
import torch

from littlebird.inference import BF16Linear, optimize_for_cpu, resolve_cpu_mode
from tests.littlebird_factories import tiny_qa_model


@pytest.mark.parametrize("mode, tolerance", [("fp32", 0.0), ("bf16-linear", 0.1), ("int8", 0.2)])
def test_modes_stay_close_to_fp32(mode, tolerance):
    model = tiny_qa_model(seed=3)
    ids = torch.randint(3, 300, (2, 180))
    with torch.no_grad():
        reference = model(ids)
        fast = optimize_for_cpu(model, mode)(ids)
    error = (fast.start_logits - reference.start_logits).abs().max()
    assert error <= tolerance, error


def test_bf16_mode_replaces_every_linear_and_leaves_the_original_alone():
    model = tiny_qa_model(seed=4)
    fast = optimize_for_cpu(model, "bf16-linear")
    assert not any(isinstance(m, torch.nn.Linear) for m in fast.modules())
    assert any(isinstance(m, BF16Linear) for m in fast.modules())
    assert any(isinstance(m, torch.nn.Linear) for m in model.modules())
    assert fast.qa_head.start.weight.dtype == torch.bfloat16


def test_auto_resolves_to_a_concrete_mode_and_bad_modes_are_refused():
    assert resolve_cpu_mode("auto") in ("bf16-linear", "int8")
    with pytest.raises(ValueError, match="mode must be one of"):
        resolve_cpu_mode("fp8")
