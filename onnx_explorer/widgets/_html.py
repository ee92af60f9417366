"""The only way panels build HTML: every piece of model text goes through :func:`esc`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..views._quoting import html_escape

STYLE = (
    "<style>.oxe-table{border-collapse:collapse;font-size:12px;margin:2px 0;max-width:100%}"
    ".oxe-table td,.oxe-table th{border-bottom:1px solid var(--jp-border-color2,#e5e5e5);"
    "padding:2px 8px;overflow-wrap:anywhere;"
    "text-align:left;vertical-align:top;font-family:var(--jp-code-font-family,monospace)}"
    ".oxe-table th{font-weight:600;color:var(--jp-ui-font-color2,#555)}"
    ".oxe-key{white-space:nowrap}"
    ".oxe-muted{color:var(--jp-ui-font-color2,#666)}"
    ".oxe-error{color:var(--jp-error-color1,#b00020);white-space:pre-wrap}"
    ".oxe-pre{white-space:pre-wrap;font-family:var(--jp-code-font-family,monospace);"
    "font-size:12px;margin:2px 0;max-height:12em;overflow:auto}"
    ".oxe-title{font-weight:600;font-size:14px}</style>"
)


def esc(text: object) -> str:
    """Escape text for HTML content and attribute values (quotes included); control and
    bidirectional characters become U+FFFD, as in the SVG (:func:`html_escape`)."""
    return html_escape(text)


def table(rows: Iterable[Sequence[object]], header: Sequence[str] | None = None) -> str:
    """An HTML table whose cells are all escaped text."""
    parts = ['<table class="oxe-table">']
    if header:
        parts.append("<tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>")
    for row in rows:
        # Long values wrap anywhere (a 300-character producer string must not widen the
        # panel); the first column, the row's key, never breaks.
        cells = [f'<td class="oxe-key">{esc(cell)}</td>' if i == 0 else f"<td>{esc(cell)}</td>"
                 for i, cell in enumerate(row)]  # fmt: skip
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table>")
    return "".join(parts)


def pre(text: object) -> str:
    return f'<div class="oxe-pre">{esc(text)}</div>'


def error(text: object) -> str:
    return f'<div class="oxe-error">{esc(text)}</div>'


def muted(text: object) -> str:
    return f'<span class="oxe-muted">{esc(text)}</span>'


def title(text: object) -> str:
    return f'<div class="oxe-title">{esc(text)}</div>'
