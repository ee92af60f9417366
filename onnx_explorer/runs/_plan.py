"""How a run captures every intermediate tensor: the graph cut into topological segments.

Each segment is a small model made in memory: its nodes, the initializers they use
(external data still referenced, read in place from the model's directory), as
inputs the values earlier segments produced (typed from the actual arrays, so no
shape inference is needed), and as outputs every value its nodes produce. Running
segment after segment, a value is dropped as soon as no later segment needs it, so
memory is bounded by the live values plus one segment's outputs, not by the sum of
all activations; and when a node fails, the segments before it have been summarised.
Values made inside If/Loop/Scan bodies are not graph values: they are listed in
:attr:`Plan.not_captured`.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

from ..errors import ModelFormatError
from ..external_data import resolve_location
from ..model import Model
from ..readers import load
from ._ort import RunError
from ._precheck import stoppable

#: Nodes in the first segment; the next ones are sized by the bytes the previous made.
SEGMENT_NODES = 64
#: Bytes a segment may return (all its outputs at once): the run's memory beyond the
#: live values. Each segment gets as many nodes as the previous one's bytes per node
#: allow, so a small model runs in a few sessions and onnxruntime keeps most fusions.
SEGMENT_BYTES = 24 << 20


@dataclass
class Plan:
    model: onnx.ModelProto
    base_dir: Path | None
    order: list[int]  # node indices in execution order
    needs: list[tuple[str, ...]]  # per node: every value it reads (bodies' outer names too)
    outputs: list[tuple[str, ...]]  # per node: the values it makes (no empty names)
    initializers: dict[str, onnx.TensorProto]
    not_captured: list[str] = field(default_factory=list)
    bodied: frozenset[int] = frozenset()  # nodes with a graph attribute (If, Loop, Scan)
    _labels: dict[str, int] | None = field(default=None, repr=False)

    @property
    def graph(self) -> onnx.GraphProto:
        return self.model.graph

    def node_label(self, index: int) -> str:
        node = self.graph.node[index]
        return node.name or f"{node.op_type}#{index}"

    def node_index(self, label: str) -> int | None:
        """The index of the node :meth:`node_label` calls ``label``."""
        if self._labels is None:
            self._labels = {self.node_label(i): i for i in range(len(self.graph.node))}
        return self._labels.get(label)


def load_proto(source: Any) -> tuple[onnx.ModelProto, Path | None]:
    """The ModelProto (external data left on disk) and the directory external data is in.

    ``source`` is a Model, or anything :func:`onnx_explorer.load` opens; the model's
    format support gives the whole proto (:meth:`FormatSupport.runtime_model`), so paths
    and bytes are parsed by the ONNX reader, not here. A ModelProto is run as it is.
    """
    if isinstance(source, onnx.ModelProto):
        return source, None
    if isinstance(source, Model):
        return source.support.runtime_model(source)
    if not isinstance(source, str | os.PathLike | bytes | bytearray | memoryview):
        raise TypeError(
            f"run() takes a path, bytes or an onnx.ModelProto, not {type(source).__name__}"
        )
    with load(source) as model:
        return model.support.runtime_model(model)


def check_external(model: onnx.ModelProto, base_dir: Path | None) -> None:
    """Every external location must resolve inside the model's directory (our own rules,
    before onnxruntime opens anything)."""
    checked: set[str] = set()  # thousands of tensors share one file: resolve it once
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        entries = {e.key: e.value for e in tensor.external_data}
        if base_dir is None:
            raise ModelFormatError(
                f"tensor {tensor.name!r} has external data, but the model was given in memory: "
                "pass its path instead"
            )
        location = entries.get("location", "")
        if location not in checked:
            resolve_location(base_dir, location, tensor.name)
            checked.add(location)


def inference_mode(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """The model with ``Dropout(training_mode=...)`` run in inference mode (a copy when
    something changes; the caller's proto is never modified) and a note saying so."""
    training = [
        i for i, node in enumerate(model.graph.node)
        if node.op_type == "Dropout" and node.domain in ("", "ai.onnx")
        and len(node.input) > 2 and node.input[2]
    ]  # fmt: skip
    if not training:
        return model, []
    work = onnx.ModelProto()
    work.CopyFrom(model)
    for i in training:
        del work.graph.node[i].input[2:]  # no training_mode: inference, outputs = inputs
    note = (
        f"{len(training):,} Dropout node(s) with a training_mode input run in inference "
        "mode (no random drop), as onnxruntime does for a deployed model"
    )
    return work, [note]


def plan(model: onnx.ModelProto, base_dir: Path | None) -> Plan:
    graph = model.graph
    check_text(graph)
    initializers = {t.name: t for t in graph.initializer}
    needs = [tuple(n for n in node.input if n) + _outer_names(node) for node in graph.node]
    not_captured: list[str] = []
    bodied = set()
    for index, node in enumerate(graph.node):
        for attr in node.attribute:
            for body in _bodies(attr):
                not_captured.extend(_body_values(body))
                bodied.add(index)
    outputs = [tuple(n for n in node.output if n) for node in graph.node]
    order = _topological(graph, needs, outputs)
    return Plan(
        model, base_dir, order, needs, outputs, initializers, not_captured, frozenset(bodied)
    )


def check_text(graph: onnx.GraphProto) -> None:
    """ModelFormatError for a name that is not UTF-8 text (protobuf hands such a string
    field over as bytes): a value, node, op or domain name of the main graph."""
    for kind, values in (("input", graph.input), ("output", graph.output),
                         ("initializer", graph.initializer)):  # fmt: skip
        for value in values:
            if not isinstance(value.name, str):
                raise ModelFormatError(f"a graph {kind}'s name is not UTF-8 text: {value.name!r}")
    for index, node in enumerate(graph.node):
        for part, found in (("name", [node.name]), ("op_type", [node.op_type]),
                             ("domain", [node.domain]), ("input", node.input),
                             ("output", node.output)):  # fmt: skip
            for text in found:
                if not isinstance(text, str):
                    raise ModelFormatError(
                        f"node #{index} ({node.op_type!r}): its {part} {text!r} is not UTF-8 text"
                    )


def _bodies(attr: onnx.AttributeProto) -> list[onnx.GraphProto]:
    if attr.type == onnx.AttributeProto.GRAPH:
        return [attr.g]
    if attr.type == onnx.AttributeProto.GRAPHS:
        return list(attr.graphs)
    return []


def _body_values(body: onnx.GraphProto) -> Iterable[str]:
    for node in body.node:
        yield from (n for n in node.output if n)
        for attr in node.attribute:
            for inner in _bodies(attr):
                yield from _body_values(inner)


def _outer_names(node: onnx.NodeProto) -> tuple[str, ...]:
    """Names a node's bodies read from the enclosing graph (implicit inputs)."""
    found: list[str] = []
    for attr in node.attribute:
        for body in _bodies(attr):
            defined = {v.name for v in body.input} | {t.name for t in body.initializer}
            for inner in body.node:
                defined.update(inner.output)
            for inner in body.node:
                found.extend(n for n in inner.input if n and n not in defined)
                found.extend(n for n in _outer_names(inner) if n not in defined)
    return tuple(dict.fromkeys(found))


def _topological(
    graph: onnx.GraphProto, needs: list[tuple[str, ...]], outputs: list[tuple[str, ...]]
) -> list[int]:
    """Kahn's order, stable (file order among ready nodes)."""
    producer: dict[str, int] = {}
    for i, names in enumerate(outputs):
        for name in names:
            producer[name] = i
    waiting = [0] * len(graph.node)
    consumers: dict[int, list[int]] = {}
    for i, names in enumerate(needs):
        for p in {producer[n] for n in names if n in producer and producer[n] != i}:
            waiting[i] += 1
            consumers.setdefault(p, []).append(i)
    import heapq

    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for c in consumers.get(i, ()):
            waiting[c] -= 1
            if waiting[c] == 0:
                heapq.heappush(ready, c)
    if len(order) != len(graph.node):
        stuck = next(i for i, w in enumerate(waiting) if w > 0)
        node = graph.node[stuck]
        raise ModelFormatError(
            f"the graph has a cycle or reads a value nothing produces, at node "
            f"{node.name or node.op_type!r}"
        )
    return order


def segment_model(plan: Plan, nodes: list[int], live: dict[str, Any], outputs: list[str]) -> bytes:
    """The serialized model of one segment: those nodes, reading ``live`` values.

    Built by whole-list calls (360 nodes a segment, 55 segments at 20,000 nodes): the
    values read in first-use order by one ``dict.fromkeys``, nodes, inputs, initializers
    and outputs each added by one ``extend``; only nodes with a body are looked into."""
    src = plan.model
    name = src.graph.name  # bytes when not UTF-8: the segment needs none of it
    graph = onnx.GraphProto(name=name if isinstance(name, str) and name else "segment")
    src_nodes, bodied = src.graph.node, plan.bodied
    # Loops that see terminate
    graph.node.extend(stoppable(src_nodes[i]) if i in bodied else src_nodes[i] for i in nodes)
    needs = plan.needs
    read = dict.fromkeys(itertools.chain.from_iterable([needs[i] for i in nodes]))
    initializers = plan.initializers
    graph.input.extend([_value_info(name, live[name]) for name in read if name in live])
    graph.initializer.extend(
        [initializers[name] for name in read if name not in live and name in initializers]
    )
    graph.output.extend([onnx.ValueInfoProto(name=name) for name in outputs])
    model = helper.make_model(
        graph, opset_imports=list(src.opset_import), ir_version=src.ir_version
    )
    model.functions.extend(src.functions)
    data: bytes = model.SerializeToString()
    return data


def _value_info(name: str, value: Any) -> onnx.ValueInfoProto:
    """A segment input typed from the value an earlier segment made (RunError for a value
    onnxruntime cannot be given back)."""
    return helper.make_value_info(name, _type_of(name, value))


def _type_of(name: str, value: Any) -> onnx.TypeProto:
    if isinstance(value, list):  # a sequence: of tensors, or of maps (ZipMap's)
        first = value[0] if value else np.zeros(0, np.float32)
        inner = _type_of(name, first)
        if inner.HasField("tensor_type"):  # elements may differ in shape: none declared
            inner.tensor_type.ClearField("shape")
        return helper.make_sequence_type_proto(inner)
    if isinstance(value, dict):  # a map (ZipMap's entries: int64 or string → float)
        keys = {type(k) for k in value}
        key = onnx.TensorProto.STRING if keys and keys <= {str} else onnx.TensorProto.INT64
        return helper.make_map_type_proto(key, helper.make_tensor_type_proto(
            onnx.TensorProto.FLOAT, None))  # fmt: skip
    if not isinstance(value, np.ndarray):
        raise RunError(
            f"value {name!r} is a {type(value).__name__}, which onnxruntime cannot be given "
            "as an input: it cannot be passed to a later part of the run"
        )
    try:
        elem = helper.np_dtype_to_tensor_dtype(value.dtype)
    except (KeyError, TypeError, ValueError):
        raise RunError(
            f"value {name!r} has dtype {value.dtype}, which ONNX has no type for"
        ) from None
    # Rank only, no sizes: a body typed with the model's own (symbolic) dims would meet
    # exact sizes it does not declare, and onnxruntime's inference inside If bodies
    # then fails on models that run whole (spox-built VADs).
    return helper.make_tensor_type_proto(elem, [None] * value.ndim)
