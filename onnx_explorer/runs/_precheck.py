"""What a run checks before onnxruntime sees the model: that its sessions can be built in
bounded time, that its values fit the memory limit, and that its Loops can be stopped.

``InferenceSession()`` runs ONNX shape inference on the model, in C++ that cannot be
interrupted, and a hostile node makes it loop for ever (``Einsum "......"``, 84
bytes). So before any session is built, ONNX shape inference runs on a structure-only
copy of the model, its inputs bound to the feeds' shapes, in the explorer's inference
worker process (:mod:`onnx_explorer.readers.onnx._inference_child`), which is killed
at its time limit: a model on which it does not end (or crashes) is refused with a
:class:`RunTimeoutError` / :class:`RunError` instead of hanging the kernel.

The same inference gives, with data propagation, the sizes of most values for the
feeds given: a node whose outputs together exceed the memory limit is refused before
the run (:class:`MemoryLimitError`, naming the node, the value and its size). Sizes
known only at run time meet the shared arena's cap (:mod:`._ort`).

onnxruntime checks ``RunOptions.terminate`` before each kernel it runs, also inside a
Loop body; a body that runs no kernel (no node, or only constants it folds away)
never looks, and a Loop of 2^62 trips over it cannot be stopped. :func:`stoppable`
gives every Loop body a condition output that depends on the iteration number
(``cond_out and i == i``, the same value): two tiny kernels per trip, always run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from onnx import helper

from ..readers.onnx import _inference_child as inference_child
from ..readers.onnx._shape_inference import bind_input_shapes, structure_only
from ..views._text import human_bytes, squeezed
from ._limits import Limits, MemoryLimitError, RunTimeoutError
from ._ort import RunError

_SMALL = 4096  # bytes of an initializer copied whole into the structure-only model
_TICK = "onnx_explorer_tick"  # names of the nodes and values stoppable() adds


def precheck(proto: onnx.ModelProto, feeds: Mapping[str, Any], limits: Limits) -> None:
    """Refuse a model whose session would never be built, or whose values exceed the
    memory limit for these feeds (see the module docstring). Inference that merely
    fails (an op it does not know) is no reason to refuse: onnxruntime says its own."""
    shapes = {name: tuple(int(d) for d in value.shape)
              for name, value in feeds.items() if isinstance(value, np.ndarray)}  # fmt: skip
    work = _structure_copy(proto)
    bind_input_shapes(work.graph, shapes)
    data = work.SerializeToString()
    del work
    limits.check("ONNX shape inference ran (before any onnxruntime session)")
    inference_limit = inference_child.INFERENCE_TIME_LIMIT  # read now: tests change it
    remaining = limits.remaining()
    seconds = inference_limit if remaining is None else min(inference_limit, remaining)
    outcome = inference_child.infer_in_child(data, seconds, data_prop=True)
    if outcome.kind == "timeout":
        if remaining is not None and remaining < inference_limit:
            raise RunTimeoutError(
                f"{limits.timeout_text()} passed during ONNX shape inference, which "
                "onnxruntime runs to build its session: the run was not started"
            )
        raise RunTimeoutError(
            f"ONNX shape inference did not finish in {inference_limit:g} s on this model and "
            "was stopped: onnxruntime runs it to build a session, where it cannot be stopped "
            "(a hostile node, e.g. an Einsum with several '...'), so the run was not started"
        )
    if outcome.kind == "died":
        raise RunError(
            f"{outcome.error}: onnxruntime runs the same inference in this process to build "
            "its session, so the run was not started"
        )
    if outcome.inferred is None or limits.memory_limit is None:
        return
    inferred = onnx.ModelProto()
    try:
        inferred.ParseFromString(outcome.inferred)
    except Exception:  # a garbled reply only costs the check
        return
    _check_sizes(inferred.graph, limits.memory_limit, limits)


def _check_sizes(graph: onnx.GraphProto, limit: int, limits: Limits) -> None:
    """MemoryLimitError for the first node whose known output sizes exceed ``limit``."""
    sizes: dict[str, tuple[int, str]] = {}
    for value in (*graph.value_info, *graph.output):
        found = _size(value)
        if found is not None:
            sizes[value.name] = found
    for index, node in enumerate(graph.node):
        total, largest = 0, ("", 0, "")
        for name in node.output:
            if name in sizes:
                nbytes, shown = sizes[name]
                total += nbytes
                if nbytes >= largest[1]:
                    largest = (name, nbytes, shown)
        if total > limit:
            label = node.name or f"{node.op_type}#{index}"
            name, nbytes, shown = largest
            raise MemoryLimitError(
                f"node {label!r} (op {node.op_type}) would make {name!r} {shown} = "
                f"{human_bytes(nbytes)}"
                + (f" ({human_bytes(total)} with its other outputs)" if total > nbytes else "")
                + f", beyond {limits.memory_text()}: the run was not started "
                "(pass a larger memory_limit= or smaller inputs)"
            )


def _size(value: onnx.ValueInfoProto) -> tuple[int, str] | None:
    """(bytes, ``float32[536870912]``) of a tensor value whose dtype and dims are known."""
    if not value.type.HasField("tensor_type"):
        return None
    tensor = value.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    dims = []
    for dim in tensor.shape.dim:
        if not dim.HasField("dim_value") or dim.dim_value < 0:
            return None
        dims.append(int(dim.dim_value))
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    except (KeyError, TypeError, ValueError):
        return None
    if dtype.kind == "O":  # strings: their bytes are not known from the shape
        return None
    shown = f"{dtype.name}[{', '.join(str(d) for d in dims)}]"
    return math.prod(dims) * dtype.itemsize, squeezed(shown)[:200]


def _structure_copy(proto: onnx.ModelProto) -> onnx.ModelProto:
    """The model without its weights' bytes (small ones kept: shape tensors for data
    propagation), never a copy of a large weight; the caller's proto is not modified."""
    work = onnx.ModelProto()
    _copy_fields(proto, work, skip="graph")
    graph, source = work.graph, proto.graph
    _copy_fields(source, graph, skip="initializer")
    for tensor in source.initializer:
        copy = graph.initializer.add()
        if tensor.data_location == onnx.TensorProto.EXTERNAL or tensor.ByteSize() <= _SMALL:
            copy.CopyFrom(tensor)
        else:  # dtype and dims only, marked external as structure_only() marks them
            copy.name, copy.data_type = tensor.name, tensor.data_type
            copy.dims.extend(tensor.dims)
            copy.data_location = onnx.TensorProto.EXTERNAL
            entry = copy.external_data.add()
            entry.key, entry.value = "location", "onnx-explorer-structure-only"
    structure_only(work)
    return work


def _copy_fields(source: Any, target: Any, skip: str) -> None:
    """Every set field of a message but ``skip`` (repeated, message or scalar; a string
    that is not UTF-8, which protobuf hands over as bytes, is left out: a name or a doc
    string, which inference does not read)."""
    for field, value in source.ListFields():
        if field.name == skip or isinstance(value, bytes):
            continue
        into = getattr(target, field.name)
        if hasattr(into, "extend"):
            into.extend(value)
        elif hasattr(into, "CopyFrom"):
            into.CopyFrom(value)
        else:
            setattr(target, field.name, value)


# -- Loops onnxruntime can stop ----------------------------------------------------------
def stoppable(node: onnx.NodeProto) -> onnx.NodeProto:
    """``node``, or a copy whose Loop bodies (its own and nested ones) check onnxruntime's
    terminate flag on every trip (see the module docstring)."""
    if not _has_loop(node):
        return node
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    _tick_loops(copy)
    return copy


def _bodies(node: onnx.NodeProto) -> list[tuple[str, onnx.GraphProto]]:
    found: list[tuple[str, onnx.GraphProto]] = []
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            found.append((attr.name, attr.g))
        elif attr.type == onnx.AttributeProto.GRAPHS:
            found.extend((attr.name, g) for g in attr.graphs)
    return found


def _is_loop(node: onnx.NodeProto) -> bool:
    return node.op_type == "Loop" and node.domain in ("", "ai.onnx")


def _has_loop(node: onnx.NodeProto) -> bool:
    if _is_loop(node):
        return True
    return any(_has_loop(inner) for _, body in _bodies(node) for inner in body.node)


def _tick_loops(node: onnx.NodeProto) -> None:
    for name, body in _bodies(node):
        for inner in body.node:
            if _has_loop(inner):
                _tick_loops(inner)
        if _is_loop(node) and name == "body":
            _tick(body)


def _tick(body: onnx.GraphProto) -> None:
    """``cond_out`` → ``cond_out and (i == i)``: the same value, from the trip number."""
    if not body.input or not body.output or not body.input[0].name or not body.output[0].name:
        return  # not a valid body: onnxruntime refuses it anyway
    taken = {v.name for v in (*body.input, *body.output)}
    taken.update(name for n in body.node for name in n.output)
    same, ticked = _fresh(f"{_TICK}_same", taken), _fresh(f"{_TICK}_cond", taken)
    trip, cond = body.input[0].name, body.output[0].name
    if not isinstance(trip, str) or not isinstance(cond, str):  # bytes: not UTF-8
        raise RunError(f"a Loop body's names are not UTF-8 text: {trip!r}, {cond!r}")
    body.node.extend([
        helper.make_node("Equal", [trip, trip], [same], name=same),
        helper.make_node("And", [cond, same], [ticked], name=ticked),
    ])  # fmt: skip
    body.output[0].name = ticked


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


__all__ = ["precheck", "stoppable"]
