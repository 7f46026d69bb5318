"""How the reader reads a question: :class:`ReadingOptions`, declared once, and the numbers of its rules.

Every surface takes the reading from this one declaration: :func:`littlebird.reader.read` reads by it,
``littlebird evaluate`` offers every field as a flag, ``littlebird ask`` and ``serve`` and the page's settings
the fields that have a slider, each with the default, the allowed values and the help written here
(:mod:`littlebird.command_options`). The module imports neither torch nor numpy, so that ``littlebird --help``
loads neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from .command_options import Slider, check_options, option, sliders

# The windows: the question's prefix and a document part. A document longer than a window is read in windows that
# share WINDOW_OVERLAP tokens with the next by default: room for any answer (<= MAX_ANSWER_LENGTH tokens).
DEFAULT_MAX_LENGTH = 1024  # tokens per window
MAX_QUESTION_TOKENS = 64  # what training has always shown the models; SQuAD questions average ~15
WINDOW_OVERLAP = 128
# Windows the model reads of a long document, at most, best-ranked first, and when it stops before them: once
# MIN_WINDOWS_BEFORE_STOP windows are read and one of them is answerable with at least DEFAULT_STOP_CONFIDENCE
# (the sigmoid of its answerable logit; a later, lower-ranked window then rarely wins), or once
# MIN_WINDOWS_BEFORE_GIVING_UP are read and none is answerable with DEFAULT_GIVE_UP_BELOW (the best-matching
# parts show no sign of the answer, as most windows of an unrelated article). The rules read about half the
# windows for the F1 of reading them all; docs/evaluation.md ("How many windows to read") has the measurements.
DEFAULT_MAX_WINDOWS = 10
DEFAULT_STOP_CONFIDENCE = 0.9
MIN_WINDOWS_BEFORE_STOP = 2
DEFAULT_GIVE_UP_BELOW = 0.05
MIN_WINDOWS_BEFORE_GIVING_UP = 3
# Glimpses: of a document with more than GLIMPSE_ABOVE ranked windows, the model first reads a short glimpse of each
# (GLIMPSE_TOKENS input tokens around the window's best-matching chunk), then reads in full, in turn and under the
# stop rules, at most the GLIMPSE_KEEP windows that the glimpses and BM25 together find likeliest to hold the
# answer: ten windows for the cost of about five and a half; docs/evaluation.md and docs/performance.md have its
# F1 and its time against reading them in turn.
GLIMPSE_ABOVE = 4
GLIMPSE_KEEP = 4
GLIMPSE_TOKENS = 128  # a glimpse's input, the question's prefix included: an eighth of a default window
# Decoding
TOP_K_STARTS = 10
MAX_ANSWER_LENGTH = 30
DEFAULT_N_BEST = 5  # answers listed
DEFAULT_NO_ANSWER_THRESHOLD = 0.5  # "No answer found" below this answerable probability, for a checkpoint storing none
CPU_MODES = ("fp32", "bf16-linear", "auto")  # littlebird.inference: the linear layers' precision on CPU


@dataclass(frozen=True, kw_only=True)
class ReadingOptions:
    """How :func:`littlebird.reader.read` reads a question: the windows, how many are read and when it stops, the
    glimpses, the decoding, and how the model runs. Every caller (the app's settings, ``littlebird ask`` and
    ``evaluate``, the benchmarks) sets the reading through one of these; each field's help says what it does, and
    an invalid field raises a ``ValueError`` that names it (:func:`littlebird.command_options.check_options`).

    A new reading strategy is a step of :mod:`littlebird.reader` and one field here that turns it on."""

    max_length: int | None = option(
        DEFAULT_MAX_LENGTH,
        "window length in tokens, the question's prefix included, capped by the model's "
        "positions; 'none' reads the whole document in one pass (LittleBird is linear in length)",
        minimum=8,
        none="none",
        slider=Slider(512, 16384, 512, "Max length (tokens per window)"),
    )
    stride: int | None = option(
        None,
        f"at most this many tokens between window starts; default: the window less {WINDOW_OVERLAP} tokens, "
        "at least half of it",
        minimum=1,
        none="none",
    )
    max_windows: int | None = option(
        DEFAULT_MAX_WINDOWS,
        "of a document that needs more windows, the model reads at most this many, those the "
        "lexical first pass (BM25) ranks best; 'all' reads every window",
        minimum=1,
        none="all",
        slider=Slider(1, 64, 1, "Windows read per question (the best-matching ones)"),
    )
    stop_confidence: float | None = option(
        DEFAULT_STOP_CONFIDENCE,
        f"leave the rest of the ranked windows unread once {MIN_WINDOWS_BEFORE_STOP} are "
        "read and one is answerable with at least this probability ('found'); 'none' turns the rule off; needs "
        "--rank-windows and --max-windows",
        above=0.0,
        maximum=1.0,
        none="none",
    )
    give_up_below: float | None = option(
        DEFAULT_GIVE_UP_BELOW,
        f"leave the rest of the ranked windows unread once {MIN_WINDOWS_BEFORE_GIVING_UP} "
        "are read and none is answerable with this probability ('nothing found'); 'none' turns the rule off",
        minimum=0.0,
        below=1.0,
        none="none",
    )
    glimpse_tokens: int | None = option(
        GLIMPSE_TOKENS,
        f"of a document with more than {GLIMPSE_ABOVE} ranked windows to read, first read a glimpse "
        "of each of this many tokens (around its best-matching chunk, all in one batch), then in full, in turn "
        "and under the stop rules, only the --glimpse-keep windows that the glimpses and BM25 find likeliest to "
        "hold the answer ('glimpsed'); 'none' reads the ranked windows in turn; needs --rank-windows and "
        "--max-windows",
        minimum=8,
        none="none",
        aliases=("--glimpse",),
    )
    glimpse_keep: int = option(GLIMPSE_KEEP, "windows read in full after the glimpses", minimum=1)
    time_budget: float | None = option(
        None,
        "seconds from the call after which no further window is started (the first is always read); default: unbounded",
        minimum=0,
        none="none",
    )
    rank_windows: bool = option(
        True,
        "compare spans of different windows by log p(span | window) plus the window's answerable logit; "
        "--no-rank-windows compares the raw logits (the rule before)",
    )
    lexical_prior: float = option(
        0.0,
        "with --rank-windows: add this times each window's BM25 score over the document's best window's to "
        "its spans' scores (0: the model's choice alone)",
        minimum=0,
    )
    n_best: int = option(DEFAULT_N_BEST, "answers returned, best first", minimum=1, slider=Slider(1, 20, 1, "n-best"))
    max_answer_length: int = option(MAX_ANSWER_LENGTH, "longest answer in tokens", minimum=1)
    top_k_starts: int = option(TOP_K_STARTS, "start positions per window whose ends are decoded", minimum=1)
    no_answer_threshold: float | None = option(
        None,
        "below this answerable probability (the best window's) the reading says 'no answer' and lists its answers "
        "as guesses; default: the checkpoint's own, measured on the dev files and stored in its config.json "
        f"({DEFAULT_NO_ANSWER_THRESHOLD:g} where it stores none)",
        minimum=0.0,
        maximum=1.0,
        none="checkpoint",
        aliases=("--threshold",),
        slider=Slider(0.0, 1.0, 0.05, "No-answer threshold"),
    )
    window_batch_size: int = option(1, "windows per model call", minimum=1)
    threads: int | None = option(
        None,
        "CPU threads for the model, set process-wide when the reading starts; default: the process's setting",
        minimum=1,
        none="none",
    )
    cpu_mode: str | None = option(
        None,
        "on CPU, the precision of the model's linear layers (littlebird.inference): bf16-linear, fp32 or "
        "auto (bf16-linear where the CPU has bf16 units); the model is converted once, in place; 'none': the "
        "model runs as given",
        choices=CPU_MODES,
        none="none",
    )

    def __post_init__(self) -> None:
        check_options(self)


DEFAULT_READING = ReadingOptions()

# The options the page's settings show (each with a slider), which `littlebird ask` and `serve` offer as flags too.
PAGE_SETTINGS = tuple(sliders(ReadingOptions))
