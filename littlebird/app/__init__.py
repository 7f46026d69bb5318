"""LittleBird QA app: the Gradio page and the served questions, over documents read by `littlebird.documents`.

Modules, one job each: `qa` (Document + question -> the reader's `Reading`, through `littlebird.reader`, the
reader the evaluation scores; language detection and answer tidying live in `littlebird.language` and
`littlebird.answer_text`), `models` (checkpoints and the device), `asking` (one question, for the page and the
/answer API), `payloads` (its HTML and JSON), `examples`, `explorer` and `figures` (the attention plots),
`cancellation` (which questions are still wanted), `turns` (the queue serving clients in turn) and `ui` (the Gradio
page). Reading a document (a URL, a file or a paste, cleaned and cached, within the limits of one question) is
`littlebird.documents`'. Import the modules directly; this package imports nothing heavy so that
`import littlebird.app` stays cheap. Errors meant for the user are `littlebird.documents.errors.DocumentError`.
"""
