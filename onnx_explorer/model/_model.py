"""A model file opened read-only (:class:`Model`), its functions and weight references."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import ExplorerError
from ..tensors import Tensor
from ._graph import Graph
from ._node import Node
from ._support import _NO_SUPPORT, FormatSupport, InferredTypes
from ._values import Attribute, ModelFormat, WeightKind

if TYPE_CHECKING:
    from ..external_data import DataFiles

    # The convenience method's parameter types, from the layer above (see Model.weights_report).
    from ..weights import Stop


@dataclass(frozen=True)
class Function:
    """A model-local function: an operator defined by a graph of other operators."""

    name: str
    domain: str
    graph: Graph
    attribute_names: tuple[str, ...] = ()
    attribute_defaults: Mapping[str, Attribute] = field(default_factory=dict)
    opset_imports: Mapping[str, int] = field(default_factory=dict)
    overload: str = ""
    doc_string: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.domain, self.name, self.overload)


@dataclass(frozen=True)
class WeightRef:
    """A weight tensor and where it sits: an initializer, a Constant node or an attribute."""

    graph: Graph
    tensor: Tensor
    kind: WeightKind
    node: Node | None = None


#: Deepest scope nesting taken from a node name (``/model/layers.3/attn/MatMul``):
#: components past this many stay in the node's own name. Every scope stores its full
#: path, so an uncapped name of N components cost N² bytes (60,000 components: 5 GB);
#: no exporter nests modules anywhere near this deep.


INFER_AUTO_MAX_NODES = 50_000


def _shapes_key(
    input_shapes: Mapping[str, Sequence[int]],
) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Input shapes as a hashable key of the type caches (and as the mapping they were)."""
    return tuple(sorted((k, tuple(v)) for k, v in input_shapes.items()))


class Model:
    """A model file opened read-only. Build one with :func:`onnx_explorer.load`."""

    def __init__(
        self,
        graph: Graph,
        *,
        format: ModelFormat,
        path: Path | None = None,
        ir_version: int | None = None,
        opset_imports: Mapping[str, int] | None = None,
        producer_name: str = "",
        producer_version: str = "",
        domain: str = "",
        model_version: int | None = None,
        doc_string: str = "",
        metadata_props: Mapping[str, str] | None = None,
        functions: tuple[Function, ...] = (),
        data_files: DataFiles | None = None,
        support: FormatSupport | None = None,
    ) -> None:
        self.graph = graph
        self.format: ModelFormat = format
        self.path = path
        self.ir_version = ir_version
        self.opset_imports: Mapping[str, int] = MappingProxyType(dict(opset_imports or {}))
        self.producer_name = producer_name
        self.producer_version = producer_version
        self.domain = domain
        self.model_version = model_version
        self.doc_string = doc_string
        self.metadata_props: Mapping[str, str] = MappingProxyType(dict(metadata_props or {}))
        self.functions = functions
        self._functions_by_key = {(f.domain, f.name): f for f in functions}
        self._data_files = data_files
        # What views, widgets and runs may ask of the file format (set by the reader).
        self.support = support if support is not None else _NO_SUPPORT
        # The format's own type inference (slow: see inferred_types()); None switches it off.
        self.type_inference = self.support.type_inference
        self._inferred: InferredTypes | None = None
        self._inferred_bound: dict[tuple[Any, ...], InferredTypes] = {}
        self._observed: dict[tuple[Any, ...], InferredTypes] = {}
        self._observing = threading.Lock()
        # Input sizes the user chose for this model (see bind() and onnx_explorer.bindings).
        self.bound_dims: Mapping[str, int] = MappingProxyType({})
        self.bound_input_shapes: Mapping[str, tuple[int, ...]] = MappingProxyType({})
        self._inferring = threading.Lock()
        self._graphs: dict[str, Graph] | None = None
        for g in _built_graphs([graph, *(f.graph for f in functions)]):
            g.model = self  # bodies built later find it through their parent node

    def __repr__(self) -> str:
        where = f" {self.path.name!r}" if self.path else ""
        return f"<Model{where} {self.format} {len(self.graph.nodes)} nodes>"

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Unmap data files (arrays still referring to them keep their map alive)."""
        if self._data_files is not None:
            self._data_files.close()

    def inferred_types(
        self, input_shapes: Mapping[str, tuple[int, ...]] | None = None
    ) -> InferredTypes:
        """The format's type inference over every graph, run once per model and per set of
        input shapes (never raises).

        ``input_shapes`` (input name → concrete shape, see :mod:`onnx_explorer.bindings`)
        binds the inputs first, so derived sizes propagate as numbers. The drawing's layout
        thread, the attribute panel and :func:`onnx_explorer.metrics` all ask here: a
        second caller waits for the run under way (bounded by the reader's time limit)
        instead of starting another.
        """
        if input_shapes:
            key = _shapes_key(input_shapes)
            with self._inferring:
                found = self._inferred_bound.get(key)
                if found is None:
                    found = (
                        InferredTypes({}, f"no shape inference for {self.format} models")
                        if self.type_inference is None
                        else self.type_inference(self, dict(key))
                    )
                    if len(self._inferred_bound) >= 8:  # a few bindings, not every one tried
                        self._inferred_bound.pop(next(iter(self._inferred_bound)))
                    self._inferred_bound[key] = found
                return found
        found = self._inferred
        if found is not None:
            return found
        with self._inferring:
            if self._inferred is None:
                self._inferred = (
                    InferredTypes({}, f"no shape inference for {self.format} models")
                    if self.type_inference is None
                    else self.type_inference(self, None)
                )
            return self._inferred

    @property
    def has_inferred_types(self) -> bool:
        """True once :meth:`inferred_types` has run (asking is free from then on)."""
        return self._inferred is not None

    def bind(
        self,
        dims: Mapping[str, int] | None = None,
        input_shapes: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        """Choose the sizes of the inputs' symbolic dims for every view of this model: edge
        labels, the attribute panel, :func:`onnx_explorer.metrics` and overlays (a call's own
        ``dims=`` still wins). ``dims``: symbol → size (``{"batch": 8, "height": 320}``);
        ``input_shapes``: input name → whole shape, for inputs declared ``?`` or ``-1``.
        Checked when first used (:func:`onnx_explorer.bindings.bind_inputs`)."""
        self.bound_dims = MappingProxyType(dict(dims or {}))
        self.bound_input_shapes = MappingProxyType(
            {str(k): tuple(v) for k, v in (input_shapes or {}).items()}
        )

    def observed_types(self, input_shapes: Mapping[str, tuple[int, ...]]) -> InferredTypes:
        """The main graph's value types seen in one onnxruntime run on generated inputs of
        ``input_shapes`` (needs ``onnx_explorer[run]``): the reference where shape
        inference stops. One run at a time, the last few kept. Never raises: an
        ``error`` says why there are none."""
        key = _shapes_key(input_shapes)
        with self._observing:  # a second caller waits for the run under way
            found = self._observed.get(key)
            if found is None:
                found = self._run_for_types(dict(key))
                if len(self._observed) >= 4:
                    self._observed.pop(next(iter(self._observed)))
                self._observed[key] = found
            return found

    def _run_for_types(self, input_shapes: Mapping[str, tuple[int, ...]]) -> InferredTypes:
        if not self.support.runnable:
            return InferredTypes({}, f"no onnxruntime run for {self.format} models")
        try:  # a convenience edge up to runs (see pyproject.toml)
            from ..runs import observed_shapes
        except ImportError as exc:  # onnx missing: nothing to run
            return InferredTypes({}, f"no run: {exc}")
        try:
            found = observed_shapes(self, input_shapes)
        except (ExplorerError, MemoryError, ValueError, OSError) as exc:
            # onnxruntime missing, the run failed or timed out, absurd sizes
            lines = str(exc).splitlines()
            return InferredTypes({}, lines[0] if lines else type(exc).__name__)
        return InferredTypes({id(self.graph): found})

    def function(self, domain: str, name: str) -> Function | None:
        return self._functions_by_key.get((domain, name))

    def function_for(self, node: Node) -> Function | None:
        """The local function a node calls, if any: by its op type, or for TensorFlow's
        ``PartitionedCall``/``StatefulPartitionedCall`` by its ``f`` (FUNC) attribute."""
        found = self._functions_by_key.get((node.domain, node.op_type))
        call = node.attributes.get("f")
        if found is None and call is not None and call.kind == "FUNC":
            found = self._functions_by_key.get(("", getattr(call.value, "name", "")))
        return found

    def graphs(self, include_functions: bool = True) -> Iterator[Graph]:
        """Every graph: the main one, If/Loop/Scan bodies at any depth, and function bodies."""
        roots = [self.graph]
        if include_functions:
            roots += [f.graph for f in self.functions]
        for root in roots:
            yield from _walk_graphs(root)

    def graph_at(self, path: str) -> Graph:
        """The graph with this path (see :attr:`Graph.path`)."""
        if self._graphs is None:
            self._graphs = {g.path: g for g in self.graphs()}
        try:
            return self._graphs[path]
        except KeyError:
            raise KeyError(f"no graph at path {path!r}") from None

    def weights(self) -> Iterator[WeightRef]:
        """Every stored tensor: initializers, Constant values, tensor attributes; all graphs."""
        seen: set[int] = set()  # a GraphDef Const's tensor is both an initializer and an attribute
        for graph in self.graphs():
            for tensor in graph.initializers.values():
                seen.add(id(tensor))
                yield WeightRef(graph, tensor, "initializer")
            for sparse in graph.sparse_initializers.values():
                yield WeightRef(graph, sparse.values, "sparse_initializer")
            constants = graph.constants()
            for node in graph.nodes:
                if node.op_type == "Constant" and node.outputs and node.outputs[0] in constants:
                    yield WeightRef(graph, constants[node.outputs[0]], "constant", node)
                    continue
                for _, tensor in node.tensors():
                    if id(tensor) in seen:
                        continue
                    kind: WeightKind = (
                        "constant" if node.op_type in ("Constant", "Const") else "attribute"
                    )
                    yield WeightRef(graph, tensor, kind, node)

    def weights_report(
        self,
        *,
        progress: bool = True,
        sort: str | None = None,
        stop: Stop = None,
        dequantize: bool = False,
        outlier_sigma: float = 50.0,
        as_list: bool = False,
        weights: Iterable[WeightRef] | None = None,
    ) -> Any:
        """Statistics and flags of every weight, one row per tensor (a DataFrame with pandas,
        else a list of dicts): see :func:`onnx_explorer.weights.weights_report`."""
        from ..weights import weights_report  # a convenience edge up (see pyproject.toml)

        return weights_report(
            self,
            progress=progress,
            sort=sort,
            stop=stop,
            dequantize=dequantize,
            outlier_sigma=outlier_sigma,
            as_list=as_list,
            weights=weights,
        )

    @property
    def nodes_total(self) -> int:
        return sum(len(g.nodes) for g in self.graphs())


def _built_graphs(roots: list[Graph]) -> Iterator[Graph]:
    """``roots`` and the bodies under them that exist already (a deferred graph makes its
    bodies when its nodes' attributes are first read)."""
    stack = list(roots)
    while stack:
        current = stack.pop()
        yield current
        if current._parts is None:
            stack.extend(g for node in current.nodes for _, g in node.subgraphs())


def _walk_graphs(graph: Graph) -> Iterator[Graph]:
    stack = [graph]
    while stack:
        current = stack.pop()
        yield current
        # Only the nodes that hold bodies: asking every node would decode every attribute.
        nodes = current.nodes
        children = [g for i in sorted(current.nodes_with_bodies()) for _, g in nodes[i].subgraphs()]
        stack.extend(reversed(children))
