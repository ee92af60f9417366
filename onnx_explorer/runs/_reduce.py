"""``reduce``: shrink a model to the smallest subgraph for which a check still holds.

The model is run once, whole, and every value it makes is kept (the golden values: memory
is that of all its activations). A candidate is a set of nodes cut out as a model of its
own (:mod:`._cut`), fed at its inputs with the golden values of those tensors, so a part
deep in the graph runs on exactly what the whole model gave it. The search, each
evaluation of the check one reported :class:`ReduceStep`:

1. the whole model (the check must hold there);
2. bisection over the topological order for the last node needed (windows ``[0, hi)``),
   then for the first (windows ``[lo, hi)``);
3. a linear pass trying to drop each node left, one at a time.

``Constant`` nodes come with the nodes that read them and are never counted as a step's
choice. Ctrl-C (``KeyboardInterrupt``) stops the search: the result holds the smallest
subgraph the check held for so far, and says it was interrupted.

The built-in checks judge what a part *makes*, so a part fed a NaN made upstream does not
pass for the culprit:

- ``"nonfinite"``: some node of the part makes a NaN or an Inf from inputs that had none
  (a weight's or a mask's ±inf passed on does not count);
- ``"ort-error"``: onnxruntime cannot build or run the part;
- ``"differs"`` (``reference=``): fed the *reference's* values at its inputs (cast to this
  model's types), some value the part makes differs from the reference's value of that
  name beyond ``atol + rtol·|reference|``. A part whose inputs would overflow this model's
  types where the reference is finite is not judged (it holds no culprit, only its
  consequence).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import onnx
from onnx import helper

from ..errors import ExplorerError
from ..model import Model
from ._cut import Wiring, build_model
from ._execute import Execution
from ._extract import _opened
from ._ort import RunError
from ._plan import Plan
from ._run import _weight_nonfinite, prepare
from ._submodel import Submodel

BuiltInCheck = Literal["nonfinite", "ort-error", "differs"]
Check = BuiltInCheck | Callable[[Submodel], bool]
Phase = Literal["whole", "end", "start", "linear"]
BUILT_IN_CHECKS: tuple[BuiltInCheck, ...] = ("nonfinite", "ort-error", "differs")


class ReduceError(ExplorerError, ValueError):
    """The check does not hold on the whole model (nothing to reduce), or was misused."""


@dataclass(frozen=True)
class ReduceStep:
    """One evaluation of the check: the nodes tried and whether the check held."""

    number: int
    phase: Phase
    nodes: int  # nodes in the candidate (its Constants included)
    first: str  # its first and last node (execution order)
    last: str
    holds: bool
    seconds: float
    note: str = ""  # why a candidate could not be judged, when it could not

    def __str__(self) -> str:
        span = self.first if self.nodes == 1 else f"{self.first} … {self.last}"
        verdict = "holds" if self.holds else "does not hold"
        note = f" ({self.note})" if self.note else ""
        return (
            f"step {self.number} [{self.phase}] {self.nodes:,} node(s) {span}: {verdict}"
            f"{note}, {self.seconds:.2f} s"
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class ReduceResult:
    """The outcome of :func:`reduce`: the smallest subgraph found and every step taken."""

    submodel: Submodel
    steps: list[ReduceStep]
    check: str
    interrupted: bool = False
    nodes_total: int = 0  # nodes of the whole model
    notes: list[str] = field(default_factory=list)

    @property
    def node_names(self) -> list[str]:
        """The names of the subgraph's nodes (the explorer's), in execution order."""
        return list(self.submodel.nodes)

    @property
    def proto(self) -> onnx.ModelProto:
        return self.submodel.proto

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the subgraph to a new file (see :meth:`Submodel.save`)."""
        return self.submodel.save(path, overwrite=overwrite)

    def __repr__(self) -> str:
        state = "interrupted" if self.interrupted else "done"
        shown = ", ".join(repr(n) for n in self.node_names[:5])
        more = f" +{len(self.node_names) - 5}" if len(self.node_names) > 5 else ""
        return (
            f"<ReduceResult {state} ({self.check}): {len(self.node_names):,} of "
            f"{self.nodes_total:,} nodes [{shown}{more}] after {len(self.steps)} steps>"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "interrupted": self.interrupted,
            "nodes_total": self.nodes_total,
            "nodes": self.node_names,
            "inputs": list(self.submodel.inputs),
            "outputs": list(self.submodel.outputs),
            "notes": list(self.notes),
            "steps": [step.to_dict() for step in self.steps],
        }


def reduce(
    model: Model | str | os.PathLike[str] | bytes | Any,
    check: Check | None = "nonfinite",
    feeds: Any = None,
    *,
    reference: Model | str | os.PathLike[str] | bytes | Any = None,
    atol: float = 1e-3,
    rtol: float = 1e-3,
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    seed: int = 0,
    vocab: int | None = None,
    linear: bool = True,
    on_step: Callable[[ReduceStep], Any] | None = None,
    progress: bool = False,
) -> ReduceResult:
    """Shrink an ONNX model to the smallest subgraph for which ``check(submodel)`` holds.

    ``check``: ``"nonfinite"`` (a node makes a NaN/Inf), ``"ort-error"`` (onnxruntime
    fails), ``"differs"`` (beyond ``atol``/``rtol`` from ``reference``, the default
    when a reference is given), or any callable taking a :class:`Submodel` (its
    ``.run()`` runs it on the golden values at its inputs) and returning a bool.
    ``feeds``/``dims``/``input_shapes``/``seed``/``vocab``: the inputs of the one full
    run, as for :func:`onnx_explorer.run`. ``on_step`` is called with each
    :class:`ReduceStep`; ``progress`` prints them. ``linear=False`` skips the linear pass.
    Ctrl-C returns the smallest subgraph found so far. See the module docstring.
    """
    if check is None or (reference is not None and check == "nonfinite"):
        check = "differs" if reference is not None else "nonfinite"
    if isinstance(check, str) and check not in BUILT_IN_CHECKS:
        raise ValueError(f"check must be one of {', '.join(BUILT_IN_CHECKS)} or a callable")
    if check == "differs" and reference is None:
        raise ValueError('check="differs" needs reference= (the model to compare with)')
    opened, close = _opened(model)
    try:
        search = _Search(opened, check, on_step, progress)
        search.prepare(feeds, reference, atol, rtol, dims, input_shapes, seed, vocab)
        return search.run(linear)
    finally:
        if close:
            opened.close()


class _Search:
    """The state of one reduction: golden values, the cut-out candidates, the steps."""

    def __init__(
        self,
        model: Model,
        check: Check,
        on_step: Callable[[ReduceStep], Any] | None,
        progress: bool,
    ) -> None:
        if not model.support.runnable:
            raise ReduceError(f"only ONNX models can be reduced; this is a {model.format} model")
        self.model = model
        self.check = check
        self.label = check if isinstance(check, str) else getattr(check, "__name__", "check")
        self.on_step = on_step
        self.progress = progress
        self.names = [node.name for node in model.graph.nodes]
        self.steps: list[ReduceStep] = []
        self.notes: list[str] = []
        self.golden: dict[str, Any] = {}
        self.reference: dict[str, Any] = {}
        self.atol = self.rtol = 0.0
        self.best: Submodel | None = None
        self.best_nodes: set[int] = set()

    # -- the one full run --------------------------------------------------------------
    def prepare(
        self,
        feeds: Any,
        reference: Any,
        atol: float,
        rtol: float,
        dims: Mapping[str, int] | None,
        input_shapes: Mapping[str, Sequence[int]] | None,
        seed: int,
        vocab: int | None,
    ) -> None:
        ready = prepare(
            self.model, feeds, dims=dims, seed=seed, vocab=vocab, input_shapes=input_shapes
        )
        self.plan: Plan = ready.plan
        self.wiring = Wiring(self.plan)
        if len(self.names) != len(self.plan.graph.node):
            self.names = [self.plan.node_label(i) for i in range(len(self.plan.graph.node))]
        self.notes += [n for n in (ready.assumed, *ready.notes) if n]
        self.golden, failure = _capture(self.plan, ready.feeds)
        if failure is not None:
            self.notes.append(f"the full run failed at node {failure!r}: values after it unknown")
        if reference is not None:
            ref_model, close = _opened(reference)
            try:
                ref_ready = prepare(
                    ref_model, ready.feeds, dims=dims, seed=seed, vocab=vocab,
                    input_shapes=input_shapes, cast=True,
                )  # fmt: skip
                self.reference, ref_failure = _capture(ref_ready.plan, ref_ready.feeds)
            finally:
                if close:
                    ref_model.close()
            if ref_failure is not None:
                self.notes.append(f"the reference failed at node {ref_failure!r}")
            self.atol, self.rtol = atol, rtol

    # -- the search ------------------------------------------------------------------
    def run(self, linear: bool) -> ReduceResult:
        order = [i for i in self.plan.order if not self.wiring.is_constant(i)]
        interrupted = False
        if not order:
            raise ReduceError("the model has no node to reduce")
        try:
            if not self._try(set(order), "whole"):
                raise ReduceError(
                    f"the check ({self.label}) does not hold on the whole model: nothing to "
                    f"reduce{self._last_note()}"
                )
            low, high = 1, len(order)  # the shortest prefix that holds
            while low < high:
                mid = (low + high) // 2
                if self._try(set(order[:mid]), "end"):
                    high = mid
                else:
                    low = mid + 1
            end = high
            low, high = 0, end - 1  # the latest start that still holds
            while low < high:
                mid = (low + high + 1) // 2
                if self._try(set(order[mid:end]), "start"):
                    low = mid
                else:
                    high = mid - 1
            kept = set(order[low:end])  # held: each bound moved only to a window that did
            if linear and len(kept) > 1:
                for index in [i for i in order if i in kept]:
                    candidate = kept - {index}
                    if candidate and self._try(candidate, "linear"):
                        kept = candidate
        except KeyboardInterrupt:
            interrupted = True
            if self.best is None:  # stopped before the whole model was judged
                self.best = self._whole_model()
        assert self.best is not None
        return ReduceResult(
            self.best,
            self.steps,
            self.label,
            interrupted=interrupted,
            nodes_total=len(self.plan.graph.node),
            notes=self.notes,
        )

    def _last_note(self) -> str:
        return f" ({self.steps[-1].note})" if self.steps and self.steps[-1].note else ""

    def _try(self, nodes: set[int], phase: Phase) -> bool:
        """Evaluate the check on the part made of ``nodes`` (and their Constants)."""
        began = time.perf_counter()
        members = self.wiring.with_constants(nodes)
        note = ""
        holds = False
        try:
            candidate = self._candidate(members)
            holds = self._holds(candidate)
        except _NotJudged as exc:
            note = str(exc)
        ordered = sorted(members, key=self.wiring.position.__getitem__)
        step = ReduceStep(
            len(self.steps) + 1, phase, len(members), self.names[ordered[0]],
            self.names[ordered[-1]], holds, time.perf_counter() - began, note,
        )  # fmt: skip
        self.steps.append(step)
        if holds and (self.best is None or len(members) <= len(self.best.nodes)):
            self.best, self.best_nodes = candidate, set(nodes)
        if self.progress:
            print(step, file=sys.stderr)
        if self.on_step is not None:
            self.on_step(step)
        return holds

    def _candidate(self, members: set[int]) -> Submodel:
        cut = self.wiring.cut(members)
        feeds: dict[str, Any] = {}
        for name in cut.inputs:
            value = self._feed(name)
            if value is None:
                raise _NotJudged(f"no value for {name!r} from the full run")
            feeds[name] = value
        names = [self.names[i] for i in cut.nodes]

        def type_of(name: str) -> onnx.ValueInfoProto:
            value = feeds.get(name, self.golden.get(name))
            return onnx.ValueInfoProto(name=name) if value is None else _value_type(name, value)

        doc = f"reduced by onnx_explorer ({self.label}): {len(names):,} node(s)"
        proto = build_model(self.plan, cut, type_of, doc_string=doc)
        return Submodel(
            proto, self.plan.base_dir, names, list(cut.inputs), list(cut.outputs),
            source=self.model.path, feeds=feeds,
        )  # fmt: skip

    def _whole_model(self) -> Submodel:
        members = set(range(len(self.plan.graph.node)))
        try:
            return self._candidate(members)
        except _NotJudged:  # interrupted before the full run gave its values
            cut = self.wiring.cut(members)
            proto = build_model(self.plan, cut, lambda n: onnx.ValueInfoProto(name=n))
            return Submodel(
                proto, self.plan.base_dir, list(self.names), list(cut.inputs),
                list(cut.outputs), source=self.model.path,
            )  # fmt: skip

    def _feed(self, name: str) -> Any:
        ours = self.golden.get(name)
        if self.check != "differs" or name not in self.reference:
            return ours
        theirs = self.reference[name]
        if ours is None or isinstance(ours, list) or isinstance(theirs, list):
            return theirs if ours is None else ours
        fed = np.asarray(theirs)
        if fed.dtype != ours.dtype and fed.dtype.kind == "f" and ours.dtype.kind == "f":
            with np.errstate(over="ignore"):
                fed = fed.astype(ours.dtype)
            if np.any(~np.isfinite(fed) & np.isfinite(theirs)):
                raise _NotJudged(f"the reference's {name!r} overflows {ours.dtype}")
        return fed

    # -- the checks ------------------------------------------------------------------
    def _holds(self, candidate: Submodel) -> bool:
        check = self.check
        if check == "ort-error":
            try:
                candidate.run()
            except RunError:
                return True
            return False
        if check == "nonfinite":
            return self._makes_nonfinite(candidate)
        if check == "differs":
            return self._differs(candidate)
        assert callable(check)
        try:
            return bool(check(candidate))
        except RunError as exc:
            raise _NotJudged(f"the check could not run it: {str(exc)[:200]}") from None

    def _run_all(self, candidate: Submodel) -> dict[str, Any]:
        try:
            return candidate.run(every_value=True)
        except RunError as exc:
            raise _NotJudged(f"onnxruntime failed: {str(exc)[:200]}") from None

    def _makes_nonfinite(self, candidate: Submodel) -> bool:
        values = {**candidate.feeds, **self._run_all(candidate)}
        stored = {t.name: t for t in candidate.proto.graph.initializer}
        for node in candidate.proto.graph.node:
            if node.op_type in ("Constant", "ConstantOfShape"):
                continue
            had_nan = had_inf = False
            for name in node.input:
                if not name:
                    continue
                if name in values:
                    nan, inf = _nonfinite(values[name])
                elif name in stored:
                    nan, inf = _weight_nonfinite(stored[name])
                else:  # read by a body from outside the part: judged as given
                    nan = inf = False
                had_nan, had_inf = had_nan or nan, had_inf or inf
            for name in node.output:
                if name and name in values:
                    nan, inf = _nonfinite(values[name])
                    if (nan and not had_nan) or (inf and not (had_inf or had_nan)):
                        return True
        return False

    def _differs(self, candidate: Submodel) -> bool:
        values = self._run_all(candidate)
        compared = 0
        for name, value in values.items():
            expected = self.reference.get(name)
            if expected is None or isinstance(value, list) or isinstance(expected, list):
                continue
            ours, theirs = np.asarray(value), np.asarray(expected)
            if ours.shape != theirs.shape:
                continue
            compared += 1
            if not _close(ours, theirs, self.atol, self.rtol):
                return True
        if not compared:
            raise _NotJudged("no value to compare with the reference")
        return False


class _NotJudged(Exception):
    """A candidate the check cannot be asked about (its inputs unknown, it cannot run)."""


def _capture(the_plan: Plan, feeds: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Every value one full run makes (owned copies), and the node it failed at."""
    execution = Execution(the_plan, dict(feeds))
    golden: dict[str, Any] = {name: value for name, value in feeds.items()}
    values = execution.values()
    try:
        for produced in values:
            value = produced.value
            golden[produced.name] = (
                [np.array(v) for v in value] if isinstance(value, list) else np.array(value)
            )
    finally:
        values.close()
    failure = execution.failure
    return golden, None if failure is None else failure.node


def _nonfinite(value: Any) -> tuple[bool, bool]:
    arrays = value if isinstance(value, list) else [value]
    nan = inf = False
    for item in arrays:
        array = np.asarray(item)
        if array.dtype.kind in "fc":
            nan = nan or bool(np.isnan(array).any())
            inf = inf or bool(np.isinf(array).any())
    return nan, inf


def _close(ours: np.ndarray, theirs: np.ndarray, atol: float, rtol: float) -> bool:
    if ours.dtype.kind not in "biufc" or theirs.dtype.kind not in "biufc":
        return bool(np.array_equal(ours, theirs))
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    return bool(np.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True))


def _value_type(name: str, value: Any) -> onnx.ValueInfoProto:
    """The exact type of a value the full run made (its dtype and shape)."""
    if isinstance(value, list):
        elem = np.asarray(value[0]).dtype if value else np.dtype(np.float32)
        return helper.make_tensor_sequence_value_info(
            name, helper.np_dtype_to_tensor_dtype(elem), None
        )
    array = np.asarray(value)
    return helper.make_tensor_value_info(
        name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape)
    )


__all__ = ["BUILT_IN_CHECKS", "Check", "ReduceError", "ReduceResult", "ReduceStep", "reduce"]
