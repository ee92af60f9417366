"""Shapes for the MAC rules: the file's value types, completed by the format's inference,
with symbolic dimensions bound by the caller (unbound ones taken as 1 and remembered)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..dtypes import DTYPES
from ..model import INFER_AUTO_MAX_NODES, Graph, InferredTypes, Model, Node, ValueInfo
from .rules import Shape

#: GraphDef ops whose (first) output has their first input's shape.
_SAME_SHAPE = (
    "Identity BiasAdd Relu Relu6 Elu Selu Sigmoid Tanh Softmax LogSoftmax Softplus Softsign "
    "Neg Abs Exp Log Sqrt Rsqrt Square Erf FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3 "
    "LeakyRelu StopGradient"
)
SAME_SHAPE_OPS = frozenset(_SAME_SHAPE.split())


def checked_dims(dims: Mapping[str, Any] | None) -> dict[str, int]:
    """``dims`` as name → non-negative int; ValueError naming the first bad entry."""
    if dims is None:
        return {}
    if not isinstance(dims, Mapping):
        raise TypeError(f"dims must be a mapping of dimension name to size, not {type(dims)}")
    bound: dict[str, int] = {}
    for name, size in dims.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(
                f"dims[{name!r}] must be a non-negative integer, not {size!r}"
                " (e.g. dims={'batch': 1, 'sequence': 128})"
            )
        bound[str(name)] = int(size)
    return bound


def inferred_types(model: Model | None, graph: Graph, infer: bool | None) -> InferredTypes | None:
    """The format's type inference (the model's own, shared with the drawing), or None
    when not run; never raises."""
    if model is None or model.type_inference is None or infer is False:
        return None
    if infer is None and len(graph.nodes) > INFER_AUTO_MAX_NODES:
        return None
    return model.inferred_types()


def needs_inference(graph: Graph) -> bool:
    """True when some node output has no dtype and shape in the file."""
    known = graph.value_info
    outputs = {info.name: info for info in graph.outputs}
    for node in graph.nodes:
        for name in node.outputs:
            info = known.get(name) or outputs.get(name)
            if name and (info is None or info.shape is None or not info.dtype):
                return True
    return False


class GraphShapes:
    """Value types of one graph (declared, else inferred, else a weight's own), with an
    enclosing graph's as the fallback for names a body reads from outside."""

    def __init__(
        self,
        graph: Graph,
        inferred: InferredTypes | None,
        dims: dict[str, int],
        assumed: set[str],
        outer: GraphShapes | None = None,
        graph_format: str = "onnx",
    ) -> None:
        self.graph = graph
        self._declared: dict[str, ValueInfo] = dict(graph.value_info)
        for info in (*graph.declared_inputs, *graph.outputs):
            self._declared[info.name] = info
        self._inferred: Mapping[str, ValueInfo] = (
            inferred.types.get(id(graph), {}) if inferred is not None else {}
        )
        self._constants = graph.constants()
        self.inferred = inferred
        self.dims = dims
        self.assumed = assumed
        self.outer = outer
        self.graph_format = graph_format
        self._passing: set[str] = set()

    def info(self, name: str) -> ValueInfo | None:
        declared = self._declared.get(name)
        if declared is not None and declared.shape is not None and declared.dtype:
            return declared
        inferred = self._inferred.get(name)
        if inferred is not None and inferred.shape is not None:
            return inferred
        tensor = self.graph.initializers.get(name) or self._constants.get(name)
        if tensor is not None:
            return ValueInfo(name, tensor.dtype_name, tensor.dtype_name, tensor.shape)
        if declared is None and inferred is None and self.outer is not None:
            return self.outer.info(name)
        if (declared is None or declared.shape is None) and inferred is None:
            passed = self._passed_through(name)
            if passed is not None:
                return passed
        return declared or inferred

    def _passed_through(self, name: str) -> ValueInfo | None:
        """A GraphDef file without ``_output_shapes``: ops whose output has their first
        input's shape (Identity, BiasAdd, activations) take it from there."""
        if self.graph_format != "graphdef" or name in self._passing:
            return None
        node = self.graph.producer(name)
        if node is None or node.op_type not in SAME_SHAPE_OPS or not node.inputs:
            return None
        self._passing.add(name)  # a cycle of such ops (a broken file) ends here
        try:
            found = self.info(node.inputs[0])
        finally:
            self._passing.discard(name)
        if found is None or found.shape is None:
            return None
        return ValueInfo(name, found.type, found.dtype, found.shape)

    def shape(self, name: str) -> Shape | None:
        """Sizes of ``name``'s dims: bound or assumed 1 for symbols; None if any is unknown."""
        info = self.info(name) if name else None
        if info is None or info.shape is None:
            return None
        sizes: list[int] = []
        for dim in info.shape:
            if isinstance(dim, int) and dim >= 0:
                sizes.append(dim)
            elif isinstance(dim, str) and dim:
                if dim not in self.dims:
                    self.assumed.add(dim)
                sizes.append(self.dims.get(dim, 1))
            else:
                return None
        return tuple(sizes)

    def nbytes(self, name: str) -> int | None:
        shape = self.shape(name)
        info = self.info(name)
        dt = DTYPES.get(info.dtype or "") if info is not None else None
        if shape is None or dt is None or dt.bits == 0:
            return None
        return dt.storage_bytes(math.prod(shape))


class NodeView:
    """One node's shapes and attributes, as a MAC rule asks for them."""

    __slots__ = ("node", "shapes")

    def __init__(self, node: Node, shapes: GraphShapes) -> None:
        self.node = node
        self.shapes = shapes

    def has_input(self, i: int) -> bool:
        return i < len(self.node.inputs) and bool(self.node.inputs[i])

    def input(self, i: int) -> Shape | None:
        return self.shapes.shape(self.node.inputs[i]) if self.has_input(i) else None

    def output(self, i: int) -> Shape | None:
        outputs = self.node.outputs
        return self.shapes.shape(outputs[i]) if i < len(outputs) and outputs[i] else None

    def attr(self, name: str, default: Any = None) -> Any:
        attribute = self.node.attributes.get(name)
        return default if attribute is None else attribute.value
