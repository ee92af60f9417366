"""What changed in a matched pair of nodes, as lines a person reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model import Graph, Node, SparseTensor
from ..tensors import Tensor
from ._matching import value_key

_SHOWN = 60  # characters of an attribute value shown in a change line
_CONSTANT_OPS = ("Constant", "Const")  # ONNX, TensorFlow: their value is a weight


def show_value(value: Any) -> str:
    """An attribute value, short: tensors by dtype and shape, bodies as "graph"."""
    if isinstance(value, Tensor):
        return f"tensor {value.dtype_name}[{', '.join(str(d) for d in value.shape)}]"
    if isinstance(value, SparseTensor):
        return f"sparse tensor {show_value(value.values)}"
    if isinstance(value, Graph):
        return "graph"
    if isinstance(value, tuple) and any(isinstance(v, Tensor | Graph) for v in value):
        return "[" + ", ".join(show_value(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:.7g}"  # FLOAT attributes are float32: 0.1, not 0.10000000149011612
    if isinstance(value, tuple) and all(isinstance(v, float) for v in value):
        return "[" + ", ".join(f"{v:.7g}" for v in value) + "]"
    text = repr(list(value)) if isinstance(value, tuple) else repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def node_changes(a: Node, b: Node, values_b2a: Mapping[str, str]) -> list[str]:
    """Op type, attributes (bodies and Constant values aside: compared on their own),
    inputs (a's names against b's, mapped through the match) and output count."""
    lines: list[str] = []
    if a.qualified_op != b.qualified_op:
        lines.append(f"op type: {a.qualified_op} → {b.qualified_op}")
    constant = a.op_type in _CONSTANT_OPS and b.op_type in _CONSTANT_OPS
    for name in sorted(set(a.attributes) | set(b.attributes)):
        attr_a, attr_b = a.attributes.get(name), b.attributes.get(name)
        if attr_a is None or attr_b is None:
            old = "(none)" if attr_a is None else show_value(attr_a.value)
            new = "(none)" if attr_b is None else show_value(attr_b.value)
            lines.append(f"attribute {name}: {old} → {new}")
            continue
        va, vb = attr_a.value, attr_b.value
        if isinstance(va, Graph) or isinstance(vb, Graph):
            continue
        if constant and isinstance(va, Tensor) and isinstance(vb, Tensor):
            continue  # the tensor comparison reports it, with tolerances
        if value_key(va) != value_key(vb):
            old, new = show_value(va), show_value(vb)
            if old == new:  # same dtype and shape, different contents
                old, new = old + " (contents)", new + " (other contents)"
            lines.append(f"attribute {name}: {old} → {new}")
    for pos in range(max(len(a.inputs), len(b.inputs))):
        in_a = a.inputs[pos] if pos < len(a.inputs) else None
        in_b = b.inputs[pos] if pos < len(b.inputs) else None
        mapped = values_b2a.get(in_b, in_b) if in_b else in_b
        if in_a != mapped:
            lines.append(f"input {pos}: {_name(in_a)} → {_name(in_b)}")
    if len(a.outputs) != len(b.outputs):
        lines.append(f"outputs: {len(a.outputs)} → {len(b.outputs)}")
    return lines


def _name(value: str | None) -> str:
    if value is None:
        return "(none)"
    return repr(value) if value == "" else value
