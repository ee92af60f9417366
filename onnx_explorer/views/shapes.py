"""Types of the values on a graph's edges: the file's value_info, completed by ONNX shape inference.

Inference runs on a copy of ``model.source`` (the ModelProto). When the model was
opened from a file, every large ``raw_data`` in that proto is a 16-byte marker
(``readers/protowire.py``) standing for bytes still in the file; the copy clears
those and marks the tensors as external data, so inference sees dtype and dims
only and never reads or size-checks a payload. Payloads of 256 bytes or more are
cleared the same way when the model came from an in-memory proto, so small shape
tensors (``Reshape``'s target shape) stay readable while the copy holds structure
only. That is why ``infer_shapes_path`` (meant for protos over protobuf's 2 GB
limit) is not needed: however large the weights, the copy is the size of the graph.

A model whose inference fails still draws, without the inferred labels; the
reason is kept as a note. Results are cached per model.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model import Graph, Model, ValueInfo
from ..readers.protowire import MAGIC, MARKER_LENGTH

#: Inference runs by itself (``infer=None``) on graphs of at most this many nodes: it
#: costs about 1.2 s per 100,000 nodes here, too much to put before a first view.
INFER_AUTO_MAX_NODES = 50_000
_CLEAR_AT = 256  # bytes of raw_data from which a tensor is cleared in the copy
_DUMMY_LOCATION = "onnx-explorer-structure-only"


@dataclass(frozen=True)
class Inferred:
    types: Mapping[int, Mapping[str, ValueInfo]]  # id(graph) → value name → type
    error: str | None = None


_CACHE: weakref.WeakKeyDictionary[Model, Inferred] = weakref.WeakKeyDictionary()


def inferred_types(model: Model) -> Inferred:
    """Shape inference over every graph of an ONNX model (cached; never raises)."""
    result = _CACHE.get(model)
    if result is None:
        result = _CACHE[model] = _infer(model)
    return result


class ValueTypes:
    """Type lookup for the values of one graph: declared first, inferred where missing."""

    def __init__(self, graph: Graph, inferred: Mapping[str, ValueInfo]) -> None:
        declared: dict[str, ValueInfo] = dict(graph.value_info)
        for info in (*graph.declared_inputs, *graph.outputs):
            declared[info.name] = info
        self._declared = declared
        self._inferred = inferred
        self._graph = graph

    def get(self, name: str) -> ValueInfo | None:
        declared = self._declared.get(name)
        if declared is not None and declared.dtype and declared.shape is not None:
            return declared
        inferred = self._inferred.get(name)
        if inferred is not None and (declared is None or inferred.shape is not None):
            return inferred
        if declared is None:
            return self._graph.value(name)  # an initializer's own dtype and dims
        return declared


def value_types(
    graph: Graph, model: Model | None, infer: bool | None = None
) -> tuple[ValueTypes, str | None]:
    """Type lookup for ``graph`` and a note saying what inference did (None: nothing to say).

    ``infer``: True runs ONNX shape inference, False never does, None runs it on
    graphs up to :data:`INFER_AUTO_MAX_NODES` nodes.
    """
    if model is None or model.format != "onnx" or infer is False:
        return ValueTypes(graph, {}), None
    big = len(model.graph.nodes) > INFER_AUTO_MAX_NODES
    if infer is None and big and model not in _CACHE:
        note = (
            f"edge shapes from the file only: shape inference skipped for "
            f"{len(model.graph.nodes):,} nodes (infer_shapes=True runs it)"
        )
        return ValueTypes(graph, {}), note
    result = inferred_types(model)
    if result.error is not None:
        return ValueTypes(graph, {}), f"edge shapes from the file only: {result.error}"
    return ValueTypes(graph, result.types.get(id(graph), {})), None


# -- inference ---------------------------------------------------------------------------
def _infer(model: Model) -> Inferred:
    import onnx

    proto = model.source
    if not isinstance(proto, onnx.ModelProto):
        return Inferred({}, "no ONNX model to run shape inference on")
    try:
        work = onnx.ModelProto()
        work.CopyFrom(proto)
        _structure_only(work)
        inferred = onnx.shape_inference.infer_shapes(
            work, check_type=False, strict_mode=False, data_prop=False
        )
    except Exception as exc:  # any failure of inference only costs the labels
        message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return Inferred({}, f"ONNX shape inference failed ({type(exc).__name__}: {message})")
    types: dict[int, dict[str, ValueInfo]] = {}
    _collect(inferred.graph, model.graph, types)
    return Inferred(types)


def _structure_only(model: Any) -> None:
    from onnx import AttributeProto as A

    def tensor(t: Any) -> None:
        if t.data_location == 1 or not t.HasField("raw_data"):  # 1: EXTERNAL
            return
        raw = t.raw_data
        if len(raw) >= _CLEAR_AT or (len(raw) == MARKER_LENGTH and raw.startswith(MAGIC)):
            t.ClearField("raw_data")
            t.data_location = 1
            del t.external_data[:]
            entry = t.external_data.add()
            entry.key, entry.value = "location", _DUMMY_LOCATION

    def nodes(protos: Any) -> None:
        for node in protos:
            for a in node.attribute:
                kind = a.type
                if kind == A.TENSOR:
                    tensor(a.t)
                elif kind == A.TENSORS:
                    for t in a.tensors:
                        tensor(t)
                elif kind == A.SPARSE_TENSOR:
                    tensor(a.sparse_tensor.values)
                    tensor(a.sparse_tensor.indices)
                elif kind == A.GRAPH:
                    graph(a.g)
                elif kind == A.GRAPHS:
                    for g in a.graphs:
                        graph(g)

    def graph(g: Any) -> None:
        for t in g.initializer:
            tensor(t)
        for sp in g.sparse_initializer:
            tensor(sp.values)
            tensor(sp.indices)
        nodes(g.node)

    graph(model.graph)
    for function in model.functions:
        nodes(function.node)


def _collect(proto: Any, graph: Graph, out: dict[int, dict[str, ValueInfo]]) -> None:
    """Inferred types of ``proto``'s values, filed under the matching Graph (walked in parallel)."""
    from ..readers.onnx import value_info

    types = {vi.name: value_info(vi) for vi in proto.value_info}
    for vi in proto.output:
        types.setdefault(vi.name, value_info(vi))
    out[id(graph)] = types
    if len(proto.node) != len(graph.nodes):
        return
    for node in graph.nodes:
        if not node.subgraphs():
            continue
        node_proto = proto.node[node.index]
        for a in node_proto.attribute:
            attr = node.attributes.get(a.name)
            if attr is None:
                continue
            if attr.kind == "GRAPH":
                _collect(a.g, attr.value, out)
            elif attr.kind == "GRAPHS":
                for g_proto, g in zip(a.graphs, attr.value):
                    _collect(g_proto, g, out)
