"""Harness 6, ``onnx_explorer.run``: a small mutated model run with onnxruntime.

Input: the bytes of an ONNX model (a few nodes: arithmetic, Loop/If bodies, shape
arithmetic, ConstantOfShape, sequences, ZipMap). Each is run with generated feeds
under a short time budget (:data:`TIME_LIMIT`, the pre-check's ONNX shape inference
too) and a small memory limit (:data:`MEMORY_LIMIT`): it must end in a result or an
:class:`~onnx_explorer.errors.ExplorerError` (a node that fails is a
``RunFailedError``), never a builtin exception, a hang (libFuzzer's ``-timeout``) or a
crash. Mutation is structure-aware (:mod:`fuzz.wire`): dims, trip counts, attributes
and types change while the message stays parseable.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.readers.onnx import _inference_child as inference_child

from . import wire
from .common import harness

NAME = "run"
MAX_LEN = 4096
#: Seconds one run may take (libFuzzer's hang limit is 10 s).
TIME_LIMIT = 2.0
#: Bytes of values one run may hold (libFuzzer's RSS limit is 2 GB).
MEMORY_LIMIT = 64 << 20


def _run(data: bytes) -> None:
    """Run the model on generated feeds within the time and memory limits."""
    inference_child.INFERENCE_TIME_LIMIT = TIME_LIMIT  # the pre-check's inference too
    try:
        ox.run(data, timeout=TIME_LIMIT, memory_limit=MEMORY_LIMIT, bins=4, segment_nodes=2)
    except ox.ExplorerError:
        raise
    except TypeError as exc:  # run() refuses a model that is not ONNX bytes: fine
        if "run() takes" not in str(exc):
            raise


test_one_input = harness(_run)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    return wire.mutate(data, max_size, seed, wire.default_byte_mutate())


def custom_crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    return wire.crossover(data1, data2, max_size, seed)


# -- seeds --------------------------------------------------------------------------------
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    inits: list[onnx.TensorProto] | None = None,
    ml: bool = False,
) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits or [])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("ai.onnx.ml", 3)] if ml else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    data: bytes = model.SerializeToString()
    return data


def _tensor(name: str, elem: int, dims: list[int | str | None] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, dims)


def seeds() -> Iterator[tuple[str, bytes]]:
    """Small models that run cleanly, each reaching another part of ``run``."""
    yield "arith", _model(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Div", ["r", "r"], ["q"], name="div"),
         helper.make_node("Add", ["q", "x"], ["y"], name="add")],
        [_tensor("x", F, ["batch", 4])], [_tensor("y", F, None)],
    )  # fmt: skip
    w = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), "w")
    yield "matmul_reshape", _model(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
         helper.make_node("Shape", ["h"], ["s"], name="shape"),
         helper.make_node("ReduceProd", ["s"], ["n"], name="count", keepdims=1),
         helper.make_node("Reshape", ["h", "n"], ["y"], name="flat")],
        [_tensor("x", F, [2, 4])], [_tensor("y", F, None)], [w],
    )  # fmt: skip
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]),
         helper.make_node("Add", ["v", "v"], ["v_out"]),
         helper.make_node("Identity", ["v"], ["scan"])],
        "body",
        [_tensor("i", I64, []), _tensor("c", B, []), _tensor("v", F, [2])],
        [_tensor("c_out", B, []), _tensor("v_out", F, [2]), _tensor("scan", F, [2])],
    )  # fmt: skip
    trips = numpy_helper.from_array(np.array(3, np.int64), "trips")
    cond = numpy_helper.from_array(np.array(True), "cond")
    yield "loop", _model(
        [helper.make_node("Loop", ["trips", "cond", "x"], ["y", "ys"], body=body, name="loop")],
        [_tensor("x", F, [2])], [_tensor("y", F, [2]), _tensor("ys", F, None)], [trips, cond],
    )  # fmt: skip
    then = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["t"])], "then", [], [_tensor("t", F, None)]
    )
    other = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["e"])], "else", [], [_tensor("e", F, None)]
    )
    yield "if", _model(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
         helper.make_node("Greater", ["s", "zero"], ["p"], name="positive"),
         helper.make_node("If", ["p"], ["y"], then_branch=then, else_branch=other, name="if")],
        [_tensor("x", F, [3])], [_tensor("y", F, None)],
        [numpy_helper.from_array(np.array(0.0, np.float32), "zero")],
    )  # fmt: skip
    value = helper.make_tensor("v", F, [1], [0.5])
    yield "constant_of_shape_range", _model(
        [helper.make_node("ConstantOfShape", ["shape"], ["c"], value=value, name="fill"),
         helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range"),
         helper.make_node("Cast", ["r"], ["rf"], to=F, name="cast"),
         helper.make_node("Mul", ["c", "rf"], ["y"], name="mul")],
        [], [_tensor("y", F, None)],
        [numpy_helper.from_array(np.array([4], np.int64), "shape"),
         numpy_helper.from_array(np.array(0, np.int64), "start"),
         numpy_helper.from_array(np.array(4, np.int64), "limit"),
         numpy_helper.from_array(np.array(1, np.int64), "delta")],
    )  # fmt: skip
    yield "sequence_zipmap", _model(
        [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=0, name="split"),
         helper.make_node("SequenceAt", ["seq", "one"], ["row"], name="at"),
         helper.make_node("ZipMap", ["x"], ["z"], domain="ai.onnx.ml",
                          classlabels_int64s=[0, 1, 2], name="zip")],
        [_tensor("x", F, [2, 3])],
        [_tensor("row", F, None),
         helper.make_value_info("z", helper.make_sequence_type_proto(helper.make_map_type_proto(
             I64, helper.make_tensor_type_proto(F, None))))],
        [numpy_helper.from_array(np.array(1, np.int64), "one")], ml=True,
    )  # fmt: skip
    yield "einsum_gather", _model(
        [helper.make_node("Einsum", ["a", "b"], ["m"], equation="ij,jk->ik", name="einsum"),
         helper.make_node("Gather", ["m", "index"], ["y"], axis=0, name="gather")],
        [_tensor("a", F, [2, 3]), _tensor("b", F, [3, 2])], [_tensor("y", F, None)],
        [numpy_helper.from_array(np.array([1], np.int64), "index")],
    )  # fmt: skip


__all__ = ["MAX_LEN", "NAME", "custom_crossover", "custom_mutator", "seeds", "test_one_input"]
