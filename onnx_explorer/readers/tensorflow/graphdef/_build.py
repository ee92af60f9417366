"""A parsed GraphDef message → the neutral :class:`Model` (nodes, values, graphs, functions).

The mapping is described in :mod:`.graphdef`; attributes are decoded by
:mod:`._attrs`, tensors by :mod:`._tensors`, op meaning comes from
:mod:`._ops`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....errors import ModelFormatError
from ....external_data import DataFiles
from ....model import Dim, Function, Graph, Model, Node, ValueInfo
from ....tensors import Tensor
from ._attrs import AttrReader, shape_dims
from ._ops import INPUT_OPS, NOT_OUTPUTS, output_dtype
from ._support import GraphDefSupport
from ._tensors import TensorContext, tf_type_name

_DENSE_PORTS = 1024  # above this a node lists only the ports it is read from


# -- value names -------------------------------------------------------------------
_PORT_DIGITS = 18  # a longer "port" is no output index but part of a name (and int() of
# thousands of digits raises ValueError)


def _is_index(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= _PORT_DIGITS


@dataclass
class _Ref:
    value: str  # the value name used in Node.inputs / Node.outputs
    producer: str | None  # the node named by the reference (may not exist)
    port: int = 0  # graph style: output port
    arg: str = ""  # function style: output argument name


def _graph_ref(text: str) -> _Ref:
    name, sep, port = text.rpartition(":")
    if sep and name and _is_index(port):
        k = int(port)
        return _Ref(name if k == 0 else f"{name}:{k}", name, k)
    return _Ref(text, text)


def _function_ref(text: str, args: set[str]) -> _Ref:
    parts = text.split(":")
    if len(parts) == 3 and parts[0] and _is_index(parts[2]):
        return _Ref(f"{parts[0]}:{parts[1]}:{int(parts[2])}", parts[0], int(parts[2]), parts[1])
    if len(parts) == 2 and parts[0] and not _is_index(parts[1]):
        return _Ref(f"{parts[0]}:{parts[1]}:0", parts[0], 0, parts[1])
    if len(parts) == 2:
        return _graph_ref(text)
    if text in args:
        return _Ref(text, None)
    return _Ref(text, text)


# -- nodes and graphs --------------------------------------------------------------
@dataclass
class _Body:
    """Nodes of a graph or function body, converted, with what the graph needs of them."""

    nodes: list[Node]
    read: set[str]  # names of nodes some data or control edge leaves
    initializers: dict[str, Tensor]
    value_info: dict[str, ValueInfo]


def _unique_names(node_defs: Any) -> list[tuple[str, bool]]:
    names: list[tuple[str, bool]] = []
    seen = {n.name for n in node_defs if n.name}
    used: set[str] = set()
    next_suffix: dict[str, int] = {}  # keeps many duplicates linear
    for i, n in enumerate(node_defs):
        has_name = bool(n.name)
        name = n.name or f"{n.op or 'node'}_{i}"
        if name in used or (not has_name and name in seen):
            k = next_suffix.get(name, 1)
            while f"{name}#{k}" in used or f"{name}#{k}" in seen:
                k += 1
            next_suffix[name] = k + 1
            name = f"{name}#{k}"
        used.add(name)
        names.append((name, has_name))
    return names


def _outputs(name: str, refs: list[_Ref], in_function: bool) -> tuple[str, ...]:
    if in_function:
        args: dict[str, int] = {}
        values: dict[str, tuple[int, int]] = {}
        for ref in refs:
            order = args.setdefault(ref.arg, len(args))
            values.setdefault(ref.value, (order, ref.port))
        ordered = sorted(values, key=lambda v: values[v])
        return tuple(ordered) or (name,)
    ports = {ref.port for ref in refs}
    top = max(ports, default=0)
    if top < _DENSE_PORTS:
        return (name, *(f"{name}:{k}" for k in range(1, top + 1)))
    return (name, *(f"{name}:{k}" for k in sorted(ports - {0})))


def _value(
    name: str, dtype_name: str | None, shape: tuple[Dim, ...] | None, doc: str = ""
) -> ValueInfo:
    return ValueInfo(name, dtype_name or "", dtype_name, shape, doc)


def _body(
    reader: AttrReader,
    node_defs: Any,
    in_function: bool,
    args: set[str],
    extra: Iterable[_Ref] = (),
) -> _Body:
    names = _unique_names(node_defs)
    parse: Callable[[str], _Ref] = (lambda t: _function_ref(t, args)) if in_function else _graph_ref
    inputs: list[tuple[list[str], list[str]]] = []
    refs_to: dict[str, list[_Ref]] = {}
    read: set[str] = set()
    for n in node_defs:
        data: list[str] = []
        control: list[str] = []
        for text in n.input:
            if text.startswith("^"):
                control.append(text[1:])
                read.add(text[1:])
                continue
            ref = parse(text)
            data.append(ref.value)
            if ref.producer is not None:
                refs_to.setdefault(ref.producer, []).append(ref)
                read.add(ref.producer)
        inputs.append((data, control))
    for ref in extra:  # function results read node outputs too
        if ref.producer is not None:
            refs_to.setdefault(ref.producer, []).append(ref)
            read.add(ref.producer)

    nodes: list[Node] = []
    initializers: dict[str, Tensor] = {}
    value_info: dict[str, ValueInfo] = {}
    for n, (name, has_name), (data, control) in zip(node_defs, names, inputs):
        owner = name if n.op == "Const" else ""
        attrs = reader.attributes(n.attr, name, owner)
        # A duplicated name's references go to its first node.
        outputs = _outputs(name, refs_to.pop(n.name, []) if has_name else [], in_function)
        node = Node(
            name, n.op, "", tuple(data), outputs, attrs, control_inputs=tuple(control),
            device=n.device, has_file_name=has_name,
        )  # fmt: skip
        nodes.append(node)
        value = attrs.get("value")
        if n.op == "Const" and value is not None and value.kind == "TENSOR":
            initializers[name] = value.value
        if "_output_shapes" in n.attr:
            shapes = n.attr["_output_shapes"].list.shape
            guess = output_dtype(node) if len(shapes) == 1 else None
            if in_function:  # outputs named by argument ("MatMul:product:0"): one is sure
                if len(shapes) == 1 and len(outputs) == 1:
                    value_info[outputs[0]] = _value(outputs[0], guess, shape_dims(shapes[0]))
                continue
            for k, shape in enumerate(shapes):
                value_name = name if k == 0 else f"{name}:{k}"
                value_info[value_name] = _value(value_name, guess, shape_dims(shape))
    return _Body(nodes, read, initializers, value_info)


def _placeholder_input(node: Node, raw: Any) -> ValueInfo:
    dt_attr = node.attributes.get("dtype")
    dtype_name = str(dt_attr.value) if dt_attr is not None and dt_attr.kind == "TYPE" else None
    shape = None
    if "shape" in raw.attr and raw.attr["shape"].WhichOneof("value") == "shape":
        shape = shape_dims(raw.attr["shape"].shape)
    return _value(node.outputs[0], dtype_name, shape)


def _main_graph(reader: AttrReader, proto: Any, name: str) -> Graph:
    body = _body(reader, proto.node, in_function=False, args=set())
    inputs = tuple(
        _placeholder_input(node, raw)
        for node, raw in zip(body.nodes, proto.node)
        if node.op_type in INPUT_OPS
    )
    outputs: list[ValueInfo] = []
    for node in body.nodes:
        if node.name in body.read or node.op_type in NOT_OUTPUTS:
            continue
        known = body.value_info.get(node.outputs[0])
        shape = known.shape if known is not None else None
        outputs.append(_value(node.outputs[0], output_dtype(node), shape))
    return Graph(
        name=name,
        nodes=body.nodes,
        inputs=inputs,
        outputs=tuple(outputs),
        initializers=body.initializers,
        value_info=body.value_info,
        path="/",
    )


def _arg_value(
    arg: Any, name: str, doc: str = "", shape: tuple[Dim, ...] | None = None
) -> ValueInfo:
    if arg.type:
        return _value(name, tf_type_name(int(arg.type)), shape, doc)
    param = arg.type_attr or arg.type_list_attr
    kind = f"tensor({param})" if param else ""
    if arg.number_attr and kind:
        kind = f"{arg.number_attr} × {kind}"
    return ValueInfo(name, kind, None, None, doc)


def _arg_shape(fdef: Any, index: int) -> tuple[Dim, ...] | None:
    """An argument's shape, as TensorFlow records it: ``_output_shapes`` in the
    argument's ``arg_attr``, else the function's ``_input_shapes`` list."""
    arg_attr = fdef.arg_attr.get(index) if index in fdef.arg_attr else None
    if arg_attr is not None and "_output_shapes" in arg_attr.attr:
        shapes = arg_attr.attr["_output_shapes"].list.shape
        if len(shapes) == 1:
            return shape_dims(shapes[0])
    if "_input_shapes" in fdef.attr:
        shapes = fdef.attr["_input_shapes"].list.shape
        if index < len(shapes):
            return shape_dims(shapes[index])
    return None


def function_path(name: str) -> str:
    """:attr:`Graph.path` of a library function's body (as ONNX functions: domain is empty)."""
    return f"function::{name}"


def _function(reader: AttrReader, fdef: Any) -> Function:
    sig = fdef.signature
    path = function_path(sig.name)
    args = {a.name for a in sig.input_arg}
    ret = dict(fdef.ret)
    results = [_function_ref(ret.get(a.name, a.name), args) for a in sig.output_arg]
    body = _body(reader, fdef.node_def, in_function=True, args=args, extra=results)
    outputs = tuple(
        _arg_value(a, ref.value, f"function result {a.name!r}")
        for a, ref in zip(sig.output_arg, results)
    )
    graph = Graph(
        name=sig.name,
        nodes=body.nodes,
        inputs=tuple(
            _arg_value(a, a.name, shape=_arg_shape(fdef, i)) for i, a in enumerate(sig.input_arg)
        ),
        outputs=outputs,
        initializers=body.initializers,
        value_info=body.value_info,
        doc_string=sig.summary or sig.description,
        path=path,
    )
    defaults = {
        a.name: reader.attribute(a.name, a.default_value, sig.name)
        for a in sig.attr
        if a.HasField("default_value")
    }
    # The FunctionDef's own attributes (_noinline, _input_shapes...) are fixed values.
    defaults.update(reader.attributes(fdef.attr, sig.name))
    return Function(
        name=sig.name,
        domain="",
        graph=graph,
        attribute_names=tuple(a.name for a in sig.attr),
        attribute_defaults=defaults,
        doc_string=sig.description or sig.summary,
    )


def model_from_graphdef(
    proto: Any,
    *,
    name: str = "graphdef",
    path: Path | None = None,
    ctx: TensorContext | None = None,
    data_files: DataFiles | None = None,
) -> Model:
    """Build the neutral model from a parsed GraphDef message (ours or TensorFlow's)."""
    reader = AttrReader(ctx or TensorContext("memory"))
    try:
        graph = _main_graph(reader, proto, name)
        functions = tuple(_function(reader, f) for f in proto.library.function)
    except RecursionError:
        raise ModelFormatError(f"{name!r}: attributes are nested too deeply") from None
    metadata = {}
    if proto.HasField("versions"):
        metadata["versions.producer"] = str(proto.versions.producer)
        metadata["versions.min_consumer"] = str(proto.versions.min_consumer)
    for grad in proto.library.gradient:
        metadata[f"gradient.{grad.function_name}"] = grad.gradient_func
    return Model(
        graph,
        format="graphdef",
        path=path,
        metadata_props=metadata,
        functions=functions,
        data_files=data_files,
        support=GraphDefSupport(),
    )


__all__ = ["function_path", "model_from_graphdef"]
