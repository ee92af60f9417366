"""Repaint a finished drawing for another overlay without laying it out again.

Graphviz writes each box as ``<g id="n3" class="node"><title>…</title><path fill="…">``
(a polygon or ellipse for other shapes). :func:`repaint_svg` rewrites the fill of
every operator box and collapsed scope and their hover titles for a new overlay, from
the drawing's id table; positions, labels and edges stay. ``dot`` does not run, so a
change of colour scale on a drawn view of thousands of boxes takes milliseconds. A
scope's label line with its total appears at the next layout (labels size the boxes).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from html import escape
from typing import Any

from ..model import Graph
from ._drawing import TITLE_NAME_CHARS, DotResult
from ._paint import Overlay, paint_for
from ._statements import op_fill, scope_fill
from ._text import as_text, shorten

_BOX = re.compile(
    r'(<g id="([ns]\d+)" class="node">\s*<title>)(.*?)(</title>\s*<(?:polygon|path|ellipse) '
    r'fill=")([^"]*)(")',
    re.S,
)
#: A graph input or output: white inside under an overlay, as dot.py draws it there.
_VALUE_BOX = re.compile(
    r'(<g id="([io])\d+" class="node">\s*<title>.*?</title>\s*<ellipse fill=")([^"]*)(")', re.S
)
_VALUE_FILL = {"i": "#d3f9d8", "o": "#ffe8cc"}  # statements.value_box without an overlay
#: An open scope: its hover title holds the total too (its fill stays).
_CLUSTER = re.compile(r'(<g id="(c\d+)" class="cluster">\s*<title>)(.*?)(</title>)', re.S)


def repaint_svg(
    svg: str,
    result: DotResult,
    graph: Graph,
    drawn_with: Overlay | None,
    overlay: Overlay | None,
) -> str:
    """``svg`` (drawn from ``result`` with overlay ``drawn_with``) painted with ``overlay``.

    Only the fills and hover titles of node boxes and scopes change: those
    that ``drawn_with`` painted lose its fill (back to the op's own colour) and its
    hover line; those ``overlay`` paints get its fill and hover line.
    """
    ids = result.ids
    titles = result.titles

    def retitle(box: str, entry: Mapping[str, Any], key: str, title: str) -> str:
        old_line = _line(drawn_with, entry, key)
        new_line = _line(overlay, entry, key)
        if old_line == new_line:
            return title
        base = str(titles.get(box, ""))
        if old_line and base.endswith("\n" + old_line):
            base = base[: -len(old_line) - 1]
        return escape(base + ("\n" + new_line if new_line else ""))

    def replace_cluster(match: re.Match[str]) -> str:
        entry = ids.get(match.group(2))
        if entry is None or entry.get("kind") != "scope":
            return match.group(0)
        title = retitle(match.group(2), entry, str(entry.get("path", "")), match.group(3))
        return match.group(1) + title + match.group(4)

    def replace(match: re.Match[str]) -> str:
        box = match.group(2)
        entry = ids.get(box)
        if entry is None:
            return match.group(0)
        key, own_fill = _key_and_fill(entry, graph)
        if key is None:
            return match.group(0)
        fill = _fill(overlay, entry, key) or (
            match.group(5) if _fill(drawn_with, entry, key) is None else own_fill
        )
        title = retitle(box, entry, key, match.group(3))
        return match.group(1) + title + match.group(4) + fill + match.group(6)

    def replace_value(match: re.Match[str]) -> str:
        fill = "#ffffff" if overlay is not None else _VALUE_FILL[match.group(2)]
        return match.group(1) + fill + match.group(4)

    svg = _VALUE_BOX.sub(replace_value, _BOX.sub(replace, svg))
    return _CLUSTER.sub(replace_cluster, svg)


def _key_and_fill(entry: Mapping[str, Any], graph: Graph) -> tuple[str | None, str]:
    """(name or scope path, own fill) of a drawn box; (None, "") for other items."""
    kind = entry.get("kind")
    if kind == "node":
        index = entry.get("index")
        op = graph.nodes[index].op_type if isinstance(index, int) else ""
        calls = any(g.get("kind") == "function" for g in entry.get("graphs") or ())
        return str(entry.get("name", "")), op_fill(op if isinstance(op, str) else "", calls)
    if kind == "scope":
        return str(entry.get("path", "")), scope_fill(bool(entry.get("synthetic")))
    return None, ""


def _fill(overlay: Overlay | None, entry: Mapping[str, Any], key: str) -> str | None:
    if overlay is None:
        return None
    styles = overlay.styles if entry.get("kind") == "node" else overlay.scope_styles
    style = styles.get(key)
    paint = paint_for(style) if style is not None else None
    return paint.fill if paint is not None else None


def _line(overlay: Overlay | None, entry: Mapping[str, Any], key: str) -> str:
    """The hover line ``overlay`` adds to a box, as dot.py writes it."""
    if overlay is None:
        return ""
    lines = overlay.titles if entry.get("kind") == "node" else overlay.scope_titles
    text = lines.get(key)
    return shorten(as_text(text), TITLE_NAME_CHARS) if text else ""


__all__ = ["repaint_svg"]
