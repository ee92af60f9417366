"""Node metadata (PyTorch name scopes, stack traces) and value types in the attribute panel."""

from __future__ import annotations

import html.parser
from types import MappingProxyType

import ipywidgets as widgets
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.model import Node
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._edge_types import value_types
from onnx_explorer.views._scopes import metadata_scope, scope_tree
from onnx_explorer.views._text import type_text
from onnx_explorer.widgets._attribute_panel import AttributePanel

SCOPES = "pkg.torch.onnx.name_scopes"
CLASSES = "pkg.torch.onnx.class_hierarchy"
STACK = "pkg.torch.onnx.stack_trace"


def _name_scopes(module: str, fx_name: str) -> str:
    """The value PyTorch's dynamo exporter writes: root, each enclosing module, the FX node."""
    parts = module.split(".")
    paths = [".".join(parts[: i + 1]) for i in range(len(parts))]
    return repr(["", *paths, fx_name])


def _dynamo_like(layers: int = 4, per_layer: int = 3) -> onnx.ModelProto:
    """A chain of Add nodes named ``node_Add_<i>`` (no ``/``) with dynamo-style metadata."""
    nodes, prev, i = [], "x", 0
    for layer in range(layers):
        for _ in range(per_layer):
            node = helper.make_node("Add", [prev, "w"], [f"t{i}"], name=f"node_Add_{i}")
            module = f"model.layers.{layer}.self_attn"
            node.metadata_props.add(key=SCOPES, value=_name_scopes(module, f"add_{i}"))
            node.metadata_props.add(
                key=CLASSES, value=repr(["M", "Layers", "Layer", "Attention", "aten.add.Tensor"])
            )
            node.metadata_props.add(
                key=STACK, value=f'File "model.py", line {10 + i}, in forward\n    return x + w'
            )
            nodes.append(node)
            prev, i = f"t{i}", i + 1
    final = helper.make_node("Relu", [prev], ["y"], name="node_Relu_out")  # no metadata
    graph = helper.make_graph(
        [*nodes, final], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.zeros(4, np.float32), "w")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _panel(model: ox.Model) -> AttributePanel:
    return AttributePanel(
        model, on_select=lambda name: None, on_open_graph=lambda path: None,
        on_show_tensor=lambda tensor: None,
    )  # fmt: skip


def _html(widget: widgets.Widget) -> str:
    found: list[str] = []
    stack = [widget]
    while stack:
        w = stack.pop()
        if isinstance(w, widgets.HTML):
            found.append(w.value)
        stack.extend(getattr(w, "children", ()))
    return "\n".join(found)


class _Parsed(html.parser.HTMLParser):
    """Tags and text of an HTML fragment, as a browser would see them."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []
        self.feed(source)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


# -- reading -------------------------------------------------------------------------------
def test_node_metadata_is_read_into_a_read_only_mapping(tmp_path):
    path = tmp_path / "dynamo.onnx"
    onnx.save(_dynamo_like(), path)
    model = ox.load(path)  # through the file reader, which strips payloads from the proto
    node = model.graph.node("node_Add_4")
    assert node.metadata_props[SCOPES] == _name_scopes("model.layers.1.self_attn", "add_4")
    assert node.metadata_props[STACK].startswith('File "model.py", line 14')
    assert list(node.metadata_props) == [SCOPES, CLASSES, STACK]  # file order kept
    with pytest.raises(TypeError):
        node.metadata_props["x"] = "y"  # type: ignore[index]


def test_nodes_without_metadata_share_one_empty_mapping():
    model = ox.load(_dynamo_like())
    plain = model.graph.node("node_Relu_out")
    assert plain.metadata_props == {}
    assert isinstance(plain.metadata_props, MappingProxyType)
    assert Node("a", "Relu").metadata_props is Node("b", "Relu").metadata_props


# -- scopes --------------------------------------------------------------------------------
def test_name_scopes_metadata_groups_unscoped_names_like_a_torchscript_export():
    graph = ox.load(_dynamo_like(layers=4, per_layer=3)).graph
    tree = scope_tree(graph)
    attn = tree.find("model/layers.3/self_attn")
    assert attn is not None and attn.node_count == 3
    assert [graph.nodes[i].name for i in attn.nodes] == ["node_Add_9", "node_Add_10", "node_Add_11"]
    model_scope = tree.find("model")
    assert model_scope is not None
    assert [c.label for c in model_scope.children] == [f"layers.{k}" for k in range(4)]
    assert tree.node_scope[graph.node("node_Relu_out").index] is tree.root  # no metadata
    assert tree.root.node_count == 13


def test_slash_scoped_names_win_over_metadata():
    model = _dynamo_like(layers=2, per_layer=2)
    for k, node in enumerate(model.graph.node):
        node.name = f"/encoder/block.{k}/Add"
    tree = scope_tree(ox.load(model).graph)
    assert tree.find("encoder/block.0") is not None
    assert tree.find("model/layers.0/self_attn") is None


@pytest.mark.parametrize(
    ("value", "scope"),
    [
        ("['', 'model', 'model.layers.3', 'model.layers.3.self_attn', 'linear_8']",
         "model/layers.3/self_attn"),  # the FX node's own name is not a scope
        ("['', 'layers.0', 'layers.0.self_attn', 'layers.0.self_attn.q_proj']",
         "layers.0/self_attn/q_proj"),  # a last entry extending the previous is a module
        ("['', 'add_3']", ""),  # an op of the root module sits in the graph itself
        ("['', 'features', 'features.0', 'features.0.0', 'conv2d']", "features.0.0"),
        ("['', 'blk, odd', 'blk, odd.mlp', 'gelu']", "blk, odd/mlp"),  # quoting parsed properly
        ('["", "enc", "enc.it\'s", "relu"]', "enc/it's"),
        ("model.layers.3.mlp", "model/layers.3/mlp"),  # a plain string is the module path
        ("/model/layers.3/mlp", "model/layers.3/mlp"),
        ("['', '_empty_nn_module_stack_from_metadata_hook', 'mul_4']", ""),  # torch's own
        ("['', '_empty_nn_module_stack_from_metadata_hook', 'enc', 'enc.0', 'add']", "enc.0"),
        ("[not a list", "[not a list"),
        ("[]", ""),
        ("", ""),
    ],
)  # fmt: skip
def test_metadata_scope_reads_list_reprs_and_plain_strings(value, scope):
    assert metadata_scope(value) == scope


# -- attribute panel -----------------------------------------------------------------------
def test_attribute_panel_lists_every_metadata_entry_with_stack_traces_folded():
    model = ox.load(_dynamo_like())
    panel = _panel(model)
    panel.show(model.graph.node("node_Add_4"), model.graph)
    source = _html(panel)
    parsed = _Parsed(source)
    text = "".join(parsed.text)
    assert "metadata" in text
    for key, value in model.graph.node("node_Add_4").metadata_props.items():
        assert key in text and value in text
    assert "details" in parsed.tags  # the stack trace is a collapsible block
    assert 'File "model.py", line 14, in forward\n    return x + w' in text


def test_attribute_panel_shows_hostile_metadata_as_text():
    model = _dynamo_like(layers=1, per_layer=1)
    node = model.graph.node[0]
    node.metadata_props.add(key="<b>key</b>", value="<script>alert(1)</script>")
    node.metadata_props.add(key="trace", value="<img src=x onerror=alert(1)>\n" * 3)
    loaded = ox.load(model)
    panel = _panel(loaded)
    panel.show(loaded.graph.nodes[0], loaded.graph)
    parsed = _Parsed(_html(panel))
    assert "script" not in parsed.tags and "img" not in parsed.tags and "b" not in parsed.tags
    text = "".join(parsed.text)
    assert "<script>alert(1)</script>" in text and "<b>key</b>" in text
    assert "<img src=x onerror=alert(1)>" in text


def test_attribute_panel_without_metadata_has_no_metadata_section():
    model = ox.load(_dynamo_like())
    panel = _panel(model)
    panel.show(model.graph.node("node_Relu_out"), model.graph)
    assert "metadata" not in "".join(_Parsed(_html(panel)).text)


def _comparison() -> onnx.ModelProto:
    """Greater of two float scalars: ``gt`` has no value_info, only inference knows its type."""
    nodes = [
        helper.make_node("Greater", ["a", "b"], ["gt"], name="greater"),
        helper.make_node("Not", ["gt"], ["y"], name="not"),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, None)],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_attribute_panel_shows_the_inferred_type_the_edge_label_shows():
    model = ox.load(_comparison())
    graph = model.graph
    assert graph.value("gt") is None  # the file says nothing about it
    types, _note = value_types(graph, model)
    label = type_text(types.get("gt"))
    assert label == "bool scalar"
    assert f'label="{label}"' in build_dot(graph, model).source  # the edge greater → not
    panel = _panel(model)
    for node_name in ("greater", "not"):  # gt is an output of one and an input of the other
        panel.show(graph.node(node_name), graph)
        text = "".join(_Parsed(_html(panel)).text)
        assert "gt" in text and label in text
        assert "type unknown" not in text


def test_attribute_panel_and_edges_format_declared_types_alike():
    model = ox.load(_comparison())
    panel = _panel(model)
    panel.show(model.graph.node("greater"), model.graph)
    text = "".join(_Parsed(_html(panel)).text)
    assert "float32 scalar" in text  # inputs a and b, as their edges say
    assert 'label="float32 scalar"' in build_dot(model.graph, model).source
