"""Making untrusted model text safe for DOT labels, SVG/XML text and the explorer's HTML.

Names, op types, doc strings and symbolic dims come from the model file. They
only ever reach DOT inside double-quoted label strings built by :func:`dot_string`,
SVG inside text content escaped by :func:`xml_text`, and the explorer's HTML through
:func:`html_escape`; identifiers, attribute names and URLs are always our own. All of
them, and the plain-text widget labels (:func:`as_text`), replace the same characters.
"""

from __future__ import annotations

import html
import re
from typing import Any

#: Characters that XML 1.0 forbids or that would move text around on screen: C0/C1
#: controls (tab and newline are handled separately), lone surrogates, the two
#: non-characters, and bidirectional controls (embeddings, overrides, isolates and the
#: LRM/RLM/ALM marks: they can disguise a name).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff"
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
_BREAKS = re.compile("\r\n|[\r\n\u2028\u2029\x85]")


def as_text(value: Any) -> str:
    """Any model string as printable ``str``: bytes (invalid UTF-8 in a name) are decoded."""
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", "replace")
    elif not isinstance(value, str):
        value = str(value)
    return _UNSAFE.sub("\ufffd", value)


def html_escape(value: Any) -> str:
    """HTML text content or attribute value (quotes escaped) showing ``value`` as
    :func:`as_text` does: the explorer's panels and static view use this, as the SVG does."""
    return html.escape(as_text(value), quote=True)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut marked by an ellipsis."""
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


def one_line(value: Any, limit: int) -> str:
    """Printable, single-line (breaks shown as ↵) and at most ``limit`` characters."""
    text = _BREAKS.sub("↵", as_text(value)).replace("\t", " ")
    return shorten(text, limit)


def dot_string(text: str) -> str:
    """A double-quoted DOT string whose label shows ``text`` literally.

    Backslashes are doubled first so that ``\\N``, ``\\G``, ``\\l`` and a trailing odd
    backslash lose their meaning; ``"`` is escaped; ``&`` becomes ``&amp;`` because
    graphviz decodes HTML entities in labels. Only ``\\n`` line breaks that we put in
    ourselves (as real newlines in ``text``) survive as breaks. Being quoted, ``<b>``
    stays text: HTML-like labels need ``<...>`` delimiters, which only our own
    table labels use, with every piece of model text escaped by :func:`html_text`.
    """
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    return '"' + out.replace("\n", "\\n") + '"'


def dot_label(lines: list[str]) -> str:
    """A quoted DOT label of centred lines; each line must already be made single-line."""
    return dot_string("\n".join(lines))


def html_text(value: Any) -> str:
    """Text for a cell of a Graphviz HTML-like label: one printable line, every markup
    character escaped, so model text can never open a tag there either."""
    # Graphviz expands \\N, \\G, \\L… in HTML-like cells too: a doubled backslash prints one.
    text = _BREAKS.sub("↵", as_text(value)).replace("\t", " ").replace("\\", "\\\\")
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        .replace('"', "&quot;").replace("'", "&#39;")
    )  # fmt: skip


def xml_text(value: Any, limit: int = 4000) -> str:
    """Escaped XML text content (for ``<title>``): printable, breaks kept, length capped."""
    text = shorten(as_text(value), limit)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
