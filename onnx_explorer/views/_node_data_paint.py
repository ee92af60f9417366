"""Painting a node-data file's series (Model Explorer node data, a Netron attachment).

:func:`node_data_overlay` turns a :class:`~onnx_explorer.node_data.Matched` series into
an :class:`~onnx_explorer.views._paint.Overlay` for one graph, coloured as the file
says, in Model Explorer's order: a result's own ``bgColor``, else the file's gradient
(min … max of the numbers), else its thresholds; a series with none of them is painted
like any number (the explorer's colour scale, negative numbers included) or, for
texts, one light fill per distinct text with a legend. Dark fills are lightened so the
drawing's dark text stays readable (the dark theme inverts both). Every value and name
from the file reaches the drawing as text only, through the hover lines and legend
that :mod:`._statements` and :mod:`._render` escape; a colour only as ``#rrggbb``.
"""

from __future__ import annotations

import math

from ..model import Graph
from ..node_data import Matched, fill_for, readable_fill, value_range
from ._colour_scale import BAR_STOPS, colour_at
from ._paint import Overlay, Scale
from ._quoting import one_line
from ._text import as_text, hover_value_text

#: Light fills for the distinct texts of a text series without colours (then repeated).
CATEGORY_FILLS = ("#a5d8ff", "#b2f2bb", "#ffe066", "#ffc9c9", "#d0bfff", "#99e9f2",
                  "#ffd8a8", "#e9ecef", "#c3fae8", "#fcc2d7")  # fmt: skip
#: Distinct texts given a legend line at most.
LEGEND_LINES = 12
_TEXT_LIMIT = 80


def node_data_overlay(matched: Matched, graph: Graph) -> Overlay:
    """The overlay of ``matched`` (a series matched to ``graph``'s nodes)."""
    shown = {as_text(node.name): node.name for node in graph.nodes}  # as drawn → as stored
    values = matched.values
    low, high = value_range(values.values())
    own_colours = bool(matched.gradient or matched.thresholds)
    categories: dict[str, str] = {}
    styles: dict[str, str] = {}
    titles: dict[str, str] = {}
    series = one_line(matched.series, _TEXT_LIMIT)
    for drawn, stored in shown.items():
        value = values.get(stored)
        if value is None:
            styles[drawn] = "#ffffff"
            continue
        titles[drawn] = f"{series}: {hover_value_text(value)}"
        fill = matched.colours.get(stored)
        if fill is None and own_colours:
            fill = fill_for(value, matched, low, high)
        elif fill is None and isinstance(value, str):
            fill = categories.setdefault(
                value, CATEGORY_FILLS[len(categories) % len(CATEGORY_FILLS)]
            )
        elif fill is None and isinstance(value, float):
            fill = _scaled(value, low, high)
        styles[drawn] = readable_fill(fill) if fill is not None else "#ffffff"
    missing = sum(1 for name in shown.values() if name not in values)
    note = f"{missing:,} nodes without a value" if missing else ""
    if categories or (own_colours and not matched.gradient) or matched.colours:
        entries = _legend(matched, categories)
        return Overlay(
            styles=styles, titles=titles, counted=frozenset(), legend=bool(entries),
            legend_title=series, legend_entries=entries,
        )  # fmt: skip
    colours = (
        tuple(readable_fill(s.colour) for s in matched.gradient)
        if matched.gradient
        else tuple(colour_at(k / (BAR_STOPS - 1)) for k in range(BAR_STOPS))
    )
    scale = Scale(
        title=series,
        low=hover_value_text(low),
        high=hover_value_text(high),
        colors=colours,
        note=note,
    )
    return Overlay(
        styles=styles, titles=titles, counted=frozenset(), legend=False,
        legend_title=series, scale=scale,
    )  # fmt: skip


def _scaled(value: float, low: float, high: float) -> str:
    if math.isnan(value):
        return "#ffffff"
    if math.isinf(value):
        return colour_at(1.0 if value > 0 else 0.0)
    return colour_at((value - low) / (high - low) if high > low else 1.0)


def _legend(matched: Matched, categories: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """(fill, text) lines: the thresholds' ranges, or the distinct texts' fills."""
    if matched.thresholds:
        lines, previous = [], None
        for t in matched.thresholds:
            text = (
                f"≤ {hover_value_text(t.value)}"
                if previous is None
                else (f"{hover_value_text(previous)} – {hover_value_text(t.value)}")
            )
            lines.append((readable_fill(t.colour), text))
            previous = t.value
        return tuple(lines[:LEGEND_LINES])
    if not categories:  # per-result colours: one line per distinct (text, colour)
        seen: dict[tuple[str, str], None] = {}
        for name, colour in matched.colours.items():
            value = matched.values.get(name)
            if value is not None:
                seen.setdefault((readable_fill(colour), hover_value_text(value)), None)
        return tuple(list(seen)[:LEGEND_LINES])
    return tuple(
        (fill, one_line(text, 40)) for text, fill in list(categories.items())[:LEGEND_LINES]
    )
