"""``compare``: run two models on the same feeds and compare their tensors, in step.

Both runs advance together: a value of ``a`` is held only until its partner in ``b``
is made, so memory stays near one run's, not the sum of all activations. Tensors are
matched by name, then through the structural node match of
:func:`onnx_explorer.model_diff.compare_models` (outputs of matched nodes, by position).

Per pair, in float64: ``max_abs`` = max |b − a|; ``max_rel`` = max |b − a| / |a| over
elements with a ≠ 0; ``cosine`` = a·b / (‖a‖‖b‖) (1 when both are zero); ``snr_db`` =
10·log10(Σa² / Σ(b − a)²) (inf when equal); ``within`` = every element satisfies
|b − a| ≤ atol + rtol·|a| (``numpy.allclose``), NaN only where the other is NaN too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..stats import Histogram, ValueStream, histogram
from ._execute import Execution, Failure, Produced
from ._limits import MEMORY_LIMIT, RUN_TIMEOUT, Limits
from ._ort import shrink_shared_arena
from ._run import TensorRecord, prepare, record

_BLOCK = 1 << 16


@dataclass(frozen=True)
class TensorComparison:
    a: str  # tensor name in a
    b: str  # its partner in b
    node: str  # a's node that made it
    shape: tuple[int, ...]
    max_abs: float
    max_rel: float
    cosine: float
    snr_db: float
    within: bool
    note: str = ""  # "shape differs" and the like

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["shape"] = list(self.shape)
        return found


@dataclass
class CompareResult:
    tensors: list[TensorComparison]  # in a's execution order
    atol: float
    rtol: float
    unmatched_a: list[str]
    unmatched_b: list[str]
    failure_a: Failure | None = None
    failure_b: Failure | None = None
    records_a: dict[str, TensorRecord] = field(default_factory=dict)  # a's stats, by a name
    records_b: dict[str, TensorRecord] = field(default_factory=dict)  # b's stats, by a name
    differences: dict[str, Histogram] = field(default_factory=dict)  # of b − a, with ``bins``

    @property
    def first_beyond(self) -> TensorComparison | None:
        """The first tensor (in a's order) beyond tolerance, or None."""
        return next((t for t in self.tensors if not t.within), None)

    @property
    def ok(self) -> bool:
        return self.first_beyond is None and not self.failure_a and not self.failure_b

    def node_errors(self) -> dict[str, float]:
        """a's node name → the largest max_abs of its outputs (an overlay)."""
        found: dict[str, float] = {}
        for t in self.tensors:
            found[t.node] = max(found.get(t.node, 0.0), t.max_abs)
        return found

    def to_dict(self) -> dict[str, Any]:
        first = self.first_beyond
        return {
            "atol": self.atol,
            "rtol": self.rtol,
            "first_beyond": None if first is None else first.a,
            "tensors": [t.to_dict() for t in self.tensors],
            "unmatched_a": self.unmatched_a,
            "unmatched_b": self.unmatched_b,
            "failure_a": None if self.failure_a is None else vars(self.failure_a),
            "failure_b": None if self.failure_b is None else vars(self.failure_b),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def __repr__(self) -> str:
        first = self.first_beyond
        where = f"first beyond tolerance: {first.a!r}" if first else "all within tolerance"
        return f"<CompareResult {len(self.tensors)} tensors matched, {where}>"


def compare(
    a: Any,
    b: Any,
    feeds: Any = None,
    *,
    atol: float = 1e-4,
    rtol: float = 1e-3,
    dims: Mapping[str, int] | None = None,
    seed: int = 0,
    vocab: int | None = None,
    progress: bool = False,
    bins: int = 0,
    timeout: float | None = RUN_TIMEOUT,
    memory_limit: int | None = MEMORY_LIMIT,
) -> CompareResult:
    """Run ``a`` and ``b`` on the same feeds (generated from ``a`` when None; float
    inputs cast to ``b``'s precision) and compare every matched tensor; see the module
    docstring for the measures. ``bins`` > 0: also each side's statistics and histograms
    (``records_a``/``records_b``) and a histogram of the differences. ``timeout`` (for
    both runs together) and ``memory_limit`` (for each) are :func:`run`'s."""
    if not (atol >= 0 and rtol >= 0):
        raise ValueError(f"atol and rtol must be non-negative numbers, not {atol!r}, {rtol!r}")
    limits = Limits.start(timeout, memory_limit)
    ready_a = prepare(a, feeds, dims=dims, seed=seed, vocab=vocab, limits=limits)
    plan_a, feeds_a = ready_a.plan, ready_a.feeds
    ready_b = prepare(b, feeds_a, dims=dims, seed=seed, vocab=vocab, cast=True, limits=limits)
    plan_b, feeds_b = ready_b.plan, ready_b.feeds
    pairs = _pairs(a, b, plan_a, plan_b)
    run_a = Execution(plan_a, feeds_a, limits=limits)
    run_b = Execution(plan_b, feeds_b, limits=limits)
    values_a, values_b = run_a.values(), run_b.values()
    a_side = _ASide(values_a, set(pairs.values()))
    bar = _bar(len(plan_b.order)) if progress else None
    if bar is not None:
        run_b.on_segment = bar.update
    try:
        found = _compare_all(values_b, a_side, pairs, plan_a, bins, atol, rtol)
        a_side.finish()  # to its end: a failure of a is reported too
    finally:  # no value is left (onnxruntime's arena holds them) when the arena shrinks
        values_b.close()
        values_a.close()
        a_side.held.clear()
        if bar is not None:
            bar.close()
        shrink_shared_arena()
    results = [t for _, t in sorted(found.comparisons, key=lambda item: item[0])]
    matched = {t.a for t in results}
    return CompareResult(
        results,
        atol,
        rtol,
        unmatched_a=[n for n in _outputs(plan_a) if n not in matched],
        unmatched_b=[n for n in _outputs(plan_b) if n not in pairs],
        failure_a=run_a.failure,
        failure_b=run_b.failure,
        records_a=found.records_a,
        records_b=found.records_b,
        differences=found.differences,
    )


def _difference(a: Any, b: Any) -> ValueStream | None:
    """b − a in float64, made a block at a time (for its histogram): never a whole array
    beside the two values."""
    if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray) or a.shape != b.shape:
        return None
    if a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        return None
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)

    def blocks() -> Iterator[tuple[int, np.ndarray]]:
        for start in range(0, flat_a.size, _BLOCK):
            stop = start + _BLOCK
            with np.errstate(invalid="ignore", over="ignore"):  # inf − inf: NaN, counted
                block = flat_b[start:stop].astype(np.float64) - flat_a[start:stop]
            yield start, block

    return ValueStream(blocks, flat_a.size, is_float=True)


def _bar(total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="node", desc="compare")


@dataclass
class _Found:
    """What comparing the pairs made: (a's position, comparison) and, with bins, records."""

    comparisons: list[tuple[int, TensorComparison]] = field(default_factory=list)
    records_a: dict[str, TensorRecord] = field(default_factory=dict)
    records_b: dict[str, TensorRecord] = field(default_factory=dict)
    differences: dict[str, Histogram] = field(default_factory=dict)


def _compare_all(
    values_b: Iterator[Produced],
    a_side: _ASide,
    pairs: dict[str, str],
    plan_a: Any,
    bins: int,
    atol: float,
    rtol: float,
) -> _Found:
    """Each value of b against its partner in a (no value outlives this call)."""
    found = _Found()
    names_b = {name_a: name_b for name_b, name_a in pairs.items()}
    for produced_b in values_b:
        name_a = pairs.get(produced_b.name)
        held = a_side.take(name_a) if name_a is not None else None  # made by now or soon
        if name_a is None or held is None:
            continue
        position, produced = held
        value_a, value_b = produced.value, produced_b.value
        label = plan_a.node_label(produced.node)
        if bins > 0:
            op = plan_a.graph.node[produced.node].op_type
            found.records_a[name_a] = record(name_a, label, op, value_a, bins)
            found.records_b[name_a] = record(produced_b.name, label, op, value_b, bins)
            difference = _difference(value_a, value_b)
            if difference is not None:
                found.differences[name_a] = histogram(difference, bins)
        comparison = compare_values(name_a, names_b[name_a], label, value_a, value_b, atol, rtol)
        found.comparisons.append((position, comparison))
    return found


class _ASide:
    """Model a's values, pulled only as far as b's run needs; a wanted value is held
    until its partner arrives, every other value dropped at once."""

    def __init__(self, stream: Iterator[Produced], wanted: set[str]) -> None:
        self.stream = stream
        self.wanted = wanted
        self.held: dict[str, tuple[int, Produced]] = {}
        self.position = 0

    def take(self, name: str) -> tuple[int, Produced] | None:
        if name not in self.held:
            for produced in self.stream:
                self.position += 1
                if produced.name in self.wanted:
                    self.held[produced.name] = (self.position, produced)
                if produced.name == name:
                    break
        return self.held.pop(name, None)

    def finish(self) -> None:
        for _ in self.stream:
            pass
        self.held.clear()


def _outputs(the_plan: Any) -> list[str]:
    return [n for i in the_plan.order for n in the_plan.graph.node[i].output if n]


def _pairs(a: Any, b: Any, plan_a: Any, plan_b: Any) -> dict[str, str]:
    """b tensor name → a tensor name: same names, then matched nodes' outputs."""
    names_a = set(_outputs(plan_a))
    pairs = {n: n for n in _outputs(plan_b) if n in names_a}
    try:
        from ..model_diff import compare_models
        from ..readers import load

        diff = compare_models(load(plan_a.model), load(plan_b.model), weights=False)
    except Exception:  # the structural match is a bonus: names alone still work
        return pairs
    nodes_a = {n.name: n for n in plan_a.graph.node if n.name}
    nodes_b = {n.name: n for n in plan_b.graph.node if n.name}
    taken = set(pairs.values())
    for ref_a, ref_b in diff.nodes_matched:
        if ref_a.graph != "/" or ref_b.graph != "/":
            continue
        node_a, node_b = nodes_a.get(ref_a.name), nodes_b.get(ref_b.name)
        if node_a is None or node_b is None:
            continue
        for out_a, out_b in zip(node_a.output, node_b.output):
            if out_a and out_b and out_b not in pairs and out_a not in taken:
                pairs[out_b] = out_a
                taken.add(out_a)
    return pairs


def compare_values(
    name_a: str, name_b: str, node: str, a: Any, b: Any, atol: float, rtol: float
) -> TensorComparison:
    if isinstance(a, list) or isinstance(b, list):
        return TensorComparison(name_a, name_b, node, (), math.nan, math.nan, math.nan,
                                math.nan, True, "sequence: not compared")  # fmt: skip
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        note = f"shape differs: {a.shape} vs {b.shape}"
        return TensorComparison(name_a, name_b, node, a.shape, math.inf, math.inf, math.nan,
                                -math.inf, False, note)  # fmt: skip
    if a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        equal = bool(np.array_equal(a, b))
        return TensorComparison(name_a, name_b, node, a.shape, 0.0 if equal else math.inf,
                                0.0 if equal else math.inf, math.nan, math.nan, equal,
                                f"{a.dtype.name}: compared for equality")  # fmt: skip
    fa, fb = a.reshape(-1), b.reshape(-1)
    max_abs = max_rel = 0.0
    dot = na = nb = nd = 0.0
    within = True
    for start in range(0, fa.size, _BLOCK):
        x = fa[start : start + _BLOCK].astype(np.float64)
        y = fb[start : start + _BLOCK].astype(np.float64)
        nan_x, nan_y = np.isnan(x), np.isnan(y)
        if (nan_x != nan_y).any():
            within = False
        both = ~(nan_x | nan_y)
        x, y = x[both], y[both]
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(y - x)
            d[np.equal(x, y)] = 0.0  # inf == inf is no difference
            if d.size:
                max_abs = max(max_abs, float(d.max()))
                nz = x != 0
                if nz.any():
                    max_rel = max(max_rel, float((d[nz] / np.abs(x[nz])).max()))
            if (d > atol + rtol * np.abs(x)).any():
                within = False
            # einsum, not BLAS (as model_diff's values): a BLAS dot may spin up threads,
            # 15 ms per 65k elements measured on this busy 2-core machine.
            dot += float(np.einsum("i,i->", x, y))
            na += float(np.einsum("i,i->", x, x))
            nb += float(np.einsum("i,i->", y, y))
            nd += float(np.einsum("i,i->", d, d))
    if na == 0 and nb == 0:
        cosine = 1.0
    elif na == 0 or nb == 0:
        cosine = 0.0
    else:
        cosine = dot / math.sqrt(na * nb)
    snr = _snr_db(na, nd)
    return TensorComparison(name_a, name_b, node, a.shape, max_abs, max_rel, cosine, snr, within)


def _snr_db(signal: float, noise: float) -> float:
    """10·log10(signal / noise): inf without noise, -inf when the noise is infinite or
    the signal is zero, NaN when either is NaN."""
    if math.isnan(signal) or math.isnan(noise):
        return math.nan
    if noise == 0:
        return math.inf
    ratio = signal / noise
    return (
        10 * math.log10(ratio)
        if ratio > 0 and math.isfinite(ratio)
        else (math.inf if ratio == math.inf else -math.inf)
    )
