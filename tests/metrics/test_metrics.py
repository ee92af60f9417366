"""``onnx_explorer.metrics``: where parameters, memory and compute go, node by node."""

from __future__ import annotations

import json
import sys

import numpy as np
import onnx
import pytest
from locations import DATA
from onnx import AttributeProto, TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.errors import ModelFormatError
from onnx_explorer.metrics import read_ort_profile

F = TensorProto.FLOAT
U8 = TensorProto.UINT8


def _model(nodes, inputs, outputs, weights=None, value_info=(), opset=21, ms=False):
    """A model from nodes, {name: shape} inputs/outputs (float unless (dtype, shape))."""

    def infos(spec):
        made = []
        for name, shape in spec.items():
            dtype, dims = (
                shape if isinstance(shape, tuple) and isinstance(shape[1], list) else (F, shape)
            )
            made.append(helper.make_tensor_value_info(name, dtype, dims))
        return made

    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (weights or {}).items()]
    graph = helper.make_graph(
        nodes, "g", infos(inputs), infos(outputs), inits, value_info=list(value_info)
    )
    opsets = [helper.make_opsetid("", opset)]
    if ms:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    return ox.load(helper.make_model(graph, opset_imports=opsets))


def _w(*shape, dtype=np.float32):
    return np.ones(shape, dtype=dtype)


def _macs(model, **kw):
    rows = ox.metrics(model, infer=False, **kw).rows
    return rows[0]["macs"]


# -- one rule each, counted by hand ----------------------------------------------------
def test_conv_costs_kernel_times_input_channels_per_output_plus_its_bias():
    node = helper.make_node("Conv", ["X", "W", "B"], ["Y"], pads=[1, 1, 1, 1])
    model = _model(
        [node], {"X": [1, 3, 8, 8]}, {"Y": [1, 4, 8, 8]}, {"W": _w(4, 3, 3, 3), "B": _w(4)}
    )
    assert _macs(model) == 256 * 27 + 256  # 256 outputs × (3 channels × 3 × 3), + bias


def test_grouped_conv_counts_only_its_groups_channels():
    node = helper.make_node("Conv", ["X", "W"], ["Y"], pads=[1, 1, 1, 1], group=4)
    model = _model([node], {"X": [1, 4, 8, 8]}, {"Y": [1, 4, 8, 8]}, {"W": _w(4, 1, 3, 3)})
    assert _macs(model) == 256 * 9


def test_conv_transpose_scatters_each_input_into_kernel_times_output_channels():
    node = helper.make_node("ConvTranspose", ["X", "W"], ["Y"], strides=[2, 2])
    model = _model([node], {"X": [1, 2, 4, 4]}, {"Y": [1, 3, 8, 8]}, {"W": _w(2, 3, 2, 2)})
    assert _macs(model) == 32 * 3 * 2 * 2


def test_quantized_convs_find_their_weight_where_the_op_puts_it():
    conv_int = helper.make_node("ConvInteger", ["X", "W"], ["Y"])
    model = _model([conv_int], {"X": (U8, [1, 3, 4, 4])}, {"Y": (TensorProto.INT32, [1, 2, 4, 4])},
                   {"W": _w(2, 3, 1, 1, dtype=np.uint8)})  # fmt: skip
    assert _macs(model) == 32 * 3
    qconv = helper.make_node(
        "QLinearConv", ["X", "xs", "xz", "W", "ws", "wz", "ys", "yz", "B"], ["Y"]
    )
    weights = {"W": _w(2, 3, 1, 1, dtype=np.uint8), "B": np.zeros(2, np.int32),
               "xs": np.float32(1), "ws": np.float32(1), "ys": np.float32(1),
               "xz": np.uint8(0), "wz": np.uint8(0), "yz": np.uint8(0)}  # fmt: skip
    model = _model([qconv], {"X": (U8, [1, 3, 4, 4])}, {"Y": (U8, [1, 2, 4, 4])}, weights)
    assert _macs(model) == 32 * 3 + 32


@pytest.mark.parametrize("op", ["MatMul", "MatMulInteger"])
def test_matmul_costs_outputs_times_the_shared_dimension(op):
    dtype = F if op == "MatMul" else U8
    out = F if op == "MatMul" else TensorProto.INT32
    node = helper.make_node(op, ["A", "B"], ["Y"])
    model = _model([node], {"A": (dtype, [2, 3, 4]), "B": (dtype, [4, 5])}, {"Y": (out, [2, 3, 5])})
    assert _macs(model) == 30 * 4


def test_qlinear_matmul_reads_a_from_its_first_input():
    node = helper.make_node("QLinearMatMul", ["A", "as", "az", "B", "bs", "bz", "ys", "yz"], ["Y"])
    ins = {"A": (U8, [3, 4]), "B": (U8, [4, 5]), "as": [], "bs": [], "ys": [],
           "az": (U8, []), "bz": (U8, []), "yz": (U8, [])}  # fmt: skip
    assert _macs(_model([node], ins, {"Y": (U8, [3, 5])})) == 15 * 4


def test_gemm_honours_trans_a_and_counts_the_bias_add():
    node = helper.make_node("Gemm", ["A", "B", "C"], ["Y"], transA=1)
    model = _model([node], {"A": [4, 3]}, {"Y": [3, 5]}, {"B": _w(4, 5), "C": _w(5)})
    assert _macs(model) == 15 * 4 + 15


def test_einsum_multiplies_every_distinct_index_size():
    node = helper.make_node("Einsum", ["A", "B"], ["Y"], equation="bij,bjk->bik")
    model = _model([node], {"A": [2, 3, 4], "B": [2, 4, 5]}, {"Y": [2, 3, 5]})
    assert _macs(model) == 2 * 3 * 4 * 5
    dots = helper.make_node("Einsum", ["A", "B"], ["Y"], equation="...ij,...jk")
    model = _model([dots], {"A": [2, 3, 4], "B": [2, 4, 5]}, {"Y": [2, 3, 5]})
    assert _macs(model) == 2 * 3 * 4 * 5


def test_lstm_costs_both_gate_products_per_step_batch_and_direction():
    node = helper.make_node("LSTM", ["X", "W", "R"], ["Y"], hidden_size=4)
    model = _model(
        [node], {"X": [5, 2, 3]}, {"Y": [5, 1, 2, 4]}, {"W": _w(1, 16, 3), "R": _w(1, 16, 4)}
    )
    assert _macs(model) == 5 * 2 * (16 * 3 + 16 * 4)


def test_bidirectional_gru_and_batch_first_rnn():
    gru = helper.make_node("GRU", ["X", "W", "R"], ["Y"], hidden_size=2, direction="bidirectional")
    model = _model(
        [gru], {"X": [4, 1, 3]}, {"Y": [4, 2, 1, 2]}, {"W": _w(2, 6, 3), "R": _w(2, 6, 2)}
    )
    assert _macs(model) == 4 * 1 * 2 * (6 * 3 + 6 * 2)
    rnn = helper.make_node("RNN", ["X", "W", "R"], ["Y"], hidden_size=2, layout=1)
    model = _model(
        [rnn], {"X": [3, 7, 5]}, {"Y": [3, 7, 1, 2]}, {"W": _w(1, 2, 5), "R": _w(1, 2, 2)}
    )
    assert _macs(model) == 7 * 3 * (2 * 5 + 2 * 2)  # seq 7, batch 3


def test_microsoft_attention_ops():
    att = helper.make_node("Attention", ["X", "W", "B"], ["Y"], domain="com.microsoft", num_heads=2)
    model = _model(
        [att], {"X": [2, 4, 8]}, {"Y": [2, 4, 8]}, {"W": _w(8, 24), "B": _w(24)}, ms=True
    )
    assert _macs(model) == 2 * 4 * 8 * 24 + 2 * 4 * 4 * (8 + 8)  # projection + QKᵀ + ·V
    mha = helper.make_node("MultiHeadAttention", ["Q", "K", "V"], ["Y"], domain="com.microsoft",
                           num_heads=2)  # fmt: skip
    ins = {"Q": [2, 4, 8], "K": [2, 6, 8], "V": [2, 6, 8]}
    assert _macs(_model([mha], ins, {"Y": [2, 4, 8]}, ms=True)) == 2 * 2 * 4 * 6 * 8
    gqa = helper.make_node("GroupQueryAttention", ["Q", "K", "V", "PK", "PV"], ["Y"],
                           domain="com.microsoft", num_heads=2, kv_num_heads=1)  # fmt: skip
    ins = {"Q": [1, 4, 8], "K": [1, 4, 4], "V": [1, 4, 4], "PK": [1, 1, 3, 4], "PV": [1, 1, 3, 4]}
    assert _macs(_model([gqa], ins, {"Y": [1, 4, 8]}, ms=True)) == 2 * 1 * 4 * (4 + 3) * 8


@pytest.mark.parametrize(
    ("node", "inputs", "output", "expected"),
    [
        (
            helper.make_node("LayerNormalization", ["X", "S"], ["Y"]),
            {"X": [2, 3, 4], "S": [4]},
            [2, 3, 4],
            24 * 5,
        ),
        (
            helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2], strides=[2, 2]),
            {"X": [1, 1, 4, 4]},
            [1, 1, 2, 2],
            4 * 4,
        ),
        (
            helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[3, 3]),
            {"X": [1, 2, 5, 5]},
            [1, 2, 3, 3],
            18 * 9,
        ),
        (
            helper.make_node("GlobalAveragePool", ["X"], ["Y"]),
            {"X": [1, 2, 3, 3]},
            [1, 2, 1, 1],
            18,
        ),
        (helper.make_node("ReduceMean", ["X"], ["Y"]), {"X": [4, 6]}, [1, 1], 24),
        (helper.make_node("Softmax", ["X"], ["Y"]), {"X": [2, 5]}, [2, 5], 10 * 3),
        (helper.make_node("Add", ["X", "B"], ["Y"]), {"X": [2, 3], "B": [3]}, [2, 3], 6),
        (helper.make_node("Relu", ["X"], ["Y"]), {"X": [2, 3]}, [2, 3], 6),
        (
            helper.make_node("Sum", ["X", "B", "C"], ["Y"]),
            {"X": [2, 3], "B": [3], "C": [3]},
            [2, 3],
            12,
        ),
        (helper.make_node("Transpose", ["X"], ["Y"]), {"X": [2, 3]}, [3, 2], 0),
        (
            helper.make_node("Reshape", ["X", "S"], ["Y"]),
            {"X": [2, 3], "S": (TensorProto.INT64, [1])},
            [6],
            0,
        ),
    ],
)
def test_normalisation_pooling_softmax_elementwise_and_the_rest(node, inputs, output, expected):
    assert _macs(_model([node], inputs, {"Y": output})) == expected


# -- parameters ------------------------------------------------------------------------
def test_a_shared_weight_counts_once_toward_its_first_reader():
    nodes = [helper.make_node("MatMul", ["X", "W"], ["H"], name="/a/MatMul"),
             helper.make_node("MatMul", ["H", "W"], ["Y"], name="/b/MatMul")]  # fmt: skip
    model = _model(nodes, {"X": [1, 4]}, {"Y": [1, 4]}, {"W": _w(4, 4)},
                   value_info=[helper.make_tensor_value_info("H", F, [1, 4])])  # fmt: skip
    result = ox.metrics(model)
    assert [r["params"] for r in result.rows] == [16, 0]
    assert [r["param_bytes"] for r in result.rows] == [64, 0]
    assert result.totals["params"] == 16


def test_constant_values_count_as_parameters_and_an_unread_one_counts_toward_itself():
    value = numpy_helper.from_array(_w(3, 2), "c")
    nodes = [helper.make_node("Constant", [], ["C"], value=value, name="const"),
             helper.make_node("Constant", [], ["unused"], value=value, name="spare"),
             helper.make_node("MatMul", ["X", "C"], ["Y"], name="mm")]  # fmt: skip
    rows = {r["name"]: r for r in ox.metrics(_model(nodes, {"X": [1, 3]}, {"Y": [1, 2]})).rows}
    assert rows["mm"]["params"] == 6 and rows["const"]["params"] == 0
    assert rows["spare"]["params"] == 6


def test_if_bodies_count_toward_their_node():
    def branch(name):
        mm = helper.make_node("MatMul", ["X", "W"], [f"{name}_out"])
        return helper.make_graph(
            [mm], name, [], [helper.make_tensor_value_info(f"{name}_out", F, [1, 4])]
        )

    node = helper.make_node(
        "If", ["cond"], ["Y"], then_branch=branch("then"), else_branch=branch("else")
    )
    model = _model(
        [node], {"cond": (TensorProto.BOOL, []), "X": [1, 4]}, {"Y": [1, 4]}, {"W": _w(4, 4)}
    )
    (row,) = ox.metrics(model).rows
    assert row["macs"] == 16  # the larger branch: one of them runs
    assert row["params"] == 16  # the weight both branches read, once


# -- shapes: bound, assumed, unknown ---------------------------------------------------
def _symbolic():
    node = helper.make_node("MatMul", ["X", "W"], ["Y"], name="/enc/MatMul")
    return _model(
        [node], {"X": ["batch", "sequence", 4]}, {"Y": ["batch", "sequence", 2]}, {"W": _w(4, 2)}
    )


def test_symbolic_dims_take_the_bound_sizes():
    result = ox.metrics(_symbolic(), dims={"batch": 2, "sequence": 3})
    assert result.rows[0]["macs"] == 2 * 3 * 2 * 4
    assert result.rows[0]["activation_bytes"] == 2 * 3 * 2 * 4
    assert result.assumed_dims == ()


def test_unbound_input_dims_take_a_default_by_kind_said_in_one_line():
    result = ox.metrics(_symbolic(), dims={"batch": 2})
    assert result.rows[0]["macs"] == 2 * 128 * 2 * 4  # sequence: 128 by default
    assert result.assumed_dims == ("sequence",)
    assert result.assumed_line == (
        "assumed input sizes: sequence=128 (sequence); bind them with dims={'sequence': 128}"
    )


def test_unknown_shapes_give_none_not_zero_and_are_counted():
    node = helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")
    model = _model([node], {"X": [None, 4]}, {"Y": [None, 2]}, {"W": _w(4, 2)})
    result = ox.metrics(model, infer=False)
    assert result.rows[0]["macs"] is None and result.rows[0]["activation_bytes"] is None
    assert result.unknown == {"macs": 1, "activation_bytes": 1}
    assert result.series("macs") == {} and result.totals["macs"] == 0


def test_shapes_missing_from_the_file_come_from_inference():
    nodes = [helper.make_node("MatMul", ["X", "W"], ["H"], name="mm"),
             helper.make_node("Relu", ["H"], ["Y"], name="relu")]  # fmt: skip
    model = _model(nodes, {"X": [3, 4]}, {"Y": [3, 2]}, {"W": _w(4, 2)})  # H has no shape stored
    assert ox.metrics(model, infer=False).rows[0]["macs"] is None
    assert ox.metrics(model).rows[0]["macs"] == 3 * 2 * 4


@pytest.mark.parametrize("dims", [{"batch": "one"}, {"batch": -1}, {"batch": 1.5}, {"batch": True}])
def test_dims_that_are_not_sizes_are_refused_by_name(dims):
    with pytest.raises(ValueError, match="batch"):
        ox.metrics(_symbolic(), dims=dims)


# -- totals, series, pandas ------------------------------------------------------------
def _layers():
    nodes = [helper.make_node("MatMul", ["X", "W0"], ["H"], name="/enc/l0/MatMul"),
             helper.make_node("MatMul", ["H", "W1"], ["Y"], name="/enc/l1/MatMul"),
             helper.make_node("Relu", ["Y"], ["Z"], name="Relu")]  # fmt: skip
    return _model(nodes, {"X": [1, 4]}, {"Z": [1, 4]}, {"W0": _w(4, 4), "W1": _w(4, 4)},
                  value_info=[helper.make_tensor_value_info(n, F, [1, 4]) for n in "HY"])  # fmt: skip


def test_scope_totals_include_everything_beneath_them():
    result = ox.metrics(_layers())
    scopes = {s["scope"]: s for s in result.by_scope()}
    assert set(scopes) == {"enc", "enc/l0", "enc/l1"}
    assert (
        scopes["enc"]["macs"] == 32
        and scopes["enc"]["params"] == 32
        and scopes["enc"]["nodes"] == 2
    )
    top = {s["scope"]: s["macs"] for s in result.by_scope(depth=1)}
    assert top == {"enc": 32, "": 4}
    assert sum(top.values()) == result.totals["macs"] == 36


def test_series_map_node_names_to_numbers_for_an_overlay():
    result = ox.metrics(_layers())
    assert result.series("macs") == {"/enc/l0/MatMul": 16, "/enc/l1/MatMul": 16, "Relu": 4}
    assert result.series("params")["/enc/l1/MatMul"] == 16
    with pytest.raises(ValueError, match="latency"):
        result.series("latency")


def test_to_pandas_keeps_unknown_values_missing():
    pd = pytest.importorskip("pandas")
    frame = ox.metrics(_layers()).to_pandas()
    assert list(frame["name"]) == ["/enc/l0/MatMul", "/enc/l1/MatMul", "Relu"]
    assert frame["macs"].sum() == 36 and str(frame["macs"].dtype) == "Int64"
    assert isinstance(frame, pd.DataFrame)


def test_to_pandas_without_pandas_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install onnx_explorer\[pandas\]"):
        ox.metrics(_layers()).to_pandas()


# -- GraphDef --------------------------------------------------------------------------
def _shape(*dims):
    return "shape { " + " ".join(f"dim {{ size: {d} }}" for d in dims) + " }"


def _const(name, *dims):
    return (f'node {{ name: "{name}" op: "Const" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} '
            f'attr {{ key: "value" value {{ tensor {{ dtype: DT_FLOAT tensor_{_shape(*dims)} '
            "float_val: 0.5 } } } }")  # fmt: skip


def _placeholder(name, *dims):
    return (f'node {{ name: "{name}" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} '
            f'attr {{ key: "shape" value {{ {_shape(*dims)} }} }} }}')  # fmt: skip


def _op(name, op, inputs, out_dims, extra=""):
    ins = " ".join(f'input: "{i}"' for i in inputs)
    return (f'node {{ name: "{name}" op: "{op}" {ins} attr {{ key: "T" value {{ type: DT_FLOAT }} }} {extra} '
            f'attr {{ key: "_output_shapes" value {{ list {{ {_shape(*out_dims)} }} }} }} }}')  # fmt: skip


def test_graphdef_conv2d_depthwise_and_matmul():
    text = "\n".join([
        _placeholder("x", 1, 8, 8, 3), _const("w", 3, 3, 3, 4), _const("dw", 3, 3, 4, 2),
        _op("conv", "Conv2D", ["x", "w"], (1, 8, 8, 4)),
        _op("depthwise", "DepthwiseConv2dNative", ["conv", "dw"], (1, 8, 8, 8)),
        _placeholder("a", 5, 2), _const("b", 5, 3),
        _op("mm", "MatMul", ["a", "b"], (2, 3), 'attr { key: "transpose_a" value { b: true } }'),
        _op("relu", "Relu", ["mm"], (2, 3)),
    ])  # fmt: skip
    model = ox.load(text.encode())
    rows = {r["name"]: r for r in ox.metrics(model).rows}
    assert rows["conv"]["macs"] == 8 * 8 * 4 * (3 * 3 * 3)
    assert rows["conv"]["params"] == 3 * 3 * 3 * 4
    assert rows["depthwise"]["macs"] == 8 * 8 * 8 * (3 * 3)
    assert rows["mm"]["macs"] == 6 * 5  # transpose_a: the shared dimension is a's first
    assert rows["relu"]["macs"] == 6
    assert rows["conv"]["activation_bytes"] == 8 * 8 * 4 * 4


# -- command line ----------------------------------------------------------------------
def _save(model_proto_model, tmp_path):
    path = tmp_path / "m.onnx"
    proto, _ = model_proto_model.support.runtime_model(model_proto_model)  # the whole proto
    onnx.save(proto, path)
    return path


def test_cli_prints_the_heaviest_nodes_and_the_totals(tmp_path, capsys):
    path = _save(_symbolic(), tmp_path)
    assert main(["metrics", str(path), "--dims", "batch=2"]) == 0
    out = capsys.readouterr().out
    assert "/enc/MatMul" in out and "2.0k" in out  # 2 × 128 × 2 × 4 MACs
    assert "total: 1 nodes" in out
    assert "assumed input sizes: sequence=128 (sequence); bind them with --dims" in out


def test_cli_json_and_scope_rows(tmp_path, capsys):
    path = _save(_layers(), tmp_path)
    assert main(["metrics", str(path), "--json", "--by", "scope", "--depth", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["totals"]["macs"] == 36
    assert [s["scope"] for s in out["scopes"]] == ["enc", ""]  # largest first
    assert main(["metrics", str(path), "--json", "--top", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["rows"]) == 1 and out["rows"][0]["macs"] == 16


def test_cli_refuses_bad_dims_in_one_line(tmp_path, capsys):
    path = _save(_symbolic(), tmp_path)
    assert main(["metrics", str(path), "--dims", "batch=two"]) == 1
    err = capsys.readouterr().err
    assert "batch" in err and "'two'" in err and "Traceback" not in err


def test_cli_writes_names_from_the_file_terminal_safe(tmp_path, capsys):
    node = helper.make_node("Relu", ["X"], ["Y"], name="evil\x1b[2J/Relu")
    path = _save(_model([node], {"X": [2]}, {"Y": [2]}), tmp_path)
    assert main(["metrics", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b" in out


# -- onnxruntime profiles --------------------------------------------------------------
def _profiled_run(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    nodes = [helper.make_node("MatMul", ["X", "W"], ["H"], name="/l0/MatMul"),
             helper.make_node("Relu", ["H"], ["R"], name="/l0/Relu"),
             helper.make_node("MatMul", ["R", "W"], ["M"], name="/l1/MatMul"),
             helper.make_node("Sigmoid", ["M"], ["S"], name="/l1/Sigmoid"),
             helper.make_node("Mul", ["S", "M"], ["Y"], name="/l1/Mul")]  # fmt: skip
    model = _model(nodes, {"X": [4, 8]}, {"Y": [4, 8]}, {"W": _w(8, 8)}, opset=17)
    path = tmp_path / "m.onnx"
    onnx.save(model.support.runtime_model(model)[0], path)
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "profile")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    for _ in range(3):
        session.run(None, {"X": np.ones((4, 8), np.float32)})
    return model, session.end_profiling()


def test_an_onnxruntime_profile_maps_onto_the_models_nodes(tmp_path):
    model, profile_path = _profiled_run(tmp_path)
    profile = read_ort_profile(profile_path, model)
    assert len(profile.matched) >= 0.9 * len(model.graph.nodes)
    assert set(profile.series()) <= {n.name for n in model.graph.nodes}
    assert all(runs == 3 for runs in profile.runs.values())
    assert all(ms >= 0 for ms in profile.latency_ms.values())
    assert profile.op_types["/l0/MatMul"] == "MatMul"


def test_a_profile_of_another_model_says_how_many_names_matched(tmp_path):
    _, profile_path = _profiled_run(tmp_path)
    other = _layers()
    with pytest.raises(ModelFormatError, match=r"only 0 of 5 timed nodes match"):
        read_ort_profile(profile_path, other)


def test_fused_names_are_reported_not_dropped(tmp_path):
    events = [
        {
            "cat": "Node",
            "name": "/a/MatMul_kernel_time",
            "dur": 1000,
            "args": {"op_name": "MatMul"},
        },
        {
            "cat": "Node",
            "name": "/a/MatMul_kernel_time",
            "dur": 3000,
            "args": {"op_name": "MatMul"},
        },
        {"cat": "Node", "name": "/a/Add_/a/Relu_fused_kernel_time", "dur": 500, "args": {}},
        {"cat": "Session", "name": "model_run", "dur": 9000},
    ]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(events))
    nodes = [helper.make_node(op, ["X"], [op], name=f"/a/{op}") for op in ("MatMul", "Add", "Relu")]
    model = _model(nodes, {"X": [2]}, {op: [2] for op in ("MatMul", "Add", "Relu")})
    profile = read_ort_profile(path, model)
    assert profile.latency_ms["/a/MatMul"] == pytest.approx(2.0)  # mean of 1 and 3 ms
    assert profile.unmatched == ["/a/Add_/a/Relu_fused"]
    assert profile.missing == ["/a/Add", "/a/Relu"]
    assert "1 renamed by onnxruntime" in profile.summary()


def test_a_file_that_is_not_a_profile_is_refused(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("not json")
    with pytest.raises(ModelFormatError, match="not an onnxruntime profile"):
        read_ort_profile(path)


def test_the_drawing_and_metrics_share_one_shape_inference_run():
    # Layout thread, attribute panel and metrics all ask the model: inference runs once
    # (it takes seconds on big graphs, and a second run would block the kernel again).
    from onnx_explorer.samples import tiny_transformer
    from onnx_explorer.views._edge_types import value_types

    model = ox.load(tiny_transformer())
    runs = []
    inference = model.type_inference

    def counted(m, input_shapes=None):
        runs.append(1)
        return inference(m, input_shapes)

    model.type_inference = counted
    _types, note = value_types(model.graph, model)
    assert note.startswith("assumed input sizes: batch=1 (batch), sequence=128 (sequence)")
    rows = ox.metrics(model).rows
    assert any(r["macs"] for r in rows) and len(runs) == 1


# -- every MAC counted or declared unknown ----------------------------------------------
def test_an_op_without_a_rule_is_unknown_and_listed_never_a_silent_zero():
    node = helper.make_node("TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", F, [2, 4])],
        [helper.make_tensor_value_info("Y", F, [2, 1])],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    result = ox.metrics(ox.load(helper.make_model(graph, opset_imports=opsets)))
    assert result.rows[0]["macs"] is None
    assert result.unknown_ops == {"ai.onnx.ml::TreeEnsembleRegressor": 1}
    assert result.unknown["macs"] == 1


def test_data_movement_costs_zero_and_is_not_unknown():
    node = helper.make_node("Transpose", ["X"], ["Y"], perm=[1, 0])
    result = ox.metrics(_model([node], {"X": [2, 4]}, {"Y": [4, 2]}))
    assert result.rows[0]["macs"] == 0 and result.unknown_ops == {}


def _loop(trip_count):
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_in", "W"], ["x_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", F, [1, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", F, [1, 4])],
    )  # fmt: skip
    node = helper.make_node("Loop", ["M", "", "X"], ["Y"], body=body, name="loop")
    weights = {"W": _w(4, 4)}
    if trip_count is not None:
        weights["M"] = np.array(trip_count, np.int64)
    inputs = (
        {"X": [1, 4]} if trip_count is not None else {"X": [1, 4], "M": (TensorProto.INT64, [])}
    )
    return _model([node], inputs, {"Y": [1, 4]}, weights)


def test_a_loop_costs_its_body_times_a_constant_trip_count():
    (row,) = ox.metrics(_loop(5)).rows
    assert row["macs"] == 5 * 16


def test_a_loop_whose_trip_count_is_data_is_unknown():
    (row,) = ox.metrics(_loop(None), shapes="infer").rows
    assert row["macs"] is None


def test_a_scan_costs_its_body_times_the_scanned_length():
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", "W"], ["y_t"]),
         helper.make_node("Identity", ["s_in"], ["s_out"])],
        "body",
        [helper.make_tensor_value_info("s_in", F, [1]),
         helper.make_tensor_value_info("x_t", F, [1, 4])],
        [helper.make_tensor_value_info("s_out", F, [1]),
         helper.make_tensor_value_info("y_t", F, [1, 4])],
    )  # fmt: skip
    node = helper.make_node("Scan", ["S", "X"], ["S2", "Y"], body=body, num_scan_inputs=1)
    model = _model([node], {"S": [1], "X": [7, 1, 4]}, {"S2": [1], "Y": [7, 1, 4]}, {"W": _w(4, 4)})
    assert ox.metrics(model).rows[0]["macs"] == 7 * 16


def test_dft_and_stft_cost_the_transformed_length_per_output_value():
    dft = helper.make_node("DFT", ["X"], ["Y"], axis=1)
    model = _model([dft], {"X": [2, 16, 1]}, {"Y": [2, 16, 2]}, opset=17)
    assert _macs(model) == 2 * 16 * 2 * 16
    stft = helper.make_node("STFT", ["S", "step", "win"], ["Y"])
    model = _model(
        [stft], {"S": [1, 64, 1]}, {"Y": [1, 7, 9, 2]},
        {"step": np.array(8, np.int64), "win": _w(16)}, opset=17,
    )  # fmt: skip
    assert _macs(model) == 7 * 9 * 2 * 16


def test_a_call_of_a_local_function_counts_its_body_inferred_for_that_call():
    # The body's values are untyped in the file (as exporters write functions); each
    # call's body is inferred with the call's input sizes and attribute values.
    body = [
        helper.make_node("MatMul", ["a", "b"], ["h"]),
        helper.make_node("Transpose", ["h"], ["ht"]),
        helper.make_node("Transpose", ["ht"], ["h2"], perm=[1, 0]),
        helper.make_node("MatMul", ["h2", "b2"], ["c"]),
    ]
    ref = helper.make_attribute_ref("perm", AttributeProto.INTS)
    ref.name = "perm"
    body[1].attribute.append(ref)
    function = helper.make_function(
        "local", "Proj", ["a", "b", "b2"], ["c"], body, [helper.make_opsetid("", 17)],
        attributes=["perm"],
    )  # fmt: skip
    calls = [
        helper.make_node("Proj", ["X", "W", "V"], ["Y"], domain="local", name="small", perm=[1, 0]),
        helper.make_node("Proj", ["X8", "W", "V"], ["Y8"], domain="local", name="big", perm=[1, 0]),
    ]
    graph = helper.make_graph(
        calls, "g",
        [helper.make_tensor_value_info("X", F, [2, 4]), helper.make_tensor_value_info("X8", F, [8, 4])],
        [helper.make_tensor_value_info("Y", F, None), helper.make_tensor_value_info("Y8", F, None)],
        [numpy_helper.from_array(_w(4, 3), "W"), numpy_helper.from_array(_w(3, 5), "V")],
    )  # fmt: skip
    proto = helper.make_model(
        graph, functions=[function],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
    )  # fmt: skip
    rows = {r["name"]: r for r in ox.metrics(ox.load(proto), shapes="infer").rows}
    assert rows["small"]["macs"] == 2 * 3 * 4 + 2 * 5 * 3
    assert rows["big"]["macs"] == 8 * 3 * 4 + 8 * 5 * 3
    assert rows["small"]["params"] == 12 + 15 and rows["big"]["params"] == 0  # counted once


def test_dynamic_quantize_lstm_counts_its_gate_products():
    node = helper.make_node(
        "DynamicQuantizeLSTM",
        ["X", "W", "R", "", "", "", "", "Ws", "Wz", "Rs", "Rz"], ["Y"],
        domain="com.microsoft", hidden_size=8,
    )  # fmt: skip
    weights = {"W": _w(1, 4, 32, dtype=np.int8), "R": _w(1, 8, 32, dtype=np.int8),
               "Ws": _w(1), "Wz": _w(1, dtype=np.int8), "Rs": _w(1), "Rz": _w(1, dtype=np.int8)}  # fmt: skip
    model = _model([node], {"X": [5, 2, 4]}, {"Y": [5, 1, 2, 8]}, weights, ms=True)
    assert _macs(model) == 5 * 2 * (4 * 32 + 8 * 32)


def _detector(imgsz: str) -> ox.Model:
    """A 1×1 Conv over images[batch, 3, height, width], with Ultralytics' ``imgsz``."""
    conv = helper.make_node("Conv", ["images", "W"], ["Y"])
    graph = helper.make_graph(
        [conv], "g",
        [helper.make_tensor_value_info("images", F, ["batch", 3, "height", "width"])],
        [helper.make_tensor_value_info("Y", F, None)],
        [numpy_helper.from_array(_w(8, 3, 1, 1), "W")],
    )  # fmt: skip
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    helper.set_model_props(proto, {"imgsz": imgsz})
    return ox.load(proto)


def test_imgsz_metadata_sizes_a_detectors_spatial_dims():
    result = ox.metrics(_detector("[320, 256]"))
    assert result.rows[0]["macs"] == 8 * 320 * 256 * 3
    assert "height=320 (imgsz metadata), width=256 (imgsz metadata)" in result.assumed_line


def test_input_shapes_bind_inputs_declared_without_names():
    node = helper.make_node("MatMul", ["X", "W"], ["Y"])
    model = _model([node], {"X": [-1, 4]}, {"Y": [None, 2]}, {"W": _w(4, 2)})
    assert ox.metrics(model, input_shapes={"X": (5, 4)}).rows[0]["macs"] == 5 * 2 * 4
    with pytest.raises(ValueError, match="disagrees with the declared"):
        ox.metrics(model, input_shapes={"X": (5, 3)})
    with pytest.raises(ValueError, match="not an input"):
        ox.metrics(model, input_shapes={"nope": (5, 4)})


def test_derived_sizes_come_from_inference_on_the_bound_model():
    # Shape → Gather → Unsqueeze → Concat → Reshape: only data propagation on the bound
    # model knows the Reshape's output size; the MatMul after it counts from that.
    nodes = [
        helper.make_node("Shape", ["X"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
        helper.make_node("Concat", ["n1", "two2"], ["target"], axis=0),
        helper.make_node("Reshape", ["X", "target"], ["R"]),
        helper.make_node("MatMul", ["R", "W"], ["Y"], name="mm"),
    ]
    model = _model(
        nodes, {"X": ["n", 4]}, {"Y": [None, 2, 3]},
        {"zero": np.array(0, np.int64), "zero1": np.array([0], np.int64),
         "two2": np.array([2, 2], np.int64), "W": _w(2, 3)},
    )  # fmt: skip
    rows = {r["name"]: r for r in ox.metrics(model, dims={"n": 10}, shapes="infer").rows}
    assert rows["mm"]["macs"] == 10 * 2 * 3 * 2


def test_a_savedmodels_network_is_counted_through_its_function_calls():
    # TF2 SavedModel: serving_default_x → StatefulPartitionedCall → the signature wrapper
    # → StatefulPartitionedCall → __inference___call___26 (MatMul, AddV2, Relu, MatMul),
    # with every batch dim stored as -1: sized from the call site's bound input.

    path = DATA / "savedmodel" / "tf2_mlp"
    result = ox.metrics(ox.load(path), dims={"serving_default_x.0": 8})
    calls = {r["name"]: r["macs"] for r in result.rows}
    assert calls["StatefulPartitionedCall"] == 8 * 4 * 8 + 8 * 8 + 8 * 8 + 8 * 8 * 3
    assert result.assumed_line == ""
    default = ox.metrics(ox.load(path))
    assert "serving_default_x.0=1 (batch)" in default.assumed_line


def test_a_frozen_graphdef_without_stored_shapes_is_sized_from_its_bound_input():
    # Conv2D (SAME) → BiasAdd → Relu → MaxPool 2×2 → Reshape [-1, 128] → MatMul:
    # no _output_shapes in the file, the batch -1; every size follows from image.0.

    path = DATA / "graphdef" / "cnn_frozen.pb"
    rows = {r["name"]: r["macs"] for r in ox.metrics(ox.load(path), dims={"image.0": 2}).rows}
    assert rows["conv1/Conv2D"] == 2 * 8 * 8 * 8 * (3 * 3 * 3)
    assert rows["pool"] == 2 * 4 * 4 * 8 * (2 * 2)
    assert rows["dense/MatMul"] == 2 * 10 * 128


def _graphdef_residual_chain(blocks: int, relu_chain: int = 0) -> ox.Model:
    """x[-1,8,8,16] → blocks of (Relu, AddV2(prev, relu)) → a chain of Relus; no stored
    shapes: every size is worked out from the bound placeholder."""

    def op(name, kind, inputs):
        ins = " ".join(f'input: "{i}"' for i in inputs)
        return f'node {{ name: "{name}" op: "{kind}" {ins} attr {{ key: "T" value {{ type: DT_FLOAT }} }} }}'

    shape = " ".join(f"dim {{ size: {d} }}" for d in (-1, 8, 8, 16))
    lines = [f'node {{ name: "x" op: "Placeholder" attr {{ key: "dtype" value {{ type: DT_FLOAT }} }} '
             f'attr {{ key: "shape" value {{ shape {{ {shape} }} }} }} }}']  # fmt: skip
    prev = "x"
    for i in range(blocks):
        lines += [op(f"b{i}/relu", "Relu", [prev]), op(f"b{i}/add", "AddV2", [prev, f"b{i}/relu"])]
        prev = f"b{i}/add"
    for i in range(relu_chain):
        lines.append(op(f"r{i}", "Relu", [prev]))
        prev = f"r{i}"
    return ox.load("\n".join(lines).encode())


def test_graphdef_sizes_are_worked_out_once_per_value_however_deep():
    # Each residual block reads its input twice: without a memo the work doubled per
    # block (16 blocks took 5.5 s); a 3,000-deep chain must not exhaust the stack.
    result = ox.metrics(_graphdef_residual_chain(60, relu_chain=3000), dims={"x.0": 2})
    per_value = 2 * 8 * 8 * 16
    assert result.totals["macs"] == (60 * 2 + 3000) * per_value
    assert result.unknown["macs"] == 0
    assert result.unknown["activation_bytes"] == 0  # dtypes from the ops' T attributes


def test_a_loop_with_a_computed_condition_or_an_absurd_count_is_unknown_not_huge():
    model = _loop(2**62)  # torch's INT64_MAX-style bound
    assert ox.metrics(model, shapes="infer").rows[0]["macs"] is None
    assert ox.metrics(_loop(-5), shapes="infer").rows[0]["macs"] == 0


def test_nested_function_calls_are_walked_once_per_argument_shapes(monkeypatch):
    # F0 calls F1 ten times, F1 calls F2 ten times, ... : 10^6 bodies if walked naively.
    depth, fan = 6, 10
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    functions = []
    for d in range(depth):
        if d == depth - 1:
            nodes = [helper.make_node("Relu", ["a"], ["c"])]
        else:
            names = ["a", *(f"t{k}" for k in range(fan - 1)), "c"]
            nodes = [helper.make_node(f"F{d + 1}", [names[k]], [names[k + 1]], domain="local")
                     for k in range(fan)]  # fmt: skip
        functions.append(helper.make_function("local", f"F{d}", ["a"], ["c"], nodes, opsets))
    call = helper.make_node("F0", ["X"], ["Y"], domain="local", name="call")
    graph = helper.make_graph(
        [call], "g", [helper.make_tensor_value_info("X", F, [2, 4])],
        [helper.make_tensor_value_info("Y", F, [2, 4])],
    )  # fmt: skip
    proto = helper.make_model(graph, functions=functions, opset_imports=opsets)
    from onnx_explorer.metrics import _table as table

    walks = []
    rows = table._Walker.rows
    monkeypatch.setattr(table._Walker, "rows", lambda self, *a: walks.append(1) or rows(self, *a))
    result = ox.metrics(ox.load(proto), shapes="infer")
    assert len(result.rows) == 1
    # The main graph, then each body once per distinct argument shapes: the first call
    # of a level has its input's size, the nine after it read untyped values (10^6 naively).
    assert len(walks) <= 1 + 2 * depth


def test_the_observing_run_is_stopped_in_time_and_absurd_inputs_are_not_made(monkeypatch):
    # NonZero → MatMul: only a run knows the MatMul's size. A Loop of 10^11 trips would
    # keep onnxruntime busy for ever: the run is a child process, stopped at its limit.
    pytest.importorskip("onnxruntime")
    from onnx_explorer.runs import _observe

    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "one"], ["v_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", F, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", F, [1])],
    )  # fmt: skip
    nodes = [
        helper.make_node("Loop", ["M", "c", "z"], ["L"], body=body, name="loop"),
        helper.make_node("NonZero", ["X"], ["nz"]),
        helper.make_node("Cast", ["nz"], ["nzf"], to=F),
        helper.make_node("Transpose", ["nzf"], ["t"]),
        helper.make_node("MatMul", ["t", "W"], ["Y"], name="mm"),
    ]
    weights = {"M": np.array(10**11, np.int64), "c": np.array(True), "z": np.zeros(1, np.float32),
               "one": np.ones(1, np.float32), "W": _w(2, 2)}  # fmt: skip
    model = _model(nodes, {"X": ["n", 2]}, {"Y": [None, 2], "L": [1]}, weights, opset=17)
    monkeypatch.setattr(_observe, "OBSERVE_TIME_LIMIT", 2.0)
    result = ox.metrics(model)
    assert any("did not finish in 2 s" in note for note in result.notes)
    rows = {r["name"]: r["macs"] for r in result.rows}
    assert rows["mm"] is None and rows["loop"] is None  # unknown, never a made-up number
    huge = ox.metrics(model, dims={"n": 10**9})
    assert any("the inputs would take" in note for note in huge.notes)


def test_sizes_are_checked_where_they_are_given():
    model = _symbolic()
    assert ox.metrics(model, dims={"batch": np.int64(2), "sequence": 3}).rows[0]["macs"] == 48
    for bad in ({"X": 5}, {"X": None}, {"X": (1, "a", 4)}, {"X": "1,2,4"}):
        with pytest.raises(ValueError, match="input_shapes"):
            ox.metrics(model, input_shapes=bad)
    with pytest.raises(ValueError, match="batch"):
        ox.explore(model, dims={"batch": -1})


def test_the_cli_hint_is_cli_syntax(tmp_path, capsys):
    path = _save(_symbolic(), tmp_path)
    assert main(["metrics", str(path)]) == 0
    out = capsys.readouterr().out
    assert "bind them with --dims batch=1,sequence=128" in out
    assert main(["metrics", str(path), "--dims", "batch=1,sequence=128"]) == 0


def test_qgemm_counts_its_bias_not_its_zero_point():
    node = helper.make_node(
        "QGemm", ["A", "As", "Az", "B", "Bs", "Bz", "C", "Ys", "Yz"], ["Y"], domain="com.microsoft"
    )
    u8 = {"A": (U8, [2, 3])}
    weights = {"As": _w(1), "Az": _w(1, dtype=np.uint8), "B": _w(3, 4, dtype=np.uint8),
               "Bs": _w(1), "Bz": _w(1, dtype=np.uint8), "C": _w(4, dtype=np.int32),
               "Ys": _w(1), "Yz": _w(1, dtype=np.uint8)}  # fmt: skip
    model = _model([node], u8, {"Y": (U8, [2, 4])}, weights, ms=True)
    assert _macs(model) == 2 * 4 * 3 + 2 * 4


def test_an_input_named_for_audio_gets_audio_samples_by_default():
    node = helper.make_node("Relu", ["input_values"], ["Y"])
    model = _model([node], {"input_values": ["batch", "sequence"]}, {"Y": ["batch", "sequence"]})
    line = ox.metrics(model).assumed_line
    assert "sequence=16,000 (audio)" in line and "batch=1 (batch)" in line


@pytest.mark.parametrize("imgsz", ["[" * 10_000, "[True, True]", "x" * 10**6, "[0, 640]", "{}"])
def test_odd_imgsz_metadata_is_ignored(imgsz):
    line = ox.metrics(_detector(imgsz)).assumed_line
    assert "height=224 (spatial)" in line and "imgsz" not in line


def test_classical_ml_models_count_their_linear_scores_from_observed_shapes():
    """A scikit-learn style pipeline (skl2onnx's operators): Scaler → LinearClassifier →
    ZipMap, and a LinearRegressor. MACs are worked out from the shapes onnxruntime observes:
    rows × the coefficients (classes × features), one more per score for the intercepts;
    the seq(map) output of ZipMap costs nothing and is no unknown."""
    ort = pytest.importorskip("onnxruntime")
    ml = "ai.onnx.ml"
    features, classes, rows = 4, 3, 5
    coefficients = [0.1 * k for k in range(classes * features)]
    nodes = [
        helper.make_node("Scaler", ["x"], ["scaled"], domain=ml, offset=[0.5] * features,
                         scale=[2.0] * features),
        helper.make_node("LinearClassifier", ["scaled"], ["label", "scores"], domain=ml,
                         coefficients=coefficients, intercepts=[0.0, 0.1, 0.2],
                         classlabels_ints=[0, 1, 2], post_transform="SOFTMAX"),
        helper.make_node("ZipMap", ["scores"], ["probabilities"], domain=ml,
                         classlabels_int64s=[0, 1, 2]),
        helper.make_node("LinearRegressor", ["x"], ["y"], domain=ml,
                         coefficients=[1.0] * (2 * features), intercepts=[0.0, 1.0], targets=2),
    ]  # fmt: skip
    probabilities = helper.make_value_info(
        "probabilities",
        helper.make_sequence_type_proto(
            helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(F, []))
        ),
    )
    graph = helper.make_graph(
        nodes, "sklearn_like", [helper.make_tensor_value_info("x", F, ["N", features])],
        [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"]), probabilities,
         helper.make_tensor_value_info("y", F, ["N", 2])],
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ml, 3)]
    )
    model.ir_version = 8
    data = model.SerializeToString()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((rows, features)).astype(np.float32)
    label, zipped, y = session.run(None, {"x": x})
    assert label.shape == (rows,) and len(zipped) == rows and y.shape == (rows, 2)  # observed
    result = ox.metrics(ox.load(data), input_shapes={"x": (rows, features)})
    macs = {row["op_type"]: row["macs"] for row in result.rows}
    assert macs == {
        "Scaler": rows * features,
        "LinearClassifier": rows * classes * features + rows * classes,
        "ZipMap": 0,
        "LinearRegressor": rows * 2 * features + rows * 2,
    }
    assert result.unknown_ops == {} and result.unknown["macs"] == 0
    empty = ox.metrics(ox.load(data), input_shapes={"x": (0, features)})
    assert {row["op_type"]: row["macs"] for row in empty.rows}["LinearClassifier"] == 0
