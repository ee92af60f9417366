"""Format-neutral, read-only description of a model: graphs, nodes, values, tensors.

Readers (``readers/``) build these objects; views, widgets and the command line
read them. Nothing here knows about protobuf or any file format.

The package's modules, each with one job: :mod:`._values` (values, attributes, the closed
vocabularies), :mod:`._node` (operator applications, scope parts of names), :mod:`._graph`
(graphs and their lazily built parts), :mod:`._support` (what a format answers:
:class:`FormatSupport`, inferred types), :mod:`._model` (the model, functions, weights).
"""

from __future__ import annotations

from ._graph import CONSTANT_OPS, Graph, GraphParts, TensorsOnDemand
from ._model import INFER_AUTO_MAX_NODES, Function, Model, WeightRef
from ._node import SCOPE_DEPTH_MAX, Node, scope_parts
from ._support import FormatSupport, InferredTypes, TypeInference
from ._values import (
    ATTRIBUTE_KINDS,
    Attribute,
    AttributeKind,
    Dim,
    ModelFormat,
    SparseTensor,
    ValueInfo,
    WeightKind,
    attribute_kind,
    location_name,
)

__all__ = [
    "ATTRIBUTE_KINDS",
    "CONSTANT_OPS",
    "INFER_AUTO_MAX_NODES",
    "SCOPE_DEPTH_MAX",
    "Attribute",
    "AttributeKind",
    "Dim",
    "FormatSupport",
    "Function",
    "Graph",
    "GraphParts",
    "InferredTypes",
    "Model",
    "ModelFormat",
    "Node",
    "SparseTensor",
    "TensorsOnDemand",
    "TypeInference",
    "ValueInfo",
    "WeightKind",
    "WeightRef",
    "attribute_kind",
    "location_name",
    "scope_parts",
]
