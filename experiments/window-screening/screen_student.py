"""The answerable logits a (smaller) model gives the same ten windows that collect.py read: a ranker to simulate."""

import sys
import time

import torch

sys.path.insert(0, "experiments/window-screening")
from analyse import dev_questions

from littlebird.reader import DEFAULT_MAX_LENGTH, build_windows, question_prefix, special_ids, tokenize_questions

model_dir, name, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
torch.set_num_threads(int(sys.argv[4]) if len(sys.argv) > 4 else 2)
model, tokenizer, rows = dev_questions(model_dir, name)
ids = special_ids(tokenizer, model)
out, started = {}, time.time()
for row, doc in rows:
    q_ids = tokenize_questions([row["question"]], tokenizer)[0]
    prefix = question_prefix(q_ids, ids, DEFAULT_MAX_LENGTH)
    input_ids, mask = build_windows(prefix, doc, row["starts"], row["capacity"], ids.pad)
    with torch.inference_mode():
        o = model(input_ids=input_ids, attention_mask=mask, top_k_starts=10, max_answer_length=30)
    out[row["id"]] = dict(
        answerable=o.answerable_logits.float().numpy(),
        normalizers=torch.logsumexp(o.start_logits.float(), -1).numpy(),
        top_start_logits=o.top_start_logits.float().numpy(),
    )
torch.save(out, out_path)
print("done", len(out), f"{time.time() - started:.0f} s")
