"""GraphDef ``AttrValue`` → :class:`Attribute`: scalars, lists, types, shapes, tensors, funcs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.text_encoding import CEscape

from ....model import Attribute, AttributeKind, Dim
from ._tensors import TensorContext, tf_type_name


@dataclass(frozen=True)
class FunctionRef:
    """A ``func`` attribute: the function a node calls and the attributes it passes."""

    name: str
    attributes: Mapping[str, Attribute] = field(default_factory=dict)

    def __str__(self) -> str:
        if not self.attributes:
            return self.name
        inner = ", ".join(f"{k}={_short(a.value)}" for k, a in self.attributes.items())
        return f"{self.name}({inner})"


def _short(value: Any, limit: int = 40) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shape_dims(shape: Any) -> tuple[Dim, ...] | None:
    """A TensorShapeProto as dims (unknown sizes → None); None for unknown rank."""
    if shape.unknown_rank:
        return None
    return tuple(int(d.size) if d.size >= 0 else None for d in shape.dim)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _text(raw: bytes) -> str:
    """An attribute string; bytes that are not text (serialized protos) shown C-escaped."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = CEscape(raw, as_utf8=False)
    else:
        if _CONTROL.search(text):
            text = CEscape(raw, as_utf8=True)
    return text


_LIST_KINDS: tuple[tuple[str, AttributeKind], ...] = (
    ("s", "STRINGS"), ("i", "INTS"), ("f", "FLOATS"), ("b", "BOOLS"), ("type", "TYPES"),
    ("shape", "SHAPES"), ("tensor", "TENSORS"), ("func", "FUNCS"),
)  # fmt: skip


class AttrReader:
    def __init__(self, ctx: TensorContext) -> None:
        self.ctx = ctx

    def attributes(self, attr_map: Any, label: str, tensor_owner: str = "") -> dict[str, Attribute]:
        return {
            key: self.attribute(key, attr_map[key], label, tensor_owner) for key in sorted(attr_map)
        }

    def attribute(self, key: str, av: Any, label: str, tensor_owner: str = "") -> Attribute:
        """``tensor_owner`` names the ``value`` tensor of a Const after its node."""
        which = av.WhichOneof("value")
        where = f"{label}.{key}"
        if which == "s":
            return Attribute(key, "STRING", _text(av.s))
        if which == "i":
            return Attribute(key, "INT", int(av.i))
        if which == "f":
            return Attribute(key, "FLOAT", float(av.f))
        if which == "b":
            return Attribute(key, "BOOL", bool(av.b))
        if which == "type":
            return Attribute(key, "TYPE", tf_type_name(int(av.type)))
        if which == "shape":
            return Attribute(key, "SHAPE", shape_dims(av.shape))
        if which == "tensor":
            name = tensor_owner if (tensor_owner and key == "value") else where
            return Attribute(key, "TENSOR", self.ctx.tensor(av.tensor, name))
        if which == "func":
            return Attribute(key, "FUNC", self.func(av.func, where))
        if which == "placeholder":
            return Attribute(key, "PLACEHOLDER", av.placeholder, ref_attr_name=av.placeholder)
        if which == "list":
            kind, values = self.list_values(av.list, where)
            return Attribute(key, kind, values)
        return Attribute(key, "UNDEFINED", None)

    def func(self, nal: Any, where: str) -> FunctionRef:
        return FunctionRef(nal.name, self.attributes(nal.attr, where))

    def list_values(self, lv: Any, where: str) -> tuple[AttributeKind, tuple[Any, ...]]:
        for field_name, kind in _LIST_KINDS:
            values = getattr(lv, field_name)
            if not len(values):
                continue
            if field_name == "s":
                return kind, tuple(_text(s) for s in values)
            if field_name == "i":
                return kind, tuple(int(v) for v in values)
            if field_name == "f":
                return kind, tuple(float(v) for v in values)
            if field_name == "b":
                return kind, tuple(bool(v) for v in values)
            if field_name == "type":
                return kind, tuple(tf_type_name(int(v)) for v in values)
            if field_name == "shape":
                return kind, tuple(shape_dims(s) for s in values)
            if field_name == "tensor":
                return kind, tuple(
                    self.ctx.tensor(t, f"{where}[{i}]") for i, t in enumerate(values)
                )
            return kind, tuple(self.func(f, f"{where}[{i}]") for i, f in enumerate(values))
        return "LIST", ()


__all__ = ["AttrReader", "FunctionRef", "shape_dims"]
