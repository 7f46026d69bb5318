import sys

sys.path.insert(0, "experiments/window-screening")
import numpy as np
import torch
from analyse import answer, bootstrap, contexts, shipped_read

from littlebird.checkpoint import load_tokenizer
from littlebird.evaluation import best_scores, metric_language
from littlebird.reader import encode_text

name, spath = sys.argv[1], sys.argv[2]
rows = torch.load(f"runs/cascade/f-dev-{name}.pt", weights_only=False)
st = torch.load(spath, weights_only=False)
ctx = contexts(f"runs/dev/dev-{name}.json")
tok = load_tokenizer("assets/littlebird-qa")
enc = {}
f1 = {}
reads = {}
top1 = {"bm25": [], "full": [], "student": [], "student+lex": []}
for row in rows:
    text = ctx[row["id"]]
    if text not in enc:
        enc[text] = encode_text(text, tok).spans
    spans, lang = enc[text], metric_language(row["question"])
    m = len(row["starts"])
    s = st[row["id"]]["answerable"]
    lex = row["lexical"] / max(row["lexical"].max(), 1e-9)
    order = np.argsort(-s, kind="stable")
    order2 = np.argsort(-(s + 2 * lex), kind="stable")
    ch = {
        "shipped": shipped_read(row),
        "S1": order[:1].tolist(),
        "S2": order[:2].tolist(),
        "S3": order[:3].tolist(),
        "S1+bm25": sorted({int(order[0]), 0}),
        "SL1": order2[:1].tolist(),
        "SL2": order2[:2].tolist(),
        "S2-stop": None,
    }
    # read the student's order with the shipped stop rules, at most 2
    from analyse import logits_of

    from littlebird.reader import DEFAULT_GIVE_UP_BELOW, DEFAULT_STOP_CONFIDENCE, stop_reason

    seq = order[:2].tolist()
    read = [seq[0]]
    if len(seq) > 1 and not stop_reason(logits_of(row, read), DEFAULT_STOP_CONFIDENCE, DEFAULT_GIVE_UP_BELOW):
        read.append(seq[1])
    ch["S2-stop"] = read
    for k, idx in ch.items():
        f1.setdefault(k, []).append(best_scores(answer(row, idx, text, spans), row["answers"], lang)[1])
        reads.setdefault(k, []).append(len(idx))
    if row["gold"].any():
        top1["bm25"].append(row["gold"][0])
        top1["full"].append(row["gold"][int(np.argmax(row["answerable"]))])
        top1["student"].append(row["gold"][int(order[0])])
        top1["student+lex"].append(row["gold"][int(order2[0])])
base = np.array(f1["shipped"])
for k, v in f1.items():
    d = np.array(v) - base
    lo, hi = bootstrap(d)
    print(
        f"  {k:8s} full reads {np.mean(reads[k]):4.2f} F1 {100 * np.mean(v):5.1f} vs shipped {100 * d.mean():+5.1f} "
        f"({100 * lo:+.1f}, {100 * hi:+.1f})"
    )
print("  top-1 gold:", {k: f"{100 * np.mean(v):.1f}" for k, v in top1.items()})
