"""Which nodes hold bodies (If/Loop/Scan graphs, a custom op's graph attributes), as the
ONNX reader finds them without decoding attributes: the wiring, the walk over every graph
and the metrics all start from this list."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

import onnx_explorer as ox


def _body(name: str) -> onnx.GraphProto:
    return helper.make_graph(
        [helper.make_node("Identity", ["x"], [f"{name}_out"])], name, [],
        [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1])],
    )  # fmt: skip


def _model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node(
            "If", ["c"], ["i"], name="if", then_branch=_body("then"), else_branch=_body("else")
        ),
        # A custom operator with a graph attribute, and one with a standard op's name.
        helper.make_node(
            "BeamSearch",
            ["x"],
            ["b"],
            name="beam",
            domain="com.microsoft",
            decoder=_body("decoder"),
        ),
        helper.make_node(
            "Relu", ["x"], ["r2"], name="relu_custom", domain="my.ops", body=_body("hidden")
        ),
        helper.make_node("Relu", ["x"], ["r3"], name="relu_custom_plain", domain="my.ops"),
        # An operator onnx does not know, in the standard domain.
        helper.make_node(
            "FutureOp", ["x"], ["f"], name="future", branches=[_body("a"), _body("b")]
        ),
        helper.make_node("Gemm", ["x", "x"], ["g"], name="gemm", alpha=2.0),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
         for n in ("r", "i", "b", "r2", "r3", "f", "g")],
    )  # fmt: skip
    return helper.make_model(
        graph,
        opset_imports=[
            helper.make_opsetid("", 17),
            helper.make_opsetid("com.microsoft", 1),
            helper.make_opsetid("my.ops", 1),
        ],
    )


def test_every_node_with_a_graph_attribute_is_found_whatever_its_operator(tmp_path):
    path = tmp_path / "bodies.onnx"
    onnx.save(_model(), path)
    graph = ox.load(path).graph
    found = {graph.nodes[i].name for i in graph.nodes_with_bodies()}
    assert found == {"if", "beam", "relu_custom", "future"}
    # The same answer as decoding every node's attributes.
    assert found == {n.name for n in graph.nodes if n.subgraphs()}
    bodies = {g.name for g in ox.load(path).graphs()}
    assert {"then", "else", "decoder", "hidden", "a", "b"} <= bodies
