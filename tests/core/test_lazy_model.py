"""Opening converts nothing: graphs, nodes and fields are built when first read, the same as before."""

from __future__ import annotations

import threading
import time

import numpy as np
import onnx
from builders import mlp, nested_if
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.model import Graph, Node


def _ld(field: int, payload: bytes) -> bytes:
    out = bytearray()
    for value in (field << 3 | 2, len(payload)):
        while True:
            out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
            value >>= 7
            if not value:
                break
    return bytes(out) + payload


def test_opening_a_file_builds_no_node(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(mlp(), path)
    model = ox.load(path)
    graph = model.graph
    assert "nodes" not in vars(graph) and "initializers" not in vars(graph)
    first = graph.nodes[0]
    assert isinstance(first, Node) and first.index == 0 and first.graph is graph
    assert first.name == "/layer1/MatMul"  # one field read fills it for every node
    assert [n.op_type for n in graph.nodes] == [n.op_type for n in mlp().graph.node]
    assert graph.node("/layer1/MatMul") is first


def test_lazy_nodes_read_like_eager_ones():
    proto = mlp()
    proto.graph.node[1].metadata_props.add(key="pkg.torch.onnx.name_scopes", value="['a']")
    lazy = ox.load(proto.SerializeToString()).graph
    eager = ox.load(proto).graph  # an in-memory proto is converted at once
    assert "nodes" in vars(eager)
    for a, b in zip(lazy.nodes, eager.nodes, strict=True):
        assert (a.name, a.op_type, a.domain, a.inputs, a.outputs, a.doc_string) == (
            b.name, b.op_type, b.domain, b.inputs, b.outputs, b.doc_string,
        )  # fmt: skip
        assert dict(a.metadata_props) == dict(b.metadata_props)
        assert a.attributes.keys() == b.attributes.keys()
        assert (a.control_inputs, a.device, a.has_file_name) == ((), "", True)
    assert lazy.nodes[1].metadata_props == {"pkg.torch.onnx.name_scopes": "['a']"}
    assert lazy.inputs == eager.inputs and lazy.outputs == eager.outputs
    assert lazy.initializers.keys() == eager.initializers.keys()


def test_a_proto_changed_after_loading_does_not_change_the_model():
    proto = mlp()
    model = ox.load(proto)
    before = [n.name for n in model.graph.nodes]
    proto.graph.node.pop()
    proto.graph.node[0].name = "renamed"
    assert [n.name for n in model.graph.nodes] == before


def test_bodies_know_their_model_and_parent():
    model = ox.load(nested_if(3).SerializeToString())
    bodies = [g for g in model.graphs() if g is not model.graph]
    assert bodies
    for body in bodies:
        assert body.model is model
        assert body.parent is not None and body.parent.graph is not None
        assert body in [g for _, g in body.parent.subgraphs()]


def test_nodes_read_from_many_threads_are_the_same_objects():
    nodes = [helper.make_node("Relu", [f"x{i}"], [f"x{i + 1}"], name=f"n{i}") for i in range(3000)]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("x3000", TensorProto.FLOAT, [1])],
    )
    data = helper.make_model(graph).SerializeToString()
    for _ in range(5):
        model = ox.load(data)
        seen: list[tuple[int, list[str], Node]] = []
        barrier = threading.Barrier(4)
        threads = [threading.Thread(target=_read, args=(model, barrier, seen)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({s[0] for s in seen}) == 1 and len({id(s[2]) for s in seen}) == 1
        assert all(s[1] == [f"n{i}" for i in range(3000)] for s in seen)


def _read(model: ox.Model, barrier: threading.Barrier, seen: list) -> None:
    barrier.wait()
    g = model.graph
    seen.append((id(g.nodes), [n.name for n in g.nodes], g.node("n1500")))


def test_nameless_and_repeated_names_in_a_lazy_graph():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Relu", ["a"], ["b"], name="Relu_0"),
        helper.make_node("Relu", ["b"], ["c"], name="dup"),
        helper.make_node("Relu", ["c"], ["d"], name="dup"),
    ]
    graph = helper.make_graph(nodes, "g", [], [])
    g = ox.load(helper.make_model(graph).SerializeToString()).graph
    assert [n.name for n in g.nodes] == ["Relu_0#1", "Relu_0", "dup", "dup#1"]
    assert [n.has_file_name for n in g.nodes] == [False, True, True, True]
    assert g.node("dup#1").inputs == ("c",)


def test_text_that_is_not_utf8_is_decoded_with_replacement():
    # Hand-written NodeProto: input, output, name and op_type with invalid UTF-8.
    node = _ld(1, b"in\xff") + _ld(2, b"out") + _ld(3, b"n\xfe") + _ld(4, b"Op\xff")
    graph = _ld(1, node) + _ld(1, _ld(2, b"y") + _ld(4, b"Relu")) + _ld(2, b"g")
    data = bytes([0x08, 8]) + _ld(7, graph)  # ir_version 8, graph
    g = ox.load(data).graph
    first, second = g.nodes
    assert first.name == "n\ufffd" and first.op_type == "Op\ufffd"
    assert first.inputs == ("in\ufffd",) and first.outputs == ("out",)
    assert second.name == "Relu_1" and not second.has_file_name
    assert g.node("n\ufffd") is first


def test_function_bodies_are_lazy_too():
    body = [helper.make_node("Relu", ["x"], ["y"], name="inner")]
    function = helper.make_function("local", "F", ["x"], ["y"], body, [helper.make_opsetid("", 17)])
    graph = helper.make_graph(
        [helper.make_node("F", ["a"], ["b"], domain="local")],
        "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1])],
    )
    proto = helper.make_model(
        graph,
        functions=[function],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
    )
    model = ox.load(proto.SerializeToString())
    f = model.function("local", "F")
    assert f is not None and isinstance(f.graph, Graph) and "nodes" not in vars(f.graph)
    assert [n.name for n in f.graph.nodes] == ["inner"]
    assert [v.name for v in f.graph.inputs] == ["x"] and f.graph.model is model


def test_constant_and_initializer_tensors_read_through_lazy_nodes(tmp_path):
    value = np.arange(2000, dtype=np.float32)  # 8 KB: cut out, read from the file
    small = np.arange(30, dtype=np.float32)  # 120 B: kept in the parsed proto
    nodes = [
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(value, "")),
        helper.make_node("Add", ["c", "w"], ["y"]),
        helper.make_node("Add", ["y", "s"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2000])],
        [numpy_helper.from_array(value * 2, "w"), numpy_helper.from_array(small, "s")],
    )
    path = tmp_path / "c.onnx"
    onnx.save(helper.make_model(graph), path)
    model = ox.load(path)
    weights = {w.tensor.name: w for w in model.weights()}
    assert weights.keys() == {"c", "w", "s"} and weights["c"].kind == "constant"
    np.testing.assert_array_equal(weights["c"].tensor.numpy(), value)
    np.testing.assert_array_equal(weights["w"].tensor.numpy(), value * 2)
    np.testing.assert_array_equal(weights["s"].tensor.numpy(), small)
    raw = path.read_bytes()
    for name in ("c", "w"):
        where = weights[name].tensor.location
        assert where.kind == "embedded" and where.offset is not None
        assert (
            raw[where.offset : where.offset + where.length]
            == weights[name].tensor.numpy().tobytes()
        )
    kept = weights["s"].tensor.location
    assert (kept.kind, kept.offset, kept.length) == ("embedded", None, 120)


def test_many_nodes_with_one_name_stay_fast():
    # Each repeat takes the next free suffix without trying every smaller one again.
    nodes = [helper.make_node("Relu", ["x"], ["x"], name="same") for _ in range(20000)]
    nodes += [helper.make_node("Relu", ["x"], ["x"]) for _ in range(3)]
    graph = helper.make_graph(nodes, "g", [], [])
    g = ox.load(helper.make_model(graph).SerializeToString()).graph
    started = time.perf_counter()
    names = [n.name for n in g.nodes]
    assert time.perf_counter() - started < 2.0
    assert names[:3] == ["same", "same#1", "same#2"] and names[19999] == "same#19999"
    assert names[20000:] == ["Relu_20000", "Relu_20001", "Relu_20002"]
    assert len(set(names)) == len(names)


def test_hand_built_bodies_still_get_their_model():
    body = Graph("body", [Node("inner", "Relu", inputs=("x",), outputs=("y",))], (), (), {})
    attr = ox.Attribute("then_branch", "GRAPH", body)
    node = Node("if", "If", inputs=("c",), outputs=("y",), attributes={"then_branch": attr})
    model = ox.Model(Graph("main", [node], (), (), {}), format="onnx")
    assert body.model is model and [g.name for g in model.graphs()] == ["main", "body"]
