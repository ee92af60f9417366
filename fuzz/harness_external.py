"""Harness 4, external data: resolving ``location``, checking ``offset``/``length`` against the
data file's size, mapping and reading, checksums.

The input is a small text, one entry a line, so that the fuzzer works on what matters
(the model around it is built here, with onnx.helper)::

    @size=4096               the size of weights.bin (sparse beyond 4 KB, at most 1 MiB)
    @dir=sub                 pass external_data_dir= (a directory of the sandbox)
    @tensor=1:4,8            a new initializer: ONNX dtype code, dims
    @constant=10:3           a new Constant node holding an external tensor
    location=weights.bin     any other line: an external_data entry of the last tensor,
    offset=0                 written as it is (unknown keys, repeats, odd values)

Each input runs in a sandbox directory holding weights.bin, sub/w.bin, a symlink inside
(link.bin), a symlink escaping it (escape.bin), a FIFO, a directory, and outside.bin
beside the sandbox. Mutation: values swapped for interesting numbers and locations,
lines duplicated, dropped and spliced (:func:`mutate_lines`), plus byte mutation.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from onnx import NodeProto, TensorProto, helper

import onnx_explorer as ox

from . import wire
from .common import harness, read_tensor, scratch_dir, walk_model, without_inference, write_fresh
from .text import NUMBERS, crossover_lines

NAME = "external"
MAX_LEN = 2048
MAX_FILE = 1 << 20
_PATTERN = bytes(range(256)) * 16  # the first 4 KB of weights.bin; zeros after
LOCATIONS = (
    b"weights.bin", b"sub/w.bin", b"sub\\w.bin", b"./weights.bin", b"link.bin",
    b"escape.bin", b"fifo", b"dir", b"missing.bin", b"../outside.bin", b"sub/../weights.bin",
    b"/etc/passwd", b"C:weights.bin", b"\\\\server\\share\\w.bin", b"//server/share",
    b"weights.bin\x00.txt", b"", b".", b"sub/", b"weights.bin/", b"%2e%2e/outside.bin",
    b"\xc3\xa9.bin", b"\xff\xfe", b"a" * 300, b"/" * 50 + b"weights.bin",
)  # fmt: skip
KEYS = (b"location", b"offset", b"length", b"checksum", b"basepath", b"LOCATION", b"x", b"")


def _sandbox() -> Path:
    """The fixed files around weights.bin (made once per process)."""
    root = scratch_dir() / "external"
    if not root.exists():
        base = root / "models"
        (base / "sub").mkdir(parents=True)
        (base / "dir").mkdir()
        (base / "sub" / "w.bin").write_bytes(_PATTERN[:64])
        (root / "outside.bin").write_bytes(_PATTERN[:256])
        (base / "weights.bin").write_bytes(b"")
        os.symlink("weights.bin", base / "link.bin")
        os.symlink("../outside.bin", base / "escape.bin")
        os.mkfifo(base / "fifo")
    return root / "models"


def _number(text: bytes, default: int = 0) -> int:
    try:
        return int(text.strip()[:30] or default)
    except ValueError:
        return default


def _tensor(spec: bytes, name: str) -> TensorProto:
    dtype_text, _, dims_text = spec.partition(b":")
    tensor = TensorProto()
    tensor.name = name
    tensor.data_type = _number(dtype_text, 1) % 27
    for dim in dims_text.split(b",")[:8] if dims_text.strip() else []:
        tensor.dims.append(max(min(_number(dim), (1 << 63) - 1), -(1 << 63)))
    tensor.data_location = TensorProto.EXTERNAL
    return tensor


def build(data: bytes) -> tuple[bytes, int, str | None]:
    """The model's bytes, weights.bin's size and external_data_dir, from the input lines."""
    size, data_dir = 0, None
    initializers: list[TensorProto] = []
    nodes: list[NodeProto] = []
    current: TensorProto | None = None
    for line in data.split(b"\n")[:64]:
        key, _, value = line.partition(b"=")
        if key == b"@size":
            size = min(abs(_number(value)), MAX_FILE)
        elif key == b"@dir":  # the caller's argument, not the file's: no NUL (ValueError)
            data_dir = value.decode("utf-8", "replace").replace("\x00", "")
        elif key in (b"@tensor", b"@constant"):
            current = _tensor(value, f"t{len(initializers) + len(nodes)}")
            if key == b"@tensor":
                initializers.append(current)
            else:
                nodes.append(helper.make_node("Constant", [], [current.name], value=current))
        elif current is not None:
            entry = current.external_data.add()
            entry.key = key.decode("utf-8", "surrogateescape").encode("utf-8", "replace").decode()
            entry.value = value.decode("utf-8", "replace")
    graph = helper.make_graph(nodes, "external", [], [], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString(), size, data_dir


def _run(data: bytes) -> None:
    """Write the model and weights.bin, open the model, read and checksum every tensor."""
    base = _sandbox()
    model_bytes, size, data_dir = build(data)
    weights = write_fresh(base / "weights.bin", _PATTERN[:size])
    os.truncate(weights, size)
    path = write_fresh(base / "model.onnx", model_bytes)
    external_dir = base / data_dir if data_dir is not None else None
    with ox.load(path, external_data_dir=external_dir) as model:
        walk_model(without_inference(model), read=False)
        for ref in model.weights():
            tensor = ref.tensor
            try:
                read_tensor(tensor)
                if tensor.is_external and tensor.checksum is not None:
                    tensor.verify_checksum()
            except ox.ExplorerError:
                continue


test_one_input = harness(_run)


def mutate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    key, sep, value = lines[i].partition(b"=")
    roll = rng.random()
    if roll < 0.35:
        if key == b"location" or (not sep and rng.random() < 0.5):
            value = rng.choice(LOCATIONS)
        elif key == b"@tensor" or key == b"@constant":
            dims = b",".join(rng.choice(NUMBERS[:14]) for _ in range(rng.randrange(4)))
            value = rng.choice((b"1", b"2", b"3", b"8", b"10", b"16", b"22", b"26", b"0", b"99"))
            value += b":" + dims
        else:
            value = rng.choice((*NUMBERS, b"-0", b"+5", b" 5", b"0x10", b"\xd9\xa3"))
        lines[i] = key + b"=" + value
    elif roll < 0.5:
        lines[i] = rng.choice(KEYS) + b"=" + value
    elif roll < 0.7:
        lines.insert(i, lines[i])
    elif roll < 0.8 and len(lines) > 1:
        del lines[i]
    else:
        extra = rng.choice(
            (b"@size=" + rng.choice(NUMBERS[:12]), b"@dir=" + rng.choice((b"sub", b"dir", b".")))
        )
        lines.insert(i, extra)
    return b"\n".join(lines)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    if data and rng.random() < 0.75:
        out = mutate_lines(data, rng)
        if len(out) <= max_size:
            return out
    return wire.default_byte_mutate()(data, max_size)


def custom_crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    return crossover_lines(data1, data2, max_size, seed)
