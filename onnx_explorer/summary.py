"""A model's summary as plain data: what ``onnx-explorer summary`` and ``%onnx_summary`` show."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .model import Model, ValueInfo


def _value(info: ValueInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "type": info.type,
        "dtype": info.dtype,
        "shape": list(info.shape) if info.shape is not None else None,
    }


def summarize(model: Model) -> dict[str, Any]:
    """Metadata, opsets, op counts, inputs/outputs and weight totals; reads no tensor bytes."""
    by_dtype: dict[str, dict[str, int]] = defaultdict(
        lambda: {"tensors": 0, "parameters": 0, "bytes": 0}
    )
    by_location: dict[str, dict[str, int]] = defaultdict(lambda: {"tensors": 0, "bytes": 0})
    parameters = weight_bytes = 0
    for ref in model.weights():
        tensor = ref.tensor
        size, nbytes = tensor.size, tensor.nbytes
        parameters += size
        weight_bytes += nbytes
        row = by_dtype[tensor.dtype_name]
        row["tensors"] += 1
        row["parameters"] += size
        row["bytes"] += nbytes
        where = by_location[tensor.location.kind]
        where["tensors"] += 1
        where["bytes"] += nbytes
    graphs = list(model.graphs())
    return {
        "path": str(model.path) if model.path else None,
        "format": model.format,
        "ir_version": model.ir_version,
        "opsets": dict(model.opset_imports),
        "producer": model.producer_name,
        "producer_version": model.producer_version,
        "domain": model.domain,
        "model_version": model.model_version,
        "doc_string": model.doc_string,
        "metadata": dict(model.metadata_props),
        "graph_name": model.graph.name,
        "nodes": len(model.graph.nodes),
        "nodes_total": sum(len(g.nodes) for g in graphs),
        "graphs": len(graphs),
        "functions": [f"{f.domain}::{f.name}" if f.domain else f.name for f in model.functions],
        "op_counts": model.graph.op_counts(),
        "inputs": [_value(v) for v in model.graph.inputs],
        "outputs": [_value(v) for v in model.graph.outputs],
        "initializers": sum(len(g.initializers) for g in graphs),
        "tensors": sum(row["tensors"] for row in by_dtype.values()),
        "parameters": parameters,
        "weight_bytes": weight_bytes,
        "weights_by_dtype": dict(sorted(by_dtype.items())),
        "weights_by_location": dict(sorted(by_location.items())),
    }


def human_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def human_count(n: int) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return str(n)


def _shape_text(shape: list[Any] | None) -> str:
    if shape is None:
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def format_summary(info: dict[str, Any]) -> str:
    """The summary as aligned plain text."""
    lines = []
    if info["path"]:
        lines.append(f"model        {info['path']}")
    lines.append(
        f"format       {info['format']}"
        + (f" (IR {info['ir_version']})" if info["ir_version"] else "")
    )
    if info["producer"]:
        lines.append(f"producer     {info['producer']} {info['producer_version']}".rstrip())
    if info["opsets"]:
        opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in info["opsets"].items())
        lines.append(f"opsets       {opsets}")
    for key, value in info["metadata"].items():
        lines.append(f"metadata     {key} = {value}")
    lines.append(
        f"nodes        {info['nodes']} in the main graph, {info['nodes_total']} in "
        f"{info['graphs']} graph(s)"
    )
    if info["functions"]:
        lines.append(f"functions    {', '.join(info['functions'])}")
    lines.append(
        f"weights      {info['tensors']} tensors ({info['initializers']} initializers), "
        f"{human_count(info['parameters'])} parameters, {human_bytes(info['weight_bytes'])}"
    )
    for name, row in info["weights_by_dtype"].items():
        lines.append(f"  {name:<12} {row['tensors']:>6} tensors {human_bytes(row['bytes']):>10}")
    for kind, row in info["weights_by_location"].items():
        lines.append(f"  {kind:<12} {row['tensors']:>6} tensors {human_bytes(row['bytes']):>10}")
    for title, values in (("inputs", info["inputs"]), ("outputs", info["outputs"])):
        lines.append(f"{title}")
        for v in values:
            lines.append(f"  {v['name']}  {v['type'] or '?'}  {_shape_text(v['shape'])}")
    lines.append("op counts")
    for op, count in info["op_counts"].items():
        lines.append(f"  {op:<28} {count:>7}")
    return "\n".join(lines)
