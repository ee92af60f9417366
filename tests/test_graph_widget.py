"""The graph widget driven from Python, the way the browser drives it: by setting traits."""

from __future__ import annotations

import onnx
import pytest
from builders import mlp, nested_if
from onnx import TensorProto, helper

import onnx_explorer as ox
from onnx_explorer.widgets.graph_view import GraphView

pytestmark = pytest.mark.graphviz


def _id_of(view: GraphView, name: str) -> str:
    return next(k for k, v in view.ids.items() if v.get("kind") == "node" and v["name"] == name)


def test_click_selects_and_python_selection_highlights():
    view = GraphView(ox.load(mlp()).graph)
    assert view.svg.startswith("<svg") and not view.error
    # The browser reports a click on a drawn node by its synthetic id.
    view.clicked = f"{_id_of(view, '/layer1/Relu')}\x00single\x001"
    assert view.selected == "/layer1/Relu"
    assert view.highlight_id == _id_of(view, "/layer1/Relu")
    # From Python: the highlight follows.
    view.selected = "/layer2/MatMul"
    assert view.highlight_id == _id_of(view, "/layer2/MatMul")
    view.selected = ""
    assert view.highlight_id == ""


def _scoped_chain(layers: int, per_layer: int = 60) -> onnx.ModelProto:
    nodes, prev = [], "x"
    for i in range(layers * per_layer):
        layer, j = divmod(i, per_layer)
        nodes.append(
            helper.make_node("Relu", [prev], [f"t{i}"], name=f"/enc/layer.{layer}/Relu_{j}")
        )
        prev = f"t{i}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1])],
    )  # fmt: skip
    return helper.make_model(graph)


def test_clicking_a_collapsed_scope_expands_it():
    view = GraphView(ox.load(_scoped_chain(40)).graph)
    collapsed = [(k, v) for k, v in view.ids.items() if v["kind"] == "scope" and not v["open"]]
    assert collapsed
    item_id, entry = collapsed[-1]
    view.clicked = f"{item_id}\x00single\x002"
    assert entry["path"] in view.result.expanded
    opened = [v for v in view.ids.values() if v["kind"] == "scope" and v["path"] == entry["path"]]
    assert opened and opened[0]["open"]
    assert view.result.drawn <= view.max_nodes


def test_selecting_a_hidden_node_opens_its_scope():
    model = ox.load(_scoped_chain(40))
    view = GraphView(model.graph)
    target = "/enc/layer.33/Relu_5"
    assert not any(v.get("name") == target for v in view.ids.values())
    view.selected = target
    assert view.ids[view.highlight_id]["name"] == target


def test_focus_and_reset():
    view = GraphView(ox.load(_scoped_chain(40)).graph)
    view.focus("/enc/layer.10/Relu_3", hops=1)
    names = {v["name"] for v in view.ids.values() if v["kind"] == "node"}
    assert names == {"/enc/layer.10/Relu_2", "/enc/layer.10/Relu_3", "/enc/layer.10/Relu_4"}
    assert view.selected == "/enc/layer.10/Relu_3"
    view.reset()
    assert view.focus_node == ""


def test_double_click_opens_a_body():
    model = ox.load(nested_if(2))
    view = GraphView(model.graph, model)
    view.clicked = f"{_id_of(view, '/If')}\x00double\x003"
    assert view.graph_path in ("/If/then_branch", "/If/else_branch")
    assert view.graph is model.graph_at(view.graph_path)


def test_missing_graphviz_shows_an_error_not_an_exception(monkeypatch):
    monkeypatch.setenv("ONNX_EXPLORER_DOT", "no-such-dot")
    view = GraphView(ox.load(mlp()).graph)
    assert view.svg == "" and "apt-get install graphviz" in view.error


def test_explorer_follows_a_double_click_into_a_body():
    ex = ox.explore(nested_if(2))
    ex.graph_view.clicked = f"{_id_of(ex.graph_view, '/If')}\x00double\x004"
    assert ex.graph_path in ("/If/then_branch", "/If/else_branch")
    assert ex.graph is ex.graph_view.graph
    assert ex.node_list.status.value.endswith("nodes")
