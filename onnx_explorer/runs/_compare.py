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
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ._execute import Execution, Failure, Produced
from ._run import prepare

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
) -> CompareResult:
    """Run ``a`` and ``b`` on the same feeds (generated from ``a`` when None; float
    inputs cast to ``b``'s precision) and compare every matched tensor; see the module
    docstring for the measures."""
    if not (atol >= 0 and rtol >= 0):
        raise ValueError(f"atol and rtol must be non-negative numbers, not {atol!r}, {rtol!r}")
    plan_a, feeds_a = prepare(a, feeds, dims=dims, seed=seed, vocab=vocab)
    plan_b, feeds_b = prepare(b, feeds_a, dims=dims, seed=seed, vocab=vocab, cast=True)
    pairs = _pairs(a, b, plan_a, plan_b)
    run_a, run_b = Execution(plan_a, feeds_a), Execution(plan_b, feeds_b)
    wanted_a = set(pairs.values())
    b_names = dict(pairs)
    held: dict[str, Produced] = {}
    made_b: dict[str, Any] = {}
    stream_a = run_a.values()
    done_a: list[Produced] = []
    bar = _bar(len(plan_b.order)) if progress else None
    if bar is not None:
        run_b.on_segment = bar.update
    for produced in run_b.values():
        name_a = b_names.get(produced.name)
        if name_a is None:
            continue
        made_b[name_a] = produced.value
        _advance(stream_a, held, wanted_a, done_a, until=name_a)
    _advance(stream_a, held, wanted_a, done_a, until=None)
    if bar is not None:
        bar.close()
    results = []
    for produced in done_a:
        value_b = made_b.get(produced.name)
        if value_b is None:
            continue
        label = plan_a.node_label(produced.node)
        results.append(
            compare_values(produced.name, _b_name(pairs, produced.name), label,
                           produced.value, value_b, atol, rtol)
        )  # fmt: skip
    matched = {t.a for t in results}
    return CompareResult(
        results,
        atol,
        rtol,
        unmatched_a=[n for n in _outputs(plan_a) if n not in matched],
        unmatched_b=[n for n in _outputs(plan_b) if n not in pairs],
        failure_a=run_a.failure,
        failure_b=run_b.failure,
    )


def _bar(total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="node", desc="compare")


def _b_name(pairs: dict[str, str], name_a: str) -> str:
    return next(b for b, a in pairs.items() if a == name_a)


def _advance(
    stream: Iterator[Produced],
    held: dict[str, Produced],
    wanted: set[str],
    done: list[Produced],
    until: str | None,
) -> None:
    """Pull ``a``'s values until ``until`` has been made (None: to the end)."""
    if until is not None and until in held:
        return
    for produced in stream:
        if produced.name in wanted:
            held[produced.name] = produced
            done.append(produced)
        if until is not None and produced.name == until:
            return


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
            dot += float(x @ y)
            na += float(x @ x)
            nb += float(y @ y)
            nd += float(d @ d)
    if na == 0 and nb == 0:
        cosine = 1.0
    elif na == 0 or nb == 0:
        cosine = 0.0
    else:
        cosine = dot / math.sqrt(na * nb)
    snr = math.inf if nd == 0 else (10 * math.log10(na / nd) if na > 0 else -math.inf)
    return TensorComparison(name_a, name_b, node, a.shape, max_abs, max_rel, cosine, snr, within)
