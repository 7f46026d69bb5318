"""Replay the reader's choice among glimpsed windows (littlebird.window_ranking.glimpse_choice with the shipped or
given weights) on dev files' full reads (collect.py ... full) and glimpses (glimpse.py): the windows with the best
choice scores read in full, at most K, under the shipped stop rule, against the shipped reader, paired.

    python experiments/window-screening/sim_choice.py en-article,ko-article,ko-long [w1,w2,...]
"""

import sys

sys.path.insert(0, "experiments/window-screening")
import numpy as np
import torch
from analyse import answer, bootstrap, contexts, logits_of, shipped_read

from littlebird.checkpoint import load_tokenizer
from littlebird.evaluation import best_scores, metric_language
from littlebird.reader import (
    DEFAULT_GIVE_UP_BELOW,
    DEFAULT_STOP_CONFIDENCE,
    GLIMPSE_ABOVE,
    MIN_WINDOWS_BEFORE_STOP,
    encode_text,
    stop_reason,
)
from littlebird.window_ranking import glimpse_choice

weights = None if len(sys.argv) < 3 else [float(x) for x in sys.argv[2].split(",")]
tok = load_tokenizer("assets/littlebird-qa")
for name in sys.argv[1].split(","):
    rows = torch.load(f"runs/cascade/f-dev-{name}.pt", weights_only=False)
    glimpses = torch.load(f"runs/cascade/g-{name}.pt", weights_only=False)
    ctx, enc, f1, reads, first = contexts(f"runs/dev/dev-{name}.json"), {}, {}, {}, []
    for row in rows:
        text = ctx[row["id"]]
        if text not in enc:
            enc[text] = encode_text(text, tok).spans
        m = len(row["starts"])
        order = list(range(m))
        if m > GLIMPSE_ABOVE:
            s = glimpse_choice(
                glimpses[row["id"]][128], row["lexical"] / max(float(np.max(row["lexical"])), 1e-9), weights
            )
            order = [int(i) for i in np.argsort(-s, kind="stable")]
            if row["gold"].any():
                first.append(row["gold"][order[0]])
        choices = {"shipped": shipped_read(row)}
        for K in (2, 3, 4):
            read = order[:MIN_WINDOWS_BEFORE_STOP]
            for nxt in order[MIN_WINDOWS_BEFORE_STOP:K]:
                if stop_reason(logits_of(row, read), DEFAULT_STOP_CONFIDENCE, DEFAULT_GIVE_UP_BELOW) is not None:
                    break
                read.append(nxt)
            choices[f"keep {K}"] = shipped_read(row) if m <= GLIMPSE_ABOVE else read
        for k, idx in choices.items():
            f1.setdefault(k, []).append(
                best_scores(answer(row, idx, text, enc[text]), row["answers"], metric_language(row["question"]))[1]
            )
            reads.setdefault(k, []).append(len(idx))
    base = np.array(f1["shipped"])
    print(
        f"{name}: {len(rows)} questions; gold window chosen first {100 * np.mean(first):.1f}% of {len(first)} glimpsed"
    )
    for k, v in f1.items():
        d = np.array(v) - base
        lo, hi = bootstrap(d)
        print(
            f"  {k:8s} full reads {np.mean(reads[k]):4.2f} F1 {100 * np.mean(v):5.1f} "
            f"vs shipped {100 * d.mean():+5.1f} ({100 * lo:+.1f}, {100 * hi:+.1f})"
        )
