"""The notebook explorer driven from Python: every panel follows one selection."""

from __future__ import annotations

import html.parser

import ipywidgets as widgets
import numpy as np
import onnx
import pytest
from builders import HOSTILE_STRINGS, hostile, mlp, nested_if, with_external_data
from locations import DATA

import onnx_explorer as ox
from onnx_explorer.samples import tiny_transformer
from onnx_explorer.widgets._explorer import TAB_MODEL, TAB_NODES, TAB_TENSORS, Explorer


def _html_values(widget: widgets.Widget) -> list[str]:
    """Every HTML string a widget tree sends to the browser."""
    found: list[str] = []
    stack = [widget]
    while stack:
        w = stack.pop()
        if isinstance(w, widgets.HTML | widgets.HTMLMath):
            found.append(w.value)
        for attr in ("description", "tooltip"):
            value = getattr(w, attr, None)
            if isinstance(value, str) and getattr(w, "description_allow_html", False):
                found.append(value)
        stack.extend(getattr(w, "children", ()))
    return found


def _text(widget: widgets.Widget) -> str:
    """All text a user could read in a widget tree (HTML values, labels, options, buttons)."""
    parts: list[str] = []
    stack = [widget]
    while stack:
        w = stack.pop()
        for attr in ("value", "description", "tooltip"):
            value = getattr(w, attr, None)
            if isinstance(value, str):
                parts.append(value)
        if isinstance(w, widgets.Select | widgets.Dropdown):
            parts.extend(str(label) for label in w.options)
        stack.extend(getattr(w, "children", ()))
    return "\n".join(parts)


def _open_tabs(ex) -> None:
    """Open the tensors and model tabs as a user does: their contents are made then."""
    ex.tabs.selected_index = TAB_TENSORS
    ex.tabs.selected_index = TAB_MODEL
    ex.tabs.selected_index = TAB_NODES


def test_explore_builds_every_panel(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    ex = ox.explore(path)
    _open_tabs(ex)
    assert isinstance(ex, Explorer)
    assert ex.model.path == path
    assert ex.graph is ex.model.graph
    assert ex.node_list.status.value == "1–4 of 4 nodes"
    assert "tests" in ex.model_panel.children[0].value  # producer shown
    assert ex.tensor_panel.count.value.startswith("3 tensors")


def test_selection_is_shared_by_every_panel():
    ex = ox.explore(mlp())
    # A click in the graph view: the browser sets the view's `selected` trait.
    ex.graph_view.selected = "/layer1/Add"
    assert ex.selected.name == "/layer1/Add"
    assert ex.node_list.selected == "/layer1/Add"
    assert ex.node_list.results.value == "/layer1/Add"
    assert "Add" in _text(ex.attribute_panel) and "/layer1/b" in _text(ex.attribute_panel)
    # Picking in the node list moves the graph view's highlight.
    ex.node_list.results.value = "/layer1/Relu"
    assert ex.graph_view.selected == "/layer1/Relu"
    assert ex.selected_name == "/layer1/Relu"
    # From Python.
    ex.select("/layer2/MatMul")
    assert ex.graph_view.selected == "/layer2/MatMul"
    assert ex.node_list.results.value == "/layer2/MatMul"
    with pytest.raises(KeyError):
        ex.select("no such node")


def test_producer_and_consumer_links_select_nodes():
    ex = ox.explore(mlp())
    ex.select("/layer1/Add")
    buttons = _buttons(ex.attribute_panel)
    producer = next(b for b in buttons if b.description == "← /layer1/MatMul")
    producer.click()
    assert ex.selected_name == "/layer1/MatMul"
    consumer = next(b for b in _buttons(ex.attribute_panel) if b.description == "→ /layer1/Add")
    consumer.click()
    assert ex.selected_name == "/layer1/Add"


def _buttons(widget: widgets.Widget) -> list[widgets.Button]:
    found, stack = [], [widget]
    while stack:
        w = stack.pop()
        if isinstance(w, widgets.Button):
            found.append(w)
        stack.extend(getattr(w, "children", ()))
    return found


def test_node_search_filters_and_pages():
    ex = ox.explore(tiny_transformer(layers=12))
    nodes = ex.node_list
    total = len(ex.graph.nodes)
    assert nodes.status.value == f"1–200 of {total:,} nodes"
    nodes.search_box.value = "q_proj"
    assert len(nodes.matches) == 12 * 4
    assert all("q_proj" in name for name in nodes.matches)
    nodes.search_box.value = ""
    nodes.op_filter.value = "LayerNormalization"
    assert len(nodes.matches) == 24
    nodes.op_filter.value = ""
    nodes.regex_box.value = True
    nodes.search_box.value = r"layers\.1[01]/mlp/fc1/"
    assert sorted(nodes.matches) == sorted(
        f"/model/layers.{i}/mlp/fc1/{op}" for i in (10, 11) for op in ("MatMul", "Add")
    )
    nodes.search_box.value = "(unclosed"
    assert "invalid regular expression" in nodes.status.value
    # Selecting a node on a later page brings that page up.
    nodes.regex_box.value = False
    nodes.search_box.value = ""
    ex.select("/lm_head/MatMul")
    assert nodes.results.value == "/lm_head/MatMul"


def test_tensor_panel_reads_only_the_selected_tensor(tmp_path):
    path, arrays = with_external_data(tmp_path)
    ex = ox.explore(path)
    _open_tabs(ex)
    listing = [v for _, v in ex.tensor_panel.listing.options]
    assert listing[0] == "/layer1/W"  # largest first
    ex.tensor_panel.sort_by.value = "name"
    assert [v for _, v in ex.tensor_panel.listing.options] == sorted(arrays, key=str.lower)
    ex.tensor_panel.listing.value = "/layer2/W"
    details = ex.tensor_panel.details.value
    assert "external file" in details and "weights.bin" in details
    assert "mean" in details and "std" in details
    assert ex.tensor_panel.plot.value[:8] == b"\x89PNG\r\n\x1a\n"
    np.testing.assert_array_equal(ex.tensor("/layer2/W"), arrays["/layer2/W"])


def test_one_broken_tensor_shows_an_error_in_the_panel(tmp_path):
    path, _ = with_external_data(tmp_path)
    data = (tmp_path / "weights.bin").read_bytes()
    (tmp_path / "weights.bin").write_bytes(data[:150])  # /layer2/W is cut off
    ex = ox.explore(path)
    _open_tabs(ex)
    ex.tensor_panel.listing.value = "/layer2/W"
    assert "cannot read this tensor" in ex.tensor_panel.details.value
    assert ex.tensor_panel.plot.value == b""
    ex.tensor_panel.listing.value = "/layer1/W"
    assert "cannot read" not in ex.tensor_panel.details.value
    assert ex.tensor_panel.plot.value[:4] == b"\x89PNG"


def test_subgraphs_open_with_a_breadcrumb():
    ex = ox.explore(nested_if(4))
    _open_tabs(ex)
    ex.select("/If")
    open_then = next(
        b for b in _buttons(ex.attribute_panel) if b.description.startswith("open then_branch")
    )
    open_then.click()
    assert ex.graph_path == "/If/then_branch"
    assert [n.op_type for n in ex.graph.nodes] == ["Constant", "If", "Add"]
    crumbs = _text(ex.breadcrumb)
    assert "main graph" in crumbs and "/If" in crumbs and "then_branch" in crumbs
    # The Constant's value is in the tensor panel of the subgraph.
    assert ex.tensor_panel.count.value.startswith("1 tensors")
    back = next(b for b in _buttons(ex.breadcrumb) if b.description == "main graph")
    back.click()
    assert ex.graph_path == "/"


def test_select_finds_a_node_inside_a_body_and_shows_its_graph():
    ex = ox.explore(nested_if(4))
    ex.select("/level3/Add")  # three If bodies down, named nowhere else
    assert ex.graph_path == "/If/then_branch/level1/If/then_branch/level2/If/then_branch"
    assert ex.selected is not None and ex.selected.op_type == "Add"
    assert "level2" in _text(ex.breadcrumb)
    ex.select("/If")  # back in the main graph
    assert ex.graph_path == "/" and ex.selected is not None
    with pytest.raises(KeyError, match="no node named 'nowhere' in any graph"):
        ex.select("nowhere")


def test_select_of_a_name_in_several_bodies_asks_which():
    model = nested_if(2)
    for graph in (model.graph.node[0].attribute[0].g, model.graph.node[0].attribute[1].g):
        graph.node[0].name = "twin"  # one name in the then and the else branch
    ex = ox.explore(model)
    with pytest.raises(KeyError, match=r"2 graphs have a node named 'twin'.*show_graph"):
        ex.select("twin")
    assert ex.graph_path == "/"
    ex.show_graph("/If/else_branch")
    ex.select("twin")
    assert ex.selected is not None and ex.graph_path == "/If/else_branch"


def test_model_panel_runs_the_checker(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(mlp(), path)
    ex = ox.explore(path)
    assert "valid" in ex.model_panel.check()
    broken = mlp()
    broken.graph.node[0].input[0] = "undefined_value"
    path2 = tmp_path / "broken.onnx"
    onnx.save(broken, path2)
    assert "problem" in ox.explore(path2).model_panel.check()


def test_static_fallback_has_summary_and_svg():
    ex = ox.explore(mlp())
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    static = bundle["text/html"]
    assert "MatMul" in static and "tests" in static
    if ex.graph_view.svg:
        assert "<svg" in static and "<?xml" not in static


ALLOWED_TAGS = {
    "style",
    "div",
    "span",
    "table",
    "tr",
    "td",
    "th",
    "b",
    "br",
    "pre",
    # Graphviz SVG
    "svg",
    "g",
    "title",
    "text",
    "path",
    "polygon",
    "ellipse",
    "polyline",
    "defs",
    "rect",
    "lineargradient",
    "stop",
    "a",
}
ALLOWED_ATTRS = {
    "class",
    "style",
    "id",
    "width",
    "height",
    "viewbox",
    "xmlns",
    "xmlns:xlink",
    "transform",
    "fill",
    "stroke",
    "points",
    "d",
    "x",
    "y",
    "cx",
    "cy",
    "rx",
    "ry",
    "text-anchor",
    "font-family",
    "font-size",
    "font-weight",
    "stroke-width",
    "stroke-dasharray",
    "fill-opacity",
    "stroke-opacity",
    "xlink:title",
    "version",
    "preserveaspectratio",
    "data-kind",
}


class _Collector(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs.extend(attrs)


def assert_no_model_markup(markup: str) -> None:
    collector = _Collector()
    collector.feed(markup)
    assert collector.tags <= ALLOWED_TAGS, collector.tags - ALLOWED_TAGS
    for name, value in collector.attrs:
        assert name in ALLOWED_ATTRS, name
        for payload in HOSTILE_STRINGS:
            assert payload not in (value or ""), (name, value)
    for payload in HOSTILE_STRINGS[:2]:
        assert payload not in markup


def test_hostile_strings_never_become_markup():
    model = hostile()
    ex = ox.explore(model)
    _open_tabs(ex)
    pages = list(_html_values(ex))
    for node in ex.graph.nodes:
        ex.select(node.name)
        pages += _html_values(ex.attribute_panel)
    for _, name in ex.tensor_panel.listing.options:
        ex.tensor_panel.listing.value = name
        pages += _html_values(ex.tensor_panel)
    pages.append(ex._repr_mimebundle_()["text/html"])
    assert pages
    for markup in pages:
        assert_no_model_markup(markup)
    # ...while the text itself is shown to the user, escaped.
    assert any("&lt;script&gt;" in markup for markup in pages)
    assert "<script>alert('x')</script>" in _text(ex.node_list)


def test_quantized_weight_shows_dequantized_statistics(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    q = np.array([[-100, 50], [20, 127]], dtype=np.int8)
    scale = np.array([0.5, 0.25], dtype=np.float32)
    zero_point = np.array([0, 10], dtype=np.int8)
    graph = helper.make_graph(
        [
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["w"], axis=1, name="dq"),
            helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [
            numpy_helper.from_array(q, "q"),
            numpy_helper.from_array(scale, "s"),
            numpy_helper.from_array(zero_point, "z"),
        ],
    )
    ex = ox.explore(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    _open_tabs(ex)
    panel = ex.tensor_panel
    panel.listing.value = "q"
    assert panel.dequantize_box.layout.display == "flex"
    expected = (q.astype(np.float32) - zero_point) * scale  # by hand: per-axis along axis 1
    assert "per-axis" in panel.details.value
    assert (
        f"{expected.min():.6g}" in panel.details.value
        and f"{expected.max():.6g}" in panel.details.value
    )
    panel.dequantize_box.value = False  # the stored integers instead
    assert ">-100<" in panel.details.value and ">127<" in panel.details.value
    panel.listing.value = "s"  # a float tensor: no toggle
    assert panel.dequantize_box.layout.display == "none"


@pytest.mark.graphviz
def test_saved_notebook_without_kernel_shows_the_static_fallback():
    # What `jupyter nbconvert --to html` (and nbviewer) do with a saved notebook: with no
    # widget state, the widget view is skipped and the HTML fallback is shown.
    import nbformat
    from nbconvert import HTMLExporter

    bundle = ox.explore(hostile())._repr_mimebundle_()
    bundle.pop("text/plain", None)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("onnx_explorer.explore(model)")
    cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
    nb.cells = [cell]
    page, _ = HTMLExporter().from_notebook_node(nb)
    assert "Static view: run the notebook" in page
    assert "<svg" in page
    assert "<script>alert('x')</script>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page or "&lt;script&gt;" in page


@pytest.mark.parametrize("name", ["cnn_frozen.pb", "cnn_frozen.pbtxt", "functions.pb"])
def test_graphdef_files_in_the_explorer(name):

    path = DATA / "graphdef" / name
    ex = ox.explore(path)
    _open_tabs(ex)
    assert ex.model.format == "graphdef"
    assert ex.graph_view.wait(60)
    assert not ex.graph_view.error and ex.graph_view.svg.startswith("<svg")
    rows = [value for _, value in ex.tensor_panel.listing.options]
    assert rows
    ex.tensor_panel.listing.value = rows[0]
    assert "cannot read" not in ex.tensor_panel.details.value
    if name.startswith("cnn"):
        ex.tensor_panel.listing.value = "conv1/Conv2D/ReadVariableOp/resource"
        assert "HWIO" in ex.tensor_panel.details.value
        ex.select("conv1/Conv2D")
        assert "Conv2D" in _text(ex.attribute_panel)


def test_complex_values_are_previewed_whole():
    from onnx_explorer.views._text import preview_values

    assert preview_values(np.array([1 + 2j, 3 - 4j], np.complex64)) == "[1+2j, 3-4j]"


def test_tensors_and_summary_are_made_when_their_tab_is_first_opened():
    ex = ox.explore(mlp())
    assert ex.tensor_panel.listing.options == () and "summarizing" in ex.model_panel.summary.value
    assert ex.tensor("/layer1/W").shape == (4, 8)  # the Python side never waits for a tab
    ex.tabs.selected_index = TAB_TENSORS
    assert len(ex.tensor_panel.listing.options) == 3
    ex.tabs.selected_index = TAB_MODEL
    assert "producer" in ex.model_panel.summary.value


def _crumbs(ex):
    return [c for c in ex.breadcrumb.children if isinstance(c, widgets.Button)]


def _crumb_buttons(ex):
    return [b.description for b in _crumbs(ex)]


def test_a_function_view_always_has_its_way_back_and_nested_calls_append():
    # A TF2 SavedModel: the serving call opens the signature wrapper, whose own call
    # opens the network. Each call appends; the main graph is always the first crumb.

    saved = DATA / "savedmodel" / "tf2_mlp"
    ex = ox.explore(saved)
    wrapper = "function::__inference_signature_wrapper___call___38"
    network = "function::__inference___call___26"
    ex.show_graph(wrapper)
    ex.show_graph(network)
    labels = [c.description if isinstance(c, widgets.Button) else getattr(c, "value", "")
              for c in ex.breadcrumb.children]  # fmt: skip
    assert "tf2_mlp" in labels[0]  # the folder's name, not saved_model.pb
    assert _crumb_buttons(ex) == [
        "main graph", "function __inference_signature_wrapper___call___38"]  # fmt: skip
    assert "function __inference___call___26" in labels
    next(b for b in _crumbs(ex) if "wrapper" in b.description).click()
    assert ex.graph_path == wrapper
    assert _crumb_buttons(ex) == ["main graph"]
    _crumbs(ex)[0].click()
    assert ex.graph_path == "/"


def test_tensorflow_nodes_show_no_onnx_domain():

    ex = ox.explore(DATA / "savedmodel" / "tf2_mlp")
    ex.show_graph("/")
    ex.select("StatefulPartitionedCall")
    text = _text(ex.attribute_panel)
    assert "StatefulPartitionedCall" in text and "ai.onnx" not in text


def test_the_static_copy_writes_shapes_as_the_view_does():
    from onnx_explorer.widgets._static import static_html

    page = static_html(ox.load(mlp()))
    assert "<td>batch×4</td>" in page and "['batch', 4]" not in page


def test_a_saved_model_opens_on_its_network_not_on_its_packaging():
    # The main graph holds placeholders, variables and one call per signature; the
    # serving call opens a wrapper whose only work is another call: the network.

    ex = ox.explore(DATA / "savedmodel" / "keras_adam")
    assert ex.graph_path == "function::__inference__wrapped_model_847"
    assert {n.op_type for n in ex.graph.nodes} >= {"MatMul", "BiasAdd", "Relu"}
    assert "through 1 wrapper function" in ex.overlay_note.value
    assert _crumb_buttons(ex) == ["main graph", "function __inference_signature_wrapper_956"]
    ex.show_graph("/")
    assert ex.graph_path == "/"


def test_an_onnx_model_opens_on_its_main_graph():
    ex = ox.explore(mlp())
    assert ex.graph_path == "/" and ex.network_note == ""


def test_long_names_keep_their_end_in_the_node_list():
    from onnx_explorer.views._text import middle_cut

    name = "/model/encoder/layers.11/self_attn/q_proj/MatMul"
    assert (
        middle_cut(name, 40).endswith("self_attn/q_proj/MatMul") and len(middle_cut(name, 40)) == 40
    )
    assert middle_cut("/short/Relu", 40) == "/short/Relu"
    node = onnx.helper.make_node("Relu", ["x"], ["y"], name=name)
    graph = onnx.helper.make_graph(
        [node], "g", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
    )  # fmt: skip
    ex = ox.explore(onnx.helper.make_model(graph))
    ((label, value),) = ex.node_list.results.options
    assert value == name and label.endswith("q_proj/MatMul   [Relu]")
