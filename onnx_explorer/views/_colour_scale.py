"""A numeric overlay: node name → number painted as a colour scale, scopes summed.

:func:`colour_scale_overlay` turns any mapping node name → number (MACs, parameters, bytes, a
profile's milliseconds) into an :class:`~onnx_explorer.views._paint.Overlay` of
``#rrggbb`` fills for one graph: collapsed scopes get the sum (or max) of their nodes,
every box a hover line with its value in human units, and the overlay a :class:`Scale`
the graph view shows as a colour bar.

Colours are the light part of ColorBrewer's sequential "YlOrRd" (the stops matplotlib's
``YlOrRd`` colormap interpolates): dark text stays readable on every fill, and the dark
theme's invert filter turns them into dark fills with light text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal

from ..model import Graph
from ._paint import Overlay, Scale
from ._scopes import scope_tree
from ._text import MISSING, as_text, overlay_value_text

Reduce = Literal["sum", "max"]
REDUCES: tuple[str, ...] = ("sum", "max")

#: ColorBrewer sequential YlOrRd (matplotlib's "YlOrRd"), light to dark.
YLORRD = ("#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c",
          "#bd0026", "#800026")  # fmt: skip
#: Share of the colormap used (yellow to orange, up to #fea546): text keeps a WCAG
#: contrast over 4.5:1 on every fill in both themes. Beyond it the dark theme's
#: invert(0.88) turns the fills into mid-tones its light text no longer reads on.
LIGHT_PART = 0.42
#: Colour-bar stops sent to the browser (and the legend's gradient).
BAR_STOPS = 9


def checked_values(values: Any) -> dict[str, float | None]:
    """Node name → float from a dict or a pandas Series; missing values (None, NaN) kept
    as None. Anything else that is not a real number raises ValueError naming the entry."""
    items = getattr(values, "items", None)
    if items is None:
        raise TypeError(
            f"overlay values must be a mapping node name → number, not {type(values).__name__}"
        )
    checked: dict[str, float | None] = {}
    for name, value in items():
        checked[str(name)] = _number(name, value)
    return checked


def _number(name: Any, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool | str | bytes):
        raise ValueError(f"overlay value for node {name!r} is {value!r}, not a number")
    try:
        number = float(value)
    except OverflowError:  # an int past float range (a huge declared size): the top
        number = math.inf if value > 0 else -math.inf
    except (TypeError, ValueError):
        raise ValueError(f"overlay value for node {name!r} is {value!r}, not a number") from None
    if math.isnan(number):
        return None  # pandas' missing value
    if number < 0:  # -inf included
        raise ValueError(f"overlay value for node {name!r} is {value!r}: values must be ≥ 0")
    return number  # +inf allowed: an error that overflowed is the worst there is


def colour_at(t: float) -> str:
    """The fill at ``t`` in [0, 1] of the scale, in 256 steps (as matplotlib's colormaps)."""
    return _STEPS[round(min(max(t, 0.0), 1.0) * (LEVELS - 1))]


def _interpolated(t: float) -> str:
    """Linear interpolation between the stops, over the light part of the map."""
    t = t * LIGHT_PART * (len(YLORRD) - 1)
    k = min(int(t), len(YLORRD) - 2)
    frac = t - k
    a, b = _rgb(YLORRD[k]), _rgb(YLORRD[k + 1])
    return "#" + "".join(f"{round(x + (y - x) * frac):02x}" for x, y in zip(a, b, strict=True))


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


LEVELS = 256
_STEPS = tuple(_interpolated(k / (LEVELS - 1)) for k in range(LEVELS))


class _Titles(Mapping[str, str]):
    """Hover lines made when asked: a drawing shows at most a few thousand of 100k nodes."""

    def __init__(self, values: Mapping[str, float | None], names: dict[str, str], label: str):
        self._values, self._names, self._label = values, names, label

    def __getitem__(self, key: str) -> str:
        name = self._names[key]  # KeyError for a name not in the graph
        return f"{self._label}: {overlay_value_text(self._values.get(name), self._label)}"

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class _Mapper:
    """Value → position on the scale, linear or log10 between the smallest and largest."""

    def __init__(self, values: Iterable[float], log: bool) -> None:
        # +inf is painted at the top of the scale; the scale's ends are the finite values.
        shown = [v for v in values if (v > 0 or not log) and not math.isinf(v)]
        self.log = log
        self.low = min(shown) if shown else 0.0
        self.high = max(shown) if shown else 0.0

    def fill(self, value: float | None) -> str | None:
        if value is None or (self.log and value <= 0):
            return None  # no value: drawn plain
        if math.isinf(value):
            return colour_at(1.0)
        if self.high <= self.low:
            return colour_at(1.0 if value > 0 else 0.0)
        if self.log:
            span = math.log10(self.high) - math.log10(self.low)
            return colour_at((math.log10(value) - math.log10(self.low)) / span)
        return colour_at((value - self.low) / (self.high - self.low))


def scope_totals(
    graph: Graph, values: Mapping[str, float | None], reduce: Reduce = "sum"
) -> dict[str, float]:
    """Scope path → sum (or max) of the values of the nodes beneath it (synthetic groups
    included); scopes holding no value are left out."""
    if reduce not in REDUCES:
        raise ValueError(f"reduce must be 'sum' or 'max', not {reduce!r}")
    tree = scope_tree(graph)
    nodes = graph.nodes
    totals: dict[str, float] = {}
    for scope in tree.root.walk():
        if scope.is_root:
            continue
        found = [v for i in scope.subtree_nodes() if (v := values.get(nodes[i].name)) is not None]
        if found:
            totals[scope.path] = sum(found) if reduce == "sum" else max(found)
    return totals


def colour_scale_overlay(
    values: Mapping[str, float | None],
    graph: Graph,
    *,
    name: str = "value",
    log: bool = False,
    reduce: Reduce = "sum",
) -> Overlay:
    """The overlay of checked ``values`` (see :func:`checked_values`) on ``graph``.

    Nodes are filled by their value; collapsed scopes by the ``reduce`` ("sum" or "max")
    of their nodes' values, with it as a label line; nodes without a value (and zeros on
    a log scale) are drawn plain white. The scale's ends are the nodes' smallest and
    largest values; scope sums, far larger, are coloured on a scale of their own.
    """
    if reduce not in REDUCES:
        raise ValueError(f"reduce must be 'sum' or 'max', not {reduce!r}")
    shown = {as_text(node.name): node.name for node in graph.nodes}  # as drawn → as stored
    names = set(shown.values())
    own = {k: v for k, v in values.items() if k in names}
    mapper = _Mapper((v for v in own.values() if v is not None), log)
    styles = {key: mapper.fill(own.get(stored)) or "#ffffff" for key, stored in shown.items()}
    titles = _Titles(own, shown, name)
    scope_styles: dict[str, str] = {}
    scope_titles: dict[str, str] = {}
    word = "Σ" if reduce == "sum" else "max"
    totals = scope_totals(graph, own, reduce)
    # A scope's max lies within the nodes' range; its sum would darken every box to the
    # top of the nodes' scale, so sums get a scale of their own (said in the legend).
    scope_mapper = _Mapper(totals.values(), log) if reduce == "sum" else mapper
    for path, total in totals.items():
        scope_styles[path] = scope_mapper.fill(total) or "#ffffff"
        scope_titles[path] = f"{word} {name}: {overlay_value_text(total, name)}"
    missing = sum(1 for n in names if own.get(n) is None)
    notes = [f"{missing:,} nodes without a value"] if missing else []
    if totals and scope_mapper is not mapper:
        low = overlay_value_text(scope_mapper.low, name)
        high = overlay_value_text(scope_mapper.high, name)
        notes.append(f"scopes (Σ) on their own scale: {low} – {high}")
    scale = Scale(
        title=name + (" (log)" if log else ""),
        low=overlay_value_text(mapper.low, name) if own else MISSING,
        high=overlay_value_text(mapper.high, name) if own else MISSING,
        colors=tuple(colour_at(k / (BAR_STOPS - 1)) for k in range(BAR_STOPS)),
        log=log,
        note=" · ".join(notes),
    )
    return Overlay(
        styles=styles,
        titles=titles,
        counted=frozenset(),
        legend=False,  # the graph view draws the scale as a colour bar
        legend_title=name,
        scope_styles=scope_styles,
        scope_titles=scope_titles,
        scale=scale,
    )


__all__ = [
    "REDUCES",
    "YLORRD",
    "Scale",
    "checked_values",
    "colour_at",
    "colour_scale_overlay",
    "scope_totals",
]
