"""Per question of a SQuAD file: the reader's ten best-ranked windows read in full, with pooled hidden states of the
lower layers and the final QA outputs, so a cascade's choices can be simulated offline."""

import sys
import time

import numpy as np
import torch

from littlebird.checkpoint import load_qa_model, load_tokenizer
from littlebird.inference import optimize_for_cpu
from littlebird.reader import (
    DEFAULT_MAX_LENGTH,
    build_windows,
    default_stride,
    encode_text,
    first_pass,
    question_cap,
    question_prefix,
    special_ids,
    tokenize_questions,
    window_capacity,
    window_starts,
)
from littlebird.training.data import read_squad

LAYERS = (2, 3, 4)
path, out_path = sys.argv[1], sys.argv[2]
limit = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] != "all" else None
full = len(sys.argv) > 4 and sys.argv[4] == "full"


def lower_layers(model, input_ids, mask, upto):
    """hidden states after 0..upto layers (the input of layer l at index l), without the rest of the model."""
    lb = model.littlebird
    x, geometry, n = lb.prepare(input_ids, mask)
    p = lb.encoder.initial_pack(x)
    hs = [x[:, :n]]
    for layer in lb.encoder.layer[:upto]:
        x, p, _ = layer(x, p, geometry, False)
        hs.append(x[:, :n])
    return hs


torch.set_num_threads(2)
model = optimize_for_cpu(load_qa_model("assets/littlebird-qa"), "auto", inplace=True)
tokenizer = load_tokenizer("assets/littlebird-qa")
ids = special_ids(tokenizer, model)
rows, started = [], time.time()
for article in read_squad(path):
    for paragraph in article["paragraphs"]:
        context = paragraph["context"]
        encoded = encode_text(context, tokenizer)
        for qa in paragraph["qas"]:
            if limit and len(rows) >= limit:
                break
            q_ids = tokenize_questions([qa["question"]], tokenizer)[0]
            prefix = question_prefix(q_ids, ids, DEFAULT_MAX_LENGTH)
            n_tokens = len(encoded.input_ids)
            capacity = window_capacity(n_tokens, len(prefix), DEFAULT_MAX_LENGTH)
            every = window_starts(n_tokens, capacity, default_stride(DEFAULT_MAX_LENGTH))
            ranked, lexical = first_pass(
                q_ids[: question_cap(DEFAULT_MAX_LENGTH)], encoded.input_ids, every, capacity, tokenizer
            )
            order = ranked[:10]
            if len(order) < 2:
                continue
            starts = [every[i] for i in order]
            input_ids, mask = build_windows(prefix, encoded.input_ids, starts, capacity, ids.pad)
            with torch.inference_mode():
                if full:
                    out = model(
                        input_ids=input_ids,
                        attention_mask=mask,
                        top_k_starts=10,
                        max_answer_length=30,
                        output_hidden_states=True,
                    )
                    hidden_states = out.hidden_states
                else:
                    out, hidden_states = None, lower_layers(model, input_ids, mask, max(LAYERS))
            P = len(prefix)
            doc = mask.clone().bool()
            doc[:, :P] = False
            feats = []
            for layer in LAYERS:
                h = hidden_states[layer].float()
                cls = h[:, 0]
                m = doc.unsqueeze(-1)
                mean = (h * m).sum(1) / m.sum(1)
                mx = h.masked_fill(~m, -1e4).max(1).values
                feats.append(torch.stack([cls, mean, mx], 1))
            feats = torch.stack(feats, 1).half().numpy()  # (W, layers, 3, H)
            # gold windows: a gold answer's tokens inside the window's document part
            spans = encoded.spans
            gold = np.zeros(len(starts), bool)
            for a in qa["answers"]:
                s, e = a["answer_start"], a["answer_start"] + len(a["text"])
                inside = np.nonzero((spans[:, 1] > s) & (spans[:, 0] < e))[0]
                if len(inside) == 0:
                    continue
                t0, t1 = inside[0], inside[-1]
                gold |= np.array([st <= t0 and t1 < st + capacity for st in starts])
            row = dict(
                id=qa["id"],
                question=qa["question"],
                answers=[a["text"] for a in qa["answers"]],
                starts=starts,
                n_windows=len(every),
                prefix=P,
                capacity=capacity,
                gold=gold,
                lexical=None if lexical is None else lexical[order],
                feats=feats,
            )
            if full:
                row.update(
                    top_start_indices=out.top_start_indices.numpy(),
                    top_start_logits=out.top_start_logits.float().numpy(),
                    top_end_logits=out.top_end_logits.float().numpy(),
                    answerable=out.answerable_logits.float().numpy(),
                    normalizers=torch.logsumexp(out.start_logits.float(), -1).numpy(),
                )
            rows.append(row)
            if len(rows) % 20 == 0:
                print(f"{len(rows)} questions, {time.time() - started:.0f} s", flush=True)
torch.save(rows, out_path)
print("done", len(rows), f"{time.time() - started:.0f} s")
