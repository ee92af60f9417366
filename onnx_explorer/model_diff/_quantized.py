"""A float weight of one model paired with its quantized copy in the other, through nodes.

A quantizer stores ``W`` as ``W_quantized`` (another name, another dtype, another content
hash), so neither the name nor the content match pairs them; the nodes that read them do.
onnxruntime's dynamic quantization, for instance, writes

- ``MatMul(x, W)`` as ``MatMulInteger(xq, W_quantized, …) → Cast → Mul`` (``Conv`` as
  ``ConvInteger``, then maybe a bias ``Add``), keeping the output's name; the node match
  leaves the two apart (other op, other inputs), so a's unmatched ``MatMul`` is looked for
  in b from its output: what b's matched consumers read in its place (or the same name),
  walked up through ``Add`` / ``Mul`` / ``Cast`` / Reshape... to an integer op;
- ``Gather(E, ids)`` as ``Gather(E_quantized, ids) → DequantizeLinear`` or feeding a
  ``MatMulInteger`` directly, and any weight as ``DequantizeLinear(W_quantized) → op``: a
  matched (or so found) pair of nodes reads, at the same input position, a stored float
  tensor on one side and, through Gather / Reshape / Transpose / Cast / DequantizeLinear,
  a stored quantized one on the other.

Pairs are only made between a float tensor (float16/bfloat16/float32/float64) and a
quantized one (anything else) holding as many elements, each unpaired so far, reached
through as many ``Gather`` ops; it works both ways (a float and b quantized, or the
reverse). The caller compares each pair dequantized (:mod:`onnx_explorer.weights._quant`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from ..model import Graph, Node
from ..tensors import Tensor
from ._matching import GraphMatch, read_in_place

#: Element types that are real numbers as stored (the other side is tried as quantized).
REAL = frozenset({"float16", "bfloat16", "float32", "float64"})
#: Ops between a stored weight and the node that reads it (input 0 carried).
_THROUGH = frozenset({"Gather", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",
                      "Identity", "Cast", "DequantizeLinear"})  # fmt: skip
#: Ops between a quantized op's result and the value the float op's output became.
_RESULT = frozenset({"Add", "Mul", "Cast", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
                     "Flatten", "Identity", "DequantizeLinear"})  # fmt: skip
_HOPS = 6
#: float op → {quantized op that replaces it: {float input position: quantized position}}.
_REPLACED_BY: dict[str, dict[str, dict[int, int]]] = {
    "MatMul": {
        "MatMulInteger": {0: 0, 1: 1},
        "MatMulIntegerToFloat": {0: 0, 1: 1},
        "DynamicQuantizeMatMul": {0: 0, 1: 1},
        "QLinearMatMul": {0: 0, 1: 3},
    },
    "Conv": {"ConvInteger": {1: 1}, "QLinearConv": {1: 3}},
    "Gemm": {"QGemm": {0: 0, 1: 3}},
    "LSTM": {"DynamicQuantizeLSTM": {1: 1, 2: 2}},
}
#: (float op, quantized op) → how the quantized weights are transposed back to the float
#: layout (onnxruntime stores an LSTM's W [dirs, 4·hidden, in] as [dirs, in, 4·hidden]).
_LAYOUTS: dict[tuple[str, str], tuple[int, ...]] = {("LSTM", "DynamicQuantizeLSTM"): (0, 2, 1)}


class Link(NamedTuple):
    """A float tensor and its quantized copy; a layout transposes that side's values into
    the other's order."""

    a: str
    b: str
    layout_a: tuple[int, ...] | None = None
    layout_b: tuple[int, ...] | None = None


@dataclass(frozen=True)
class _Side:
    """One model's graph as the search reads it, with the match seen from its side."""

    graph: Graph
    stored: Mapping[str, Tensor]
    nodes: Mapping[int, int]  # this side's node index → the other side's
    values: Mapping[str, str]  # this side's value name → the other side's


def quantized_pairs(
    match: GraphMatch,
    stored_a: Mapping[str, Tensor],
    stored_b: Mapping[str, Tensor],
    tensors_b2a: Mapping[str, str],
) -> list[Link]:
    """Each float tensor paired with its quantized copy (either side)."""
    values_b2a = dict(match.values_b2a)
    a = _Side(match.a, stored_a, match.a2b, {va: vb for vb, va in values_b2a.items()})
    b = _Side(match.b, stored_b, match.b2a, values_b2a)
    taken_a, taken_b = set(tensors_b2a.values()), set(tensors_b2a)
    found: list[Link] = []
    for real, quantized, flip in ((a, b, False), (b, a, True)):
        taken_r, taken_q = (taken_b, taken_a) if flip else (taken_a, taken_b)
        for name_r, name_q, layout in _links(real, quantized):
            if name_r in taken_r or name_q in taken_q:
                continue
            taken_r.add(name_r)
            taken_q.add(name_q)
            found.append(
                Link(name_q, name_r, layout, None) if flip else Link(name_r, name_q, None, layout)
            )
    return found


Candidate = tuple[str, str, tuple[int, ...] | None]  # float name, quantized name, its layout


def _links(real: _Side, quantized: _Side) -> Iterator[Candidate]:
    """Candidate (float name on ``real``, quantized name on ``quantized``, layout) pairs."""
    claimed: set[int] = set()
    for node in real.graph.nodes:
        other = real.nodes.get(node.index)
        if other is not None:
            positions = {p: p for p in range(len(node.inputs))}
            yield from _inputs(real, quantized, node, quantized.graph.nodes[other], positions)
            continue
        replaced = _REPLACED_BY.get(node.op_type)
        if not replaced or not node.outputs or node.domain not in ("", "ai.onnx"):
            continue
        found = _replacement(real, quantized, node.outputs[0], replaced, claimed)
        if found is not None:
            claimed.add(found.index)
            layout = _LAYOUTS.get((node.op_type, found.op_type))
            yield from _inputs(real, quantized, node, found, replaced[found.op_type], layout)


def _inputs(
    real: _Side,
    quantized: _Side,
    node_r: Node,
    node_q: Node,
    positions: Mapping[int, int],
    layout: tuple[int, ...] | None = None,
) -> Iterator[Candidate]:
    for pos_r, pos_q in positions.items():
        if pos_r >= len(node_r.inputs) or pos_q >= len(node_q.inputs):
            continue
        source_r = _source(real, node_r.inputs[pos_r])
        source_q = _source(quantized, node_q.inputs[pos_q])
        if source_r is None or source_q is None or source_r[1] != source_q[1]:
            continue  # not both stored, or an embedding facing a whole table
        tensor_r, tensor_q = real.stored[source_r[0]], quantized.stored[source_q[0]]
        if (
            tensor_r.dtype_name in REAL
            and tensor_q.dtype_name not in REAL
            and tensor_r.size == tensor_q.size
        ):
            shape_q = tuple(tensor_q.shape)
            fits = layout is not None and len(layout) == len(shape_q)
            relaid = tuple(shape_q[d] for d in layout) if layout is not None and fits else None
            yield source_r[0], source_q[0], layout if relaid == tuple(tensor_r.shape) else None


def _source(side: _Side, name: str) -> tuple[str, int] | None:
    """The stored tensor ``name`` is read from (through :data:`_THROUGH`), and how many
    Gathers are on the way; None when it is computed from anything else."""
    gathers = 0
    for _ in range(_HOPS):
        if not name:
            return None
        if name in side.stored:
            return name, gathers
        producer = side.graph.producer(name)
        if producer is None or producer.op_type not in _THROUGH or not producer.inputs:
            return None
        gathers += producer.op_type == "Gather"
        name = producer.inputs[0]
    return None


def _counterpart(real: _Side, quantized: _Side, value: str) -> str | None:
    """The value of the quantized side that stands for ``value`` of the real side: mapped by
    the match, read in its place by a matched consumer, or of the same name."""
    mapped = real.values.get(value)
    if mapped:
        return mapped
    found = read_in_place(real.graph.consumers(value), real.nodes, quantized.graph, value)
    if found:
        return found
    if quantized.graph.producer(value) is not None:
        return value
    return None


def _replacement(
    real: _Side,
    quantized: _Side,
    output: str,
    replaced: Mapping[str, Mapping[int, int]],
    claimed: set[int],
) -> Node | None:
    """The unmatched quantized op that computes what the real side's ``output`` became:
    the nearest one above its counterpart through :data:`_RESULT` ops."""
    start = _counterpart(real, quantized, output)
    if start is None:
        return None
    graph = quantized.graph
    frontier, seen = [start], {start}
    for _ in range(_HOPS):
        following: list[str] = []
        for value in frontier:
            producer = graph.producer(value)
            if producer is None:
                continue
            if producer.op_type in replaced:
                if producer.index not in quantized.nodes and producer.index not in claimed:
                    return producer
                continue
            if producer.op_type not in _RESULT:
                continue
            for name in producer.inputs:
                if name and name not in seen:
                    seen.add(name)
                    following.append(name)
        frontier = following
    return None
