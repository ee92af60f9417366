"""Shapes for the MAC rules: the value types found for the bound inputs (an onnxruntime
run's, else shape inference's), else the file's, with input symbols bound
(:mod:`onnx_explorer.bindings`). A symbol still left is unknown, never taken as 1."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..bindings import is_concrete
from ..dtypes import DTYPES
from ..model import Graph, InferredTypes, Model, Node, ValueInfo
from ._rules import MAX_RANK, Shape, flag_attr, ints_attr

#: GraphDef ops whose (first) output has their first input's shape.
_SAME_SHAPE = (
    "Identity BiasAdd Relu Relu6 Elu Selu Sigmoid Tanh Softmax LogSoftmax Softplus Softsign "
    "Neg Abs Exp Log Sqrt Rsqrt Square Erf FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3 "
    "LeakyRelu StopGradient Cast"
)
SAME_SHAPE_OPS = frozenset(_SAME_SHAPE.split())
#: GraphDef binary ops whose output is their inputs' broadcast.
_BROADCAST = "Add AddV2 Sub Mul RealDiv Div Maximum Minimum SquaredDifference Pow FloorDiv FloorMod"
BROADCAST_OPS = frozenset(_BROADCAST.split())
#: GraphDef windowed ops whose output size follows from input, window, strides, padding.
WINDOW_OPS = frozenset({"Conv2D", "Conv3D", "MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D"})
#: GraphDef products whose output size follows from their inputs.
MATMUL_OPS = {"MatMul": ("transpose_a", "transpose_b"), "BatchMatMul": ("adj_x", "adj_y"),
              "BatchMatMulV2": ("adj_x", "adj_y"), "BatchMatMulV3": ("adj_x", "adj_y")}  # fmt: skip


def inference_for_metrics(
    model: Model | None,
    graph: Graph,
    infer: bool | None,
    input_shapes: Mapping[str, tuple[int, ...]] | None = None,
) -> InferredTypes | None:
    """The format's type inference (the model's own, shared with the drawing), on inputs
    bound to ``input_shapes`` when given, or None when not run; never raises.

    Unlike the first view (which skips it past :data:`INFER_AUTO_MAX_NODES` nodes),
    metrics are asked for: inference runs at any size unless ``infer`` is False (2.8 s
    for 100,000 nodes here, with data propagation), since without it every MAC of a
    graph whose file stores no shapes would be unknown."""
    if model is None or model.type_inference is None or infer is False:
        return None
    return model.inferred_types(input_shapes)


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
        dims: Mapping[str, int],
        unresolved: set[str],
        outer: GraphShapes | None = None,
        graph_format: str = "onnx",
        *,
        found_first: bool = False,
        observed: Mapping[str, ValueInfo] | None = None,
        bound_inputs: Mapping[str, Shape] | None = None,
    ) -> None:
        self.graph = graph
        # Concrete shapes of this graph's inputs: the binding's (main graph) or a call
        # site's (a function body), over what the file declares.
        self._bound_inputs: Mapping[str, Shape] = bound_inputs or {}
        self._declared: dict[str, ValueInfo] = dict(graph.value_info)
        for info in (*graph.declared_inputs, *graph.outputs):
            self._declared[info.name] = info
        self._inferred: Mapping[str, ValueInfo] = (
            inferred.types.get(id(graph), {}) if inferred is not None else {}
        )
        self._observed: Mapping[str, ValueInfo] = observed or {}
        self._constants = graph.constants()
        self.inferred = inferred
        self.dims = dims
        self.unresolved = unresolved
        self.outer = outer
        self.graph_format = graph_format
        # Inference on bound inputs (or a run) knows sizes the file's value_info leaves
        # as symbols (or states for another input size): it comes first then.
        self._found_first = found_first
        self._passing: set[str] = set()
        self._derived: dict[str, ValueInfo | None] = {}  # GraphDef sizes worked out

    def info(self, name: str) -> ValueInfo | None:
        observed = self._observed.get(name)
        if observed is not None:
            return observed
        bound = self._bound_inputs.get(name)
        if bound is not None:
            declared_input = self._declared.get(name)
            dtype = declared_input.dtype if declared_input is not None else None
            return ValueInfo(name, dtype or "", dtype, bound)
        if self._found_first:
            found = self._inferred.get(name)
            if found is not None and found.shape is not None and is_concrete(found.shape):
                return found
        declared = self._declared.get(name)
        if declared is not None and declared.shape is not None and declared.dtype:
            if self.graph_format == "graphdef" and not is_concrete(declared.shape):
                passed = self._passed_through(name)  # -1 sizes: the input's may be known
                if passed is not None and passed.shape is not None and is_concrete(passed.shape):
                    return passed
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
        """A GraphDef value whose size the file does not give (no ``_output_shapes``, or
        ``-1``), worked out from its inputs (:meth:`_derive`), once per value: a residual
        block reads its input twice, and without the memo each block doubled the work."""
        if self.graph_format != "graphdef" or name in self._passing:
            return None
        if name in self._derived:
            return self._derived[name]
        try:
            found = self._derive(name)
        except RecursionError:  # a chain deeper than the stack, stored out of order
            found = None
        self._derived[name] = found
        return found

    def _derive(self, name: str) -> ValueInfo | None:
        """Ops whose output has their first input's shape (Identity, BiasAdd, activations)
        take it from there, binary element-wise ops the inputs' broadcast, MatMul,
        convolutions, pooling and Reshape to a constant their own rule."""
        node = self.graph.producer(name)
        if node is None or not node.inputs:
            return None
        if node.op_type in MATMUL_OPS or node.op_type in WINDOW_OPS:
            return self._product_output(name, node)
        if node.op_type == "Reshape" and len(node.inputs) == 2:
            return self._reshaped(name, node)
        same = node.op_type in SAME_SHAPE_OPS
        if not same and (node.op_type not in BROADCAST_OPS or len(node.inputs) != 2):
            return None
        self._passing.add(name)  # a cycle of such ops (a broken file) ends here
        try:
            found = [self.info(i) for i in (node.inputs[:1] if same else node.inputs)]
        finally:
            self._passing.discard(name)
        if any(f is None or f.shape is None or not is_concrete(f.shape) for f in found):
            return None
        first = found[0]
        assert first is not None and first.shape is not None
        shape: tuple[Any, ...] = first.shape
        if not same:
            try:
                sizes = [
                    tuple(d for d in f.shape or () if isinstance(d, int))
                    for f in found
                    if f is not None
                ]  # every dim is an int: is_concrete above
                shape = np.broadcast_shapes(*sizes)
            except ValueError:  # shapes that do not broadcast: a broken file
                return None
        dtype = _tf_dtype(node) or first.dtype
        return ValueInfo(name, dtype or "", dtype, tuple(shape))

    def _product_output(self, name: str, node: Node) -> ValueInfo | None:
        """A GraphDef MatMul's or convolution's output from its inputs' sizes."""
        from ._rules import tf_conv_output

        view = NodeView(node, self)
        self._passing.add(name)
        try:
            a, b = view.input(0), view.input(1)
            if node.op_type in MATMUL_OPS:
                if a is None or b is None or len(a) < 2 or len(b) < 2:
                    return None
                transpose_a, transpose_b = MATMUL_OPS[node.op_type]
                m = a[-1] if flag_attr(view, transpose_a) else a[-2]
                n = b[-2] if flag_attr(view, transpose_b) else b[-1]
                shape: Shape | None = (*a[:-2], m, n)
            elif node.op_type in ("Conv2D", "Conv3D"):
                shape = tf_conv_output(view, b)
            else:  # pooling: the window is ``ksize``, channels stay
                window = ints_attr(view, "ksize") or None
                shape = tf_conv_output(view, window, pooling=True)
        finally:
            self._passing.discard(name)
        if shape is None:
            return None
        return self._derived_value(name, node, shape)

    def _reshaped(self, name: str, node: Node) -> ValueInfo | None:
        """A GraphDef Reshape to a constant target (one ``-1`` taken from the input)."""
        self._passing.add(name)
        try:
            source = self.shape(node.inputs[0])
        finally:
            self._passing.discard(name)
        target = self.graph.initializers.get(node.inputs[1]) or self._constants.get(node.inputs[1])
        if source is None or target is None or target.size > 64 or len(target.shape) != 1:
            return None
        try:
            sizes = [int(v) for v in target.numpy().reshape(-1)]
        except Exception:  # an unreadable target leaves the size unknown
            return None
        known = math.prod(v for v in sizes if v >= 0)
        if sizes.count(-1) > 1 or any(v < -1 for v in sizes) or (-1 in sizes and not known):
            return None
        if -1 in sizes:
            sizes[sizes.index(-1)] = math.prod(source) // known
        return self._derived_value(name, node, tuple(sizes))

    def _derived_value(self, name: str, node: Node, shape: Shape) -> ValueInfo:
        declared = self._declared.get(name)
        dtype = (declared.dtype if declared is not None else None) or _tf_dtype(node)
        return ValueInfo(name, dtype or "", dtype, shape)

    def shape(self, name: str) -> Shape | None:
        """Sizes of ``name``'s dims, bound symbols included; None if any is unknown (an
        unbound symbol is remembered in ``unresolved``)."""
        info = self.info(name) if name else None
        if info is None or info.shape is None or len(info.shape) > MAX_RANK:
            return None  # a million dims: unknown (their product alone was quadratic)
        sizes: list[int] = []
        for dim in info.shape:
            if isinstance(dim, int) and dim >= 0:
                sizes.append(dim)
            elif isinstance(dim, str) and dim in self.dims:
                sizes.append(self.dims[dim])
            else:
                if isinstance(dim, str) and dim:
                    self.unresolved.add(dim)
                return None
        return tuple(sizes)

    def constant(self, name: str) -> int | None:
        """A one-element integer or bool weight or Constant as an int (a Loop's trip count
        and condition)."""
        tensor = self.graph.initializers.get(name) or self._constants.get(name)
        if tensor is None and self.outer is not None:
            return self.outer.constant(name)
        if (
            tensor is None
            or tensor.size != 1
            or not tensor.dtype_name.startswith(("int", "uint", "bool"))
        ):
            return None
        try:
            return int(tensor.numpy().reshape(-1)[0])
        except Exception:  # a broken weight leaves the count unknown
            return None

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

    def constant(self, i: int) -> int | None:
        return self.shapes.constant(self.node.inputs[i]) if self.has_input(i) else None


def _tf_dtype(node: Node) -> str | None:
    """A TensorFlow op's output dtype from its type attribute (``DstT`` of a Cast, else
    ``T``/``dtype``), as our dtype names."""
    for key in ("DstT", "T", "dtype"):
        attribute = node.attributes.get(key)
        if attribute is not None and attribute.kind == "TYPE" and attribute.value:
            return str(attribute.value)
    return None
