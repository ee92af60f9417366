"""Text inside the drawn boxes: folded weights, tiny constants (slot names: the format's
support, :meth:`~onnx_explorer.model.FormatSupport.input_slot_names`).

Pure: no IO beyond a tiny tensor already in memory (``preview`` never touches a file).
Everything returned is model text made printable; ``dot.py`` quotes it for DOT.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ExplorerError
from ..model import Node
from ..tensors import Tensor
from ._text import dims_text

#: Attributes a Constant node may hold its value in, with the dtype each stands for.
_CONSTANT_ATTRIBUTES = (
    ("value_int", "int64"), ("value_ints", "int64"), ("value_float", "float32"),
    ("value_floats", "float32"), ("value_string", "string"), ("value_strings", "string"),
)  # fmt: skip


def tensor_label(tensor: Tensor) -> str:
    """``⟨768×3072⟩ float32``, or ``= [0, 0, 64] int64`` for a tiny tensor in memory."""
    dims = dims_text(tensor.shape)
    values = preview(tensor)
    if values is not None:
        return f"= {values} {tensor.dtype_name}"
    return f"⟨{dims}⟩ {tensor.dtype_name}" if dims else f"scalar {tensor.dtype_name}"


def preview(tensor: Tensor) -> str | None:
    """The values of a tiny tensor already in memory (never touches a file)."""
    if tensor.location.kind == "external" or tensor.nbytes > 64 or tensor.size > 8:
        return None
    if tensor.dtype.kind not in "biuf":
        return None
    try:
        values = tensor.numpy()
    except (ExplorerError, ValueError, TypeError):
        return None
    flat = np.asarray(values).reshape(-1)
    if flat.dtype.kind == "f":
        items = [f"{float(v):.4g}" for v in flat]
    else:
        items = [str(v) for v in flat.tolist()]
    text = ", ".join(items)
    return text if not tensor.shape else f"[{text}]"


def constant_attribute_label(node: Node) -> str:
    """A Constant held in ``value_int(s)`` / ``value_float(s)`` / ``value_string(s)``."""
    for key, dtype in _CONSTANT_ATTRIBUTES:
        attr = node.attributes.get(key)
        if attr is None:
            continue
        value = attr.value
        if dtype == "string":
            count = len(value) if isinstance(value, tuple) else 1
            return f"⟨{count}⟩ string" if isinstance(value, tuple) else "scalar string"
        if isinstance(value, tuple):
            if len(value) <= 8:
                return "= [" + ", ".join(_number(v) for v in value) + f"] {dtype}"
            return f"⟨{len(value)}⟩ {dtype}"
        return f"= {_number(value)} {dtype}"
    return "constant"


def _number(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
