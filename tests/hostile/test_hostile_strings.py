"""Hostile model text and malformed values: each breaks only what it touches.

- A Constant node whose value attribute is missing, doubled or of the wrong kind is one
  unreadable tensor; the summary, the weights report, the explorer and the CLI go on.
- Strings that are not UTF-8 anywhere in the file are shown with U+FFFD.
- Bidirectional overrides and control characters never reach the explorer's HTML raw.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.errors import TensorDataError
from onnx_explorer.summary import summarize
from onnx_explorer.widgets._explorer import TAB_TENSORS

# -- Constant nodes with a broken value ----------------------------------------------


def _body() -> onnx.GraphProto:
    return helper.make_graph([], "body", [], [])


def _attr(name: str, kind: int, **payload) -> AttributeProto:
    """An attribute whose ``type`` says ``kind`` and whose payload is whatever is given."""
    return AttributeProto(name=name, type=kind, **payload)


_FLOATS = numpy_helper.from_array(np.ones(2, np.float32), "")

#: (case, the Constant's attributes, words the tensor's error must contain)
BROKEN_CONSTANTS = [
    ("floats holding a graph", [_attr("value_floats", AttributeProto.GRAPH, g=_body())],
     ["value_floats", "GRAPH"]),
    ("float holding a string", [_attr("value_float", AttributeProto.STRING, s=b"abc")],
     ["value_float", "STRING"]),
    ("int holding a tensor", [_attr("value_int", AttributeProto.TENSOR, t=_FLOATS)],
     ["value_int", "TENSOR"]),
    ("ints holding strings", [_attr("value_ints", AttributeProto.STRINGS, strings=[b"a"])],
     ["value_ints", "STRINGS"]),
    ("string holding a graph", [_attr("value_string", AttributeProto.GRAPH, g=_body())],
     ["value_string", "GRAPH"]),
    ("strings holding a float", [_attr("value_strings", AttributeProto.FLOAT, f=1.0)],
     ["value_strings", "FLOAT"]),
    ("value holding a string", [_attr("value", AttributeProto.STRING, s=b"x")],
     ["'value'", "STRING"]),
    ("value holding a graph", [_attr("value", AttributeProto.GRAPH, g=_body())],
     ["'value'", "GRAPH"]),
    ("sparse_value holding a tensor", [_attr("sparse_value", AttributeProto.TENSOR, t=_FLOATS)],
     ["sparse_value", "TENSOR"]),
    ("no value attribute", [], ["no value attribute"]),
    ("two value attributes",
     [_attr("value_float", AttributeProto.FLOAT, f=1.0),
      _attr("value_int", AttributeProto.INT, i=2)],
     ["value_float", "value_int"]),
    ("value with too few raw bytes",
     [_attr("value", AttributeProto.TENSOR,
            t=TensorProto(dims=[4], data_type=TensorProto.FLOAT, raw_data=b"abc"))],
     ["3 bytes"]),
]  # fmt: skip


def _with_constant(attributes: list[AttributeProto]) -> onnx.ModelProto:
    """A broken Constant ``bad`` → c, a good one → k, and ``y = c + k``."""
    bad = helper.make_node("Constant", [], ["c"], name="bad")
    bad.attribute.extend(attributes)
    good = helper.make_node("Constant", [], ["k"], name="good", value_floats=[1.0, 2.0])
    add = helper.make_node("Add", ["c", "k"], ["y"], name="add")
    graph = helper.make_graph(
        [bad, good, add], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


_IDS = [case[0] for case in BROKEN_CONSTANTS]


@pytest.mark.parametrize(("case", "attributes", "words"), BROKEN_CONSTANTS, ids=_IDS)
def test_a_broken_constant_is_one_unreadable_tensor(case, attributes, words):
    model = ox.load(_with_constant(attributes).SerializeToString())
    constants = model.graph.constants()
    assert constants["k"].numpy().tolist() == [1.0, 2.0]  # the good Constant still reads
    with pytest.raises(TensorDataError) as caught:
        constants["c"].numpy()
    message = str(caught.value)
    assert "'c'" in message
    for word in words:
        assert word in message, (case, message)
    if "bytes" not in case:
        assert "'bad'" in message  # names the node

    info = summarize(model)
    assert info["tensors"] == 2 and info["op_counts"] == {"Constant": 2, "Add": 1}
    rows = {row["name"]: row for row in model.weights_report(progress=False, as_list=True)}
    assert rows["k"]["error"] is None and rows["k"]["max"] == 2.0
    assert rows["c"]["error"]


@pytest.mark.parametrize(("case", "attributes", "words"), BROKEN_CONSTANTS[:4], ids=_IDS[:4])
def test_a_broken_constant_leaves_explorer_and_cli_working(
    tmp_path, capsys, case, attributes, words
):
    path = tmp_path / "broken.onnx"
    onnx.save(_with_constant(attributes), path)
    ex = ox.explore(path)
    ex.select("bad")
    ex.tabs.selected_index = TAB_TENSORS  # its contents are made when it is opened
    ex.tensor_panel.listing.value = "c"
    assert "cannot read this tensor" in ex.tensor_panel.details.value
    assert words[0] in ex.tensor_panel.details.value

    assert main(["summary", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tensors"] == 2
    assert main(["weights", str(path)]) == 0
    out = capsys.readouterr().out
    error_lines = [line for line in out.splitlines() if "ERROR" in line]
    assert len(error_lines) == 1 and words[0] in error_lines[0]
    assert "2 tensors, 0 flagged, 1 unreadable" in out


# -- strings that are not UTF-8 --------------------------------------------------------


class _Markers:
    """Distinct 4-character ASCII strings (``M000``, ``M001``…), remembered by field."""

    def __init__(self) -> None:
        self.fields: dict[str, str] = {}

    def __call__(self, field: str) -> str:
        marker = f"M{len(self.fields):03d}"
        self.fields[marker] = field
        return marker

    def as_read(self, field: str) -> str:
        """The text a reader shows for ``field`` once its ``M`` is an invalid byte."""
        marker = next(m for m, f in self.fields.items() if f == field)
        return "\ufffd" + marker[1:]


def _every_string_field(m: _Markers) -> onnx.ModelProto:
    """A model with a marker in every string field the ONNX reader takes from a file."""
    fn_input, fn_output = m("function input"), m("function output")
    function = helper.make_function(
        m("function domain"),
        m("function name"),
        [fn_input],
        [fn_output],
        [helper.make_node("Relu", [fn_input], [fn_output], name=m("function node name"))],
        [helper.make_opsetid("", 17), helper.make_opsetid(m("function opset domain"), 1)],
        attributes=[m("function attribute name")],
    )
    function.doc_string = m("function doc_string")
    function.attribute_proto.append(helper.make_attribute(m("function attribute default"), 1.0))
    function.value_info.append(
        helper.make_tensor_value_info(fn_input, TensorProto.FLOAT, [m("function dim_param")])
    )
    weight = numpy_helper.from_array(np.ones(2, np.float32), m("initializer name"))
    weight.doc_string = m("initializer doc_string")
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.ones(1, np.float32), m("sparse initializer name")),
        numpy_helper.from_array(np.zeros(1, np.int64), ""),
        [2],
    )
    x = m("input name")
    add = helper.make_node(
        "Add", [x, weight.name], [m("node output")], name=m("node name"), doc_string=m("node doc")
    )
    attribute = helper.make_attribute(m("attribute name"), m("attribute value").encode())
    attribute.doc_string = m("attribute doc_string")
    add.attribute.append(attribute)
    entry = add.metadata_props.add()
    entry.key, entry.value = m("node metadata key"), m("node metadata value")
    call = helper.make_node(
        function.name, add.output, [m("call output")], domain=function.domain, name=m("call name")
    )
    graph = helper.make_graph(
        [add, call],
        m("graph name"),
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [m("dim_param")], m("input doc"))],
        [helper.make_tensor_value_info(call.output[0], TensorProto.FLOAT, [2])],
        [weight],
        value_info=[helper.make_tensor_value_info(add.output[0], TensorProto.FLOAT, [2])],
        doc_string=m("graph doc_string"),
        sparse_initializer=[sparse],
    )
    model = helper.make_model(
        graph,
        producer_name=m("producer_name"),
        producer_version=m("producer_version"),
        domain=m("model domain"),
        doc_string=m("model doc_string"),
        opset_imports=[
            helper.make_opsetid("", 17),
            helper.make_opsetid(m("opset_import domain"), 1),
            helper.make_opsetid(function.domain, 1),
        ],
        functions=[function],
    )
    helper.set_model_props(model, {m("metadata key"): m("metadata value")})
    return model


@pytest.fixture
def not_utf8(tmp_path):
    """(path, markers) of a model whose every marker's ``M`` became the byte 0xFF: the file
    stays well-formed (same lengths), but no string field holds valid UTF-8 any more."""
    markers = _Markers()
    data = _every_string_field(markers).SerializeToString()
    for marker in markers.fields:
        assert marker.encode() in data, markers.fields[marker]
        data = data.replace(marker.encode(), b"\xff" + marker[1:].encode())
    path = tmp_path / "not_utf8.onnx"
    path.write_bytes(data)
    return path, markers


def _strings(model) -> list[object]:
    """Every string the model exposes: metadata, functions, graphs, values, nodes, tensors."""
    found: list[object] = [model.producer_name, model.producer_version, model.domain]
    found += [model.doc_string, *model.metadata_props.items(), *model.opset_imports]
    for f in model.functions:
        found += [f.name, f.domain, f.overload, f.doc_string, f.graph.path, *f.opset_imports]
        found += [*f.attribute_names, *f.attribute_defaults]
        found += [a.name for a in f.attribute_defaults.values()]
    for g in model.graphs():
        found += [g.name, g.doc_string, *g.value_info, *g.initializers, *g.sparse_initializers]
        for v in (*g.declared_inputs, *g.outputs, *g.value_info.values()):
            found += [v.name, v.doc_string, *(v.shape or ())]
        found += [t.doc_string for t in g.initializers.values()]
        for node in g.nodes:
            found += [node.name, node.op_type, node.domain, node.doc_string, *node.inputs]
            found += [*node.outputs, *node.metadata_props.items(), *node.attributes]
            for a in node.attributes.values():
                found += [a.name, a.doc_string, a.value]
    inferred = model.type_inference(model)
    for types in inferred.types.values():
        found += list(types)
    return found


def _flat(values: list[object]) -> list[object]:
    return [v for item in values for v in (item if isinstance(item, tuple) else (item,))]


def test_strings_that_are_not_utf8_are_shown_with_replacement_characters(not_utf8):
    path, markers = not_utf8
    model = ox.load(path)
    values = _flat(_strings(model))
    assert not [v for v in values if isinstance(v, bytes)]
    text = "\n".join(v for v in values if isinstance(v, str))
    missing = [
        field for marker, field in markers.fields.items() if "\ufffd" + marker[1:] not in text
    ]
    assert not missing
    assert markers.as_read("opset_import domain") in model.opset_imports
    function = model.functions[0]
    assert function.graph.path == f"function:{function.domain}:{function.name}"


def test_summary_json_of_a_model_with_non_utf8_strings(not_utf8, capsys):
    path, _ = not_utf8
    assert main(["summary", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert any("\ufffd" in domain for domain in info["opsets"])
    assert any("\ufffd" in name for name in info["functions"])


def test_explorer_shows_the_body_of_a_function_with_a_non_utf8_name(not_utf8):
    path, _ = not_utf8
    ex = ox.explore(path)
    function = ex.model.functions[0]
    ex.show_graph(function.graph.path)
    assert ex.graph is function.graph
    assert [n.op_type for n in ex.graph.nodes] == ["Relu"]
    ex.select(ex.graph.nodes[0].name)
    assert ex.attribute_panel.children


def test_graphdef_strings_that_are_not_utf8_are_shown_with_replacement_characters():
    from onnx_explorer.readers.tensorflow.graphdef import _proto as pb

    graph = pb.GraphDef()
    graph.node.add(name="xM1", op="Placeholder", device="/cpu:M2")
    relu = graph.node.add(name="y", op="ReluM3", input=["xM1"])
    relu.attr["keyM4"].s = b"value"
    relu.attr["T"].type = 1
    function = graph.library.function.add()
    function.signature.name = "fM5"
    function.ret["outM6"] = "inM7"
    data = graph.SerializeToString().replace(b"M", b"\xff")  # proto3: once a parse error
    model = ox.load(data, format="graphdef")
    x, y = model.graph.nodes
    assert (x.name, x.device, y.op_type, y.inputs) == (
        "x\ufffd1",
        "/cpu:\ufffd2",
        "Relu\ufffd3",
        ("x\ufffd1",),
    )
    assert "key\ufffd4" in y.attributes and y.attributes["T"].value == "float32"
    assert [f.name for f in model.functions] == ["f\ufffd5"]
    info = summarize(model)
    assert json.loads(json.dumps(info))["op_counts"] == {"Placeholder": 1, "Relu\ufffd3": 1}


# -- bidirectional and control characters in the explorer's HTML ------------------------

#: Characters that can disguise a name on screen: bidi embeddings, overrides, isolates and
#: marks, and C0/C1 controls (an escape, a bell, NUL, NEL, CSI, DEL).
DISGUISING = "\u202e\u202a\u2066\u2067\u2068\u2069\u200e\u200f\u061c\x1b\x07\x00\x85\x9b\x7f"


def _disguised(word: str) -> str:
    """``word`` with every disguising character in it (``admin\u202egnp.exe`` style)."""
    return word + DISGUISING + word[::-1]


def _disguised_model() -> onnx.ModelProto:
    """Every string the explorer shows carries every disguising character."""
    d = _disguised
    weight = numpy_helper.from_array(np.ones((2, 2), np.float32), d("weight"))
    weight.doc_string = d("weight doc")
    body_const = helper.make_node(
        "Constant", [], [d("body out")], name=d("body const"), value_floats=[1.0]
    )
    body = helper.make_graph(
        [body_const], d("body"), [], [helper.make_tensor_value_info(d("body out"), 1, [1])]
    )
    matmul = helper.make_node(
        "MatMul", [d("x"), weight.name], [d("h")], name=d("matmul"), doc_string=d("node doc")
    )
    entry = matmul.metadata_props.add()
    entry.key, entry.value = d("meta key"), d("meta value")
    custom = helper.make_node(
        d("Op"), [d("h")], [d("y")], name=d("custom"), domain=d("domain"), note=d("string")
    )
    branch = helper.make_node(
        "If", [d("cond")], [d("z")], name=d("if"), then_branch=body, else_branch=body
    )
    const = helper.make_node("Constant", [], [d("const")], name=d("const node"), value_ints=[1])
    graph = helper.make_graph(
        [matmul, custom, branch, const],
        d("graph"),
        [
            helper.make_tensor_value_info(d("x"), TensorProto.FLOAT, [d("batch"), 2], d("doc")),
            helper.make_tensor_value_info(d("cond"), TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info(d("y"), TensorProto.FLOAT, None),
         helper.make_tensor_value_info(d("z"), TensorProto.FLOAT, None)],
        [weight],
        doc_string=d("graph doc"),
    )  # fmt: skip
    model = helper.make_model(
        graph,
        producer_name=d("producer"),
        producer_version=d("1.0"),
        domain=d("model domain"),
        doc_string=d("model doc"),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(d("domain"), 1)],
    )
    helper.set_model_props(model, {d("key"): d("value")})
    return model


def _walk(widget):
    stack = [widget]
    while stack:
        w = stack.pop()
        yield w
        stack.extend(getattr(w, "children", ()))


def _html(widget) -> list[str]:
    """Every HTML string a widget tree sends to the browser."""
    import ipywidgets as widgets

    return [w.value for w in _walk(widget) if isinstance(w, widgets.HTML | widgets.HTMLMath)]


def _labels(widget) -> list[str]:
    """Text shown as plain text: option labels, labels, button descriptions and tooltips."""
    import ipywidgets as widgets

    found: list[str] = []
    for w in _walk(widget):
        found += [str(label) for label in getattr(w, "_options_labels", ())]
        for attr in ("description", "tooltip"):
            value = getattr(w, attr, None)
            found += [value] if isinstance(value, str) else []
        if isinstance(w, widgets.Label):
            found.append(w.value)
    return found


def _assert_not_disguised(texts: list[str]) -> None:
    for text in texts:
        left = sorted({f"U+{ord(c):04X}" for c in text if c in DISGUISING})
        assert not left, (left, text[:200])


def test_disguising_characters_never_reach_the_explorer_raw():
    ex = ox.explore(_disguised_model())
    panels = [ex.node_list, ex.attribute_panel, ex.tensor_panel, ex.model_panel]
    pages: list[str] = []
    labels: list[str] = []
    for tab in (TAB_TENSORS, 2, 0):  # the tensors and model tabs fill when opened
        ex.tabs.selected_index = tab
    for graph in [ex.model.graph, *(g for g in ex.model.graphs() if g is not ex.model.graph)]:
        ex.show_graph(graph.path)
        labels += _labels(ex.breadcrumb)  # inside a body: buttons named after the If node
        for node in graph.nodes:
            ex.select(node.name)
            pages += _html(ex.attribute_panel)
            labels += _labels(ex.attribute_panel)
        for _, name in ex.tensor_panel.listing.options:
            ex.tensor_panel.listing.value = name
            pages += _html(ex.tensor_panel)
        for panel in panels:
            pages += _html(panel)
            labels += _labels(panel)
    pages += _html(ex)
    pages.append(ex.static_html(wait=0))
    pages.append(ex.model_panel.summary.value)
    assert len(pages) > 20 and labels
    _assert_not_disguised(pages)
    _assert_not_disguised(labels)
    # ...while the names themselves are shown, each character replaced, none dropped.
    shown = "weight" + "\ufffd" * len(DISGUISING) + "thgiew"
    assert any(shown in page for page in pages)
    assert any(shown in label for label in labels)
    # The list's values are still the real names: selecting one selects that node.
    ex.show_graph("/")
    ex.node_list.results.value = _disguised("matmul")
    assert ex.selected is not None and ex.selected.name == _disguised("matmul")


@pytest.mark.graphviz
def test_disguising_characters_are_replaced_alike_in_the_svg_and_the_html():
    ex = ox.explore(_disguised_model())
    assert ex.graph_view.wait(60) and ex.graph_view.svg
    page = ex.static_html()
    assert "<svg" in page
    _assert_not_disguised([page, ex.graph_view.svg])
    shown = "producer" + "\ufffd" * len(DISGUISING) + "recudorp"
    assert shown in page.split("<svg")[0]  # the summary tables
