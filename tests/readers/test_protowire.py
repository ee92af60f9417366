"""The wire walk that cuts raw_data out of a model: its fast paths find what the plain walk finds."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from builders import nested_if
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.readers.protobuf import _wire as protowire
from onnx_explorer.readers.protobuf import decode_varint
from onnx_explorer.readers.protobuf._wire import (
    BATCH_FROM,
    ONNX_MODEL_SCHEMA,
    FileBuffer,
    Stripped,
    strip_payloads,
)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _ld(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _big_model(nodes: int = 3000) -> onnx.ModelProto:
    """Many nodes (some with long names), big and small initializers, big Constants, an If."""
    protos = []
    for i in range(nodes):
        name = f"/encoder/layer.{i}/" + "long_scope_name/" * (i % 20) + "Add"
        protos.append(helper.make_node("Add", [f"x{i}", "w"], [f"x{i + 1}"], name=name))
        if i % 100 == 0:
            value = numpy_helper.from_array(np.arange(64 + i, dtype=np.float32), f"c{i}")
            protos.append(helper.make_node("Constant", [], [f"c{i}"], value=value))
    body = helper.make_graph(
        [helper.make_node("Identity", ["bw"], ["o"])],
        "body",
        [],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ones(300, np.float32), "bw")],
    )
    protos.append(helper.make_node("If", ["cond"], ["y"], then_branch=body, else_branch=body))
    inits = [numpy_helper.from_array(np.full(n * 10, n, np.float32), f"t{n}") for n in range(40)]
    graph = helper.make_graph(
        protos,
        "g",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(f"x{nodes}", TensorProto.FLOAT, [1])],
        [numpy_helper.from_array(np.ones(1100, np.float32), "w"), *inits],
    )
    return helper.make_model(graph)


def _plain(tmp_path, data: bytes) -> tuple[Stripped, bytes]:
    """What the field-by-field walk finds (the walk used for files read in blocks)."""
    path = tmp_path / "plain.onnx"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        stripped = strip_payloads(FileBuffer(fd, len(data)), ONNX_MODEL_SCHEMA)
    finally:
        os.close(fd)
    return stripped, stripped.data.replace(stripped.nonce, b"N" * 8)


def _fast(data: bytes) -> tuple[Stripped, bytes]:
    stripped = strip_payloads(data, ONNX_MODEL_SCHEMA)
    return stripped, stripped.data.replace(stripped.nonce, b"N" * 8)


def _graph_payload(data: bytes) -> tuple[int, int]:
    """Offsets of ModelProto.graph's payload."""
    pos = 0
    while True:
        tag, pos = decode_varint(data, pos, len(data))
        value, pos = decode_varint(data, pos, len(data))
        if tag == 7 << 3 | 2:
            return pos, pos + value
        if tag & 7 == 2:
            pos += value


def test_batched_tensors_are_cut_like_the_plain_walk(tmp_path):
    data = _big_model().SerializeToString()
    fast, fast_data = _fast(data)
    plain, plain_data = _plain(tmp_path, data)
    assert fast.ranges == plain.ranges and fast_data == plain_data
    # Initializers of 256 bytes or more (t7..t39 and w), all 30 Constants, both If bodies.
    assert len(fast.ranges) == 33 + 1 + 30 + 2
    assert BATCH_FROM <= 33 + 1  # the initializers are cut as one batch
    for offset, length in fast.ranges:
        assert data[offset - 1] < 0x80 and length >= protowire.DEFAULT_THRESHOLD


def test_fields_out_of_order_are_cut_alike(tmp_path):
    # The same graph with an initializer written among the nodes: protobuf accepts any order.
    model = _big_model()
    graph = model.graph
    entries = [_ld(1, n.SerializeToString()) for n in graph.node]
    entries.insert(5, _ld(5, graph.initializer[0].SerializeToString()))  # w: 4,400 bytes
    del graph.initializer[0]
    graph.ClearField("node")
    payload = b"".join(entries) + graph.SerializeToString()
    header = onnx.ModelProto(ir_version=model.ir_version, opset_import=model.opset_import)
    data = header.SerializeToString() + _ld(7, payload)
    fast, fast_data = _fast(data)
    plain, plain_data = _plain(tmp_path, data)
    assert fast.ranges == plain.ranges and fast_data == plain_data
    path = tmp_path / "out_of_order.onnx"
    path.write_bytes(data)
    loaded = ox.load(path).graph.initializers["w"]
    assert (loaded.location.offset, loaded.location.length) in fast.ranges
    np.testing.assert_array_equal(loaded.numpy(), np.ones(1100))


@pytest.mark.parametrize(
    "odd",
    ["two_payloads", "negative_dim", "long_dims", "field_after_payload", "typed_and_raw"],
)
def test_unusual_tensors_in_a_batch_are_cut_like_the_plain_walk(tmp_path, odd):
    model = _big_model(50)
    tensor = model.graph.initializer[20]
    if odd == "two_payloads":  # protobuf keeps the last; both are cut
        original = _ld(5, tensor.SerializeToString())
        tensor.ClearField("raw_data")
        doubled = tensor.SerializeToString() + _ld(9, b"\x01" * 400) + _ld(9, b"\x02" * 400)
        graph = model.graph.SerializeToString().replace(original, _ld(5, doubled))
        model.ClearField("graph")
        data = model.SerializeToString() + _ld(7, graph)
    else:
        if odd == "negative_dim":
            tensor.dims[0] = -1  # a 10-byte varint
        elif odd == "long_dims":
            tensor.dims.extend([1] * 100)  # more fields than a batch steps through
        elif odd == "field_after_payload":
            tensor.doc_string = "after"
        else:
            tensor.float_data.extend([1.0] * 100)
        data = model.SerializeToString()
    fast, fast_data = _fast(data)
    plain, plain_data = _plain(tmp_path, data)
    assert fast.ranges == plain.ranges and fast_data == plain_data


def test_graph_without_embedded_weights_is_left_as_it_is():
    model = _big_model()
    for tensor in model.graph.initializer:
        tensor.ClearField("raw_data")
    for node in model.graph.node:
        del node.attribute[:]
    data = model.SerializeToString()
    stripped = strip_payloads(data, ONNX_MODEL_SCHEMA)
    assert stripped.ranges == [] and stripped.data is data


@pytest.mark.parametrize("cut", [0.3, 0.5, 0.9, 0.999])
def test_truncated_large_model_is_a_format_error(tmp_path, cut):
    data = _big_model().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(ox.ModelFormatError, match="cut.onnx"):
        ox.load(path)


def test_random_damage_gives_the_plain_walks_answer_or_a_format_error(tmp_path):
    rng = np.random.default_rng(7)
    base = _big_model(800).SerializeToString()
    for _ in range(60):
        data = bytearray(base)
        for position in rng.integers(0, len(data), 3):
            data[position] = int(rng.integers(0, 256))
        data = bytes(data)
        try:
            fast = _fast(data)
        except ox.ModelFormatError:
            fast = None
        try:
            plain = _plain(tmp_path, data)
        except ox.ModelFormatError:
            plain = None
        if fast is not None and plain is not None:
            assert fast[0].ranges == plain[0].ranges and fast[1] == plain[1]
        elif fast is not None:
            # Only the plain walk looked inside what the fast one skipped; protobuf's own
            # parse then refuses the file, so opening it is a format error all the same.
            with pytest.raises(ox.ModelFormatError):
                ox.load(data)


def test_nested_bodies_still_cut(tmp_path):
    model = nested_if(4)
    data = model.SerializeToString()
    fast, fast_data = _fast(data)
    plain, plain_data = _plain(tmp_path, data)
    assert fast.ranges == plain.ranges and fast_data == plain_data


def test_the_onnx_reader_cuts_payloads_from_4_kb(tmp_path):
    from onnx_explorer.readers.onnx._read import CUT_FROM

    inits = [
        numpy_helper.from_array(np.full(CUT_FROM // 4, 1, np.float32), "at"),
        numpy_helper.from_array(np.full(CUT_FROM // 4 - 1, 2, np.float32), "below"),
    ]
    graph = helper.make_graph([], "g", [], [], inits)
    path = tmp_path / "edge.onnx"
    onnx.save(helper.make_model(graph), path)
    model = ox.load(path)
    at, below = model.graph.initializers["at"], model.graph.initializers["below"]
    assert at.location.offset is not None and at.location.length == CUT_FROM
    assert below.location.kind == "embedded" and below.location.offset is None
    np.testing.assert_array_equal(below.numpy(), np.full(CUT_FROM // 4 - 1, 2))
    # What protobuf parsed holds the small payload and a marker for the large one.
    kept = {t.name: len(t.raw_data) for t in model.support._proto.graph.initializer}
    assert kept == {"at": protowire.MARKER_LENGTH, "below": CUT_FROM - 4}


def test_bodies_nested_as_deep_as_protobuf_allows_still_cut(tmp_path):
    # If inside If, 32 deep (protobuf's parser refuses 33), a cut tensor at the bottom.
    body = helper.make_graph(
        [helper.make_node("Identity", ["w"], ["o"])],
        "b",
        [],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ones(2000, np.float32), "w")],
    ).SerializeToString()
    for i in range(32):
        attribute = _ld(1, b"then_branch") + _ld(6, body) + bytes([0xA0, 0x01, 5])  # type GRAPH
        node = _ld(1, b"c") + _ld(2, b"o") + _ld(4, b"If") + _ld(5, attribute)
        body = _ld(1, node) + _ld(2, b"b%d" % i)
    data = bytes([0x08, 8]) + _ld(7, body)  # ir_version 8, graph
    fast, fast_data = _fast(data)
    plain, plain_data = _plain(tmp_path, data)
    assert len(fast.ranges) == 1 and fast.ranges == plain.ranges and fast_data == plain_data
    path = tmp_path / "deep.onnx"
    path.write_bytes(data)
    model = ox.load(path)
    deepest = list(model.graphs())[-1]
    np.testing.assert_array_equal(deepest.initializers["w"].numpy(), np.ones(2000))
    assert deepest.model is model
