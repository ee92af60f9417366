"""Inputs for a run: given (a dict or an ``.npz``), checked against the model, or generated.

Generated feeds follow each input's declared type and shape: floats are standard
normal, integers small and non-negative (``[0, 10)``), inputs named like token ids
(``input_ids``, ``*_ids``, ``tokens``) lie in ``[0, vocab)`` when ``vocab`` is given,
masks (``*mask*``) are ones, bools random. Their shapes come from
:mod:`onnx_explorer.bindings` (``dims``, the model's hints, a default per kind).
"""

from __future__ import annotations

import math
import os
import re
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper

from ..bindings import is_placeholder
from ..errors import ExplorerError
from ..model import ValueInfo
from ..views._text import human_bytes

_IDS = re.compile(r"(^|_)(input_ids|ids|tokens?|token_ids)$|_ids$", re.IGNORECASE)


class FeedError(ExplorerError, ValueError):
    """Feeds that do not match the model's inputs (the message lists expected vs given)."""


@dataclass(frozen=True)
class InputSpec:
    """One graph input the caller must feed: name, numpy dtype, dims (int, str or None)."""

    name: str
    dtype: np.dtype | None
    dims: tuple[int | str | None, ...] | None  # None: rank unknown
    problem: str = ""  # why no dtype: "elem_type 99 is not an ONNX tensor type"

    def value_info(self) -> ValueInfo:
        """This input as the model's neutral type (what :mod:`onnx_explorer.bindings` binds)."""
        dtype = self.dtype.name if self.dtype is not None else None
        return ValueInfo(self.name, dtype or "", dtype, self.dims)

    def text(self) -> str:
        dtype = self.dtype.name if self.dtype is not None else "?"
        if self.dims is None:
            return f"{self.name}: {dtype}"
        shown = ",".join("?" if d is None else str(d) for d in self.dims)
        return f"{self.name}: {dtype}[{shown}]"


def input_specs(graph: onnx.GraphProto) -> list[InputSpec]:
    """The inputs a run must feed (inputs with an initializer default are optional: left out)."""
    defaults = {t.name for t in graph.initializer}
    specs = []
    for value in graph.input:
        if value.name in defaults:
            continue
        dtype = dims = None
        problem = ""
        if value.type.HasField("tensor_type"):
            tensor = value.type.tensor_type
            if tensor.elem_type:
                try:
                    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
                except (KeyError, TypeError, ValueError):
                    problem = f"its elem_type {tensor.elem_type} is not an ONNX tensor type"
            if tensor.HasField("shape"):
                # -1 (Paddle) and an unnamed dim both mean "any size"
                dims = tuple(
                    (d.dim_value if d.dim_value >= 0 else None)
                    if d.HasField("dim_value")
                    else (d.dim_param or None)
                    for d in tensor.shape.dim
                )
        specs.append(InputSpec(value.name, dtype, dims, problem))
    return specs


def load_feeds(feeds: Any, max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """A dict of arrays from a mapping or an ``.npz`` path (whose arrays' headers are
    checked first: sizes their file does not hold, or beyond ``max_bytes`` in all, are a
    FeedError, not an allocation)."""
    if isinstance(feeds, str | os.PathLike):
        path = os.fspath(feeds)
        try:
            _check_npz(path, max_bytes)
            with np.load(path, allow_pickle=False) as data:
                return {name: data[name] for name in data.files}
        except FeedError:
            raise
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise FeedError(f"feeds {path!r} cannot be read as .npz: {exc}") from exc
    if isinstance(feeds, Mapping):
        return {str(k): np.asarray(v) for k, v in feeds.items()}
    raise TypeError(f"feeds must be a dict of arrays or an .npz path, not {type(feeds).__name__}")


def _check_npz(path: str, max_bytes: int | None) -> None:
    """Every array's header against the bytes its member holds, and the total against
    ``max_bytes``, before numpy allocates anything (FeedError naming the array)."""
    total = 0
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            name = info.filename[: -len(".npy")]
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                elif version == (2, 0):
                    shape, _, dtype = np.lib.format.read_array_header_2_0(member)
                else:
                    read = getattr(np.lib.format, "_read_array_header")  # noqa: B009
                    shape, _, dtype = read(member, version)
                start = member.tell()
            if dtype.hasobject:
                raise FeedError(f"feeds {path!r}: array {name!r} holds Python objects (pickled)")
            declared = math.prod(shape) * dtype.itemsize
            held = info.file_size - start
            shown = f"{dtype.name}{list(shape)}"
            if declared > held:
                raise FeedError(
                    f"feeds {path!r}: array {name!r} declares {shown} = "
                    f"{human_bytes(declared)}, but its file holds {human_bytes(max(held, 0))}"
                )
            total += declared
            if max_bytes is not None and total > max_bytes:
                raise FeedError(
                    f"feeds {path!r}: array {name!r} {shown} takes the feeds to "
                    f"{human_bytes(total)}, beyond the run's memory limit of "
                    f"{human_bytes(max_bytes)} (memory_limit=)"
                )


def check_feeds(specs: list[InputSpec], feeds: Mapping[str, np.ndarray]) -> None:
    """Raise one :class:`FeedError` listing every mismatch, expected vs given."""
    problems = []
    by_name = {spec.name: spec for spec in specs}
    bound: dict[str, int] = {}
    for spec in specs:
        given = feeds.get(spec.name)
        if given is None:
            problems.append(f"missing {spec.text()}")
            continue
        shown = f"{given.dtype.name}{list(given.shape)}"
        if spec.dtype is not None and given.dtype != spec.dtype:
            problems.append(f"{spec.name}: expected {spec.text()}, given {shown} (dtype)")
            continue
        if spec.dims is None:
            continue
        if len(spec.dims) != given.ndim:
            problems.append(f"{spec.name}: expected {spec.text()}, given {shown} (rank)")
            continue
        for want, got in zip(spec.dims, given.shape):
            if isinstance(want, int) and want != got:
                problems.append(f"{spec.name}: expected {spec.text()}, given {shown} (shape)")
                break
            if isinstance(want, str) and is_placeholder(want):
                continue
            if isinstance(want, str) and bound.setdefault(want, got) != got:
                problems.append(
                    f"{spec.name}: expected {spec.text()}, given {shown} "
                    f"({want!r} is {bound[want]} in another input)"
                )
                break
    for name in feeds:
        if name not in by_name:
            expected = ", ".join(spec.name for spec in specs) or "none"
            problems.append(f"unexpected input {name!r} (the model's inputs: {expected})")
    if problems:
        raise FeedError(
            "feeds do not match the model's inputs:\n  "
            + "\n  ".join(problems)
            + "\n  expected: "
            + "; ".join(spec.text() for spec in specs)
        )


def generate_feeds(
    specs: list[InputSpec],
    *,
    shapes: Mapping[str, tuple[int, ...]],
    seed: int = 0,
    vocab: int | None = None,
    max_bytes: int | None = None,
) -> dict[str, np.ndarray]:
    """Values for every input in ``specs`` at ``shapes[name]`` (the sizes
    :mod:`onnx_explorer.bindings` chose); FeedError for one it cannot make, or when
    they would take more than ``max_bytes`` in all (checked before any is made)."""
    rng = np.random.default_rng(seed)
    planned: list[tuple[InputSpec, np.dtype, tuple[int, ...]]] = []
    total = 0
    for spec in specs:
        shape = shapes.get(spec.name)
        if spec.problem:
            raise FeedError(f"input {spec.name!r} cannot be generated: {spec.problem}")
        if spec.dtype is None or shape is None:
            raise FeedError(
                f"input {spec.text()} has no declared type or rank: pass feeds={{...}} for it"
            )
        sizes = tuple(int(d) for d in shape)
        if any(d < 0 for d in sizes):
            raise FeedError(f"input {spec.name!r} cannot be generated at {list(sizes)}")
        nbytes = math.prod(sizes) * max(spec.dtype.itemsize, 1)
        total += nbytes
        if (max_bytes is not None and total > max_bytes) or nbytes >= _NUMPY_MAX:
            limit = (
                "" if max_bytes is None else f"the run's memory limit of {human_bytes(max_bytes)}"
            )
            raise FeedError(
                f"input {spec.name!r} generated at {spec.dtype.name}{list(sizes)} would take "
                f"{human_bytes(nbytes)}"
                + (f" ({human_bytes(total)} with the inputs before it)" if total > nbytes else "")
                + f", beyond {limit or 'what numpy can allocate'} (memory_limit=): pass smaller "
                "dims= or your own feeds"
            )
        planned.append((spec, spec.dtype, sizes))
    return {
        spec.name: _values(spec.name, dtype, sizes, rng, vocab) for spec, dtype, sizes in planned
    }


_NUMPY_MAX = 1 << 62  # bytes of one array numpy can describe at all


def _values(
    name: str, dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator, vocab: int | None
) -> np.ndarray:
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        if "mask" in name.lower():
            return np.ones(shape, dtype)
        high = vocab if (vocab and _IDS.search(name)) else 10
        return rng.integers(0, high, shape).astype(dtype)
    if dtype in (np.float32, np.float64):  # made in place: no float64 copy beside it
        return rng.standard_normal(shape, dtype=dtype)
    if dtype.kind == "f" or dtype.kind == "V":
        return rng.standard_normal(shape).astype(dtype)
    raise FeedError(f"input {name!r} of dtype {dtype.name} cannot be generated: pass it in feeds")


def cast_floats(feeds: Mapping[str, np.ndarray], specs: list[InputSpec]) -> dict[str, np.ndarray]:
    """Feeds for a sibling model whose float inputs have another precision (fp16 copy)."""
    out = dict(feeds)
    for spec in specs:
        value = out.get(spec.name)
        if (
            value is not None
            and spec.dtype is not None
            and value.dtype != spec.dtype
            and value.dtype.kind == "f"
            and spec.dtype.kind == "f"
        ):
            out[spec.name] = value.astype(spec.dtype)
    return out
