"""Making untrusted model text safe for DOT labels, SVG/XML text and the explorer's HTML.

Names, op types, doc strings and symbolic dims come from the model file. They
only ever reach DOT inside double-quoted label strings built by :func:`dot_string`,
SVG inside text content escaped by :func:`xml_text`, and the explorer's HTML through
:func:`html_escape`; identifiers, attribute names and URLs are always our own. All of
them, and the plain-text widget labels (:func:`~onnx_explorer.views._text.as_text`, which
lives with the rest of the display text), replace the same characters.
"""

from __future__ import annotations

import html
import re
from typing import Any

from ._text import as_text, shorten

_BREAKS = re.compile("\r\n|[\r\n\u2028\u2029\x85]")


def html_escape(value: Any) -> str:
    """HTML text content or attribute value (quotes escaped) showing ``value`` as
    :func:`as_text` does: the explorer's panels and static view use this, as the SVG does."""
    return html.escape(as_text(value), quote=True)


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
