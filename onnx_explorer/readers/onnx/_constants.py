"""ONNX ``Constant`` nodes → the tensors they produce (many exporters keep all weights there).

Asked through the model's format support (:meth:`Graph.constants`); works on the neutral
nodes, so a graph's Constants are decoded only when something first asks for them.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ...dtypes import DType, dtype
from ...errors import TensorDataError
from ...model import Graph, Node
from ...tensors import ArraySource, Tensor, TensorLocation


def constants(graph: Graph) -> dict[str, Tensor]:
    """Output name → value of the graph's Constant nodes (see :meth:`Graph.constants`)."""
    return {
        node.outputs[0]: _constant_value(node)
        for node in graph.nodes
        if node.op_type == "Constant" and node.outputs
    }


#: Constant's value attributes (exactly one per node) → the attribute kind it must hold and,
#: for the scalar and list forms, the dtype name and numpy dtype of the tensor they make.
_CONSTANT_ATTRIBUTES: dict[str, tuple[str, str | None, str | None]] = {
    "value": ("TENSOR", None, None),
    "sparse_value": ("SPARSE_TENSOR", None, None),
    "value_float": ("FLOAT", "float32", "float32"),
    "value_floats": ("FLOATS", "float32", "float32"),
    "value_int": ("INT", "int64", "int64"),
    "value_ints": ("INTS", "int64", "int64"),
    "value_string": ("STRING", "string", "object"),
    "value_strings": ("STRINGS", "string", "object"),
}
#: The element type of a broken Constant whose value's type cannot be told (see
#: :func:`_unreadable`).
_UNKNOWN_DTYPE = DType("undefined", np.dtype(object), 0, is_numeric=False)


def _same(value: Any) -> Any:
    return value


def _raise(message: str) -> np.ndarray:
    raise TensorDataError(message)


def _unreadable(name: str, dtype_name: str | None, message: str) -> Tensor:
    """A tensor that stands for a broken Constant: listed (no elements), reading it raises."""
    source = ArraySource(partial(_raise, f"tensor {name!r}: {message}"), TensorLocation("typed"))
    return Tensor(name, dtype(dtype_name) if dtype_name else _UNKNOWN_DTYPE, (0,), source)


def _constant_value(node: Node) -> Tensor:
    """The tensor a Constant node produces; a broken one (no value attribute, several, or one
    holding the wrong kind of value) gives a tensor whose reading says what is wrong."""
    name = node.outputs[0]
    found = [attr for key, attr in node.attributes.items() if key in _CONSTANT_ATTRIBUTES]
    if len(found) != 1:
        what = "no value attribute" if not found else (
            f"{len(found)} value attributes ({', '.join(a.name for a in found)})"
        )  # fmt: skip
        return _unreadable(name, None, f"Constant node {node.name!r} has {what}; it needs one")
    attr = found[0]
    kind, dtype_name, np_dtype = _CONSTANT_ATTRIBUTES[attr.name]
    if attr.kind != kind:
        return _unreadable(
            name,
            dtype_name,
            f"attribute {attr.name!r} of Constant node {node.name!r} is of kind {attr.kind}, "
            f"not {kind}",
        )
    if kind == "TENSOR":
        return attr.value  # type: ignore[no-any-return]
    if kind == "SPARSE_TENSOR":
        return attr.value.values  # type: ignore[no-any-return]
    assert dtype_name is not None
    values = attr.value
    array = np.array(list(values) if isinstance(values, tuple) else values, dtype=np_dtype)
    source = ArraySource(partial(_same, array), TensorLocation("typed"))
    return Tensor(name, dtype(dtype_name), array.shape, source)


__all__ = ["constants"]
