"""Two models side by side: the links (1↔1, fused 1↔N, unmatched) and the view that follows
one side on the other, driven from Python (no browser)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from builders import scoped_chain
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.model_diff import node_links
from onnx_explorer.widgets._compare_view import CompareView, b_node_errors, compare_view

W = numpy_helper.from_array(np.eye(4, dtype=np.float32), "W")
S = numpy_helper.from_array(np.full(4, 2.0, dtype=np.float32), "S")


def _model(
    nodes: list[onnx.NodeProto], *inits: onnx.TensorProto, outputs: tuple[str, ...] = ("y",)
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [1, 4]) for o in outputs],
        initializer=list(inits),
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def unfused(dead: bool = False) -> onnx.ModelProto:
    """MatMul → Mul (a batch norm's scale) → Relu → Neg → Abs; ``dead``: a Sin nothing reads."""
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["m"], name="matmul"),
        helper.make_node("Mul", ["m", "S"], ["s"], name="scale"),
        helper.make_node("Relu", ["s"], ["r"], name="relu"),
        helper.make_node("Neg", ["r"], ["n"], name="neg"),
        helper.make_node("Abs", ["n"], ["y"], name="abs"),
    ]
    if dead:
        nodes.append(helper.make_node("Sin", ["n"], ["unused"], name="dead_sin"))
    return _model(nodes, W, S)


def fused() -> onnx.ModelProto:
    """The same with MatMul, Mul and Relu fused into one node, Abs replaced by Cos →
    Sigmoid, and a second output made by an Exp nothing in a stands for."""
    return _model([
        helper.make_node("MatMul", ["x", "W"], ["r"], name="fused_matmul"),
        helper.make_node("Neg", ["r"], ["n"], name="neg"),
        helper.make_node("Cos", ["n"], ["c"], name="extra_cos"),
        helper.make_node("Sigmoid", ["c"], ["y"], name="extra_sigmoid"),
        helper.make_node("Exp", ["n"], ["debug"], name="debug_exp"),
    ], W, outputs=("y", "debug"))  # fmt: skip


def qdq_model() -> onnx.ModelProto:
    """unfused() with a QuantizeLinear → DequantizeLinear pair before Neg."""
    scale = numpy_helper.from_array(np.array(0.1, dtype=np.float32), "q_scale")
    zero = numpy_helper.from_array(np.array(0, dtype=np.int8), "q_zero")
    return _model([
        helper.make_node("MatMul", ["x", "W"], ["m"], name="matmul"),
        helper.make_node("Mul", ["m", "S"], ["s"], name="scale"),
        helper.make_node("Relu", ["s"], ["r"], name="relu"),
        helper.make_node("QuantizeLinear", ["r", "q_scale", "q_zero"], ["rq"], name="q"),
        helper.make_node("DequantizeLinear", ["rq", "q_scale", "q_zero"], ["rd"], name="dq"),
        helper.make_node("Neg", ["rd"], ["n"], name="neg"),
        helper.make_node("Abs", ["n"], ["y"], name="abs"),
    ], W, S, scale, zero)  # fmt: skip


# -- the links ------------------------------------------------------------------------------
def test_links_group_fused_nodes_and_leave_the_rest_unmatched():
    links = node_links(ox.diff(unfused(dead=True), fused()))
    group = links.group("a", "/", "relu")
    assert group is not None and group.kind == "fused"
    assert group.a == ("matmul", "scale", "relu") and group.b == ("fused_matmul",)
    assert links.partners("b", "/", "fused_matmul") == ("matmul", "scale", "relu")
    assert links.partners("a", "/", "neg") == ("neg",)
    assert links.group("a", "/", "neg").kind == "match"
    # the graph output's producers stand for each other: Abs was replaced by Cos → Sigmoid
    assert links.partners("a", "/", "abs") == ("extra_cos", "extra_sigmoid")
    assert links.unmatched("a", "/") == ["dead_sin"]
    assert links.unmatched("b", "/") == ["debug_exp"]
    assert links.other_graph("a", "/") == "/"


def test_inserted_quantize_pair_joins_the_node_it_stands_after():
    links = node_links(ox.diff(unfused(), qdq_model()))
    assert links.partners("a", "/", "relu") == ("relu", "q", "dq")
    assert links.partners("a", "/", "neg") == ("neg",)
    assert links.unmatched("a", "/") == [] and links.unmatched("b", "/") == []


def test_identical_models_link_one_to_one():
    links = node_links(ox.diff(unfused(), unfused()))
    assert all(g.kind == "match" for g in links.groups())
    assert len(links.groups()) == 5


# -- the view ---------------------------------------------------------------------------------
@pytest.fixture
def view():
    found = compare_view(unfused(dead=True), fused())
    yield found
    found.close()


def test_select_on_a_selects_the_match_on_b(view: CompareView):
    view.select("neg", "a")
    assert view.b.selected_name == "neg"
    assert view.partners("a") == ("neg",)
    assert view.b.graph_view.selected == "neg"  # the pane highlights and centres it
    view.select(None, "a")
    assert view.b.selected_name is None


def test_select_one_of_a_fused_group_selects_all_n(view: CompareView):
    view.select("scale", "a")
    assert view.b.selected_name == "fused_matmul"
    assert view.selected_names("a") == ("scale", "matmul", "relu")
    assert view.related("a") == ("matmul", "relu")
    # and back: the one fused node selects its three
    view.select("neg", "b")
    view.select("fused_matmul", "b")
    assert view.a.selected_name == "matmul"
    assert view.selected_names("a") == ("matmul", "scale", "relu")
    assert "fused or split" in view.note.value


def test_unmatched_nodes_are_marked_on_their_side(view: CompareView):
    assert view.unmatched("a") == ["dead_sin"]
    assert view.unmatched("b") == ["debug_exp"]
    assert view.b.graph_view._marks == {"debug_exp": "unmatched"}
    view.select("debug_exp", "b")
    assert view.a.selected_name is None
    assert "no counterpart in a" in view.note.value


def test_related_nodes_are_marked_while_selected(view: CompareView):
    view.select("fused_matmul", "b")
    marks = {"dead_sin": "unmatched", "scale": "related", "relu": "related"}
    assert view.a.graph_view._marks == marks
    view.select("neg", "a")
    assert view.a.graph_view._marks == {"dead_sin": "unmatched"}


def test_no_echo_loop(view: CompareView):
    calls = {"a": 0, "b": 0}
    for side in ("a", "b"):
        view.explorer(side).observe(
            lambda _c, s=side: calls.__setitem__(s, calls[s] + 1), "selected_name"
        )
    view.select("neg", "a")
    assert calls == {"a": 1, "b": 1}
    view.select("fused_matmul", "b")
    assert calls == {"a": 2, "b": 2}
    assert view.a.selected_name == "matmul" and view.b.selected_name == "fused_matmul"


def test_pan_zoom_link_toggles(view: CompareView):
    assert view.link_pan_zoom and view._pan_link is not None
    view.link_pan_zoom = False
    assert view._pan_link is None
    view.link_pan_zoom = True
    assert view._pan_link is not None
    assert view.a.graph_view.view_move == view.b.graph_view.view_move  # no move replayed


def test_status_fills_on_both_sides(view: CompareView):
    overlay_a = view.a.graph_view.overlay_for(view.a.graph)
    overlay_b = view.b.graph_view.overlay_for(view.b.graph)
    assert overlay_a is not None and overlay_a.styles["dead_sin"] == "removed"
    assert overlay_b is not None and overlay_b.styles["debug_exp"] == "added"


def _with_body(inner_op: str) -> onnx.ModelProto:
    def branch(name: str, op: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node(op, ["x"], [f"{name}_out"], name=f"{name}_op")], name, [],
            [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1, 4])],
        )  # fmt: skip

    cond = numpy_helper.from_array(np.array(True), "cond")
    return _model([
        helper.make_node("If", ["cond"], ["i"], name="if_node",
                         then_branch=branch("then", inner_op), else_branch=branch("else", "Neg")),
        helper.make_node("Abs", ["i"], ["y"], name="abs"),
    ], cond)  # fmt: skip


def test_opening_a_body_opens_the_matched_body():
    view = compare_view(_with_body("Relu"), _with_body("Sigmoid"))
    try:
        path = "/if_node/then_branch"
        view.a.show_graph(path)
        assert view.b.graph_path == view.links.other_graph("a", path) == path
        view.select("then_op", "a")
        assert view.b.selected_name == "then_op"
        view.b.show_graph("/")
        assert view.a.graph_path == "/"
    finally:
        view.close()


def test_b_node_errors_map_by_b_tensor():
    found = SimpleNamespace(
        tensors=[
            SimpleNamespace(b=b, max_abs=m) for b, m in (("r", 0.5), ("n", 0.25), ("gone", 9.0))
        ]
    )
    graph = ox.load(fused()).graph
    assert b_node_errors(found, graph) == {"fused_matmul": 0.5, "neg": 0.25}  # type: ignore[arg-type]


def test_compare_paints_both_sides():
    pytest.importorskip("onnxruntime")
    view = compare_view(unfused(), qdq_model())
    try:
        feeds = {"x": np.array([[1.0, -2.0, 3.0, 0.33]], dtype=np.float32)}
        result = view.compare(feeds, progress=False)
        assert result.tensors
        assert view.a.overlay_picker.value == "error vs other"
        assert view.b.overlay_picker.value == "error vs other"
        assert view.b.graph_view.overlay_for(view.b.graph).scale is not None
    finally:
        view.close()


def test_public_entry_point():
    view = ox.compare_view(unfused(), fused(), weights=False)
    try:
        assert isinstance(view, CompareView)
        assert "fused/split" in view.summary.value
    finally:
        view.close()


def _renamed_chain(layers: int, per_layer: int) -> onnx.ModelProto:
    """scoped_chain's graph with every scope renamed (``/encoder/block.<i>/…``)."""
    model = scoped_chain(layers, per_layer)
    for node in model.graph.node:
        node.name = node.name.replace("/enc/layer.", "/encoder/block.")
    return model


@pytest.mark.graphviz
def test_opening_and_closing_a_scope_follows_on_the_other_side():
    view = compare_view(scoped_chain(12, 60), _renamed_chain(12, 60), weights=False)
    try:
        pane_a, pane_b = view.a.graph_view, view.b.graph_view
        assert pane_a.wait(60) and pane_b.wait(60)
        assert view.other_scope("a", "enc/layer.3") == "encoder/block.3"
        pane_a.expand("enc/layer.3")
        assert "encoder/block.3" in pane_b.expanded
        assert pane_a.wait(60) and pane_b.wait(60)
        pane_b.collapse("encoder/block.3")
        assert "enc/layer.3" not in pane_a.expanded
        # a node hidden in a collapsed scope: selecting its partner opens it there
        assert pane_a.wait(60) and pane_b.wait(60)
        view.select("/encoder/block.7/Relu_5", "b")
        assert view.a.selected_name == "/enc/layer.7/Relu_5"
        assert pane_a.wait(60)
        assert "enc/layer.7" in pane_a.drawn_expanded()
        assert pane_a.highlight_id and pane_a.ids[pane_a.highlight_id]["kind"] == "node"
    finally:
        view.close()


def test_the_diff_explorer_switches_to_side_by_side():
    from onnx_explorer.widgets._diff_explorer import explore_diff

    view = explore_diff(unfused(dead=True), fused(), weights=False)
    try:
        assert view.side_by_side is None  # nothing made until asked
        both = view.show_side_by_side()
        assert isinstance(both, CompareView) and both in view.children
        assert both.diff is view.diff
        both.select("relu", "a")
        assert both.b.selected_name == "fused_matmul"
        view.show_side_by_side(False)
        assert view.graph_view in view.children[1].children
        assert view.show_side_by_side() is both  # made once
    finally:
        view.close()


def test_model_text_in_the_note_is_escaped():
    hostile = fused()
    hostile.graph.node[4].name = '<img src=x onerror="alert(1)">'
    view = compare_view(unfused(), hostile, weights=False)
    try:
        view.select('<img src=x onerror="alert(1)">', "b")
        assert "no counterpart" in view.note.value
        assert "<img" not in view.note.value and "&lt;img" in view.note.value
    finally:
        view.close()


@pytest.mark.graphviz
def test_a_fold_stepper_moves_on_both_sides():
    view = compare_view(scoped_chain(12, 60), _renamed_chain(12, 60), weights=False)
    try:
        pane_a, pane_b = view.a.graph_view, view.b.graph_view
        assert pane_a.wait(60) and pane_b.wait(60)
        if not pane_a.folds:
            pytest.skip("this chain is not folded")
        key = pane_a.folds[0]["key"]
        pane_a.step_fold(key, 5)
        assert 5 in pane_b.fold_steps.values()
    finally:
        view.close()
