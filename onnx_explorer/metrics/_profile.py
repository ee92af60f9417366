"""Per-node latency from an onnxruntime profile (``SessionOptions.enable_profiling``).

The profile is a JSON list of Chrome-trace events; each kernel run is an event with
``"cat": "Node"`` and ``"name": "<node name>_kernel_time"``, its duration ``dur`` in
microseconds and ``args.op_name``. onnxruntime renames nodes it fuses or inserts
(``MatMul_1`` and ``Add_2`` become ``MatMul_1_Add_2``-style fused nodes, memcpy nodes
appear): those names match no node of the model and are reported, not dropped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ModelFormatError
from ..model import Graph, Model

_SUFFIX = "_kernel_time"

#: A profile of a model must match at least this share of its names to be taken for it.
MATCH_MIN_SHARE = 0.5

#: Largest profile read (onnxruntime writes ~200 bytes per event).
PROFILE_MAX_BYTES = 2 * 1024**3


@dataclass
class Profile:
    """Mean kernel time per node, in milliseconds, over the runs in a profile.

    ``latency_ms``: node name (onnxruntime's) → mean ms per run; ``runs``: runs per
    node; ``op_types``: node name → op type onnxruntime reported. With a model:
    ``matched`` (names that are nodes of the model), ``unmatched`` (names onnxruntime
    made, by fusion or by inserting copies) and ``missing`` (model nodes with no time:
    fused away, or run as part of another kernel).
    """

    latency_ms: dict[str, float]
    runs: dict[str, int] = field(default_factory=dict)
    op_types: dict[str, str] = field(default_factory=dict)
    matched: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def series(self) -> dict[str, float]:
        """Node name → mean ms, only names of the model when one was given."""
        if self.matched or self.unmatched:
            return {name: self.latency_ms[name] for name in self.matched}
        return dict(self.latency_ms)

    @property
    def total_ms(self) -> float:
        return sum(self.latency_ms.values())

    def summary(self) -> str:
        text = f"{len(self.latency_ms)} nodes timed, {self.total_ms:.3f} ms per run"
        if self.matched or self.unmatched:
            text += (
                f"; {len(self.matched)} match the model's nodes, {len(self.unmatched)} renamed "
                f"by onnxruntime (fused or inserted), {len(self.missing)} model nodes untimed"
            )
        return text


def read_ort_profile(path: str | os.PathLike[str], model: Model | Graph | None = None) -> Profile:
    """Read an onnxruntime profile JSON into per-node mean latencies (ms per run).

    With ``model``, names are matched against its main graph's nodes; a profile that
    matches under half of them raises :class:`~onnx_explorer.errors.ModelFormatError`
    saying how many matched (it was likely written for another model).
    """
    path = Path(path)
    size = path.stat().st_size
    if size > PROFILE_MAX_BYTES:
        raise ModelFormatError(f"{path}: profile of {size:,} bytes is too large to read")
    try:
        events = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFormatError(f"{path}: not an onnxruntime profile (not JSON: {exc})") from None
    if isinstance(events, dict):  # Chrome's object form
        events = events.get("traceEvents")
    if not isinstance(events, list):
        raise ModelFormatError(f"{path}: not an onnxruntime profile (expected a list of events)")
    totals: dict[str, float] = {}
    runs: dict[str, int] = {}
    op_types: dict[str, str] = {}
    for event in events:
        timed = _kernel_event(event)
        if timed is None:
            continue
        name, dur_us, op = timed
        totals[name] = totals.get(name, 0.0) + dur_us
        runs[name] = runs.get(name, 0) + 1
        if op:
            op_types[name] = op
    latency = {name: totals[name] / runs[name] / 1000.0 for name in totals}
    profile = Profile(latency, runs, op_types)
    if model is not None:
        _match(profile, model.graph if isinstance(model, Model) else model, path)
    return profile


def _kernel_event(event: Any) -> tuple[str, float, str] | None:
    if not isinstance(event, dict) or event.get("cat") != "Node":
        return None
    name, dur = event.get("name"), event.get("dur")
    if not isinstance(name, str) or not name.endswith(_SUFFIX):
        return None
    if isinstance(dur, bool) or not isinstance(dur, int | float) or not dur >= 0:
        return None
    args = event.get("args")
    op = args.get("op_name") if isinstance(args, dict) else None
    return name[: -len(_SUFFIX)], float(dur), op if isinstance(op, str) else ""


def _match(profile: Profile, graph: Graph, path: Path) -> None:
    names = {node.name for node in graph.nodes}
    profile.matched = [n for n in profile.latency_ms if n in names]
    profile.unmatched = [n for n in profile.latency_ms if n not in names]
    timed = set(profile.matched)
    profile.missing = [node.name for node in graph.nodes if node.name not in timed]
    if profile.latency_ms and len(profile.matched) < MATCH_MIN_SHARE * len(profile.latency_ms):
        raise ModelFormatError(
            f"{path}: only {len(profile.matched)} of {len(profile.latency_ms)} timed nodes "
            f"match the model's {len(names):,} node names: is this a profile of another model?"
        )
