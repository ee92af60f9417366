"""Netron's attachment JSON (``"signature": "netron:attachment"``).

The schema, as read in ``lutzroeder/netron`` at commit 38591e3 (2026-08),
``source/view.js``: ``metadata.Attachment.open`` (a ``.json`` file whose ``signature`` is
``netron:attachment``, opened beside a model) and ``metadata.Attachment.Container``
(``open``, ``_list``), shown by the node, value, tensor, model and graph sidebars::

    {
      "signature": "netron:attachment",
      "metadata": [item, ...],                 # shown in a "Metadata" section
      "metrics":  [item, ...],                 # shown in a "Metrics" section
    }
    item = {"kind": "model" | "graph" | "node" | "value" | "tensor",
            "target": name,                    # or "identifier": Netron's own id
            "name": the row's name, "value": any JSON value,
            "type": optional ("percentage": a fraction shown × 100 %)}

An item needs ``kind`` and ``target`` (or ``identifier``); it is keyed
``kind::target`` and matched to an object by its name's first line (a ``node`` by the
node's name, a ``value`` by the tensor's name, a ``tensor`` by the initializer's);
``model`` and ``graph`` rows use ``target: ""``. Within one target, a second row of one
name replaces the first. Netron paints nothing from it: the values are sidebar rows.

Reading: every ``node``/``value``/``tensor`` row of both containers becomes an entry of
the series named by its ``name`` (a name in both containers: the metadata one is called
``"metadata: <name>"``); ``model``/``graph`` rows, rows without a kind or target, and
kinds Netron does not know are skipped and counted. Writing: one ``metrics`` row per
entry (``kind`` ``node``, or ``value`` for an output tensor), non-finite numbers as
``"inf"``/``"nan"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import NodeDataError
from ._data import NONFINITE_TEXT, Entry, Kind, NodeData, NodeSeries, Problems, Value, json_value
from ._json import MAX_TEXT
from ._model_explorer import _scalar, _type

SIGNATURE = "netron:attachment"
CONTAINERS = ("metrics", "metadata")
_TARGET_KINDS: dict[str, Kind] = {"node": "node", "value": "value", "tensor": "tensor"}


def is_netron(data: Any) -> bool:
    return isinstance(data, Mapping) and data.get("signature") == SIGNATURE


def read_netron(data: Mapping[str, Any], where: str) -> NodeData:
    """A parsed Netron attachment → :class:`NodeData` (one series per row name)."""
    problems = Problems()
    by_name: dict[str, list[Entry]] = {}
    metric_names: set[str] = set()
    for container in CONTAINERS:
        items = data.get(container)
        if items is None:
            continue
        if not isinstance(items, list):
            raise NodeDataError(f"{where}: '{container}' must be a list, not {_type(items)}")
        for index, item in enumerate(items):
            at = f"{where}: {container}[{index}]"
            if not isinstance(item, Mapping):
                raise NodeDataError(f"{at} must be an object, not {_type(item)}")
            found = _item(item, at, problems)
            if found is None:
                continue
            name, entry = found
            if container == "metrics":
                metric_names.add(name)
            elif name in metric_names:
                name = f"metadata: {name}"
            by_name.setdefault(name, []).append(entry)
    series = tuple(_series(name, entries) for name, entries in by_name.items())
    return NodeData("netron", series, problems.result())


def _item(item: Mapping[str, Any], at: str, problems: Problems) -> tuple[str, Entry] | None:
    kind = item.get("kind")
    target = item.get("target", item.get("identifier"))
    if not isinstance(kind, str) or not isinstance(target, str):
        problems.add(f"{at}: no kind and target (Netron skips it too)")
        return None
    if kind in ("model", "graph"):
        problems.add(f"{at}: a {kind} row (not per node)")
        return None
    if kind not in _TARGET_KINDS:
        problems.add(f"{at}: kind {kind[:40]!r} is not node, value or tensor")
        return None
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise NodeDataError(f"{at}: 'name' must be non-empty text, not {_type(name)}")
    if len(name) > MAX_TEXT or len(target) > MAX_TEXT:
        raise NodeDataError(f"{at}: a name or target longer than {MAX_TEXT:,} characters")
    if "value" not in item:
        raise NodeDataError(f"{at}: no 'value'")
    value = _scalar(item["value"], at)
    key = target.split("\n", 1)[0]  # Netron matches a name's first line
    return name, Entry(key, _TARGET_KINDS[kind], value)


def _series(name: str, entries: list[Entry]) -> NodeSeries:
    if any(isinstance(e.value, float) for e in entries):
        entries = [
            Entry(e.key, e.kind, NONFINITE_TEXT.get(e.value.strip().lower(), e.value))
            if isinstance(e.value, str)
            else e
            for e in entries
        ]
    return NodeSeries(name, tuple(entries))


def netron_json(
    series: Iterable[NodeSeries], model_rows: Mapping[str, Value] | None = None
) -> dict[str, Any]:
    """A Netron attachment holding ``series`` as ``metrics`` rows (and ``model_rows``
    as model-level metrics, e.g. totals)."""
    metrics: list[dict[str, Any]] = []
    for name, value in (model_rows or {}).items():
        metrics.append({"kind": "model", "target": "", "name": name, "value": json_value(value)})
    for s in series:
        for entry in s.entries:
            kind = "node" if entry.kind in ("node", "id") else entry.kind
            value = json_value(entry.value)
            metrics.append({"kind": kind, "target": entry.key, "name": s.name, "value": value})
    return {"signature": SIGNATURE, "metadata": [], "metrics": metrics}
