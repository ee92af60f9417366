"""Drawing graphs: bounded layouts on big graphs, hostile names, Graphviz errors, the CLI."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import onnx
import pytest
from builders import mlp, nested_if
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.samples import tiny_transformer
from onnx_explorer.views._drawing import MAX_NODES_LIMIT, build_dot

HOSTILE_NAMES = [
    'quote " inside',
    "back\\slash",
    "trailing odd backslash\\",
    "escapes \\N \\G \\L \\E \\T \\H",
    "<b>html-like</b> label",
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "port:with:colons",
    "line\nbreak\r\nand\ttab",
    "x" * 10_000,
    "{brace} [bracket] ; -> --",
    "javascript:alert(1)",
]


def hostile_graph_model() -> onnx.ModelProto:
    nodes, prev = [], "input"
    for i, name in enumerate(HOSTILE_NAMES):
        out = f"{name}#out{i}"
        w = f"{name}#w{i}"
        nodes.append(helper.make_node("Add", [prev, w], [out], name=name, doc_string=name))
        prev = out
    inits = [
        numpy_helper.from_array(np.ones(2, np.float32), f"{name}#w{i}")
        for i, name in enumerate(HOSTILE_NAMES)
    ]
    graph = helper.make_graph(
        nodes, "<script>graph</script>",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["<b>batch</b>", 2])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ['dim"\\', 2])],
        inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


SVG_ELEMENTS = {"svg", "g", "title", "text", "path", "polygon", "ellipse", "polyline", "defs"}
SVG_ATTRIBUTES = {
    "width", "height", "viewBox", "transform", "id", "class", "fill", "stroke", "points", "d",
    "x", "y", "cx", "cy", "rx", "ry", "text-anchor", "font-family", "font-size",
    "font-weight", "stroke-width", "stroke-dasharray", "fill-opacity", "stroke-opacity",
    "font-style", "{http://www.w3.org/1999/xlink}title",
}  # fmt: skip


@pytest.mark.graphviz
def test_hostile_names_reach_the_svg_only_as_text():
    model = ox.load(hostile_graph_model())
    svg = model.graph.render_svg(expanded="all", max_nodes=100)
    root = ET.fromstring(svg)  # well-formed XML: nothing broke out of a text node
    texts = []
    for element in root.iter():
        tag = element.tag.split("}", 1)[-1]
        assert tag in SVG_ELEMENTS, tag
        for attribute, value in element.attrib.items():
            name = (
                attribute.split("}", 1)[-1]
                if attribute.startswith("{http://www.w3.org/2000")
                else attribute
            )
            assert name in SVG_ATTRIBUTES, attribute
            if name == "id":
                assert (value[:1] in "nscioxe" and value[1:].isdigit()) or value.startswith(
                    "graph"
                ), value
            assert "<" not in value and "javascript:" not in value.lower()
        texts.append(element.text or "")
    shown = "\n".join(texts)
    # The names are there for people to read, as text.
    assert "<script>alert(1)</script>" in shown
    assert "<b>html-like</b> label" in shown or "<b>html-like</b>" in shown


def test_hostile_names_never_become_dot_identifiers():
    model = ox.load(hostile_graph_model())
    result = build_dot(model.graph, model, expanded="all", max_nodes=100)
    for line in result.source.splitlines():
        head = line.split("[", 1)[0].strip()
        if head and not head.startswith(
            ("digraph", "graph", "node", "edge", "subgraph", "}", "id=", "label")
        ):
            assert all(
                part.strip().rstrip(";").replace("_", "").isalnum() or part.strip() == "->"
                for part in head.split()
            ), head
    assert {entry["kind"] for entry in result.ids.values()} >= {"node"}


def _chain(count: int, scoped: bool) -> onnx.ModelProto:
    nodes, prev = [], "x"
    for i in range(count):
        layer, j = divmod(i, 50)
        name = f"/model/layers.{layer}/block{j % 5}/Relu_{j}" if scoped else f"node_{i}"
        nodes.append(helper.make_node("Relu", [prev], [f"t{i}"], name=name))
        prev = f"t{i}"
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1])],
    )  # fmt: skip
    return helper.make_model(graph)


@pytest.mark.parametrize("scoped", [True, False], ids=["scoped", "numbered"])
def test_large_graphs_get_a_bounded_first_view(scoped):
    model = ox.load(_chain(6000, scoped))
    result = build_dot(model.graph, model, edge_labels="none")
    assert 0 < result.drawn <= 800
    assert result.notes  # the view says what it collapsed or cut
    assert any(e["kind"] == "scope" for e in result.ids.values())


def test_expanding_one_scope_draws_its_nodes():
    model = ox.load(_chain(3000, scoped=True))
    first = build_dot(model.graph, model, edge_labels="none")
    result = build_dot(model.graph, model, expanded=["model/layers.7/block0"], edge_labels="none")
    drawn = {e["name"] for e in result.ids.values() if e["kind"] == "node"}
    assert "/model/layers.7/block0/Relu_0" in drawn
    assert result.drawn <= 800 and first.drawn <= 800


def test_max_nodes_is_capped():
    model = ox.load(_chain(3000, scoped=True))
    with pytest.raises(ValueError):
        build_dot(model.graph, model, max_nodes=MAX_NODES_LIMIT + 1)
    result = build_dot(model.graph, model, expanded="all", max_nodes=200, edge_labels="none")
    assert result.drawn <= 200 and result.notes


def test_focus_draws_the_neighbourhood():
    model = ox.load(_chain(2000, scoped=False))
    result = build_dot(model.graph, model, focus="node_1000", hops=2, edge_labels="none")
    drawn = {e["name"] for e in result.ids.values() if e["kind"] == "node"}
    assert drawn == {f"node_{i}" for i in range(998, 1003)}


def test_initializers_are_folded_into_their_consumer():
    model = ox.load(mlp())
    source = build_dot(model.graph, model).source
    assert "⟨4×8⟩ float32" in source  # /layer1/W drawn inside the MatMul box
    assert "/layer1/W" not in source.split("label=")[0]


def test_edges_carry_types_from_shape_inference():
    model = ox.load(tiny_transformer(layers=1))
    source = build_dot(model.graph, model, expanded="all", edge_labels="both").source
    # every size a number: batch and sequence bound (to 1 and 128, said in a note), the
    # declared symbols on the input's hover
    assert "float32 1×128×64" in source and "batch×sequence" not in source.split("->")[1]
    bare = build_dot(model.graph, model, expanded="all", edge_labels="none").source
    assert "1×128×64" not in bare


def test_failed_shape_inference_still_renders():
    model = mlp()
    model.graph.node[0].op_type = "NoSuchOp"
    loaded = ox.load(model)
    result = build_dot(loaded.graph, loaded, edge_labels="both")
    assert result.drawn > 0


def test_subgraphs_and_functions_are_openable():
    model = ox.load(nested_if(2))
    result = build_dot(model.graph, model)
    node = next(e for e in result.ids.values() if e["kind"] == "node")
    assert {g["path"] for g in node["graphs"]} == {"/If/then_branch", "/If/else_branch"}
    body = build_dot(model.graph_at("/If/then_branch"), model)
    assert body.drawn > 0


@pytest.mark.graphviz
def test_names_that_are_not_valid_text_render():
    # Protobuf refuses invalid UTF-8 in a file; a neutral model from another reader may hold
    # lone surrogates or control characters all the same.
    from onnx_explorer.model import Graph, Node, ValueInfo

    names = ["lone \udcff surrogate", "nul \x00 and bell \x07", "bidi \u202e override"]
    nodes = [
        Node(name, "Relu", inputs=(f"v{i}",), outputs=(f"v{i + 1}",))
        for i, name in enumerate(names)
    ]
    graph = Graph("g", nodes, (ValueInfo("v0"),), (ValueInfo("v3"),), {})
    svg = graph.render_svg()
    ET.fromstring(svg)
    assert "\udcff" not in svg and "\x00" not in svg


def test_invalid_utf8_in_a_file_becomes_readable_text():
    data = bytearray(mlp().SerializeToString())
    index = data.find(b"/layer1/Relu")
    data[index + 1] = 0xFF  # ONNX strings are proto2: protobuf does not refuse this
    graph = ox.load(bytes(data)).graph
    assert graph.nodes[2].name == "/\ufffdayer1/Relu"
    assert graph.node("/\ufffdayer1/Relu").op_type == "Relu"
    assert graph.to_dot().count("Relu") >= 1


@pytest.mark.graphviz
def test_save_svg_png_dot(tmp_path):
    graph = ox.load(mlp()).graph
    assert graph.save(tmp_path / "g.svg").read_text().startswith("<svg")
    assert graph.save(tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"
    assert graph.save(tmp_path / "g.dot").read_text().startswith("digraph")
    with pytest.raises(ValueError):
        graph.save(tmp_path / "g.txt")


def test_missing_graphviz_says_how_to_install(monkeypatch):
    monkeypatch.setenv("ONNX_EXPLORER_DOT", "no-such-dot-binary")
    graph = ox.load(mlp()).graph
    with pytest.raises(ox.GraphvizNotFoundError, match="apt-get install graphviz") as info:
        graph.render_svg()
    assert "brew install graphviz" in str(info.value) and "conda" in str(info.value)
    assert graph.to_dot().startswith("digraph")  # what needs no picture keeps working


@pytest.mark.graphviz
def test_dot_timeout_is_a_render_error(monkeypatch, tmp_path):
    slow = tmp_path / "slow-dot"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(0o755)
    monkeypatch.setenv("ONNX_EXPLORER_DOT", str(slow))
    with pytest.raises(ox.RenderError, match="more than"):
        ox.load(mlp()).graph.render_svg(timeout=0.5)


@pytest.mark.graphviz
def test_render_command(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(tiny_transformer(layers=2), path)
    assert main(["render", str(path), "-o", str(tmp_path / "g.svg")]) == 0
    assert (tmp_path / "g.svg").read_text().startswith("<svg")
    assert (
        main(
            [
                "render",
                str(path),
                "-o",
                str(tmp_path / "f.dot"),
                "--focus",
                "/model/layers.1/Add",
                "--hops",
                "1",
            ]
        )
        == 0
    )
    assert "Add" in (tmp_path / "f.dot").read_text()
    assert main(["render", str(path), "-o", str(tmp_path / "x.dot"), "--focus", "nope"]) == 1


@pytest.mark.graphviz
def test_every_test_model_renders_every_graph():
    from builders import LOCAL_FUNCTION_MODEL, hostile

    from onnx_explorer.samples import tiny_cnn

    protos = [mlp(), mlp(with_names=False), nested_if(4), hostile(), tiny_cnn(),
              tiny_transformer(layers=2), onnx.parser.parse_model(LOCAL_FUNCTION_MODEL)]  # fmt: skip
    for proto in protos:
        model = ox.load(proto)
        for graph in model.graphs():
            svg = graph.render_svg()
            assert svg.startswith("<svg"), graph.path


def test_large_views_float_their_edge_labels_small_ones_keep_them_in_the_layout():
    # Every edge label is a virtual node dot must rank: past FLOATING_LABELS_FROM drawn
    # items they are placed beside their edges after layout (xlabel), 4× faster.
    from onnx_explorer.samples import tiny_transformer
    from onnx_explorer.views._drawing import FLOATING_LABELS_FROM, build_dot

    model = ox.load(tiny_transformer(layers=1))
    small = build_dot(model.graph, model)
    assert small.drawn <= FLOATING_LABELS_FROM
    assert " label=" in small.source.split("->", 1)[1] and "xlabel=" not in small.source
    model = ox.load(tiny_transformer(layers=8))
    large = build_dot(model.graph, model, first_view_nodes=1000, max_nodes=1000)
    assert large.drawn > FLOATING_LABELS_FROM
    edges = [line for line in large.source.splitlines() if "->" in line and "float32" in line]
    assert edges and all("xlabel=" in line for line in edges)
