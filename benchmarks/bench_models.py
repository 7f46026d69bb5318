"""Latency and peak memory of LittleBird against HF BigBird, HF Longformer and dense BERT (SDPA).

All four share hidden size, layers and heads; batch 1, inference, random weights (speed does not
depend on them). Each (model, length) runs in a fresh subprocess so peak memory is its own: peak
RSS growth over the forwards on CPU, ``torch.cuda.max_memory_allocated`` growth on CUDA.

The bigbird and longformer rows also measure issue 6's conversions of e5 (``littlebird.baselines``):
BigBird + TAPER is this BigBird (block-sparse, 64-token blocks, 3 random blocks) and Longformer with
copied positions is this Longformer (512-token windows). TAPER and copying only choose the values of
the position embeddings, which time and memory do not depend on, so they need no rows of their own;
all four models use e5's (erf) GELU. ``--hidden 384 --layers 12 --heads 12`` gives e5-small's sizes,
which the conversions keep (or fewer layers). Longformer's first 64 tokens get global attention, as
the question does in the app.

    python benchmarks/bench_models.py                       # the issue's table (~6 min on 2 cores)
    python benchmarks/bench_models.py --lengths 1024 2048 --repeats 2 --models littlebird dense

Ratios are against LittleBird measured in the same run: a "speed-up" column is other / LittleBird.
The machines are shared and noise only ever adds time, so the rounds are interleaved (every model
at one length, then the next round) and the table reports the best round with the spread beside it.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("littlebird", "bigbird", "longformer", "dense")


def build_model(name: str, args, max_length: int):
    """A randomly initialised encoder of the requested family."""
    import torch
    from transformers import BertConfig, BertModel, BigBirdConfig, BigBirdModel, LongformerConfig, LongformerModel

    sizes = dict(
        vocab_size=30000,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=4 * args.hidden,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        hidden_act="gelu",
    )
    if name == "littlebird":
        from littlebird import LittleBirdConfig, LittleBirdModel

        return LittleBirdModel(LittleBirdConfig(**sizes, block_size=64, pack_size=64))
    if name == "bigbird":
        config = BigBirdConfig(
            **sizes,
            attention_type="block_sparse",
            block_size=64,
            num_random_blocks=3,
            max_position_embeddings=max_length + 64,
        )
        return BigBirdModel(config)
    if name == "longformer":
        config = LongformerConfig(
            **sizes, attention_window=512, max_position_embeddings=max_length + 64, pad_token_id=1
        )
        return LongformerModel(config)
    if name == "dense":
        config = BertConfig(**sizes, max_position_embeddings=max_length + 64)
        return BertModel(config, add_pooling_layer=False).to(torch.float32)
    raise ValueError(f"unknown model {name!r}; choose from {MODELS}")


def peak_rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def current_rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def reset_peak_rss():
    """Linux resets VmHWM to the current RSS when 5 is written to clear_refs."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def measure_one(name: str, length: int, args) -> dict:
    """Time ``args.repeats`` forwards after one warm-up; report median, spread and peak memory growth."""
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    model = build_model(name, args, length).to(device=device, dtype=dtype).eval()
    ids = torch.randint(5, 30000, (1, length), device=device)
    kwargs = {}
    if name == "longformer":
        global_mask = torch.zeros_like(ids)
        global_mask[:, :64] = 1
        kwargs["global_attention_mask"] = global_mask

    def forward():
        with torch.inference_mode():
            model(ids, **kwargs)
        if device.type == "cuda":
            torch.cuda.synchronize()

    # The baseline is taken before the first forward: the allocator keeps what the warm-up freed,
    # so a baseline after it would hide the forward's working set.
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        reset_peak_rss()
        base = current_rss_bytes()
    forward()  # warm-up: allocator, kernels, lazy inits
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        forward()
        times.append(time.perf_counter() - start)
    peak = (torch.cuda.max_memory_allocated() if device.type == "cuda" else peak_rss_bytes()) - base
    return {
        "model": name,
        "length": length,
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "peak_mb": max(peak, 0) / 2**20,
    }


def run_in_subprocess(name: str, length: int, args) -> dict:
    command = [sys.executable, __file__, "--one", name, str(length)] + forwarded_flags(args)
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if result.returncode != 0:
        return {"model": name, "length": length, "error": result.stderr.strip().splitlines()[-1:]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def forwarded_flags(args) -> list:
    return [
        "--hidden",
        str(args.hidden),
        "--layers",
        str(args.layers),
        "--heads",
        str(args.heads),
        "--repeats",
        str(args.repeats),
        "--threads",
        str(args.threads),
        "--device",
        args.device,
        "--dtype",
        args.dtype,
    ]


def best_of(rounds: list, model: str, length: int) -> dict:
    """The fastest round of one (model, length), with the spread over all rounds and the least memory."""
    ok = [r for r in rounds if r["model"] == model and r["length"] == length and "median_s" in r]
    if not ok:
        return {"model": model, "length": length, "error": "every round failed"}
    return {
        "model": model,
        "length": length,
        "median_s": min(r["min_s"] for r in ok),
        "min_s": min(r["min_s"] for r in ok),
        "max_s": max(r["max_s"] for r in ok),
        "peak_mb": min(r["peak_mb"] for r in ok),
    }


def print_table(rows: list, lengths: list, models: list):
    by = {(r["model"], r["length"]): r for r in rows}
    print(
        "\n| model | "
        + " | ".join(f"{n // 1024}K s" for n in lengths)
        + " | "
        + " | ".join(f"{n // 1024}K MB" for n in lengths)
        + " |"
    )
    print("|---" * (1 + 2 * len(lengths)) + "|")
    for model in models:
        cells = []
        for n in lengths:
            r = by.get((model, n), {})
            cells.append(f"{r['median_s']:.3f} (-{r['max_s']:.2f})" if "median_s" in r else "error")
        mems = [f"{by[(model, n)]['peak_mb']:.0f}" if "peak_mb" in by.get((model, n), {}) else "-" for n in lengths]
        print(f"| {model} | " + " | ".join(cells) + " | " + " | ".join(mems) + " |")
    print("\nRatios against LittleBird in this run (other / LittleBird; > 1 means LittleBird is better):")
    print(
        "| model | "
        + " | ".join(f"{n // 1024}K time" for n in lengths)
        + " | "
        + " | ".join(f"{n // 1024}K mem" for n in lengths)
        + " |"
    )
    print("|---" * (1 + 2 * len(lengths)) + "|")
    for model in models:
        if model == "littlebird":
            continue
        times, mems = [], []
        for n in lengths:
            lb, other = by.get(("littlebird", n), {}), by.get((model, n), {})
            ok = "median_s" in lb and "median_s" in other
            times.append(f"{other['median_s'] / lb['median_s']:.2f}x" if ok else "-")
            mems.append(f"{other['peak_mb'] / max(lb['peak_mb'], 1):.2f}x" if ok else "-")
        print(f"| {model} | " + " | ".join(times) + " | " + " | ".join(mems) + " |")
    print()
    lb_times = {n: by[("littlebird", n)]["median_s"] for n in lengths if "median_s" in by.get(("littlebird", n), {})}
    hi = max(lb_times, default=None)
    for lo in sorted(lb_times):
        if lo < hi:  # how time grows with length: linear means the ratio equals the length ratio
            print(
                f"LittleBird time({hi // 1024}K) / time({lo // 1024}K) = {lb_times[hi] / lb_times[lo]:.2f} "
                f"(length ratio {hi // lo})"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2, help="timed forwards per process")
    parser.add_argument("--rounds", type=int, default=2, help="processes per (model, length), interleaved")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--json", type=Path, help="also write the raw rows here")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "LENGTH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one[0], int(args.one[1]), args)))
        return
    print(
        f"hidden {args.hidden}, {args.layers} layers, {args.heads} heads, batch 1, {args.dtype}, "
        f"{args.device}, {args.threads} threads; best of {args.rounds} rounds x {args.repeats} forwards after a "
        "warm-up (the slowest in brackets); memory: peak growth over the forwards"
    )
    rounds = []
    for round_index in range(args.rounds):
        for n in args.lengths:
            for model in args.models:
                row = run_in_subprocess(model, n, args)
                rounds.append(row)
                print(json.dumps({"round": round_index, **row}), flush=True)
    rows = [best_of(rounds, model, n) for n in args.lengths for model in args.models]
    print_table(rows, args.lengths, args.models)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
