"""ONNX shape inference for a model read by :mod:`.onnx`, on a structure-only copy of its proto.

The ONNX reader attaches a :class:`ShapeInference` to the model it builds
(:attr:`Model.type_inference`); views ask the model, so only readers know about
protos, wire-format markers and ``onnx.shape_inference``.

Inference runs on a copy of the ModelProto. When the model was opened from a file,
every large ``raw_data`` in that proto is a 16-byte marker (:mod:`.protobuf._wire`)
standing for bytes still in the file; the copy clears those and marks the tensors
as external data, so inference sees dtype and dims only and never reads or
size-checks a payload. Payloads of 256 bytes or more are cleared the same way when
the model came from an in-memory proto, so small shape tensors (``Reshape``'s
target shape) stay readable while the copy holds structure only. That is why
``infer_shapes_path`` (meant for protos over protobuf's 2 GB limit) is not needed:
however large the weights, the copy is the size of the graph. It is also what the
worker process that runs inference is sent (:mod:`._inference_child`: inference can
loop for ever in C++, and only a process can be stopped).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...model import Graph, InferredTypes, Model, ValueInfo
from ..protobuf._wire import MAGIC, MARKER_LENGTH
from ._calls import call_types, graph_types
from ._values import _s

_CLEAR_AT = 256  # bytes of raw_data from which a tensor is cleared in the copy
_DUMMY_LOCATION = "onnx-explorer-structure-only"


class ShapeInference:
    """``onnx.shape_inference`` over every graph of a model (never raises).

    ``proto`` is the model's ModelProto (never modified); ``to_value_info`` turns a
    ``ValueInfoProto`` into a :class:`ValueInfo` (the reader's own conversion).

    Inference runs in a worker process (:mod:`._inference_child`), stopped after
    ``time_limit`` seconds (None: :data:`~._inference_child.INFERENCE_TIME_LIMIT`), for
    small models too: the one known endless loop needs a single Einsum node, so no size
    is small enough to be safe in the caller's process.
    """

    def __init__(
        self,
        proto: Any,
        to_value_info: Callable[[Any], ValueInfo],
        time_limit: float | None = None,
    ) -> None:
        self._proto = proto
        self._to_value_info = to_value_info
        self.time_limit = time_limit

    def __call__(
        self, model: Model, input_shapes: Mapping[str, tuple[int, ...]] | None = None
    ) -> InferredTypes:
        import onnx

        from ._inference_child import infer_in_child

        proto = self._proto
        if not isinstance(proto, onnx.ModelProto):
            return InferredTypes({}, "no ONNX model to run shape inference on")
        try:
            work = onnx.ModelProto()
            work.CopyFrom(proto)
            structure_only(work)
            if input_shapes:
                bind_input_shapes(work.graph, input_shapes)
            data = work.SerializeToString()
        except Exception as exc:  # any failure of inference only costs the labels
            return InferredTypes({}, f"ONNX shape inference failed ({_reason(exc)})")
        del work
        # Data propagation computes shape arithmetic (Shape → Gather → Concat → Reshape)
        # from the bound sizes: without it a detector's derived dims stay symbols.
        outcome = infer_in_child(data, self.time_limit, data_prop=bool(input_shapes))
        if outcome.inferred is None:
            return InferredTypes({}, outcome.error)
        inferred = onnx.ModelProto()
        try:
            inferred.ParseFromString(outcome.inferred)
        except Exception as exc:
            return InferredTypes({}, f"ONNX shape inference failed ({_reason(exc)})")
        types: dict[int, dict[str, ValueInfo]] = {}
        self._collect(inferred.graph, model.graph, types)
        from . import _inference_child as inference_child

        limit = (
            self.time_limit if self.time_limit is not None else inference_child.INFERENCE_TIME_LIMIT
        )
        calls = call_types(inferred, proto, model.graph, self._to_value_info, _infer_call, limit)
        return InferredTypes(types, calls=calls)

    def _collect(self, proto: Any, graph: Graph, out: dict[int, dict[str, ValueInfo]]) -> None:
        """Inferred types of ``proto``'s values, filed under the matching Graph (walked in
        parallel)."""
        out[id(graph)] = graph_types(proto, self._to_value_info)
        if len(proto.node) != len(graph.nodes):
            return
        for node in graph.nodes:
            if not node.subgraphs():
                continue
            node_proto = proto.node[node.index]
            for a in node_proto.attribute:
                attr = node.attributes.get(_s(a.name))
                if attr is None:
                    continue
                if attr.kind == "GRAPH":
                    self._collect(a.g, attr.value, out)
                elif attr.kind == "GRAPHS":
                    for g_proto, g in zip(a.graphs, attr.value):
                        self._collect(g_proto, g, out)


def _infer_call(model: Any, seconds: float) -> bytes | None:
    """Inference of one function call's body (dims only: no payload read or checked)."""
    from ._inference_child import infer_in_child

    structure_only(model)
    return infer_in_child(model.SerializeToString(), seconds, data_prop=True).inferred


def _reason(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"


def bind_input_shapes(graph: Any, input_shapes: Mapping[str, tuple[int, ...]]) -> None:
    """Give a GraphProto's inputs concrete shapes and drop what would contradict them.

    The ``value_info`` an exporter wrote (or an earlier inference left) holds the old
    symbols, and declared outputs may hold sizes valid for another input size: both are
    cleared so inference derives every size from the bound inputs. Bodies keep theirs
    (a Loop body's inputs are declared by the spec).
    """
    for value in graph.input:
        shape = input_shapes.get(_s(value.name))
        if shape is None or not value.type.HasField("tensor_type"):
            continue
        dims = value.type.tensor_type.shape.dim
        del dims[:]
        for size in shape:
            dims.add().dim_value = int(size)
    del graph.value_info[:]
    for value in graph.output:
        if value.type.HasField("tensor_type"):
            value.type.tensor_type.ClearField("shape")


def structure_only(model: Any) -> None:
    """Clear large and cut-out (marker) ``raw_data`` of a ModelProto in place: dims stay."""
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


__all__ = ["ShapeInference", "bind_input_shapes", "structure_only"]
