"""Overlays that travel: Model Explorer node data and Netron attachments, read and written.

The examples below are copied in the shape the formats' own sources give them (each
names its source file); round trips check that our series survive both formats.
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest
from builders import mlp
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.errors import NodeDataError
from onnx_explorer.node_data import model_explorer_json, netron_json, read_node_data
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._node_data_paint import node_data_overlay
from onnx_explorer.views._paint import PALETTE

# google-ai-edge/model-explorer, src/server/package/src/model_explorer/node_data_builder.py:
# the GraphDataNode.thresholds comment's example, in a one-graph file (the form
# node_data_provider_extension_service.ts getNodeDataProviderData takes as the graph shown).
ME_THRESHOLDS_EXAMPLE = {
    "results": {"/layer1/MatMul": {"value": 5}, "/layer1/Add": {"value": 30},
                "/layer1/Relu": {"value": 80}, "/layer2/MatMul": {"value": 500}},
    "thresholds": [{"value": 10, "bgColor": "red"}, {"value": 50, "bgColor": "blue"},
                   {"value": 100, "bgColor": "yellow"}],
}  # fmt: skip

# What ModelNodeData.save_to_file writes (node_data_builder.py: remove_none(asdict(...)) by
# graph id), as justinchuby/model-explorer-onnx torch_utils.py
# save_node_data_from_verification_info makes it: "main_graph", keys node names or
# "[value] <graph output>", a thresholds list.
ME_MODEL_NODE_DATA_EXAMPLE = {
    "main_graph": {
        "results": {"/layer1/MatMul": {"value": 1e-06}, "/layer2/MatMul": {"value": 0.02},
                    "[value] y": {"value": 0.02}, "no_such_node": {"value": 3}},
        "thresholds": [{"value": 1e-05, "bgColor": "#388e3c"}, {"value": 0.0001, "bgColor": "#8bc34a"},
                       {"value": 0.001, "bgColor": "#c8e6c9"}, {"value": 0.01, "bgColor": "#ffa000"},
                       {"value": 1, "bgColor": "#ff5722"}, {"value": 100, "bgColor": "#d32f2f"}],
        "gradient": [],
        "hideInAggregatedStatsTable": False,
        "hideInChildrenStatsTable": False,
        "showExpandedSummaryOnGroupNode": False,
        "showLabelCountColumnsInChildrenStatsTable": False,
    }
}  # fmt: skip

# lutzroeder/netron, source/view.js metadata.Attachment.open / Attachment.Container.open:
# a .json with this signature; items {kind, target | identifier, name, value, type}.
NETRON_EXAMPLE = {
    "signature": "netron:attachment",
    "metadata": [{"kind": "node", "target": "/layer1/Relu", "name": "owner", "value": "team a"}],
    "metrics": [
        {"kind": "model", "target": "", "name": "latency", "value": 1.5, "type": "ms"},
        {"kind": "node", "target": "/layer1/MatMul", "name": "latency", "value": 0.75},
        {"kind": "value", "target": "h1", "name": "latency", "value": 0.25},
        {"kind": "tensor", "target": "/layer2/W", "name": "latency", "value": 0.5},
        {"kind": "node", "target": "/layer1/Relu", "name": "sparsity", "value": 0.5,
         "type": "percentage"},
        {"kind": "node", "name": "no target"},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def model() -> ox.Model:
    return ox.load(mlp())


# -- the formats' examples ------------------------------------------------------------------
def test_model_explorer_thresholds_example(model):
    data = read_node_data(ME_THRESHOLDS_EXAMPLE)
    assert data.format == "model-explorer" and data.names == ["value"]
    matched = data.on_graph(model.graph)
    assert matched.values == {"/layer1/MatMul": 5.0, "/layer1/Add": 30.0,
                              "/layer1/Relu": 80.0, "/layer2/MatMul": 500.0}  # fmt: skip
    overlay = node_data_overlay(matched, model.graph)
    # ≤10 red, ≤50 blue, ≤100 yellow, beyond: no colour (dark fills lightened for dark text)
    assert overlay.styles["/layer1/Relu"] == "#ffff00"
    assert overlay.styles["/layer2/MatMul"] == "#ffffff"
    assert overlay.styles["/layer1/MatMul"] != "#ffffff"
    assert [text for _, text in overlay.legend_entries] == ["≤ 10", "10 – 50", "50 – 100"]


def test_model_explorer_model_node_data_example(model):
    data = read_node_data(json.dumps(ME_MODEL_NODE_DATA_EXAMPLE))
    series = data.get()
    assert series.graph == "main_graph" and len(series.thresholds) == 6
    matched = data.on_graph(model.graph)
    # "[value] y" is the graph output: the node making it (the larger value kept).
    assert matched.values == {"/layer1/MatMul": 1e-06, "/layer2/MatMul": 0.02}
    assert matched.unknown == ("no_such_node",)
    assert "no node or value named no_such_node" in matched.report()


def test_netron_example(model):
    data = read_node_data(NETRON_EXAMPLE)
    assert data.format == "netron"
    assert data.names == ["latency", "sparsity", "owner"]
    latency = data.on_graph(model.graph, "latency")
    # a node by name, a value by its producer, a stored tensor by the first node reading it
    assert latency.values == {"/layer1/MatMul": 0.75, "/layer1/Add": 0.25, "/layer2/MatMul": 0.5}
    assert data.on_graph(model.graph, "owner").values == {"/layer1/Relu": "team a"}
    assert any("model row" in line for line in data.ignored)
    assert any("no kind and target" in line for line in data.ignored)
    with pytest.raises(KeyError, match="latency"):
        data.on_graph(model.graph, "flops")


# -- round trips ------------------------------------------------------------------------
@pytest.mark.parametrize("with_names", [True, False])
def test_metrics_round_trip_through_both_formats(with_names):
    model = ox.load(mlp(with_names=with_names))
    m = ox.metrics(model, dims={"batch": 2})
    for series in ("macs", "params", "activation_bytes", "param_bytes"):
        want = {k: float(v) for k, v in m.series(series).items()}
        me = json.loads(json.dumps(m.to_model_explorer_json(series)))
        assert read_node_data(me).on_graph(model.graph).values == want
        netron = json.loads(json.dumps(m.to_netron_json()))
        back = read_node_data(netron).on_graph(model.graph, series)
        assert back.values == want and back.unknown == ()
    if not with_names:  # a name the reader made up is keyed by the node's first output
        assert set(m.to_model_explorer_json("macs")["results"]) == {"h0", "h1", "h2", "y"}
        assert {r["kind"] for r in m.to_netron_json()["metrics"]} == {"model", "value"}


def test_non_finite_numbers_travel_as_text(model):
    from onnx_explorer.node_data import NodeSeries, node_entries

    series = NodeSeries("err", node_entries({"/layer1/Add": float("inf"), "/layer1/Relu": 2.5}))
    for data in (model_explorer_json(series), netron_json([series])):
        text = json.dumps(data, allow_nan=False)  # standard JSON: no Infinity literal
        back = read_node_data(text).on_graph(model.graph, "err").values
        assert back == {"/layer1/Add": float("inf"), "/layer1/Relu": 2.5}


def test_run_round_trip(tmp_path):
    pytest.importorskip("onnxruntime")
    proto = mlp()
    r = ox.run(proto, {"x": np.ones((2, 4), np.float32)})
    model = ox.load(proto)
    want = r.node_values("abs_max")
    back = read_node_data(r.to_model_explorer_json(path=tmp_path / "run.json"))
    assert back.on_graph(model.graph).values == pytest.approx(want)
    netron = read_node_data(tmp_path / "run.json")  # the file written
    assert netron.on_graph(model.graph).values == pytest.approx(want)
    attachment = read_node_data(r.to_netron_json())
    assert attachment.on_graph(model.graph, "non-finite").values == dict.fromkeys(want, 0.0)
    assert "value max" in attachment.names


def test_diff_status_and_weight_change():
    a = mlp()
    b = mlp()
    w = numpy_helper.to_array(b.graph.initializer[0]) + 0.5
    b.graph.initializer[0].CopyFrom(numpy_helper.from_array(w, "/layer1/W"))
    b.graph.node[2].name = "/layer1/Relu_renamed"
    b.graph.node.append(helper.make_node("Relu", ["y"], ["z"], name="/extra/Relu"))
    b.graph.output[0].name = "z"
    d = ox.diff(a, b)
    model_b = d.b
    status = read_node_data(d.to_model_explorer_json()).on_graph(model_b.graph)
    assert status.values["/extra/Relu"] == "added"
    assert status.colours["/extra/Relu"] == PALETTE["added"].fill
    change = read_node_data(d.to_netron_json()).on_graph(model_b.graph, "weight change")
    assert change.values == {"/layer1/MatMul": pytest.approx(0.5)}
    overlay = node_data_overlay(status, model_b.graph)
    assert overlay.styles["/extra/Relu"] == PALETTE["added"].fill


def test_status_fills_are_the_diff_views():
    from onnx_explorer.node_data._export import STATUS_FILLS

    assert {word: PALETTE[word].fill for word in STATUS_FILLS} == STATUS_FILLS


def test_writing_only_to_json(tmp_path, model):
    m = ox.metrics(model)
    model_path = tmp_path / "model.onnx"
    model_path.write_bytes(b"model bytes")
    with pytest.raises(NodeDataError, match=r"\.json"):
        m.to_netron_json(path=model_path)
    assert model_path.read_bytes() == b"model bytes"
    out = tmp_path / "m.json"
    written = m.to_netron_json(path=out)
    assert json.loads(out.read_text(encoding="utf-8")) == written


# -- hostile files -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"results": {"a": {"value": NaN}}}', "NaN is not a JSON number"),
        ('{"results": {"a": {"value": Infinity}}}', "Infinity is not a JSON number"),
        ('{"results": {"a": {"value": 1e999}}}', "beyond the range"),
        ('{"results": {"a": {"value": [1]}}}', "number or text"),
        ('{"results": {"a": 3}}', "with a 'value'"),
        ('{"results": [1, 2]}', "neither"),
        ('{"results": {"a": {"value": 1}}, "thresholds": {"value": 1}}', "'thresholds'"),
        ('{"results": {"a": {"value": 1}}, "gradient": [{"stop": 7}]}', "within 0…1"),
        ('{"signature": "netron:attachment", "metrics": {"a": 1}}', "must be a list"),
        (
            '{"signature": "netron:attachment", "metrics": [{"kind": "node", "target": "a", '
            '"name": 3, "value": 1}]}',
            "'name'",
        ),
        ('{"signature": "netron:attachment", "metrics": [7]}', "must be an object"),
        ('{"signature": "other"}', "is not 'netron:attachment'"),
        ("[1, 2]", "neither"),
        ("{not json", "not valid JSON"),
        ('{"results": {"a": {"value": 1' + "0" * 5000 + "}}}", "not valid JSON"),
    ],
)
def test_hostile_json_gets_our_error(text, message):
    with pytest.raises(NodeDataError, match=re.escape(message)):
        read_node_data(text)


def test_deep_nesting_and_huge_files_are_refused_quickly(tmp_path):
    start = time.perf_counter()
    with pytest.raises(NodeDataError, match="nested too deeply|not valid JSON"):
        read_node_data('{"results": ' + "[" * 200_000 + "]" * 200_000 + "}")
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(300 * 1024 * 1024)  # sparse: refused by its size, never read
    with pytest.raises(NodeDataError, match="more than"):
        read_node_data(path)
    with pytest.raises(NodeDataError, match="more than"):
        read_node_data(b'{"results": {}}', max_bytes=4)
    with pytest.raises(NodeDataError, match="no such file"):
        read_node_data(tmp_path / "missing.json")
    assert time.perf_counter() - start < 5


def test_colours_are_hex_only_and_bad_ones_reported(model):
    data = read_node_data({"results": {
        "/layer1/Add": {"value": 1, "bgColor": "red; stroke: url(javascript:x)"},
        "/layer1/Relu": {"value": 2, "bgColor": "#abc"},
    }})  # fmt: skip
    matched = data.on_graph(model.graph)
    assert matched.colours == {"/layer1/Relu": "#aabbcc"}
    assert any("not #rgb" in line for line in data.ignored)


def test_text_from_the_file_is_escaped_in_the_drawing(model):
    hostile = '<script>alert(1)</script>"&'
    data = read_node_data({
        "signature": "netron:attachment",
        "metrics": [{"kind": "node", "target": "/layer1/Add", "name": hostile, "value": hostile}],
    })  # fmt: skip
    overlay = node_data_overlay(data.on_graph(model.graph), model.graph)
    result = build_dot(model.graph, model, overlay=overlay)
    assert "<script>" not in result.source
    assert any(hostile in title for title in result.titles.values())  # raw only as data


@pytest.mark.graphviz
def test_hostile_text_never_reaches_the_svg_unescaped(model):
    from onnx_explorer.views._render import svg_from_result

    hostile = "<script>alert(1)</script>"
    data = read_node_data({"results": {"/layer1/Add": {"value": hostile}}, "name": hostile})
    overlay = node_data_overlay(data.on_graph(model.graph), model.graph)
    svg = svg_from_result(build_dot(model.graph, model, overlay=overlay))
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_unknown_ids_are_reported_not_fatal(model):
    data = read_node_data({"results": {"ghost": {"value": 1}, "x": {"value": 2}}})
    matched = data.on_graph(model.graph)
    assert matched.values == {} and matched.unknown == ("ghost",) and matched.not_made == ("x",)
    assert "graph inputs" in matched.report()


def test_a_tensor_proto_free_graph_input(model):
    # keys of every kind land: an initializer read by a node
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )  # fmt: skip
    small = ox.load(helper.make_model(graph))
    matched = read_node_data({"results": {"y": {"value": 4}}}).on_graph(small.graph)
    assert matched.values == {"r": 4.0}
