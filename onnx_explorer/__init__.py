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
from .model_diff import ModelDiff, compare_models
from .readers import load
from .runs import (
    CompareResult,
    FeedError,
    OnnxRuntimeMissingError,
    RunError,
    RunFailedError,
    RunResult,
    compare,
    run,
)
from .stats import Histogram, TensorStats
from .tensors import Tensor, TensorLocation
from .weights._many import weights_report_many

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
    "diff",
    "explore",
    "explore_diff",
    "load",
    "metrics",
    "read_ort_profile",
    "run",
    "weights_report_many",
]


def diff(a, b, *, weights: bool = True, atol: float = 0.0, rtol: float = 0.0) -> ModelDiff:
    """What changed from model ``a`` to model ``b``: paths, bytes, ``onnx.ModelProto`` or
    :class:`Model`; see :func:`onnx_explorer.model_diff.compare_models`. A side that cannot be
    opened raises an :class:`ExplorerError` saying which ("model a: ...")."""
    return compare_models(
        _open_side(a, "a"), _open_side(b, "b"), weights=weights, atol=atol, rtol=rtol
    )


def _open_side(source, side: str) -> Model:  # type: ignore[no-untyped-def]
    if isinstance(source, Model):
        return source
    try:
        return load(source)
    except ExplorerError as exc:
        raise type(exc)(f"model {side}: {exc}") from exc
    except (OSError, ValueError, TypeError) as exc:
        raise ModelFormatError(f"model {side}: {exc}") from exc


def explore(source, **options):  # type: ignore[no-untyped-def]
    """Open a model in the notebook explorer; see :func:`onnx_explorer.widgets.explore`."""
    from .widgets._explorer import explore as _explore

    return _explore(source, **options)


def explore_diff(a, b, **options):  # type: ignore[no-untyped-def]
    """Show what changed from model ``a`` to ``b``; see
    :func:`onnx_explorer.widgets._diff_explorer.explore_diff`."""
    from .widgets._diff_explorer import explore_diff as _explore_diff

    return _explore_diff(a, b, **options)


def load_ipython_extension(ip):  # type: ignore[no-untyped-def]
    from .ipython import load_ipython_extension as _load

    _load(ip)


def unload_ipython_extension(ip):  # type: ignore[no-untyped-def]
    from .ipython import unload_ipython_extension as _unload

    _unload(ip)
