"""``read_node_data``: a Model Explorer node-data file or a Netron attachment, by content."""

from __future__ import annotations

from typing import Any

from ..errors import NodeDataError
from ._data import NodeData
from ._json import MAX_BYTES, Source, load_source
from ._model_explorer import is_model_explorer, read_model_explorer
from ._netron import is_netron, read_netron


def read_node_data(source: Source, *, max_bytes: int = MAX_BYTES) -> NodeData:
    """Read per-node data written for another viewer, telling the format by content.

    ``source``: a path, JSON text or bytes, or the parsed dict. A Netron attachment
    (``"signature": "netron:attachment"``) gives one series per metric name; Model
    Explorer node data one series per graph (its ``name``, else the graph id). Match a
    series to a model's nodes with ``data.on_graph(model.graph)``. Raises
    :class:`~onnx_explorer.errors.NodeDataError` naming the file for a file too large
    (``max_bytes``), not JSON, in neither format, or holding wrong types.
    """
    data, where = load_source(source, max_bytes)
    return parse_node_data(data, where)


def parse_node_data(data: Any, where: str = "node data") -> NodeData:
    """Parsed JSON → :class:`NodeData` (see :func:`read_node_data`)."""
    if is_netron(data):
        return read_netron(data, where)
    if is_model_explorer(data):
        return read_model_explorer(data, where)
    if isinstance(data, dict) and "signature" in data:
        raise NodeDataError(
            f"{where}: signature {str(data['signature'])[:60]!r} is not 'netron:attachment'"
        )
    raise NodeDataError(
        f"{where}: neither Model Explorer node data (an object with 'results', or graph "
        "ids → such objects) nor a Netron attachment ('signature': 'netron:attachment')"
    )
