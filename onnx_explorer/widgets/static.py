"""The explorer's kernel-free fallback: a static summary plus the first graph picture.

Shown where widgets cannot run (GitHub, nbviewer, ``nbconvert --to html``).
"""

from __future__ import annotations

from ..model import Model
from ..summary import human_bytes, human_count, summarize
from . import html as h

MAX_OPS = 20


def static_html(model: Model, svg: str | None = None, note: str | None = None) -> str:
    """Escaped summary tables, then the SVG drawn by Graphviz (its text is escaped by dot)."""
    info = summarize(model)
    name = model.path.name if model.path else (model.graph.name or "model")
    rows = [
        ("format", info["format"] + (f", IR {info['ir_version']}" if info["ir_version"] else "")),
        ("producer", f"{info['producer']} {info['producer_version']}".strip() or "—"),
        ("opsets", ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in info["opsets"].items()) or "—"),
        ("nodes", f"{info['nodes']:,} (all graphs: {info['nodes_total']:,})"),
        ("weights", f"{human_count(info['parameters'])} parameters, "
                    f"{human_bytes(info['weight_bytes'])}"),
    ]  # fmt: skip
    ios = [("input", v["name"], v["type"], v["shape"]) for v in info["inputs"]]
    ios += [("output", v["name"], v["type"], v["shape"]) for v in info["outputs"]]
    ops = list(info["op_counts"].items())[:MAX_OPS]
    parts = [
        h.STYLE,
        '<div class="oxe-static">',
        h.title(f"onnx_explorer: {name}"),
        h.table(rows),
        h.table(ios, ["", "name", "type", "shape"]),
        h.table(ops, ["op", "count"]),
    ]
    if note:
        parts.append(h.muted(note))
    if svg:
        parts.append(f'<div style="max-height:600px;overflow:auto">{svg}</div>')
    parts.append(h.muted("Static view: run the notebook to explore interactively."))
    parts.append("</div>")
    return "".join(parts)
