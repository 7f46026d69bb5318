import sys; sys.path.insert(0, "experiments/window-screening")
import numpy as np, torch
from analyse import answer, shipped_read, contexts, bootstrap, logits_of
from littlebird.checkpoint import load_tokenizer
from littlebird.reader import encode_text, stop_reason
from littlebird.evaluation import best_scores, metric_language

name, spath, key = sys.argv[1], sys.argv[2], sys.argv[3]
rows = torch.load(f"runs/cascade/f-dev-{name}.pt", weights_only=False)
st = torch.load(spath, weights_only=False)
get = (lambda r: st[r["id"]][int(key)]) if key != "answerable" else (lambda r: st[r["id"]]["answerable"])
ctx = contexts(f"runs/dev/dev-{name}.json"); tok = load_tokenizer("assets/littlebird-qa"); enc = {}
f1 = {}; reads = {}; top1 = {"bm25": [], "full": [], "ranker": []}
for row in rows:
    text = ctx[row["id"]]
    if text not in enc:
        enc[text] = encode_text(text, tok).spans
    spans, lang = enc[text], metric_language(row["question"])
    s = get(row); order = np.argsort(-s, kind="stable")
    ch = {"shipped": shipped_read(row)}
    for k in (1, 2, 3):
        ch[f"R{k}"] = order[:k].tolist()
    seq = order[:3].tolist(); read = [seq[0]]
    for nxt in seq[1:]:
        if stop_reason(logits_of(row, read), 0.9, 0.05) if len(read) >= 2 else False:
            break
        read.append(nxt)
    ch["R3-stop"] = read
    m = len(row["starts"])
    ch["R2>4"] = shipped_read(row) if m <= 4 else order[:2].tolist()
    ch["R1>4"] = shipped_read(row) if m <= 4 else order[:1].tolist()
    ch["R3>4"] = shipped_read(row) if m <= 4 else order[:3].tolist()
    for k, idx in ch.items():
        f1.setdefault(k, []).append(best_scores(answer(row, idx, text, spans), row["answers"], lang)[1])
        reads.setdefault(k, []).append(len(idx))
    if row["gold"].any():
        top1["bm25"].append(row["gold"][0]); top1["full"].append(row["gold"][int(np.argmax(row["answerable"]))])
        top1["ranker"].append(row["gold"][int(order[0])])
base = np.array(f1["shipped"])
print(f"{name} {spath} {key}: {len(rows)} questions")
for k, v in f1.items():
    d = np.array(v) - base; lo, hi = bootstrap(d)
    print(f"  {k:8s} full reads {np.mean(reads[k]):4.2f} F1 {100 * np.mean(v):5.1f} vs shipped {100 * d.mean():+5.1f} ({100 * lo:+.1f}, {100 * hi:+.1f})")
print("  top-1 gold:", {k: f"{100 * np.mean(v):.1f}" for k, v in top1.items()})
