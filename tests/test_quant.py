"""Dequantization parameters found from consumers, checked against hand computations."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnx_explorer as ox
from onnx_explorer.quant import find_dequantization
from onnx_explorer.stats import array_histogram, array_stats

RNG = np.random.default_rng(7)


def _model(nodes, initializers, outputs, opset=21, domains=()):
    graph = helper.make_graph(
        nodes,
        "q",
        [],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        initializers,
    )
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=opsets)


def _load(tmp_path, model):
    path = tmp_path / "q.onnx"
    onnx.save(model, path)
    return ox.load(path)


def _reference_output(model) -> np.ndarray:
    return ReferenceEvaluator(model).run(None, {})[0]


def _check_stats(tensor, dq, expected: np.ndarray):
    """Streaming statistics of the dequantized tensor equal those of ``expected``."""
    for chunk in (None, 7):  # one shot, and chunks that cut channels and blocks
        kwargs = {} if chunk is None else {"chunk_elements": chunk}
        stats = tensor.stats(dequantize=dq, **kwargs)
        ref = array_stats(expected.astype(np.float32))
        assert stats.count == expected.size
        assert stats.min == pytest.approx(ref.min) and stats.max == pytest.approx(ref.max)
        assert stats.mean == pytest.approx(ref.mean, rel=1e-6)
        assert stats.std == pytest.approx(ref.std, rel=1e-6)
        assert stats.zeros == ref.zeros
        hist = tensor.histogram(bins=10, dequantize=dq, **kwargs)
        np.testing.assert_array_equal(
            hist.counts, array_histogram(expected.astype(np.float32), bins=10).counts
        )


def test_per_tensor_dequantize_linear(tmp_path):
    q = np.array([[-128, -1, 0], [3, 50, 127]], np.int8)
    model = _model(
        [helper.make_node("DequantizeLinear", ["w", "s", "zp"], ["y"], name="dq")],
        [
            numpy_helper.from_array(q, "w"),
            numpy_helper.from_array(np.array(0.05, np.float32), "s"),
            numpy_helper.from_array(np.array(3, np.int8), "zp"),
        ],
        ["y"],
    )
    graph = _load(tmp_path, model).graph
    dq = find_dequantization(graph, "w")
    assert dq is not None and dq.granularity == "per-tensor"
    assert dq.op == "DequantizeLinear" and dq.node == "dq" and dq.scale_name == "s"
    # By hand: (q - 3) * 0.05
    hand = np.array([[-131, -4, -3], [0, 47, 124]], np.float32) * np.float32(0.05)
    np.testing.assert_allclose(dq.dequantize(q), hand, rtol=1e-6)
    np.testing.assert_allclose(dq.dequantize(q), _reference_output(model), rtol=1e-6)
    stats = graph.initializers["w"].stats(dequantize=dq)
    assert stats.min == pytest.approx(-131 * 0.05) and stats.max == pytest.approx(124 * 0.05)
    assert stats.zeros == pytest.approx(1 / 6)  # q == 3 dequantizes to 0
    _check_stats(graph.initializers["w"], dq, hand)
    assert "per-tensor" in dq.describe()


def test_per_axis_on_conv_weights_by_hand(tmp_path):
    q = RNG.integers(0, 256, (4, 2, 3, 3), dtype=np.uint8)  # OIHW
    scale = np.array([0.1, 0.02, 1.5, 0.003], np.float32)
    zp = np.array([128, 0, 7, 255], np.uint8)
    model = _model(
        [helper.make_node("DequantizeLinear", ["w", "s", "zp"], ["y"], axis=0)],
        [
            numpy_helper.from_array(q, "w"),
            numpy_helper.from_array(scale, "s"),
            numpy_helper.from_array(zp, "zp"),
        ],
        ["y"],
    )
    graph = _load(tmp_path, model).graph
    dq = find_dequantization(graph, "w")
    assert dq.granularity == "per-axis" and dq.axis == 0
    hand = np.empty(q.shape, np.float32)
    for o in range(4):
        for i in range(2):
            for h in range(3):
                for w in range(3):
                    hand[o, i, h, w] = (float(q[o, i, h, w]) - float(zp[o])) * scale[o]
    np.testing.assert_allclose(dq.dequantize(q), hand, rtol=1e-6)
    np.testing.assert_allclose(dq.dequantize(q), _reference_output(model), rtol=1e-6)
    _check_stats(graph.initializers["w"], dq, hand)


def test_default_axis_is_one_for_a_matrix(tmp_path):
    q = RNG.integers(-128, 128, (5, 3), dtype=np.int8)
    scale = np.array([0.5, 0.25, 2.0], np.float32)
    model = _model(
        [helper.make_node("DequantizeLinear", ["w", "s"], ["y"])],  # no zero point, axis 1
        [numpy_helper.from_array(q, "w"), numpy_helper.from_array(scale, "s")],
        ["y"],
    )
    graph = _load(tmp_path, model).graph
    dq = find_dequantization(graph, "w")
    assert dq.axis == 1 and dq.zero_point is None
    np.testing.assert_allclose(dq.dequantize(q), q.astype(np.float32) * scale[None, :])
    _check_stats(graph.initializers["w"], dq, q.astype(np.float32) * scale[None, :])


def test_blocked_int4_weights(tmp_path):
    q = RNG.integers(-8, 8, (3, 5)).astype(ml_dtypes.int4)  # packed two per byte
    scale = RNG.uniform(0.1, 1.0, (3, 3)).astype(np.float32)  # blocks of 2 along axis 1
    zp = RNG.integers(-2, 3, (3, 3)).astype(ml_dtypes.int4)
    model = _model(
        [helper.make_node("DequantizeLinear", ["w", "s", "zp"], ["y"], axis=1, block_size=2)],
        [
            numpy_helper.from_array(q, "w"),
            numpy_helper.from_array(scale, "s"),
            numpy_helper.from_array(zp, "zp"),
        ],
        ["y"],
    )
    graph = _load(tmp_path, model).graph
    assert graph.initializers["w"].dtype_name == "int4"
    dq = find_dequantization(graph, "w")
    assert dq.granularity == "blocked" and dq.block_size == 2
    hand = np.empty((3, 5), np.float32)
    for r in range(3):
        for c in range(5):
            hand[r, c] = (int(q[r, c]) - int(zp[r, c // 2])) * scale[r, c // 2]
    np.testing.assert_allclose(dq.dequantize(q), hand, rtol=1e-6)
    np.testing.assert_allclose(dq.dequantize(q), _reference_output(model), rtol=1e-6)
    _check_stats(graph.initializers["w"], dq, hand)


def test_float8_weights(tmp_path):
    q = RNG.standard_normal((4, 4)).astype(ml_dtypes.float8_e4m3fn)
    model = _model(
        [helper.make_node("DequantizeLinear", ["w", "s"], ["y"])],
        [
            numpy_helper.from_array(q, "w"),
            numpy_helper.from_array(np.array(0.5, np.float32), "s"),
        ],
        ["y"],
    )
    graph = _load(tmp_path, model).graph
    dq = find_dequantization(graph, "w")
    np.testing.assert_allclose(dq.dequantize(q), q.astype(np.float32) * 0.5)


def test_qlinear_conv_with_constant_scale(tmp_path):
    q = RNG.integers(-128, 128, (3, 1, 2, 2), dtype=np.int8)
    scale = np.array([0.1, 0.2, 0.3], np.float32)
    const = helper.make_node(
        "Constant", [], ["w_scale"], value=numpy_helper.from_array(scale, "")
    )  # exporters keep parameters in Constant nodes too
    zp_const = helper.make_node(
        "Constant", [], ["w_zp"], value=numpy_helper.from_array(np.zeros(3, np.int8), "")
    )
    conv = helper.make_node(
        "QLinearConv",
        ["x", "x_s", "x_zp", "w", "w_scale", "w_zp", "y_s", "y_zp"],
        ["y"],
        name="/conv/QLinearConv",
    )
    model = _model(
        [const, zp_const, conv],
        [numpy_helper.from_array(q, "w")],
        ["y"],
    )
    graph = _load(tmp_path, model).graph
    dq = find_dequantization(graph, "w")
    assert dq.op == "QLinearConv" and dq.axis == 0 and dq.scale_name == "w_scale"
    np.testing.assert_allclose(dq.dequantize(q), q * scale[:, None, None, None], rtol=1e-6)
    assert find_dequantization(graph, "x") is None  # an activation: not stored


def test_qlinear_matmul_per_column(tmp_path):
    q = RNG.integers(0, 256, (6, 4), dtype=np.uint8)
    scale = np.array([1.0, 0.5, 0.25, 0.125], np.float32)
    zp = np.array([128, 120, 130, 0], np.uint8)
    node = helper.make_node(
        "QLinearMatMul", ["a", "a_s", "a_zp", "b", "b_s", "b_zp", "y_s", "y_zp"], ["y"]
    )
    model = _model(
        [node],
        [
            numpy_helper.from_array(q, "b"),
            numpy_helper.from_array(scale, "b_s"),
            numpy_helper.from_array(zp, "b_zp"),
        ],
        ["y"],
    )
    graph = _load(tmp_path, model).graph
    dq = find_dequantization(graph, "b")
    assert dq.axis == 1
    expected = (q.astype(np.float32) - zp[None, :]) * scale[None, :]
    _check_stats(graph.initializers["b"], dq, expected)


def _pack_nibbles(values: np.ndarray) -> np.ndarray:
    flat = values.reshape(-1)
    if flat.size % 2:
        flat = np.append(flat, 0)
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)


def test_matmul_nbits_by_hand(tmp_path):
    n, k, block = 3, 40, 16  # K not a multiple of the block: the last block is padded
    blocks = 3
    values = RNG.integers(0, 16, (n, blocks * block), dtype=np.uint8)
    b = np.stack([_pack_nibbles(values[i]).reshape(blocks, block // 2) for i in range(n)])
    scales = RNG.uniform(0.01, 0.1, n * blocks).astype(np.float32)
    zps = RNG.integers(0, 16, (n, blocks), dtype=np.uint8)
    zp_packed = np.concatenate([_pack_nibbles(zps[i]) for i in range(n)])  # 2 bytes per row
    node = helper.make_node(
        "MatMulNBits", ["a", "B", "scales", "zp"], ["y"], domain="com.microsoft",
        name="/lm_head/MatMulNBits", K=k, N=n, bits=4, block_size=block,
    )  # fmt: skip
    model = _model(
        [node],
        [
            numpy_helper.from_array(b, "B"),
            numpy_helper.from_array(scales, "scales"),
            numpy_helper.from_array(zp_packed, "zp"),
        ],
        ["y"],
        domains=("com.microsoft",),
    )
    graph = _load(tmp_path, model).graph
    dq = find_dequantization(graph, "B")
    assert dq.op == "com.microsoft::MatMulNBits" and dq.output_shape == (n, k)
    hand = np.empty((n, k), np.float32)
    for row in range(n):
        for col in range(k):
            blk = col // block
            hand[row, col] = (int(values[row, col]) - int(zps[row, blk])) * scales[
                row * blocks + blk
            ]
    np.testing.assert_allclose(dq.dequantize(b), hand, rtol=1e-6)
    _check_stats(graph.initializers["B"], dq, hand)
    # Without zero points, 4-bit values are centred on 8.
    del model.graph.node[0].input[3:]
    dq = find_dequantization(_load(tmp_path, model).graph, "B")
    expected = (values[:, :k].astype(np.float32) - 8) * np.repeat(
        scales.reshape(n, blocks), block, axis=1
    )[:, :k]
    np.testing.assert_allclose(dq.dequantize(b), expected, rtol=1e-6)


def test_parameters_computed_at_run_time_are_an_error(tmp_path):
    model = _model(
        [
            helper.make_node("Relu", ["s_in"], ["s"]),
            helper.make_node("DequantizeLinear", ["w", "s"], ["y"]),
        ],
        [
            numpy_helper.from_array(np.zeros((2, 2), np.int8), "w"),
            numpy_helper.from_array(np.array(1.0, np.float32), "s_in"),
        ],
        ["y"],
    )
    graph = _load(tmp_path, model).graph
    with pytest.raises(ox.TensorDataError, match="run time"):
        find_dequantization(graph, "w")


def test_scale_that_does_not_fit_the_shape_is_an_error(tmp_path):
    model = _model(
        [helper.make_node("DequantizeLinear", ["w", "s"], ["y"], axis=0)],
        [
            numpy_helper.from_array(np.zeros((2, 3), np.int8), "w"),
            numpy_helper.from_array(np.ones(3, np.float32), "s"),
        ],
        ["y"],
    )
    with pytest.raises(ox.TensorDataError, match="per-axis"):
        find_dequantization(_load(tmp_path, model).graph, "w")


def test_unquantized_weights_have_no_dequantization(tmp_path):
    model = _model(
        [helper.make_node("Relu", ["w"], ["y"])],
        [numpy_helper.from_array(np.ones(3, np.float32), "w")],
        ["y"],
    )
    graph = _load(tmp_path, model).graph
    assert find_dequantization(graph, "w") is None
    assert find_dequantization(graph, "nothing") is None
