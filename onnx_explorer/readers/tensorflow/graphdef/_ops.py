"""What GraphDef ops mean to the explorer: inputs, outputs worth showing, dtypes, weight layouts.

TensorFlow semantics read off the neutral model (op types and attributes); no
protobuf here.
"""

from __future__ import annotations

from ....model import Graph, Model, Node

#: Ops whose unread results are not shown as graph outputs.
NOT_OUTPUTS = frozenset({
    "NoOp", "Const", "Placeholder", "PlaceholderWithDefault", "Assert", "Print", "PrintV2",
    "SaveV2", "RestoreV2", "MergeV2Checkpoints", "VarHandleOp", "VariableV2", "Variable",
    "AssignVariableOp",
})  # fmt: skip
INPUT_OPS = frozenset({"Placeholder", "PlaceholderWithDefault"})

_BOOL_OPS = frozenset({
    "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd",
    "LogicalOr", "LogicalNot", "IsNan", "IsInf", "IsFinite", "IsVariableInitialized",
})  # fmt: skip


def output_dtype(node: Node) -> str | None:
    """Best guess of the element type of a node's first output, from its type attributes."""
    if node.op_type in _BOOL_OPS:
        return "bool"
    for key in ("out_type", "output_type", "DstT", "dtype", "T"):
        attr = node.attributes.get(key)
        if attr is not None and attr.kind == "TYPE":
            return str(attr.value)
    return None


# -- layout notes ------------------------------------------------------------------
_FILTER_LAYOUTS = {
    "Conv2D": "HWIO (TensorFlow Conv2D filter layout)",
    "_FusedConv2D": "HWIO (TensorFlow Conv2D filter layout)",
    "FusedPadConv2D": "HWIO (TensorFlow Conv2D filter layout)",
    "FusedResizeAndPadConv2D": "HWIO (TensorFlow Conv2D filter layout)",
    "QuantizedConv2D": "HWIO (TensorFlow Conv2D filter layout)",
    "Conv2DBackpropInput": "HWIO (TensorFlow Conv2D filter layout, of the forward convolution)",
    "Conv3D": "DHWIO (TensorFlow Conv3D filter layout)",
    "Conv3DBackpropInputV2": "DHWIO (TensorFlow Conv3D filter layout, of the forward convolution)",
    "DepthwiseConv2dNative": "HWIM (TensorFlow depthwise filter layout: M = channel multiplier)",
    "_FusedDepthwiseConv2dNative": (
        "HWIM (TensorFlow depthwise filter layout: M = channel multiplier)"
    ),
}
_PASS_THROUGH = frozenset({"Identity", "Cast", "Snapshot", "StopGradient", "Dequantize"})


def layout_note(where: Graph | Model, tensor_name: str) -> str | None:
    """How a GraphDef weight's axes are laid out, if a convolution reads it; else None.

    ``where`` is the graph holding the tensor (or the model: its graphs are searched
    for an initializer of that name). Follows Identity/Cast chains from a Const to
    its consumers, e.g. ``"HWIO (TensorFlow Conv2D filter layout)"``.
    """
    if isinstance(where, Model):
        graphs = [g for g in where.graphs() if tensor_name in g.initializers] or [where.graph]
        for graph in graphs:
            note = layout_note(graph, tensor_name)
            if note:
                return note
        return None
    graph = where
    start = graph.node(tensor_name).outputs if graph.has_node(tensor_name) else (tensor_name,)
    todo = list(start)
    seen: set[str] = set()
    while todo and len(seen) < 64:  # bounded: Identity chains are short
        value = todo.pop()
        if value in seen:
            continue
        seen.add(value)
        for consumer in graph.consumers(value):
            # The filter is input 1 of all of them (Conv2DBackpropInput: sizes, filter, grads).
            note = _FILTER_LAYOUTS.get(consumer.op_type)
            if note and consumer.inputs[1:2] == (value,):
                return note
            if consumer.op_type == "MatMul" and consumer.inputs[1:2] == (value,):
                attr = consumer.attributes.get("transpose_b")
                transposed = attr is not None and bool(attr.value)
                return (
                    "OI (TensorFlow MatMul weight, transpose_b: out features, in features)"
                    if transposed
                    else "IO (TensorFlow MatMul weight layout: in features, out features)"
                )
            if consumer.op_type in _PASS_THROUGH:
                todo.extend(consumer.outputs[:1])
    return None


__all__ = ["INPUT_OPS", "NOT_OUTPUTS", "layout_note", "output_dtype"]
