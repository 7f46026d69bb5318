"""CPU inference modes: same answers as fp32 within the precision of the mode."""

import pytest
import torch

from littlebird import inference
from littlebird.inference import BF16Linear, optimize_for_cpu, resolve_cpu_mode
from littlebird.modeling_littlebird import LittleBirdForQuestionAnswering
from tests.support.models import tiny_qa_model


# fp32: a copy of the model, whose kernels may still sum in another order (AVX2 CPUs do for tensors at
# other addresses), so within fp32 rounding rather than bit for bit.
@pytest.mark.parametrize("mode, tolerance", [("fp32", 1e-5), ("bf16-linear", 0.1)])
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


@pytest.mark.parametrize("native_bf16, expected", [(True, "bf16-linear"), (False, "fp32")])
def test_auto_picks_bf16_linear_only_where_the_cpu_has_bf16_units(monkeypatch, native_bf16, expected):
    monkeypatch.setattr(inference, "cpu_has_native_bf16", lambda: native_bf16)
    assert resolve_cpu_mode("auto") == expected
    assert resolve_cpu_mode("fp32") == "fp32" and resolve_cpu_mode("bf16-linear") == "bf16-linear"


# Flags as /proc/cpuinfo lists them (abridged): oneDNN's own check says yes to bf16 on every AVX-512 CPU,
# where the Cascade Lake Xeon emulates it at 2.3 times fp32's time.
CASCADE_LAKE = "fpu sse2 avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni"
SAPPHIRE_RAPIDS = CASCADE_LAKE + " avx512_bf16 amx_bf16 amx_tile amx_int8"
ZEN4 = "fpu sse2 avx avx2 fma avx512f avx512dq avx512bw avx512vl avx512_bf16"
ZEN2 = "fpu sse2 avx avx2 fma sha_ni"


@pytest.mark.parametrize("flags, native", [(CASCADE_LAKE, False), (SAPPHIRE_RAPIDS, True), (ZEN4, True), (ZEN2, False)])
def test_bf16_units_are_read_from_the_cpu_flags_not_from_avx512(monkeypatch, tmp_path, flags, native):
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: True)  # as on any AVX-512 CPU
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: some cpu\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
    assert inference.cpu_has_native_bf16(str(cpuinfo)) is native


@pytest.mark.parametrize("mode", ["fp8", "int8"])  # int8 (deprecated dynamic quantization) was removed
def test_unknown_modes_are_refused(mode):
    with pytest.raises(ValueError, match="mode must be one of"):
        resolve_cpu_mode(mode)


def test_an_fp32_inference_copy_saves_the_same_weights(tmp_path):
    model = tiny_qa_model(seed=5)
    optimize_for_cpu(model, "fp32").save_pretrained(tmp_path)
    loaded = LittleBirdForQuestionAnswering.from_pretrained(tmp_path)
    original, reloaded = model.state_dict(), loaded.state_dict()
    assert original.keys() == reloaded.keys()
    for name, tensor in original.items():
        assert torch.equal(tensor, reloaded[name]), name


def test_a_bf16_linear_model_refuses_to_save_with_a_reason(tmp_path):
    model = tiny_qa_model(seed=5)
    fast = optimize_for_cpu(model, "bf16-linear")
    with pytest.raises(ValueError, match="bf16-linear.*LITTLEBIRD_CPU_MODE=fp32"):
        fast.save_pretrained(tmp_path)
    assert not any(tmp_path.iterdir())
    model.save_pretrained(tmp_path)  # the model it was made from still saves
    assert (tmp_path / "model.safetensors").is_file()


def test_bf16_units_capped_away_by_onednn_are_not_used(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)  # ONEDNN_MAX_CPU_ISA=AVX2
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {SAPPHIRE_RAPIDS}\n")
    assert inference.cpu_has_native_bf16(str(cpuinfo)) is False
