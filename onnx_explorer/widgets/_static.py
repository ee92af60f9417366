"""The explorer's kernel-free fallback: a static summary plus the first graph picture.

Shown where widgets cannot run (GitHub, nbviewer, ``nbconvert --to html``), and, through
the package's JupyterLab / Notebook 7 extension (``labextension/``), in a saved notebook
reopened there without the widget's kernel.
"""

from __future__ import annotations

from typing import Any

from ..model import Model
from ..summary import summarize
from ..views._text import MISSING, human_bytes, human_count, model_name, shape_text
from . import _html as h

MAX_OPS = 20
#: Seconds a display waits for the first drawing, so its static copy has one.
STATIC_DRAWING_WAIT = 5.0

WIDGET_VIEW_MIMETYPE = "application/vnd.jupyter.widget-view+json"
#: The explorer's own output type. The onnx-explorer extension ranks it ahead of the widget
#: view: it shows the live widget while the kernel has its model, else the ``text/html``
#: static copy of the same output (never "Error displaying widget: model not found").
#: Front ends without the extension ignore it and keep using the two others.
VIEW_MIMETYPE = "application/vnd.onnx-explorer.view+json"


def with_static_fallback(bundle: dict[str, Any], html: str) -> dict[str, Any]:
    """A widget's mimebundle plus the static copy and the explorer's own view type."""
    bundle = dict(bundle)
    view = bundle.get(WIDGET_VIEW_MIMETYPE)
    if isinstance(view, dict):
        bundle[VIEW_MIMETYPE] = {"model_id": view.get("model_id", ""), "fallback": "text/html"}
    bundle["text/html"] = html
    return bundle


def static_html(model: Model, svg: str | None = None, note: str | None = None) -> str:
    """Escaped summary tables, then the SVG drawn by Graphviz (its text is escaped by dot)."""
    info = summarize(model)
    name = model_name(model)
    rows = [
        ("format", info["format"] + (f", IR {info['ir_version']}" if info["ir_version"] else "")),
        ("producer", f"{info['producer']} {info['producer_version']}".strip() or MISSING),
        ("opsets",
         ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in info["opsets"].items()) or MISSING),
        ("nodes", f"{info['nodes']:,} (all graphs: {info['nodes_total']:,})"),
        ("weights", f"{human_count(info['parameters'])} parameters, "
                    f"{human_bytes(info['weight_bytes'])}"),
    ]  # fmt: skip
    ios = [
        (side, v["name"], v["type"], shape_text(v["shape"], dim_chars=40))
        for side, values in (("input", info["inputs"]), ("output", info["outputs"]))
        for v in values
    ]
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
