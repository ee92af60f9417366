"""The notebook widgets: the explorer, its panels and the graph view (ipywidgets + anywidget).

:func:`explore` opens one model in an :class:`Explorer` (graph view, node list,
attribute, tensor and model panels wired together); :func:`explore_diff` shows what
changed between two models in a :class:`DiffExplorer`; :func:`compare_view` shows two
models side by side, in sync (:class:`CompareView`). The panels are widgets of their
own; :class:`GraphView` is the clickable Graphviz drawing (an anywidget: clicks arrive as
messages). Importing this package imports ipywidgets and anywidget but neither Graphviz
nor matplotlib: drawing and plotting start when a view is shown.
"""

from __future__ import annotations

from ._activations import ActivationPanel, attach_compare, attach_run
from ._attribute_panel import AttributePanel
from ._compare_view import CompareView, compare_view
from ._diff_explorer import DiffExplorer, explore_diff
from ._explorer import Explorer, explore
from ._graph_view import GraphView
from ._model_panel import ModelPanel
from ._node_list import NodeList
from ._static import static_html, with_static_fallback
from ._tensor_panel import TensorPanel

__all__ = [
    "ActivationPanel",
    "AttributePanel",
    "CompareView",
    "DiffExplorer",
    "Explorer",
    "GraphView",
    "ModelPanel",
    "NodeList",
    "TensorPanel",
    "attach_compare",
    "attach_run",
    "compare_view",
    "explore",
    "explore_diff",
    "static_html",
    "with_static_fallback",
]
