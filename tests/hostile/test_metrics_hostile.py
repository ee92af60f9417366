"""Issue 31, findings 9, 10 and 11: metrics on hostile attributes, huge values and ranks.

9: rules trusted attribute kinds (a TENSOR ``kernel_shape``, ``[inf]``, bytes, a string
``qkv_hidden_sizes`` or ``num_heads``: TypeError, OverflowError, ValueError, a 1.2 GB
string) and one such node failed the whole table, the CLI and the overlay; now the node is
unknown with the reason in ``Metrics.invalid``. 10: values past 64 bits / float range
broke ``--json`` (Python's 4,300-digit int→str limit), ``to_pandas()`` and the overlay
(OverflowError); now written as documented in docs/guide/metrics.md and painted at the top
of the scale. 11: a 1,000,000-dim shape made metrics quadratic (53 s); past MAX_RANK dims
a shape is unknown.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.metrics import metrics
from onnx_explorer.metrics._table import json_number
from onnx_explorer.views._colour_scale import checked_values


def _model(node, inputs, outputs, value_info=()) -> bytes:
    graph = helper.make_graph(
        [node, helper.make_node("Relu", [node.output[0]], ["after"], name="after")], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("after", TensorProto.FLOAT, outputs[0][1])],
        value_info=[helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])  # fmt: skip
    return model.SerializeToString()


def _pool(attribute) -> bytes:
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool")
    node.attribute.append(attribute)
    return _model(node, [("x", [1, 1, 8, 8])], [("y", [1, 1, 4, 4])])


def _attention(attribute) -> bytes:
    node = helper.make_node("Attention", ["x", "w"], ["y"], name="attn", domain="com.microsoft")
    node.attribute.append(attribute)
    return _model(node, [("x", [1, 4, 8]), ("w", [8, 24])], [("y", [1, 4, 8])])


def _gqa(*attributes) -> bytes:
    node = helper.make_node("GroupQueryAttention", ["qkv"], ["y"], name="gqa",
                            domain="com.microsoft")  # fmt: skip
    node.attribute.extend(attributes)
    return _model(node, [("qkv", [1, 4, 1 << 30])], [("y", [1, 4, 8])])


HOSTILE = {
    "kernel_shape TENSOR": lambda: _pool(helper.make_attribute(
        "kernel_shape", numpy_helper.from_array(np.array([2, 2], np.int64)))),
    "kernel_shape [inf]": lambda: _pool(helper.make_attribute("kernel_shape", [math.inf])),
    "kernel_shape bytes": lambda: _pool(helper.make_attribute("kernel_shape", b"ab")),
    "kernel_shape -2^63": lambda: _pool(helper.make_attribute("kernel_shape", [-(1 << 63)])),
    "qkv_hidden_sizes abc": lambda: _attention(helper.make_attribute("qkv_hidden_sizes", "abc")),
    "num_heads string": lambda: _gqa(helper.make_attribute("num_heads", "x" * 1000),
                                     helper.make_attribute("kv_num_heads", 1 << 40)),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_bad_attribute_makes_its_node_unknown_not_the_table(case, tmp_path: Path, capsys):
    data = HOSTILE[case]()
    model = ox.load(data)
    started = time.monotonic()
    result = metrics(model, infer=False)
    assert time.monotonic() - started < 5
    rows = {row["name"]: row for row in result.rows}
    bad = next(name for name in rows if name != "after")
    assert rows[bad]["macs"] is None
    assert bad in result.invalid and "attribute" in result.invalid[bad]
    assert rows["after"]["macs"] is not None  # the rest of the table is there
    assert any("MACs unknown" in note for note in result.notes)
    json.dumps(result.to_dict())
    result.to_model_explorer_json("macs")
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    assert main(["metrics", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["invalid"]


def _huge(rank: int, dim: int) -> ox.Model:
    shape = [dim] * rank
    node = helper.make_node("Relu", ["x"], ["y"], name="big")
    return ox.load(_model(node, [("x", shape)], [("y", shape)]))


def test_values_past_64_bits_and_float_range(tmp_path: Path, capsys):
    result = metrics(_huge(32, 1 << 40), infer=False)  # 2^1280 elements
    macs = {row["name"]: row["macs"] for row in result.rows}
    assert macs["big"] == 1 << 1280
    data = json.loads(json.dumps(result.to_dict()))
    assert data["rows"][0]["macs"] == str(1 << 1280)  # exact, as text
    frame = result.to_pandas()
    assert frame["macs"].dtype == np.float64 and math.isinf(frame["macs"][0])
    painted = checked_values(result.series("macs"))
    assert painted["big"] == math.inf  # the top of the scale
    result.to_model_explorer_json("macs")
    result.to_netron_json()
    path = tmp_path / "big.onnx"
    node = helper.make_node("Relu", ["x"], ["y"], name="big")
    path.write_bytes(_model(node, [("x", [1 << 40] * 32)], [("y", [1 << 40] * 32)]))
    assert main(["metrics", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["macs"] == str(1 << 1280)
    assert main(["metrics", str(path)]) == 0


def test_json_number_forms():
    assert json_number(5) == 5
    assert json_number((1 << 63) - 1) == (1 << 63) - 1
    assert json_number(1 << 63) == str(1 << 63)
    huge = json_number(10**5000)  # past Python's int→str limit: scientific
    assert isinstance(huge, str) and huge.endswith("e5000")
    assert json_number(None) is None and json_number("x") == "x"


def test_a_million_dims_is_unknown_in_linear_time():
    shape = [2] * 1_000_000
    node = helper.make_node("Relu", ["x"], ["y"], name="wide")
    model = ox.load(_model(node, [("x", shape)], [("y", shape)]))
    started = time.monotonic()
    result = metrics(model, infer=False)
    assert time.monotonic() - started < 15  # 53 s before
    assert result.rows[0]["macs"] is None
