"""First run of LittleBird on CUDA: blocked and flex backends against the dense reference (fp32), then
forward latency of both at e5-small sizes (bf16), ratio against blocked measured in the same run."""
import os
import sys
import time

import torch

sys.path.insert(0, os.getcwd())
from littlebird.reference import register_dense_reference  # noqa: E402
from tests.littlebird_factories import tiny_qa_model, with_backend as backend  # noqa: E402

dev = os.environ.get("DEV", "cuda")
ref = register_dense_reference()


print(torch.__version__, torch.cuda.get_device_name() if dev == "cuda" else "cpu", flush=True)
for n in (200, 1000):
    ids = torch.randint(3, 300, (2, n), device=dev)
    mask = torch.ones(2, n, dtype=torch.long, device=dev)
    mask[1, 3 * n // 4:] = 0
    outs = {}
    for name in ("blocked", ref, "flex"):
        model = backend(tiny_qa_model(seed=10, hidden_size=64, intermediate_size=128), name).littlebird.to(dev).eval()
        with torch.no_grad():
            outs[name] = model(ids, attention_mask=mask).last_hidden_state
    for name in ("blocked", "flex"):
        d0 = (outs[name][0] - outs[ref][0]).abs().max().item()
        d1 = (outs[name][1, :3 * n // 4] - outs[ref][1, :3 * n // 4]).abs().max().item()
        print(f"fp32 n={n} {name} vs dense reference: max abs diff {max(d0, d1):.2e}", flush=True)

lengths = [int(x) for x in os.environ.get("LENGTHS", "4096 16384").split()]
print("length backend ms/forward(bf16, batch 1, e5-small sizes) ratio-vs-blocked", flush=True)
for n in lengths:
    times = {}
    for name in ("blocked", "flex"):
        model = backend(tiny_qa_model(seed=1, hidden_size=384, num_hidden_layers=12, num_attention_heads=12,
                                      intermediate_size=1536, block_size=64, pack_size=64), name)
        model = model.littlebird.to(dev, torch.bfloat16).eval()
        ids = torch.randint(3, 300, (1, n), device=dev)
        with torch.no_grad():
            for _ in range(2):
                model(ids)
            if dev == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(5):
                model(ids)
            if dev == "cuda":
                torch.cuda.synchronize()
        times[name] = (time.perf_counter() - start) / 5 * 1000
        print(f"{n} {name} {times[name]:.1f} {times[name] / times['blocked']:.2f}", flush=True)
