"""Reading the TFLite flatbuffer through the ``tflite`` schema package, without trusting it.

The generated accessors (``tflite.Model``, ``tflite.SubGraph``...) follow whatever
offsets the file holds: a corrupt file makes them raise ``struct.error``, ``IndexError``
or ``TypeError``, read garbage (negative offsets wrap around in ``struct``), or return a
vector length of 2**31 that a loop would walk for hours. This module is the only place
that calls them, under three rules:

- every vector length is checked against the bytes the file has before anything loops
  over it (a vector of ``n`` items of ``k`` bytes needs ``n * k`` bytes);
- every element and string read is charged to one :class:`Budget` proportional to the
  file's size, so offsets that make many tables share (or cycle through) one big vector
  end in a :class:`ModelFormatError` within a fraction of a second instead of a hang;
- any exception an accessor raises becomes a :class:`ModelFormatError` naming the file
  and the table being read (:meth:`Flat.guard`).

It also reads an operator's options table generically: every scalar, enum, string and
numeric vector field of the generated options class, by its accessor methods.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ...errors import ExplorerError, ModelFormatError

#: Elements (and string bytes / 4) the parse may read, per byte of the file, plus a floor.
#: An honest file stores each element once, so its parse costs at most one unit per byte.
BUDGET_PER_BYTE = 4
BUDGET_FLOOR = 1 << 16
#: Exceptions the generated accessors raise on bytes that are no valid flatbuffer.
_ACCESSOR_ERRORS = (
    struct.error, IndexError, TypeError, ValueError, OverflowError, AttributeError,
    KeyError, RecursionError, UnicodeDecodeError, MemoryError,
)  # fmt: skip


class Flat:
    """The file's bytes, a work budget, and the place being read (for messages)."""

    def __init__(self, data: Any, what: str) -> None:
        self.data = data
        self.size = len(data)
        self.what = what
        self.budget = BUDGET_PER_BYTE * self.size + BUDGET_FLOOR
        self.where = "the model table"

    def fail(self, message: str) -> ModelFormatError:
        return ModelFormatError(f"{self.what}: {self.where}: {message}")

    @contextlib.contextmanager
    def guard(self, where: str) -> Iterator[None]:
        """Read ``where``; an accessor's exception becomes a :class:`ModelFormatError`."""
        outer, self.where = self.where, where
        try:
            yield
        except ExplorerError:
            raise
        except _ACCESSOR_ERRORS as exc:
            raise self.fail(f"corrupt flatbuffer ({type(exc).__name__}: {exc})") from None
        finally:
            self.where = outer

    def charge(self, units: int) -> None:
        self.budget -= units
        if self.budget < 0:
            raise self.fail(
                "the tables refer to far more entries than the file holds "
                "(offsets shared or looping: a corrupt or hostile file)"
            )

    def count(self, length: Any, item_bytes: int, field: str) -> int:
        """A vector's length, checked against the file's size and charged to the budget."""
        n = int(length)
        if n < 0 or n * item_bytes > self.size:
            raise self.fail(
                f"{field} declares {n} entries, more than the {self.size}-byte file can hold"
            )
        self.charge(n)
        return n

    def text(self, raw: Any) -> str:
        """A flatbuffer string (bytes or None) as text, charged to the budget."""
        if not raw:
            return ""
        if not isinstance(raw, bytes | bytearray):
            raise TypeError(f"expected a string, got {type(raw).__name__}")
        self.charge(len(raw) // 4 + 1)
        return bytes(raw).decode("utf-8", errors="replace")

    def numbers(self, table: Any, field: str, item_bytes: int) -> np.ndarray:
        """The numeric vector ``field`` of a generated table (``FieldLength``/``FieldAsNumpy``),
        copied out of the file; empty when absent."""
        n = self.count(getattr(table, f"{field}Length")(), item_bytes, field)
        if n == 0:
            return np.zeros(0)
        found = getattr(table, f"{field}AsNumpy")()
        if not isinstance(found, np.ndarray) or found.size != n:
            raise self.fail(f"{field}: vector of {n} entries could not be read")
        return np.array(found, copy=True)

    def ints(self, table: Any, field: str) -> tuple[int, ...]:
        return tuple(int(v) for v in self.numbers(table, field, 4).tolist())

    def vector_span(self, table: Any, vtable_offset: int) -> tuple[int, int] | None:
        """(absolute offset, length) of the ``[ubyte]`` vector at ``vtable_offset`` of a
        table, checked to lie inside the file; None when the field is absent."""
        tab = table._tab
        o = tab.Offset(vtable_offset)
        if not o:
            return None
        start = int(tab.Vector(o))
        length = int(tab.VectorLen(o))
        if start < 0 or length < 0 or start + length > self.size:
            raise self.fail(
                f"a data vector of {length} bytes at offset {start} runs past the end of "
                f"the file ({self.size} bytes; truncated?)"
            )
        return start, length


# -- enums and options -----------------------------------------------------------------
@cache
def enum_names(enum: str) -> dict[int, str]:
    """Value → name of a ``tflite`` enum class (``Padding``, ``TensorType``...)."""
    cls = getattr(importlib.import_module(f"tflite.{enum}"), enum)
    names: dict[int, str] = {}
    for key, value in vars(cls).items():
        if not key.startswith("_") and isinstance(value, int):
            names.setdefault(value, key)
    return names


def enum_name(enum: str, value: int) -> str:
    return enum_names(enum).get(value, str(value))


#: Options fields whose integers are values of a ``tflite`` enum (other than the field
#: named like the enum itself, e.g. ``Padding``).
_FIELD_ENUMS = {
    "FusedActivationFunction": "ActivationFunctionType",
    "QuantizedBiasType": "TensorType",
    "WeightsFormat": "FullyConnectedOptionsWeightsFormat",
    "KernelType": "LSTMKernelType",
    "Type": "LSHProjectionType",
    "Combiner": "CombinerType",
    "Mode": "MirrorPadMode",
    "OutputType": "TensorType",
    "OutType": "TensorType",
    "InDataType": "TensorType",
    "OutDataType": "TensorType",
    "IdxOutType": "TensorType",
    "KeyDtype": "TensorType",
    "ValueDtype": "TensorType",
    "ReduceFunction": "ReduceWindowFunction",
    "Algorithm": "RngAlgorithm",
    "ComparisonDirection": "StablehloComparisonDirection",
    "CompareType": "StablehloComparisonType",
    "CompositeAttributesFormat": "CustomOptionsFormat",
}
_ENUM_CLASSES = frozenset(
    {
        "ActivationFunctionType", "CombinerType", "CustomOptionsFormat", "DimensionType",
        "FullyConnectedOptionsWeightsFormat", "LSHProjectionType", "LSTMKernelType",
        "MirrorPadMode", "Padding", "ReduceWindowFunction", "RngAlgorithm",
        "StablehloComparisonDirection", "StablehloComparisonType", "StablehloPrecisionConfig",
        "TensorType",
    }
)  # fmt: skip
_SKIP_SUFFIXES = ("Length", "IsNone", "AsNumpy", "BufferHasIdentifier")
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    """``FusedActivationFunction`` → ``fused_activation_function`` (the schema's names)."""
    return _CAMEL.sub("_", name).lower()


@dataclass(frozen=True)
class Field:
    """One field of a generated options class: its accessor and how to read it."""

    accessor: str
    name: str  # the schema's snake_case name
    vector: bool
    enum: str | None
    subgraph: bool  # an index into the model's subgraphs (WHILE, IF, CALL_ONCE bodies)


@cache
def options_fields(class_name: str) -> tuple[tuple[Field, ...], type] | None:
    """The readable fields of the generated class ``class_name``, in schema order."""
    try:
        cls = getattr(importlib.import_module(f"tflite.{class_name}"), class_name)
    except (ImportError, AttributeError):
        return None
    members = vars(cls)
    fields: list[Field] = []
    for name, member in members.items():
        if (
            name.startswith("_") or name in ("Init",) or name.startswith("GetRootAs")
            or name.endswith(_SKIP_SUFFIXES) or not callable(member)
        ):  # fmt: skip
            continue
        vector = f"{name}Length" in members
        if vector and f"{name}AsNumpy" not in members:
            continue  # a vector of tables or strings: not an attribute value
        if not vector and len(inspect.signature(member).parameters) != 1:
            continue
        enum = _FIELD_ENUMS.get(name) or (name if name in _ENUM_CLASSES else None)
        if name == "PrecisionConfig":
            enum = "StablehloPrecisionConfig"
        subgraph = name.endswith("SubgraphIndex") or (
            class_name == "CallOptions" and name == "Subgraph"
        )
        fields.append(Field(name, snake(name), vector, enum, subgraph))
    return tuple(fields), cls


#: What :func:`read_options` yields: (attribute name, kind, value); kind "SUBGRAPH" holds a
#: subgraph index the builder turns into a reference by name.
OptionValue = tuple[str, str, Any]


def read_options(flat: Flat, class_name: str, table: Any) -> list[OptionValue]:
    """Every readable field of the options ``table`` of generated class ``class_name``."""
    found = options_fields(class_name)
    if found is None or table is None:
        return []
    fields, cls = found
    options = cls()
    options.Init(table.Bytes, table.Pos)
    values: list[OptionValue] = []
    for field in fields:
        if field.vector:
            array = flat.numbers(options, field.accessor, 1)
            items = array.tolist()
            if field.enum is not None:
                values.append(
                    (field.name, "STRINGS", tuple(enum_name(field.enum, int(v)) for v in items))
                )
            elif array.dtype.kind == "f":
                values.append((field.name, "FLOATS", tuple(float(v) for v in items)))
            elif array.dtype.kind == "b":
                values.append((field.name, "INTS", tuple(int(v) for v in items)))
            else:
                values.append((field.name, "INTS", tuple(int(v) for v in items)))
            continue
        value = getattr(options, field.accessor)()
        flat.charge(1)
        if field.subgraph and isinstance(value, int):
            values.append((field.name, "SUBGRAPH", int(value)))
        elif isinstance(value, bool):
            values.append((field.name, "BOOL", value))
        elif isinstance(value, int):
            if field.enum is not None:
                values.append((field.name, "STRING", enum_name(field.enum, value)))
            else:
                values.append((field.name, "INT", int(value)))
        elif isinstance(value, float):
            values.append((field.name, "FLOAT", float(value)))
        elif isinstance(value, bytes | bytearray):
            values.append((field.name, "STRING", flat.text(value)))
        # nested tables and structs (a few StableHLO options) are not attribute values
    return values


def union_class(enum: str, type_code: int) -> str | None:
    """The generated class name of a union member (``BuiltinOptions`` code 1 →
    ``Conv2DOptions``); None for NONE and for codes the schema does not define."""
    if type_code == 0:
        return None
    return enum_names(enum).get(type_code)


__all__ = [
    "Field",
    "Flat",
    "OptionValue",
    "enum_name",
    "enum_names",
    "options_fields",
    "read_options",
    "snake",
    "union_class",
]
