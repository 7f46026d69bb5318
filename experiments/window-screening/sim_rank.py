import sys

sys.path.insert(0, "experiments/window-screening")
import numpy as np
import torch
from analyse import answer, bootstrap, contexts, logits_of, shipped_read

from littlebird.checkpoint import load_tokenizer
from littlebird.evaluation import best_scores, metric_language
from littlebird.reader import DEFAULT_GIVE_UP_BELOW, DEFAULT_STOP_CONFIDENCE, encode_text, stop_reason

name, spath, key = sys.argv[1], sys.argv[2], sys.argv[3]
rows = torch.load(f"runs/cascade/f-dev-{name}.pt", weights_only=False)
st = torch.load(spath, weights_only=False)
get = (lambda r: st[r["id"]][int(key)]) if key != "answerable" else (lambda r: st[r["id"]]["answerable"])
ctx = contexts(f"runs/dev/dev-{name}.json")
tok = load_tokenizer("assets/littlebird-qa")
enc = {}
f1 = {}
reads = {}
top1 = {"bm25": [], "full": [], "ranker": []}
for row in rows:
    text = ctx[row["id"]]
    if text not in enc:
        enc[text] = encode_text(text, tok).spans
    spans, lang = enc[text], metric_language(row["question"])
    s = get(row)
    if len(sys.argv) > 4:  # "LAM,MU": the glimpse logits plus LAM times the window's BM25 score over the best one's,
        lam, mu = (float(x) for x in sys.argv[4].split(","))  # less MU times its BM25 rank
        lex0 = row["lexical"] / max(float(np.max(row["lexical"])), 1e-9) if row["lexical"] is not None else 0.0
        s = s + lam * lex0 - mu * np.arange(len(s))
    order = np.argsort(-s, kind="stable")
    ch = {"shipped": shipped_read(row)}
    for k in (1, 2, 3):
        ch[f"R{k}"] = order[:k].tolist()
    seq = order[:3].tolist()
    read = [seq[0]]
    for nxt in seq[1:]:
        if (
            stop_reason(logits_of(row, read), DEFAULT_STOP_CONFIDENCE, DEFAULT_GIVE_UP_BELOW)
            if len(read) >= 2
            else False
        ):
            break
        read.append(nxt)
    ch["R3-stop"] = read
    m = len(row["starts"])
    ch["R2>4"] = shipped_read(row) if m <= 4 else order[:2].tolist()
    ch["R1>4"] = shipped_read(row) if m <= 4 else order[:1].tolist()
    ch["R3>4"] = shipped_read(row) if m <= 4 else order[:3].tolist()
    # BM25's best window always in full, beside the likeliest glimpse of the others
    ch["B1+G1>4"] = shipped_read(row) if m <= 4 else [0, next(int(i) for i in order if i != 0)]
    # BM25's best two in full, then the likeliest glimpses of the others; "s": only where the two do not stop the reader
    rest = [int(i) for i in order if i > 1]
    stops = m > 4 and stop_reason(logits_of(row, [0, 1]), DEFAULT_STOP_CONFIDENCE, DEFAULT_GIVE_UP_BELOW) is not None
    ch["B2+G1>4"] = shipped_read(row) if m <= 4 else [0, 1] + rest[:1]
    ch["B1+G2>4"] = shipped_read(row) if m <= 4 else [0] + [int(i) for i in order if i != 0][:2]
    ch["B2s+G1>4"] = shipped_read(row) if m <= 4 else [0, 1] + ([] if stops else rest[:1])
    ch["B2s+G2>4"] = shipped_read(row) if m <= 4 else [0, 1] + ([] if stops else rest[:2])
    # windows in a sequence merged from BM25's order (B) and the glimpses' (G), read in turn under the shipped
    # stop rule, at most K in full
    bm = list(range(m))
    gl = [int(i) for i in order]
    for name_, pattern in (("BGBG", "BGBG"), ("GBGB", "GBGB"), ("BBGG", "BBGG"), ("GGBB", "GGBB"), ("GBBG", "GBBG")):
        seq = []
        its = {"B": iter(bm), "G": iter(gl)}
        for c in pattern * 3:
            for w in its[c]:
                if w not in seq:
                    seq.append(w)
                    break
        for K in (3, 4):
            read = seq[:2]
            for nxt in seq[2:K]:
                if stop_reason(logits_of(row, read), DEFAULT_STOP_CONFIDENCE, DEFAULT_GIVE_UP_BELOW) is not None:
                    break
                read.append(nxt)
            ch[f"{name_}{K}>4"] = shipped_read(row) if m <= 4 else read
    # a lexical prior on the glimpse logits: BM25 score over the best window's, times lam
    lex = row["lexical"] / max(float(np.max(row["lexical"])), 1e-9) if row["lexical"] is not None else np.zeros(m)
    for lam in (1, 2, 4, 8):
        ch[f"lex{lam}>4"] = shipped_read(row) if m <= 4 else np.argsort(-(s + lam * lex), kind="stable")[:2].tolist()
    for k, idx in ch.items():
        f1.setdefault(k, []).append(best_scores(answer(row, idx, text, spans), row["answers"], lang)[1])
        reads.setdefault(k, []).append(len(idx))
    if row["gold"].any():
        top1["bm25"].append(row["gold"][0])
        top1["full"].append(row["gold"][int(np.argmax(row["answerable"]))])
        top1["ranker"].append(row["gold"][int(order[0])])
base = np.array(f1["shipped"])
print(f"{name} {spath} {key}: {len(rows)} questions")
for k, v in f1.items():
    d = np.array(v) - base
    lo, hi = bootstrap(d)
    print(
        f"  {k:8s} full reads {np.mean(reads[k]):4.2f} F1 {100 * np.mean(v):5.1f} vs shipped {100 * d.mean():+5.1f} "
        f"({100 * lo:+.1f}, {100 * hi:+.1f})"
    )
print("  top-1 gold:", {k: f"{100 * np.mean(v):.1f}" for k, v in top1.items()})
