"""The attribute panel: everything about the selected node, with links to its neighbours."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import ipywidgets as widgets

from ..model import Graph, Model, Node
from ..tensors import Tensor
from ..views._edge_types import ValueTypes, value_types
from ..views._text import (
    as_text,
    attribute_text,
    overlay_value_text,
    shorten,
    tensor_text,
    value_text,
)
from . import _html as h

MAX_LINKS = 12
MAX_METADATA = 200  # metadata entries shown per node
MAX_METADATA_CHARS = 20_000  # characters of one metadata value shown
#: Values longer than this, or spanning lines (stack traces), fold into a block of their own.
METADATA_INLINE_CHARS = 160
# Long metadata values (module paths without spaces) wrap instead of widening the panel.
_METADATA_STYLE = (
    "<style>.oxe-metadata td{overflow-wrap:anywhere;word-break:break-word}"
    ".oxe-metadata summary{cursor:pointer;font-family:var(--jp-code-font-family,monospace);"
    "font-size:12px}</style>"
)


def _link(label: str, tooltip: str, on_click: Callable[[], None]) -> widgets.Button:
    # Button descriptions render as text, never markup; control and bidi characters go.
    button = widgets.Button(
        description=as_text(label[:80]),
        tooltip=as_text(tooltip[:500]),
        layout=widgets.Layout(width="auto", max_width="100%"),
    )
    button.on_click(lambda _b: on_click())
    return button


class AttributePanel(widgets.VBox):
    """Shows a node: op, domain, attributes, metadata, inputs/outputs with types and links.

    Input and output types come from :func:`~onnx_explorer.views._edge_types.value_types`, the
    lookup the graph's edge labels use (the file's value_info completed by ONNX shape
    inference), written by the same :func:`~onnx_explorer.views._text.type_text`.

    ``on_select(name)`` is called when a producer/consumer link is clicked, ``on_open_graph(path)``
    for a subgraph (If/Loop/Scan body or local function), ``on_show_tensor(tensor)`` for a
    tensor attribute.
    """

    def __init__(
        self,
        model: Model,
        on_select: Callable[[str], None],
        on_open_graph: Callable[[str], None],
        on_show_tensor: Callable[[Tensor], None],
        **kwargs: Any,
    ) -> None:
        self.model = model
        self.on_select = on_select
        self.on_open_graph = on_open_graph
        self.on_show_tensor = on_show_tensor
        self.node: Node | None = None
        self.graph: Graph | None = None
        self.values: Mapping[str, float | None] | None = None  # an overlay's, by node name
        self.values_name = ""
        super().__init__(layout=widgets.Layout(width="100%"), **kwargs)
        self.add_class("oxe-attributes")
        self.show(None, None)

    def set_values(self, values: Mapping[str, float | None] | None, name: str = "") -> None:
        """Show each node's overlay value (MACs, ms…) in its header; None: no value row."""
        self.values, self.values_name = values, name
        self.show(self.node, self.graph)

    def show(self, node: Node | None, graph: Graph | None) -> None:
        self.node, self.graph = node, graph
        if node is None or graph is None:
            self.children = [
                widgets.HTML(h.STYLE + h.muted("Select a node in the graph or the list."))
            ]
            return
        parts: list[widgets.Widget] = [widgets.HTML(h.STYLE + self._header(node))]
        if node.doc_string:
            parts.append(widgets.HTML(h.pre(node.doc_string)))
        parts += self._attributes(node)
        if node.metadata_props:
            parts.append(widgets.HTML(self._metadata(node)))
        types, note = value_types(graph, self.model)
        parts += self._values("inputs", node.inputs, graph, types, upstream=True)
        parts += self._values("outputs", node.outputs, graph, types, upstream=False)
        if note and any(types.get(name) is None for name in (*node.inputs, *node.outputs) if name):
            parts.append(widgets.HTML(h.muted(note)))
        if node.control_inputs:
            parts.append(widgets.HTML(h.title("control inputs")))
            parts += [self._node_link(name, graph) for name in node.control_inputs[:MAX_LINKS]]
        self.children = parts

    # -- sections ----------------------------------------------------------------
    def _header(self, node: Node) -> str:
        rows = [("name", node.name), ("op", node.op_type)]
        if self.model is None or self.model.support.has_op_domains:  # TensorFlow's have none
            rows.append(("domain", node.domain or "ai.onnx"))
        if node.device:
            rows.append(("device", node.device))
        if self.values is not None:
            value = self.values.get(node.name)
            rows.append((self.values_name, overlay_value_text(value, self.values_name)))
        if not node.has_file_name:
            rows.append(("note", "the file gives this node no name; this one is made up"))
        return h.title(node.op_type) + h.table(rows)

    def _attributes(self, node: Node) -> list[widgets.Widget]:
        if not node.attributes:
            return [widgets.HTML(h.muted("no attributes"))]
        rows = [(a.name, a.kind, attribute_text(a)) for a in node.attributes.values()]
        parts: list[widgets.Widget] = [
            widgets.HTML(h.title("attributes") + h.table(rows, ["name", "type", "value"]))
        ]
        for attr_name, graph in node.subgraphs():
            parts.append(
                _link(
                    f"open {attr_name} ({len(graph.nodes)} nodes)",
                    graph.path,
                    partial(self.on_open_graph, graph.path),
                )
            )
        for attr_name, tensor in node.tensors():
            parts.append(
                _link(
                    f"show tensor {attr_name}",
                    tensor_text(tensor),
                    partial(self.on_show_tensor, tensor),
                )
            )
        function = self.model.function_for(node)
        if function is not None:
            parts.append(
                _link(
                    f"open function {function.name}",
                    function.graph.path,
                    partial(self.on_open_graph, function.graph.path),
                )
            )
        return parts

    def _metadata(self, node: Node) -> str:
        """Every metadata entry: short ones in a table, long or multi-line ones folded."""
        rows: list[tuple[str, str]] = []
        blocks: list[str] = []
        items = list(node.metadata_props.items())
        for full_key, value in items[:MAX_METADATA]:
            key = shorten(full_key, 200)
            if len(value) > METADATA_INLINE_CHARS or "\n" in value:
                shown = value[:MAX_METADATA_CHARS]
                if len(value) > MAX_METADATA_CHARS:
                    shown += f"\n… ({len(value) - MAX_METADATA_CHARS:,} more characters)"
                lines = value.count("\n") + 1
                size = f"{lines:,} lines" if lines > 1 else f"{len(value):,} characters"
                blocks.append(
                    f"<details><summary>{h.esc(key)} ({h.esc(size)})</summary>"
                    f"{h.pre(shown)}</details>"
                )
            else:
                rows.append((key, value))
        html = _METADATA_STYLE + h.title("metadata") + '<div class="oxe-metadata">'
        if rows:
            html += h.table(rows)
        html += "".join(blocks)
        if len(items) > MAX_METADATA:
            html += h.muted(f"… and {len(items) - MAX_METADATA:,} more entries")
        return html + "</div>"

    def _values(
        self,
        title: str,
        names: tuple[str, ...],
        graph: Graph,
        types: ValueTypes,
        upstream: bool,
    ) -> list[widgets.Widget]:
        parts: list[widgets.Widget] = [widgets.HTML(h.title(title))]
        for name in names:
            if not name:
                parts.append(widgets.HTML(h.muted("(omitted optional input)")))
                continue
            kind = ""
            if name in graph.initializers:
                kind = " · initializer"
            elif any(v.name == name for v in graph.inputs):
                kind = " · graph input"
            elif any(v.name == name for v in graph.outputs):
                kind = " · graph output"
            info = types.get(name)
            parts.append(widgets.HTML(h.table([(name, value_text(info) + kind)])))
            links: list[widgets.Widget] = []
            if upstream:
                producer = graph.producer(name)
                if producer is not None:
                    links.append(self._node_link(producer.name, graph, "← "))
                tensor = graph.initializers.get(name)
                if tensor is not None:
                    links.append(
                        _link(
                            f"show {tensor.dtype_name} tensor",
                            tensor_text(tensor),
                            partial(self.on_show_tensor, tensor),
                        )
                    )
            else:
                consumers = graph.consumers(name)
                links += [self._node_link(c.name, graph, "→ ") for c in consumers[:MAX_LINKS]]
                if len(consumers) > MAX_LINKS:
                    links.append(widgets.Label(f"… and {len(consumers) - MAX_LINKS} more"))
            if links:
                parts.append(widgets.HBox(links, layout=widgets.Layout(flex_flow="row wrap")))
        return parts

    def _node_link(self, name: str, graph: Graph, prefix: str = "") -> widgets.Widget:
        if not graph.has_node(name):
            return widgets.Label(prefix + name)
        return _link(prefix + name, f"select {name}", lambda: self.on_select(name))
