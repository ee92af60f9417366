"""Scope trees, the scopes a view opens, folding of stored values, and label quoting."""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.model import SCOPE_DEPTH_MAX, scope_parts
from onnx_explorer.views import _scopes as scopes_module
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._quoting import dot_string, one_line
from onnx_explorer.views._scopes import SCOPE_ITEMS_MAX, first_view, open_scopes, scope_tree


def _model(names: list[str], weights: dict[int, tuple[int, ...]] | None = None) -> onnx.ModelProto:
    """A chain of Add nodes with these names; node i adds a weight of the given shape."""
    nodes, inits, prev = [], [], "x"
    for i, name in enumerate(names):
        other = prev
        if weights and i in weights:
            other = f"w{i}"
            inits.append(numpy_helper.from_array(np.zeros(weights[i], np.float32), other))
        nodes.append(helper.make_node("Add", [prev, other], [f"t{i}"], name=name))
        prev = f"t{i}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4])], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_scopes_come_from_name_paths_with_node_and_parameter_counts():
    names = [
        "/encoder/layer.0/attn/MatMul", "/encoder/layer.0/attn/Add", "/encoder/layer.0/Add",
        "/encoder/layer.1/attn/MatMul", "decoder/block_0/MatMul",  # GraphDef style: no "/"
        "Add_7",
    ]  # fmt: skip
    graph = ox.load(_model(names, {0: (4, 4), 3: (4, 4), 4: (2, 4)})).graph
    tree = scope_tree(graph)
    attn = tree.find("encoder/layer.0/attn")
    assert attn is not None and attn.node_count == 2 and attn.param_count == 16
    encoder = tree.find("/encoder/")  # slashes around a path are ignored
    assert encoder is not None and encoder.node_count == 4 and encoder.param_count == 32
    assert tree.find("decoder/block_0").node_count == 1
    assert tree.root.node_count == 6 and tree.root.param_count == 40
    assert [c.label for c in tree.root.children] == ["encoder", "decoder"]
    assert tree.node_scope[5] is tree.root  # an unscoped name sits in the graph itself
    assert tree.find("no/such/scope") is None


def test_a_weight_shared_by_two_nodes_counts_once():
    model = _model(["/a/Add", "/b/Add"])
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(10, np.float32), "shared"))
    for node in model.graph.node:
        node.input[1] = "shared"
    tree = scope_tree(ox.load(model).graph)
    assert tree.root.param_count == 10
    assert tree.find("a").param_count + tree.find("b").param_count == 10


def test_every_spelling_of_a_path_finds_the_scope_its_parts_name():
    """Names written with doubled, leading or trailing slashes, or deeper than the cap,
    sit in the scope of their non-empty parts (the fast path for plain names and the
    general one must agree, whichever met a scope first)."""
    deep = "/".join(f"L{k}" for k in range(SCOPE_DEPTH_MAX + 3))
    names = [
        "/enc/layer.0/MatMul", "enc//layer.0/Add", "//enc/layer.1//Mul", "enc/layer.1/Sub",
        "/enc/layer.1/", "/solo", "Relu", f"{deep}/Neg", f"/{deep}/Abs", "///x///y/Sqrt",
    ]  # fmt: skip
    graph = ox.load(_model(names)).graph
    tree = scope_tree(graph)
    for i, name in enumerate(names):
        expected = "/".join(scope_parts(name.rpartition("/")[0]))
        assert tree.node_scope[i].path == expected, name
    assert tree.find("enc/layer.0").node_count == 2
    assert tree.find("enc/layer.1").node_count == 3
    assert [c.label for c in tree.find("enc").children] == ["layer.0", "layer.1"]
    assert tree.find("x/y").node_count == 1
    assert tree.root.node_count == len(names)


def test_parameter_counts_come_from_the_shapes_without_making_tensors():
    graph = ox.load(
        _model(["/a/Add", "/a/b/Add", "/c/Add"], {0: (3, 5), 1: (7,), 2: (2, 2, 2)})
    ).graph
    tree = scope_tree(graph)
    assert [tree.find(p).param_count for p in ("a", "a/b", "c")] == [22, 7, 8]
    assert tree.root.param_count == 30
    assert not graph.initializers._made  # counted from the shapes alone


@pytest.mark.parametrize("table", [True, False], ids=["one table", "summed children"])
def test_operator_counts_of_every_scope_are_those_of_its_subtree(table, monkeypatch):
    if not table:  # too many scopes × operators for a table: children's counts are summed
        monkeypatch.setattr(scopes_module, "_OP_TABLE_CELLS", 0)
    names = [f"/m/l{i % 3}/b{i % 2}/Op" for i in range(24)] + ["/m/Op", "Op", "/x//y/Op"]
    model = _model(names)
    ops = ["Add", "Mul", "Relu"]
    for i, node in enumerate(model.graph.node):
        node.op_type = ops[i % 3] if i % 5 else "Sub"
        if node.op_type == "Relu":
            del node.input[1:]
    graph = ox.load(model).graph
    tree = scope_tree(graph)
    for scope in tree.preorder:
        expected = Counter(graph.nodes[i].op_type for i in scope.subtree_nodes())
        assert tree.ops(graph, scope) == expected, scope.path
    assert sum(tree.ops(graph, tree.root).values()) == len(names)


def test_numbered_names_are_split_into_groups_of_consecutive_nodes():
    count = 5 * SCOPE_ITEMS_MAX + 17
    graph = ox.load(_model([f"node_{i}" for i in range(count)])).graph
    tree = scope_tree(graph)
    groups = tree.root.children
    assert 1 < len(groups) <= SCOPE_ITEMS_MAX
    assert all(g.synthetic and g.items <= SCOPE_ITEMS_MAX for g in groups)
    assert groups[0].label == f"node_0 … node_{groups[0].node_count - 1}"
    # Every node is in exactly one group, and groups follow the file order.
    members = [i for g in groups for i in g.subtree_nodes()]
    assert sorted(members) == list(range(count)) and members == sorted(members)
    assert all(tree.node_scope[i].synthetic for i in range(count))


def test_thousands_of_sibling_scopes_are_grouped_but_keep_their_paths():
    graph = ox.load(_model([f"/model/layers.{i}/Add" for i in range(3 * SCOPE_ITEMS_MAX)])).graph
    tree = scope_tree(graph)
    model_scope = tree.find("model")
    assert all(g.synthetic for g in model_scope.children)
    assert len(model_scope.children) == 3
    layer = tree.find("model/layers.450")  # still found by its own path
    assert layer is not None and layer.parent.synthetic and layer.parent.parent is model_scope
    result = build_dot(graph, expanded=["model/layers.450"], edge_labels="none")
    assert any(
        v["kind"] == "node" and v["name"] == "/model/layers.450/Add" for v in result.ids.values()
    )


def _layers(n_layers: int, per_layer: int) -> onnx.ModelProto:
    """Layers of ``per_layer`` nodes: half directly in the layer, half in three blocks."""
    names = []
    for i in range(n_layers * per_layer):
        layer, j = divmod(i, per_layer)
        block = "" if j < per_layer // 2 else f"block{j % 3}/"
        names.append(f"/model/layers.{layer}/{block}Add_{j}")
    return _model(names)


def test_first_view_opens_everything_that_fits_else_one_worked_example():
    small = scope_tree(ox.load(_layers(3, 6)).graph)
    assert set(first_view(small, 300)) == {
        s.path for s in small.root.walk() if not s.is_root and not s.trivial
    }
    big = scope_tree(ox.load(_layers(60, 30)).graph)
    paths = first_view(big, 300)
    # The overview of all 60 layers, and the first one opened all the way down.
    assert "model" in paths and "model/layers.0" in paths
    assert "model/layers.0/block0" in paths
    assert not any(p.startswith("model/layers.1/") or p == "model/layers.1" for p in paths)


def test_newest_expansions_win_when_they_do_not_all_fit():
    tree = scope_tree(ox.load(_layers(10, 30)).graph)
    requested = [f"model/layers.{i}" for i in range(10)]
    opened, accepted, notes = open_scopes(tree, requested, budget=60)
    assert accepted and accepted[-1] == "model/layers.9"
    assert tree.find("model/layers.9") in opened and tree.find("model") in opened
    assert "model/layers.0" not in accepted
    assert any("not expanded" in n and "max_nodes=60" in n for n in notes)
    _, _, notes = open_scopes(tree, ["no/such"], budget=60)
    assert notes == ["no scope 'no/such' in this graph"]


def test_expanded_view_never_exceeds_max_nodes():
    graph = ox.load(_layers(20, 40)).graph
    everything = [s.path for s in scope_tree(graph).root.walk() if s.path]
    result = build_dot(graph, expanded=everything, max_nodes=100, edge_labels="none")
    assert result.drawn <= 100
    assert set(result.expanded) < set(everything)


# -- folding ----------------------------------------------------------------------------
def test_constants_fold_into_their_readers_unless_they_are_outputs():
    value = numpy_helper.from_array(np.array([0, -1], np.int64), "v")
    nodes = [
        helper.make_node("Constant", [], ["shape"], value=value, name="/m/Constant"),
        helper.make_node("Reshape", ["x", "shape"], ["y"], name="/m/Reshape"),
        helper.make_node("Constant", [], ["k"], value_ints=[3, 4], name="/m/Constant_1"),
        helper.make_node("Constant", [], ["out_c"], value_float=2.5, name="/m/Exported"),
        helper.make_node("Add", ["y", "k"], ["z"], name="/m/Add"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("out_c", TensorProto.FLOAT, [])],
    )  # fmt: skip
    model = ox.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    result = build_dot(model.graph, model, edge_labels="none")
    drawn = {v["name"] for v in result.ids.values() if v["kind"] == "node"}
    assert drawn == {"/m/Reshape", "/m/Add", "/m/Exported"}
    assert 'label="Reshape\\nshape = [0, -1] int64"' in result.source
    assert "B = [3, 4] int64" in result.source  # value_ints, under Add's slot name
    assert any("2 constant nodes drawn inside" in n for n in result.notes)
    # Selecting a folded constant points at the node that shows it.
    reshape_id = next(k for k, v in result.ids.items() if v.get("name") == "/m/Reshape")
    assert result.locate(model.graph.node("/m/Constant")) == reshape_id


def test_edge_label_modes():
    proto = _model(["/a/Add", "/a/Add_1"])
    proto.graph.value_info.append(
        helper.make_tensor_value_info("t0", TensorProto.FLOAT, ["batch", 4])
    )
    model = ox.load(proto)
    sources = {
        mode: build_dot(model.graph, model, edge_labels=mode, infer_shapes=False).source
        for mode in ("none", "dtype", "shape", "both")
    }
    assert 'label="float32 batch×4"' in sources["both"]
    assert 'label="float32"' in sources["dtype"] and 'label="batch×4"' in sources["shape"]
    assert "batch" not in sources["none"].split("i0 [", 1)[1].split("\n", 1)[1]
    with pytest.raises(ValueError, match="edge_labels"):
        build_dot(model.graph, edge_labels="everything")


# -- quoting ------------------------------------------------------------------------------
LABEL_CASES = [
    'say "hi"',
    "a\\b",
    "odd\\",
    "\\\\",
    "\\N \\G \\L \\E \\T \\H \\l \\r \\n",
    "<b>bold</b>",
    "&amp; &#65; &bogus; &",
    "port:a:b",
    "{x|y} <p1>",
]


def test_dot_strings_stay_one_quoted_string():
    for text in LABEL_CASES:
        quoted = dot_string(text)
        assert quoted.startswith('"') and quoted.endswith('"')
        inner = quoted[1:-1]
        # Every quote inside is escaped by an odd run of backslashes: the string cannot end early.
        for match in re.finditer(r'(\\*)"', inner):
            assert len(match.group(1)) % 2 == 1, (text, quoted)
        assert not re.search(r"(?<!\\)(\\\\)*\\$", inner), quoted  # no escape of the closing quote


def test_one_line_makes_text_printable_and_short():
    assert one_line("a\nb\r\nc\td", 50) == "a↵b↵c d"
    assert one_line("x" * 10_000, 40) == "x" * 39 + "…"
    assert one_line(b"\xff\xfename", 20) == "\ufffd\ufffdname"
    assert (
        one_line("bad\ud800surrogate\x00nul\u202eflip", 50)
        == "bad\ufffdsurrogate\ufffdnul\ufffdflip"
    )


@pytest.mark.graphviz
def test_graphviz_shows_every_label_literally():
    statements = [f"n{i} [label={dot_string(text)}]" for i, text in enumerate(LABEL_CASES)]
    source = "digraph G {\n" + "\n".join(statements) + "\n}\n"
    done = subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True, check=True)
    root = ET.fromstring(done.stdout)
    texts = [el.text for el in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts == LABEL_CASES


def test_render_command_reports_what_it_drew(tmp_path, capsys):
    import json

    from onnx_explorer.cli import main

    path = tmp_path / "m.onnx"
    onnx.save(_layers(60, 30), path)
    out = tmp_path / "view.dot"  # .dot: no Graphviz needed
    assert main(["render", str(path), "-o", str(out), "--expand", "model/layers.7"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {out} (") and "collapsed into" in printed
    assert "cluster_" in out.read_text()
    assert main(["render", str(path), "-o", str(out), "--focus", "/model/layers.7/Add_3",
                 "--hops", "1", "--json"]) == 0  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert report["focus"] == "/model/layers.7/Add_3" and report["drawn"] == 3
    assert main(["render", str(path), "-o", str(tmp_path / "view.txt")]) == 1
    assert "use a .svg, .png or .dot name" in capsys.readouterr().err


def test_a_first_view_makes_only_the_tensors_it_labels(tmp_path):
    # 300 layers with a weight each: the view counts their parameters from the shapes and
    # makes Tensor objects only for the few weights folded into the nodes it draws.
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from onnx_explorer.model import TensorsOnDemand
    from onnx_explorer.views._drawing import build_dot
    from onnx_explorer.views._scopes import scope_tree

    nodes, inits, prev = [], [], "x"
    for k in range(300):
        inits.append(numpy_helper.from_array(np.ones((4, 4), np.float32), f"w{k}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{k}"], [f"h{k}"], name=f"/m/l{k}/MatMul"))
        prev = f"h{k}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4, 4])], inits,
    )  # fmt: skip
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph), path)
    model = ox.load(path)
    stored = model.graph.initializers
    assert isinstance(stored, TensorsOnDemand) and len(stored) == 300 and "w7" in stored
    build_dot(model.graph, model, max_nodes=60, first_view_nodes=60)  # all in scope boxes
    assert scope_tree(model.graph).root.param_count == 300 * 16
    assert len(stored._made) == 0  # counted from shapes, none made
    build_dot(model.graph, model, focus="/m/l7/MatMul", hops=1)  # three MatMuls drawn
    assert set(stored._made) == {"w6", "w7", "w8"}  # only the weights folded into them
    assert stored["w7"] is stored["w7"] and stored["w7"].size == 16


def test_one_nodes_attributes_are_read_alone_and_bodies_stay_one_object(tmp_path):
    # A view reads the attributes of the few nodes it draws; reading every node's later
    # must give the very same attribute objects (an If body is one Graph either way).
    from builders import nested_if

    path = tmp_path / "if.onnx"
    onnx.save(nested_if(2), path)
    model = ox.load(path)
    node = model.graph.nodes[0]
    body = node.attributes["then_branch"].value  # this node alone
    assert body.parent is node and body.model is model
    assert all(n.attributes is not None for n in model.graph.nodes)  # every node's now
    assert node.attributes["then_branch"].value is body
    assert model.graph_at("/If/then_branch") is body
