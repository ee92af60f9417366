"""``run``: run a model with onnxruntime and summarise every intermediate tensor."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from .._gc_pause import paused_gc
from ..bindings import bind_values
from ..readers.onnx._inference_child import warm_up
from ..stats import Histogram, TensorStats, array_values, histogram, summarize
from ..views._text import squeezed
from ._activation_stats import activation_histogram, activation_stats, fast_path
from ._background import Background
from ._execute import Execution, Failure, Produced, value_bytes
from ._feeds import check_feeds, generate_feeds, input_specs, load_feeds
from ._limits import (
    MEMORY_LIMIT,
    RUN_TIMEOUT,
    UNTIMED,
    Expired,
    Limits,
    RunTimeoutError,
    build_session,
    run_session,
)
from ._ort import RunError, onnxruntime, shrink_shared_arena
from ._plan import Plan, check_external, check_text, inference_mode, load_proto, plan
from ._precheck import precheck, stoppable


@dataclass
class TensorRecord:
    """What a run saw of one captured tensor."""

    name: str
    node: str  # the node that made it
    op_type: str
    dtype: str
    shape: tuple[int, ...]
    stats: TensorStats | None  # None for strings and sequences
    histogram: Histogram | None = None

    @property
    def nonfinite(self) -> bool:
        return self.stats is not None and (self.stats.nan + self.stats.inf) > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "node": self.node,
            "op_type": self.op_type,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "stats": None if self.stats is None else self.stats.to_dict(),
            "histogram": None if self.histogram is None else self.histogram.to_dict(),
        }


@dataclass
class RunResult:
    """The outcome of :func:`run`: statistics per captured tensor, in execution order."""

    tensors: dict[str, TensorRecord]
    outputs: dict[str, Any]
    values: dict[str, np.ndarray]  # only the names asked for with ``keep``
    feeds: dict[str, np.ndarray]
    not_captured: list[str]
    session_seconds: float  # building and releasing onnxruntime's sessions
    run_seconds: float  # inside onnxruntime's runs
    failure: Failure | None = None
    node_outputs: dict[str, list[str]] = field(default_factory=dict)  # node → its captured outputs
    prepare_seconds: float = 0.0  # reading the model, checking the feeds, planning the run
    assumed: str = ""  # one line: the input sizes assumed for generated feeds ("" if none)
    notes: list[str] = field(default_factory=list)  # what the run changed (Dropout mode)
    problems: list[str] = field(default_factory=list)  # nodes that made NaN/Inf themselves

    @property
    def stats(self) -> dict[str, TensorStats]:
        return {n: r.stats for n, r in self.tensors.items() if r.stats is not None}

    @property
    def first_nonfinite(self) -> str | None:
        """The first node (in execution order) with a NaN or Inf in an output, or None."""
        return next((r.node for r in self.tensors.values() if r.nonfinite), None)

    @property
    def first_problem(self) -> str | None:
        """The first node that *made* a NaN or an Inf from finite values it was given
        (an overflow, a 0/0): not a Constant, nor a node passing on a ±inf fill it read
        (an attention mask's −inf), or None. See :func:`problem_nodes`."""
        return self.problems[0] if self.problems else None

    def node_values(self, reduce: str = "abs_max") -> dict[str, float]:
        """node name → the largest ``abs_max`` of its outputs (an overlay for the graph)."""
        found: dict[str, float] = {}
        for record in self.tensors.values():
            stats = record.stats
            value = None if stats is None else getattr(stats, reduce)
            if value is not None:
                found[record.node] = max(found.get(record.node, value), float(value))
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "first_nonfinite": self.first_nonfinite,
            "first_problem": self.first_problem,
            "assumed": self.assumed,
            "notes": list(self.notes),
            "failure": None if self.failure is None else vars(self.failure),
            "prepare_seconds": self.prepare_seconds,
            "session_seconds": self.session_seconds,
            "run_seconds": self.run_seconds,
            "not_captured": list(self.not_captured),
            "outputs": {n: _shape_of(v) for n, v in self.outputs.items()},
            "tensors": [r.to_dict() for r in self.tensors.values()],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=float)

    def to_model_explorer_json(
        self,
        series: str = "max abs activation",
        *,
        path: str | os.PathLike[str] | None = None,
        graph_id: str | None = None,
    ) -> dict[str, Any]:
        """One per-node series as Model Explorer node data: ``"max abs activation"`` (the
        largest |value| of a node's finite outputs) or ``"non-finite"`` (NaN + Inf counts);
        written to ``path`` (a ``.json``) when given. See :mod:`onnx_explorer.node_data`."""
        from ..node_data import RUN_NODE_SERIES, model_explorer_json, run_series, write_json

        if series not in RUN_NODE_SERIES:
            raise ValueError(f"no series {series!r}; choose one of {', '.join(RUN_NODE_SERIES)}")
        found = {s.name: s for s in run_series(self.tensors.values())}
        data = model_explorer_json(found[series], graph_id=graph_id)
        if path is not None:
            write_json(data, path)
        return data

    def to_netron_json(self, *, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """A Netron attachment: per node ``max abs activation`` and ``non-finite``, per
        value ``value min`` / ``max`` / ``mean`` / ``std``; written to ``path`` when given."""
        from ..node_data import netron_json, run_series, write_json

        data = netron_json(run_series(self.tensors.values(), values_too=True))
        if path is not None:
            write_json(data, path)
        return data

    def __repr__(self) -> str:
        state = "failed at " + self.failure.node if self.failure else "ran"
        bad, carried = self.first_problem, self.first_nonfinite
        if bad:
            finite = f", first NaN/Inf made at node {bad!r}"
        elif carried:
            finite = ", no NaN/Inf made (±inf fills passed on, e.g. attention masks)"
        else:
            finite = ", all finite"
        return f"<RunResult {state}: {len(self.tensors)} tensors captured{finite}>"


class RunFailedError(RunError):
    """The model failed part-way; ``.result`` holds the statistics captured before it."""

    def __init__(self, message: str, result: RunResult) -> None:
        super().__init__(message)
        self.result = result


def _shape_of(value: Any) -> Any:
    return list(np.shape(value)) if not isinstance(value, list) else f"sequence of {len(value)}"


Capture = str | Sequence[str]

#: Percentiles of an activation that ``summarize`` takes (one with a NaN or an Inf, or a
#: dtype the fast path does not take) come from a uniform sample of this many values.
ACTIVATION_SAMPLE = 1 << 14
#: Ops whose output holds exactly the values of their first input, rearranged: their
#: statistics and histogram are the input's (all order-free), not computed again.
REARRANGING = frozenset(
    {"Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Identity",
     "DepthToSpace", "SpaceToDepth"}
)  # fmt: skip


def prepare(
    model: Any,
    feeds: Any,
    *,
    dims: Mapping[str, int] | None,
    seed: int,
    vocab: int | None,
    cast: bool = False,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    limits: Limits = UNTIMED,
) -> Prepared:
    """The plan and the checked feeds: ``feeds`` as given, the inputs it leaves out
    generated at the sizes :mod:`onnx_explorer.bindings` chooses (``dims``, the model's
    hints, a default per kind; the given arrays fix the symbols they share). The model
    and the feeds are then checked against ``limits`` (:func:`._precheck.precheck`)."""
    onnxruntime()  # the clear error before any work
    warm_up()  # the inference worker of the pre-check starts while the model loads
    proto, base_dir = load_proto(model)
    check_text(proto.graph)  # names that are not UTF-8 (bytes) are refused, not used
    check_external(proto, base_dir)
    specs = input_specs(proto.graph)
    given = {} if feeds is None else load_feeds(feeds, limits.memory_limit)
    if cast:
        from ._feeds import cast_floats

        given = cast_floats(given, specs)
    missing = [spec for spec in specs if spec.name not in given]
    assumed = ""
    if missing:
        binding = bind_values(
            [spec.value_info() for spec in specs],
            dims=dims,
            input_shapes={**(input_shapes or {}), **_fitting_shapes(specs, given)},
            metadata={p.key: p.value for p in proto.metadata_props},
        )
        given.update(generate_feeds(missing, shapes=binding.shapes, seed=seed, vocab=vocab,
                                    max_bytes=limits.memory_limit))  # fmt: skip
        assumed = binding.line()
    check_feeds(specs, given)
    proto, notes = inference_mode(proto)
    precheck(proto, given, limits)
    generated = "; ".join(f"{s.name} {given[s.name].dtype.name}{list(given[s.name].shape)}"
                          for s in missing if s.name in given)  # fmt: skip
    return Prepared(plan(proto, base_dir), given, assumed, notes, generated)


@dataclass
class Prepared:
    """What :func:`prepare` makes: the plan, the feeds, and what was chosen for the user."""

    plan: Plan
    feeds: dict[str, np.ndarray]
    assumed: str  # the one line of assumed input sizes ("" when none)
    notes: list[str]  # what the run changes (Dropout in inference mode)
    generated: str  # the generated inputs and their shapes ("" when all were given)

    def failure_hint(self) -> str:
        """What to add to a failure's message: the generated inputs and their sizes."""
        if not self.generated:
            return ""
        hint = f"\n  generated inputs: {self.generated}"
        if self.assumed:
            hint += f"\n  {self.assumed} (or pass feeds=)"
        return hint


def _fitting_shapes(specs: list[Any], given: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Shapes of the given arrays that fit their input's declared rank and sizes (those
    that do not are left for :func:`check_feeds` to report)."""
    shapes = {}
    for spec in specs:
        value = given.get(spec.name)
        if value is None or spec.dims is None or value.ndim != len(spec.dims):
            continue
        if all(not isinstance(d, int) or d == n for d, n in zip(spec.dims, value.shape)):
            shapes[spec.name] = tuple(int(n) for n in value.shape)
    return shapes


def run(
    model: Any,
    feeds: Any = None,
    *,
    capture: Capture = "all",
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    seed: int = 0,
    keep: Iterable[str] = (),
    vocab: int | None = None,
    bins: int = 0,
    progress: bool = False,
    segment_nodes: int | None = None,
    timeout: float | None = RUN_TIMEOUT,
    memory_limit: int | None = MEMORY_LIMIT,
) -> RunResult:
    """Run ``model`` (a path, bytes or ``onnx.ModelProto``) with onnxruntime on ``feeds``
    and summarise every captured intermediate tensor.

    ``feeds``: a dict of arrays, an ``.npz`` path, or None to generate them (see
    :mod:`onnx_explorer.runs`). ``capture``: ``"all"``, or tensor names and scope
    prefixes (``"/model/layers.0/"``). ``keep``: names whose values are kept in
    ``result.values``. ``bins`` > 0: a histogram per tensor. A model that fails
    part-way raises :class:`RunFailedError` naming the node, with ``.result`` holding
    what was captured before it. ``dims`` / ``input_shapes`` size the inputs that are
    generated (see :mod:`onnx_explorer.bindings`; ``result.assumed`` says what was
    assumed). ``segment_nodes``: nodes per onnxruntime session
    (default: sized so a segment returns at most ``SEGMENT_BYTES`` of values).
    ``timeout``: seconds for the whole run (default :data:`RUN_TIMEOUT`, None: no
    limit); past it onnxruntime is stopped and :class:`RunTimeoutError` says what it
    was doing. Ctrl-C (Jupyter's "interrupt kernel") stops it the same way.
    ``memory_limit``: bytes of values onnxruntime may hold (default
    :data:`MEMORY_LIMIT`, None: no limit); a node whose outputs would exceed it is
    refused before the run (:class:`MemoryLimitError`) or fails when it allocates.
    """
    began = time.perf_counter()
    limits = Limits.start(timeout, memory_limit)
    ready = prepare(model, feeds, dims=dims, seed=seed, vocab=vocab, input_shapes=input_shapes,
                    limits=limits)  # fmt: skip
    the_plan, given = ready.plan, ready.feeds
    prepared = time.perf_counter() - began
    execution = Execution(the_plan, given, segment_nodes=segment_nodes, limits=limits)
    bar = _bar(len(the_plan.order)) if progress else None
    collector = Collector(the_plan, capture, keep, bins)
    execution.on_segment = collector.segment_done
    if bar is not None:
        collector.progress = bar.update
    # thousands of records and arrays, no cycles: collections would walk the user's heap
    values = execution.segments()
    with paused_gc():
        try:
            collector.add_all(values)  # one list of values per onnxruntime run
            result = collector.result(execution, given)
        except BaseException:  # an interrupt or our bug: it, not a statistics job, is raised
            collector.abandon()
            raise
        finally:
            values.close()  # its live values go, even when a traceback keeps it
            if bar is not None:
                bar.close()
            shrink_shared_arena()  # no value but the result's own copies is left
    result.prepare_seconds = prepared
    result.assumed, result.notes = ready.assumed, list(ready.notes)
    if execution.failure is None and _has_quantize_nodes(the_plan):
        result.outputs = _whole_model_outputs(the_plan, given, limits)
        result.notes.append(
            "outputs from one onnxruntime session over the whole model (its fused int8 "
            "kernels); intermediates from the graph as written (each Q/DQ on its own), "
            "so the two may differ by the quantization error"
        )
    if collector.nonfinite:  # (else no node made a NaN or an Inf: no 20,000-record scan)
        result.problems = problem_nodes(the_plan, result.tensors)
    if execution.failure is not None:
        raise RunFailedError(execution.failure.message + ready.failure_hint(), result)
    return result


_QUANTIZE_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})


def _has_quantize_nodes(the_plan: Plan) -> bool:
    return any(node.op_type in _QUANTIZE_OPS for node in the_plan.graph.node)


def _whole_model_outputs(
    the_plan: Plan, feeds: Mapping[str, np.ndarray], limits: Limits = UNTIMED
) -> dict[str, Any]:
    """The model's outputs from one session over it all, as a user's own session gives
    them. Capturing every value keeps onnxruntime from fusing QuantizeLinear /
    DequantizeLinear pairs into int8 kernels, which a plain session runs: the final
    outputs of a QDQ model differ by up to the quantization step between the two."""
    model = the_plan.model
    if any(stoppable(node) is not node for node in model.graph.node):
        model = onnx.ModelProto()  # its Loops made stoppable (a copy: the plan's is kept)
        model.CopyFrom(the_plan.model)
        for i, node in enumerate(model.graph.node):
            model.graph.node[i].CopyFrom(stoppable(node))
    data = model.SerializeToString()
    names = [v.name for v in the_plan.graph.output]
    try:
        session = build_session(data, the_plan.base_dir, limits)
        values = run_session(session, names, dict(feeds), limits)
    except Expired:
        raise RunTimeoutError(
            f"{limits.timeout_text()} passed while onnxruntime ran the whole model: it was stopped"
        ) from None
    except Exception as exc:  # onnxruntime's own exception types
        raise RunError(f"onnxruntime failed running the whole model: {squeezed(str(exc))}") from exc
    return {name: _owned(value) for name, value in zip(names, values)}


def _owned(value: Any) -> Any:
    return [np.array(v) for v in value] if isinstance(value, list) else np.array(value)


#: Ops whose ±inf come from the file, not from computing on data.
_CONSTANT_OPS = frozenset({"Constant", "ConstantOfShape"})


def problem_nodes(the_plan: Plan, tensors: Mapping[str, TensorRecord]) -> list[str]:
    """Nodes, in execution order, that made a NaN or an Inf none of their inputs had.

    An Inf passed on (``Where(mask, -inf, x)``, ``scores + mask``) is where the model
    means it; a Constant's is in the file. The node that first turns finite values into
    NaN/Inf is the one to look at. Inputs not captured are judged by their value when
    it is in the file (a weight, a Constant's); a node with an input that is neither is
    not judged (with ``capture=`` a subset, its inputs may have held the Inf already).
    """
    if not any(r.nonfinite for r in tensors.values()):
        return []  # (the usual case: no index of 20,000 producers to build, ~50 ms)
    graph = the_plan.graph
    producers = {out: node for node in graph.node for out in node.output if out}
    found: list[str] = []
    for record in tensors.values():
        stats = record.stats
        if stats is None or not (stats.nan or stats.inf):
            continue
        index = the_plan.node_index(record.node)
        node = graph.node[index] if index is not None else None
        if node is None or node.op_type in _CONSTANT_OPS:
            continue
        had_nan = had_inf = False
        judged = True
        for name in node.input:
            if not name:
                continue
            seen = tensors.get(name)
            if seen is not None and seen.stats is not None:
                had_nan |= seen.stats.nan > 0
                had_inf |= seen.stats.inf > 0
                continue
            stored = _stored_value(name, the_plan, producers)
            if stored is None:
                judged = False
                break
            had_nan, had_inf = had_nan or stored[0], had_inf or stored[1]
        if not judged:
            continue
        made_nan = stats.nan > 0 and not had_nan
        made_inf = stats.inf > 0 and not (had_inf or had_nan)
        if (made_nan or made_inf) and record.node not in found:
            found.append(record.node)
    return found


def _stored_value(
    name: str, the_plan: Plan, producers: Mapping[str, Any]
) -> tuple[bool, bool] | None:
    """(has NaN, has Inf) of a value the file holds (a weight, a Constant's value, a
    graph input fed as given counts as finite), or None when it was computed and not
    captured."""
    if name in the_plan.initializers:
        return _weight_nonfinite(the_plan.initializers[name])
    node = producers.get(name)
    if node is None:
        return False, False  # a graph input: the feeds are the user's
    if node.op_type == "Constant":
        for attribute in node.attribute:
            if attribute.name == "value" and attribute.HasField("t"):
                return _weight_nonfinite(attribute.t)
    return None


def _weight_nonfinite(tensor: Any) -> tuple[bool, bool]:
    """(has NaN, has Inf) of a small embedded float weight; (False, False) otherwise."""
    from onnx import numpy_helper

    if tensor.data_location == 1 or len(tensor.raw_data) > (4 << 20):
        return False, False
    try:
        array = numpy_helper.to_array(tensor)
    except Exception:  # an undecodable weight: onnxruntime would have failed on it
        return False, False
    if array.dtype.kind != "f":
        return False, False
    return bool(np.isnan(array).any()), bool(np.isinf(array).any())


def _bar(total: int) -> Any:
    from tqdm.auto import tqdm

    # leave=False: the bar goes when the run ends, so a failed run leaves no red bar
    return tqdm(total=total, unit="node", desc="run", leave=False)


class Collector:
    """Turns produced values into records, keeping values only where asked.

    Each segment's values are handed whole to a background thread, which makes their
    records (statistics, names, the values kept) while onnxruntime, which releases the
    GIL, builds and runs the next segment: the run's own thread does no work per value.
    Records keep execution order (one thread, jobs in submission order)."""

    def __init__(self, the_plan: Plan, capture: Capture, keep: Iterable[str], bins: int) -> None:
        self.plan = the_plan
        self.select = _selector(capture)  # None: every value
        self.keep = set(keep)
        self.bins = bins
        self.outputs_wanted = {v.name for v in the_plan.graph.output}
        self.background = Background()
        self.progress: Callable[[int], Any] | None = None
        # written by the background thread only, read once it has stopped:
        self.made: dict[str, TensorRecord] = {}  # in execution order
        self.outputs: dict[str, Any] = {}
        self.values: dict[str, np.ndarray] = {}
        self.node_outputs: dict[str, list[str]] = {}
        self.nonfinite = False  # a record with a NaN or an Inf was made
        # per node, made when its first output is captured: label, op type and, for a
        # rearranging op, the input it rearranges (no protobuf reads per value)
        self.nodes: dict[int, tuple[str, str, str]] = {}

    def add_segment(self, produced: list[Produced]) -> None:
        """One segment's values, in execution order (one call per onnxruntime run); waits
        while the values queued for the thread exceed its bound."""
        if produced:
            nbytes = sum([value_bytes(one.value) for one in produced])
            self.background.submit(lambda: self._records(produced), nbytes)

    def add_all(self, segments: Iterable[list[Produced]]) -> None:
        """Every value of a run, a segment at a time (no reference to the last segment's
        values outlives the loop)."""
        for made in segments:
            try:
                self.add_segment(made)
            except BaseException:  # Ctrl-C: a kept traceback holds at most the value at hand
                made.clear()
                raise

    def segment_done(self, nodes: int) -> None:
        """onnxruntime is about to run the next segment."""
        if self.progress is not None:
            self.progress(nodes)

    def _records(self, produced: list[Produced]) -> None:
        """On the background thread, a segment at a time in execution order (so the input
        of a rearranging op is always made before it)."""
        wanted, keep, select, bins = self.outputs_wanted, self.keep, self.select, self.bins
        nodes, made, node_outputs = self.nodes, self.made, self.node_outputs
        for one in produced:
            name, value = one.name, one.value
            if name in wanted or name in keep:
                # onnxruntime's arrays are views of its arena: the result's own copy lets
                # the arena hand its peak back (a view would pin its chunk as long as it
                # lives)
                held = _own_copy(value)
                if name in wanted:
                    self.outputs[name] = held
                if name in keep:
                    self.values[name] = held
            if select is not None and not select(name):
                continue
            facts = nodes.get(one.node)
            if facts is None:
                facts = nodes[one.node] = _node_facts(self.plan, one.node)
            label, op_type, source = facts
            same = made.get(source) if source else None
            if same is not None and isinstance(value, np.ndarray):  # the input's statistics
                dtype = _dtype_name(value.dtype)
                found = TensorRecord(
                    name, label, op_type, dtype, value.shape, same.stats, same.histogram
                )
            else:
                found = record(name, label, op_type, value, bins)
            made[name] = found
            stats = found.stats
            if stats is not None and (stats.nan or stats.inf):
                self.nonfinite = True
            outs = node_outputs.get(label)
            if outs is None:
                node_outputs[label] = [name]
            else:
                outs.append(name)

    def close(self) -> None:
        """Wait for every segment's records and stop the thread; a job that failed raises
        here."""
        try:
            for _ in self.background.results():
                pass
        except Exception as exc:
            raise RunError(f"computing the activations' statistics failed: {exc!r}") from exc
        finally:
            self.background.close()

    def abandon(self) -> None:
        """Stop the thread without waiting for what is queued (the run is being left)."""
        self.background.close()

    def result(self, execution: Execution, feeds: dict[str, np.ndarray]) -> RunResult:
        self.close()
        return RunResult(
            tensors=self.made,
            outputs=self.outputs,
            values=self.values,
            feeds=feeds,
            not_captured=list(self.plan.not_captured),
            session_seconds=execution.timing.sessions,
            run_seconds=execution.timing.running,
            failure=execution.failure,
            node_outputs=self.node_outputs,
        )


def _node_facts(the_plan: Plan, index: int) -> tuple[str, str, str]:
    node = the_plan.graph.node[index]
    rearranges = node.op_type in REARRANGING and node.domain in ("", "ai.onnx") and node.input
    return the_plan.node_label(index), node.op_type, node.input[0] if rearranges else ""


def _own_copy(value: Any) -> Any:
    """An array (or a sequence's arrays) in memory of its own, not onnxruntime's arena."""
    if isinstance(value, list):
        return [_own_copy(item) for item in value]
    return np.array(value) if isinstance(value, np.ndarray) else value


def record(name: str, node: str, op_type: str, value: Any, bins: int) -> TensorRecord:
    if isinstance(value, list) or not isinstance(value, np.ndarray):
        return TensorRecord(name, node, op_type, "sequence", (), None)
    stats = binned = None
    if value.dtype.kind in "biuf":
        stats = summary(value)
        if bins > 0:  # the range from the statistics: no second pass for min and max
            binned = activation_histogram(value, bins, stats)
            if binned is None:
                binned = histogram(array_values(value), bins, stats=stats)
    dtype = _dtype_name(value.dtype)
    return TensorRecord(name, node, op_type, dtype, tuple(value.shape), stats, binned)


@functools.lru_cache(maxsize=64)
def _dtype_name(dtype: np.dtype) -> str:
    return dtype.name  # (computed in Python by numpy: ~1 µs a call)


def summary(value: np.ndarray) -> TensorStats:
    """An activation's statistics: the fast path, or ``summarize`` for what it leaves."""
    found = activation_stats(value) if fast_path(value) else None
    if found is None:
        found = summarize(array_values(value), sample_size=ACTIVATION_SAMPLE)
    return found


def _selector(capture: Capture) -> Callable[[str], bool] | None:
    """Whether a value is captured, by name; None when every value is."""
    if capture == "all":
        return None
    if isinstance(capture, str):
        capture = [capture]
    names = set(capture)
    prefixes = tuple(c for c in capture if c.endswith("/"))
    return lambda name: name in names or name.startswith(prefixes)
