"""Reading documents: from a web address, an uploaded file or pasted text to a cleaned
:class:`~littlebird.documents.clean.Document` whose shown text the reader answers from.

Modules, one job each: `formats` (the one list of file formats: suffixes, content types, first bytes and the
module that reads each), one module per format (`text`, `pdf` with its PDFium worker `pdf_text`, `word`,
`hwpx`) and `archive` (ZIP containers opened under a zip-bomb bound),
`decode` (bytes -> text), `upload` (a file or a paste -> RawDocument), `fetch` (a URL -> RawDocument, with the
SSRF guard), `clean` (RawDocument -> Document), `limits` (how much one question may read) and `sources`
(a source -> a cached Document). Errors meant for the user are :class:`~littlebird.documents.errors.DocumentError`.
The package imports nothing heavy, so the command line's help and the page load it cheaply.
"""
