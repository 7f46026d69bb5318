"""Fit littlebird.window_ranking.GLIMPSE_CHOICE_WEIGHTS: a listwise softmax over each question's glimpsed windows
(those of more than GLIMPSE_ABOVE ranked windows), the gold windows its targets, on glimpse_rows.py's training-split
rows. Prints the weights on the raw features, to paste into window_ranking.py.

    python experiments/window-screening/fit_choice.py runs/cascade/gr-train-{en,ko}-{article,long}.pt
"""

import sys

import numpy as np
import torch

from littlebird.reader import GLIMPSE_ABOVE
from littlebird.window_ranking import choice_features


def fit(rows, l2=1e-3):
    data = [
        (
            torch.tensor(choice_features(r["glimpse"], r["lexical"] / max(float(np.max(r["lexical"])), 1e-9))),
            torch.tensor(r["gold"]),
        )
        for r in rows
        if r["gold"].any() and len(r["starts"]) > GLIMPSE_ABOVE
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
    raw = (w / sd).detach().numpy()  # the same order as the standardized weights: constants drop out of a softmax
    return raw, len(data)


if __name__ == "__main__":
    rows = [r for path in sys.argv[1:] for r in torch.load(path, weights_only=False)]
    raw, n = fit(rows)
    top1 = [
        r["gold"][
            int(np.argmax(choice_features(r["glimpse"], r["lexical"] / max(float(np.max(r["lexical"])), 1e-9)) @ raw))
        ]
        for r in rows
        if r["gold"].any() and len(r["starts"]) > GLIMPSE_ABOVE
    ]
    print(f"{n} questions; gold chosen first {100 * np.mean(top1):.1f}%")
    print("GLIMPSE_CHOICE_WEIGHTS = (" + ", ".join(f"{x:.4f}" for x in raw) + ")")
