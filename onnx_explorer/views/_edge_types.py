"""Types of the values on a graph's edges: the file's value_info, completed by inference.

Inference is the file format's own (ONNX shape inference), provided by the model's
reader as :attr:`Model.type_inference` (ONNX: ``readers/onnx/_shape_inference.py``): views see
its result as plain :class:`ValueInfo` and never import readers or protobuf.

A model whose inference fails or runs out of time (the reader runs it in a child
process with a time limit) still draws, without the inferred labels; the reason is
kept as a note. The result is the model's own (:meth:`Model.inferred_types`: run once,
a second caller waiting for the first), shared with :func:`onnx_explorer.metrics`.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..bindings import has_symbols, is_concrete, model_binding
from ..model import INFER_AUTO_MAX_NODES, Graph, InferredTypes, Model, ValueInfo

#: What :func:`inferred_types` returns (the model's own type).
Inferred = InferredTypes


def inferred_types(model: Model) -> Inferred:
    """The format's own type inference over every graph of a model (cached; never raises)."""
    return model.inferred_types()


class ValueTypes:
    """Type lookup for the values of one graph: declared first, inferred where missing;
    inferred first when inference ran on bound inputs (``found_first``), as far as it
    found concrete sizes (the file's value_info holds the old symbols)."""

    def __init__(
        self, graph: Graph, inferred: Mapping[str, ValueInfo], found_first: bool = False
    ) -> None:
        declared: dict[str, ValueInfo] = dict(graph.value_info)
        for info in (*graph.declared_inputs, *graph.outputs):
            declared[info.name] = info
        self._declared = declared
        self._inferred = inferred
        self._graph = graph
        self._found_first = found_first

    def get(self, name: str) -> ValueInfo | None:
        if self._found_first:
            found = self._inferred.get(name)
            if found is not None and found.shape is not None and is_concrete(found.shape):
                return found
        declared = self._declared.get(name)
        if declared is not None and declared.dtype and declared.shape is not None:
            return declared
        inferred = self._inferred.get(name)
        if inferred is not None and (declared is None or inferred.shape is not None):
            return inferred
        if declared is None:
            return self._graph.value(name)  # an initializer's own dtype and dims
        return declared


def value_types(
    graph: Graph, model: Model | None, infer: bool | None = None
) -> tuple[ValueTypes, str | None]:
    """Type lookup for ``graph`` and a note saying what inference did (None: nothing to say).

    ``infer``: True runs ONNX shape inference, False never does, None runs it on
    graphs up to :data:`INFER_AUTO_MAX_NODES` nodes.
    """
    if model is None or model.type_inference is None or infer is False:
        return ValueTypes(graph, {}), None
    big = len(model.graph.nodes) > INFER_AUTO_MAX_NODES
    if infer is None and big and not model.has_inferred_types:
        note = (
            f"edge shapes from the file only: shape inference skipped for "
            f"{len(model.graph.nodes):,} nodes (infer_shapes=True runs it)"
        )
        return ValueTypes(graph, {}), note
    bound = has_symbols(model.graph)
    try:
        binding = model_binding(model) if bound else None
        result = model.inferred_types(binding.shapes if binding is not None else None)
    except (TypeError, ValueError) as exc:  # a binding made with Model.bind() that does not fit
        return ValueTypes(graph, {}), f"edge shapes from the file only: {exc}"
    if result.error is not None:
        return ValueTypes(graph, {}), f"edge shapes from the file only: {result.error}"
    note = binding.line() if binding is not None else ""
    return ValueTypes(graph, result.types.get(id(graph), {}), bound), note or None
