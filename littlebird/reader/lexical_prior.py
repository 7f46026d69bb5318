"""The lexical prior: with ``lexical_prior`` (and ``rank_windows``), each window's BM25 score over the document's best
window's, times the option, is added to its spans' scores, so the words the question shares with a window count in
the choice among windows too."""

from __future__ import annotations

from .plan import Plan
from .steps import ReadingContext, WindowStep


class LexicalPrior(WindowStep):
    """Weigh the windows to read by their first-pass scores."""

    option = "lexical_prior"
    place = 20

    @classmethod
    def wanted(cls, options) -> bool:
        return bool(options.lexical_prior) and options.rank_windows

    def applies(self, plan: Plan) -> bool:
        return plan.lexical is not None  # one window: nothing was ranked

    def run(self, plan: Plan, context: ReadingContext) -> None:
        plan.prior = context.options.lexical_prior * plan.lexical[plan.order] / max(float(plan.lexical.max()), 1e-9)
