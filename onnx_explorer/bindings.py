"""Concrete sizes for a graph's inputs: the caller's, the model's own hints, else a default.

Every number that depends on input sizes (MACs, activation bytes, edge shapes, the
feeds of a run) starts here, so they all agree. Only the graph's *inputs* are bound:
derived sizes (``floor(height/2 - 1/2) + 1``, ``unk__57``) are left to shape
propagation with these bound shapes, never guessed.

Where a size comes from, first match wins:

1. ``input_shapes={"x": (1, 3, 48, 192)}``: a whole shape for one input;
2. ``dims={"batch": 8, "height": 320}``: a size per symbol (also the names given to
   unnamed dims, below);
3. the model's own word: Ultralytics exports write ``imgsz`` (``[320, 320]``) in the
   metadata; a symbol fixed by another input's declared size;
4. a default by the symbol's kind, said aloud in :meth:`InputBinding.line`: batch 1,
   sequence 128, spatial 224, audio 16,000 samples, channels 3, else 1.

A dim declared ``?`` (no name) or ``-1`` (Paddle) is named ``input.axis`` (``x.2``) so
it can be bound like any symbol.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .model import Dim, Graph, Model, ValueInfo

#: Default sizes by kind of symbol (see the module docstring).
DEFAULT_SIZES = {"batch": 1, "sequence": 128, "spatial": 224, "audio": 16_000, "channels": 3}

_BATCH = re.compile(r"^(n|b|bs|batch|batch_?size|num_?batch(es)?)$|batch", re.IGNORECASE)
_SPATIAL = re.compile(
    r"^(h|w|height|width|img_?h|img_?w|image_?(height|width)|depth)$|height|width",
    re.IGNORECASE,
)
_SEQUENCE = re.compile(
    r"seq|length|len$|^l$|^t$|^s$|tokens?|time|frames|positions?|step", re.IGNORECASE
)
_AUDIO = re.compile(r"sample|audio|wave|pcm|speech|signal", re.IGNORECASE)
_AUDIO_INPUT = re.compile(r"audio|wave|pcm|speech|signal|input_values|samples", re.IGNORECASE)
_IDS_INPUT = re.compile(r"ids$|tokens?$|mask", re.IGNORECASE)


@dataclass(frozen=True)
class Assumed:
    """A symbol the caller did not bind: the size taken and why (``"spatial"``, ``"imgsz
    metadata"``...)."""

    symbol: str
    size: int
    why: str


@dataclass(frozen=True)
class InputBinding:
    """Concrete shapes of a graph's inputs and the symbol sizes behind them.

    ``shapes``: input name → shape, for every input of known rank; ``dims``: symbol →
    size (given and assumed); ``assumed``: the symbols nobody bound, in input order.
    """

    shapes: Mapping[str, tuple[int, ...]]
    dims: Mapping[str, int]
    assumed: tuple[Assumed, ...] = ()

    def line(self, command_line: bool = False) -> str:
        """One line saying which input sizes were assumed ("" when none was), with how to
        bind them from Python (``dims={...}``) or, with ``command_line``, the CLI
        (``--dims a=1,b=2``)."""
        if not self.assumed:
            return ""
        shown = ", ".join(f"{a.symbol}={a.size:,} ({a.why})" for a in self.assumed)
        if command_line:
            hint = "--dims " + ",".join(f"{a.symbol}={a.size}" for a in self.assumed[:2])
        else:
            hint = "dims={" + ", ".join(f"{a.symbol!r}: {a.size}" for a in self.assumed[:2]) + "}"
        return f"assumed input sizes: {shown}; bind them with {hint}"


def checked_sizes(dims: Mapping[str, Any] | None) -> dict[str, int]:
    """``dims`` as symbol → non-negative int; TypeError/ValueError naming the bad entry."""
    if dims is None:
        return {}
    if not isinstance(dims, Mapping):
        raise TypeError(f"dims must be a mapping of dimension name to size, not {type(dims)}")
    bound: dict[str, int] = {}
    for name, size in dims.items():
        value = _size(size)
        if value is None:
            raise ValueError(
                f"dims[{name!r}] must be a non-negative integer, not {size!r}"
                " (e.g. dims={'batch': 1, 'sequence': 128})"
            )
        bound[str(name)] = value
    return bound


def _size(value: Any) -> int | None:
    """A non-negative integer size (numpy integers too; not bool), else None."""
    if isinstance(value, bool | np.bool_):
        return None
    try:
        size = operator.index(value)
    except TypeError:
        return None
    return size if size >= 0 else None


def _checked_shapes(
    input_shapes: Mapping[str, Sequence[int]] | None, inputs: Mapping[str, ValueInfo]
) -> dict[str, tuple[int, ...]]:
    if input_shapes is None:
        return {}
    if not isinstance(input_shapes, Mapping):
        raise TypeError(f"input_shapes must map input name to a shape, not {type(input_shapes)}")
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in input_shapes.items():
        if name not in inputs:
            known = ", ".join(inputs) or "none"
            raise ValueError(f"input_shapes names {name!r}, not an input (inputs: {known})")
        if isinstance(shape, str | bytes) or not isinstance(shape, Iterable):
            raise ValueError(
                f"input_shapes[{name!r}] must be a sequence of sizes like (1, 3, 224, 224), "
                f"not {shape!r}"
            )
        checked = [_size(s) for s in shape]
        if any(s is None for s in checked):
            raise ValueError(f"input_shapes[{name!r}] must be non-negative integers, not {shape!r}")
        sizes = tuple(s for s in checked if s is not None)
        declared = inputs[name].shape
        if declared is not None and len(declared) != len(sizes):
            raise ValueError(
                f"input_shapes[{name!r}] has rank {len(sizes)}, the input is declared "
                f"{declared} (rank {len(declared)})"
            )
        for d, s in zip(declared or (), sizes):
            if isinstance(d, int) and d >= 0 and d != s:
                raise ValueError(
                    f"input_shapes[{name!r}] = {sizes} disagrees with the declared {declared}"
                )
        shapes[name] = sizes
    return shapes


def symbol_of(info: ValueInfo, axis: int) -> str | None:
    """The symbol that stands for an input's dim (``x.2`` for an unnamed or −1 dim), or
    None for a fixed size."""
    if info.shape is None:
        return None
    dim: Dim = info.shape[axis]
    if isinstance(dim, int) and dim >= 0:
        return None
    if isinstance(dim, str) and dim and not is_placeholder(dim):
        return dim
    return f"{info.name}.{axis}"


def is_placeholder(name: str) -> bool:
    """True for a dim name that stands for "any size" rather than a shared symbol: old
    Paddle exporters write ``?`` for height and width alike."""
    return name in _PLACEHOLDERS


_PLACEHOLDERS = frozenset({"?", "-1", "None", "none", "null", "*", "dynamic"})


def _imgsz(metadata: Mapping[str, str]) -> tuple[int, int] | None:
    """Ultralytics' ``imgsz`` metadata (``[320, 320]``) as (height, width)."""
    text = metadata.get("imgsz")
    if not text or len(text) > 64:  # "[640, 640]": a hostile file's megabytes are not parsed
        return None
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value, value]
    if (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 1 << 16 for v in value)
    ):
        return int(value[0]), int(value[1])
    return None


def _kind(info: ValueInfo, axis: int, symbol: str) -> str | None:
    """What a dim stands for, from its name, else its place in the input."""
    name = symbol.rpartition(".")[2] if symbol.startswith(f"{info.name}.") else symbol
    rank = len(info.shape or ())
    named = not symbol.startswith(f"{info.name}.") and not re.match(
        r"^(unk__\d+|.*DynamicDimension.*|\?|-1|N?one)$", name
    )
    floating = (info.dtype or "").startswith(("float", "bfloat"))
    last = axis == rank - 1
    if floating and rank in (1, 2) and last and _AUDIO_INPUT.search(info.name):
        return "audio"  # an input named for audio wins: wav2vec's input_values[batch, sequence]
    if named:
        if _BATCH.search(name):
            return "batch"
        if _SPATIAL.search(name):
            return "spatial"
        if _AUDIO.search(name):
            return "audio"
        if _SEQUENCE.search(name):
            return "sequence"
    if axis == 0 and rank >= 2:
        return "batch"
    if rank == 4 and floating and axis in (2, 3):
        return "spatial"
    if rank == 4 and floating and axis == 1:
        return "channels"
    if rank == 5 and floating and axis >= 2:
        return "spatial"
    if rank in (2, 3) and axis == 1 and not floating and _IDS_INPUT.search(info.name):
        return "sequence"
    if rank == 2 and axis == 1 and not floating:
        return "sequence"
    if rank in (1, 2) and floating and axis == rank - 1 and _AUDIO_INPUT.search(info.name):
        return "audio"
    if rank == 3 and floating and axis == 1:
        return "sequence"
    return None


def bind_inputs(
    graph: Graph,
    *,
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    metadata: Mapping[str, str] | None = None,
) -> InputBinding:
    """Concrete shapes for ``graph``'s true inputs (see the module docstring).

    An input of unknown rank gets no shape unless ``input_shapes`` gives one.
    """
    return bind_values(graph.inputs, dims=dims, input_shapes=input_shapes, metadata=metadata)


def bind_values(
    values: Sequence[ValueInfo],
    *,
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    metadata: Mapping[str, str] | None = None,
) -> InputBinding:
    """:func:`bind_inputs` for a list of input types (a run's, read from its proto)."""
    given = checked_sizes(dims)
    inputs = {info.name: info for info in values}
    whole = _checked_shapes(input_shapes, inputs)
    sizes: dict[str, int] = dict(given)
    # Symbols fixed by a whole shape the caller gave, so other inputs sharing them agree.
    for name, whole_shape in whole.items():
        for axis, size in enumerate(whole_shape):
            symbol = symbol_of(inputs[name], axis)
            if symbol is not None:
                sizes.setdefault(symbol, size)
    imgsz = _imgsz(metadata or {})
    assumed: dict[str, Assumed] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    for info in values:
        if info.name in whole:
            shapes[info.name] = whole[info.name]
            continue
        if info.shape is None:
            continue
        shape: list[int] = []
        for axis, dim in enumerate(info.shape):
            symbol = symbol_of(info, axis)
            if symbol is None and isinstance(dim, int):
                shape.append(dim)
                continue
            assert symbol is not None  # symbol_of names every dim not a fixed size
            if symbol not in sizes:
                kind = _kind(info, axis, symbol)
                if kind == "spatial" and imgsz is not None and len(info.shape) == 4:
                    size, why = imgsz[axis - 2], "imgsz metadata"
                elif kind is not None:
                    size, why = DEFAULT_SIZES[kind], kind
                else:
                    size, why = 1, "unknown kind"
                sizes[symbol] = size
                assumed[symbol] = Assumed(symbol, size, why)
            shape.append(sizes[symbol])
        shapes[info.name] = tuple(shape)
    return InputBinding(shapes, sizes, tuple(assumed.values()))


def model_binding(
    model: Model,
    *,
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> InputBinding:
    """The main graph's binding: ``dims``/``input_shapes`` over what :meth:`Model.bind`
    chose, over the model's hints and the defaults."""
    return bind_inputs(
        model.graph,
        dims={**model.bound_dims, **checked_sizes(dims)},
        input_shapes={**model.bound_input_shapes, **(input_shapes or {})},
        metadata=model.metadata_props,
    )


def is_concrete(shape: Sequence[Dim]) -> bool:
    """True when every dim of ``shape`` is a fixed size (no symbol, no ``?``, no -1)."""
    return all(isinstance(d, int) and d >= 0 for d in shape)


def has_symbols(graph: Graph) -> bool:
    """True when some input of ``graph`` has a dim that is not a fixed size."""
    return any(info.shape is not None and not is_concrete(info.shape) for info in graph.inputs)


__all__ = [
    "DEFAULT_SIZES",
    "Assumed",
    "InputBinding",
    "bind_inputs",
    "bind_values",
    "checked_sizes",
    "has_symbols",
    "is_concrete",
    "is_placeholder",
    "model_binding",
    "symbol_of",
]
