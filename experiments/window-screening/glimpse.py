"""The full model's answerable logit on a short glimpse of each of the ten windows: G tokens around the window's best
BM25 chunk. A ranker to simulate: the full model then reads only the best-glimpsed window(s) in full."""

import sys
import time

import numpy as np
import torch

sys.path.insert(0, "experiments/window-screening")
from analyse import dev_questions

from littlebird.reader import (
    DEFAULT_MAX_LENGTH,
    build_windows,
    question_cap,
    question_prefix,
    special_ids,
    tokenize_questions,
)
from littlebird.window_ranking import CHUNK_TOKENS, chunk_scores, term_table

name, out_path = sys.argv[1], sys.argv[2]
sizes = [int(x) for x in sys.argv[3].split(",")]
torch.set_num_threads(2)
model, tok, rows = dev_questions("assets/littlebird-qa", name)
ids = special_ids(tok, model)
table = term_table(tok)
out, started = {}, time.time()
for row, doc in rows:
    q_ids = tokenize_questions([row["question"]], tok)[0]
    prefix = question_prefix(q_ids, ids, DEFAULT_MAX_LENGTH)
    scores = chunk_scores(
        table[np.asarray(q_ids[: question_cap(DEFAULT_MAX_LENGTH)], dtype=np.int64)],
        table[np.asarray(doc, dtype=np.int64)],
    )
    res = {}
    for G in sizes:
        cap = G - len(prefix)
        glimpses = []
        for s in row["starts"]:
            e = min(s + row["capacity"], len(doc))
            first, last = s // CHUNK_TOKENS, -(-e // CHUNK_TOKENS)
            best = first + int(np.argmax(scores[first:last]))
            centre = best * CHUNK_TOKENS + CHUNK_TOKENS // 2
            g0 = int(min(max(s, centre - cap // 2), max(s, e - cap)))
            glimpses.append(g0)
        input_ids, mask = build_windows(prefix, doc, glimpses, cap, ids.pad)
        with torch.inference_mode():
            o = model(input_ids=input_ids, attention_mask=mask, top_k_starts=10, max_answer_length=30)
        res[G] = o.answerable_logits.float().numpy()
    out[row["id"]] = res
torch.save(out, out_path)
print("done", len(out), f"{time.time() - started:.0f} s")
