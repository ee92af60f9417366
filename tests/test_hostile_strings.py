"""Hostile model text and malformed values: each breaks only what it touches.

- A Constant node whose value attribute is missing, doubled or of the wrong kind is one
  unreadable tensor; the summary, the weights report, the explorer and the CLI go on.
- Strings that are not UTF-8 anywhere in the file are shown with U+FFFD.
- Bidirectional overrides and control characters never reach the explorer's HTML raw.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.errors import TensorDataError
from onnx_explorer.summary import summarize
from onnx_explorer.widgets.explorer import TAB_TENSORS

# -- Constant nodes with a broken value ----------------------------------------------


def _body() -> onnx.GraphProto:
    return helper.make_graph([], "body", [], [])


def _attr(name: str, kind: int, **payload) -> AttributeProto:
    """An attribute whose ``type`` says ``kind`` and whose payload is whatever is given."""
    return AttributeProto(name=name, type=kind, **payload)


_FLOATS = numpy_helper.from_array(np.ones(2, np.float32), "")

#: (case, the Constant's attributes, words the tensor's error must contain)
BROKEN_CONSTANTS = [
    ("floats holding a graph", [_attr("value_floats", AttributeProto.GRAPH, g=_body())],
     ["value_floats", "GRAPH"]),
    ("float holding a string", [_attr("value_float", AttributeProto.STRING, s=b"abc")],
     ["value_float", "STRING"]),
    ("int holding a tensor", [_attr("value_int", AttributeProto.TENSOR, t=_FLOATS)],
     ["value_int", "TENSOR"]),
    ("ints holding strings", [_attr("value_ints", AttributeProto.STRINGS, strings=[b"a"])],
     ["value_ints", "STRINGS"]),
    ("string holding a graph", [_attr("value_string", AttributeProto.GRAPH, g=_body())],
     ["value_string", "GRAPH"]),
    ("strings holding a float", [_attr("value_strings", AttributeProto.FLOAT, f=1.0)],
     ["value_strings", "FLOAT"]),
    ("value holding a string", [_attr("value", AttributeProto.STRING, s=b"x")],
     ["'value'", "STRING"]),
    ("value holding a graph", [_attr("value", AttributeProto.GRAPH, g=_body())],
     ["'value'", "GRAPH"]),
    ("sparse_value holding a tensor", [_attr("sparse_value", AttributeProto.TENSOR, t=_FLOATS)],
     ["sparse_value", "TENSOR"]),
    ("no value attribute", [], ["no value attribute"]),
    ("two value attributes",
     [_attr("value_float", AttributeProto.FLOAT, f=1.0),
      _attr("value_int", AttributeProto.INT, i=2)],
     ["value_float", "value_int"]),
    ("value with too few raw bytes",
     [_attr("value", AttributeProto.TENSOR,
            t=TensorProto(dims=[4], data_type=TensorProto.FLOAT, raw_data=b"abc"))],
     ["3 bytes"]),
]  # fmt: skip


def _with_constant(attributes: list[AttributeProto]) -> onnx.ModelProto:
    """A broken Constant ``bad`` → c, a good one → k, and ``y = c + k``."""
    bad = helper.make_node("Constant", [], ["c"], name="bad")
    bad.attribute.extend(attributes)
    good = helper.make_node("Constant", [], ["k"], name="good", value_floats=[1.0, 2.0])
    add = helper.make_node("Add", ["c", "k"], ["y"], name="add")
    graph = helper.make_graph(
        [bad, good, add], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


_IDS = [case[0] for case in BROKEN_CONSTANTS]


@pytest.mark.parametrize(("case", "attributes", "words"), BROKEN_CONSTANTS, ids=_IDS)
def test_a_broken_constant_is_one_unreadable_tensor(case, attributes, words):
    model = ox.load(_with_constant(attributes).SerializeToString())
    constants = model.graph.constants()
    assert constants["k"].numpy().tolist() == [1.0, 2.0]  # the good Constant still reads
    with pytest.raises(TensorDataError) as caught:
        constants["c"].numpy()
    message = str(caught.value)
    assert "'c'" in message
    for word in words:
        assert word in message, (case, message)
    if "bytes" not in case:
        assert "'bad'" in message  # names the node

    info = summarize(model)
    assert info["tensors"] == 2 and info["op_counts"] == {"Constant": 2, "Add": 1}
    rows = {row["name"]: row for row in model.weights_report(progress=False, as_list=True)}
    assert rows["k"]["error"] is None and rows["k"]["max"] == 2.0
    assert rows["c"]["error"]


@pytest.mark.parametrize(("case", "attributes", "words"), BROKEN_CONSTANTS[:4], ids=_IDS[:4])
def test_a_broken_constant_leaves_explorer_and_cli_working(
    tmp_path, capsys, case, attributes, words
):
    path = tmp_path / "broken.onnx"
    onnx.save(_with_constant(attributes), path)
    ex = ox.explore(path)
    ex.select("bad")
    ex.tabs.selected_index = TAB_TENSORS  # its contents are made when it is opened
    ex.tensor_panel.listing.value = "c"
    assert "cannot read this tensor" in ex.tensor_panel.details.value
    assert words[0] in ex.tensor_panel.details.value

    assert main(["summary", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tensors"] == 2
    assert main(["weights", str(path)]) == 0
    out = capsys.readouterr().out
    error_lines = [line for line in out.splitlines() if "ERROR" in line]
    assert len(error_lines) == 1 and words[0] in error_lines[0]
    assert "2 tensors, 0 flagged, 1 unreadable" in out
