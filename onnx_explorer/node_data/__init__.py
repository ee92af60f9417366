"""Per-node data that travels between viewers: Model Explorer node data and Netron
attachments, read and written as plain data.

:func:`read_node_data` reads either format (told apart by content) into
:class:`NodeData`: named :class:`NodeSeries` of values keyed by node, value or tensor
names, with the file's colours; ``data.on_graph(graph)`` matches a series to a graph's
nodes (:class:`Matched`, unknown keys listed, never fatal). :func:`model_explorer_json`
and :func:`netron_json` write series; ``Metrics``, ``RunResult`` and ``ModelDiff`` call
them from their ``to_model_explorer_json`` / ``to_netron_json`` methods. The schemas and
where they were read: ``_model_explorer.py`` and ``_netron.py``. No widgets and no
drawing here: the views paint a :class:`Matched`.
"""

from __future__ import annotations

from ._data import (
    Entry,
    GradientStop,
    Matched,
    NodeData,
    NodeSeries,
    Threshold,
    css_colour,
    fill_for,
    node_entries,
    readable_fill,
    value_range,
)
from ._export import DIFF_SERIES, RUN_NODE_SERIES, diff_series, run_series, series_of
from ._json import MAX_BYTES, write_json
from ._model_explorer import is_model_explorer, model_explorer_json
from ._netron import SIGNATURE, is_netron, netron_json
from ._read import parse_node_data, read_node_data

__all__ = [
    "DIFF_SERIES",
    "MAX_BYTES",
    "RUN_NODE_SERIES",
    "SIGNATURE",
    "Entry",
    "GradientStop",
    "Matched",
    "NodeData",
    "NodeSeries",
    "Threshold",
    "css_colour",
    "diff_series",
    "fill_for",
    "is_model_explorer",
    "is_netron",
    "model_explorer_json",
    "netron_json",
    "node_entries",
    "parse_node_data",
    "read_node_data",
    "readable_fill",
    "run_series",
    "series_of",
    "value_range",
    "write_json",
]
