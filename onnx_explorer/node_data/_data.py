"""Per-node data as plain values: what a node-data file holds, and how it lands on a graph.

A :class:`NodeSeries` is one named series (``"macs"``, ``"max abs activation"``, a
Model Explorer file's only series, one Netron metric name): entries keyed by a node
name, a value (tensor) name or a Model Explorer id, each a number or a short text, with
the colours the file gave (Model Explorer's per-result ``bgColor``, its thresholds and
gradient). :class:`NodeData` is what one file held. :meth:`NodeData.on_graph` matches a
series to a graph's nodes (:class:`Matched`): a node key to that node, a value key to
the node producing it (a stored tensor: the first node reading it, as metrics count a
weight), and the keys matching nothing are listed, never fatal.

Invariants: values are finite floats or text (a non-finite number is the float
``inf``/``-inf``/``nan``, written to JSON as the text ``"inf"`` …, which no JSON reader
refuses); colours are ``#rrggbb`` only (:func:`css_colour` is the one door in); nothing
here escapes text: views and widgets escape what they show.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..model import Graph

#: What a key names. "id": a Model Explorer key, a node id or an output tensor name.
Kind = Literal["node", "value", "tensor", "id"]
KINDS: tuple[str, ...] = ("node", "value", "tensor", "id")
Value = float | str
FormatName = Literal["model-explorer", "netron"]

#: Texts read back as non-finite numbers in a numeric series (how the writers spell them).
NONFINITE_TEXT = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "nan": math.nan,
                  "infinity": math.inf, "-infinity": -math.inf}  # fmt: skip
#: Model Explorer's ONNX adapter names graph inputs and initializers "[value] <name>".
VALUE_PREFIX = "[value] "


@dataclass(frozen=True)
class Entry:
    """One value of a series: its key, what the key names, the value, a fill if given."""

    key: str
    kind: Kind
    value: Value
    colour: str | None = None  # "#rrggbb": the file's own fill for this entry


@dataclass(frozen=True)
class Threshold:
    """Model Explorer: values ≤ ``value`` (and above the previous threshold) get ``colour``."""

    value: float
    colour: str


@dataclass(frozen=True)
class GradientStop:
    """Model Explorer: ``stop`` in [0, 1] of the range min … max of the values, a colour."""

    stop: float
    colour: str


@dataclass(frozen=True)
class NodeSeries:
    """One named series of per-node (or per-value) data."""

    name: str
    entries: tuple[Entry, ...]
    graph: str = ""  # Model Explorer's graph id ("" when the file named none)
    thresholds: tuple[Threshold, ...] = ()
    gradient: tuple[GradientStop, ...] = ()

    @property
    def numeric(self) -> bool:
        """True when every value is a number (texts such as "inf" read as numbers)."""
        return all(isinstance(e.value, float) for e in self.entries)

    def values(self) -> dict[str, Value]:
        """key → value (a key given twice: the last, as both viewers keep)."""
        return {e.key: e.value for e in self.entries}

    def on_graph(self, graph: Graph) -> Matched:
        """This series matched to ``graph``'s nodes (see :class:`Matched`)."""
        return match(self, graph)


@dataclass(frozen=True)
class NodeData:
    """What one node-data file held: its format and its series (``ignored``: what was
    skipped, e.g. Netron's model- and graph-level rows, a colour that is no colour)."""

    format: FormatName
    series: tuple[NodeSeries, ...]
    ignored: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.series]

    def get(self, name: str | None = None, graph: str | None = None) -> NodeSeries:
        """The series called ``name`` (None: the first) for Model Explorer graph id
        ``graph`` (None: any). KeyError naming the series there are."""
        for s in self.series:
            if (name is None or s.name == name) and (graph is None or s.graph == graph):
                return s
        listed = ", ".join(repr(n) for n in dict.fromkeys(self.names)) or "none"
        raise KeyError(f"no series {name!r} in this {self.format} node data (series: {listed})")

    def on_graph(self, graph: Graph, series: str | None = None) -> Matched:
        """The series called ``series`` (None: the first; with several Model Explorer graphs,
        the one whose id is the graph's name) matched to ``graph``'s nodes."""
        graphs = {s.graph for s in self.series}
        if len(graphs) > 1 and graph.name in graphs:
            return self.get(series, graph.name).on_graph(graph)
        return self.get(series).on_graph(graph)


@dataclass(frozen=True)
class Matched:
    """A series on a graph: our node name → value (keys landing on one node: the largest
    number, or the first text), the file's fills per node, and the keys that matched no
    node (``unknown``) or named a value no node makes (``not_made``: a graph input)."""

    series: str
    values: dict[str, Value]
    colours: dict[str, str]
    unknown: tuple[str, ...]
    not_made: tuple[str, ...] = ()
    thresholds: tuple[Threshold, ...] = ()
    gradient: tuple[GradientStop, ...] = ()
    matched_keys: int = 0

    @property
    def numeric(self) -> bool:
        return all(isinstance(v, float) for v in self.values.values())

    def numbers(self) -> dict[str, float]:
        """Node name → the numeric values (texts left out)."""
        return {k: v for k, v in self.values.items() if isinstance(v, float)}

    def report(self, listed: int = 12) -> str:
        """One line: how many keys matched, and which did not (the first ``listed``)."""
        total = self.matched_keys + len(self.unknown) + len(self.not_made)
        text = f"{self.series}: {self.matched_keys:,} of {total:,} keys matched nodes"
        if self.unknown:
            shown = ", ".join(self.unknown[:listed])
            left = len(self.unknown) - listed
            more = f" … and {left:,} more" if left > 0 else ""
            text += f"; no node or value named {shown}{more}"
        if self.not_made:
            text += f"; {len(self.not_made):,} values no node makes (graph inputs)"
        return text


def match(series: NodeSeries, graph: Graph) -> Matched:
    """Match ``series`` to ``graph``'s nodes (see :class:`Matched`)."""
    values: dict[str, Value] = {}
    colours: dict[str, str] = {}
    unknown: list[str] = []
    not_made: list[str] = []
    matched = 0
    for entry in series.entries:
        node, made = _node_for(entry, graph)
        if node is None:
            (unknown if made else not_made).append(entry.key)
            continue
        matched += 1
        old = values.get(node)
        if old is None or (isinstance(old, float) and isinstance(entry.value, float)
                           and _larger(entry.value, old)):  # fmt: skip
            values[node] = entry.value
            if entry.colour is not None:
                colours[node] = entry.colour
    return Matched(
        series.name, values, colours, tuple(unknown), tuple(not_made),
        series.thresholds, series.gradient, matched,
    )  # fmt: skip


def _larger(new: float, old: float) -> bool:
    return math.isnan(old) or (not math.isnan(new) and new > old)


def _node_for(entry: Entry, graph: Graph) -> tuple[str | None, bool]:
    """(our node name, True) for an entry; (None, True) unknown; (None, False) a value
    the graph has but no node makes (an input)."""
    key, kind = entry.key, entry.kind
    if kind in ("node", "id") and graph.has_node(key):
        return key, True
    if kind == "node":
        return None, True
    if kind == "id" and key.startswith(VALUE_PREFIX):
        key = key[len(VALUE_PREFIX) :]
    producer = graph.producer(key)
    if producer is not None:
        return producer.name, True
    if kind == "tensor" or (kind == "id" and key in graph.initializers):
        # a stored tensor counts toward the first node reading it, as metrics count it
        readers = graph.consumers(key)
        if readers:
            return readers[0].name, True
    known = key in graph.initializers or any(v.name == key for v in graph.inputs)
    return None, not known


def node_entries(
    values: Mapping[str, Value | None], graph: Graph | None = None
) -> tuple[Entry, ...]:
    """Entries for node name → value (None left out). A node whose name the reader made up
    (``Node.has_file_name`` False: no viewer knows it) is keyed by its first output."""
    entries: list[Entry] = []
    for name, value in values.items():
        if value is None:
            continue
        key, kind = name, "node"
        if graph is not None and graph.has_node(name):
            node = graph.node(name)
            if not node.has_file_name and node.outputs and node.outputs[0]:
                key, kind = node.outputs[0], "value"
        entries.append(Entry(key, kind, _value(value)))  # type: ignore[arg-type]
    return tuple(entries)


def _value(value: Value | int | bool) -> Value:
    if isinstance(value, str):
        return value
    try:
        return float(value)
    except OverflowError:  # an int past float range: infinite, as an overlay paints it
        return math.inf if value > 0 else -math.inf


def json_value(value: Value) -> float | int | str:
    """A value as JSON holds it: whole floats as ints, non-finite ones as text."""
    if isinstance(value, str):
        return value
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


# -- colours ------------------------------------------------------------------------
_HEX6 = re.compile(r"#[0-9a-fA-F]{6}")
_HEX3 = re.compile(r"#[0-9a-fA-F]{3}")
#: The CSS colour names the files use most (Model Explorer's docs: red, blue, yellow…);
#: any other colour must be written as hex.
CSS_NAMES = {
    "black": "#000000", "white": "#ffffff", "red": "#ff0000", "green": "#008000",
    "blue": "#0000ff", "yellow": "#ffff00", "orange": "#ffa500", "purple": "#800080",
    "gray": "#808080", "grey": "#808080", "pink": "#ffc0cb", "brown": "#a52a2a",
    "cyan": "#00ffff", "magenta": "#ff00ff", "lime": "#00ff00", "navy": "#000080",
    "teal": "#008080", "olive": "#808000", "maroon": "#800000", "silver": "#c0c0c0",
    "aqua": "#00ffff", "fuchsia": "#ff00ff", "gold": "#ffd700", "salmon": "#fa8072",
    "lightgreen": "#90ee90", "lightblue": "#add8e6", "lightgray": "#d3d3d3",
    "lightgrey": "#d3d3d3", "darkgreen": "#006400", "darkred": "#8b0000",
    "darkblue": "#00008b", "darkorange": "#ff8c00", "violet": "#ee82ee",
    "indigo": "#4b0082", "coral": "#ff7f50", "tomato": "#ff6347", "khaki": "#f0e68c",
    "beige": "#f5f5dc", "ivory": "#fffff0", "lavender": "#e6e6fa", "crimson": "#dc143c",
}  # fmt: skip


def css_colour(text: object) -> str | None:
    """``#rrggbb`` for a ``#rgb`` / ``#rrggbb`` colour or a common CSS name; None for
    anything else (a colour is never passed on as the file wrote it)."""
    if not isinstance(text, str) or len(text) > 32:
        return None
    text = text.strip()
    if _HEX6.fullmatch(text):
        return text.lower()
    if _HEX3.fullmatch(text):
        return "#" + "".join(c * 2 for c in text[1:].lower())
    return CSS_NAMES.get(text.lower())


def readable_fill(colour: str) -> str:
    """A fill dark text reads on: a dark colour is mixed with white (the drawing's text
    is dark, and the dark theme inverts fills and text together)."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    luminance = sum(w * (c / 255) ** 2.2 for w, c in zip((0.2126, 0.7152, 0.0722), (r, g, b)))
    if luminance >= 0.38:  # Model Explorer's own cut between dark and light text
        return colour
    mixed = (round(c + (255 - c) * 0.6) for c in (r, g, b))
    return "#" + "".join(f"{c:02x}" for c in mixed)


def fill_for(value: Value, matched: Matched | NodeSeries, low: float, high: float) -> str | None:
    """Model Explorer's colouring of a number: the gradient (stops over ``low`` … ``high``)
    if given, else the first threshold the value is at or below; None: no colour."""
    if isinstance(value, str) or math.isnan(value):
        return None
    gradient = sorted(matched.gradient, key=lambda s: s.stop)
    if gradient:
        t = (value - low) / (high - low) if high > low else 0.0
        for a, b in itertools.pairwise(gradient):
            if a.stop <= t <= b.stop:
                frac = (t - a.stop) / (b.stop - a.stop) if b.stop > a.stop else 0.0
                return _mix(a.colour, b.colour, frac)
        return None
    for threshold in matched.thresholds:
        if value <= threshold.value:
            return threshold.colour
    return None


def _mix(a: str, b: str, frac: float) -> str:
    pa = [int(a[i : i + 2], 16) for i in (1, 3, 5)]
    pb = [int(b[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{math.floor(x + (y - x) * frac):02x}" for x, y in zip(pa, pb))


def value_range(values: Iterable[Value]) -> tuple[float, float]:
    """The smallest and largest finite numbers (0, 0 when there are none)."""
    found = [v for v in values if isinstance(v, float) and math.isfinite(v)]
    return (min(found), max(found)) if found else (0.0, 0.0)


@dataclass
class Problems:
    """What a reader skipped, one short line each (at most ``limit`` kept)."""

    lines: list[str] = field(default_factory=list)
    limit: int = 50
    count: int = 0

    def add(self, line: str) -> None:
        self.count += 1
        if len(self.lines) < self.limit:
            self.lines.append(line)

    def result(self) -> tuple[str, ...]:
        more = self.count - len(self.lines)
        return (*self.lines, f"… and {more:,} more") if more > 0 else tuple(self.lines)
