"""What changed between two models: structure (nodes in every graph) and weights.

An analysis: it takes two :class:`~onnx_explorer.Model` objects and returns plain data
(:class:`ModelDiff`); opening files is the caller's job (``onnx_explorer.diff`` does it).
Nodes are matched by name, then by structure (``_matching``), so renumbered exports
match node for node; tensors by name, then by content; values are compared streamed,
chunk by chunk (``_values``).
"""

from __future__ import annotations

from ._compare import compare_models
from ._model_diff import ModelDiff
from ._results import NodeChange, NodeRef, RemovedNode, TensorChange

__all__ = ["ModelDiff", "NodeChange", "NodeRef", "RemovedNode", "TensorChange", "compare_models"]
