"""Plain-text renderings of model objects for panels and reports.

Everything returns text; whoever puts it into HTML escapes it (``html.escape``).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ..model import Attribute, Graph, Model, SparseTensor, ValueInfo, location_name
from ..tensors import Tensor
from ._quoting import as_text
from ._quoting import shorten as _cut

MAX_ITEMS = 16
MAX_TEXT = 400

# Characters a terminal acts on instead of showing: C0 controls (ESC starts escape
# sequences that set the title, clear the screen, write the clipboard), DEL, C1 controls,
# bidi marks, overrides and isolates that reorder what follows, line/paragraph separators;
# and lone surrogates, which a UTF-8 stdout cannot encode at all.
_UNSAFE = [*range(0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
           *range(0x2066, 0x206A), 0x2028, 0x2029, *range(0xD800, 0xE000)]  # fmt: skip
_ESCAPES = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _UNSAFE}
_ESCAPES.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})


def terminal_safe(text: str) -> str:
    """``text`` with every control, bidi-override and line-break character written as an
    escape (``\\x1b``, ``\\u202e``, ``\\n``): strings from a model file reach a terminal or a
    notebook's output as one visible line and never as commands to the terminal."""
    return text.translate(_ESCAPES)


def shorten(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shape_text(shape: tuple[Any, ...] | None) -> str:
    if shape is None:
        return "?"
    if not shape:
        return "scalar"
    return "×".join("?" if d is None else str(d) for d in shape)


def tensor_text(tensor: Tensor, holder: str = "attribute") -> str:
    """``float32 ⟨768×3072⟩, external`` — what a tensor is without reading it.

    ``holder`` is what holds the tensor (a :class:`~onnx_explorer.model.WeightRef` kind);
    the panels show attribute tensors, hence the default."""
    where = location_name(tensor.location.kind, holder)
    return f"{tensor.dtype_name} ⟨{shape_text(tensor.shape)}⟩, {where}"


#: Characters of one symbolic dim in :func:`type_text` (``batch_size…``).
DIM_CHARS = 12

TypeTextMode = Literal["none", "dtype", "shape", "both"]


def dims_text(shape: tuple[Any, ...], dim_chars: int = DIM_CHARS) -> str:
    """``1×batch×768``: dims joined by ×, unknown ones as ``?``, long names cut."""
    return "×".join(_cut(as_text("?" if d is None else d), dim_chars) for d in shape)


def type_text(info: ValueInfo | None, mode: TypeTextMode | str = "both") -> str:
    """A value's type as edge labels and the attribute panel show it: ``float32 1×batch×768``,
    ``bool scalar``, ``seq(float32)``; ``mode`` keeps only the dtype or the shape.

    The one formatter for value types: the DOT emitter and the panels both call it, so a
    value reads the same on its edge and beside its node. "" when nothing is known.
    """
    if info is None or mode == "none":
        return ""
    dtype = info.dtype or (as_text(info.type) if info.type else "")
    shape = "" if info.shape is None else (dims_text(info.shape) if info.shape else "scalar")
    if mode == "dtype":
        return dtype
    if mode == "shape":
        return shape
    return f"{dtype} {shape}".strip()


def value_text(info: ValueInfo | None) -> str:
    """:func:`type_text`, or ``type unknown`` when the file and inference say nothing."""
    return type_text(info) or "type unknown"


def _items(values: tuple[Any, ...], render: Any) -> str:
    shown = ", ".join(render(v) for v in values[:MAX_ITEMS])
    more = f", … ({len(values)} items)" if len(values) > MAX_ITEMS else ""
    return f"[{shown}{more}]"


def attribute_text(attr: Attribute) -> str:
    """A one-line readable value for any attribute kind."""
    value = attr.value
    if attr.ref_attr_name:
        return f"↦ caller's attribute {attr.ref_attr_name!r}"
    if isinstance(value, Tensor):
        return tensor_text(value)
    if isinstance(value, SparseTensor):
        return f"sparse {value.values.dtype_name} ⟨{shape_text(value.shape)}⟩"
    if isinstance(value, Graph):
        return f"graph {value.name!r} ({len(value.nodes)} nodes)"
    if isinstance(value, str):
        return shorten(repr(value))
    if isinstance(value, tuple):
        if value and isinstance(value[0], Tensor | SparseTensor | Graph):
            return _items(value, lambda v: attribute_text(Attribute("", attr.kind[:-1], v)))
        return shorten(_items(value, repr))
    if isinstance(value, float):
        return f"{value:g}"
    return shorten(repr(value))


def preview_values(array: np.ndarray, count: int = 12) -> str:
    """The first ``count`` values of an array as text."""
    flat = array.reshape(-1)[:count]
    if flat.dtype == object:
        items = [shorten(repr(v), 60) for v in flat]
    elif flat.dtype.kind == "c":
        items = [f"{v.real:.6g}{v.imag:+.6g}j" for v in flat]
    else:
        try:
            items = [f"{float(v):.6g}" for v in flat.astype(np.float64)]
        except (TypeError, ValueError):
            items = [repr(v) for v in flat]
    more = ", …" if array.size > count else ""
    return "[" + ", ".join(items) + more + "]"


def model_name(model: Model | None) -> str:
    """The model as the user named it: its file's name, a SavedModel by its folder (not
    ``saved_model.pb``), else the graph's name."""
    if model is None:
        return "model"
    path = model.path
    if path is None:
        return model.graph.name or "model"
    if path.name.startswith("saved_model.") and path.parent.name:
        return path.parent.name
    return path.name


def middle_cut(text: str, width: int) -> str:
    """``/model/enc…/self_attn/q_proj/MatMul``: a long name cut in its middle, keeping the
    start and the distinctive end (a list row cut at its right loses the node's own name)."""
    if len(text) <= width or width < 8:
        return text
    tail = (width - 1) * 2 // 3
    head = width - 1 - tail
    return f"{text[:head]}…{text[-tail:]}"
