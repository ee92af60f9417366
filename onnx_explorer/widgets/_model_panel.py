"""The model panel: metadata, opsets, inputs/outputs, graphs and functions, the format's
checker (``onnx.checker``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from ..model import Model
from ..summary import summarize
from ..views._text import MISSING, as_text, human_bytes, human_count, shape_text
from . import _html as h


def run_checker(model: Model) -> str:
    """Run the format's checker (``onnx.checker``) and return a one-paragraph verdict
    (never raises)."""
    return model.support.check(model)


class ModelPanel(widgets.VBox):
    """Summary of the whole model; lists every graph so a subgraph or function can be opened."""

    def __init__(self, model: Model, on_open_graph: Callable[[str], None], **kwargs: Any) -> None:
        self.model = model
        self.on_open_graph = on_open_graph
        checker = model.support.checker
        self.check_button = widgets.Button(
            description=f"run {checker or 'checker'}", icon="check", disabled=checker is None
        )
        self.check_result = widgets.HTML()
        self.check_button.on_click(lambda _b: self.check())
        graphs = [g for g in model.graphs() if g is not model.graph]
        self.graph_picker = widgets.Dropdown(
            options=[("main graph", "/")] + [(as_text(f"{g.path}  ({len(g.nodes)} nodes)"), g.path)
                                             for g in graphs[:2000]],
            value="/", description="graph", layout=widgets.Layout(width="100%"),
        )  # fmt: skip
        self._following = False
        self.graph_picker.observe(self._on_pick, "value")
        # The summary walks every weight (~1 s at 100,000 nodes): made when first shown.
        self.summary = widgets.HTML(h.STYLE + h.muted("summarizing…"))
        self._summarized = False
        children: list[widgets.Widget] = [self.summary]
        if graphs:
            children.append(self.graph_picker)
        children += [self.check_button, self.check_result]
        super().__init__(children, **kwargs)
        self.add_class("oxe-model")

    def activate(self) -> None:
        """The panel is on screen: write the summary now, if not done yet."""
        if not self._summarized:
            self._summarized = True
            self.summary.value = h.STYLE + self._html(summarize(self.model))

    def follow(self, path: str) -> None:
        """Show ``path`` as the picked graph (the explorer opened it some other way)."""
        values = {value for _label, value in self.graph_picker.options}
        self._following = True
        try:
            self.graph_picker.value = path if path in values else None
        finally:
            self._following = False

    def _on_pick(self, change: Any) -> None:
        if change["new"] and not self._following:
            self.on_open_graph(change["new"])

    def check(self) -> str:
        self.check_result.value = h.muted("checking…")
        verdict = run_checker(self.model)
        self.check_result.value = h.pre(verdict)
        return verdict

    @staticmethod
    def _html(info: dict[str, Any]) -> str:
        meta = [
            (
                "format",
                f"{info['format']}" + (f", IR {info['ir_version']}" if info["ir_version"] else ""),
            ),
            ("producer", f"{info['producer']} {info['producer_version']}".strip() or MISSING),
        ]
        if info["domain"]:
            meta.append(("domain", info["domain"]))
        if info["model_version"]:
            meta.append(("model version", info["model_version"]))
        meta += [
            ("nodes", f"{info['nodes']:,} in the main graph, {info['nodes_total']:,} in "
                      f"{info['graphs']} graph(s)"),
            ("weights", f"{info['tensors']:,} tensors ({info['initializers']:,} initializers), "
                        f"{human_count(info['parameters'])} parameters, "
                        f"{human_bytes(info['weight_bytes'])}"),
        ]  # fmt: skip
        meta += [(f"metadata: {k}", v) for k, v in info["metadata"].items()]
        parts = [h.title("model"), h.table(meta)]
        if info["doc_string"]:
            parts.append(h.pre(info["doc_string"]))
        if info["opsets"]:
            parts += [
                h.title("opsets"),
                h.table(
                    [(d or "ai.onnx", v) for d, v in info["opsets"].items()], ["domain", "version"]
                ),
            ]
        for title in ("inputs", "outputs"):
            if not info[title] and not info["opsets"]:
                continue  # a file of weights (safetensors, GGUF): no empty table
            rows: list[tuple[Any, ...]] = [
                (
                    v["name"],
                    v["type"] or "?",
                    shape_text(v["shape"]),
                )
                for v in info[title]
            ]
            parts += [h.title(title), h.table(rows, ["name", "type", "shape"])]
        if info["weights_by_dtype"]:
            rows = [
                (k, f"{v['tensors']:,}", human_count(v["parameters"]), human_bytes(v["bytes"]))
                for k, v in info["weights_by_dtype"].items()
            ]
            parts += [
                h.title("weights by dtype"),
                h.table(rows, ["dtype", "tensors", "parameters", "bytes"]),
            ]
        if info["weights_by_location"]:
            rows = [
                (k, f"{v['tensors']:,}", human_bytes(v["bytes"]))
                for k, v in info["weights_by_location"].items()
            ]
            parts += [
                h.title("weights by location"),
                h.table(rows, ["location", "tensors", "bytes"]),
            ]
        if info["functions"]:
            parts += [h.title("local functions"), h.table([(f,) for f in info["functions"]])]
        return "".join(parts)
