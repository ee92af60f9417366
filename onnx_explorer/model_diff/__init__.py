"""What changed between two models: structure (nodes in every graph) and weights.

An analysis: it takes two :class:`~onnx_explorer.Model` objects and returns plain data
(:class:`ModelDiff`); opening files is the caller's job (``onnx_explorer.diff`` does it).
Nodes are matched by name, then by structure (``_matching``), so renumbered exports
match node for node; a nameless node is known by ``op_type(first output)``, never by its
position (one inserted node does not rename the rest). Tensors are matched by name, then
by content, then through the nodes that read them: a float weight and its quantized copy
(``MatMul``/``MatMulInteger``, ``Conv``/``ConvInteger``, ``Gather``/``Gather →
DequantizeLinear``, ``LSTM``/``DynamicQuantizeLSTM``, ``DequantizeLinear`` feeding a
matched node: ``_quantized``) are compared dequantized. Values are compared streamed,
chunk by chunk (``_values``). Which nodes stand for which in two panes side by side,
fused and split nodes grouped (1↔N), is ``_links``.
"""

from __future__ import annotations

from ._compare import compare_models
from ._links import LinkGroup, NodeLinks, node_links
from ._model_diff import ModelDiff
from ._results import NodeChange, NodeRef, RemovedNode, TensorChange

__all__ = [
    "LinkGroup",
    "ModelDiff",
    "NodeChange",
    "NodeLinks",
    "NodeRef",
    "RemovedNode",
    "TensorChange",
    "compare_models",
    "node_links",
]
