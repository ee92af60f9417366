"""The whole-model weight report: every kind of weight, flags, bad tensors, sorting, stopping."""

from __future__ import annotations

import threading

import numpy as np
import onnx
import pytest
from builders import nested_if, set_external
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.stats import array_stats
from onnx_explorer.weights._report import COLUMNS, flags, sort_rows, weights_report

RNG = np.random.default_rng(3)


def _weights_model() -> onnx.ModelProto:
    """Initializers, a Constant, a tensor attribute, a function body; some with problems."""
    normal = RNG.standard_normal((64, 64)).astype(np.float32)
    spiky = normal.copy()
    spiky[0, 0] = 500.0  # ~500 σ
    with_nan = np.array([1.0, np.nan, np.inf, 2.0], np.float32)
    inits = [
        numpy_helper.from_array(normal, "normal"),
        numpy_helper.from_array(spiky, "spiky"),
        numpy_helper.from_array(with_nan, "with_nan"),
        numpy_helper.from_array(np.zeros((3, 3), np.float32), "zeros"),
        numpy_helper.from_array(np.array([1.0, 70000.0], np.float32), "big"),
        numpy_helper.from_array(np.array([1, 80000], np.int32), "big_ints"),
        numpy_helper.from_array(np.arange(5, dtype=np.int8), "q"),
        numpy_helper.from_array(np.array(0.5, np.float32), "q_scale"),
        helper.make_tensor("names", TensorProto.STRING, [2], [b"a", b"b"]),
    ]
    bad = numpy_helper.from_array(np.ones(4, np.float32), "bad_size")
    bad.raw_data = bad.raw_data[:-3]  # mis-sized
    missing = numpy_helper.from_array(np.ones(4, np.float32), "missing_file")
    set_external(missing, location="nowhere.bin")
    inits += [bad, missing]
    nodes = [
        helper.make_node(
            "Constant",
            [],
            ["const_w"],
            value=numpy_helper.from_array(np.full((2, 2), 0.5, np.float32), ""),
            name="/c/Constant",
        ),
        helper.make_node(
            "ConstantOfShape",
            ["shape"],
            ["filled"],
            value=numpy_helper.from_array(np.array([7.0], np.float32), ""),
            name="/fill",
        ),
        helper.make_node("DequantizeLinear", ["q", "q_scale"], ["q_real"], name="/dq"),
        helper.make_node("MyFunc", ["x"], ["f_out"], domain="local", name="/call"),
    ]
    func = helper.make_function(
        "local",
        "MyFunc",
        ["x"],
        ["y"],
        [
            helper.make_node(
                "Constant",
                [],
                ["k"],
                value=numpy_helper.from_array(np.array([3.0], np.float32), ""),
            ),
            helper.make_node("Mul", ["x", "k"], ["y"]),
        ],
        [helper.make_opsetid("", 21)],
    )
    graph = helper.make_graph(
        nodes,
        "weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("f_out", TensorProto.FLOAT, [1])],
        inits,
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local", 1)],
        functions=[func],
    )


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "w.onnx"
    onnx.save(_weights_model(), path)
    return ox.load(path)


def _by_name(rows):
    return {r["name"]: r for r in rows}


def test_every_weight_is_a_row(model):
    rows = weights_report(model, progress=False, as_list=True)
    names = [r["name"] for r in rows]
    assert set(names) >= {"normal", "const_w", "q", "zeros", "k", "bad_size", "missing_file"}
    assert len(names) == len(list(model.weights()))
    by = _by_name(rows)
    assert by["const_w"]["kind"] == "constant" and by["const_w"]["node"] == "/c/Constant"
    attr = [r for r in rows if r["kind"] == "attribute"]
    assert attr and attr[0]["node"] == "/fill" and attr[0]["max"] == 7.0
    assert by["k"]["graph"].startswith("function:")
    assert all(set(r) == set(COLUMNS) for r in rows)
    normal = by["normal"]
    expected = array_stats(model.graph.initializers["normal"].numpy())
    assert normal["mean"] == pytest.approx(expected.mean) and normal["std"] == pytest.approx(
        expected.std
    )
    assert (normal["dtype"], normal["shape"], normal["parameters"], normal["bytes"]) == (
        "float32",
        (64, 64),
        4096,
        16384,
    )
    assert normal["location"] == "embedded" and "offset" in normal["where"]
    assert normal["error"] is None and normal["flags"] == ""


def test_subgraph_weights_are_rows():
    rows = weights_report(ox.load(nested_if(2)), progress=False, as_list=True)
    graphs = {r["graph"] for r in rows}
    assert len(rows) == 4 and len(graphs) == 4  # a Constant in each branch, two levels deep


def test_flags(model):
    by = _by_name(weights_report(model, progress=False, as_list=True))
    assert by["spiky"]["flags"] == "outlier"
    assert by["with_nan"]["flags"] == "nan, inf"
    assert (by["with_nan"]["nan"], by["with_nan"]["inf"]) == (1, 1)
    assert by["zeros"]["flags"] == "all_zero"
    assert "fp16_overflow" in by["big"]["flags"]
    assert "fp16_overflow" not in by["big_ints"]["flags"]  # integers are not cast to float16
    assert by["normal"]["flags"] == ""


def test_flag_rules():
    assert flags(array_stats(np.array([0.0, 0.0]))) == ["all_zero"]
    # LayerNorm-like gains around 1.0 are not outliers: measured from the mean.
    assert flags(array_stats(1.0 + 0.001 * RNG.standard_normal(10_000))) == []
    assert "outlier" in flags(array_stats(np.append(np.zeros(9999), 1.0)), outlier_sigma=50)
    assert "outlier" not in flags(array_stats(np.append(np.zeros(99), 1.0)), outlier_sigma=50)


def test_bad_tensors_are_rows_with_an_error(model):
    by = _by_name(weights_report(model, progress=False, as_list=True))
    assert "bytes" in by["bad_size"]["error"] and by["bad_size"]["min"] is None
    assert "nowhere.bin" in by["missing_file"]["error"]
    assert by["missing_file"]["location"] == "external"
    assert "string" in by["names"]["error"]
    assert by["normal"]["error"] is None  # the others are fine


def test_quantized_weights(model):
    by = _by_name(weights_report(model, progress=False, as_list=True))
    assert by["q"]["quantization"].startswith("per-tensor") and by["q"]["max"] == 4
    real = _by_name(weights_report(model, progress=False, as_list=True, dequantize=True))
    assert real["q"]["max"] == 2.0 and real["q"]["mean"] == pytest.approx(1.0)
    assert real["normal"]["quantization"] is None


def test_dataframe_output(model):
    pd = pytest.importorskip("pandas")
    frame = model.weights_report(progress=False)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == list(COLUMNS)
    assert frame.attrs["complete"] is True
    assert len(frame) == len(list(model.weights()))
    top = frame.sort_values("abs_max", ascending=False).iloc[0]
    assert top["name"] == "big_ints"


def test_sort(model):
    rows = weights_report(model, progress=False, as_list=True, sort="bytes")
    sizes = [r["bytes"] for r in rows]
    assert sizes == sorted(sizes, reverse=True)  # numbers: largest first
    rows = weights_report(model, progress=False, as_list=True, sort="abs_max")
    assert rows[0]["name"] == "big"  # real values first: integers (indices, shapes) rank after
    integers = [r["name"] for r in rows if r["integer"]]
    assert integers[0] == "big_ints" and rows[0]["name"] != "big_ints"
    assert rows[-1]["abs_max"] is None  # rows without the value come last
    names = [r["name"] for r in sort_rows(rows, "name")]
    assert names == sorted(names)
    assert [r["name"] for r in sort_rows(rows, "-name")] == sorted(names, reverse=True)
    smallest = sort_rows(rows, "+bytes")
    assert smallest[0]["bytes"] <= smallest[-1]["bytes"]
    with pytest.raises(ValueError, match="cannot sort"):
        sort_rows(rows, "colour")


def test_stop_event_returns_what_was_done(model):
    stop = threading.Event()
    seen = []

    def stop_after_three() -> bool:
        seen.append(1)
        return len(seen) > 3

    rows = weights_report(model, progress=False, as_list=True, stop=stop_after_three)
    assert len(rows) == 3
    stop.set()
    assert weights_report(model, progress=False, as_list=True, stop=stop) == []


def test_keyboard_interrupt_returns_partial_report(model):
    pytest.importorskip("pandas")
    calls = []

    def interrupt() -> bool:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return False

    frame = weights_report(model, progress=False, stop=interrupt)
    assert len(frame) == 1 and frame.attrs["complete"] is False


def test_progress_bar_goes_to_stderr(model, capsys):
    weights_report(model, progress=True, as_list=True)
    err = capsys.readouterr().err
    assert "weights" in err


def test_report_releases_tensors(model):
    weights_report(model, progress=False, as_list=True)
    assert all(ref.tensor._cached is None for ref in model.weights())
