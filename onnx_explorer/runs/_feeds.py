"""Inputs for a run: given (a dict or an ``.npz``), checked against the model, or generated.

Generated feeds follow each input's declared type and shape: floats are standard
normal, integers small and non-negative (``[0, 10)``), inputs named like token ids
(``input_ids``, ``*_ids``, ``tokens``) lie in ``[0, vocab)`` when ``vocab`` is given,
masks (``*mask*``) are ones, bools random. Their shapes come from
:mod:`onnx_explorer.bindings` (``dims``, the model's hints, a default per kind).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper

from ..bindings import is_placeholder
from ..errors import ExplorerError
from ..model import ValueInfo

_IDS = re.compile(r"(^|_)(input_ids|ids|tokens?|token_ids)$|_ids$", re.IGNORECASE)


class FeedError(ExplorerError, ValueError):
    """Feeds that do not match the model's inputs (the message lists expected vs given)."""


@dataclass(frozen=True)
class InputSpec:
    """One graph input the caller must feed: name, numpy dtype, dims (int, str or None)."""

    name: str
    dtype: np.dtype | None
    dims: tuple[int | str | None, ...] | None  # None: rank unknown

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
        if value.type.HasField("tensor_type"):
            tensor = value.type.tensor_type
            if tensor.elem_type:
                dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
            if tensor.HasField("shape"):
                # -1 (Paddle) and an unnamed dim both mean "any size"
                dims = tuple(
                    (d.dim_value if d.dim_value >= 0 else None)
                    if d.HasField("dim_value")
                    else (d.dim_param or None)
                    for d in tensor.shape.dim
                )
        specs.append(InputSpec(value.name, dtype, dims))
    return specs


def load_feeds(feeds: Any) -> dict[str, np.ndarray]:
    """A dict of arrays from a mapping or an ``.npz`` path."""
    if isinstance(feeds, str | os.PathLike):
        try:
            with np.load(os.fspath(feeds), allow_pickle=False) as data:
                return {name: data[name] for name in data.files}
        except (OSError, ValueError) as exc:
            raise FeedError(f"feeds {os.fspath(feeds)!r} cannot be read as .npz: {exc}") from exc
    if isinstance(feeds, Mapping):
        return {str(k): np.asarray(v) for k, v in feeds.items()}
    raise TypeError(f"feeds must be a dict of arrays or an .npz path, not {type(feeds).__name__}")


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
) -> dict[str, np.ndarray]:
    """Values for every input in ``specs`` at ``shapes[name]`` (the sizes
    :mod:`onnx_explorer.bindings` chose); FeedError for one it cannot make."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in specs:
        shape = shapes.get(spec.name)
        if spec.dtype is None or shape is None:
            raise FeedError(
                f"input {spec.text()} has no declared type or rank: pass feeds={{...}} for it"
            )
        feeds[spec.name] = _values(spec.name, spec.dtype, tuple(shape), rng, vocab)
    return feeds


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
