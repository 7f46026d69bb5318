"""The reader as named steps: a new strategy is one class and one option, and the options name the steps a
reading runs."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from littlebird.command_options import build_parser, option
from littlebird.reader import (
    Bm25Ranking,
    ConfidentEnough,
    Glimpse,
    LexicalPrior,
    NothingFound,
    ReadingOptions,
    WindowStep,
    read,
    steps,
    stop_rules,
    window_steps,
)
from tests.support.qa import qa_tokenizer, tiny_model_for_tokenizer

TEXT = (
    "Lake Baikal is a rift lake in Siberia. It is the deepest lake in the world, at 1,642 metres. "
    "세종대왕이 훈민정음을 1443년에 만들었다. "
) * 12
QUESTION = "How deep is Lake Baikal?"


@dataclass(frozen=True, kw_only=True)
class ToyOptions(ReadingOptions):
    """The reading's options and the toy strategy's one option."""

    last_window_first: bool = option(False, "read the document's last window first")


def test_the_options_name_the_steps_a_reading_runs():
    assert [type(step) for step in window_steps(ReadingOptions())] == [Bm25Ranking, Glimpse]
    assert [type(step) for step in window_steps(ReadingOptions(lexical_prior=0.5, glimpse_tokens=None))] == [
        Bm25Ranking,
        LexicalPrior,
    ]
    assert [type(step) for step in window_steps(ReadingOptions(rank_windows=False, lexical_prior=0.5))] == [Bm25Ranking]
    assert [type(rule) for rule in stop_rules(ReadingOptions())] == [ConfidentEnough, NothingFound]
    assert [type(rule) for rule in stop_rules(ReadingOptions(stop_confidence=None))] == [NothingFound]
    assert stop_rules(ReadingOptions(max_windows=None)) == []  # the rules stop ranked windows only


def test_a_new_strategy_is_one_class_and_one_option(monkeypatch):
    monkeypatch.setattr(steps, "WINDOW_STEPS", list(steps.WINDOW_STEPS))  # the toy leaves the registry as it was

    class LastWindowFirst(WindowStep):
        """The toy strategy: the document's last window is read first, before the ones BM25 ranks best."""

        option = "last_window_first"

        def run(self, plan, context):
            last = len(plan.every_start) - 1
            plan.order = [last, *(w for w in plan.order if w != last)][: len(plan.order)]

    model, tokenizer = tiny_model_for_tokenizer(), qa_tokenizer()
    options = ToyOptions(max_length=128, stride=48, max_windows=3, stop_confidence=None, give_up_below=None)
    plain = read(QUESTION, TEXT, model=model, tokenizer=tokenizer, options=options)
    toy = read(QUESTION, TEXT, model=model, tokenizer=tokenizer, options=replace(options, last_window_first=True))
    assert LastWindowFirst not in map(type, window_steps(options))  # off unless its option is set ...
    assert type(window_steps(replace(options, last_window_first=True))[-1]) is LastWindowFirst  # ... then last
    assert toy.window_token_spans[0][1] == toy.n_tokens != plain.window_token_spans[0][1]  # the last window first
    assert toy.window_token_spans[1:] == plain.window_token_spans[:2] and toy.n_windows == plain.n_windows == 3
    assert toy.windows[-1].read == 0 and toy.windows[-1].rank == plain.windows[-1].rank  # BM25's rank is kept
    same = read(
        QUESTION,
        TEXT,
        model=model,
        tokenizer=tokenizer,
        options=ReadingOptions(max_length=128, stride=48, max_windows=3, stop_confidence=None, give_up_below=None),
    )
    assert same.answers == plain.answers  # options without the toy's field never turn it on
    # its option is a flag of a command line like any other, and checked like any other
    parsed = build_parser(ToyOptions).parse_args(["--last-window-first", "--max-windows", "all"])
    assert parsed.last_window_first is True and parsed.max_windows is None
    with pytest.raises(ValueError, match="^last_window_first is True or False"):
        ToyOptions(last_window_first="yes")
