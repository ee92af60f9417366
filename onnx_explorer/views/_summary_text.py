"""A model's summary (:func:`onnx_explorer.summary.summarize`) as aligned plain text.

What ``onnx-explorer summary`` and ``%onnx_summary`` print. Every line goes through
:func:`~onnx_explorer.views._text.terminal_safe`: names, producer, doc strings and metadata
come from the file and may hold terminal escape sequences. Free text (doc string,
producer, metadata values) is one line each, cut at ``width`` unless ``width`` is None: one
metadata value can be a whole character dictionary of thousands of lines.
"""

from __future__ import annotations

from typing import Any

from ._text import human_bytes, human_count, shape_list_text, shorten, terminal_safe

#: Narrowest width free text is cut to, whatever the terminal says.
MIN_WIDTH = 40


def _cut(line: str, width: int | None) -> str:
    if width is None:
        return line
    return shorten(line, max(width, MIN_WIDTH))


def _op_count_lines(info: dict[str, Any]) -> list[str]:
    main: dict[str, int] = info["op_counts"]
    every: dict[str, int] = info.get("op_counts_all_graphs", main)
    if every == main:
        return ["op counts"] + [f"  {op:<28} {count:>7}" for op, count in main.items()]
    lines = [f"op counts  {'':<19} {'main':>7} {'all graphs':>10}"]
    for op, count in every.items():
        lines.append(f"  {op:<28} {main.get(op, 0):>7} {count:>10}")
    return lines


def format_summary(info: dict[str, Any], width: int | None = None) -> str:
    """The summary as aligned plain text; free-text lines cut at ``width`` characters."""
    lines = []
    if info["path"]:
        lines.append(f"model        {info['path']}")
    lines.append(
        f"format       {info['format']}"
        + (f" (IR {info['ir_version']})" if info["ir_version"] else "")
    )
    if info["producer"]:
        producer = f"producer     {info['producer']} {info['producer_version']}".rstrip()
        lines.append(_cut(terminal_safe(producer), width))
    if info.get("doc_string"):
        lines.append(_cut(terminal_safe(f"doc          {info['doc_string']}"), width))
    if info["opsets"]:
        opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in info["opsets"].items())
        lines.append(f"opsets       {opsets}")
    for key, value in info["metadata"].items():
        lines.append(_cut(terminal_safe(f"metadata     {key} = {value}"), width))
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
    in_attributes = info.get("attribute_parameters") or {}
    if in_attributes.get("values"):
        lines.append(
            f"  in attributes: {in_attributes['values']} values in {in_attributes['nodes']} "
            f"nodes {human_bytes(in_attributes['bytes']):>10}"
        )
    for title, values in (("inputs", info["inputs"]), ("outputs", info["outputs"])):
        if not values and not info["opsets"]:
            continue  # a file of weights (safetensors, GGUF) has no inputs: no empty heading
        lines.append(f"{title}")
        for v in values:
            lines.append(f"  {v['name']}  {v['type'] or '?'}  {shape_list_text(v['shape'])}")
    lines.extend(_op_count_lines(info))
    # Lines already made safe are safe again: escaping leaves no control character behind.
    return "\n".join(terminal_safe(line) for line in lines)
