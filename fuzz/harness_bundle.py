"""Harness 7, TensorFlow SavedModels and their checkpoints: ``saved_model.pb`` (object
graph, signatures, variable nodes), ``variables/variables.index`` (an SSTable of bundle
entries) and the data shard, every variable read.

Input: the three files, each prefixed by its length (uint32 little-endian)::

    len(saved_model.pb) saved_model.pb len(variables.index) variables.index shard

written into a fresh SavedModel folder and opened with :func:`onnx_explorer.load`.
Mutation picks one of the three: the protobuf files structure-aware (:mod:`fuzz.wire`;
the index's entries are protobufs too, but it is a table, so its bytes are mutated),
the shard by bytes.
"""

from __future__ import annotations

import contextlib
import random
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import onnx_explorer as ox

from . import wire
from .common import harness, scratch_dir, walk_model, write_fresh

NAME = "bundle"
MAX_LEN = 8192
_PARTS = 3


def pack(parts: list[bytes]) -> bytes:
    out = b""
    for part in parts[:-1]:
        out += struct.pack("<I", len(part)) + part
    return out + parts[-1]


def unpack(data: bytes) -> list[bytes]:
    """The three files of an input (missing ones empty; lengths past the end cut)."""
    parts: list[bytes] = []
    pos = 0
    for _ in range(_PARTS - 1):
        if pos + 4 > len(data):
            parts.append(b"")
            continue
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        parts.append(data[pos : pos + n])
        pos += min(n, len(data) - pos)
    parts.append(data[pos:])
    return parts


def _folder() -> Path:
    root = scratch_dir() / "bundle" / "model"
    (root / "variables").mkdir(parents=True, exist_ok=True)
    return root


def _run(data: bytes) -> None:
    """Write the SavedModel, open it, walk it and read every variable."""
    saved, index, shard = unpack(data)
    root = _folder()
    write_fresh(root / "saved_model.pb", saved)
    write_fresh(root / "variables" / "variables.index", index)
    write_fresh(root / "variables" / "variables.data-00000-of-00001", shard)
    with ox.load(root) as model:
        walk_model(model)
        for tensor in model.graph.initializers.values():
            if tensor.is_external:  # the CRC-32C of its bytes against the index's
                with contextlib.suppress(ox.ExplorerError):
                    tensor.verify_checksum()


test_one_input = harness(_run)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    parts = unpack(data)
    which = rng.randrange(_PARTS)
    room = max(0, max_size - len(data) + len(parts[which]))
    if which == 0:
        parts[0] = wire.mutate(parts[0], room, seed, wire.default_byte_mutate())
    else:
        parts[which] = wire.default_byte_mutate()(parts[which], room)
    out = pack(parts)
    return out[:max_size]


def custom_crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    a, b = unpack(data1), unpack(data2)
    mixed = [a[i] if rng.random() < 0.5 else b[i] for i in range(_PARTS)]
    return pack(mixed)[:max_size]


def seeds() -> Iterator[tuple[str, bytes]]:
    """Small SavedModels written by :mod:`onnx_explorer.samples` (one with strings)."""
    from onnx_explorer.readers.tensorflow.bundle._crc32c import crc32c
    from onnx_explorer.samples import write_dense_saved_model, write_tensor_bundle

    root = scratch_dir() / "bundle-seeds"
    for name, widths in (("mlp", (4, 8, 3)), ("deep", (2, 3, 3, 2))):
        folder = write_dense_saved_model(root / name, widths, crc32c=crc32c)
        yield name, _packed(folder)
    folder = write_dense_saved_model(root / "strings", (2, 2), crc32c=crc32c)
    weights = {
        "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE": np.ones((2, 2), np.float32),
        "vocab": np.array([b"a", b"", b"xyz"], dtype=object),
        "steps": np.array(3, np.int64),
    }
    write_tensor_bundle(folder / "variables" / "variables", weights, crc32c=crc32c)
    yield "strings", _packed(folder)


def _packed(folder: Path) -> bytes:
    variables = folder / "variables"
    return pack([
        (folder / "saved_model.pb").read_bytes(),
        (variables / "variables.index").read_bytes(),
        (variables / "variables.data-00000-of-00001").read_bytes(),
    ])  # fmt: skip
