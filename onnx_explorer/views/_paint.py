"""What a drawing is painted with on top of the graph: per-node fills, ghosts, a legend.

An :class:`Overlay` is plain data handed to :func:`~onnx_explorer.views._drawing.build_dot`:
a fill per node name (a word of :data:`PALETTE`, or a ``#rrggbb`` colour for a numeric
scale), ghost boxes for nodes that are not in the graph any more (a model diff's removed
nodes, wired to the boxes that produced and consumed their values), hover lines, and
which fills count as "changes" on collapsed scopes. The model diff is one producer
(:func:`status_overlay`); a numeric colour scale is another, making ``#rrggbb`` fills.

All colours are light fills with dark text and a darker border: the dark theme inverts
the whole drawing (``graph_view.css``), which keeps them light-on-dark and readable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Paint:
    """How one kind of node is drawn: fill, border, and the text of its legend entry."""

    fill: str
    border: str
    legend: str
    dashed: bool = False


#: The fills a status word stands for. "unchanged" is plain on purpose: changes stand out.
PALETTE: dict[str, Paint] = {
    "added": Paint("#b2f2bb", "#2b8a3e", "added"),
    "changed": Paint("#ffe066", "#e67700", "changed"),
    "renamed": Paint("#a5d8ff", "#1971c2", "renamed"),
    "unchanged": Paint("#ffffff", "#adb5bd", "unchanged"),
    "removed": Paint("#f1f3f5", "#868e96", "removed", dashed=True),
}
#: Status words that count as a change on a collapsed scope ("3 changes").
CHANGE_WORDS = frozenset({"added", "changed", "renamed", "removed"})
_HEX = re.compile(r"#[0-9a-fA-F]{6}")


def paint_for(style: str) -> Paint | None:
    """The paint of a palette word or a ``#rrggbb`` fill; None for anything else."""
    paint = PALETTE.get(style)
    if paint is not None:
        return paint
    if _HEX.fullmatch(style):
        return Paint(style.lower(), "#495057", "")  # a scale says its value in a title
    return None


@dataclass(frozen=True)
class Ghost:
    """A node drawn although the graph does not hold it (dashed grey box).

    ``key`` identifies it to whoever made the overlay (a click reports it back);
    ``inputs``/``outputs`` are value names of the drawn graph it read and wrote: it is
    wired from their producers and to their consumers.
    """

    key: str
    name: str
    op_type: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    title: str = ""  # extra hover lines


@dataclass(frozen=True)
class Scale:
    """What the colour bar shows: series name, end values as text, colours low → high."""

    title: str
    low: str
    high: str
    colors: tuple[str, ...]
    log: bool = False
    note: str = ""  # e.g. "12 nodes without a value"

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "low": self.low, "high": self.high,
                "colors": list(self.colors), "log": self.log, "note": self.note}  # fmt: skip


@dataclass(frozen=True)
class Overlay:
    """Fills per node name (palette word or ``#rrggbb``), ghosts, hover lines, legend.

    ``counted``: the style words that count as changes on collapsed scopes and cluster
    headings (``"N changes"``; ghosts count as ``"removed"``). ``legend``: draw a legend
    of the words used (or ``legend_entries`` when given, e.g. a colour scale's stops).
    ``scope_styles`` / ``scope_titles``: fill and one label (and hover) line per
    collapsed scope, by path (a numeric scale's sums). ``scale``: a numeric scale's
    colour bar, drawn by the graph view beside the drawing (it survives repainting).
    """

    styles: Mapping[str, str] = field(default_factory=dict)
    ghosts: tuple[Ghost, ...] = ()
    titles: Mapping[str, str] = field(default_factory=dict)  # node name → hover lines
    counted: frozenset[str] = CHANGE_WORDS
    legend: bool = True
    legend_title: str = ""
    legend_entries: tuple[tuple[str, str], ...] = ()  # (style, text)
    scope_styles: Mapping[str, str] = field(default_factory=dict)  # scope path → fill
    scope_titles: Mapping[str, str] = field(default_factory=dict)  # scope path → label line
    scale: Scale | None = None  # a numeric scale: drawn by the graph view as a colour bar

    def counts(self, style: str) -> bool:
        return style in self.counted

    def legend_rows(self) -> list[tuple[Paint, str]]:
        """(paint, text) per legend line: the given entries, else the palette words used."""
        if not self.legend:
            return []
        if self.legend_entries:
            entries: Iterable[tuple[str, str]] = self.legend_entries
        else:
            used = set(self.styles.values())
            if self.ghosts:
                used.add("removed")
            entries = [(word, paint.legend) for word, paint in PALETTE.items() if word in used]
        rows = []
        for style, text in entries:
            paint = paint_for(style)
            if paint is not None:
                rows.append((paint, text))
        return rows


def status_overlay(
    status: Mapping[str, str],
    ghosts: Iterable[Ghost] = (),
    titles: Mapping[str, str] | None = None,
    legend_title: str = "",
) -> Overlay:
    """The model diff's overlay: node name → added / changed / renamed / unchanged."""
    return Overlay(
        styles=dict(status),
        ghosts=tuple(ghosts),
        titles=dict(titles or {}),
        legend_title=legend_title,
    )


__all__ = [
    "CHANGE_WORDS",
    "PALETTE",
    "Ghost",
    "Overlay",
    "Paint",
    "Scale",
    "paint_for",
    "status_overlay",
]
