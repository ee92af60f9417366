"""Plain-text renderings of model objects for panels and reports.

Everything returns text; whoever puts it into HTML escapes it (``html.escape``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..model import Attribute, Graph, SparseTensor, ValueInfo
from ..tensors import Tensor

MAX_ITEMS = 16
MAX_TEXT = 400


def shorten(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shape_text(shape: tuple[Any, ...] | None) -> str:
    if shape is None:
        return "?"
    if not shape:
        return "scalar"
    return "×".join("?" if d is None else str(d) for d in shape)


def tensor_text(tensor: Tensor) -> str:
    """``float32 ⟨768×3072⟩, external`` — what a tensor is without reading it."""
    return f"{tensor.dtype_name} ⟨{shape_text(tensor.shape)}⟩, {tensor.location.kind}"


def value_text(info: ValueInfo | None) -> str:
    if info is None:
        return "type unknown"
    if info.dtype is not None:
        return f"{info.dtype} ⟨{shape_text(info.shape)}⟩"
    return info.type or "type unknown"


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
