"""Issue 31, finding 12: a DequantizeLinear ``axis`` stored as FLOAT ``inf``, a TENSOR or
INTS made diff raise OverflowError / TypeError, and the CLI exit 1 ("different") with a
traceback. The attribute is checked where quantization parameters are read: the weight is
compared as stored, the reason said, and any error the CLI meets exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.errors import TensorDataError
from onnx_explorer.model_diff import compare_models
from onnx_explorer.weights import _quant


def _model(axis: object | None) -> bytes:
    """MatMul of x by w: a float w, or (axis given) an int8 w behind DequantizeLinear."""
    if axis is None:
        nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
        inits = [numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")]
    else:
        dq = helper.make_node("DequantizeLinear", ["wq", "ws"], ["w"], name="dq")
        dq.attribute.append(helper.make_attribute("axis", axis))
        nodes = [dq, helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
        inits = [numpy_helper.from_array(np.arange(12, dtype=np.int8).reshape(3, 4), "wq"),
                 numpy_helper.from_array(np.full(4, 0.5, np.float32), "ws")]  # fmt: skip
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits,
    )  # fmt: skip
    return helper.make_model(graph).SerializeToString()


BAD_AXES = {
    "FLOAT inf": float("inf"),
    "FLOAT 1.0": 1.0,
    "TENSOR": numpy_helper.from_array(np.array([1], np.int64)),
    "INTS": [1, 2],
    "STRING": "1",
}


@pytest.mark.parametrize("case", sorted(BAD_AXES))
def test_a_bad_axis_is_compared_as_stored_with_the_reason(case, tmp_path: Path, capsys):
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    a.write_bytes(_model(None))
    b.write_bytes(_model(BAD_AXES[case]))
    result = compare_models(ox.load(a), ox.load(b))
    assert "attribute 'axis' is not an int" in json.dumps(result.to_dict())
    assert main(["diff", str(a), str(b)]) in (0, 1)  # a verdict, not an error
    assert "Traceback" not in capsys.readouterr().err


def test_a_good_axis_still_dequantizes(tmp_path: Path):
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    a.write_bytes(_model(None))
    b.write_bytes(_model(1))
    assert "compared dequantized" in repr(compare_models(ox.load(a), ox.load(b)))


def test_the_attribute_check_names_the_node():
    model = ox.load(_model(float("inf")))
    with pytest.raises(TensorDataError, match="DequantizeLinear 'dq': attribute 'axis'"):
        _quant._attr(model.graph.node("dq"), "axis", 1)


def test_an_unexpected_error_in_diff_exits_2(tmp_path: Path, monkeypatch, capsys):
    a = tmp_path / "a.onnx"
    a.write_bytes(_model(None))

    def broken(*args: object, **kwargs: object) -> None:
        raise OverflowError("a bug")

    monkeypatch.setattr("onnx_explorer.cli.diff.compare_models", broken)
    assert main(["diff", str(a), str(a)]) == 2
    assert "OverflowError: a bug" in capsys.readouterr().err
