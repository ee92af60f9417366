"""Harness 8, the weight formats: safetensors and GGUF files, every tensor read.

Input: the bytes of one file, told apart by content as :func:`onnx_explorer.load` does
(from memory or from a file, decided by the input). Each tensor's facts, values and
statistics are read (:func:`fuzz.common.walk_model`); ``load`` must succeed or raise an
:class:`~onnx_explorer.errors.ExplorerError`, and so must every read.

Mutation is header-aware: a safetensors input has its JSON header mutated as text and
its 8-byte length rewritten to match (else the length itself, or the data); a GGUF
input has its counts, lengths and type codes mutated as little-endian integers, else
its bytes (libFuzzer's mutations).
"""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np

import onnx_explorer as ox

from . import wire
from .common import by_file, harness, scratch_dir, walk_model, write_fresh

NAME = "weights"
MAX_LEN = 8192
#: Interesting integers: sizes at type limits, offsets past any file, huge products.
NUMBERS = (0, 1, -1, 2, 7, 255, 256, 65536, 2**31 - 1, 2**31, 2**32, 2**46, 2**63 - 1,
           2**63, 2**64 - 1, -(2**63), 10**60)  # fmt: skip


def _run(data: bytes) -> None:
    """Open the bytes as a weights file, walk the model and read every tensor."""
    if by_file(data):
        suffix = ".gguf" if data[:4] == b"GGUF" else ".safetensors"
        source: bytes | Path = write_fresh(scratch_dir() / f"weights{suffix}", data)
    else:
        source = data
    with ox.load(source) as model:
        walk_model(model)


test_one_input = harness(_run)


def _mutate_safetensors(data: bytes, max_size: int, rng: random.Random) -> bytes:
    (n,) = struct.unpack_from("<Q", data, 0)
    if n > len(data) - 8 or rng.random() < 0.1:  # the length itself
        return struct.pack("<Q", rng.choice(NUMBERS) % (1 << 64)) + data[8:]
    header, rest = data[8 : 8 + n], data[8 + n :]
    if rng.random() < 0.2:
        rest = wire.default_byte_mutate()(rest, max(0, max_size - 8 - len(header)))
    else:
        header = _mutate_json(header, rng) if rng.random() < 0.5 else header
        header = wire.default_byte_mutate()(header, max(len(header) * 2, 64))
    return (struct.pack("<Q", len(header)) + header + rest)[:max_size]


def _mutate_json(header: bytes, rng: random.Random) -> bytes:
    """Swap a number, a dtype or an offset pair of the header for an interesting one."""
    try:
        parsed = json.loads(header)
    except ValueError:
        return header
    if not isinstance(parsed, dict) or not parsed:
        return header
    key = rng.choice(list(parsed))
    entry = parsed[key]
    if isinstance(entry, dict):
        field = rng.choice(["dtype", "shape", "data_offsets"])
        if field == "dtype":
            entry[field] = rng.choice(["F32", "F16", "BF16", "I8", "U8", "BOOL", "F8_E4M3",
                                       "I64", "F64", "C64", "X", 7, None])  # fmt: skip
        elif field == "shape":
            entry[field] = [rng.choice(NUMBERS) for _ in range(rng.randrange(4))]
        else:
            entry[field] = [rng.choice(NUMBERS), rng.choice(NUMBERS)]
    else:
        parsed[key] = rng.choice([{}, [], "x", 1, {"a": "b"}])
    return json.dumps(parsed).encode()


def _mutate_gguf(data: bytes, max_size: int, rng: random.Random) -> bytes:
    if len(data) < 24 or rng.random() < 0.5:
        return wire.default_byte_mutate()(data, max_size)
    out = bytearray(data)
    pos = rng.randrange(4, len(out) - 8)
    if rng.random() < 0.5:
        struct.pack_into("<Q", out, pos, rng.choice(NUMBERS) % (1 << 64))
    else:
        struct.pack_into("<I", out, pos, rng.choice(NUMBERS) % (1 << 32))
    return bytes(out[:max_size])


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    if data[:4] == b"GGUF":
        return _mutate_gguf(data, max_size, rng)
    if len(data) >= 8:
        return _mutate_safetensors(data, max_size, rng)
    return wire.default_byte_mutate()(data, max_size)


def custom_crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    cut1, cut2 = rng.randrange(len(data1) + 1), rng.randrange(len(data2) + 1)
    return (data1[:cut1] + data2[cut2:])[:max_size]


def seeds() -> Iterator[tuple[str, bytes]]:
    """safetensors files of every dtype family, and GGUF files (plain and block types)."""
    from safetensors.numpy import save

    rng = np.random.default_rng(0)
    values = rng.standard_normal((4, 8)).astype(np.float32)
    yield "st_floats", save({
        "model.layers.0.weight": values, "model.layers.0.bias": values[0].astype(np.float16),
        "lm_head.weight": values.astype(np.float64),
    }, metadata={"format": "pt"})  # fmt: skip
    yield "st_ints", save({
        "ids": np.arange(12, dtype=np.int64).reshape(3, 4), "mask": values > 0,
        "q": (values * 20).astype(np.int8), "scalar": np.array(3.0, np.float32),
        "empty": np.zeros((0, 4), np.float32),
    })  # fmt: skip
    yield from _gguf_seeds(values)


def _gguf_seeds(values: np.ndarray) -> Iterator[tuple[str, bytes]]:
    try:
        import gguf
        from gguf.quants import quantize
    except ImportError:  # the gguf package is optional: safetensors seeds only
        return
    root = scratch_dir() / "weights-seeds"
    root.mkdir(parents=True, exist_ok=True)
    for name, quantized in (("gguf_plain", False), ("gguf_blocks", True)):
        path = root / f"{name}.gguf"
        writer = gguf.GGUFWriter(str(path), "llama")
        writer.add_name("tiny")
        writer.add_uint32("llama.block_count", 1)
        writer.add_array("tokenizer.ggml.tokens", ["a", "b", "c"])
        if quantized:
            block = np.tile(values, (1, 4))  # 32 columns: one Q8_0 block per row
            for qtype in (gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0):
                stored = quantize(block, qtype)
                writer.add_tensor(f"blk.0.{qtype.name.lower()}.weight", stored,
                                  raw_shape=stored.shape, raw_dtype=qtype)  # fmt: skip
        else:
            writer.add_tensor("token_embd.weight", values)
            writer.add_tensor("blk.0.attn_norm.weight", values[0].astype(np.float16))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        yield name, path.read_bytes()
