"""Train a window ranker on lower-layer features (train split), then simulate the cascade's answers on dev files."""

import sys

import numpy as np
import torch

from littlebird.answer_text import tidy_answer_span
from littlebird.checkpoint import load_tokenizer
from littlebird.evaluation import best_scores, metric_language
from littlebird.reader import (
    DEFAULT_GIVE_UP_BELOW,
    DEFAULT_STOP_CONFIDENCE,
    WindowLogits,
    decode,
    encode_text,
    impossible_as_minus_infinity,
    stop_reason,
)
from littlebird.training.data import read_squad

LAYER_INDEX = {2: 0, 3: 1, 4: 2}


def features(row, layer):
    f = row["feats"][:, LAYER_INDEX[layer]].astype(np.float32).reshape(len(row["starts"]), -1)
    lex = row["lexical"] if row["lexical"] is not None else np.zeros(len(row["starts"]))
    lex = lex / max(float(np.max(lex)), 1e-9)
    rank = np.arange(len(row["starts"])) / 10.0
    return np.concatenate([f, lex[:, None], rank[:, None]], 1).astype(np.float32)


def train_ranker(rows, layer, hidden=256, epochs=60, seed=0, wd=1e-4):
    torch.manual_seed(seed)
    data = [
        (torch.tensor(features(r, layer)), torch.tensor(r["gold"], dtype=torch.float32))
        for r in rows
        if r["gold"].any()
    ]
    allx = torch.cat([x for x, _ in data])
    mu, sd = allx.mean(0), allx.std(0) + 1e-4
    net = torch.nn.Sequential(torch.nn.Linear(allx.shape[1], hidden), torch.nn.GELU(), torch.nn.Linear(hidden, 1))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=wd)
    for epoch in range(epochs):
        perm = torch.randperm(len(data))
        for i in range(0, len(data), 32):
            loss = 0
            for j in perm[i : i + 32]:
                x, g = data[j]
                s = net((x - mu) / sd).squeeze(-1)
                loss = loss - (torch.logsumexp(s.masked_fill(g == 0, -1e9), 0) - torch.logsumexp(s, 0))
            opt.zero_grad()
            (loss / 32).backward()
            opt.step()
    net.eval()
    return lambda row: net((torch.tensor(features(row, layer)) - mu) / sd).squeeze(-1).detach().numpy()


def logits_of(row, idx):
    idx = list(idx)
    return WindowLogits(
        row["top_start_indices"][idx],
        impossible_as_minus_infinity(row["top_start_logits"][idx]),
        impossible_as_minus_infinity(row["top_end_logits"][idx]),
        row["answerable"][idx],
        row["normalizers"][idx],
    )


def answer(row, idx, text, spans):
    """The reader's best answer from the collected windows ``idx``, decoded as the reader decodes."""
    idx = list(idx)
    answers = decode(
        logits_of(row, idx), spans, row["prefix"], [row["starts"][i] for i in idx], text, tidy=tidy_answer_span
    ).answers
    return answers[0].text if answers else ""


def shipped_read(row, limit=10):
    n = min(limit, len(row["starts"]))
    for i in range(1, n + 1):
        if i < n and stop_reason(logits_of(row, range(i)), DEFAULT_STOP_CONFIDENCE, DEFAULT_GIVE_UP_BELOW):
            return list(range(i))
    return list(range(n))


def dev_questions(model_dir, name):
    """The inference model of ``model_dir``, its tokenizer, and per collected question of dev file ``name``:
    (row, token ids of its context), each context tokenized once."""
    from littlebird.checkpoint import load_qa_model
    from littlebird.inference import optimize_for_cpu

    model = optimize_for_cpu(load_qa_model(model_dir), "auto", inplace=True)
    tokenizer = load_tokenizer(model_dir)
    ctx, enc = contexts(f"runs/dev/dev-{name}.json"), {}

    def rows():
        for row in torch.load(f"runs/cascade/f-dev-{name}.pt", weights_only=False):
            text = ctx[row["id"]]
            if text not in enc:
                enc[text] = encode_text(text, tokenizer).input_ids
            yield row, enc[text]

    return model, tokenizer, rows()


def contexts(path):
    out = {}
    for article in read_squad(path):
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                out[qa["id"]] = p["context"]
    return out


def cascade_read(row, score, layer, budget=48):
    m = len(row["starts"])
    if m * 12 <= budget:
        return shipped_read(row)
    k = max(1, (budget - layer * m) // (12 - layer))
    return sorted(np.argsort(-score, kind="stable")[:k].tolist())


def bootstrap(d, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    d = np.asarray(d)
    means = [d[rng.integers(0, len(d), len(d))].mean() for _ in range(n)]
    return np.percentile(means, [2.5, 97.5])


if __name__ == "__main__":
    c = "runs/cascade"
    train = []
    for name in sys.argv[1].split(","):
        train += torch.load(f"{c}/f-train-{name}.pt", weights_only=False)
    layers = [int(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else [2, 3, 4]
    rankers = {L: train_ranker(train, L) for L in layers}
    print(f"trained on {len(train)} questions ({sum(r['gold'].any() for r in train)} with a gold window)")
    tok = load_tokenizer("assets/littlebird-qa")
    for name in sys.argv[2].split(","):
        rows = torch.load(f"{c}/f-dev-{name}.pt", weights_only=False)
        ctx = contexts(f"runs/dev/dev-{name}.json")
        enc = {}
        f1 = {
            k: []
            for k in ["shipped", "bm25"]
            + [f"L{L}" for L in layers]
            + [f"L{L}b36" for L in layers]
            + ["oracle"]
            + [f"max{k}" for k in (2, 3, 4, 5, 6)]
            + [f"top{k}" for k in (1, 2, 3, 4)]
        }
        top1 = {k: [] for k in ["bm25", "answerable"] + [f"L{L}" for L in layers]}
        cost = {k: [] for k in f1}
        for row in rows:
            text = ctx[row["id"]]
            if text not in enc:
                enc[text] = encode_text(text, tok).spans
            spans = enc[text]
            lang = metric_language(row["question"])
            m = len(row["starts"])
            choices = {"shipped": shipped_read(row), "bm25": cascade_read(row, -np.arange(m, dtype=float), 0)}
            scores = {L: rankers[L](row) for L in layers}
            for L in layers:
                choices[f"L{L}"] = cascade_read(row, scores[L], L)
                choices[f"L{L}b36"] = cascade_read(row, scores[L], L, budget=40)
            for k in (2, 3, 4, 5, 6):
                choices[f"max{k}"] = shipped_read(row, k)
            for k in (1, 2, 3, 4):
                choices[f"top{k}"] = list(range(min(k, m)))
            choices["oracle"] = cascade_read(row, row["gold"].astype(float) - np.arange(m) * 1e-3, 4)
            for k, idx in choices.items():
                f1[k].append(best_scores(answer(row, idx, text, spans), row["answers"], lang)[1])
                cost[k].append(len(idx))
            if row["gold"].any():
                top1["bm25"].append(bool(row["gold"][0]))
                top1["answerable"].append(bool(row["gold"][int(np.argmax(row["answerable"]))]))
                for L in layers:
                    top1[f"L{L}"].append(bool(row["gold"][int(np.argmax(scores[L]))]))
        base = np.array(f1["shipped"])
        print(
            f"\n{name}: {len(rows)} multi-window questions, "
            f"{np.mean([len(r['starts']) for r in rows]):.1f} windows ranked, "
            f"shipped reads {np.mean(cost['shipped']):.2f}"
        )
        for k, v in f1.items():
            d = np.array(v) - base
            lo, hi = bootstrap(d)
            print(
                f"  {k:10s} reads {np.mean(cost[k]):4.2f} F1 {100 * np.mean(v):5.1f}  "
                f"vs shipped {100 * d.mean():+5.1f} ({100 * lo:+.1f}, {100 * hi:+.1f})"
            )
        print(
            "  top-1 gold (of questions with a gold window in the ten):",
            {k: f"{100 * np.mean(v):.1f}" for k, v in top1.items()},
        )
