"""A model's summary as plain data: what ``onnx-explorer summary`` and ``%onnx_summary`` show.

:func:`onnx_explorer.views._summary_text.format_summary` writes it as text; counts and
bytes stay numbers here (``views._text`` formats them).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from .model import Model, ValueInfo, location_name
from .weights._attribute_parameters import attribute_totals

__all__ = ["summarize"]


def _op_counts(model: Model) -> dict[str, int]:
    """Operator type → nodes in every graph: main, If/Loop/Scan bodies, model-local functions."""
    counts: Counter[str] = Counter()
    for graph in model.graphs():
        counts.update(n.qualified_op for n in graph.nodes)
    return dict(counts.most_common())


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
        where = by_location[location_name(tensor.location.kind, ref.kind)]
        where["tensors"] += 1
        where["bytes"] += nbytes
    # ai.onnx.ml models keep learned values in attribute lists (tree thresholds, SVM
    # coefficients): they are parameters too, counted apart so the split stays visible.
    in_attributes = attribute_totals(model)
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
        "op_counts": model.graph.op_counts(),  # the main graph only
        "op_counts_all_graphs": _op_counts(model),
        "inputs": [_value(v) for v in model.graph.inputs],
        "outputs": [_value(v) for v in model.graph.outputs],
        "initializers": sum(len(g.initializers) for g in graphs),
        "tensors": sum(row["tensors"] for row in by_dtype.values()),
        "parameters": parameters + in_attributes.values,
        "attribute_parameters": {
            "values": in_attributes.values,
            "nodes": in_attributes.nodes,
            "bytes": in_attributes.bytes,
        },
        "weight_bytes": weight_bytes,
        "weights_by_dtype": dict(sorted(by_dtype.items())),
        "weights_by_location": dict(sorted(by_location.items())),
    }
