"""The screen stage: a cheap answerable classifier after the first layers, so the reader can screen every
ranked window of a long document and give the remaining layers to the likeliest few only.

The model's layers stay as they are; only the screen head learns, from training questions read as the
reader reads them: whole SQuAD articles (English) and long Korean pages (a question's passage among other
Wikipedia pages), each window's [CLS] state after ``screen_layers`` layers, and whether the window holds the
gold answer. The loss ranks windows within a question (the gold windows' share of a softmax over the
question's windows) plus a per-window binary loss, so the screen orders windows as the reader needs and
its logits still read as answerable logits. The head starts from the QA head's answerable classifier.

    littlebird train recipes/default.yaml --from-stage screen
    python -m littlebird.training.screen --student-dir assets/littlebird-qa --output-dir runs/screen --data-dir ../shared/data

The output folder is the student's checkpoint plus the screen head: its weight files are copied as they
are, and the head is one more small shard in the index (``SCREEN_SHARD``), so a compact checkpoint grows by
the head alone.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .. import reader
from ..checkpoint import load_qa_model, load_tokenizer
from ..command_options import Options, option, parse_options
from ..modeling_littlebird import LittleBirdScreenHead
from . import data
from .options import data_folder

SCREEN_SHARD = "model-screen-head.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"


@dataclass(kw_only=True)
class ScreenOptions(Options):
    """Train a screen head on a trained QA student's frozen first layers."""

    student_dir: str = option(help="a LittleBird QA checkpoint folder (compact or full)")
    output_dir: str = option(help="the checkpoint folder to write: the student plus the screen head")
    data_dir: str | None = option(None, "the shared data folder (default $LITTLEBIRD_DATA)")
    screen_layers: int = option(4, "the layers below the screen head")
    en_questions: int = option(400, "English training questions, each in its whole article")
    ko_questions: int = option(300, "Korean training questions, each in a long page of other passages")
    max_windows: int = option(reader.DEFAULT_MAX_WINDOWS, "the ranked windows read per question, as the reader")
    max_length: int = option(reader.DEFAULT_MAX_LENGTH, "the window length in tokens, as the reader")
    held_out: float = option(0.2, "the share of questions kept out of the head's training, to report on")
    epochs: int = option(300, "full-batch passes over the collected windows")
    lr: float = option(1e-3, "Adam's learning rate")
    weight_decay: float = option(0.01, "AdamW's weight decay")
    seed: int = option(0, "the questions' draw and the training's seed")
    threads: int | None = option(None, "torch threads (default: PyTorch's choice)")
    windows_file: str | None = option(None, "collected windows (.npz) to reuse or write (default: OUTPUT_DIR.windows.npz "
                                            "beside the checkpoint folder, so a rerun trains again without reading)")


@dataclass
class ScreenWindows:
    """Windows of training questions as the reader ranks them, with what the screen learns from."""

    cls: np.ndarray  # (N, layers + 1, H) float16: [CLS] after the embeddings and after each layer
    inside: np.ndarray  # (N,) bool: the window holds the question's (first) gold answer
    answerable: np.ndarray  # (N,) the full model's answerable logit
    best: np.ndarray  # (N,) the full model's best span score (as the reader ranks spans across windows)
    question: np.ndarray  # (N,) int: the question each window belongs to
    place: np.ndarray  # (N,) int: the window's place in the first pass's order

    def save(self, path: Path) -> None:
        np.savez_compressed(path, **self.__dict__)

    @classmethod
    def load(cls, path: Path) -> "ScreenWindows":
        with np.load(path) as saved:
            return cls(**{name: saved[name] for name in cls.__dataclass_fields__})


def training_questions(options: ScreenOptions, tokenizer) -> list[tuple[str, str, dict]]:
    """(language, document text, question) of the training split, drawn at random: English questions in
    their whole article, Korean ones in a long page of other Korean passages and Wikipedia pages."""
    folder = data_folder(options.data_dir)
    corpus = data.load_corpus(folder)
    rng = random.Random(options.seed)
    chosen = []
    english = [(d, p) for d in data.article_documents(corpus.train["en"]) for p in d["paragraphs"]]
    items = [("en", p["context"], qa) for _, p in english for qa in p["qas"]]
    chosen += rng.sample(items, min(options.en_questions, len(items)))
    if options.ko_questions:
        filler = data.read_korean_pages(Path(folder) / data.KOREAN_PAGES_FILE)
        pages = data.long_documents(corpus.train["ko"], filler, tokenizer, n_questions=options.ko_questions,
                                    seed=options.seed, min_tokens=8_000, max_tokens=100_000)
        chosen += [("ko", p["context"], qa) for d in pages for p in d["paragraphs"] for qa in p["qas"]]
    return chosen


def collect_windows(model, tokenizer, questions: Sequence[tuple[str, str, dict]], *, max_windows: int,
                    max_length: int, log_every: int = 50) -> ScreenWindows:
    """Read each question's ``max_windows`` best-ranked windows through the whole model (one at a time, as
    the reader does), keeping every layer's [CLS] state and the model's own scores of the window."""
    ids = reader.special_ids(tokenizer, model)
    rows: dict[str, list] = {name: [] for name in ScreenWindows.__dataclass_fields__}
    clock = time.monotonic()
    for number, (_, text, qa) in enumerate(questions):
        encoded = reader.encode_text(text, tokenizer)
        question_ids = reader.tokenize_questions([qa["question"]], tokenizer)[0]
        prefix = reader.question_prefix(question_ids, ids, max_length)
        capacity = reader.window_capacity(len(encoded.input_ids), len(prefix), max_length)
        every_start = reader.window_starts(len(encoded.input_ids), capacity, reader.default_stride(max_length))
        ranked, _ = reader.first_pass(question_ids[: reader.question_cap(max_length)], encoded.input_ids,
                                      every_start, capacity, tokenizer)
        starts = [every_start[i] for i in ranked[:max_windows]]
        answer = qa["answers"][0]
        first, last = answer["answer_start"], answer["answer_start"] + len(answer["text"])
        input_ids, attention_mask = reader.build_windows(prefix, encoded.input_ids, starts, capacity, ids.pad)
        outputs, normalizers = [], []
        with torch.inference_mode():
            for window, start in enumerate(starts):
                out = model(input_ids=input_ids[window : window + 1], attention_mask=attention_mask[window : window + 1],
                            top_k_starts=reader.TOP_K_STARTS, max_answer_length=reader.MAX_ANSWER_LENGTH,
                            output_hidden_states=True)
                reader._collect(out, outputs, normalizers)
                rows["cls"].append(torch.stack([h[0, 0] for h in out.hidden_states]).to(torch.float16).numpy())
                spans = encoded.spans[start : start + capacity]
                text_spans = spans[spans[:, 0] >= 0]
                rows["inside"].append(bool(len(text_spans)) and text_spans[:, 0].min() <= first
                                      and text_spans[:, 1].max() >= last)
        logits = reader._window_logits(outputs, normalizers)
        best = reader.scored_spans(logits, encoded.spans, len(prefix), starts, rank_windows=True).best_per_window()
        rows["answerable"] += list(logits.answerable_logits)
        rows["best"] += list(best)
        rows["question"] += [number] * len(starts)
        rows["place"] += list(range(len(starts)))
        if log_every and (number + 1) % log_every == 0:
            print(f"screen: {number + 1}/{len(questions)} questions read, {time.monotonic() - clock:.0f} s", flush=True)
    return ScreenWindows(**{name: np.asarray(values) for name, values in rows.items()})


def screen_loss(logits: torch.Tensor, inside: torch.Tensor, question: torch.Tensor) -> torch.Tensor:
    """-log of the gold windows' share of a softmax over each question's windows (questions with a gold
    window only), plus the per-window binary cross-entropy of ``inside``."""
    n_questions = int(question.max()) + 1
    peak = torch.zeros(n_questions).scatter_reduce(0, question, logits.detach(), "amax", include_self=False)
    weights = torch.exp(logits - peak[question])
    total = torch.zeros(n_questions).index_add(0, question, weights)
    gold = torch.zeros(n_questions).index_add(0, question, weights * inside)
    has_gold = torch.zeros(n_questions).index_add(0, question, inside) > 0
    ranking = -(torch.log(gold[has_gold]) - torch.log(total[has_gold])).mean()
    return ranking + F.binary_cross_entropy_with_logits(logits, inside)


def train_head(head: LittleBirdScreenHead, features: np.ndarray, inside: np.ndarray, question: np.ndarray, *,
               epochs: int, lr: float, weight_decay: float, seed: int) -> LittleBirdScreenHead:
    """Full-batch AdamW on the collected [CLS] states ``features`` (N, H); returns ``head``, trained."""
    torch.manual_seed(seed)
    x = torch.as_tensor(features, dtype=torch.float32).unsqueeze(1)  # (N, 1, H): the head reads [:, 0]
    y = torch.as_tensor(inside, dtype=torch.float32)
    groups = torch.as_tensor(np.unique(question, return_inverse=True)[1], dtype=torch.long)
    optimizer = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=weight_decay)
    head.train()
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = screen_loss(head(x), y, groups)
        loss.backward()
        optimizer.step()
    return head.eval()


def screen_report(screen_logits: np.ndarray, windows: ScreenWindows, rows: np.ndarray,
                  finish: Sequence[int] = (1, 2, 3, 4)) -> dict[str, float]:
    """On the questions of ``rows``: how often the finished windows (the ``m`` best by screen logit) hold the
    gold answer when any read window does, and hold the window the full reading answers from."""
    report: dict[str, float] = {}
    questions = np.unique(windows.question[rows])
    for m in finish:
        gold_kept = full_kept = with_gold = 0
        for q in questions:
            mine = rows[windows.question[rows] == q]
            kept = mine[np.argsort(-screen_logits[mine], kind="stable")[:m]]
            if windows.inside[mine].any():
                with_gold += 1
                gold_kept += bool(windows.inside[kept].any())
            full_kept += bool(mine[np.argmax(windows.best[mine])] in kept)
        report[f"gold window kept, {m} finished"] = gold_kept / max(1, with_gold)
        report[f"full reading's window kept, {m} finished"] = full_kept / max(1, len(questions))
    return report


def initial_head(model, config) -> LittleBirdScreenHead:
    """A screen head starting from the model's answerable classifier (the same shape, on the last layer)."""
    head = LittleBirdScreenHead(config)
    qa = model.qa_head
    with torch.no_grad():
        head.dense.load_state_dict(qa.answerable_dense.state_dict())
        head.answerable.load_state_dict(qa.answerable.state_dict())
    return head


def write_checkpoint(student_dir: Path, output_dir: Path, head: LittleBirdScreenHead, screen_layers: int) -> Path:
    """``student_dir``'s files in ``output_dir``, with ``screen_layers`` in the config and the head's tensors
    as one more shard of the index (a single-file checkpoint becomes an index of two files)."""
    from safetensors.torch import save_file

    output_dir.mkdir(parents=True, exist_ok=True)
    if student_dir.resolve() != output_dir.resolve():
        for path in student_dir.iterdir():
            if path.is_file():
                shutil.copy2(path, output_dir / path.name)
    index_path = output_dir / SAFETENSORS_INDEX
    if index_path.is_file():
        index = json.loads(index_path.read_text())
    else:  # one model.safetensors: list its tensors under an index, beside the new shard
        from safetensors import safe_open

        single = output_dir / "model.safetensors"
        with safe_open(str(single), "pt") as handle:
            names = list(handle.keys())
        renamed = output_dir / "model-00001-of-00001.safetensors"
        single.rename(renamed)
        index = {"metadata": {}, "weight_map": {name: renamed.name for name in names}}
    shard_dtype = torch.float16 if "float16" in json.dumps(index.get("metadata", {})) else torch.float32
    state = {f"screen_head.{name}": tensor.detach().to(shard_dtype).contiguous()
             for name, tensor in head.state_dict().items()}
    save_file(state, str(output_dir / SCREEN_SHARD), metadata={"format": "pt"})
    index["weight_map"] = {name: file for name, file in index["weight_map"].items() if not name.startswith("screen_head.")}
    index["weight_map"].update({name: SCREEN_SHARD for name in state})
    index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    config_path = output_dir / "config.json"
    config = json.loads(config_path.read_text())
    config["screen_layers"] = screen_layers
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return output_dir


def run(options: ScreenOptions) -> Path:
    """Collect the windows (or reuse ``windows_file``), train the head, report on the held-out questions and
    write the checkpoint; returns the output folder."""
    if options.threads:
        torch.set_num_threads(options.threads)
    output = Path(options.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    model = load_qa_model(options.student_dir)
    tokenizer = load_tokenizer(options.student_dir)
    if not 1 <= options.screen_layers < model.config.num_hidden_layers:
        raise ValueError(f"screen_layers must be between 1 and {model.config.num_hidden_layers - 1}, "
                         f"got {options.screen_layers}")
    windows_file = Path(options.windows_file) if options.windows_file else output.with_name(output.name + ".windows.npz")
    if windows_file.is_file():
        windows = ScreenWindows.load(windows_file)
    else:
        from ..inference import optimize_for_cpu

        fast = optimize_for_cpu(model, "auto") if not torch.cuda.is_available() else model
        questions = training_questions(options, tokenizer)
        windows = collect_windows(fast, tokenizer, questions, max_windows=options.max_windows,
                                  max_length=options.max_length)
        windows.save(windows_file)
    rng = np.random.default_rng(options.seed)
    questions = np.unique(windows.question)
    held = set(rng.choice(questions, int(len(questions) * options.held_out), replace=False).tolist())
    test = np.array([i for i, q in enumerate(windows.question) if q in held], dtype=np.int64)
    train = np.array([i for i, q in enumerate(windows.question) if q not in held], dtype=np.int64)
    features = windows.cls[:, options.screen_layers].astype(np.float32)
    report = {"windows": int(len(windows.inside)), "questions": int(len(questions)), "held_out_questions": len(held),
              "first_pass": screen_report(-windows.place.astype(np.float64), windows, test)}
    if len(test) and len(train):
        probe = train_head(initial_head(model, model.config), features[train], windows.inside[train],
                           windows.question[train], epochs=options.epochs, lr=options.lr,
                           weight_decay=options.weight_decay, seed=options.seed)
        with torch.no_grad():
            held_logits = probe(torch.as_tensor(features[test]).unsqueeze(1)).numpy()
        scores = np.zeros(len(windows.inside))
        scores[test] = held_logits
        report["screen"] = screen_report(scores, windows, test)
    head = train_head(initial_head(model, model.config), features, windows.inside, windows.question,
                      epochs=options.epochs, lr=options.lr, weight_decay=options.weight_decay, seed=options.seed)
    output.with_name(output.name + ".report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return write_checkpoint(Path(options.student_dir), output, head, options.screen_layers)


def main(argv=None) -> Path:
    """The command line: ``run`` with options from ``argv``."""
    return run(parse_options(ScreenOptions, argv, description=__doc__))


if __name__ == "__main__":
    main()
