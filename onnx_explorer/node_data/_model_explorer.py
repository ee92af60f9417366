"""Model Explorer's node data ("custom node data", Google AI Edge Model Explorer).

The schema, as read in ``google-ai-edge/model-explorer`` at commit c0f8dba (2026-08):
``src/server/package/src/model_explorer/node_data_builder.py`` (the Python builder: the
dataclasses ``ModelNodeData``, ``GraphNodeData``, ``NodeDataResult``, ``ThresholdItem``,
``GradientItem``) and ``src/ui/src/components/visualizer/
node_data_provider_extension_service.ts`` (how the UI reads a file:
``getNodeDataProviderData``, ``processNodeDataProviderDataForGraph``)::

    GraphNodeData = {
      "results": {<key>: {"value": number | string,      # required
                          "bgColor": css colour,          # optional, wins over the rest
                          "textColor": css colour}},      # optional
      "name": string,                                     # optional
      "thresholds": [{"value": number, "bgColor": css colour, "textColor": css colour}],
      "gradient": [{"stop": 0…1, "bgColor": colour, "textColor": colour}],  # wins over thresholds
      "hideInAggregatedStatsTable": bool, "hideInChildrenStatsTable": bool,
      "hideAggregatedStats": ["min" | "max" | "sum" | "avg"],
      "showExpandedSummaryOnGroupNode": bool,
      "showLabelCountColumnsInChildrenStatsTable": bool,
    }
    file = GraphNodeData                       # one graph: applied to the graph shown
         | {<graph id>: GraphNodeData, ...}    # ModelNodeData.graphsData, by graph id

The UI takes a file as one graph's data when it has ``results`` that is not itself a
graph id holding ``results``. A ``<key>`` is a node id or an output tensor name
(``outputsMetadata``' ``tensor_name``), mapped to the node making it. A threshold list
colours a value with the first threshold it is ≤ to; a gradient maps min … max of the
numeric values onto its stops. The ONNX adapter (``justinchuby/model-explorer-onnx``,
``main.py``) uses node names as node ids, the graph's name as graph id (``main_graph``
from torch's exporter) and ``"[value] <name>"`` for inputs and initializers.

Reading keeps the values (numbers as floats, texts as text), the fills as ``#rrggbb``
(anything else is skipped and reported) and the thresholds and gradient; the stats-table
switches are ignored. Writing makes the one-graph form (or the by-graph-id form when a
graph id is given), numbers as JSON numbers and non-finite ones as ``"inf"``/``"nan"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import NodeDataError
from ._data import (
    NONFINITE_TEXT,
    Entry,
    GradientStop,
    NodeData,
    NodeSeries,
    Problems,
    Threshold,
    Value,
    css_colour,
    json_value,
)
from ._json import MAX_TEXT

#: The gradient our writers give numeric series: the explorer's own scale (light YlOrRd).
DEFAULT_GRADIENT = (GradientStop(0.0, "#ffffcc"), GradientStop(0.5, "#fed572"),
                    GradientStop(1.0, "#fea546"))  # fmt: skip


def is_model_explorer(data: Any) -> bool:
    """Whether parsed JSON looks like Model Explorer node data (either form)."""
    if not isinstance(data, Mapping) or not data:
        return False
    if isinstance(data.get("results"), Mapping):
        return True
    return all(isinstance(g, Mapping) and "results" in g for g in data.values())


def read_model_explorer(data: Mapping[str, Any], where: str) -> NodeData:
    """Parsed Model Explorer node data → :class:`NodeData` (one series per graph)."""
    results = data.get("results")
    if isinstance(results, Mapping) and not isinstance(results.get("results"), Mapping):
        graphs: list[tuple[str, Any]] = [("", data)]
    else:
        graphs = list(data.items())
    problems = Problems()
    series = tuple(_graph(str(gid), g, where, problems) for gid, g in graphs)
    return NodeData("model-explorer", series, problems.result())


def _graph(graph_id: str, data: Any, where: str, problems: Problems) -> NodeSeries:
    at = f"{where}: graph {graph_id!r}" if graph_id else where
    if not isinstance(data, Mapping):
        raise NodeDataError(f"{at}: a graph's node data must be an object, not {_type(data)}")
    results = data.get("results")
    if not isinstance(results, Mapping):
        raise NodeDataError(f"{at}: 'results' must be an object of node id → result")
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise NodeDataError(f"{at}: 'name' must be text, not {_type(name)}")
    raw: list[tuple[str, Value, str | None]] = []
    for key, result in results.items():
        key = _text(key, at, "a key")
        if not isinstance(result, Mapping) or "value" not in result:
            raise NodeDataError(f"{at}: result {key[:80]!r} must be an object with a 'value'")
        value = _scalar(result["value"], f"{at}: result {key[:80]!r}")
        raw.append((key, value, _colour(result.get("bgColor"), key, problems)))
    numeric = any(isinstance(v, float) for _, v, _ in raw)
    entries = tuple(
        Entry(key, "id", _numeric(value) if numeric else value, colour)
        for key, value, colour in raw
    )
    return NodeSeries(
        name=name or graph_id or "value",
        entries=entries,
        graph=graph_id,
        thresholds=_thresholds(data.get("thresholds"), at, problems),
        gradient=_gradient(data.get("gradient"), at, problems),
    )


def _numeric(value: Value) -> Value:
    """In a numeric series, the texts our writers give non-finite numbers read back."""
    if isinstance(value, str):
        return NONFINITE_TEXT.get(value.strip().lower(), value)
    return value


def _thresholds(items: Any, at: str, problems: Problems) -> tuple[Threshold, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise NodeDataError(f"{at}: 'thresholds' must be a list, not {_type(items)}")
    found = []
    for item in items:
        if not isinstance(item, Mapping) or not _is_number(item.get("value")):
            raise NodeDataError(f"{at}: a threshold must be an object with a number 'value'")
        colour = _colour(item.get("bgColor"), "a threshold", problems)
        if colour is not None:
            found.append(Threshold(float(item["value"]), colour))
    return tuple(found)


def _gradient(items: Any, at: str, problems: Problems) -> tuple[GradientStop, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise NodeDataError(f"{at}: 'gradient' must be a list, not {_type(items)}")
    found = []
    for item in items:
        if not isinstance(item, Mapping) or not _is_number(item.get("stop")):
            raise NodeDataError(f"{at}: a gradient item must be an object with a number 'stop'")
        stop = float(item["stop"])
        if not 0.0 <= stop <= 1.0:
            raise NodeDataError(f"{at}: a gradient stop must be within 0…1, not {stop}")
        colour = _colour(item.get("bgColor"), "a gradient stop", problems)
        if colour is not None:
            found.append(GradientStop(stop, colour))
    return tuple(sorted(found, key=lambda s: s.stop))


def _colour(text: Any, what: str, problems: Problems) -> str | None:
    if text is None:
        return None
    colour = css_colour(text)
    if colour is None:
        problems.add(f"{what[:80]}: colour {str(text)[:40]!r} is not #rgb, #rrggbb or a CSS name")
    return colour


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and _finite(value)


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def _scalar(value: Any, at: str) -> Value:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        if not _finite(value):
            raise NodeDataError(f"{at}: value {str(value)[:40]} is not a finite number")
        return float(value)
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise NodeDataError(f"{at}: a text value of {len(value):,} characters is too long")
        return value
    raise NodeDataError(f"{at}: value must be a number or text, not {_type(value)}")


def _text(value: Any, at: str, what: str) -> str:
    if not isinstance(value, str):
        raise NodeDataError(f"{at}: {what} must be text, not {_type(value)}")
    if len(value) > MAX_TEXT:
        raise NodeDataError(f"{at}: {what} of {len(value):,} characters is too long")
    return value


def _type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")  # fmt: skip


def model_explorer_json(
    series: NodeSeries,
    *,
    graph_id: str | None = None,
    colours: bool = True,
) -> dict[str, Any]:
    """Model Explorer node data for one series: ``{"name", "results", "gradient" | …}``,
    or ``{graph_id: that}`` when ``graph_id`` is given. A numeric series without colours
    of its own gets the explorer's scale as a gradient (``colours=False``: none)."""
    results: dict[str, Any] = {}
    for entry in series.entries:
        result: dict[str, Any] = {"value": json_value(entry.value)}
        if entry.colour is not None:
            result["bgColor"] = entry.colour
        results[entry.key] = result
    graph: dict[str, Any] = {"name": series.name, "results": results}
    if series.thresholds:
        graph["thresholds"] = [{"value": json_value(t.value), "bgColor": t.colour}
                               for t in series.thresholds]  # fmt: skip
    gradient = series.gradient
    if colours and not gradient and not series.thresholds and series.numeric:
        gradient = DEFAULT_GRADIENT
    if gradient:
        graph["gradient"] = [{"stop": json_value(s.stop), "bgColor": s.colour} for s in gradient]
    return {graph_id: graph} if graph_id is not None else graph
