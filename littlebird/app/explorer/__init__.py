"""The attention explorer: everything that explains a reading, apart from the reading itself.

The reader (``littlebird.reader``) and the app's asking (``app.asking``) answer questions and know nothing of
the explorer; the explorer imports them, never the other way round. Its modules, one job each:

- ``target``: :class:`ExplorerTarget`, the window of a reading the explorer shows, aimed by an
  ``AnswerChoice`` or a ``WindowChoice``;
- ``window``: that window laid out again, and run again with its attention weights;
- ``capture``: forward hooks that keep a window's layer inputs, while a question is read or a window runs;
- ``keys``: a token's keys, scores and weights, and every layer's weights, recomputed from those inputs;
- ``cache``: the last windows' captures, shared by the page's sessions;
- ``reductions``, ``head_metrics``, ``rollout``: a window's attention reduced to what is drawn;
- ``drawing``, ``token_figure``: the plotly figures; ``plots``: the figures for a loaded model;
- ``export``: the explorer's view as a file;
- ``explaining``: what the page calls: ``after_reading``, ``explain``, ``explain_token``, ``warm_explorer``.

This file imports none of them, so that importing one module does not load the others.
"""
