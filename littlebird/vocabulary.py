"""The tokens LittleBird adds to e5's vocabulary, and keeping user text from spelling them.

The paper adds [QUESTION] (its QA input layout, appendix A.2) and the KorQuAD 2.0 HTML element
tokens (appendix, "KorQuAD2.0"). They are appended after the source vocabulary in the order of
:data:`EXTRA_TOKENS`, so their ids are stable across runs.
"""

import re

QUESTION_TOKEN = "[QUESTION]"
TAG_TOKENS: tuple[str, ...] = ("<h1>", "<h2>", "<p>", "<table>", "<tr>", "<td>", "<th>", "<ul>", "<ol>", "<li>")
EXTRA_TOKENS: tuple[str, ...] = (QUESTION_TOKEN, *TAG_TOKENS)
SOURCE_SPECIAL_TOKENS: tuple[str, ...] = ("<s>", "</s>", "<pad>", "<unk>", "<mask>")  # e5's (XLM-R's) own

# Strings the tokenizer turns into special tokens; in user text they are plain characters.
_SPECIAL_STRINGS = re.compile("|".join(re.escape(t) for t in (*SOURCE_SPECIAL_TOKENS, *EXTRA_TOKENS)), re.IGNORECASE)
_LOOKALIKE = {"<": "\u2039", "[": "\uff3b"}  # same length, so character maps stay valid


def neutralize_special_strings(text: str, mapping=None) -> str:
    """Swap the first character of special-token strings ("<p>", "[QUESTION]", "</s>") for a lookalike.

    Document and question text must never produce the model's control tokens. With ``mapping``
    (per character, its index in the source text or -1), only strings that came from the source
    (mapping >= 0) are touched, not inserted tag tokens. The length never changes.
    """
    pieces, last = [], 0
    for match in _SPECIAL_STRINGS.finditer(text):
        if mapping is None or mapping[match.start()] >= 0:
            pieces.append(text[last : match.start()])
            pieces.append(_LOOKALIKE[text[match.start()]])
            last = match.start() + 1
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)
