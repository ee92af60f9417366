"""Issue 14's weights audit: onnxruntime's dynamic quantization is understood, integer
sentinels (INT64_MAX as a Slice end) do not pose as huge weights, and the learned values
of ``ai.onnx.ml`` models (kept in attributes) count as parameters."""

from __future__ import annotations

import html
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.weights._attribute_parameters import attribute_totals
from onnx_explorer.weights._quant import ScaleUnknownError, find_dequantization
from onnx_explorer.weights._report import weights_report
from onnx_explorer.widgets._tensor_panel import TensorPanel

RNG = np.random.default_rng(14)
INT64_MAX, INT64_MIN, INT32_MAX = 2**63 - 1, -(2**63), 2**31 - 1


def _model(nodes, arrays, inputs=(), outputs=("out",), ml=False) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "audit",
        [helper.make_tensor_value_info(n, t, None) for n, t in inputs],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs],
        [numpy_helper.from_array(a, n) for n, a in arrays.items()],
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    if ml:
        opsets.append(helper.make_opsetid("ai.onnx.ml", 3))
    return helper.make_model(graph, opset_imports=opsets)


def _save(tmp_path, model) -> str:
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return str(path)


def _row(rows, name):
    return next(r for r in rows if r["name"] == name)


# -- a) onnxruntime dynamic quantization ----------------------------------------------
def _dynamic_matmul(w_q, w_zp, w_scale):
    """What ``quantize_dynamic`` writes for ``X @ W``: the weight's scale only reaches the
    result through ``Mul(Cast(MatMulInteger(...)), Mul(x_scale, w_scale))``."""
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["X"], ["xq", "xs", "xzp"], name="dql"),
        helper.make_node("MatMulInteger", ["xq", "W_q", "xzp", "W_zp"], ["y"], name="mm_quant"),
        helper.make_node("Cast", ["y"], ["yf"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["xs", "W_scale"], ["s"], name="mm_quant_scales_mul"),
        helper.make_node("Mul", ["yf", "s"], ["out"], name="mm_quant_output_scale_mul"),
    ]
    arrays = {"W_q": w_q, "W_zp": w_zp, "W_scale": w_scale}
    return _model(nodes, arrays, [("X", TensorProto.FLOAT)], ["out", "xq", "xs", "xzp"])


def test_matmul_integer_weight_takes_its_scale_from_the_mul_after_it(tmp_path):
    w_q = RNG.integers(0, 256, (6, 4), dtype=np.uint8)
    model = _dynamic_matmul(w_q, np.array(131, np.uint8), np.array(0.02, np.float32))
    graph = ox.load(_save(tmp_path, model)).graph
    dq = find_dequantization(graph, "W_q")
    assert dq is not None and dq.granularity == "per-tensor"
    assert (dq.op, dq.scale_name, dq.zero_point_name) == ("MatMulInteger", "W_scale", "W_zp")
    real = dq.dequantize(w_q)
    np.testing.assert_allclose(real, (w_q.astype(np.float32) - 131) * np.float32(0.02))
    # The model's own result is the dequantized input times these real weights.
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    out, xq, xs, xzp = ReferenceEvaluator(model).run(None, {"X": x})
    x_real = (xq.astype(np.float32) - float(xzp)) * xs
    np.testing.assert_allclose(out, x_real @ real, rtol=1e-5, atol=1e-6)


def test_matmul_integer_per_column_zero_points_and_scales(tmp_path):
    w_q = RNG.integers(-128, 128, (5, 3), dtype=np.int8)
    zp = np.array([0, 4, -7], np.int8)
    scale = np.array([0.5, 0.01, 3.0], np.float32)
    model = _dynamic_matmul(w_q, zp, scale)
    graph = ox.load(_save(tmp_path, model)).graph
    dq = find_dequantization(graph, "W_q")
    assert dq.granularity == "per-axis" and dq.axis == 1
    np.testing.assert_allclose(dq.dequantize(w_q), (w_q.astype(np.float32) - zp) * scale)


def test_conv_integer_with_a_per_channel_scale_shaped_for_its_output(tmp_path):
    w_q = RNG.integers(0, 256, (4, 2, 3, 3), dtype=np.uint8)
    zp = np.array([128, 0, 7, 255], np.uint8)
    scale = np.array([0.1, 0.02, 1.5, 0.003], np.float32).reshape(4, 1, 1)  # to fit NCHW
    nodes = [
        helper.make_node("ConvInteger", ["x", "w_q", "", "w_zp"], ["y"], name="conv"),
        helper.make_node("Cast", ["y"], ["yf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["w_scale", "yf"], ["out"]),  # the scale as first operand
    ]
    model = _model(nodes, {"w_q": w_q, "w_zp": zp, "w_scale": scale}, [("x", TensorProto.UINT8)])
    dq = find_dequantization(ox.load(_save(tmp_path, model)).graph, "w_q")
    assert dq.op == "ConvInteger" and dq.granularity == "per-axis" and dq.axis == 0
    hand = (w_q.astype(np.float32) - zp[:, None, None, None]) * scale.reshape(4, 1, 1, 1)
    np.testing.assert_allclose(dq.dequantize(w_q), hand, rtol=1e-6)


CASES = {
    # op: (inputs with "W" the weight, "Ws" its scale, "Wzp" its zero point; attributes)
    "DynamicQuantizeMatMul": (["A", "W", "Ws", "Wzp"], {}),
    "MatMulIntegerToFloat": (["A", "W", "As", "Ws", "Azp", "Wzp"], {}),
    "QAttention": (["A", "W", "bias", "As", "Ws", "", "Azp", "Wzp"], {"num_heads": 2}),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_com_microsoft_weight_scale_and_zero_point_positions(tmp_path, op):
    inputs, attrs = CASES[op]
    w_q = RNG.integers(0, 256, (4, 6), dtype=np.uint8)
    scale = RNG.uniform(0.01, 1.0, 6).astype(np.float32)  # per column
    zp = RNG.integers(0, 256, 6, dtype=np.uint8)
    decoys = {"As": np.array(9.0, np.float32), "Azp": np.array(200, np.uint8)}
    arrays = {"W": w_q, "Ws": scale, "Wzp": zp, **decoys}
    node = helper.make_node(op, inputs, ["out"], domain="com.microsoft", name="q", **attrs)
    graph = ox.load(_save(tmp_path, _model([node], arrays, [("A", TensorProto.FLOAT)]))).graph
    dq = find_dequantization(graph, "W")
    assert (dq.scale_name, dq.zero_point_name, dq.axis) == ("Ws", "Wzp", 1)
    np.testing.assert_allclose(dq.dequantize(w_q), (w_q.astype(np.float32) - zp) * scale)


def test_dynamic_quantize_lstm_scales_per_direction_and_per_gate_column(tmp_path):
    d, i, h = 2, 3, 2
    w_q = RNG.integers(-128, 128, (d, i, 4 * h), dtype=np.int8)
    r_q = RNG.integers(-128, 128, (d, h, 4 * h), dtype=np.int8)
    w_scale = RNG.uniform(0.01, 1.0, (d, 4 * h)).astype(np.float32)  # per channel
    w_zp = RNG.integers(-5, 5, (d, 4 * h), dtype=np.int8)
    r_scale = np.array([0.5, 0.125], np.float32)  # per direction
    r_zp = np.array([3, -2], np.int8)
    inputs = ["X", "W", "R", "", "", "", "", "", "Ws", "Wzp", "Rs", "Rzp"]
    node = helper.make_node(
        "DynamicQuantizeLSTM",
        inputs,
        ["out"],
        domain="com.microsoft",
        hidden_size=h,
        direction="bidirectional",
        name="lstm",
    )
    arrays = {"W": w_q, "R": r_q, "Ws": w_scale, "Wzp": w_zp, "Rs": r_scale, "Rzp": r_zp}
    graph = ox.load(_save(tmp_path, _model([node], arrays, [("X", TensorProto.FLOAT)]))).graph
    w = find_dequantization(graph, "W")
    hand_w = (w_q.astype(np.float32) - w_zp[:, None, :]) * w_scale[:, None, :]
    np.testing.assert_allclose(w.dequantize(w_q), hand_w, rtol=1e-6)
    assert w.granularity == "per-axis" and "DynamicQuantizeLSTM" in w.describe()
    r = find_dequantization(graph, "R")
    assert r.axis == 0
    hand_r = (r_q.astype(np.float32) - r_zp[:, None, None]) * r_scale[:, None, None]
    np.testing.assert_allclose(r.dequantize(r_q), hand_r, rtol=1e-6)
    # Streaming statistics in chunks that cut the channels agree with the whole array.
    stats = graph.initializers["W"].stats(dequantize=w, chunk_elements=5)
    assert stats.min == pytest.approx(hand_w.min()) and stats.max == pytest.approx(hand_w.max())


def test_cli_dequantizes_dynamically_quantized_weights(tmp_path, capsys):
    w_q = np.array([[0, 255], [128, 100]], np.uint8)
    path = _save(tmp_path, _dynamic_matmul(w_q, np.array(128, np.uint8), np.array(0.5, np.float32)))
    assert main(["weights", path, "--json", "--dequantize"]) == 0
    row = _row(json.loads(capsys.readouterr().out), "W_q")
    assert (row["min"], row["max"]) == (-64.0, 63.5)  # (0 - 128) * 0.5, (255 - 128) * 0.5
    assert row["quantization"].startswith("per-tensor") and row["integer"] is False


def _unknown_scale_model():
    """A MatMulInteger whose result nobody scales by a stored number; the weight has a spike."""
    w_q = np.zeros((60, 60), np.int8)
    w_q[0, 0] = 127
    node = helper.make_node("MatMulInteger", ["x", "W_q", "", "W_zp"], ["out"], name="mm")
    arrays = {"W_q": w_q, "W_zp": np.array(1, np.int8)}
    return _model([node], arrays, [("x", TensorProto.INT8)])


def test_zero_point_without_a_scale_is_labelled_not_dequantized(tmp_path, capsys):
    path = _save(tmp_path, _unknown_scale_model())
    model = ox.load(path)
    with pytest.raises(ScaleUnknownError, match="quantized \\(scale unknown\\)"):
        find_dequantization(model.graph, "W_q")
    for dequantize in (False, True):
        row = _row(
            weights_report(model, progress=False, as_list=True, dequantize=dequantize), "W_q"
        )
        assert row["quantization"].startswith("quantized (scale unknown)")
        assert (row["min"], row["max"]) == (0, 127)  # the stored integers, not "real" values
        assert "outlier" not in row["flags"]  # raw int8 codes are not magnitudes
    assert main(["weights", path]) == 0
    assert "scale unknown" in capsys.readouterr().out
    panel = TensorPanel(model.graph)
    panel.listing.value = "W_q"
    assert "quantized (scale unknown)" in html.unescape(panel.details.value)
    assert panel.dequantize_box.layout.display == "none"  # nothing to toggle


def test_raw_quantized_codes_are_not_outliers_but_their_real_values_can_be(tmp_path):
    w_q = np.zeros(3000, np.int8)
    w_q[7] = 127
    node = helper.make_node("DequantizeLinear", ["w_q", "s"], ["out"], name="dq")
    model = ox.load(_model([node], {"w_q": w_q, "s": np.array(0.1, np.float32)}))
    raw = _row(weights_report(model, progress=False, as_list=True), "w_q")
    assert raw["flags"] == "" and raw["integer"] is True
    real = _row(weights_report(model, progress=False, as_list=True, dequantize=True), "w_q")
    assert real["flags"] == "outlier" and real["integer"] is False


# -- b) integer sentinels --------------------------------------------------------------
def _sentinel_model():
    indices = np.zeros(3000, np.int64)
    indices[0] = INT64_MAX  # a sentinel far from everything else: no outlier for integers
    arrays = {
        "weight": RNG.standard_normal((8, 8)).astype(np.float32),
        "gain": np.full(8, 0.5, np.float32),
        "starts": np.array([0], np.int64),
        "ends": np.array([INT64_MAX], np.int64),
        "rev_starts": np.array([INT64_MIN], np.int64),
        "shape": np.array([-1, 4], np.int64),
        "limit": np.array([INT32_MAX], np.int32),
        "indices": indices,
    }
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends"], ["a"]),
        helper.make_node("Slice", ["a", "rev_starts", "ends"], ["b"]),
        helper.make_node("Reshape", ["b", "shape"], ["out"]),
    ]
    return _model(nodes, arrays, [("x", TensorProto.FLOAT)])


def test_integer_sentinels_rank_after_real_weights_and_are_never_outliers(tmp_path):
    model = ox.load(_save(tmp_path, _sentinel_model()))
    rows = weights_report(model, progress=False, as_list=True, sort="abs_max")
    assert [r["name"] for r in rows[:2]] == ["weight", "gain"]
    assert all(r["integer"] for r in rows[2:])
    assert not any("outlier" in r["flags"] for r in rows)
    by = {r["name"]: r for r in rows}
    assert by["ends"]["max"] == INT64_MAX and by["rev_starts"]["min"] == INT64_MIN  # exact


def test_integers_print_whole_and_columns_widen(tmp_path, capsys):
    path = _save(tmp_path, _sentinel_model())
    assert main(["weights", path, "--sort", "name"]) == 0
    text = capsys.readouterr().out
    assert "-9223372036854775808" in text and "9223372036854775807" in text
    assert "2147483647" in text and "…" not in text
    header, *lines = text.splitlines()
    start = header.index("max")  # every max cell starts under its header
    ends = next(line for line in lines if line.startswith("ends "))
    assert ends[start:].startswith("9223372036854775807")
    assert main(["weights", path, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert _row(rows, "rev_starts")["min"] == INT64_MIN  # JSON keeps integers exact


# -- c) parameters stored in attributes ------------------------------------------------
ML_ATTRIBUTES = {
    "scaler": ("Scaler", {"offset": [1.0, 2.0, 3.0], "scale": [0.5, 0.5, 0.25]}),
    "tree": (
        "TreeEnsembleRegressor",
        {
            "nodes_treeids": [0, 0, 0],
            "nodes_nodeids": [0, 1, 2],
            "nodes_featureids": [2, 0, 0],
            "nodes_values": [0.75, 0.0, 0.0],
            "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"],
            "nodes_truenodeids": [1, 0, 0],
            "nodes_falsenodeids": [2, 0, 0],
            "target_ids": [0, 0],
            "target_nodeids": [1, 2],
            "target_treeids": [0, 0],
            "target_weights": [-1.5, 4.0],
        },
    ),
    "linear": ("LinearRegressor", {"coefficients": [0.1, 0.2, 0.3], "intercepts": [9.0]}),
    "svm": (
        "SVMRegressor",
        {
            "support_vectors": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "coefficients": [0.5, -0.5],
            "rho": [0.25],
        },
    ),
    "encoder": ("LabelEncoder", {"keys_strings": ["cat", "dog"], "values_int64s": [1, 2]}),
}
ML_VALUES = sum(len(v) for _, attrs in ML_ATTRIBUTES.values() for v in attrs.values())


def _ml_model():
    settings = {"tree": {"n_targets": 1}, "svm": {"n_supports": 2, "kernel_type": "LINEAR"}}
    nodes = [
        helper.make_node(
            op,
            ["label" if name == "encoder" else "x"],
            [f"{name}_out"],
            name=name,
            domain="ai.onnx.ml",
            **attrs,
            **settings.get(name, {}),
        )
        for name, (op, attrs) in ML_ATTRIBUTES.items()
    ]
    inputs = [("x", TensorProto.FLOAT), ("label", TensorProto.STRING)]
    return _model(nodes, {}, inputs, [f"{n}_out" for n in ML_ATTRIBUTES], ml=True)


def test_learned_attribute_lists_are_weights_rows(tmp_path):
    model = ox.load(_save(tmp_path, _ml_model()))
    assert not list(model.weights())  # no tensor at all: every learned value is an attribute
    rows = weights_report(model, progress=False, as_list=True)
    assert sum(r["parameters"] for r in rows) == ML_VALUES
    assert {r["kind"] for r in rows} == {"attribute"} and not any(r["error"] for r in rows)
    values = _row(rows, "tree.nodes_values")
    assert (values["node"], values["dtype"], values["shape"]) == ("tree", "float32", (3,))
    assert (values["min"], values["max"]) == (0.0, 0.75)
    weights = _row(rows, "tree.target_weights")
    assert (weights["min"], weights["max"]) == (-1.5, 4.0)
    assert _row(rows, "svm.support_vectors")["parameters"] == 6
    assert _row(rows, "encoder.values_int64s")["max"] == 2
    keys = _row(rows, "encoder.keys_strings")  # counted; no statistics for strings
    assert keys["parameters"] == 2 and keys["min"] is None and keys["error"] is None
    totals = attribute_totals(model)  # what a summary adds to its parameter count
    assert (totals.values, totals.nodes) == (ML_VALUES, len(ML_ATTRIBUTES))
    assert totals.describe() == f"in attributes: {ML_VALUES} values in 5 nodes"


def test_cli_counts_parameters_in_attributes(tmp_path, capsys):
    path = _save(tmp_path, _ml_model())
    assert main(["weights", path, "--top", "1"]) == 0
    text = capsys.readouterr().out
    assert f"{ML_VALUES} parameters in all, in attributes: {ML_VALUES} values in 5 nodes" in text


def test_summary_counts_parameters_in_attributes_on_their_own_line(tmp_path, capsys):
    path = _save(tmp_path, _ml_model())
    assert main(["summary", path]) == 0
    text = capsys.readouterr().out
    assert f"in attributes: {ML_VALUES} values in 5 nodes" in text
    assert main(["summary", path, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["parameters"] == ML_VALUES  # no tensor: every parameter is in an attribute
    assert info["attribute_parameters"]["values"] == ML_VALUES
    assert info["attribute_parameters"]["nodes"] == 5
