"""A structure diff reads columns, not objects: initializers by dtype and shape without a
Tensor made, attributes by their serialized bytes without decoding them, except where the
bytes cannot vouch for the value (a tensor cut out of the file stands there as a marker,
and the same marker in two files stands for different bytes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.model import TensorsOnDemand


def _save(path: Path, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto]) -> str:
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def _renamed_chain(tmp_path: Path, tag: str, alpha: float) -> str:
    w = np.arange(64, dtype=np.float32).reshape(8, 8)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], [f"{tag}0"], name=f"{tag}_mm"),
        helper.make_node("LeakyRelu", [f"{tag}0"], ["y"], name=f"{tag}_act", alpha=alpha),
    ]
    return _save(tmp_path / f"{tag}.onnx", nodes, [numpy_helper.from_array(w, "w")])


def test_a_structure_diff_makes_no_tensor(tmp_path: Path) -> None:
    a = ox.load(_renamed_chain(tmp_path, "a", 0.1))
    b = ox.load(_renamed_chain(tmp_path, "b", 0.2))
    d = ox.diff(a, b, weights=False)
    assert [c.b.name for c in d.nodes_changed] == ["b_act"]
    assert [(x.name, y.name) for x, y in d.nodes_renamed] == [("a_mm", "b_mm")]
    for model in (a, b):
        initializers = model.graph.initializers
        assert isinstance(initializers, TensorsOnDemand)
        assert initializers._made == {}  # dtype and shape read off the file's columns
        assert dict(initializers.types()) == {"w": ("float32", (8, 8))}
    assert d.equal is False and not d.tensors_changed


def test_a_shape_change_is_found_without_tensors(tmp_path: Path) -> None:
    def model(tag: str, shape: tuple[int, ...]) -> str:
        nodes = [helper.make_node("Add", ["x", "b"], ["y"], name="add")]
        bias = numpy_helper.from_array(np.zeros(shape, np.float32), "b")
        return _save(tmp_path / f"{tag}.onnx", nodes, [bias])

    d = ox.diff(model("a", (8,)), model("b", (1, 8)), weights=False)
    assert [(c.b, c.shape_a, c.shape_b) for c in d.tensors_changed] == [("b", (8,), (1, 8))]


def test_tensor_attributes_cut_out_of_the_file_are_compared_by_value(tmp_path: Path) -> None:
    """Both files hold one big tensor attribute, cut out by the reader and replaced by the
    same marker (range 0): equal serialized bytes, different values."""

    def model(tag: str, fill: float) -> str:
        value = numpy_helper.from_array(np.full(4096, fill, np.float32), "")
        nodes = [helper.make_node("Holder", ["x"], ["y"], name="n", domain="custom", value=value)]
        return _save(tmp_path / f"{tag}.onnx", nodes, [])

    a, b = ox.load(model("a", 1.0)), ox.load(model("b", 2.0))
    found_a, found_b = a.graph.attribute_fingerprints(), b.graph.attribute_fingerprints()
    assert found_a is not None and found_b is not None
    assert found_a[1] == found_b[1] == [None]  # a tensor: the reader does not vouch for it
    d = ox.diff(a, b, weights=False)
    assert [c.b.name for c in d.nodes_changed] == ["n"]
    assert "contents" in d.nodes_changed[0].changes[0]
    same = ox.diff(model("c", 1.0), model("d", 1.0), weights=False)
    assert same.equal


def test_attribute_fingerprints_match_exactly_equal_attributes(tmp_path: Path) -> None:
    def model(tag: str, **attrs: object) -> str:
        nodes = [helper.make_node("Gemm", ["x", "x"], ["y"], name="g", **attrs)]
        return _save(tmp_path / f"{tag}.onnx", nodes, [])

    a = ox.load(model("a", alpha=0.5, transB=1))
    b = ox.load(model("b", alpha=0.5, transB=1))
    c = ox.load(model("c", alpha=0.5, transB=0))
    keys = [m.graph.attribute_fingerprints() for m in (a, b, c)]
    assert keys[0] == keys[1] != keys[2]
    assert ox.diff(a, b, weights=False).equal
    changed = ox.diff(a, c, weights=False)
    assert [line for c in changed.nodes_changed for line in c.changes] == [
        "attribute transB: 1 → 0"
    ]
    proto = onnx.load(model("p", alpha=0.5, transB=1))  # a caller's proto: decoded as it is
    assert ox.load(proto).graph.attribute_fingerprints() is None
    assert ox.diff(proto, b, weights=False).equal  # both sides compared decoded


def _weights(tmp_path: Path, tag: str, **arrays: np.ndarray) -> str:
    names = list(arrays)
    nodes = [helper.make_node("Sum", ["x", *names], ["y"], name="sum")]
    inits = [numpy_helper.from_array(value, name) for name, value in arrays.items()]
    return _save(tmp_path / f"{tag}.onnx", nodes, inits)


def test_equal_initializer_fingerprints_need_no_types(tmp_path: Path) -> None:
    """Serialized alike: one dtype and shape, so weights=False keeps no pair and reads no
    type; values that differ in tensors of one type are still no change for weights=False
    (and are found with weights)."""
    w = np.ones((2, 8), np.float32)
    a = ox.load(_weights(tmp_path, "a", w=w, v=w[0]))
    b = ox.load(_weights(tmp_path, "b", w=w, v=w[0] * 2))
    found_a, found_b = a.graph.initializer_fingerprints(), b.graph.initializer_fingerprints()
    assert found_a is not None and found_b is not None
    assert found_a[1]["w"] == found_b[1]["w"] and found_a[1]["v"] != found_b[1]["v"]
    d = ox.diff(a, b, weights=False)
    assert d.equal
    initializers = a.graph.initializers
    assert isinstance(initializers, TensorsOnDemand)
    assert initializers._typed is not None  # "v" differs in bytes: its type was read
    same = ox.load(_weights(tmp_path, "c", w=w, v=w[0]))
    assert ox.diff(a, same, weights=False).equal
    untyped = same.graph.initializers
    assert isinstance(untyped, TensorsOnDemand) and untyped._typed is None
    assert [c.b for c in ox.diff(a, b).tensors_changed] == ["v"]


def test_a_dtype_or_shape_change_is_reported_without_weights(tmp_path: Path) -> None:
    w = np.ones((2, 8), np.float32)
    a = _weights(tmp_path, "a", w=w, v=w[0])
    b = _weights(tmp_path, "b", w=w.astype(np.float16), v=w[0].reshape(1, 8))
    d = ox.diff(a, b, weights=False)
    assert [(c.b, c.dtype_a, c.dtype_b, c.shape_a, c.shape_b) for c in d.tensors_changed] == [
        ("w", "float32", "float16", (2, 8), (2, 8)),
        ("v", "float32", "float32", (8,), (1, 8)),
    ]


def test_renamed_and_matched_pairs_are_made_when_first_read(tmp_path: Path) -> None:
    d = ox.diff(_renamed_chain(tmp_path, "a", 0.1), _renamed_chain(tmp_path, "b", 0.1))
    assert d._settled is None  # nothing read yet
    assert d.equal
    assert [(x.name, y.name) for x, y in d.nodes_matched] == [
        ("a_mm", "b_mm"), ("a_act", "b_act"),
    ]  # fmt: skip
    assert d.nodes_renamed == d.nodes_matched
    assert d.nodes_renamed[0] is d.nodes_matched[0]  # one pair of refs per matched pair
    assert d.node_status() == {"b_mm": "renamed", "b_act": "renamed"}
