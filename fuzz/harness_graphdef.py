"""Harness 2, the binary GraphDef reader: payload walk, lazy model, every tensor read.

Input: the bytes of a binary ``.pb`` GraphDef, read from memory or from a file.
Mutation is structure-aware (:mod:`fuzz.wire`).
"""

from __future__ import annotations

import onnx_explorer as ox

from . import wire
from .common import by_file, harness, scratch_dir, walk_model, write_fresh

NAME = "graphdef"
MAX_LEN = 16384


def _run(data: bytes) -> None:
    """Open the bytes as a GraphDef, walk every graph and node, read every weight."""
    if by_file(data):
        source: bytes | object = write_fresh(scratch_dir() / "graph.pb", data)
    else:
        source = data
    with ox.load(source, format="graphdef") as model:  # type: ignore[arg-type]
        walk_model(model)


test_one_input = harness(_run)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    return wire.mutate(data, max_size, seed, wire.default_byte_mutate())


def custom_crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    return wire.crossover(data1, data2, max_size, seed)
