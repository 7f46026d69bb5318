"""More features for the glimpse choice (the glimpses' rank, the likeliest glimpse's lead, glimpse x BM25):
fitted on the training rows (glimpse_rows.py), replayed on dev at K = 3 and 4 full reads.
python ... explore_choice.py 0,1,2"""

import sys

sys.path.insert(0, "experiments/window-screening")
import numpy as np
import torch
from analyse import answer, contexts, logits_of, shipped_read

from littlebird.checkpoint import load_tokenizer
from littlebird.evaluation import best_scores, metric_language
from littlebird.reader import DEFAULT_GIVE_UP_BELOW, DEFAULT_STOP_CONFIDENCE, encode_text, stop_reason
from littlebird.window_ranking import choice_features


def F(g, lex, kind):
    base = choice_features(g, lex)
    if kind == 0:
        return base
    m = len(g)
    grank = np.argsort(np.argsort(-g, kind="stable"), kind="stable")
    first = (np.arange(m) == 0) * 1.0
    extra = [grank / 10, (grank == 0) * 1.0, first * (g[0] - g.max())]
    if kind >= 2:
        extra += [g * lex, (grank == 0) * (g.max() - np.sort(g)[-2])]
    return np.concatenate([base, np.stack(extra, 1)], 1)


def fit(rows, kind, l2=1e-3):
    data = [
        (torch.tensor(F(r["glimpse"], r["lexical"] / r["lexical"].max(), kind)), torch.tensor(r["gold"]))
        for r in rows
        if r["gold"].any() and len(r["starts"]) > 4
    ]
    allx = torch.cat([x for x, _ in data])
    mu, sd = allx.mean(0), allx.std(0) + 1e-6
    w = torch.zeros(allx.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=500, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = 0
        for x, g in data:
            s = (x - mu) / sd @ w
            loss = loss - (torch.logsumexp(s.masked_fill(~g, -1e9), 0) - torch.logsumexp(s, 0))
        loss = loss / len(data) + l2 * (w**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return (w / sd).detach().numpy()


train = [
    r
    for p in ("en-article", "ko-article", "en-long", "ko-long")
    for r in torch.load(f"runs/cascade/gr-train-{p}.pt", weights_only=False)
]
tok = load_tokenizer("assets/littlebird-qa")
dev = {}
for name in ("en-article", "ko-long", "ko-article"):
    rows = torch.load(f"runs/cascade/f-dev-{name}.pt", weights_only=False)
    gl = torch.load(f"runs/cascade/g-{name}.pt", weights_only=False)
    ctx = contexts(f"runs/dev/dev-{name}.json")
    enc = {}
    items = []
    for r in rows:
        t = ctx[r["id"]]
        if t not in enc:
            enc[t] = encode_text(t, tok).spans
        items.append((r, gl[r["id"]][128], t, enc[t]))
    dev[name] = items
cache = {}


def f1(name, r, idx, t, sp):
    k = (r["id"], tuple(idx))
    if k not in cache:
        cache[k] = best_scores(answer(r, idx, t, sp), r["answers"], metric_language(r["question"]))[1]
    return cache[k]


for kind in [int(x) for x in sys.argv[1].split(",")]:
    for l2 in (1e-3, 1e-2):
        w = fit(train, kind, l2)
        out = []
        for name, items in dev.items():
            d3, d4, top = [], [], []
            for r, g, t, sp in items:
                m = len(r["starts"])
                base = f1(name, r, shipped_read(r), t, sp)
                if m <= 4:
                    d3.append(0)
                    d4.append(0)
                    continue
                o = [int(i) for i in np.argsort(-(F(g, r["lexical"] / r["lexical"].max(), kind) @ w), kind="stable")]
                if r["gold"].any():
                    top.append(r["gold"][o[0]])
                for K, d in ((3, d3), (4, d4)):
                    read = o[:2]
                    for nxt in o[2:K]:
                        if stop_reason(logits_of(r, read), DEFAULT_STOP_CONFIDENCE, DEFAULT_GIVE_UP_BELOW) is not None:
                            break
                        read.append(nxt)
                    d.append(f1(name, r, read, t, sp) - base)
            out.append(f"{name} top1 {100 * np.mean(top):.1f} k3 {100 * np.mean(d3):+.1f} k4 {100 * np.mean(d4):+.1f}")
        print(kind, l2, " | ".join(out), flush=True)
