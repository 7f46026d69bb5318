"""Per question of a SQuAD file: its ten best-ranked windows (BM25), which hold a gold answer, their BM25 scores and
the answerable logits of their glimpses as the reader computes them (littlebird.reader.glimpse_logits), without
reading any window in full: the data a choice among glimpsed windows is fitted on (fit_choice.py)."""

import sys
import time

import numpy as np
import torch

from littlebird.checkpoint import load_qa_model, load_tokenizer
from littlebird.inference import optimize_for_cpu
from littlebird.reader import (
    DEFAULT_MAX_LENGTH,
    DEFAULT_MAX_WINDOWS,
    GLIMPSE_TOKENS,
    default_stride,
    encode_text,
    first_pass,
    glimpse_logits,
    question_cap,
    question_prefix,
    special_ids,
    tokenize_questions,
    window_capacity,
    window_starts,
)
from littlebird.training.data import read_squad

path, out_path = sys.argv[1], sys.argv[2]
limit = int(sys.argv[3]) if len(sys.argv) > 3 else None
torch.set_num_threads(int(sys.argv[4]) if len(sys.argv) > 4 else 2)
model = optimize_for_cpu(load_qa_model("assets/littlebird-qa"), "auto", inplace=True)
tokenizer = load_tokenizer("assets/littlebird-qa")
ids = special_ids(tokenizer, model)
rows, started = [], time.time()
for article in read_squad(path):
    for paragraph in article["paragraphs"]:
        encoded = encode_text(paragraph["context"], tokenizer)
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
            order = ranked[:DEFAULT_MAX_WINDOWS]
            if len(order) < 2:
                continue
            starts = [every[i] for i in order]
            with torch.inference_mode():
                glimpses = glimpse_logits(
                    model,
                    tokenizer,
                    ids,
                    prefix,
                    q_ids[: question_cap(DEFAULT_MAX_LENGTH)],
                    encoded.input_ids,
                    starts,
                    capacity,
                    GLIMPSE_TOKENS,
                )
            spans, gold = encoded.spans, np.zeros(len(starts), bool)
            for a in qa["answers"]:
                s, e = a["answer_start"], a["answer_start"] + len(a["text"])
                inside = np.nonzero((spans[:, 1] > s) & (spans[:, 0] < e))[0]
                if len(inside):
                    gold |= np.array([st <= inside[0] and inside[-1] < st + capacity for st in starts])
            rows.append(dict(id=qa["id"], starts=starts, gold=gold, lexical=lexical[order], glimpse=glimpses))
            if len(rows) % 50 == 0:
                print(f"{len(rows)} questions, {time.time() - started:.0f} s", flush=True)
torch.save(rows, out_path)
print("done", len(rows), f"{time.time() - started:.0f} s")
