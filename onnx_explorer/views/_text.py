"""All display text: the one module that turns model data into human-readable strings.

Shapes (:func:`shape_text` ``1×?×768``, its list variant :func:`shape_list_text`
``[1, ?, 768]``, :func:`dims_text` with long symbolic names cut), counts
(:func:`human_count` ``12.3M``), bytes (:func:`human_bytes` ``1.5 KB``), numbers
(:func:`number_text`, :func:`share_text`), :func:`shorten` and :func:`middle_cut`, the
missing mark :data:`MISSING`, printable text (:func:`as_text`) and terminal-safe text
(:func:`terminal_safe`), and the one-line texts of types, tensors and attributes. Views,
widgets and the command line format through here; analyses and readers return data
(``tests/views/test_one_home_for_text.py`` keeps formatters from growing elsewhere).

Everything returns text; whoever puts it into HTML escapes it (``html.escape``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ..model import (
    Attribute,
    Graph,
    Model,
    SparseTensor,
    ValueInfo,
    attribute_kind,
    location_name,
)
from ..tensors import Tensor

MAX_ITEMS = 16
MAX_TEXT = 400

#: What a table cell, a panel row or a diff side shows when there is no value.
MISSING = "—"

#: Characters that XML 1.0 forbids or that would move text around on screen: C0/C1
#: controls (tab and newline are handled separately), lone surrogates, the two
#: non-characters, and bidirectional controls (embeddings, overrides, isolates and the
#: LRM/RLM/ALM marks: they can disguise a name).
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff"
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def as_text(value: Any) -> str:
    """Any model string as printable ``str``: bytes (invalid UTF-8 in a name) are decoded,
    characters that could disguise or break it replaced by U+FFFD."""
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", "replace")
    elif not isinstance(value, str):
        value = str(value)
    return _UNPRINTABLE.sub("\ufffd", value)


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
    """``text`` cut to ``limit`` characters, the cut marked by an ellipsis (a limit below 1
    still shows the ellipsis alone)."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def squeezed(text: str, limit: int = 600) -> str:
    """``text`` (an error message) on one line, runs of white space as one space, cut at
    ``limit`` characters."""
    return shorten(" ".join(str(text).split()), limit)


def middle_cut(text: str, width: int) -> str:
    """``/model/enc…/self_attn/q_proj/MatMul``: a long name cut in its middle, keeping the
    start and the distinctive end (a list row cut at its right loses the node's own name)."""
    if len(text) <= width or width < 8:
        return text
    tail = (width - 1) * 2 // 3
    head = width - 1 - tail
    return f"{text[:head]}…{text[-tail:]}"


def plain_text(text: str, limit: int = 90) -> str:
    """``text`` made safe for a matplotlib label: no mathtext, control characters shown, short."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    if len(text) > limit:
        half = (limit - 1) // 2
        text = text[:half] + "…" + text[-half:]
    return text.replace("$", r"\$")


# -- shapes -----------------------------------------------------------------------------
#: Characters of one symbolic dim in :func:`dims_text` (``batch_size…``).
DIM_CHARS = 12


def dims_text(shape: Sequence[Any], dim_chars: int = DIM_CHARS) -> str:
    """``1×batch×768`` for DOT labels: dims joined by ×, unknown ones as ``?``, made
    printable and cut at ``dim_chars`` characters each."""
    return "×".join(shorten(as_text("?" if d is None else d), dim_chars) for d in shape)


def _dim(d: Any) -> str:
    return "?" if d is None else str(d)


def shape_text(shape: Sequence[Any] | None, dim_chars: int | None = None) -> str:
    """A shape as labels, panels and tables show it: ``1×?×768``, ``scalar`` for no dims,
    ``?`` for an unknown rank. With ``dim_chars`` dims are made printable and cut as in
    :func:`dims_text`; without, they are not escaped (the caller escapes for its medium)."""
    if shape is None:
        return "?"
    if not len(shape):
        return "scalar"
    if dim_chars is not None:
        return dims_text(shape, dim_chars)
    return "×".join(_dim(d) for d in shape)


def typed_shape_text(dtype: str, shape: Sequence[Any] | None) -> str:
    """``float32 ⟨768×3072⟩``: a tensor's element type and shape, as panels head it."""
    return f"{dtype} ⟨{shape_text(shape)}⟩"


def shape_list_text(shape: Sequence[Any] | None) -> str:
    """The list variant, where a shape reads as a value: ``[1, ?, 768]``, ``[]`` for no
    dims, ``?`` for an unknown rank (text summaries, attribute values)."""
    if shape is None:
        return "?"
    return "[" + ", ".join(_dim(d) for d in shape) + "]"


# -- counts, bytes and numbers ----------------------------------------------------------
def human_bytes(n: int) -> str:
    """``1.5 KB``, ``12.0 MB``: 1024-based; a declared (never stored) size past 1 EB in
    scientific notation, a corrupt file's negative size with its sign."""
    if n < 0:  # a corrupt file's negative dims: shown as declared, not a crash
        return "-" + human_bytes(-n)
    if n >= 1024**6:  # declared, never stored: a file can claim any size
        return f"{_scientific(n)} B"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if value < 1024 or unit == "PB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def human_count(n: int) -> str:
    """``12.3M``, ``1.0B``, ``950``: a count in thousands (k), millions, billions, trillions."""
    if n < 0:
        return "-" + human_count(-n)
    if n >= 999_950 * 10**9:  # would print as 1000.0T
        return _scientific(n)
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return str(n)


def _scientific(n: int) -> str:
    """``n`` as ``1.2e316`` in integer arithmetic: float(n) overflows past 1e308 and str(n)
    refuses more than 4,300 digits."""
    exponent = max(0, int((n.bit_length() - 1) * 0.30102999566398) - 1)
    digits = n // 10**exponent  # two or three leading digits
    while digits >= 100:
        digits //= 10
        exponent += 1
    return f"{digits / 10:.1f}e{exponent + 1}"


def number_text(value: object, digits: int = 6) -> str:
    """A table cell's number: ``1,234`` for ints, ``digits`` significant digits for floats,
    :data:`MISSING` for None."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | np.integer):
        return f"{value:,}"
    if isinstance(value, float | np.floating):
        return f"{float(value):.{digits}g}"
    return str(value)


def share_text(part: int, whole: int) -> str:
    """``1,234 (12.3 %)``: a count and its share of ``whole``; never rounds a non-zero share to 0
    or a partial one to 100."""
    if whole <= 0:
        return f"{part:,}"
    percent = 100.0 * part / whole
    if 0 < percent < 0.1:
        shown = "<0.1"
    elif 99.9 < percent < 100:
        shown = ">99.9"
    else:
        shown = f"{percent:.1f}"
    return f"{part:,} ({shown} %)"


def overlay_value_text(value: float | None, name: str) -> str:
    """A value in human units: bytes for ``*bytes`` series, ms for latencies, else counts."""
    if value is None:
        return "no value"
    if math.isinf(value):
        return "∞"
    lowered = name.lower()
    if "bytes" in lowered:
        return human_bytes(round(value))
    if "ms" in re.split(r"[^a-z]+", lowered) or "latency" in lowered:
        return f"{value:.3g} ms"
    if value == int(value):
        return human_count(int(value))
    return f"{value:.3g}"


def plural(count: int, noun: str) -> str:
    """``1 change``, ``1,234 changes``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


# -- model objects ----------------------------------------------------------------------
def tensor_text(tensor: Tensor, holder: str = "attribute") -> str:
    """``float32 ⟨768×3072⟩, external`` — what a tensor is without reading it.

    ``holder`` is what holds the tensor (a :class:`~onnx_explorer.model.WeightRef` kind);
    the panels show attribute tensors, hence the default."""
    where = location_name(tensor.location.kind, holder)
    return f"{typed_shape_text(tensor.dtype_name, tensor.shape)}, {where}"


TypeTextMode = Literal["none", "dtype", "shape", "both"]


def type_text(info: ValueInfo | None, mode: TypeTextMode | str = "both") -> str:
    """A value's type as edge labels and the attribute panel show it: ``float32 1×batch×768``,
    ``bool scalar``, ``seq(float32)``; ``mode`` keeps only the dtype or the shape.

    The one formatter for value types: the DOT emitter and the panels both call it, so a
    value reads the same on its edge and beside its node. "" when nothing is known.
    """
    if info is None or mode == "none":
        return ""
    dtype = info.dtype or (as_text(info.type) if info.type else "")
    shape = "" if info.shape is None else shape_text(info.shape, DIM_CHARS)
    if mode == "dtype":
        return dtype
    if mode == "shape":
        return shape
    return f"{dtype} {shape}".strip()


def value_text(info: ValueInfo | None) -> str:
    """:func:`type_text`, or ``type unknown`` when the file and inference say nothing."""
    return type_text(info) or "type unknown"


#: Longest text a node-data hover line shows.
HOVER_TEXT_LIMIT = 80


def hover_value_text(value: float | str) -> str:
    """A value as its hover line shows it (numbers to 6 digits, texts on one line)."""
    if isinstance(value, str):
        return squeezed(value, HOVER_TEXT_LIMIT)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:,.0f}" if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"


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
        return "sparse " + typed_shape_text(value.values.dtype_name, value.shape)
    if isinstance(value, Graph):
        return f"graph {value.name!r} ({len(value.nodes)} nodes)"
    if attr.kind == "SHAPE":  # dims, None for an unknown rank (TensorFlow)
        return shorten(shape_list_text(value))
    if attr.kind == "SHAPES":
        return shorten(_items(value, shape_list_text))
    if isinstance(value, str):
        return shorten(repr(value))
    if isinstance(value, tuple):
        if value and isinstance(value[0], Tensor | SparseTensor | Graph):
            return _items(
                value, lambda v: attribute_text(Attribute("", attribute_kind(attr.kind[:-1]), v))
            )
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
