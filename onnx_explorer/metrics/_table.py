"""Per-node parameters, memory and compute of a graph, and their totals per scope."""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..bindings import InputBinding, bind_inputs, has_symbols, model_binding
from ..model import Function, Graph, InferredTypes, Model, Node, ValueInfo, scope_parts
from ..tensors import Tensor
from ._rules import BadAttribute, rule_for
from ._shapes import GraphShapes, NodeView, inference_for_metrics, needs_inference

Series = Literal["macs", "params", "activation_bytes", "param_bytes"]
SERIES: tuple[str, ...] = ("macs", "params", "activation_bytes", "param_bytes")
COLUMNS = ("name", "op_type", "domain", "scope", "params", "param_bytes", "activation_bytes",
           "macs")  # fmt: skip


def scope_of(name: str) -> str:
    """A node name's scope: the non-empty parts before its last ``/`` (at most 64), the
    scope the explorer groups the node under."""
    return "/".join(scope_parts(name.rpartition("/")[0]))


@dataclass
class Metrics:
    """Parameters, activation memory and MACs of every node of a graph.

    ``rows``: one dict per node of the main graph, in file order, with the keys of
    :data:`COLUMNS`; ``activation_bytes`` and ``macs`` are None (not 0) where a shape
    is unknown or the op has no MAC rule. ``assumed_dims``: input symbols nobody bound,
    sized by :func:`onnx_explorer.bindings.bind_inputs` (``binding`` says at what size
    and why; :attr:`assumed_line` in one line). ``unresolved_dims``: derived symbols no
    inference or run could size (their nodes are unknown). ``unknown_ops``: op type →
    nodes with no MAC rule. ``shapes_from``: where the shapes came from.
    ``notes``: what shape inference or the run did, when there is something to say.
    ``invalid``: node name → why its MACs are unknown although its op has a rule (an
    attribute of the wrong kind or size, a value its rule cannot use).

    Values are exact Python ints, however large a file's declared sizes make them;
    :meth:`to_dict` (``--json``) writes one past 64 bits as a string
    (:func:`json_number`), :meth:`to_pandas` makes such a column float64 (``inf`` past
    float range), and an overlay paints it at the top of the scale.
    """

    rows: list[dict[str, Any]]
    assumed_dims: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    binding: InputBinding | None = None
    unresolved_dims: tuple[str, ...] = ()
    unknown_ops: dict[str, int] = field(default_factory=dict)
    shapes_from: str = "file"
    invalid: dict[str, str] = field(default_factory=dict)
    #: The graph measured (node-data files key a node the reader named by its output).
    graph: Graph | None = field(default=None, repr=False, compare=False)

    @property
    def assumed_line(self) -> str:
        """One line naming the input sizes assumed ("" when every one was bound)."""
        return self.binding.line() if self.binding is not None else ""

    @property
    def unknown(self) -> dict[str, int]:
        return {
            key: sum(1 for row in self.rows if row[key] is None)
            for key in ("macs", "activation_bytes")
        }

    @property
    def totals(self) -> dict[str, int]:
        """Sums over the graph (unknown values left out; see :attr:`unknown`)."""
        return {"nodes": len(self.rows), **_sums(self.rows)}

    def by_scope(self, depth: int | None = None) -> list[dict[str, Any]]:
        """Totals per name scope, each including everything beneath it.

        ``depth=None``: every scope at every depth (nested scopes overlap their parents);
        ``depth=k``: scopes cut at ``k`` components, so the rows partition the graph
        (nodes outside any scope under ``""``). In order of first appearance.
        """
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)):
            raise TypeError(f"depth must be an int or None, not {depth!r}")
        if depth is not None and depth < 0:
            raise ValueError(f"depth must not be negative, not {depth}")
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in self.rows:
            parts = row["scope"].split("/") if row["scope"] else []
            if depth is not None:
                groups.setdefault("/".join(parts[:depth]), []).append(row)
                continue
            for k in range(1, len(parts) + 1):
                groups.setdefault("/".join(parts[:k]), []).append(row)
        return [
            {"scope": scope, "nodes": len(rows), **_sums(rows)} for scope, rows in groups.items()
        ]

    def series(self, name: str) -> dict[str, int]:
        """Node name → value of one column (``macs``, ``params``, ``activation_bytes``,
        ``param_bytes``), unknown values left out: what an overlay takes."""
        if name not in SERIES:
            raise ValueError(f"no series {name!r}; choose one of {', '.join(SERIES)}")
        return {row["name"]: row[name] for row in self.rows if row[name] is not None}

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                "Metrics.to_pandas needs pandas: pip install onnx_explorer[pandas]"
            ) from exc
        frame = pd.DataFrame(self.rows, columns=list(COLUMNS))
        for column in SERIES:
            values = [row[column] for row in self.rows]
            if all(v is None or _INT64_MIN <= v <= _INT64_MAX for v in values):
                if column in ("activation_bytes", "macs"):  # None stays missing, not NaN
                    frame[column] = frame[column].astype("Int64")
            else:  # past 64 bits: floats, inf past their range (an overlay's top)
                frame[column] = pd.Series([_float(v) for v in values], dtype="float64")
        return frame

    def to_model_explorer_json(
        self,
        series: str = "macs",
        *,
        path: str | os.PathLike[str] | None = None,
        graph_id: str | None = None,
    ) -> dict[str, Any]:
        """One column as Model Explorer node data (coloured by the explorer's scale);
        written to ``path`` (a ``.json``) when given. See :mod:`onnx_explorer.node_data`."""
        from ..node_data import model_explorer_json, series_of, write_json

        (found,) = series_of({series: self.series(series)}, self.graph)
        data = model_explorer_json(found, graph_id=graph_id)
        if path is not None:
            write_json(data, path)
        return data

    def to_netron_json(
        self,
        series: Sequence[str] = SERIES,
        *,
        path: str | os.PathLike[str] | None = None,
    ) -> dict[str, Any]:
        """Columns as a Netron attachment (metrics rows per node, the totals as model
        rows); written to ``path`` (a ``.json``) when given."""
        from ..node_data import netron_json, series_of, write_json

        columns = {name: self.series(name) for name in series}
        totals = {f"total {name}": _float(self.totals[name]) for name in series}
        data = netron_json(series_of(columns, self.graph), totals)
        if path is not None:
            write_json(data, path)
        return data

    def to_dict(self) -> dict[str, Any]:
        return {
            "totals": self.totals,
            "unknown": self.unknown,
            "assumed_dims": list(self.assumed_dims),
            "assumed": self.assumed_line,
            "unresolved_dims": list(self.unresolved_dims),
            "unknown_ops": dict(self.unknown_ops),
            "invalid": dict(self.invalid),
            "shapes_from": self.shapes_from,
            "notes": list(self.notes),
            "rows": json_rows(self.rows),
        }


_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
#: Ints up to this many bits are written whole (Python's int→str limit is 4,300 digits).
_EXACT_BITS = 14_000


def json_number(value: Any) -> Any:
    """A metrics value as JSON holds it: an int within 64 bits as itself, a larger one as
    a string: its exact digits (up to 14,000 bits, ~4,200 digits), past that ``"1.2e9999"``
    (scientific, worked out in integer arithmetic). Anything else unchanged."""
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    if value.bit_length() <= _EXACT_BITS:
        return str(value)
    return _mantissa_exponent(value)


def _mantissa_exponent(value: int) -> str:
    """``value`` as ``1.2e9999`` in integer arithmetic (str() refuses 4,300 digits, float()
    overflows past 1e308)."""
    sign, value = ("-", -value) if value < 0 else ("", value)
    exponent = max(0, int((value.bit_length() - 1) * 0.30102999566398) - 1)
    digits = value // 10**exponent
    while digits >= 100:
        digits //= 10
        exponent += 1
    return f"{sign}{digits / 10:.1f}e{exponent + 1}"


def json_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows (or scope rows) with :func:`json_number` applied to every value."""
    return [{key: json_number(value) for key, value in row.items()} for row in rows]


def _float(value: int | None) -> float:
    """An int as a float, ``inf`` past float range; None as NaN (missing)."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _sums(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {key: sum(row[key] or 0 for row in rows) for key in SERIES}


ShapesFrom = Literal["auto", "infer", "run"]


def metrics(
    model_or_graph: Model | Graph,
    *,
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    infer: bool | None = None,
    shapes: ShapesFrom = "auto",
) -> Metrics:
    """Parameters, activation memory and multiply-accumulates of every node.

    One row per node of the main graph (or of the graph given). A node holding bodies
    counts their parameters and MACs as its own: If its larger branch, Loop its body
    times a constant trip count, Scan its body times the scanned length (unknown
    otherwise); a call of a model-local function counts the function's body. A weight
    (initializer, Constant output, sparse initializer) counts toward the first node
    reading it, in file order, so a shared weight is counted once; a Constant no node
    reads counts toward itself.

    Sizes: the graph's inputs are bound first (``input_shapes`` whole, ``dims`` per
    symbol, else the model's hints or a default per kind: see
    :mod:`onnx_explorer.bindings` and :attr:`Metrics.assumed_line`), then every shape
    is propagated from them: ONNX shape inference with data propagation (unless ``infer``
    is False; at any size: 2.8 s for 100,000 nodes here), and where it
    leaves a compute op's shape unknown, the shapes of one onnxruntime run on generated
    inputs (``shapes="auto"``, when onnxruntime is installed, ``infer`` is not False and
    the graph has at most 20,000 nodes and 1 GB of weights; ``"run"`` always,
    ``"infer"`` never). MAC conventions:
    :mod:`onnx_explorer.metrics._rules`.
    """
    if shapes not in ("auto", "infer", "run"):
        raise ValueError(f"shapes must be 'auto', 'infer' or 'run', not {shapes!r}")
    model: Model | None
    if isinstance(model_or_graph, Model):
        model, graph = model_or_graph, model_or_graph.graph
    elif isinstance(model_or_graph, Graph):
        model, graph = model_or_graph.model, model_or_graph
    else:
        raise TypeError(f"metrics takes a Model or a Graph, not {type(model_or_graph).__name__}")
    is_main = model is not None and graph is model.graph
    binding = (
        model_binding(model, dims=dims, input_shapes=input_shapes)
        if model is not None and is_main
        else bind_inputs(graph, dims=dims, input_shapes=input_shapes)
    )
    symbolic = is_main and has_symbols(graph)
    notes: list[str] = []
    inferred = None
    if needs_inference(graph) or symbolic:
        inferred = inference_for_metrics(model, graph, infer, binding.shapes if symbolic else None)
        if inferred is None and model is not None and model.type_inference is not None:
            notes.append("shapes from the file only: inference not run (infer=False)")
        elif inferred is not None and inferred.error:
            notes.append(f"shapes from the file only: {inferred.error}")
    graph_format = model.format if model is not None else "onnx"  # the operators' vocabulary
    runnable = model is not None and model.support.runnable
    if shapes == "run" and (not runnable or not is_main):
        notes.append("no onnxruntime run: shapes='run' needs an ONNX model's main graph")
    found_first = symbolic and inferred is not None and not inferred.error
    shapes_from = "inference" if found_first else "file"
    # GraphDef has no inference: its placeholders take the bound shapes directly.
    bound_inputs = dict(binding.shapes) if graph_format == "graphdef" else {}
    walker = _Walker(graph_format, inferred, binding.dims, model, found_first)
    walker.bound_inputs = bound_inputs
    rows = walker.rows(graph)
    if (
        model is not None
        and is_main
        and runnable
        and (
            shapes == "run"
            or (
                shapes == "auto"
                and infer is not False
                and walker.shape_unknown
                and _can_observe(graph)
            )
        )
    ):
        observed = model.observed_types(binding.shapes)
        if observed.error:
            notes.append(f"no onnxruntime shapes: {observed.error}")
        else:
            walker = _Walker(
                graph_format, inferred, binding.dims, model, found_first,
                observed.types.get(id(graph)),
            )  # fmt: skip
            walker.bound_inputs = bound_inputs
            rows = walker.rows(graph)
            shapes_from = "onnxruntime run"
    if walker.invalid:
        name, reason = next(iter(walker.invalid.items()))
        more = f" (and {len(walker.invalid) - 1} more)" if len(walker.invalid) > 1 else ""
        notes.append(f"MACs unknown for node {name!r}: {reason}{more}")
    return Metrics(
        rows,
        tuple(a.symbol for a in binding.assumed),
        notes,
        binding,
        tuple(sorted(walker.unresolved)),
        dict(sorted(walker.no_rule.items())),
        shapes_from,
        dict(walker.invalid),
        graph=graph,
    )


def _can_observe(graph: Graph) -> bool:
    """True when a run may stand in for inference by itself: onnxruntime is there, the
    graph small enough to hold every value at once and its weights to load in a moment
    (an LLM's 28 GB are not read to size a few symbols: ``shapes="run"`` asks for it)."""
    if len(graph.nodes) > OBSERVE_MAX_NODES:
        return False
    weights = (*graph.initializers.values(), *graph.constants().values())  # Paddle: Constants
    if sum(t.nbytes for t in weights) > OBSERVE_MAX_WEIGHT_BYTES:
        return False
    try:
        return importlib.util.find_spec("onnxruntime") is not None
    except (ImportError, ValueError):
        return False


#: Largest graph whose shapes an onnxruntime run supplies automatically (one session
#: holds every value until the end).
OBSERVE_MAX_NODES = 20_000
#: Largest weights an automatic run loads (all of them go into onnxruntime's session).
OBSERVE_MAX_WEIGHT_BYTES = 1 << 30
_MAX_CALL_DEPTH = 16
#: Nodes one metrics walk visits at most, bodies and function calls included.
MAX_WALKED_NODES = 5_000_000
#: Trip counts above this are taken as bounds of a computed condition, not counts.
MAX_LOOP_TRIPS = 1 << 31  # nested function calls followed (a recursive file ends here)


class _Walker:
    """Computes rows graph by graph; shares the claimed weights across bodies."""

    def __init__(
        self,
        graph_format: str,
        inferred: Any,
        dims: Mapping[str, int],
        model: Model | None,
        found_first: bool,
        observed: Mapping[str, ValueInfo] | None = None,
    ):
        self.graph_format = graph_format
        self.inferred = inferred
        self.dims = dims
        self.model = model
        self.found_first = found_first
        self.observed = observed
        self.unresolved: set[str] = set()
        self.no_rule: dict[str, int] = {}
        self.invalid: dict[str, str] = {}  # node name → why its MACs are unknown
        self.shape_unknown = 0  # nodes with a rule whose shapes were unknown
        self.claimed: set[int] = set()  # id() of weights already counted
        self._calls: list[str] = []  # functions being walked (recursion guard)
        # A function's MACs per argument shapes: a hostile file calling F ten times from
        # each of six nested levels would otherwise walk 10^6 bodies.
        self._call_macs: dict[tuple[str, tuple[Any, ...]], int | None] = {}
        self.walked = 0  # nodes walked, bodies and calls included (bounded)
        self.bound_inputs: dict[str, tuple[int, ...]] = {}  # the main graph's (GraphDef)

    def rows(
        self,
        graph: Graph,
        outer: GraphShapes | None = None,
        outer_weights: Any = None,
        arguments: Mapping[str, tuple[int, ...]] | None = None,
        call_types: InferredTypes | None = None,
    ) -> list[dict[str, Any]]:
        """Rows of ``graph``'s nodes; a function body walked for a call gets that call's
        ``arguments`` (input shapes) and ``call_types`` (its body inferred for it)."""
        main = outer is None and arguments is None
        self.walked += len(graph.nodes)
        shapes = GraphShapes(
            graph, call_types or self.inferred, self.dims, self.unresolved, outer,
            self.graph_format,
            found_first=self.found_first or call_types is not None,
            observed=self.observed if main else None,
            bound_inputs=self.bound_inputs if main else arguments,
        )  # fmt: skip
        weights = _Weights(graph, outer_weights)
        rows = []
        producers: dict[str, dict[str, Any]] = {}
        with_bodies = graph.nodes_with_bodies()
        for node in graph.nodes:
            row = self._row(node, shapes, weights, node.index in with_bodies)
            rows.append(row)
            if node.op_type in ("Constant", "Const") and node.outputs:
                producers[node.outputs[0]] = row
        for name, row in producers.items():  # a Constant nobody reads counts toward itself
            tensor = weights.get(name)
            if tensor is not None and id(tensor) not in self.claimed:
                self.claimed.add(id(tensor))
                row["params"] += tensor.size
                row["param_bytes"] += tensor.nbytes
        return rows

    def _row(
        self, node: Node, shapes: GraphShapes, weights: _Weights, has_bodies: bool
    ) -> dict[str, Any]:
        params = param_bytes = 0
        for name in node.inputs:
            tensor = weights.get(name) if name else None
            if tensor is not None and id(tensor) not in self.claimed:
                self.claimed.add(id(tensor))
                params += tensor.size
                param_bytes += tensor.nbytes
        macs: int | None
        function = self.model.function_for(node) if self.model is not None else None
        rule = rule_for(node, self.graph_format)
        view = NodeView(node, shapes)
        if function is not None:
            macs, p, pb = self._call(function, weights, view)
            params, param_bytes = params + p, param_bytes + pb
        elif rule is None:
            self.no_rule[_op_name(node)] = self.no_rule.get(_op_name(node), 0) + 1
            macs = None
        else:
            try:
                macs = rule(view)
            except (BadAttribute, ArithmeticError, TypeError, ValueError, IndexError) as exc:
                # a file's attribute of the wrong kind: this node unknown, not the table
                self.invalid[node.name] = _reason(exc)
                macs = None
            if macs is None:
                self.shape_unknown += 1
        if has_bodies:
            body_macs, p, pb = self._bodies(node, view, shapes, weights)
            params, param_bytes = params + p, param_bytes + pb
            macs = None if macs is None or body_macs is None else macs + body_macs
        activation: int | None = 0
        for name in node.outputs:
            try:
                size = shapes.nbytes(name) if name else 0
            except (BadAttribute, ArithmeticError, TypeError, ValueError, IndexError) as exc:
                self.invalid.setdefault(node.name, _reason(exc))
                size = None
            activation = None if size is None or activation is None else activation + size
        return {
            "name": node.name,
            "op_type": node.op_type,
            "domain": node.domain,
            "scope": scope_of(node.name),
            "params": params,
            "param_bytes": param_bytes,
            "activation_bytes": activation,
            "macs": macs,
        }

    def _bodies(
        self, node: Node, view: NodeView, shapes: GraphShapes, weights: _Weights
    ) -> tuple[int | None, int, int]:
        """(MACs, params, param bytes) of a node's bodies: If its larger branch, Loop
        and Scan their body times the iterations (None when not known)."""
        params = param_bytes = 0
        per_body: list[int | None] = []
        for _, body in node.subgraphs():
            inner_rows = self.rows(body, shapes, weights)
            params += sum(r["params"] for r in inner_rows)
            param_bytes += sum(r["param_bytes"] for r in inner_rows)
            values = [r["macs"] for r in inner_rows]
            per_body.append(None if None in values else sum(v or 0 for v in values))
        if not per_body or None in per_body:
            return None, params, param_bytes
        known = [m for m in per_body if m is not None]
        if node.op_type == "If":
            return max(known), params, param_bytes
        if node.op_type == "Loop":
            return _loop_trips(node, view, sum(known)), params, param_bytes
        if node.op_type == "Scan":
            steps = _scan_length(node, view)
            return (None if steps is None else steps * sum(known)), params, param_bytes
        return sum(known), params, param_bytes

    def _call(
        self, function: Function, weights: _Weights, call: NodeView
    ) -> tuple[int | None, int, int]:
        """A local function's body, walked as a graph of its own, its inputs sized by
        the call site, the values inside typed by the body's inference for this call
        (ONNX: :attr:`InferredTypes.calls`) or by what the body stores (TensorFlow)."""
        key = f"{function.domain}::{function.name}"
        if key in self._calls or len(self._calls) >= _MAX_CALL_DEPTH:
            return None, 0, 0
        arguments: dict[str, tuple[int, ...]] = {}
        for i, info in enumerate(function.graph.inputs):
            shape = call.input(i) if i < len(call.node.inputs) else None
            if shape is not None:
                arguments[info.name] = shape
        memo = (key, tuple(sorted(arguments.items())))
        if memo in self._call_macs:  # its weights were counted the first time
            return self._call_macs[memo], 0, 0
        if self.walked > MAX_WALKED_NODES:
            return None, 0, 0
        inferred = self.inferred.calls.get((id(call.node.graph), call.node.name)) if (
            self.inferred is not None and call.node.graph is not None
        ) else None  # fmt: skip
        body_types = InferredTypes({id(function.graph): inferred}) if inferred else None
        self._calls.append(key)
        try:
            inner_rows = self.rows(function.graph, None, weights, arguments, body_types)
        finally:
            self._calls.pop()
        values = [r["macs"] for r in inner_rows]
        macs = None if None in values else sum(v or 0 for v in values)
        self._call_macs[memo] = macs
        return (
            macs,
            sum(r["params"] for r in inner_rows),
            sum(r["param_bytes"] for r in inner_rows),
        )


def _loop_trips(node: Node, view: NodeView, body_macs: int) -> int | None:
    """A Loop's MACs: its body × a constant trip count ``M`` (a negative one runs 0
    times). With a condition input that is not the constant True, ``M`` is only a bound
    (torch writes ``M = INT64_MAX`` beside a computed condition): unknown then, as is
    an ``M`` beyond 2^31."""
    trips = view.constant(0)
    if trips is None or trips > MAX_LOOP_TRIPS:
        return None
    if view.has_input(1) and view.constant(1) != 1:
        return None
    return max(0, trips) * body_macs


def _reason(exc: BaseException) -> str:
    """Why a rule failed, in one short line."""
    text = str(exc) if isinstance(exc, BadAttribute) else f"{type(exc).__name__}: {exc}"
    return text[:200]


def _op_name(node: Node) -> str:
    domain = "" if node.domain in ("", "ai.onnx") else node.domain
    return f"{domain}::{node.op_type}" if domain else node.op_type


def _scan_length(node: Node, view: NodeView) -> int | None:
    """Iterations of a Scan: the first scanned input's length along its scan axis."""
    count = view.attr("num_scan_inputs")
    if not isinstance(count, int) or count < 1 or count > len(node.inputs):
        return None
    first = len(node.inputs) - count
    shape = view.input(first)
    axes = view.attr("scan_input_axes") or [0]
    axis = axes[0] if isinstance(axes[0], int) else 0
    if shape is None or not -len(shape) <= axis < len(shape):
        return None
    return shape[axis]


class _Weights:
    """Name → weight tensor visible in a graph: its own, then the enclosing graphs'."""

    def __init__(self, graph: Graph, outer: _Weights | None) -> None:
        self._own: dict[str, Tensor] = dict(graph.initializers)
        for name, sparse in graph.sparse_initializers.items():
            self._own.setdefault(name, sparse.values)
        for name, tensor in graph.constants().items():
            self._own.setdefault(name, tensor)
        self._outer = outer

    def get(self, name: str) -> Tensor | None:
        found = self._own.get(name)
        if found is None and self._outer is not None:
            return self._outer.get(name)
        return found
