"""TensorFlow GraphDef files: files written by real TensorFlow, and graphs built in code.

The files in tests/data/graphdef/ and the values in expected.json come from
scripts/make_graphdef_fixtures.py (TensorFlow 2.21); no TensorFlow is needed here.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import locations
import numpy as np
import pytest
from google.protobuf import text_format

import onnx_explorer as ox
from onnx_explorer.cli import main as cli_main
from onnx_explorer.readers.tensorflow.graphdef import _proto as pb
from onnx_explorer.readers.tensorflow.graphdef._read import (
    FunctionRef,
    layout_note,
    read_graphdef_bytes,
    read_graphdef_proto,
)
from onnx_explorer.views._text import attribute_text

DATA = locations.DATA / "graphdef"
EXPECTED = json.loads((DATA / "expected.json").read_text())
FILES = ["cnn_frozen.pb", "cnn_frozen.pbtxt", "functions.pb", "functions.pbtxt"]
CONV_KERNEL = "conv1/Conv2D/ReadVariableOp/resource"
DENSE_WEIGHTS = "dense/MatMul/ReadVariableOp/resource"


def _expected(file_name: str) -> dict:
    return EXPECTED[file_name.rsplit(".", 1)[0]]


def _normalise(inputs: list[str]) -> tuple[list[str], list[str]]:
    data = [i[:-2] if i.endswith(":0") else i for i in inputs if not i.startswith("^")]
    return data, [i[1:] for i in inputs if i.startswith("^")]


# -- files written by TensorFlow ---------------------------------------------------
@pytest.mark.parametrize("file_name", FILES)
def test_tensorflow_files_open_with_their_nodes(file_name: str) -> None:
    model = ox.load(DATA / file_name)
    expected = _expected(file_name)
    assert model.format == "graphdef"
    assert [(n.name, n.op_type) for n in model.graph.nodes] == [
        (n["name"], n["op"]) for n in expected["nodes"]
    ]
    for node, record in zip(model.graph.nodes, expected["nodes"]):
        data, control = _normalise(record["inputs"])
        assert list(node.inputs) == data
        assert list(node.control_inputs) == control
    assert model.metadata_props["versions.producer"] == str(expected["versions"]["producer"])


@pytest.mark.parametrize("file_name", FILES)
def test_placeholders_are_the_inputs_and_unread_nodes_the_outputs(file_name: str) -> None:
    model = ox.load(DATA / file_name)
    expected = _expected(file_name)["placeholders"]
    assert {v.name: (v.dtype, v.shape) for v in model.graph.inputs} == {
        name: (p["dtype"], tuple(None if d < 0 else d for d in p["shape"]))
        for name, p in expected.items()
    }
    # NoOp only orders reads; the final Identity is what the graph returns.
    assert [v.name for v in model.graph.outputs] == ["Identity"]
    assert model.graph.outputs[0].dtype == "float32"


@pytest.mark.parametrize("file_name", FILES)
def test_const_weights_have_the_values_tensorflow_recorded(file_name: str) -> None:
    model = ox.load(DATA / file_name)
    consts = _expected(file_name)["consts"]
    assert set(model.graph.initializers) == set(consts)
    for name, record in consts.items():
        tensor = model.graph.initializers[name]
        assert tensor.name == name
        assert tensor.dtype_name == record["dtype"]
        assert list(tensor.shape) == record["shape"]
        values = tensor.numpy().astype(np.float64)
        assert values.sum() == pytest.approx(record["sum"], rel=1e-6, abs=1e-9)
        np.testing.assert_allclose(values.reshape(-1)[:6], record["first"], rtol=1e-6)
        if "values" in record:
            np.testing.assert_allclose(values.reshape(-1), record["values"], rtol=1e-6)
        # The Const node's value attribute is the very same tensor.
        assert model.graph.node(name).attributes["value"].value is tensor
    refs = list(model.weights())
    assert len(refs) == len(consts) + sum(
        len(f["consts"]) for f in _expected(file_name)["functions"].values()
    )


@pytest.mark.parametrize("file_name", ["cnn_frozen.pb", "cnn_frozen.pbtxt"])
def test_weight_statistics_and_histograms_match_tensorflow(file_name: str) -> None:
    model = ox.load(DATA / file_name)
    for name, record in _expected(file_name)["consts"].items():
        tensor = model.graph.initializers[name]
        if tensor.dtype_name not in ("float32", "float16"):
            continue
        stats = tensor.stats()
        assert stats.count == tensor.size
        assert stats.min == pytest.approx(record["min"], rel=1e-6)
        assert stats.max == pytest.approx(record["max"], rel=1e-6)
        assert stats.mean == pytest.approx(record["sum"] / tensor.size, rel=1e-5, abs=1e-9)
        hist = tensor.histogram(bins=10)
        assert hist.total == tensor.size
        assert hist.counts.tolist() == record["histogram"]


def test_binary_weights_are_read_from_their_place_in_the_file() -> None:
    path = DATA / "cnn_frozen.pb"
    model = ox.load(path)
    kernel = model.graph.initializers[CONV_KERNEL]
    where = kernel.location
    assert where.kind == "embedded" and where.offset is not None and where.length == 864
    raw = path.read_bytes()[where.offset : where.offset + where.length]
    np.testing.assert_array_equal(kernel.numpy().reshape(-1), np.frombuffer(raw, "<f4"))
    # Splat and half_val constants are typed fields, decoded on demand.
    assert model.graph.initializers["scale"].location.kind == "typed"
    assert model.graph.initializers["offset_half"].dtype_name == "float16"
    model.close()


def test_conv_filters_keep_hwio_and_say_so() -> None:
    model = ox.load(DATA / "cnn_frozen.pb")
    kernel = model.graph.initializers[CONV_KERNEL]
    assert kernel.shape == (3, 3, 3, 8)  # height, width, in channels, out channels
    assert layout_note(model, CONV_KERNEL) == "HWIO (TensorFlow Conv2D filter layout)"
    assert layout_note(model.graph, CONV_KERNEL) == "HWIO (TensorFlow Conv2D filter layout)"
    assert layout_note(model, DENSE_WEIGHTS).startswith("IO (TensorFlow MatMul")
    assert layout_note(model, "scale") is None
    assert layout_note(model, "no such tensor") is None


@pytest.mark.parametrize("file_name", ["functions.pb", "functions.pbtxt"])
def test_function_library_becomes_functions(file_name: str) -> None:
    model = ox.load(DATA / file_name)
    expected = _expected(file_name)["functions"]
    assert {f.name for f in model.functions} == set(expected)
    for function in model.functions:
        record = expected[function.name]
        graph = function.graph
        assert graph.path == f"function::{function.name}"
        assert [v.name for v in graph.inputs] == record["inputs"]
        assert [n.name for n in graph.nodes] == [n["name"] for n in record["nodes"]]
        # Results are the body values named by `ret` ("Identity:output:0").
        assert [v.name for v in graph.outputs] == [record["ret"][o] for o in record["outputs"]]
        for value in graph.outputs:
            assert graph.producer(value.name) is not None
        for node, n in zip(graph.nodes, record["nodes"]):
            assert list(node.inputs) == n["inputs"]
            for value in node.inputs:
                assert value in record["inputs"] or graph.producer(value) is not None
        for name, const in record["consts"].items():
            tensor = graph.initializers[name]
            values = tensor.numpy().astype(np.float64).reshape(-1)
            assert values.sum() == pytest.approx(const["sum"])
    # Calls name the function they run, and it is in the library.
    calls = [
        (graph, node)
        for graph in model.graphs()
        for node in graph.nodes
        if node.op_type == "PartitionedCall"
    ]
    assert len(calls) == 2
    for _, node in calls:
        ref = node.attributes["f"].value
        assert node.attributes["f"].kind == "FUNC"
        assert isinstance(ref, FunctionRef)
        assert model.function("", ref.name) is not None
    assert model.nodes_total == 5 + sum(len(f["nodes"]) for f in expected.values())


def test_text_and_binary_files_give_the_same_model() -> None:
    binary = ox.load(DATA / "cnn_frozen.pb")
    text = ox.load(DATA / "cnn_frozen.pbtxt")
    for a, b in zip(binary.graph.nodes, text.graph.nodes):
        assert (a.name, a.op_type, a.inputs, a.outputs, a.control_inputs) == (
            b.name, b.op_type, b.inputs, b.outputs, b.control_inputs,
        )  # fmt: skip
        assert a.attributes.keys() == b.attributes.keys()
        for key, attr in a.attributes.items():
            if attr.kind != "TENSOR":
                assert attr == b.attributes[key]


def test_bytes_and_messages_load_like_files() -> None:
    for file_name in ("cnn_frozen.pb", "cnn_frozen.pbtxt"):
        data = (DATA / file_name).read_bytes()
        for model in (ox.load(data), read_graphdef_bytes(data)):
            assert model.format == "graphdef"
            assert len(model.graph.nodes) == 25
            kernel = model.graph.initializers[CONV_KERNEL]
            assert kernel.numpy().sum() == pytest.approx(
                _expected(file_name)["consts"][CONV_KERNEL]["sum"], rel=1e-6
            )
    proto = pb.GraphDef()
    proto.ParseFromString((DATA / "cnn_frozen.pb").read_bytes())
    for model in (ox.load(proto), read_graphdef_proto(proto)):
        assert model.graph.initializers[CONV_KERNEL].location.kind == "memory"
        assert model.graph.initializers[CONV_KERNEL].shape == (3, 3, 3, 8)


def test_graphdef_suffix_is_not_needed(tmp_path: Path) -> None:
    for src, name in (("cnn_frozen.pb", "model.bin"), ("cnn_frozen.pbtxt", "graph.txt")):
        shutil.copy(DATA / src, tmp_path / name)
        assert ox.load(tmp_path / name).format == "graphdef"


def test_summary_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["summary", str(DATA / "cnn_frozen.pb")]) == 0
    out = capsys.readouterr().out
    assert "graphdef" in out
    assert "Conv2D" in out
    assert "image" in out
    assert cli_main(["summary", "--json", str(DATA / "functions.pbtxt")]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "graphdef"
    assert sorted(info["functions"]) == sorted(EXPECTED["functions"]["functions"])
    assert info["inputs"] == [
        {"name": "x", "type": "float32", "dtype": "float32", "shape": [None, 4]}
    ]


def _build_dot():
    return pytest.importorskip("onnx_explorer.views._drawing").build_dot


@pytest.mark.parametrize("file_name", FILES)
def test_graphs_render_to_dot(file_name: str) -> None:
    build_dot = _build_dot()
    model = ox.load(DATA / file_name)
    for graph in model.graphs():
        result = build_dot(graph, model, expanded="all")
        assert result.source.startswith(("digraph", "strict digraph"))
        assert result.drawn > 0


@pytest.mark.graphviz
def test_cnn_renders_to_svg() -> None:
    graphviz = pytest.importorskip("graphviz")
    build_dot = _build_dot()
    model = ox.load(DATA / "cnn_frozen.pb")
    source = build_dot(model.graph, model, expanded="all").source
    svg = graphviz.Source(source).pipe(format="svg").decode()
    assert "<svg" in svg
    assert "Conv2D" in svg
    # The four ^ReadVariableOp control inputs of NoOp and ^NoOp are dashed edges.
    assert len(re.findall(r"-> \w+ \[[^\]]*style=dashed", source)) == 5


# -- graphs built in code ----------------------------------------------------------
def _graph(text: str):
    proto = pb.GraphDef()
    text_format.Parse(text, proto)
    return ox.load(proto.SerializeToString())


def test_ports_and_control_inputs_are_told_apart() -> None:
    model = _graph(
        """
        node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
        node { name: "split" op: "Split" input: "x:0" input: "x" }
        node { name: "a" op: "Relu" input: "split:2" input: "^x" }
        node { name: "b" op: "Add" input: "split:0" input: "split:1" input: "^a" }
        """
    )
    g = model.graph
    assert g.node("split").inputs == ("x", "x")
    assert g.node("split").outputs == ("split", "split:1", "split:2")
    assert g.node("a").inputs == ("split:2",)
    assert g.node("a").control_inputs == ("x",)
    assert g.node("b").inputs == ("split", "split:1")
    assert g.producer("split:2") is g.node("split")
    assert [n.name for n in g.consumers("split")] == ["b"]
    assert g.node("x").outputs == ("x",)
    assert [v.name for v in g.outputs] == ["b"]  # "a" is read by a control edge


def test_every_attribute_kind() -> None:
    model = _graph(
        """
        node {
          name: "n" op: "Custom"
          attr { key: "s" value { s: "same" } }
          attr { key: "blob" value { s: "\\001\\002x" } }
          attr { key: "i" value { i: -7 } }
          attr { key: "f" value { f: 0.25 } }
          attr { key: "b" value { b: true } }
          attr { key: "t" value { type: DT_BFLOAT16 } }
          attr { key: "q" value { type: DT_QINT8 } }
          attr { key: "r" value { type: DT_FLOAT_REF } }
          attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } }
          attr { key: "any_shape" value { shape { unknown_rank: true } } }
          attr { key: "tensor" value { tensor { dtype: DT_INT64 tensor_shape { dim { size: 3 } }
                                                int64_val: 5 int64_val: 6 } } }
          attr { key: "ss" value { list { s: "a" s: "b" } } }
          attr { key: "is" value { list { i: 1 i: 2 } } }
          attr { key: "fs" value { list { f: 1.5 } } }
          attr { key: "bs" value { list { b: false b: true } } }
          attr { key: "ts" value { list { type: DT_INT8 type: DT_HALF } } }
          attr { key: "shapes" value { list { shape { dim { size: 2 } } shape { } } } }
          attr { key: "tensors" value { list { tensor { dtype: DT_FLOAT float_val: 1 } } } }
          attr { key: "funcs" value { list { func { name: "g" } } } }
          attr { key: "func" value { func { name: "f" attr { key: "T" value { type: DT_FLOAT } } } } }
          attr { key: "p" value { placeholder: "T" } }
          attr { key: "empty" value { list { } } }
          attr { key: "unset" value { } }
        }
        """
    )
    attrs = model.graph.node("n").attributes
    kinds = {k: (a.kind, a.value) for k, a in attrs.items() if k not in ("tensor", "tensors")}
    assert kinds == {
        "s": ("STRING", "same"),
        "blob": ("STRING", "\\001\\002x"),
        "i": ("INT", -7),
        "f": ("FLOAT", 0.25),
        "b": ("BOOL", True),
        "t": ("TYPE", "bfloat16"),
        "q": ("TYPE", "qint8"),
        "r": ("TYPE", "float32_ref"),
        "shape": ("SHAPE", (None, 3)),  # dims, as data: views write the text
        "any_shape": ("SHAPE", None),
        "ss": ("STRINGS", ("a", "b")),
        "is": ("INTS", (1, 2)),
        "fs": ("FLOATS", (1.5,)),
        "bs": ("BOOLS", (False, True)),
        "ts": ("TYPES", ("int8", "float16")),
        "shapes": ("SHAPES", ((2,), ())),
        "funcs": ("FUNCS", (FunctionRef("g"),)),
        "func": ("FUNC", attrs["func"].value),
        "p": ("PLACEHOLDER", "T"),
        "empty": ("LIST", ()),
        "unset": ("UNDEFINED", None),
    }
    shown = {k: attribute_text(attrs[k]) for k in ("shape", "any_shape", "shapes")}
    assert shown == {"shape": "[?, 3]", "any_shape": "?", "shapes": "[[2], []]"}
    func = attrs["func"].value
    assert func.name == "f" and func.attributes["T"].value == "float32"
    assert str(func) == "f(T=float32)"
    assert attrs["p"].ref_attr_name == "T"
    tensor = attrs["tensor"].value
    assert tensor.name == "n.tensor"
    assert tensor.numpy().tolist() == [5, 6, 6]  # the last value repeats
    (listed,) = attrs["tensors"].value
    assert listed.name == "n.tensors[0]" and listed.numpy() == 1.0
    # Tensor attributes of other ops are weights too, but not initializers.
    assert not model.graph.initializers
    assert {r.tensor.name for r in model.weights()} == {"n.tensor", "n.tensors[0]"}


def test_placeholders_shapes_and_output_shapes() -> None:
    model = _graph(
        """
        node { name: "img" op: "Placeholder"
               attr { key: "dtype" value { type: DT_UINT8 } }
               attr { key: "shape" value { shape { dim { size: -1 } dim { size: 2 } } } } }
        node { name: "any" op: "Placeholder"
               attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "shape" value { shape { unknown_rank: true } } } }
        node { name: "cast" op: "Cast" input: "img" input: "^any"
               attr { key: "DstT" value { type: DT_FLOAT } }
               attr { key: "_output_shapes" value { list { shape { dim { size: -1 }
                                                                   dim { size: 2 } } } } } }
        node { name: "eq" op: "Equal" input: "cast" input: "cast"
               attr { key: "T" value { type: DT_FLOAT } } }
        node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
               attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 1 } } } }
        node { name: "nop" op: "NoOp" }
        """
    )
    g = model.graph
    assert [(v.name, v.type, v.dtype, v.shape) for v in g.inputs] == [
        ("img", "uint8", "uint8", (None, 2)),
        ("any", "float32", "float32", None),
    ]
    assert g.value("cast") == ox.ValueInfo("cast", "float32", "float32", (None, 2))
    # Unread Const and NoOp are not outputs; Equal outputs bool.
    assert [(v.name, v.dtype) for v in g.outputs] == [("eq", "bool")]
    assert g.value("c").dtype == "float32"


def test_duplicate_and_missing_names_are_made_unique() -> None:
    model = _graph(
        """
        node { name: "a" op: "Placeholder" }
        node { name: "a" op: "Relu" input: "a" }
        node { op: "Relu" input: "a" }
        """
    )
    names = [(n.name, n.has_file_name) for n in model.graph.nodes]
    assert names == [("a", True), ("a#1", True), ("Relu_2", False)]
    assert model.graph.producer("a") is model.graph.nodes[0]
    many = pb.GraphDef()
    many.node.extend(pb.NodeDef(name="same", op="NoOp") for _ in range(20_000))
    names = [n.name for n in ox.load(many.SerializeToString()).graph.nodes]
    assert names[:3] == ["same", "same#1", "same#2"] and len(set(names)) == 20_000


def test_function_bodies_use_tensorflow_value_names() -> None:
    model = _graph(
        """
        node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
        node { name: "call" op: "twice" input: "x" }
        library {
          function {
            signature {
              name: "twice"
              input_arg { name: "v" type_attr: "T" }
              output_arg { name: "out" type: DT_FLOAT }
              output_arg { name: "extra" type_attr: "T" }
              attr { name: "T" type: "type" default_value { type: DT_FLOAT } }
              description: "doubles"
            }
            attr { key: "_noinline" value { b: true } }
            node_def { name: "two" op: "Const"
                       attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 2 } } } }
            node_def { name: "m" op: "Mul" input: "v" input: "two:output" }
            node_def { name: "u" op: "Unique" input: "m:z:0" }
            ret { key: "out" value: "m:z:0" }
            ret { key: "extra" value: "u:idx:0" }
          }
        }
        """
    )
    (function,) = model.functions
    assert model.function_for(model.graph.node("call")) is function
    g = function.graph
    assert [(v.name, v.type) for v in g.inputs] == [("v", "tensor(T)")]
    assert [(v.name, v.dtype) for v in g.outputs] == [("m:z:0", "float32"), ("u:idx:0", None)]
    assert g.node("m").inputs == ("v", "two:output:0")
    assert g.node("m").outputs == ("m:z:0",)
    assert g.node("u").outputs == ("u:idx:0",)
    assert g.node("two").outputs == ("two:output:0",)
    assert g.initializers["two"].numpy() == 2.0
    assert function.attribute_names == ("T",)
    assert function.attribute_defaults["T"].value == "float32"
    assert function.attribute_defaults["_noinline"].value is True
    assert function.doc_string == "doubles"
