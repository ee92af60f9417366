"""Learned values stored as attribute lists instead of tensors: the ``ai.onnx.ml`` operators.

Tree ensembles, SVMs, linear models, scalers and label encoders keep what they learned in
FLOATS / INTS / STRINGS attributes (``nodes_values``, ``coefficients``, ``keys_strings``...),
so a model made of them may have no initializer at all and would count 0 parameters.
:func:`attribute_parameters` lists those lists as weights (kind ``"attribute"``, location
``"attribute"``) that the weights report reads like any tensor; :func:`attribute_totals`
counts them for summaries. Tensor-valued attributes (``nodes_splits``, ``keys_tensor``...)
are tensors already: :meth:`Model.weights` lists them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..dtypes import dtype
from ..model import Attribute, Model, Node, WeightRef
from ..tensors import ArraySource, Tensor, TensorLocation

ML_DOMAIN = "ai.onnx.ml"

_TREE_NODES = (
    "nodes_falsenodeids", "nodes_featureids", "nodes_hitrates", "nodes_missing_value_tracks_true",
    "nodes_modes", "nodes_nodeids", "nodes_treeids", "nodes_truenodeids", "nodes_values",
)  # fmt: skip
_SVM = ("coefficients", "kernel_params", "rho", "support_vectors")

#: op → the attributes holding learned values (settings such as ``post_transform`` are not).
PARAMETER_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "TreeEnsembleClassifier": (
        *_TREE_NODES,
        "base_values",
        "class_ids",
        "class_nodeids",
        "class_treeids",
        "class_weights",
        "classlabels_int64s",
        "classlabels_strings",
    ),
    "TreeEnsembleRegressor": (
        *_TREE_NODES,
        "base_values",
        "target_ids",
        "target_nodeids",
        "target_treeids",
        "target_weights",
    ),
    "TreeEnsemble": (
        "leaf_targetids",
        "nodes_falseleafs",
        "nodes_falsenodeids",
        "nodes_featureids",
        "nodes_trueleafs",
        "nodes_truenodeids",
        "tree_roots",
    ),
    "LabelEncoder": (
        "keys_floats",
        "keys_int64s",
        "keys_strings",
        "values_floats",
        "values_int64s",
        "values_strings",
    ),
    "SVMClassifier": (
        *_SVM,
        "classlabels_ints",
        "classlabels_strings",
        "prob_a",
        "prob_b",
        "vectors_per_class",
    ),
    "SVMRegressor": _SVM,
    "LinearClassifier": ("coefficients", "intercepts", "classlabels_ints", "classlabels_strings"),
    "LinearRegressor": ("coefficients", "intercepts"),
    "Scaler": ("offset", "scale"),
}
_DTYPES = {"FLOATS": "float32", "INTS": "int64", "STRINGS": "string"}
#: Where these values live: in a node attribute, decoded with the graph.
ATTRIBUTE_LOCATION = TensorLocation("attribute")


def _holds_parameters(node: Node) -> bool:
    return node.domain == ML_DOMAIN and node.op_type in PARAMETER_ATTRIBUTES


def _tensor(node: Node, attr: Attribute) -> Tensor | None:
    type_name = _DTYPES.get(attr.kind)
    if type_name is None or not attr.value:
        return None
    values = tuple(attr.value)
    numpy_type = object if type_name == "string" else type_name
    label = node.name or f"{node.op_type}#{node.index}"
    return Tensor(
        f"{label}.{attr.name}",
        dtype(type_name),
        (len(values),),
        ArraySource(lambda: np.asarray(values, dtype=numpy_type), ATTRIBUTE_LOCATION),
    )


def attribute_parameters(model: Model) -> Iterator[WeightRef]:
    """Each learned attribute list of an ``ai.onnx.ml`` node, as a one-dimensional weight."""
    for graph in model.graphs():
        for node in graph.nodes:
            if not _holds_parameters(node):
                continue
            for name in PARAMETER_ATTRIBUTES[node.op_type]:
                attr = node.attributes.get(name)
                tensor = _tensor(node, attr) if attr is not None else None
                if tensor is not None:
                    yield WeightRef(graph, tensor, "attribute", node)


@dataclass(frozen=True)
class AttributeTotals:
    """How many learned values sit in attribute lists, and in how many nodes."""

    values: int
    nodes: int
    bytes: int

    def describe(self) -> str:
        return f"in attributes: {self.values} values in {self.nodes} nodes"


def attribute_totals(model: Model) -> AttributeTotals:
    """Totals of :func:`attribute_parameters` (no statistics: nothing beyond the graph is read)."""
    values = nbytes = 0
    nodes: set[int] = set()
    for ref in attribute_parameters(model):
        values += ref.tensor.size
        nbytes += ref.tensor.nbytes
        nodes.add(id(ref.node))
    return AttributeTotals(values, len(nodes), nbytes)


__all__ = [
    "ATTRIBUTE_LOCATION",
    "PARAMETER_ATTRIBUTES",
    "AttributeTotals",
    "attribute_parameters",
    "attribute_totals",
]
