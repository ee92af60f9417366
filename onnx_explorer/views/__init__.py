"""Pure views of a model: what is drawn, DOT text, rendering, tables, text and figures.

No widgets and no notebook stack: the widgets, the command line and the model's own
convenience methods (``graph.to_dot()``, ``graph.render_svg()``, ``graph.save()``) use the
names below. Importing this package is cheap: each name's module is imported when the name
is first asked for (``onnx-explorer summary`` needs the summary text, not the drawing
stack), Graphviz runs only when a view is rendered (``_render``, in a subprocess) and
matplotlib is imported by ``_plots`` when a figure is first drawn.

The jobs, one private module each: ``_drawing`` decides what is drawn (scopes, focus,
budgets), ``_statements`` writes DOT syntax and ``_quoting`` escapes it; ``_render`` runs
``dot`` and ``_layout`` plans a view that never fails (cheaper plans on timeout);
``_paint`` (the ``Overlay`` a drawing is painted with: status colours, ghost boxes) and
``_colour_scale`` (a number per node as a colour scale) paint over a drawing, ``_repaint``
repaints a finished SVG for another overlay; ``_wiring`` (how a graph is wired: edges,
folded constants), ``_scopes`` (the name-scope tree), ``_edge_types`` (value types for
labels), ``_labels`` (node labels), ``_text`` (display text), ``_tables`` (the node search,
tensor rows), ``_plots`` and ``_summary_text``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy_names import lazy_names

if TYPE_CHECKING:
    from ._colour_scale import REDUCES, Reduce, checked_values, colour_scale_overlay
    from ._drawing import (
        CONTROL_EDGES,
        DEFAULT_FIRST_VIEW,
        DEFAULT_HOPS,
        DEFAULT_MAX_NODES,
        EDGE_LABELS,
        MAX_NODES_LIMIT,
        ControlEdges,
        DotResult,
        EdgeLabels,
        build_dot,
    )
    from ._edge_types import ValueTypes, value_types
    from ._layout import DEFAULT_BUDGET, Cancellation, Drawing, ViewRequest, draw
    from ._paint import PALETTE, Ghost, Overlay, Paint, Scale, status_overlay
    from ._plots import (
        PANEL_FIGSIZE,
        channel_ranges_figure,
        figure_png,
        histogram_figure,
        stats_lines,
        warm_up,
    )
    from ._quoting import html_escape, one_line
    from ._render import DEFAULT_TIMEOUT, save_result, svg_from_result
    from ._repaint import repaint_svg
    from ._scopes import Scope, ScopeTree, scope_tree
    from ._summary_text import format_summary
    from ._tables import NodeSearch, SearchError, TensorRow, sort_rows, stats_rows, tensor_rows
    from ._text import (
        TypeTextMode,
        as_text,
        attribute_text,
        dims_text,
        model_name,
        preview_values,
        shape_text,
        shorten,
        tensor_text,
        terminal_safe,
        type_text,
        value_text,
    )
    from ._wiring import GraphWiring, graph_wiring

#: Name → the private module that defines it, imported when the name is first asked for.
_LAZY = {
    "CONTROL_EDGES": "._drawing",
    "Cancellation": "._layout",
    "ControlEdges": "._drawing",
    "DEFAULT_BUDGET": "._layout",
    "DEFAULT_FIRST_VIEW": "._drawing",
    "DEFAULT_HOPS": "._drawing",
    "DEFAULT_MAX_NODES": "._drawing",
    "DEFAULT_TIMEOUT": "._render",
    "DotResult": "._drawing",
    "Drawing": "._layout",
    "EDGE_LABELS": "._drawing",
    "EdgeLabels": "._drawing",
    "Ghost": "._paint",
    "GraphWiring": "._wiring",
    "MAX_NODES_LIMIT": "._drawing",
    "NodeSearch": "._tables",
    "Overlay": "._paint",
    "PALETTE": "._paint",
    "PANEL_FIGSIZE": "._plots",
    "Paint": "._paint",
    "REDUCES": "._colour_scale",
    "Reduce": "._colour_scale",
    "Scale": "._paint",
    "Scope": "._scopes",
    "ScopeTree": "._scopes",
    "SearchError": "._tables",
    "TensorRow": "._tables",
    "TypeTextMode": "._text",
    "ValueTypes": "._edge_types",
    "ViewRequest": "._layout",
    "as_text": "._text",
    "attribute_text": "._text",
    "build_dot": "._drawing",
    "channel_ranges_figure": "._plots",
    "checked_values": "._colour_scale",
    "colour_scale_overlay": "._colour_scale",
    "dims_text": "._text",
    "draw": "._layout",
    "figure_png": "._plots",
    "format_summary": "._summary_text",
    "graph_wiring": "._wiring",
    "histogram_figure": "._plots",
    "html_escape": "._quoting",
    "model_name": "._text",
    "one_line": "._quoting",
    "preview_values": "._text",
    "repaint_svg": "._repaint",
    "save_result": "._render",
    "scope_tree": "._scopes",
    "shape_text": "._text",
    "shorten": "._text",
    "sort_rows": "._tables",
    "stats_lines": "._plots",
    "stats_rows": "._tables",
    "status_overlay": "._paint",
    "svg_from_result": "._render",
    "tensor_rows": "._tables",
    "tensor_text": "._text",
    "terminal_safe": "._text",
    "type_text": "._text",
    "value_text": "._text",
    "value_types": "._edge_types",
    "warm_up": "._plots",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


__all__ = [
    "CONTROL_EDGES",
    "DEFAULT_BUDGET",
    "DEFAULT_FIRST_VIEW",
    "DEFAULT_HOPS",
    "DEFAULT_MAX_NODES",
    "DEFAULT_TIMEOUT",
    "EDGE_LABELS",
    "MAX_NODES_LIMIT",
    "PALETTE",
    "PANEL_FIGSIZE",
    "REDUCES",
    "Cancellation",
    "ControlEdges",
    "DotResult",
    "Drawing",
    "EdgeLabels",
    "Ghost",
    "GraphWiring",
    "NodeSearch",
    "Overlay",
    "Paint",
    "Reduce",
    "Scale",
    "Scope",
    "ScopeTree",
    "SearchError",
    "TensorRow",
    "TypeTextMode",
    "ValueTypes",
    "ViewRequest",
    "as_text",
    "attribute_text",
    "build_dot",
    "channel_ranges_figure",
    "checked_values",
    "colour_scale_overlay",
    "dims_text",
    "draw",
    "figure_png",
    "format_summary",
    "graph_wiring",
    "histogram_figure",
    "html_escape",
    "model_name",
    "one_line",
    "preview_values",
    "repaint_svg",
    "save_result",
    "scope_tree",
    "shape_text",
    "shorten",
    "sort_rows",
    "stats_lines",
    "stats_rows",
    "status_overlay",
    "svg_from_result",
    "tensor_rows",
    "tensor_text",
    "terminal_safe",
    "type_text",
    "value_text",
    "value_types",
    "warm_up",
]
