"""Values, attributes and element-type vocabularies of the neutral model: what an edge
carries (:class:`ValueInfo`), what a node is configured with (:class:`Attribute`), and
the closed vocabularies (format names, weight and attribute kinds)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeGuard, get_args

from ..tensors import Tensor

Dim = int | str | None  # a fixed size, a symbolic name ("batch"), or unknown

#: The file formats a reader can make a model of (``Model.format``; one per reader row).
ModelFormat = Literal["onnx", "graphdef", "safetensors", "gguf", "tflite"]
#: Where a weight sits (``WeightRef.kind``).
WeightKind = Literal["initializer", "sparse_initializer", "constant", "attribute"]
#: An attribute's type (``Attribute.kind``): ONNX ``AttributeProto`` types, GraphDef
#: ``AttrValue`` fields (``BOOL``, ``TYPE``, ``SHAPE``, ``FUNC``, ``PLACEHOLDER``, their lists,
#: ``LIST`` for an empty list) and ``UNDEFINED`` for a value no reader could tell.
AttributeKind = Literal[
    "UNDEFINED",
    "FLOAT",
    "INT",
    "STRING",
    "BOOL",
    "TENSOR",
    "GRAPH",
    "SPARSE_TENSOR",
    "TYPE_PROTO",
    "TYPE",
    "SHAPE",
    "FUNC",
    "PLACEHOLDER",
    "FLOATS",
    "INTS",
    "STRINGS",
    "BOOLS",
    "TENSORS",
    "GRAPHS",
    "SPARSE_TENSORS",
    "TYPE_PROTOS",
    "TYPES",
    "SHAPES",
    "FUNCS",
    "LIST",
]
ATTRIBUTE_KINDS: frozenset[str] = frozenset(get_args(AttributeKind))


def attribute_kind(name: str) -> AttributeKind:
    """``name`` as an :data:`AttributeKind`; ``UNDEFINED`` for a name outside the vocabulary
    (readers pass the type names a file declares through here)."""
    return name if _is_attribute_kind(name) else "UNDEFINED"


def _is_attribute_kind(name: str) -> TypeGuard[AttributeKind]:
    return name in ATTRIBUTE_KINDS


@dataclass(frozen=True)
class ValueInfo:
    """A named value's type; ``type`` reads like ``float32`` or ``seq(map(int64, float32))``."""

    name: str
    type: str = ""  # "" when the file does not say
    dtype: str | None = None  # element type for tensors ("float32"), else None
    shape: tuple[Dim, ...] | None = None  # None: rank unknown
    doc_string: str = ""


@dataclass(frozen=True)
class SparseTensor:
    """A sparse tensor: non-zero ``values`` at ``indices`` of a dense ``shape``."""

    values: Tensor
    indices: Tensor
    shape: tuple[int, ...]

    @property
    def name(self) -> str:
        return self.values.name


@dataclass(frozen=True)
class Attribute:
    """One node attribute, decoded.

    ``kind`` is the attribute type name (``FLOAT``, ``INTS``, ``TENSOR``, ``GRAPH``,
    ``TYPE_PROTO``...); ``value`` is a Python value, a :class:`Tensor`, a
    :class:`Graph`, a :class:`SparseTensor`, a readable type string, or a tuple of those.
    """

    name: str
    kind: AttributeKind
    value: Any
    doc_string: str = ""
    ref_attr_name: str = ""  # inside a function: refers to the caller's attribute


#: The empty mapping every node without metadata shares (one object, not one per node).
_NO_METADATA: Mapping[str, str] = MappingProxyType({})


def location_name(kind: str, holder: str = "initializer") -> str:
    """Where a weight's bytes are, in the words every view uses: ``external`` (a data file
    next to the model), ``in attribute`` (a Constant node's value or another tensor
    attribute) or ``embedded`` (inside the model file or the in-memory model).

    ``kind`` is a :class:`~onnx_explorer.tensors.TensorLocation` kind and ``holder`` a
    :class:`~onnx_explorer.model.WeightRef` kind.
    """
    if kind == "external":
        return "external"
    if holder in ("constant", "attribute"):
        return "in attribute"
    return "embedded"  # raw bytes, typed value fields or an in-memory ModelProto alike
