"""``extract``: cut a subgraph out of an ONNX model as a valid, runnable model of its own.

What is cut (one of): the nodes that compute ``outputs`` from ``inputs`` (walking back
from the outputs until an input, an initializer or a graph input: a graph input reached
that was not named is added, and said so in the notes), a list of ``nodes``, or the nodes
of a name ``scope`` (the explorer's scope tree, so the scope drawn is the scope cut). The
``Constant`` nodes a cut reads come with it.

Its inputs are typed with the model's own inferred types for the sizes its inputs are
bound to (:meth:`Model.bind`, ``dims=``/``input_shapes=`` here, else the model's hints
and the defaults of :mod:`onnx_explorer.bindings`), so a value inside the model gets the
concrete shape it has at those sizes; where inference says nothing, the file's own
declaration, then the types an onnxruntime run observes. A graph input of the model that
the cut reads keeps the file's declaration (its symbolic dims too), so a cut from the
model's inputs takes every size the model takes. The model's weights are not
read: an external tensor stays a reference to the source's data file (``copy_weights``
embeds the bytes instead). Only ONNX models can be cut (their format support is
``runnable``); the source is read, never written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import onnx
from onnx import helper

from ..bindings import model_binding
from ..dtypes import DTYPES
from ..errors import ModelFormatError
from ..model import Model, ValueInfo
from ..readers import load
from ..views._scopes import scope_tree
from ._cut import Cut, CutError, Wiring, build_model
from ._plan import check_external, plan
from ._submodel import Submodel, external_tensors

Names = str | Sequence[str]


def extract(
    model: Model | str | os.PathLike[str] | bytes | Any,
    inputs: Names | None = None,
    outputs: Names | None = None,
    *,
    nodes: Names | None = None,
    scope: str | None = None,
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    copy_weights: bool = False,
) -> Submodel:
    """Cut a subgraph out of an ONNX model (path, bytes, ``onnx.ModelProto`` or
    :class:`Model`): the nodes computing ``outputs`` from ``inputs``, or ``nodes`` (names),
    or the nodes of ``scope`` (``"/encoder/layer.3"``). Returns a :class:`Submodel`: a
    valid ``onnx.ModelProto`` (``.proto``) whose inputs are typed at the bound input sizes,
    with the initializers, opsets and local functions it needs, external weights still
    referenced (embedded with ``copy_weights``); ``.save(path)`` writes it to a new file,
    ``.run(feeds)`` runs it. See the module docstring."""
    chosen = sum(x is not None for x in ((inputs or outputs), nodes, scope))
    if chosen != 1:
        raise TypeError(
            "extract() takes one of: outputs= (with inputs=), nodes=, or scope= "
            "(e.g. extract(model, inputs=['a'], outputs=['c']))"
        )
    if (inputs is not None) and outputs is None:
        raise TypeError("extract() needs outputs= with inputs= (the values to compute)")
    opened, close = _opened(model)
    try:
        return _extract(
            opened, _names(inputs), _names(outputs), _names(nodes), scope,
            dims=dims, input_shapes=input_shapes, copy_weights=copy_weights,
        )  # fmt: skip
    finally:
        if close:
            opened.close()


def _opened(model: Any) -> tuple[Model, bool]:
    """The :class:`Model` (and whether it is ours to close)."""
    if isinstance(model, Model):
        return model, False
    return load(model), True


def _names(names: Names | None) -> list[str] | None:
    if names is None:
        return None
    if isinstance(names, str):
        return [n for n in (part.strip() for part in names.split(",")) if n]
    return [str(n) for n in names]


def _extract(
    model: Model,
    inputs: list[str] | None,
    outputs: list[str] | None,
    nodes: list[str] | None,
    scope: str | None,
    *,
    dims: Mapping[str, int] | None,
    input_shapes: Mapping[str, Sequence[int]] | None,
    copy_weights: bool,
) -> Submodel:
    if not model.support.runnable:
        raise ModelFormatError(f"only ONNX models can be extracted; this is a {model.format} model")
    proto, base_dir = model.support.runtime_model(model)
    the_plan = plan(proto, base_dir)
    wiring = Wiring(the_plan)
    names = [node.name for node in model.graph.nodes]
    if len(names) != len(proto.graph.node):  # the reader keeps every node, in file order
        raise ModelFormatError("the model's nodes do not match its file: reopen it")
    notes: list[str] = []
    if outputs is not None:
        cut = _between(wiring, inputs, outputs, notes)
    elif nodes is not None:
        cut = wiring.cut(wiring.with_constants(_node_indices(model, nodes)))
    else:
        assert scope is not None
        cut = wiring.cut(wiring.with_constants(_scope_indices(model, scope)))
    if not cut.nodes:
        raise ValueError("the cut holds no node: nothing computes the outputs from the inputs")
    types = TypeSource(model, proto, dims=dims, input_shapes=input_shapes)
    typed = types.of(cut, notes)
    shown = [names[i] for i in cut.nodes]
    doc = f"extracted by onnx_explorer from {_source_name(model)}: {len(shown):,} node(s)"
    built = build_model(the_plan, cut, typed.__getitem__, doc_string=doc)
    if copy_weights:
        _embed_weights(built, base_dir)
    return Submodel(
        built,
        None if copy_weights else base_dir,
        shown,
        list(cut.inputs),
        list(cut.outputs),
        source=model.path,
        notes=notes,
    )


def _source_name(model: Model) -> str:
    return repr(model.path.name) if model.path is not None else "a model in memory"


def _between(wiring: Wiring, inputs: list[str] | None, outputs: list[str], notes: list[str]) -> Cut:
    given = list(dict.fromkeys(inputs or ()))
    unknown = [n for n in (*given, *outputs) if not wiring.exists(n)]
    if unknown:
        raise CutError(f"no value named {unknown[0]!r} in the main graph")
    nodes = wiring.closure(outputs, given)
    cut = wiring.cut(nodes, inputs=given, outputs=list(dict.fromkeys(outputs)))
    added = [n for n in cut.inputs if n not in given]
    if inputs is not None and added:
        notes.append(f"inputs added: the outputs also read {_shown(added)}")
    needed = {n for i in cut.nodes for n in wiring.plan.needs[i]}
    unused = [n for n in given if n not in needed]
    if unused:
        notes.append(f"inputs the outputs do not depend on (kept): {_shown(unused)}")
    return cut


def _node_indices(model: Model, nodes: Iterable[str]) -> set[int]:
    graph = model.graph
    found: set[int] = set()
    for name in nodes:
        if not graph.has_node(name):
            raise CutError(f"no node named {name!r} in the main graph")
        found.add(graph.node(name).index)
    return found


def _scope_indices(model: Model, scope: str) -> set[int]:
    found = scope_tree(model.graph).find(scope)
    if found is None or (found.is_root and scope.strip("/")):
        raise CutError(f"no scope {scope!r} in the main graph")
    return set(found.subtree_nodes())


def _shown(names: Sequence[str], most: int = 6) -> str:
    text = ", ".join(repr(n) for n in names[:most])
    return text + (f" and {len(names) - most:,} more" if len(names) > most else "")


class TypeSource:
    """The types of a model's values at its bound input sizes (see the module docstring)."""

    def __init__(
        self,
        model: Model,
        proto: onnx.ModelProto,
        *,
        dims: Mapping[str, int] | None,
        input_shapes: Mapping[str, Sequence[int]] | None,
    ) -> None:
        self.model = model
        self.binding = model_binding(model, dims=dims, input_shapes=input_shapes)
        graph = proto.graph
        self.declared_inputs = {v.name: v for v in graph.input}
        self.declared = {v.name: v for v in (*graph.value_info, *graph.output)}
        self.stored = {t.name: t for t in graph.initializer}
        self._inferred: Mapping[str, ValueInfo] | None = None
        self.inference_error: str | None = None

    def inferred(self) -> Mapping[str, ValueInfo]:
        if self._inferred is None:
            shapes = dict(self.binding.shapes) or None
            found = self.model.inferred_types(shapes)
            self.inference_error = found.error
            self._inferred = found.types.get(id(self.model.graph), {})
        return self._inferred

    def of(self, cut: Cut, notes: list[str]) -> dict[str, onnx.ValueInfoProto]:
        """Name → typed ``ValueInfoProto`` for the cut's inputs and outputs; an input
        whose type nothing knows is an error, an output is left untyped (with a note)."""
        typed: dict[str, onnx.ValueInfoProto] = {}
        for name in (*cut.inputs, *cut.outputs):
            found = self.type_of(name)
            if found is not None:
                typed[name] = found
        missing = [n for n in cut.inputs if n not in typed]
        if missing:
            self._observe(missing, typed)
        missing = [n for n in cut.inputs if n not in typed]
        if missing:
            why = f" ({self.inference_error})" if self.inference_error else ""
            raise ModelFormatError(
                f"the type of input {missing[0]!r} of the cut is unknown: shape inference "
                f"gave none{why} and the file declares none; bind the inputs' sizes "
                "(dims=..., input_shapes=...) or cut elsewhere"
            )
        untyped = [n for n in cut.outputs if n not in typed]
        for name in untyped:
            typed[name] = onnx.ValueInfoProto(name=name)
        if untyped:
            notes.append(f"outputs left untyped (no type known): {_shown(untyped)}")
        line = self.binding.line()
        if line:
            notes.append(line)
        return typed

    def type_of(self, name: str) -> onnx.ValueInfoProto | None:
        declared_input = self.declared_inputs.get(name)
        if declared_input is not None and declared_input.name not in self.stored:
            typed = onnx.ValueInfoProto()  # the model's own input: as the file declares it
            typed.CopyFrom(declared_input)
            return typed
        info = self.inferred().get(name)
        if info is not None and info.dtype in DTYPES:
            return _tensor_info(name, info.dtype, info.shape)
        declared = self.declared.get(name)
        if declared is not None and declared.type.WhichOneof("value") is not None:
            typed = onnx.ValueInfoProto()
            typed.CopyFrom(declared)
            return typed
        tensor = self.stored.get(name)
        if tensor is not None:
            return helper.make_tensor_value_info(name, tensor.data_type, list(tensor.dims))
        return None

    def _observe(self, names: list[str], typed: dict[str, onnx.ValueInfoProto]) -> None:
        """Types seen in one onnxruntime run at the bound sizes (where inference stops)."""
        shapes = {k: tuple(v) for k, v in self.binding.shapes.items()}
        seen = self.model.observed_types(shapes).types.get(id(self.model.graph), {})
        for name in names:
            info = seen.get(name)
            if info is not None and info.dtype in DTYPES:
                typed[name] = _tensor_info(name, info.dtype, info.shape)


def _tensor_info(
    name: str, dtype_name: str, shape: Sequence[int | str | None] | None
) -> onnx.ValueInfoProto:
    code = helper.np_dtype_to_tensor_dtype(DTYPES[dtype_name].numpy)
    return helper.make_tensor_value_info(name, code, None if shape is None else list(shape))


def _embed_weights(model: onnx.ModelProto, base_dir: Path | None) -> None:
    """Read every external tensor's bytes into the model (``copy_weights=True``),
    locations checked by the package's own rules first."""
    from onnx.external_data_helper import load_external_data_for_tensor

    tensors = list(external_tensors(model))
    if not tensors:
        return
    check_external(model, base_dir)
    if base_dir is None:  # check_external has refused external data without a directory
        return
    for tensor in tensors:
        load_external_data_for_tensor(tensor, str(base_dir))
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]


__all__ = ["TypeSource", "extract"]
