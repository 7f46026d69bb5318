"""Any BERT-family encoder in: tiny random BERT, RoBERTa, XLM-R, ELECTRA and e5-style sources, each with a
tokenizer of its own kind, converted by ``python -m littlebird.convert`` and trained a few steps."""

import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import (
    AutoModel,
    AutoTokenizer,
    BertConfig,
    BertModel,
    BertTokenizer,
    DebertaV2Config,
    ElectraConfig,
    GPT2Config,
)

from littlebird import LittleBirdConfig
from littlebird.checkpoint import load_qa_model, load_tokenizer
from littlebird.conversion import COPIED_EMBEDDINGS, FRESH_PARAMETERS, LAYER_MODULE_MAP, WORD_EMBEDDINGS
from littlebird.convert import NotConvertible, convert
from littlebird.convert import main as convert_main
from littlebird.reader import read
from littlebird.training import finetune
from littlebird.training.loop import LOG_FILE, MODEL_DIR
from littlebird.vocabulary import EXTRA_TOKENS
from tests.support.encoders import FAMILIES, write_toy_encoder
from tests.support.training import write_toy_data

KEPT = [0, 3]  # select_layers(4, 2)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """family -> (source folder, LittleBird folder), each converted through the command line."""
    root = tmp_path_factory.mktemp("convert")
    folders = {}
    for family in FAMILIES:
        source = write_toy_encoder(family, root / family)
        output = convert_main(
            [
                "--source",
                str(source),
                "--output",
                str(root / f"{family}-littlebird"),
                "--layers",
                "2",
                "--block-size",
                "8",
                "--pack-size",
                "4",
            ]
        )
        folders[family] = (source, output)
    return folders


@pytest.mark.parametrize("family", FAMILIES)
def test_every_source_tensor_lands_where_the_paper_map_says(converted, family):
    source, output = converted[family]
    source_state = AutoModel.from_pretrained(source).state_dict()
    state = {
        name.removeprefix("littlebird."): tensor for name, tensor in load_file(output / "model.safetensors").items()
    }
    config = LittleBirdConfig.from_pretrained(output)
    assert config.source_layers == KEPT and config.num_hidden_layers == 2
    first_new = len(AutoTokenizer.from_pretrained(source))
    placed = set()
    for name, tensor in source_state.items():
        layer = re.fullmatch(r"encoder\.layer\.(\d+)\.(.+)\.(weight|bias)", name)
        if layer:
            index, module, suffix = int(layer[1]), layer[2], layer[3]
            if index not in KEPT:
                continue
            for target in LAYER_MODULE_MAP[module]:  # every attention into both pack and unpack attention
                if target == "pack_layer_norm" and index == KEPT[-1]:
                    continue  # the last layer has none: its P' would feed no later layer
                key = f"encoder.layer.{KEPT.index(index)}.{target}.{suffix}"
                assert torch.equal(state[key], tensor), key
                placed.add(key)
        elif name == WORD_EMBEDDINGS:
            own = state[name]
            assert torch.equal(own[:first_new], tensor[:first_new])
            assert torch.equal(own[first_new + len(EXTRA_TOKENS) :], tensor[first_new + len(EXTRA_TOKENS) :])
            new = own[first_new : first_new + len(EXTRA_TOKENS)]
            spread = tensor[:first_new].std(dim=0).max()
            torch.testing.assert_close(new.mean(0), tensor[:first_new].mean(0), atol=float(spread) * 0.2, rtol=0)
            assert torch.unique(new, dim=0).shape[0] == len(EXTRA_TOKENS)
            placed.add(name)
        elif name in COPIED_EMBEDDINGS:
            assert torch.equal(state[name], tensor), name
            placed.add(name)
        else:  # absolute positions (BiALiBi replaces them) and the pooler are left behind
            assert "position" in name or name.startswith("pooler.") or name.endswith("token_type_ids"), name
            assert name not in state
    fresh = [name for name in state if name not in placed]
    assert fresh and all(any(part in name for part in FRESH_PARAMETERS) for name in fresh), fresh


@pytest.mark.parametrize("family", FAMILIES)
def test_the_tokenizer_round_trips_the_added_tokens(converted, family):
    source, output = converted[family]
    first_new = len(AutoTokenizer.from_pretrained(source))
    tokenizer = load_tokenizer(output)
    config = LittleBirdConfig.from_pretrained(output)
    ids = tokenizer.convert_tokens_to_ids(list(EXTRA_TOKENS))
    assert ids == list(range(first_new, first_new + len(EXTRA_TOKENS)))
    assert config.question_token_id == ids[0] and config.vocab_size >= len(tokenizer)
    assert config.pad_token_id == tokenizer.pad_token_id
    text = "[QUESTION] what is the capital <table><tr><td> the city <p> of arland"
    encoded = tokenizer(text, add_special_tokens=False)["input_ids"]
    for token in ("[QUESTION]", "<table>", "<tr>", "<td>", "<p>"):
        assert encoded.count(tokenizer.convert_tokens_to_ids(token)) == 1, token
    decoded = tokenizer.decode(encoded)
    assert all(token in decoded for token in ("[QUESTION]", "<table>", "<td>", "<p>"))
    assert tokenizer(decoded, add_special_tokens=False)["input_ids"] == encoded


@pytest.mark.parametrize("family", FAMILIES)
def test_the_recipe_trains_a_converted_encoder(converted, family, tmp_path):
    """The gold-label stage on toy SQuAD data, from the converted folder, with its own tokenizer."""
    _, output = converted[family]
    data = write_toy_data(tmp_path / "data")
    before = load_qa_model(output)
    finetune.main(
        [
            "--student-dir",
            str(output),
            "--data-dir",
            str(data),
            "--output-dir",
            str(tmp_path / "run"),
            "--max-steps",
            "2",
            "--max-length",
            "48",
            "--doc-stride",
            "16",
            "--dev-fraction",
            "0.5",
            "--batch-size",
            "2",
            "--log-every",
            "1",
            "--lr",
            "1e-3",
            "--cpu",
        ]
    )
    losses = re.findall(r"step \d+/2 .* loss (\S+)", (tmp_path / "run" / LOG_FILE).read_text())
    assert len(losses) == 2 and all(0 < float(loss) < 100 for loss in losses), losses
    trained = tmp_path / "run" / MODEL_DIR
    after = load_qa_model(trained)
    moved = [name for name, tensor in after.state_dict().items() if not torch.equal(tensor, before.state_dict()[name])]
    assert any(".layer.0." in name for name in moved) and any("qa_head." in name for name in moved)
    # the trained folder carries the converted tokenizer, and the reader reads with it
    tokenizer = load_tokenizer(trained)
    assert tokenizer.get_vocab() == load_tokenizer(output).get_vocab()
    reading = read(
        "what is the capital of arland?",
        "arland is a small country. the capital of arland is bexford.",
        model=after,
        tokenizer=tokenizer,
    )
    assert reading.answers and all(answer.end > answer.start for answer in reading.answers)


def _config_folder(config, directory: Path) -> Path:
    config.save_pretrained(directory)
    return directory


@pytest.mark.parametrize(
    "config, message",
    [
        (GPT2Config(n_layer=1, n_embd=32, n_head=4), r"'gpt2' is a decoder"),
        (
            DebertaV2Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=4),
            r"'deberta-v2' uses relative position",
        ),
        (
            ElectraConfig(hidden_size=32, embedding_size=16, num_hidden_layers=1, num_attention_heads=4),
            r"'electra' with embedding_size 16",
        ),
        (BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, is_decoder=True), r"'bert'.*decoder"),
    ],
)
def test_what_cannot_be_converted_is_refused_by_name(config, message, tmp_path):
    with pytest.raises(NotConvertible, match=message):
        convert(_config_folder(config, tmp_path / "source"))


def test_a_vocabulary_that_already_spells_an_added_token_is_refused(tmp_path):
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<p>", "word"])}
    BertTokenizer(vocab=vocab).save_pretrained(tmp_path)
    BertModel(
        BertConfig(
            vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37
        )
    ).save_pretrained(tmp_path)
    with pytest.raises(NotConvertible, match=r"'bert' tokenizer already has \['<p>'\]"):
        convert(tmp_path)
