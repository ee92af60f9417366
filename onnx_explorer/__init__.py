"""onnx_explorer: look inside ONNX and TensorFlow GraphDef model files from a notebook."""

from __future__ import annotations

from . import facades as _facades  # noqa: F401 - fills in Graph.to_dot & co.
from .errors import (
    ExplorerError,
    ExternalDataError,
    GraphvizNotFoundError,
    ModelFormatError,
    RenderError,
    TensorDataError,
    UnsafePathError,
)
from .metrics import metrics, read_ort_profile
from .model import Attribute, Function, Graph, Model, Node, SparseTensor, ValueInfo
from .readers import load
from .stats import Histogram, TensorStats
from .tensors import Tensor, TensorLocation

__version__ = "0.1.0"

__all__ = [
    "Attribute",
    "ExplorerError",
    "ExternalDataError",
    "Function",
    "Graph",
    "GraphvizNotFoundError",
    "Histogram",
    "Model",
    "ModelFormatError",
    "Node",
    "RenderError",
    "SparseTensor",
    "Tensor",
    "TensorDataError",
    "TensorLocation",
    "TensorStats",
    "UnsafePathError",
    "ValueInfo",
    "__version__",
    "explore",
    "load",
    "metrics",
    "read_ort_profile",
]


def explore(source, **options):  # type: ignore[no-untyped-def]
    """Open a model in the notebook explorer; see :func:`onnx_explorer.widgets.explorer.explore`."""
    from .widgets.explorer import explore as _explore

    return _explore(source, **options)


def load_ipython_extension(ip):  # type: ignore[no-untyped-def]
    from .ipython import load_ipython_extension as _load

    _load(ip)


def unload_ipython_extension(ip):  # type: ignore[no-untyped-def]
    from .ipython import unload_ipython_extension as _unload

    _unload(ip)
