"""Value types inside model-local functions, per call: the body inferred with the call's
input types.

ONNX shape inference types a call's outputs but writes nothing inside the function (one
body serves every call, at every size). So each call of the main graph whose inputs are
typed gets its own small model — the function's nodes, its inputs typed as at the call,
its attribute parameters replaced by the call's values — inferred in the same stoppable
child process as the model (:mod:`._inference_child`). Calls with the same function and
input types share one inference. What is found is filed under ``(id(calling graph),
call node name)`` in :attr:`InferredTypes.calls`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ...model import Graph, ValueInfo
from ._values import _s

#: Distinct (function, input types) inferred per model at most.
MAX_CALL_SIGNATURES = 64

CallTypes = dict[tuple[int, str], dict[str, ValueInfo]]


def call_types(
    inferred: Any,
    original: Any,
    graph: Graph,
    to_value_info: Callable[[Any], ValueInfo],
    infer: Callable[[Any, float], bytes | None],
    time_limit: float,
) -> CallTypes:
    """Types inside the functions the main graph calls (see the module docstring).

    ``inferred``: the model inferred with bound inputs; ``original``: the model as read
    (its functions); ``infer(ModelProto, seconds)`` returns the inferred model's bytes
    or None. Never raises; a call whose body cannot be inferred is left out.
    """
    import onnx

    functions = {(f.domain, f.name): f for f in original.functions}
    if not functions:
        return {}
    typed: dict[str, Any] = {}
    for value in (*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output):
        if value.type.HasField("tensor_type") and value.type.tensor_type.HasField("shape"):
            typed.setdefault(value.name, value.type)
    for tensor in inferred.graph.initializer:
        if tensor.name not in typed:
            typed[tensor.name] = onnx.helper.make_tensor_type_proto(
                tensor.data_type, list(tensor.dims)
            )
    found: CallTypes = {}
    done: dict[bytes, dict[str, ValueInfo] | None] = {}
    deadline = time.monotonic() + time_limit
    names = (
        [node.name for node in graph.nodes] if len(graph.nodes) == len(original.graph.node) else []
    )
    for index, node in enumerate(original.graph.node):
        function = functions.get((node.domain, node.op_type))
        if function is None or not names:
            continue
        types = [typed.get(name) if name else None for name in node.input]
        if len(types) != len(function.input) or any(t is None for t in types):
            continue  # untyped inputs: nothing to infer from
        try:
            body = _call_model(original, function, node, types)
        except Exception:  # a body that cannot be built only costs its call's types
            continue
        key = body.SerializeToString()
        if key not in done:
            remaining = deadline - time.monotonic()
            if len(done) >= MAX_CALL_SIGNATURES or remaining <= 0:
                continue
            result = infer(body, remaining)
            done[key] = _types_of(result, to_value_info) if result is not None else None
        if done[key] is not None:
            found[(id(graph), names[index])] = dict(done[key] or {})
    return found


def _call_model(original: Any, function: Any, call: Any, types: list[Any]) -> Any:
    """The function's body as a model of its own, inputs typed as at ``call``."""
    import onnx

    values = {_s(a.name): a for a in call.attribute}
    defaults = {_s(a.name): a for a in function.attribute_proto}
    graph = onnx.GraphProto(name=function.name)
    for source in function.node:
        node = graph.node.add()
        node.CopyFrom(source)
        _bind_attributes(node, values, defaults)
    for name, tp in zip(function.input, types):
        graph.input.append(onnx.ValueInfoProto(name=name, type=tp))
    for name in function.output:
        graph.output.append(onnx.ValueInfoProto(name=name))
    model = onnx.ModelProto(ir_version=original.ir_version, graph=graph)
    opsets = {o.domain: o.version for o in original.opset_import}
    opsets.update({o.domain: o.version for o in function.opset_import})
    for domain, version in opsets.items():
        model.opset_import.add(domain=domain, version=version)
    model.functions.extend(original.functions)  # nested calls
    return model


def _bind_attributes(node: Any, values: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """Replace a body node's attribute references (``ref_attr_name``) by the call's value,
    else the function's default; a reference to neither is dropped (the op's own default)."""
    kept = []
    for attribute in node.attribute:
        ref = _s(attribute.ref_attr_name)
        if not ref:
            kept.append(attribute)
            continue
        given = values.get(ref) or defaults.get(ref)
        if given is not None:
            bound = type(attribute)()
            bound.CopyFrom(given)
            bound.name = attribute.name
            kept.append(bound)
    del node.attribute[:]
    node.attribute.extend(kept)
    for attribute in node.attribute:  # nested bodies (an If inside the function)
        for body in ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs):
            for inner in body.node:
                _bind_attributes(inner, values, defaults)


def _types_of(
    data: bytes, to_value_info: Callable[[Any], ValueInfo]
) -> dict[str, ValueInfo] | None:
    import onnx

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:  # protobuf's DecodeError: no types for this call
        return None
    return graph_types(model.graph, to_value_info)


def graph_types(graph: Any, to_value_info: Callable[[Any], ValueInfo]) -> dict[str, ValueInfo]:
    """Value name → type of one inferred GraphProto: its value_info, then its outputs and
    inputs (a name in several keeps the first)."""
    found = {info.name: info for info in map(to_value_info, graph.value_info)}
    for info in map(to_value_info, (*graph.output, *graph.input)):
        found.setdefault(info.name, info)
    return found


__all__ = ["MAX_CALL_SIGNATURES", "call_types", "graph_types"]
