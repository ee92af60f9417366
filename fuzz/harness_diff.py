"""Harness 10, diff of two inputs: matching, weight comparison, quantized pairs, reports.

Input: two ONNX models, ``len(a)`` as 4 little-endian bytes, then ``a``, then ``b`` (a
length past the input takes all of it as ``a`` and ``b`` as empty). Both are loaded
(inference off) and compared with weights; the report, its JSON and node statuses are
built. Loading either may raise an :class:`~onnx_explorer.errors.ExplorerError`, and so
may the comparison; nothing else.

Mutation keeps the framing: one side is mutated by the wire mutator (or replaced by the
other side's mutant, so near-equal pairs are common), and the length is rewritten.
"""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Iterator

import onnx_explorer as ox
from onnx_explorer.model_diff import compare_models

from . import wire
from .common import harness, without_inference
from .harness_metrics import seeds as metrics_seeds

NAME = "diff"
MAX_LEN = 32768


def split(data: bytes) -> tuple[bytes, bytes]:
    if len(data) < 4:
        return data, b""
    (n,) = struct.unpack_from("<I", data, 0)
    body = data[4:]
    return (body, b"") if n > len(body) else (body[:n], body[n:])


def join(a: bytes, b: bytes) -> bytes:
    return struct.pack("<I", len(a)) + a + b


def _run(data: bytes) -> None:
    first, second = split(data)
    with ox.load(first) as a, ox.load(second) as b:
        without_inference(a)
        without_inference(b)
        result = compare_models(a, b, weights=True)
        repr(result)
        json.dumps(result.to_dict())
        _ = result.equal, result.node_status(), result.weight_change()


test_one_input = harness(_run)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    a, b = split(data)
    half = max(64, max_size // 2)
    mutated = wire.mutate(b if rng.random() < 0.7 else a, half, seed, wire.default_byte_mutate())
    if rng.random() < 0.2:  # a pair: the same model, one side mutated
        a = b
    if rng.random() < 0.5:
        b = mutated
    else:
        a = mutated
    return join(a, b)[:max_size]


def custom_crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    a1, _ = split(data1)
    _, b2 = split(data2)
    return join(a1, b2)[:max_size]


def seeds() -> Iterator[tuple[str, bytes]]:
    """Pairs: a model and itself, a model and another, a float and a quantized weight."""
    from .make_corpus import onnx_seeds

    models = [(n, d) for n, d in onnx_seeds() if len(d) < MAX_LEN // 3]
    models += [(n, d) for n, d in metrics_seeds() if len(d) < MAX_LEN // 3]
    for (na, a), (nb, b) in zip(models, [*models[1:], models[0]]):
        yield f"{na}_self", join(a, a)
        yield f"{na}_{nb}", join(a, b)
    yield "quantized", join(*_quantized_pair())


def _quantized_pair() -> tuple[bytes, bytes]:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    def model(quant: bool) -> bytes:
        if quant:
            nodes = [helper.make_node("DequantizeLinear", ["wq", "ws"], ["w"], axis=1),
                     helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]  # fmt: skip
            inits = [numpy_helper.from_array(np.arange(12, dtype=np.int8).reshape(3, 4), "wq"),
                     numpy_helper.from_array(np.full(4, 0.5, np.float32), "ws")]  # fmt: skip
        else:
            nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
            inits = [numpy_helper.from_array(np.ones((3, 4), np.float32), "w")]
        graph = helper.make_graph(
            nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits,
        )  # fmt: skip
        return bytes(helper.make_model(graph).SerializeToString())

    return model(False), model(True)
