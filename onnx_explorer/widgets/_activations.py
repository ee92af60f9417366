"""Activations in the explorer: ``ex.run(feeds)`` and ``ex.compare(other, feeds)``.

A panel under the node's attributes shows the selected node's outputs: statistics and
a histogram (or both sides and the histogram of the difference when comparing), a
button jumps to the first node that made a NaN/Inf / first out-of-tolerance node, and
the explorer's own "colour by" dropdown is offered "max abs activation", "non-finite"
or "error vs other" (``Explorer.offer_series``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import ipywidgets as widgets

from ..runs import CompareResult, RunFailedError, RunResult, TensorRecord, compare, run
from ..stats import Histogram
from ..views._colour_scale import Reduce
from ..views._text import typed_shape_text
from . import _html as h

# The explorer is typed ``Any``: importing its class here, even for typing, would make
# an import cycle (explorer.py imports this module for ``Explorer.run``).
Explorer = Any

OVERLAY_MAX_ABS = "max abs activation"
OVERLAY_NONFINITE = "non-finite"
OVERLAY_ERROR = "error vs other"
BINS = 48


def model_source(explorer: Explorer) -> Any:
    """What ``run`` reads for the explorer's model: the model (its format support gives
    onnxruntime the whole model)."""
    model = explorer.model
    if not model.support.runnable:
        raise ValueError(f"only ONNX models can be run (this one is a {model.format} model)")
    return model


class ActivationPanel(widgets.VBox):
    """The selected node's activations, the jump button and the overlay choice."""

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self.result: RunResult | None = None
        self.comparison: CompareResult | None = None
        self.error = ""
        self.colour_kind = ""  # the colouring the last result is painted with
        self.header = widgets.HTML()
        # Buttons and labels as wide as their text, on rows that wrap: the panel is narrow
        # and "go to first non-finite" was cut to "go t…".
        self.jump = widgets.Button(
            description="first problem", disabled=True, layout=widgets.Layout(width="auto")
        )
        self.details = widgets.HTML()
        # The run's colourings are offered in the explorer's own "colour by" dropdown
        # (one dropdown: a second one here read as a different thing).
        row = widgets.HBox([self.jump], layout=widgets.Layout(flex_flow="row wrap"))
        super().__init__([self.header, row, self.details])
        self.add_class("oxe-activations")
        self.jump.on_click(lambda _button: self.jump_to_problem())
        explorer.observe(self._on_selected, names="selected_name")

    # -- filled by a run or a comparison ------------------------------------------------
    def show_run(self, result: RunResult, error: str = "") -> None:
        self.result, self.comparison, self.error = result, None, error
        bad = result.first_problem
        state = f"failed at node {result.failure.node}: " if result.failure else ""
        if bad:
            found = f"first NaN/Inf made at: {bad}"
        elif result.first_nonfinite:
            found = "no NaN/Inf made (±inf fills such as attention masks passed on)"
        else:
            found = "every captured tensor is finite"
        said = "".join(f"\n{line}" for line in (*result.notes, result.assumed) if line)
        failure = ""
        if result.failure is not None:  # onnxruntime's reason, the feeds made, a hint
            failure = h.error(error or result.failure.message)
        self.header.value = (
            h.title("activations")
            + failure
            + h.pre(f"{state}{len(result.tensors)} tensors captured; {found}{said}")
        )
        self.jump.description = "go to first NaN/Inf made"
        self.jump.disabled = bad is None and result.failure is None
        self._offer((OVERLAY_MAX_ABS, OVERLAY_NONFINITE))
        self.colour_kind = OVERLAY_NONFINITE if bad else OVERLAY_MAX_ABS
        self._on_selected()

    def show_comparison(self, result: CompareResult) -> None:
        self.result, self.comparison, self.error = None, result, ""
        first = result.first_beyond
        found = f"first beyond tolerance: {first.a}" if first else "all within tolerance"
        self.header.value = h.title("comparison") + h.pre(
            f"{len(result.tensors)} tensors matched (atol {result.atol:g}, rtol "
            f"{result.rtol:g}); {found}"
        )
        self.jump.description = "go to first beyond tolerance"
        self.jump.disabled = first is None
        self._offer((OVERLAY_ERROR,))
        self.colour_kind = OVERLAY_ERROR
        self._on_selected()

    # -- actions --------------------------------------------------------------------------
    def problem_node(self) -> str | None:
        if self.comparison is not None:
            first = self.comparison.first_beyond
            return None if first is None else first.node
        if self.result is not None:
            if self.result.first_problem:
                return self.result.first_problem
            return self.result.failure.node if self.result.failure else None
        return None

    def jump_to_problem(self) -> str | None:
        """Select the problem node (see :meth:`problem_node`) and return its name."""
        node = self.problem_node()
        if node is not None and self.explorer.graph_path != "/":
            self.explorer.show_graph("/")
        if node is not None and self.explorer.graph.has_node(node):
            self.explorer.select(node)
        return node

    def overlay_values(self, kind: str) -> dict[str, float] | None:
        if kind == OVERLAY_MAX_ABS and self.result is not None:
            return self.result.node_values("abs_max")
        if kind == OVERLAY_NONFINITE and self.result is not None:
            counts: dict[str, float] = {}
            for r in self.result.tensors.values():
                if r.stats is not None:
                    counts[r.node] = counts.get(r.node, 0) + r.stats.nan + r.stats.inf
            return counts
        if kind == OVERLAY_ERROR and self.comparison is not None:
            return self.comparison.node_errors()
        return None

    def _offer(self, kinds: tuple[str, ...]) -> None:
        """Offer ``kinds`` in the explorer's "colour by" dropdown (max over scopes; log
        scale but for NaN/Inf counts)."""
        offer = getattr(self.explorer, "offer_series", None)
        if offer is None:  # an explorer without colour overlays
            return
        offer({kind: partial(self._series, kind) for kind in kinds})

    def _series(self, kind: str) -> tuple[dict[str, float] | None, bool, Reduce]:
        return self.overlay_values(kind), kind != OVERLAY_NONFINITE, "max"

    def _on_colour(self, _change: Any = None) -> None:
        """Paint the colouring this result calls for (NaN/Inf after a run with one, else
        max |activation|; error vs other after a comparison)."""
        overlay = getattr(self.explorer, "overlay", None)
        if overlay is None or not self.colour_kind:  # an explorer without colour overlays
            return
        if self.overlay_values(self.colour_kind) is None:
            return
        overlay(self.colour_kind)

    def _on_selected(self, _change: Any = None) -> None:
        name = self.explorer.selected_name
        if name is None or self.explorer.graph_path != "/":
            self.details.value = h.muted("select a node of the main graph to see its outputs")
            return
        self.details.value = self.node_html(name)

    def node_html(self, node: str) -> str:
        if self.comparison is not None:
            return _comparison_html(self.comparison, node)
        if self.result is None:
            return ""
        names = self.result.node_outputs.get(node, [])
        if not names:
            return h.muted(f"no captured output of node {node}")
        return "".join(_record_html(self.result.tensors[n]) for n in names)


def _record_html(record: TensorRecord, side: str = "") -> str:
    head = h.title(f"{side}{record.name}  {typed_shape_text(record.dtype, record.shape)}")
    s = record.stats
    if s is None:
        return head + h.muted("no statistics for this type")
    rows = [("min", s.min), ("max", s.max), ("mean", s.mean), ("std", s.std),
            ("abs max", s.abs_max), ("zeros", f"{s.zeros:.1%}"), ("NaN", s.nan), ("Inf", s.inf),
            ("p1 / p50 / p99", " / ".join(_number(p) for p in (s.p1, s.p50, s.p99))
             + ("" if s.exact_percentiles else " (sampled)"))]  # fmt: skip
    text = [(k, _number(v)) for k, v in rows]
    warning = h.error(f"{s.nan} NaN, {s.inf} Inf") if (s.nan or s.inf) else ""
    return head + warning + h.table(text) + histogram_svg(record.histogram)


def _comparison_html(result: CompareResult, node: str) -> str:
    parts = []
    for t in result.tensors:
        if t.node != node:
            continue
        verdict = "within tolerance" if t.within else "BEYOND tolerance"
        rows = [("max abs", _number(t.max_abs)), ("max rel", _number(t.max_rel)),
                ("cosine", _number(t.cosine)), ("SNR dB", _number(t.snr_db)),
                ("verdict", verdict)]  # fmt: skip
        parts.append(h.title(f"{t.a} vs {t.b}") + (t.note and h.muted(t.note)) + h.table(rows))
        for side, records in (("a: ", result.records_a), ("b: ", result.records_b)):
            found = records.get(t.a)
            if found is not None:
                parts.append(_record_html(found, side))
        difference = result.differences.get(t.a)
        if difference is not None:
            parts.append(h.title("b − a") + histogram_svg(difference))
    return "".join(parts) or h.muted(f"no matched output of node {node}")


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def histogram_svg(histogram: Histogram | None, width: int = 300, height: int = 80) -> str:
    """A small bar chart (numbers only: nothing from the model reaches the SVG)."""
    if histogram is None or histogram.bins == 0:
        return ""
    top = max(int(histogram.counts.max()), 1)
    bar = width / histogram.bins
    rects = "".join(
        f'<rect x="{i * bar:.2f}" y="{height - height * c / top:.2f}" width="{max(bar - 1, 1):.2f}"'
        f' height="{height * c / top:.2f}"></rect>'
        for i, c in enumerate(histogram.counts.tolist())
    )
    lo, hi = float(histogram.edges[0]), float(histogram.edges[-1])
    return (
        f'<svg class="oxe-activation-histogram" width="{width}" height="{height + 14}" '
        f'style="fill: var(--jp-brand-color1, #1976d2)">{rects}'
        f'<text x="0" y="{height + 12}" style="font-size: 10px; fill: currentColor">{lo:.4g}</text>'
        f'<text x="{width}" y="{height + 12}" text-anchor="end" '
        f'style="font-size: 10px; fill: currentColor">{hi:.4g}</text></svg>'
    )


def _panel(explorer: Explorer) -> ActivationPanel:
    """The explorer's panel, added under the node attributes the first time."""
    panel = getattr(explorer, "_activation_panel", None)
    if panel is None:
        panel = ActivationPanel(explorer)
        nodes_tab = explorer.tabs.children[0]
        nodes_tab.children = (*nodes_tab.children, panel)
        explorer._activation_panel = panel
    return panel


def attach_run(explorer: Explorer, feeds: Any = None, **options: Any) -> RunResult:
    """Run the explorer's model (see :func:`onnx_explorer.run`) and show the activations."""
    options.setdefault("bins", BINS)
    options.setdefault("progress", True)
    model = explorer.model
    if model.bound_dims and "dims" not in options:  # the sizes explore(dims=) chose
        options["dims"] = dict(model.bound_dims)
    if model.bound_input_shapes and "input_shapes" not in options:
        options["input_shapes"] = dict(model.bound_input_shapes)
    panel = _panel(explorer)
    try:
        result = run(model_source(explorer), feeds, **options)
    except RunFailedError as exc:
        panel.show_run(exc.result, str(exc))
        return exc.result
    panel.show_run(result)
    panel._on_colour()
    return result


def attach_compare(
    explorer: Explorer, other: Any, feeds: Any = None, **options: Any
) -> CompareResult:
    """Compare the explorer's model (a) with ``other`` (b); see :func:`onnx_explorer.compare`."""
    options.setdefault("bins", BINS)
    options.setdefault("progress", True)
    panel = _panel(explorer)
    result = compare(model_source(explorer), other, feeds, **options)
    panel.show_comparison(result)
    panel._on_colour()
    return result
