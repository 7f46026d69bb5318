"""LittleBird QA app: from a URL, a file or pasted text to answer spans in the original text.

Modules, one job each: `fetch` (URL -> RawDocument), `upload` (file or pasted text -> RawDocument),
`clean` (RawDocument -> Document), `qa` (Document + question -> QAResult). Import them directly;
this package imports nothing heavy so that `import app` stays cheap.
"""
