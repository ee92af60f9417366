"""onnx_explorer: look inside ONNX and TensorFlow GraphDef model files from a notebook."""

from __future__ import annotations

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
from .readers import load
from .tensors import Tensor, TensorLocation

__version__ = "0.1.0"

__all__ = [
    "Attribute",
    "ExplorerError",
    "ExternalDataError",
    "Function",
    "Graph",
    "GraphvizNotFoundError",
    "Model",
    "ModelFormatError",
    "Node",
    "RenderError",
    "SparseTensor",
    "Tensor",
    "TensorDataError",
    "TensorLocation",
    "UnsafePathError",
    "ValueInfo",
    "__version__",
    "load",
]
