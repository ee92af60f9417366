"""Dequantization parameters found from consumers, checked against hand computations."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from builders import embedding_matmul_conv, quantize_dynamic_copy
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnx_explorer as ox
from onnx_explorer.stats import array_histogram, array_stats
from onnx_explorer.weights._quant import ScaleUnknownError, find_dequantization

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


# -- scales found past the ops between a weight and its scale ------------------------------
@pytest.mark.parametrize("weight_type", ["QInt8", "QUInt8"])
def test_dynamic_int8_weights_are_reported_in_real_units(tmp_path, weight_type):
    pytest.importorskip("onnxruntime.quantization")
    folder = quantize_dynamic_copy(embedding_matmul_conv(), tmp_path, weight_type)
    real = ox.load(folder / "float.onnx").graph.initializers
    model = ox.load(folder / "quantized.onnx")
    rows = {
        r["name"]: r for r in model.weights_report(dequantize=True, as_list=True, progress=False)
    }
    where = {
        "E": "from DequantizeLinear 'tok_DequantizeLinear' through Gather 'embed'",
        "E2": "from MatMulInteger 'proj2_quant' through Gather 'embed2'",  # A's scale
        "W": "from MatMulInteger 'proj_quant'",
        "W2": "from MatMulInteger 'proj2_quant'",
        "C": "from ConvInteger 'conv_quant'",
    }
    for name, source in where.items():
        stored = model.graph.initializers[f"{name}_quantized"]
        dq = find_dequantization(model.graph, stored.name)
        assert dq is not None and source in dq.describe(), (name, dq)
        weights = real[name].numpy()
        step = float(np.max(dq.scale))
        # Real units: each value within half a step of the float weight it quantizes.
        assert np.abs(dq.dequantize(stored.numpy()) - weights).max() <= step / 2 * (1 + 1e-5)
        row = rows[stored.name]
        assert row["quantization"] == dq.describe()
        assert row["min"] == pytest.approx(weights.min(), abs=step / 2 + 1e-6)
        assert row["max"] == pytest.approx(weights.max(), abs=step / 2 + 1e-6)


def _conv_integer_with_int32_bias(static: bool):
    """ConvInteger → Add(int32 bias, reshaped) → Cast → Mul(scale): the bias is added in the
    integer result's units, before the Mul that makes it real. ``static``: the activation is
    quantized by a QuantizeLinear with a stored scale and the Mul's scale is stored folded
    (x_scale · w_scale, per output channel); else DynamicQuantizeLinear, and the scale is
    ``Mul(x_scale, w_scale)`` computed at run time."""
    x = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
    wq = RNG.integers(-127, 128, (3, 2, 3, 3)).astype(np.int8)
    w_scale = np.array([0.02, 0.05, 0.01], np.float32)
    x_scale = np.float32(0.04)
    bias = np.array([100, -250, 40], np.int32)
    if static:
        quantize = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"])]
        scale = ["scale"]
        params = [numpy_helper.from_array(np.array(x_scale), "x_scale"),
                  numpy_helper.from_array(np.array(128, np.uint8), "x_zp"),
                  numpy_helper.from_array((x_scale * w_scale).reshape(1, 3, 1, 1), "scale")]  # fmt: skip
    else:
        quantize = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "x_scale", "x_zp"]),
                    helper.make_node("Mul", ["x_scale", "w_scale"], ["scale_dyn"])]  # fmt: skip
        scale = ["scale_dyn"]
        params = [numpy_helper.from_array(w_scale, "w_scale")]
    nodes = [
        *quantize,
        helper.make_node("ConvInteger", ["xq", "wq", "x_zp", "w_zp"], ["acc"], name="conv"),
        helper.make_node("Reshape", ["bias", "bias_shape"], ["bias_r"]),
        helper.make_node("Add", ["acc", "bias_r"], ["acc_b"], name="bias_add"),
        helper.make_node("Cast", ["acc_b"], ["acc_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["acc_f", *scale], ["y"], name="rescale"),
    ]
    initializers = [
        numpy_helper.from_array(x, "x"), numpy_helper.from_array(wq, "wq"),
        numpy_helper.from_array(np.array(0, np.int8), "w_zp"),
        numpy_helper.from_array(bias, "bias"),
        numpy_helper.from_array(np.array([1, 3, 1, 1], np.int64), "bias_shape"), *params,
    ]  # fmt: skip
    return _model(nodes, initializers, ["y"]), wq, w_scale, x_scale, bias


def test_an_int32_bias_add_before_the_cast_and_mul_is_seen_through(tmp_path):
    model, wq, w_scale, x_scale, bias = _conv_integer_with_int32_bias(static=True)
    graph = _load(tmp_path, model).graph
    dq_w = find_dequantization(graph, "wq")
    # The weight's own scale: the stored x_scale · w_scale over the QuantizeLinear's x_scale.
    assert dq_w is not None and dq_w.granularity == "per-axis" and dq_w.axis == 0
    np.testing.assert_allclose(dq_w.scale, w_scale, rtol=1e-6)
    assert "from ConvInteger 'conv'" in dq_w.describe()
    dq_b = find_dequantization(graph, "bias")  # the bias: by the whole x_scale · w_scale
    assert dq_b is not None and "from Add 'bias_add' through Reshape" in dq_b.describe()
    np.testing.assert_allclose(dq_b.dequantize(bias), bias * x_scale * w_scale, rtol=1e-6)
    # What the graph computes is a float Conv of exactly these real values.
    real_w, real_b = dq_w.dequantize(wq), dq_b.dequantize(bias)
    reference = _model(
        [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["xq"]),
         helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zp"], ["xr"]),
         helper.make_node("Conv", ["xr", "w", "b"], ["y"])],
        [numpy_helper.from_array(_initializer(model, "x"), "x"),
         numpy_helper.from_array(np.array(x_scale), "x_scale"),
         numpy_helper.from_array(np.array(128, np.uint8), "x_zp"),
         numpy_helper.from_array(real_w, "w"), numpy_helper.from_array(real_b, "b")],
        ["y"],
    )  # fmt: skip
    np.testing.assert_allclose(
        _reference_output(model), _reference_output(reference), rtol=1e-5, atol=1e-5
    )
    stats = graph.initializers["wq"].stats(dequantize=dq_w)  # real units, not -127..127
    assert stats.max == pytest.approx(float(real_w.max()))
    assert stats.max <= 127 * float(w_scale.max()) * (1 + 1e-6)


def test_an_int32_bias_with_a_run_time_activation_scale(tmp_path):
    model, wq, w_scale, _, _ = _conv_integer_with_int32_bias(static=False)
    graph = _load(tmp_path, model).graph
    dq_w = find_dequantization(graph, "wq")  # the stored factor of Mul(x_scale, w_scale)
    assert dq_w is not None and dq_w.scale_name == "w_scale"
    np.testing.assert_allclose(dq_w.dequantize(wq), wq * w_scale.reshape(3, 1, 1, 1), rtol=1e-6)
    with pytest.raises(ScaleUnknownError, match="computed at run time"):
        find_dequantization(graph, "bias")  # scaled by x_scale · w_scale: x_scale unknown


def _initializer(model: onnx.ModelProto, name: str) -> np.ndarray:
    return numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == name))


def test_a_quantized_embedding_reaches_its_scale_through_gather_reshape_and_cast(tmp_path):
    table = RNG.integers(0, 256, (10, 4)).astype(np.uint8)
    ids = np.array([[1, 3], [7, 7]], np.int64)
    model = _model(
        [helper.make_node("Gather", ["E", "ids"], ["rows"], name="embed"),
         helper.make_node("Reshape", ["rows", "shape"], ["flat"], name="flatten"),
         helper.make_node("Cast", ["flat"], ["same"], to=TensorProto.UINT8),
         helper.make_node("DequantizeLinear", ["same", "s", "zp"], ["y"], name="dq")],
        [numpy_helper.from_array(table, "E"), numpy_helper.from_array(ids, "ids"),
         numpy_helper.from_array(np.array([4, 4], np.int64), "shape"),
         numpy_helper.from_array(np.array(0.1, np.float32), "s"),
         numpy_helper.from_array(np.array(120, np.uint8), "zp")],
        ["y"],
    )  # fmt: skip
    graph = _load(tmp_path, model).graph
    dq = find_dequantization(graph, "E")
    assert dq is not None and dq.granularity == "per-tensor"
    assert "through Gather 'embed' → Reshape 'flatten' → Cast" in dq.describe()
    real = dq.dequantize(table)
    np.testing.assert_allclose(real, (table.astype(np.float32) - 120) * np.float32(0.1))
    np.testing.assert_allclose(_reference_output(model), real[ids].reshape(4, 4), rtol=1e-6)
    assert find_dequantization(graph, "ids") is None  # the indices are not carried


@pytest.mark.parametrize("carrier", ["Transpose", "Reshape"])
def test_a_per_axis_scale_is_placed_back_through_transpose_or_reshape(tmp_path, carrier):
    if carrier == "Transpose":  # stored [4, 6], read as [6, 4]: the scale runs along axis 0
        q = RNG.integers(-128, 128, (4, 6)).astype(np.int8)
        move = helper.make_node("Transpose", ["w"], ["moved"], perm=[1, 0])
        extra, expected_axis = [], 0
    else:  # stored [2, 3, 4], read as [6, 4]: along its one axis of 4
        q = RNG.integers(-128, 128, (2, 3, 4)).astype(np.int8)
        move = helper.make_node("Reshape", ["w", "shape"], ["moved"])
        extra = [numpy_helper.from_array(np.array([6, 4], np.int64), "shape")]
        expected_axis = 2
    scales = np.array([0.5, 0.25, 0.125, 2.0], np.float32)
    model = _model(
        [move, helper.make_node("DequantizeLinear", ["moved", "s"], ["y"], axis=1)],
        [numpy_helper.from_array(q, "w"), numpy_helper.from_array(scales, "s"), *extra],
        ["y"],
    )
    dq = find_dequantization(_load(tmp_path, model).graph, "w")
    assert dq is not None and dq.axis == expected_axis
    real = dq.dequantize(q)
    moved = real.T if carrier == "Transpose" else real.reshape(6, 4)
    np.testing.assert_allclose(_reference_output(model), moved, rtol=1e-6)
