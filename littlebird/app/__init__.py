"""LittleBird QA app: from a URL, a file or pasted text to answer spans in the original text.

Modules, one job each: `fetch` (URL -> RawDocument, with the SSRF guard), `upload` (file or
pasted text -> RawDocument), `decode` (bytes -> text), `clean` (RawDocument -> Document),
`qa` (Document + question -> QAResult, through `littlebird.reader`, the reader the evaluation
scores; language detection and answer tidying live in `littlebird.language` and
`littlebird.answer_text`). Around them, the served app: `documents` (a source -> a cached Document),
`models` (checkpoints and the device), `asking` (one question, for the page and the /answer API),
`payloads` (its HTML and JSON), `limits` (how much and how long one question may read), `examples`,
`explorer` and `figures` (the attention plots), `cancellation` (which questions are still wanted)
and `ui` (the Gradio page). Import them directly; this package imports nothing heavy so that
`import littlebird.app` stays cheap. Errors meant for the user are `littlebird.app.errors.DocumentError`.
"""
