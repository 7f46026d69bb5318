"""Faster CPU inference: the matrix products in bfloat16 or int8, everything else in fp32.

On CPUs with native bf16 matrix units (AMX, AVX512-BF16) a bf16 GEMM is several times faster
than fp32, while bf16 *elementwise* kernels (softmax inputs, bias terms, LayerNorm) are slower
than fp32 ones. So the whole model in bf16 is no faster; only its linear layers in bf16 are.
Where bf16 is emulated, dynamic int8 quantization of the linear layers is the lever instead.
``benchmarks/bench_pipeline.py`` measures each mode.
"""

import copy

import torch
import torch.nn.functional as F
from torch import nn

CPU_MODES = ("fp32", "bf16-linear", "int8", "auto")


class BF16Linear(nn.Module):
    """An inference-only ``nn.Linear`` whose product runs in bfloat16; fp32 in, fp32 out."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("weight", linear.weight.detach().to(torch.bfloat16))
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().to(torch.bfloat16))

    def forward(self, x):
        return F.linear(x.to(torch.bfloat16), self.weight, self.bias).to(x.dtype)


def cpu_has_native_bf16() -> bool:
    """True where oneDNN runs bf16 GEMMs in hardware (AMX or AVX512-BF16)."""
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return bool(check and check())


def resolve_cpu_mode(mode: str = "auto") -> str:
    """The concrete mode ``auto`` stands for on this CPU."""
    if mode not in CPU_MODES:
        raise ValueError(f"mode must be one of {CPU_MODES}, got {mode!r}")
    if mode == "auto":
        return "bf16-linear" if cpu_has_native_bf16() else "int8"
    return mode


def optimize_for_cpu(model: nn.Module, mode: str = "auto", *, inplace: bool = False) -> nn.Module:
    """An inference copy of ``model`` (fp32, on CPU) with its linear layers in bf16 or int8.

    ``mode``: ``"fp32"`` (unchanged), ``"bf16-linear"``, ``"int8"`` (dynamic quantization) or
    ``"auto"`` (bf16 where the CPU has it natively, else int8). The result is in eval mode.
    """
    mode = resolve_cpu_mode(mode)
    model = model if inplace else copy.deepcopy(model)
    model = model.float().cpu().eval()
    if mode == "int8":
        return torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8, inplace=True)
    if mode == "bf16-linear":
        for parent in list(model.modules()):
            for name, child in list(parent.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(parent, name, BF16Linear(child))
    return model
