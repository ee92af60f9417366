"""The project's error types.

Each subclasses the builtin a caller would naturally catch (``ValueError`` for
bad content, ``OSError`` for files), so ``except ValueError`` keeps working for
code that does not know about onnx_explorer.
"""

from __future__ import annotations

__all__ = [
    "ExplorerError",
    "ExternalDataError",
    "GraphvizNotFoundError",
    "LayoutCancelledError",
    "LayoutTimeoutError",
    "ModelFormatError",
    "NodeDataError",
    "RenderError",
    "TensorDataError",
    "UnsafePathError",
]


class ExplorerError(Exception):
    """Base class of every error raised by onnx_explorer."""


class ModelFormatError(ExplorerError, ValueError):
    """A model file is corrupt, truncated, or not in a format we can read."""


class NodeDataError(ExplorerError, ValueError):
    """A node-data file (Model Explorer node data, a Netron attachment) is unreadable or
    not in either format."""


class TensorDataError(ExplorerError, ValueError):
    """A tensor's bytes disagree with its declared dtype and shape, or cannot be decoded."""


class ExternalDataError(ExplorerError, OSError):
    """External tensor data is missing, unreadable or inconsistent with the model."""


class UnsafePathError(ExternalDataError):
    """An external-data location points outside the allowed directory or at a non-regular file."""


class RenderError(ExplorerError, RuntimeError):
    """Graphviz failed, timed out, or produced no output."""


class GraphvizNotFoundError(RenderError):
    """The Graphviz ``dot`` executable is not installed or not on PATH."""


class LayoutTimeoutError(RenderError):
    """Graphviz did not finish within the time budget (a cheaper view may still draw)."""


class LayoutCancelledError(RenderError):
    """The layout was cancelled (by the user, or superseded by a newer request)."""
