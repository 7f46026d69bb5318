"""``read``: the steps of a reading, composed as its options name them."""

from __future__ import annotations

import time
from typing import Callable

from ..reading_options import DEFAULT_READING, ReadingOptions
from .decoding import Decoded, Tidy, decode
from .full_read import read_in_full
from .model import ReadingModel, end_depends_on_start, no_answer_threshold, prepare_model
from .passes import WindowLogits
from .plan import Plan, plan_windows
from .result import Reading, reading_note, window_records
from .steps import ReadingContext, window_steps
from .stopping import StopRule, stop_rules, why_stopped


def read(
    question: str,
    text: str,
    *,
    model: ReadingModel,
    tokenizer,
    options: ReadingOptions = DEFAULT_READING,
    model_text: str | None = None,
    model_to_text=None,
    tidy: Tidy | None = None,
    on_window: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_pass: Callable[[str], None] | None = None,
) -> Reading:
    """Read ``question`` from a document with an extractive QA model: the one reader of this project.

    ``options`` (:class:`ReadingOptions`) is the one way to set the reading: the windows, how many are read and
    when the reading stops, the glimpses, the decoding, the threads and the CPU mode; each field's help says
    what it does. The reading is its steps: plan the windows (:mod:`~littlebird.reader.plan`), the window steps
    the options turn on (:mod:`~littlebird.reader.steps`: rank, weigh, glimpse), read in full under the stop rules
    (:mod:`~littlebird.reader.full_read`, :mod:`~littlebird.reader.stopping`), decode
    (:func:`~littlebird.reader.decoding.decode`).

    ``text`` is the document as shown; the model reads ``model_text`` (default: ``text``), whose
    character ``i`` is ``text[model_to_text[i]]`` or an inserted tag (-1). Answers are spans of
    ``text``. ``tidy(text, start, end)`` narrows each candidate span (e.g.
    :func:`littlebird.answer_text.tidy_answer_span`). A document without text gives no answers and no
    windows.

    Windows are read best-ranked first, and ``Reading.window_token_spans`` lists them so;
    ``Reading.windows`` lists every window in document order with its first-pass rank and, for
    those read, the answerable logit and best span score the answers were chosen by. When the time budget
    or ``max_windows`` leaves windows unread, the answers come from the windows read,
    ``Reading.n_windows`` is below ``Reading.windows_planned`` and ``Reading.note`` says how much
    was read. ``on_window(done, total)`` is called after each model call, for progress bars.

    ``should_stop()``, when given, is asked before each model call; once it returns True the reading raises
    :class:`ReadingStopped`, so a question nobody waits for any more frees the machine after the window in
    progress.

    ``on_pass(kind)``, when given, is told what the model's next passes are: "glimpse" before the glimpses'
    batch, "read" before the windows read in full. Hooks on the model that keep what a window's pass leaves
    (the app's attention explorer) tell the two apart by it; the reading itself does not change.
    """
    prepare_model(model, options)
    clock = time.perf_counter()
    deadline = None if options.time_budget is None else time.monotonic() + max(0.0, options.time_budget)
    plan = plan_windows(
        question,
        text,
        model=model,
        tokenizer=tokenizer,
        options=options,
        model_text=model_text,
        model_to_text=model_to_text,
    )
    timings = {"tokenize": time.perf_counter() - clock}
    if not plan.has_text:
        timings.update(model=0.0, decode=0.0)
        return Reading([], 0.0, True, plan.n_tokens, [], len(plan.prefix), timings)

    context = ReadingContext(model, tokenizer, options, should_stop=should_stop, on_pass=on_pass)
    for step in window_steps(options):
        if step.applies(plan):
            clock = time.perf_counter()
            step.run(plan, context)
            timings[step.timing] = timings.get(step.timing, 0.0) + time.perf_counter() - clock
    rules = stop_rules(options)
    clock = time.perf_counter()
    logits = read_in_full(plan, context, rules, deadline=deadline, on_window=on_window)
    timings["model"] = time.perf_counter() - clock

    clock = time.perf_counter()
    decoded = decode(
        logits,
        plan.encoded.spans,
        len(plan.prefix),
        plan.starts[: len(logits.answerable_logits)],
        text,
        n_best=options.n_best,
        tidy=tidy,
        end_depends_on_start=end_depends_on_start(model),
        rank_windows=options.rank_windows,
        window_prior=plan.prior,
    )
    timings["decode"] = time.perf_counter() - clock
    return _reading(plan, logits, decoded, rules, timings, options, no_answer_threshold(model, options))


def _reading(
    plan: Plan,
    logits: WindowLogits,
    decoded: Decoded,
    rules: list[StopRule],
    timings: dict[str, float],
    options: ReadingOptions,
    threshold: float,
) -> Reading:
    """The Reading of ``plan``'s windows read (``logits``) and decoded, "no answer" below ``threshold``: why it
    stopped, its windows and its note."""
    starts = plan.starts[: len(logits.answerable_logits)]
    left_unread = len(starts) < len(plan.order)
    stopped = why_stopped(rules, logits) if rules and left_unread else None
    timed_out = left_unread and stopped is None
    if plan.narrowed is not None and stopped is None and not timed_out:
        stopped = plan.narrowed
    answers, answerable = decoded.answers, decoded.answerable_probability
    reading = Reading(
        answers,
        answerable,
        not answers or answerable < threshold,
        plan.n_tokens,
        [(s, min(s + plan.capacity, plan.n_tokens)) for s in starts],
        len(plan.prefix),
        timings,
        windows_planned=len(plan.every_start),
        stopped=stopped,
        windows=window_records(
            plan.every_start,
            plan.capacity,
            plan.n_tokens,
            plan.ranked,
            plan.lexical,
            plan.order,
            logits.answerable_logits,
            decoded.best_span_scores,
            plan.glimpses,
        ),
    )
    if len(starts) < len(plan.every_start):
        reading.note = reading_note(reading, timed_out=timed_out, time_budget=options.time_budget)
    return reading
