"""Harness 9, metrics on hostile attributes: the MAC rules, their JSON, overlay and pandas.

Input: the bytes of an ONNX model. :func:`onnx_explorer.metrics.metrics` runs on it
(inference and onnxruntime off: the rules and the walker are what is fuzzed), then its
JSON (``to_dict``), node-data export and overlay values. ``metrics`` must return or raise
an :class:`~onnx_explorer.errors.ExplorerError`; a node whose attributes its rule cannot
use is unknown (issue 31, finding 9), never the table's failure.

Mutation is attribute-aware most of the time: a node of a ruled op gets one of the
attributes rules read replaced by a value of a random kind (INT past any size, FLOAT
``inf``, STRING, INTS, FLOATS, TENSOR, an empty list); else the wire mutator's.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.metrics import metrics
from onnx_explorer.views._colour_scale import checked_values

from . import wire
from .common import harness, without_inference

NAME = "metrics"
MAX_LEN = 16384
#: Attributes the rules read.
ATTRIBUTES = ("kernel_shape", "axis", "num_heads", "kv_num_heads", "qkv_hidden_sizes",
              "transA", "layout", "equation", "size", "strides", "dilations", "padding",
              "data_format", "ksize", "num_scan_inputs", "scan_input_axes")  # fmt: skip


def _run(data: bytes) -> None:
    with ox.load(data) as model:
        without_inference(model)
        result = metrics(model, infer=False, shapes="infer")
        json.dumps(result.to_dict())
        for series in ("macs", "activation_bytes"):
            checked_values(result.series(series))
        result.to_model_explorer_json("macs")
        _ = result.totals, result.by_scope(), result.by_scope(depth=1)


test_one_input = harness(_run)


def _value(rng: random.Random, name: str) -> onnx.AttributeProto:
    choice = rng.randrange(10)
    big = rng.choice((0, 1, -1, 3, 2**31, 2**62, 2**63 - 1, -(2**63)))
    if choice == 0:
        return helper.make_attribute(name, big)
    if choice == 1:
        return helper.make_attribute(name, rng.choice((math.inf, -math.inf, math.nan, 2.5)))
    if choice == 2:
        return helper.make_attribute(name, rng.choice(("abc", "x" * 5000, "NCHW", "SAME", "")))
    if choice == 3:
        return helper.make_attribute(name, [big] * rng.randrange(1, 70))
    if choice == 4:
        return helper.make_attribute(name, [math.inf, 1.0])
    if choice == 5:
        return helper.make_attribute(name, numpy_helper.from_array(np.array([2, 2], np.int64)))
    if choice == 6:
        return helper.make_attribute(name, [b"a", b"b"])
    if choice == 7:
        attribute = helper.make_attribute(name, 1)
        attribute.ClearField("i")  # an INT without its value
        return attribute
    if choice == 8:
        return helper.make_attribute(name, b"\xff" * rng.randrange(0, 64))
    return helper.make_attribute(name, [rng.randrange(-3, 9) for _ in range(rng.randrange(1, 5))])


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    if rng.random() < 0.6:
        try:
            model = onnx.load_from_string(data)
        except Exception:
            model = None
        if model is not None and model.graph.node:
            node = rng.choice(list(model.graph.node))
            name = rng.choice(ATTRIBUTES)
            kept = [a for a in node.attribute if a.name != name]
            del node.attribute[:]
            node.attribute.extend(kept)
            try:
                node.attribute.append(_value(rng, name))
            except ValueError:  # onnx refused the value: mutate the bytes instead
                return wire.mutate(data, max_size, seed, wire.default_byte_mutate())
            out = bytes(model.SerializeToString())
            if len(out) <= max_size:
                return out
    return wire.mutate(data, max_size, seed, wire.default_byte_mutate())


def custom_crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    return wire.crossover(data1, data2, max_size, seed)


def _model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, list[int]],
    outputs: dict[str, list[int]],
    inits: tuple[TensorProto, ...] = (),
) -> bytes:
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        list(inits),
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return bytes(helper.make_model(graph, opset_imports=opsets).SerializeToString())


def seeds() -> Iterator[tuple[str, bytes]]:
    """Models whose nodes carry the attributes the rules read, shapes declared."""
    make = helper.make_node
    yield "pool_conv_gemm", _model(
        [make("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         make("Conv", ["p", "w"], ["c"], kernel_shape=[1, 1]),
         make("Flatten", ["c"], ["f"]),
         make("Gemm", ["f", "g"], ["y"], transA=0)],
        {"x": [1, 2, 8, 8]}, {"y": [1, 4]},
        (numpy_helper.from_array(np.ones((3, 2, 1, 1), np.float32), "w"),
         numpy_helper.from_array(np.ones((48, 4), np.float32), "g")),
    )  # fmt: skip
    yield "attention", _model(
        [make("Attention", ["x", "w"], ["y"], domain="com.microsoft", num_heads=2,
              qkv_hidden_sizes=[8, 8, 8]),
         make("GroupQueryAttention", ["y"], ["z"], domain="com.microsoft", num_heads=2,
              kv_num_heads=1)],
        {"x": [1, 4, 8], "w": [8, 24]}, {"z": [1, 4, 8]},
    )  # fmt: skip
    yield "einsum_lstm_dft", _model(
        [make("Einsum", ["a", "b"], ["e"], equation="ij,jk->ik"),
         make("LSTM", ["s", "W", "R"], ["h"], hidden_size=2, layout=0),
         make("DFT", ["e"], ["d"], axis=1),
         make("LRN", ["x4"], ["l"], size=3)],
        {"a": [2, 3], "b": [3, 4], "s": [5, 1, 3], "W": [1, 8, 3], "R": [1, 8, 2],
         "x4": [1, 3, 4, 4]},
        {"e": [2, 4], "h": [5, 1, 1, 2], "d": [2, 4, 2], "l": [1, 3, 4, 4]},
    )  # fmt: skip
