"""The attribute panel: everything about the selected node, with links to its neighbours."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import ipywidgets as widgets

from ..model import Graph, Model, Node
from ..tensors import Tensor
from ..views.text import attribute_text, tensor_text, value_text
from . import html as h

MAX_LINKS = 12


def _link(label: str, tooltip: str, on_click: Callable[[], None]) -> widgets.Button:
    # Button descriptions render as text, never markup: safe for model names.
    button = widgets.Button(
        description=label[:80],
        tooltip=tooltip[:500],
        layout=widgets.Layout(width="auto", max_width="100%"),
    )
    button.on_click(lambda _b: on_click())
    return button


class AttributePanel(widgets.VBox):
    """Shows a node: op, domain, attributes, inputs/outputs with types and producer/consumer links.

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
        super().__init__(layout=widgets.Layout(width="100%"), **kwargs)
        self.add_class("oxe-attributes")
        self.show(None, None)

    def show(self, node: Node | None, graph: Graph | None) -> None:
        self.node = node
        if node is None or graph is None:
            self.children = [
                widgets.HTML(h.STYLE + h.muted("Select a node in the graph or the list."))
            ]
            return
        parts: list[widgets.Widget] = [widgets.HTML(h.STYLE + self._header(node))]
        if node.doc_string:
            parts.append(widgets.HTML(h.pre(node.doc_string)))
        parts += self._attributes(node)
        parts += self._values("inputs", node.inputs, node, graph, upstream=True)
        parts += self._values("outputs", node.outputs, node, graph, upstream=False)
        if node.control_inputs:
            parts.append(widgets.HTML(h.title("control inputs")))
            parts += [self._node_link(name, graph) for name in node.control_inputs[:MAX_LINKS]]
        self.children = parts

    # -- sections ----------------------------------------------------------------
    def _header(self, node: Node) -> str:
        rows = [("name", node.name), ("op", node.op_type), ("domain", node.domain or "ai.onnx")]
        if node.device:
            rows.append(("device", node.device))
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

    def _values(
        self, title: str, names: tuple[str, ...], node: Node, graph: Graph, upstream: bool
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
            info = graph.value(name)
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
