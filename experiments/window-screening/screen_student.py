"""The answerable logits a (smaller) model gives the same ten windows that collect.py read: a ranker to simulate."""
import sys, time
import numpy as np, torch
from littlebird.checkpoint import load_qa_model, load_tokenizer
from littlebird.inference import optimize_for_cpu
from littlebird.reader import (special_ids, encode_text, tokenize_questions, question_prefix, build_windows, DEFAULT_MAX_LENGTH)
from littlebird.training.data import read_squad

model_dir, name, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
torch.set_num_threads(int(sys.argv[4]) if len(sys.argv) > 4 else 2)
rows = torch.load(f"runs/cascade/f-dev-{name}.pt", weights_only=False)
model = optimize_for_cpu(load_qa_model(model_dir), "auto", inplace=True)
tokenizer = load_tokenizer(model_dir)
ids = special_ids(tokenizer, model)
ctx = {qa["id"]: p["context"] for a in read_squad(f"runs/dev/dev-{name}.json") for p in a["paragraphs"] for qa in p["qas"]}
enc, out, started = {}, {}, time.time()
for row in rows:
    text = ctx[row["id"]]
    if text not in enc:
        enc[text] = encode_text(text, tokenizer).input_ids
    q_ids = tokenize_questions([row["question"]], tokenizer)[0]
    prefix = question_prefix(q_ids, ids, DEFAULT_MAX_LENGTH)
    input_ids, mask = build_windows(prefix, enc[text], row["starts"], row["capacity"], ids.pad)
    with torch.inference_mode():
        o = model(input_ids=input_ids, attention_mask=mask, top_k_starts=10, max_answer_length=30)
    out[row["id"]] = dict(answerable=o.answerable_logits.float().numpy(),
                          normalizers=torch.logsumexp(o.start_logits.float(), -1).numpy(),
                          top_start_logits=o.top_start_logits.float().numpy())
torch.save(out, out_path)
print("done", len(out), f"{time.time() - started:.0f} s")
