"""Faster CPU inference: the linear layers' products in bfloat16 where the CPU has bf16 units.

On CPUs with native bf16 matrix units (AMX, AVX512-BF16) a bf16 GEMM is several times faster
than fp32, while bf16 *elementwise* kernels (softmax inputs, bias terms, LayerNorm) are slower
than fp32 ones. So the whole model in bf16 is no faster; only its linear layers in bf16 are.
Where bf16 is emulated (AVX2-only CPUs, and AVX-512 ones without AVX512-BF16) it is slower than fp32,
so the model stays fp32.
Dynamic int8 quantization (``torch.ao.quantization``, deprecated) is no mode here: it is no faster
than fp32 on AVX2 and no faster than bf16-linear on AMX.
``benchmarks/bench_pipeline.py`` measures each mode; docs/performance.md and docs/training-log.md hold
the measurements behind these choices.
"""

import copy
import os

import torch
import torch.nn.functional as F
from torch import nn

from .reading_options import CPU_MODES

CPU_MODE_ENVIRONMENT = "LITTLEBIRD_CPU_MODE"  # the mode the app (and, by default, the evaluation) runs in


class BF16Linear(nn.Module):
    """An inference-only ``nn.Linear`` whose product runs in bfloat16; fp32 in, fp32 out."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("weight", linear.weight.detach().to(torch.bfloat16))
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().to(torch.bfloat16))

    def forward(self, x):
        return F.linear(x.to(torch.bfloat16), self.weight, self.bias).to(x.dtype)


def cpu_flags(cpuinfo: str) -> set[str]:
    """The feature flags of the first processor listed in the text of ``/proc/cpuinfo``."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def cpu_has_native_bf16(cpuinfo_path: str = "/proc/cpuinfo") -> bool:
    """True where the CPU multiplies bf16 matrices in hardware (AMX-BF16 or AVX512-BF16).

    oneDNN's own check, ``torch.ops.mkldnn._is_mkldnn_bf16_supported``, also says yes on AVX-512 CPUs
    without bf16 units (Skylake and Cascade Lake Xeons), where it emulates bf16: there a bf16 product
    takes longer than an fp32 one (docs/training-log.md). So on x86 Linux the CPU's flags must list bf16 units
    too; oneDNN's check still has its say, since it honours ``ONEDNN_MAX_CPU_ISA=AVX2`` (how a newer CPU
    shows an AVX2-only one's numbers).
    """
    try:
        with open(cpuinfo_path, encoding="utf-8", errors="replace") as handle:
            flags = cpu_flags(handle.read())
    except OSError:
        flags = set()
    if {"avx2", "avx512f", "sse2"} & flags and not {"avx512_bf16", "amx_bf16"} & flags:
        return False  # an x86 CPU whose flags we have, without bf16 units
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return bool(check and check())


def resolve_cpu_mode(mode: str = "auto") -> str:
    """The concrete mode ``auto`` stands for on this CPU: bf16-linear with bf16 units, else fp32."""
    if mode not in CPU_MODES:
        raise ValueError(f"mode must be one of {CPU_MODES}, got {mode!r}")
    if mode == "auto":
        return "bf16-linear" if cpu_has_native_bf16() else "fp32"
    return mode


def cpu_mode_from_environment(environ=os.environ) -> str:
    """The CPU mode the app loads its models in: ``$LITTLEBIRD_CPU_MODE``, else "auto"."""
    return environ.get(CPU_MODE_ENVIRONMENT, "auto")


def cpu_mode_of(model: nn.Module) -> str:
    """The mode :func:`optimize_for_cpu` left ``model`` in, read from its layers: "bf16-linear" where any linear
    layer is a :class:`BF16Linear`, else "fp32"."""
    return "bf16-linear" if any(isinstance(module, BF16Linear) for module in model.modules()) else "fp32"


def optimize_for_cpu(model: nn.Module, mode: str = "auto", *, inplace: bool = False) -> nn.Module:
    """An inference copy of ``model`` (fp32, on CPU, in eval mode) with its linear layers in ``mode``.

    ``mode``: ``"fp32"`` (unchanged), ``"bf16-linear"`` or ``"auto"`` (bf16-linear where the CPU
    has bf16 units, else fp32). A bf16-linear model refuses ``save_pretrained``: its weights are
    rounded to bf16, so what it would write is not the checkpoint it came from.
    """
    mode = resolve_cpu_mode(mode)
    model = model if inplace else copy.deepcopy(model)
    model = model.float().cpu().eval()
    if mode == "bf16-linear":
        for parent in list(model.modules()):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, name, BF16Linear(child))
        model.save_pretrained = _refuse_to_save  # shadows the class's method on this instance only
    return model


def _refuse_to_save(*args, **kwargs):
    """``save_pretrained`` of a model whose linear layers ``optimize_for_cpu`` rounded to bf16."""
    raise ValueError(
        "This model was converted for CPU inference (bf16-linear: its linear layers hold bfloat16 copies of the "
        "weights), so saving it would not write the checkpoint it came from. Save the model before "
        "littlebird.inference.optimize_for_cpu, or load it with LITTLEBIRD_CPU_MODE=fp32."
    )
