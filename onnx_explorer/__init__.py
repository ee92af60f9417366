"""onnx_explorer: look inside ONNX and TensorFlow GraphDef model files from a notebook.

Importing the package is light: the model's own types and the errors come at once; the
rest of the public names (``load``, ``metrics``, ``run``, ``compare``, ``ModelDiff``,
``weights_report_many``...) are imported on first use (PEP 562 ``__getattr__`` below), so
``import onnx_explorer`` imports neither ``onnx`` nor protobuf nor the notebook stack.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._lazy_names import lazy_names
from .errors import (
    ExplorerError,
    ExternalDataError,
    GraphvizNotFoundError,
    ModelFormatError,
    RenderError,
    TensorDataError,
    UnsafePathError,
)
from .model import Attribute, Function, Graph, Model, Node, SparseTensor, ValueInfo
from .stats import Histogram, TensorStats
from .tensors import Tensor, TensorLocation

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .metrics import metrics, read_ort_profile
    from .model_diff import ModelDiff
    from .node_data import read_node_data
    from .readers import load
    from .runs import (
        CompareResult,
        FeedError,
        OnnxRuntimeMissingError,
        RunError,
        RunFailedError,
        RunResult,
        compare,
        extract,
        reduce,
        run,
    )
    from .weights import weights_report_many
    from .widgets import DiffExplorer, Explorer, compare_view

__version__ = "0.1.0"

__all__ = [
    "Attribute",
    "CompareResult",
    "ExplorerError",
    "ExternalDataError",
    "FeedError",
    "Function",
    "Graph",
    "GraphvizNotFoundError",
    "Histogram",
    "Model",
    "ModelDiff",
    "ModelFormatError",
    "Node",
    "OnnxRuntimeMissingError",
    "RenderError",
    "RunError",
    "RunFailedError",
    "RunResult",
    "SparseTensor",
    "Tensor",
    "TensorDataError",
    "TensorLocation",
    "TensorStats",
    "UnsafePathError",
    "ValueInfo",
    "__version__",
    "compare",
    "compare_view",
    "diff",
    "explore",
    "explore_diff",
    "extract",
    "load",
    "metrics",
    "read_node_data",
    "read_ort_profile",
    "reduce",
    "run",
    "weights_report_many",
]


#: The public names imported on first use: name → the module that defines it.
_LAZY = {
    "CompareResult": ".runs",
    "FeedError": ".runs",
    "ModelDiff": ".model_diff",
    "OnnxRuntimeMissingError": ".runs",
    "RunError": ".runs",
    "RunFailedError": ".runs",
    "RunResult": ".runs",
    "compare": ".runs",
    "compare_view": ".widgets",
    "extract": ".runs",
    "load": ".readers",
    "read_node_data": ".node_data",
    "read_ort_profile": ".metrics",
    "reduce": ".runs",
    "run": ".runs",
    "weights_report_many": ".weights",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), extra=("metrics",))


class _Package(types.ModuleType):
    """This package's module type: ``metrics`` is the function, never the subpackage.

    ``metrics`` names both the function and the subpackage holding it. The import system
    binds a subpackage to its parent's attribute when it first imports it (from wherever
    that import comes), so a plain lazy name would turn into the subpackage; this
    property imports the function on first use and ignores that binding.
    """

    @property
    def metrics(self) -> Any:
        chosen = self.__dict__.get("_metrics")  # set by an assignment (a test's monkeypatch)
        if chosen is not None:
            return chosen
        from .metrics import metrics as function

        return function

    @metrics.setter
    def metrics(self, value: Any) -> None:
        if isinstance(value, types.ModuleType) and value.__name__ == f"{__name__}.metrics":
            return  # the import system binding the subpackage: keep the function
        self.__dict__["_metrics"] = value


sys.modules[__name__].__class__ = _Package


def diff(
    a: str | os.PathLike[str] | bytes | Any,
    b: str | os.PathLike[str] | bytes | Any,
    *,
    weights: bool = True,
    atol: float = 0.0,
    rtol: float = 0.0,
) -> ModelDiff:
    """What changed from model ``a`` to model ``b``: paths, bytes, ``onnx.ModelProto`` or
    :class:`Model`; see :func:`onnx_explorer.model_diff.compare_models`. A side that cannot be
    opened raises an :class:`ExplorerError` saying which ("model a: ...")."""
    from .model_diff import compare_models
    from .readers import open_side

    return compare_models(
        open_side(a, "a"), open_side(b, "b"), weights=weights, atol=atol, rtol=rtol
    )


def explore(
    source: str | os.PathLike[str] | bytes | Any,
    *,
    external_data_dir: str | os.PathLike[str] | None = None,
    max_nodes: int | None = None,
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> Explorer:
    """Open a model (path, URL, bytes, ``onnx.ModelProto`` or a loaded :class:`Model`) in the
    notebook explorer; see :func:`onnx_explorer.widgets.explore`."""
    from .widgets import explore as _explore

    return _explore(
        source,
        external_data_dir=external_data_dir,
        max_nodes=max_nodes,
        dims=dims,
        input_shapes=input_shapes,
    )


def explore_diff(
    a: str | os.PathLike[str] | bytes | Any,
    b: str | os.PathLike[str] | bytes | Any,
    *,
    weights: bool = True,
    atol: float = 0.0,
    rtol: float = 0.0,
    external_data_dir: str | os.PathLike[str] | None = None,
    max_nodes: int | None = None,
) -> DiffExplorer:
    """Show what changed from model ``a`` to ``b``; see
    :func:`onnx_explorer.widgets.explore_diff`."""
    from .widgets import explore_diff as _explore_diff

    return _explore_diff(
        a,
        b,
        weights=weights,
        atol=atol,
        rtol=rtol,
        external_data_dir=external_data_dir,
        max_nodes=max_nodes,
    )


def load_ipython_extension(ip: InteractiveShell) -> None:
    """``%load_ext onnx_explorer``: registers ``%onnx_explore``, ``%onnx_summary`` and
    ``%onnx_diff``."""
    from .ipython import load_ipython_extension as _load

    _load(ip)


def unload_ipython_extension(ip: InteractiveShell) -> None:
    from .ipython import unload_ipython_extension as _unload

    _unload(ip)
