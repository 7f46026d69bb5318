"""How a QA model here reads a question: :func:`read`, the one reader of this project, as a few named steps.

The app, ``littlebird evaluate`` and the training features all go through it, so the F1 the evaluation reports
is the F1 of the reader users get. :class:`ReadingOptions` (:mod:`littlebird.reading_options`) sets a reading;
the steps, each a small object in its own module:

1. plan the windows (:mod:`.plan`): the layout ``[CLS] [QUESTION] question [SEP] document`` and where every window
   starts (:mod:`.layout`), over the document's tokens, tokenized once (:mod:`.tokens`);
2. the window steps (:mod:`.steps`), each turned on by one option, in turn: rank the windows by BM25 and keep the
   best ``max_windows`` (:mod:`.bm25`), weigh them by their BM25 scores (:mod:`.lexical_prior`), glimpse them and
   keep the likeliest (:mod:`.glimpse`);
3. read the windows kept in full, in turn (:mod:`.full_read`, the model's passes in :mod:`.passes`), until the
   time is spent or a stop rule (:mod:`.stopping`) says the windows read suffice;
4. decode the answers (:func:`decode`, :mod:`.decoding`) and record every window (:mod:`.result`).

What the reader needs of a model is :class:`ReadingModel` (:mod:`.model`): LittleBird, the teacher
(:mod:`littlebird.training.teacher_model`) and the baseline adapters (:mod:`littlebird.baselines`) offer it. A new
strategy is one class in one module, a :class:`WindowStep` or a :class:`StopRule`, and the field of
:class:`ReadingOptions` that turns it on.
"""

from ..reading_options import (
    CPU_MODES,
    DEFAULT_GIVE_UP_BELOW,
    DEFAULT_MAX_LENGTH,
    DEFAULT_MAX_WINDOWS,
    DEFAULT_N_BEST,
    DEFAULT_NO_ANSWER_THRESHOLD,
    DEFAULT_READING,
    DEFAULT_STOP_CONFIDENCE,
    GLIMPSE_ABOVE,
    GLIMPSE_KEEP,
    GLIMPSE_TOKENS,
    MAX_ANSWER_LENGTH,
    MAX_QUESTION_TOKENS,
    MIN_WINDOWS_BEFORE_GIVING_UP,
    MIN_WINDOWS_BEFORE_STOP,
    TOP_K_STARTS,
    WINDOW_OVERLAP,
    ReadingOptions,
)
from .bm25 import Bm25Ranking, first_pass
from .decoding import (
    CANDIDATES_PER_ANSWER,
    Answer,
    Candidate,
    Decoded,
    ScoredSpans,
    Tidy,
    answerable_probability,
    decode,
    end_log_probabilities,
    merge_candidates,
    scored_spans,
    span_candidates,
    window_offsets,
)
from .full_read import read_in_full
from .glimpse import Glimpse, glimpse_logits, glimpse_starts
from .layout import (
    SpecialIds,
    build_windows,
    default_stride,
    question_cap,
    question_prefix,
    special_ids,
    tokenize_questions,
    window_capacity,
    window_input_ids,
    window_starts,
)
from .lexical_prior import LexicalPrior
from .model import (
    ReadingModel,
    end_depends_on_start,
    max_input_length,
    model_device,
    no_answer_threshold,
    prepare_model,
    window_length,
)
from .passes import ReadingStopped, WindowLogits, impossible_as_minus_infinity, run_windows
from .plan import Plan, plan_windows
from .reading import read
from .result import Reading, WindowRecord, reading_note, tokens_covered, window_records
from .steps import WINDOW_STEPS, ReadingContext, WindowStep, window_steps
from .stopping import (
    STOP_RULES,
    ConfidentEnough,
    NothingFound,
    StopRule,
    confident_enough,
    nothing_found,
    stop_reason,
    stop_rules,
    why_stopped,
)
from .tokens import (
    TOKENIZE_PIECE_CHARS,
    EncodedText,
    encode_text,
    forget_encodings,
    piece_starts,
    token_spans_in_text,
    tokenize_in_pieces,
)

__all__ = [
    "CANDIDATES_PER_ANSWER",
    "CPU_MODES",
    "DEFAULT_GIVE_UP_BELOW",
    "DEFAULT_MAX_LENGTH",
    "DEFAULT_MAX_WINDOWS",
    "DEFAULT_N_BEST",
    "DEFAULT_NO_ANSWER_THRESHOLD",
    "DEFAULT_READING",
    "DEFAULT_STOP_CONFIDENCE",
    "GLIMPSE_ABOVE",
    "GLIMPSE_KEEP",
    "GLIMPSE_TOKENS",
    "MAX_ANSWER_LENGTH",
    "MAX_QUESTION_TOKENS",
    "MIN_WINDOWS_BEFORE_GIVING_UP",
    "MIN_WINDOWS_BEFORE_STOP",
    "STOP_RULES",
    "TOKENIZE_PIECE_CHARS",
    "TOP_K_STARTS",
    "WINDOW_OVERLAP",
    "WINDOW_STEPS",
    "Answer",
    "Bm25Ranking",
    "Candidate",
    "ConfidentEnough",
    "Decoded",
    "EncodedText",
    "Glimpse",
    "LexicalPrior",
    "NothingFound",
    "Plan",
    "Reading",
    "ReadingContext",
    "ReadingModel",
    "ReadingOptions",
    "ReadingStopped",
    "ScoredSpans",
    "SpecialIds",
    "StopRule",
    "Tidy",
    "WindowLogits",
    "WindowRecord",
    "WindowStep",
    "answerable_probability",
    "build_windows",
    "confident_enough",
    "decode",
    "default_stride",
    "encode_text",
    "end_depends_on_start",
    "end_log_probabilities",
    "first_pass",
    "forget_encodings",
    "glimpse_logits",
    "glimpse_starts",
    "impossible_as_minus_infinity",
    "max_input_length",
    "merge_candidates",
    "model_device",
    "no_answer_threshold",
    "nothing_found",
    "piece_starts",
    "plan_windows",
    "prepare_model",
    "question_cap",
    "question_prefix",
    "read",
    "read_in_full",
    "reading_note",
    "run_windows",
    "scored_spans",
    "span_candidates",
    "special_ids",
    "stop_reason",
    "stop_rules",
    "token_spans_in_text",
    "tokenize_in_pieces",
    "tokenize_questions",
    "tokens_covered",
    "window_capacity",
    "window_input_ids",
    "window_length",
    "window_offsets",
    "window_records",
    "window_starts",
    "window_steps",
    "why_stopped",
]
