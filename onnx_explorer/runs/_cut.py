"""Cutting a set of nodes out of an ONNX graph: what it reads, what it gives, the new model.

The one place the boundary of a cut is worked out, for :func:`~._extract.extract` and
:func:`~._reduce.reduce` alike. A cut is a set of the main graph's nodes; its inputs are
the values its nodes read (implicit inputs of If/Loop/Scan bodies included) that no node
of the cut makes and no initializer holds; its initializers are the ones its nodes read,
as the source has them (an external tensor stays a reference to the source's data file,
its bytes are not read); its functions are the model-local functions its nodes call, at
any depth. Nothing here reads a weight or writes a file, and the source proto is never
modified: the new model shares no message with it (protobuf copies on append).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import onnx
from onnx import helper

from ._plan import Plan, _bodies

#: The ONNX IR version from which initializers need not be graph inputs.
_IR_INITIALIZERS_APART = 4


class CutError(KeyError):
    """A value or node named for a cut does not exist in the graph (a ``KeyError``, as a
    missing name is everywhere else in the package)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Cut:
    """The boundary of a set of nodes: nodes in execution order (graph indices), the
    values fed in, the values given out and the initializers read."""

    nodes: tuple[int, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    initializers: tuple[str, ...]
    sparse_initializers: tuple[str, ...] = ()


class Wiring:
    """Who makes and who reads each value of a plan's graph (built once per cut session)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        graph = plan.graph
        self.producer: dict[str, int] = {}
        for i, node in enumerate(graph.node):
            for name in node.output:
                if name:
                    self.producer.setdefault(name, i)
        self.readers: dict[str, list[int]] = {}
        for i, names in enumerate(plan.needs):
            for name in dict.fromkeys(names):
                self.readers.setdefault(name, []).append(i)
        self.graph_inputs = [v.name for v in graph.input if v.name not in plan.initializers]
        self.graph_outputs = {v.name for v in graph.output}
        self.sparse = {t.values.name: t for t in graph.sparse_initializer}
        self.position = {node: pos for pos, node in enumerate(plan.order)}

    def is_stored(self, name: str) -> bool:
        """True for an initializer (dense or sparse)."""
        return name in self.plan.initializers or name in self.sparse

    def exists(self, name: str) -> bool:
        return (
            name in self.producer
            or self.is_stored(name)
            or any(v.name == name for v in self.plan.graph.input)
        )

    def is_constant(self, index: int) -> bool:
        """A node that makes a value from its attributes alone (ONNX ``Constant``)."""
        node = self.plan.graph.node[index]
        return node.op_type == "Constant" and node.domain in ("", "ai.onnx") and not node.input

    def closure(self, outputs: Iterable[str], stop: Iterable[str]) -> set[int]:
        """The nodes ``outputs`` are computed from, walking back until a value in
        ``stop``, an initializer or a graph input."""
        stopped = set(stop)
        found: set[int] = set()
        pending = [name for name in outputs if name not in stopped]
        while pending:
            name = pending.pop()
            index = self.producer.get(name)
            if index is None or index in found:
                continue
            found.add(index)
            pending.extend(n for n in self.plan.needs[index] if n not in stopped)
        return found

    def with_constants(self, nodes: Iterable[int]) -> set[int]:
        """``nodes`` and the ``Constant`` nodes whose values they read (a weight held in a
        Constant stays in the cut, not fed from outside)."""
        kept = set(nodes)
        for index in list(kept):
            for name in self.plan.needs[index]:
                maker = self.producer.get(name)
                if maker is not None and maker not in kept and self.is_constant(maker):
                    kept.add(maker)
        return kept

    def cut(
        self,
        nodes: Iterable[int],
        *,
        inputs: Sequence[str] | None = None,
        outputs: Sequence[str] | None = None,
    ) -> Cut:
        """The boundary of ``nodes``. ``inputs``: values fed in (others the nodes read
        from outside are added after them); ``outputs``: the values given out, else
        every value made here that a node outside reads or the model gives out (else
        those no node of the cut reads)."""
        kept = set(nodes)
        order = sorted(kept, key=self.position.__getitem__)
        made = {name for i in order for name in self.plan.graph.node[i].output if name}
        fed: dict[str, None] = dict.fromkeys(inputs or ())
        stored: dict[str, None] = {}
        sparse: dict[str, None] = {}
        for i in order:
            for name in self.plan.needs[i]:
                if name in fed or name in made:
                    continue
                if name in self.plan.initializers:
                    stored[name] = None
                elif name in self.sparse:
                    sparse[name] = None
                else:
                    fed[name] = None
        if outputs is None:
            outputs = self._default_outputs(order, kept)
        return Cut(tuple(order), tuple(fed), tuple(outputs), tuple(stored), tuple(sparse))

    def _default_outputs(self, order: list[int], kept: set[int]) -> list[str]:
        made = [name for i in order for name in self.plan.graph.node[i].output if name]
        leaving = [
            name
            for name in made
            if name in self.graph_outputs or any(r not in kept for r in self.readers.get(name, ()))
        ]
        if leaving:
            return leaving
        unread = [n for n in made if not any(r in kept for r in self.readers.get(n, ()))]
        return unread or made


def called_functions(model: onnx.ModelProto, nodes: Iterable[onnx.NodeProto]) -> list[int]:
    """Indices (in ``model.functions``) of the local functions ``nodes`` call, at any
    depth: in If/Loop/Scan bodies and in the bodies of the functions called."""
    by_key = {(f.domain, f.name): i for i, f in enumerate(model.functions)}
    found: dict[int, None] = {}
    pending = list(nodes)
    while pending:
        node = pending.pop()
        index = by_key.get((node.domain, node.op_type))
        if index is not None and index not in found:
            found[index] = None
            pending.extend(model.functions[index].node)
        for attr in node.attribute:
            for body in _bodies(attr):
                pending.extend(body.node)
    return sorted(found)


def build_model(
    plan: Plan,
    cut: Cut,
    type_of: Callable[[str], onnx.ValueInfoProto],
    *,
    doc_string: str = "",
) -> onnx.ModelProto:
    """The model of ``cut``: its nodes, typed inputs and outputs (``type_of``), the
    initializers it reads, the source's opsets, IR version (at least 4: initializers
    apart from the inputs), metadata and the functions called."""
    source = plan.model
    sparse = {t.values.name: t for t in source.graph.sparse_initializer}
    graph = onnx.GraphProto(name=source.graph.name or "extracted")
    graph.node.extend(source.graph.node[i] for i in cut.nodes)
    graph.input.extend(type_of(name) for name in cut.inputs)
    graph.output.extend(type_of(name) for name in cut.outputs)
    graph.initializer.extend(plan.initializers[name] for name in cut.initializers)
    graph.sparse_initializer.extend(sparse[name] for name in cut.sparse_initializers)
    model = helper.make_model(graph, opset_imports=list(source.opset_import))
    model.ir_version = max(source.ir_version, _IR_INITIALIZERS_APART)
    model.producer_name = source.producer_name
    model.producer_version = source.producer_version
    model.domain = source.domain
    model.model_version = source.model_version
    model.doc_string = doc_string
    model.metadata_props.extend(source.metadata_props)
    model.functions.extend(source.functions[i] for i in called_functions(source, graph.node))
    return model


__all__ = ["Cut", "CutError", "Wiring", "build_model", "called_functions"]
