"""The searchable, filterable, paged node list."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import traitlets

from ..model import Graph
from ..views._tables import NodeSearch, SearchError
from ..views._text import as_text, middle_cut, overlay_value_text
from ._picking import QuietPicking

PAGE_SIZE = 200
#: Characters of a node's name in a list row (about the 330 px list's width in 12 px
#: monospace, beside the op type): longer names lose their middle.
ROW_NAME_CHARS = 40


class NodeList(QuietPicking, widgets.VBox):
    """Search nodes by name, op type or regular expression; filter by op type and domain.

    Only one page of results is sent to the browser, so 100,000-node graphs stay fast.
    ``selected`` holds the chosen node's name. With overlay values (:meth:`set_values`)
    each row shows its node's value and the list can sort by it, largest first.
    """

    selected = traitlets.Unicode(None, allow_none=True)
    revision = traitlets.Int(0)  # bumped whenever the matches change

    def __init__(self, graph: Graph, page_size: int = PAGE_SIZE, **kwargs: Any) -> None:
        self.page_size = page_size
        self.search_box = widgets.Text(
            placeholder="search name or op type", continuous_update=True,
            layout=widgets.Layout(width="auto", flex="1 1 auto"),
        )  # fmt: skip
        self.regex_box = widgets.Checkbox(
            value=False, description="regex", indent=False, layout=widgets.Layout(width="70px")
        )
        # Labels as wide as their text, and the row wraps: the side panel is narrow, and a
        # fixed 90 px label per dropdown pushed the domain filter out of sight.
        compact = {"description_width": "initial"}
        self.op_filter = widgets.Dropdown(
            description="op", style=compact, layout=widgets.Layout(width="auto")
        )
        self.domain_filter = widgets.Dropdown(
            description="domain", style=compact, layout=widgets.Layout(width="auto")
        )
        self.sort_box = widgets.Checkbox(
            value=False, description="sort by value", indent=False, disabled=True,
            layout=widgets.Layout(width="auto"),
        )  # fmt: skip
        # 14 rows: eight left 250 px of the panel empty below the list (1400x900)
        self.results = widgets.Select(rows=14, layout=widgets.Layout(width="100%"))
        self.status = widgets.Label()
        self.prev_button = widgets.Button(
            description="◀", layout=widgets.Layout(width="36px"), tooltip="previous page"
        )
        self.next_button = widgets.Button(
            description="▶", layout=widgets.Layout(width="36px"), tooltip="next page"
        )
        super().__init__(
            [
                widgets.HBox([self.search_box, self.regex_box]),
                widgets.HBox(
                    [self.op_filter, self.domain_filter, self.sort_box],
                    layout=widgets.Layout(flex_flow="row wrap"),
                ),
                self.results,
                widgets.HBox([self.prev_button, self.next_button, self.status]),
            ],
            **kwargs,
        )
        self.add_class("oxe-node-list")
        self.search_box.add_class("oxe-node-search")
        self.results.add_class("oxe-node-results")
        self._matches: list[int] = []
        self._page = 0
        self._values: Mapping[str, float | None] | None = None
        self._value_name = ""
        self.search_box.observe(self._on_query, "value")
        self.regex_box.observe(self._on_query, "value")
        self.op_filter.observe(self._on_query, "value")
        self.domain_filter.observe(self._on_query, "value")
        self.sort_box.observe(self._on_query, "value")
        self.results.observe(self._on_pick, "value")
        self.prev_button.on_click(lambda _: self.show_page(self._page - 1))
        self.next_button.on_click(lambda _: self.show_page(self._page + 1))
        self.set_graph(graph)

    # -- public ------------------------------------------------------------------
    def set_graph(self, graph: Graph) -> None:
        """Show another graph's nodes; keeps the search text."""
        self.index = NodeSearch(graph)
        with self.quietly():
            self.op_filter.options = [(f"all ({len(self.index):,})", "")] + [
                (as_text(f"{op} ({n:,})"), op) for op, n in self.index.op_counts.items()
            ]
            self.op_filter.value = ""
            self.domain_filter.options = [("all", "")] + [
                (as_text(f"{d} ({n:,})"), d) for d, n in self.index.domain_counts.items()
            ]
            self.domain_filter.value = ""
        self.refresh()

    def set_values(self, values: Mapping[str, float | None] | None, name: str = "") -> None:
        """Show a value per node (an overlay's: MACs, ms…) and offer to sort by it; None
        takes them away."""
        self._values = values
        self._value_name = name
        with self.quietly():
            self.sort_box.disabled = values is None
            self.sort_box.description = f"sort by {name}" if values is not None else "sort by value"
            if values is None:
                self.sort_box.value = False
        self.refresh()

    @property
    def filtering(self) -> bool:
        """Whether a search text or a filter narrows the list (else it lists everything)."""
        return bool(self.search_box.value or self.op_filter.value or self.domain_filter.value)

    @property
    def matches(self) -> list[str]:
        """Names of every node matching the current search and filters."""
        return [self.index.graph.nodes[i].name for i in self._matches]

    def refresh(self) -> None:
        try:
            self._matches = self.index.search(
                self.search_box.value,
                regex=self.regex_box.value,
                op_type=self.op_filter.value or None,
                domain=self.domain_filter.value or None,
            )
            values = self._values
            if values is not None and self.sort_box.value:
                nodes = self.index.graph.nodes
                # Largest first; nodes without a value last, in file order (a stable sort).
                self._matches.sort(key=lambda i: -_sort_value(values.get(nodes[i].name)))
        except SearchError as exc:
            self._matches = []
            self._page = 0
            self._set_options([])
            self.status.value = str(exc)
            self.revision += 1
            return
        self.show_page(self._page_of(self.selected) if self.selected else 0)
        self.revision += 1

    def show_page(self, page: int) -> None:
        pages = max(1, -(-len(self._matches) // self.page_size))
        self._page = min(max(page, 0), pages - 1)
        start = self._page * self.page_size
        shown = self._matches[start : start + self.page_size]
        nodes = self.index.graph.nodes
        self._set_options([(self._row_text(nodes[i].name, nodes[i].op_type), nodes[i].name)
                           for i in shown])  # fmt: skip
        total = len(self._matches)
        if total:
            self.status.value = f"{start + 1:,}–{start + len(shown):,} of {total:,} nodes"
        else:
            self.status.value = "no matching node"
        self.prev_button.disabled = self._page == 0
        self.next_button.disabled = self._page >= pages - 1

    # -- internals ---------------------------------------------------------------
    def _row_text(self, name: str, op_type: str) -> str:
        # the whole name is in the attribute panel once the node is picked
        text = f"{middle_cut(name, ROW_NAME_CHARS)}   [{op_type}]"
        if self._values is not None:  # first: long names would push it out of sight
            text = f"{overlay_value_text(self._values.get(name), self._value_name)}   {text}"
        return as_text(text)

    def _page_of(self, name: str | None) -> int:
        if name is None or not self.index.graph.has_node(name):
            return 0
        position = self.index.graph.node(name).index
        try:
            return self._matches.index(position) // self.page_size
        except ValueError:
            return 0

    def _set_options(self, options: list[tuple[str, str]]) -> None:
        with self.quietly():
            self.results.options = options
            values = {v for _, v in options}
            self.results.value = self.selected if self.selected in values else None

    def _on_query(self, _change: Any) -> None:
        if not self._updating:
            self._page = 0
            self.refresh()

    @traitlets.observe("selected")
    def _on_selected(self, change: Any) -> None:
        name = change["new"]
        if name is None:
            return
        page = self._page_of(name)
        if page != self._page:
            self.show_page(page)
        else:
            self.show_picked(self.results, name)


def _sort_value(value: float | None) -> float:
    return -1.0 if value is None else value
