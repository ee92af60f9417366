"""Hostile and odd GraphDef input, and telling GraphDef from ONNX by content."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import locations
import onnx
import pytest
from onnx import helper

import onnx_explorer as ox
from onnx_explorer.readers._sniff import graphdef_encoding, sniff_format
from onnx_explorer.readers.tensorflow.graphdef import _proto as pb
from onnx_explorer.readers.tensorflow.graphdef._read import layout_note
from onnx_explorer.summary import summarize

DATA = locations.DATA / "graphdef"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _ld(field: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _nested_func_graph(depth: int) -> bytes:
    """A node whose attribute nests ``depth`` FUNC attributes (3 messages per level)."""
    value = b""
    for _ in range(depth):
        entry = _ld(1, b"a") + _ld(2, value)  # map entry: key, AttrValue
        value = _ld(10, _ld(1, b"f") + _ld(2, entry))  # AttrValue.func = NameAttrList
    node = _ld(1, b"n") + _ld(2, b"Op") + _ld(5, _ld(1, b"a") + _ld(2, value))
    return _ld(1, node)


def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# -- nesting -----------------------------------------------------------------------
def test_moderate_nesting_loads() -> None:
    model = ox.load(_nested_func_graph(10))
    attr = model.graph.node("n").attributes["a"]
    depth = 0
    while attr.kind == "FUNC":
        attr = attr.value.attributes["a"]
        depth += 1
    assert depth == 10
    assert attr.kind == "UNDEFINED"


@pytest.mark.parametrize("depth", [200, 5000])
def test_deep_binary_nesting_is_a_format_error(tmp_path: Path, depth: int) -> None:
    data = _nested_func_graph(depth)
    with pytest.raises(ox.ModelFormatError):
        ox.load(data)
    with pytest.raises(ox.ModelFormatError):
        ox.load(_write(tmp_path, "deep.pb", data))


def test_deep_text_nesting_is_a_format_error(tmp_path: Path) -> None:
    inner = "value { }"
    for _ in range(300):
        inner = f'value {{ func {{ name: "f" attr {{ key: "a" {inner} }} }} }}'
    text = f'node {{ name: "n" op: "X" attr {{ key: "a" {inner} }} }}'
    with pytest.raises(ox.ModelFormatError, match="nested"):
        ox.load(_write(tmp_path, "deep.pbtxt", text))
    # Unknown fields are skipped, but not at any depth.
    skipped = "node { name: 'n' op: 'X' }\nfuture " + "{ a " * 100_000 + "}" * 100_000
    with pytest.raises(ox.ModelFormatError, match="nested"):
        ox.load(_write(tmp_path, "deep2.pbtxt", skipped))


def test_braces_inside_strings_and_comments_do_not_count(tmp_path: Path) -> None:
    name = "{" * 300
    text = f'# {"<" * 300}\nnode {{ name: "{name}" op: "X" }}\n'
    model = ox.load(_write(tmp_path, "g.pbtxt", text))
    assert model.graph.nodes[0].name == name


def test_unknown_fields_are_skipped(tmp_path: Path) -> None:
    text = """
    node { name: "x" op: "Placeholder" experimental_type { type_id: TFT_PRODUCT }
           future_field: 3 future_message { a: 1 } }
    debug_info { files: "a.py" }
    versions { producer: 1 }
    """
    model = ox.load(_write(tmp_path, "g.pbtxt", text))
    assert [n.name for n in model.graph.nodes] == ["x"]
    binary = (DATA / "cnn_frozen.pb").read_bytes() + _ld(5, _ld(1, b"a.py"))  # debug_info
    assert len(ox.load(binary).graph.nodes) == 25


# -- broken files ------------------------------------------------------------------
def test_truncated_binary_files(tmp_path: Path) -> None:
    data = (DATA / "cnn_frozen.pb").read_bytes()
    with ox.load(DATA / "cnn_frozen.pb") as model:
        kernel = model.graph.initializers["conv1/Conv2D/ReadVariableOp/resource"]
    # Cut inside the 864-byte kernel: the field runs past the end of the file.
    cut = data[: kernel.location.offset + 400]
    with pytest.raises(ox.ModelFormatError, match="truncated|not a valid"):
        ox.load(_write(tmp_path, "cut.pb", cut))
    # Any cut either fails cleanly or (on a field boundary) leaves a smaller graph.
    for end in range(1, len(data), 53):
        try:
            model = ox.load(data[:end], format="graphdef")
        except ox.ModelFormatError:
            continue
        for ref in model.weights():
            with contextlib.suppress(ox.TensorDataError):
                ref.tensor.check()


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("garbage.pb", random.Random(1).randbytes(3000)),
        ("garbage.pbtxt", random.Random(2).randbytes(3000)),
        ("words.pbtxt", "hello world, this is not a graph"),
        ("unknown.pbtxt", "something: 1\n"),
        ("latin1.pbtxt", b'node { name: "\xff" op: "X" }'),
        ("unclosed.pbtxt", 'node { name: "x" op: "X" '),
        ("empty.pb", b""),
        ("empty.pbtxt", b""),
        ("no_nodes.pb", _ld(4, b"\x08\x01")),  # only versions
        ("onnx_text.pb", "ir_version: 8\ngraph { name: 'g' }"),
    ],
)
def test_garbage_gives_format_errors(tmp_path: Path, name: str, content: bytes | str) -> None:
    path = _write(tmp_path, name, content)
    with pytest.raises(ox.ModelFormatError):
        ox.load(path)
    with pytest.raises(ox.ModelFormatError):
        ox.load(path.read_bytes(), format="graphdef")


def test_hostile_ports_and_names() -> None:
    graph = pb.GraphDef()
    graph.node.add(name="x", op="Placeholder")
    graph.node.add(name="y", op="Add", input=["x:99999999999", "x:-1", "x:abc", "x:٣", "^x:0"])
    graph.node.add(name='a"b<script>&', op="Relu", input=["y"])
    model = ox.load(graph.SerializeToString())
    g = model.graph
    assert g.node("x").outputs == ("x", "x:99999999999")  # not a range of 10^11 names
    assert g.node("y").inputs == ("x:99999999999", "x:-1", "x:abc", "x:٣")
    assert g.node("y").control_inputs == ("x:0",)
    summarize(model)


@pytest.mark.graphviz
def test_hostile_names_render_escaped() -> None:
    graphviz = pytest.importorskip("graphviz")
    dot = pytest.importorskip("onnx_explorer.views._drawing")
    graph = pb.GraphDef()
    graph.node.add(name="x", op="Placeholder")
    graph.node.add(name='a"b<script>&', op="Relu<img>", input=["x", '"];evil[label="'])
    model = ox.load(graph.SerializeToString())
    source = dot.build_dot(model.graph, model, expanded="all").source
    svg = graphviz.Source(source).pipe(format="svg").decode()
    assert "<script" not in svg and "<img" not in svg
    assert not any(line.startswith("evil") for line in source.splitlines())  # no injection


# -- function calls ----------------------------------------------------------------
CYCLIC = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "call" op: "PartitionedCall" input: "x"
       attr { key: "f" value { func { name: "ping" } } } }
node { name: "w" op: "Const" attr { key: "value" value { tensor { dtype: DT_FLOAT
       tensor_shape { dim { size: 1 } dim { size: 1 } dim { size: 1 } dim { size: 1 } }
       float_val: 1 } } } }
node { name: "loop_a" op: "Identity" input: "w" input: "loop_b" }
node { name: "loop_b" op: "Identity" input: "loop_a" }
library {
  function {
    signature { name: "ping" input_arg { name: "v" type: DT_FLOAT }
                output_arg { name: "out" type: DT_FLOAT } }
    node_def { name: "c" op: "pong" input: "v" }
    ret { key: "out" value: "c:out:0" }
  }
  function {
    signature { name: "pong" input_arg { name: "v" type: DT_FLOAT }
                output_arg { name: "out" type: DT_FLOAT } }
    node_def { name: "c" op: "PartitionedCall" input: "v"
               attr { key: "f" value { func { name: "ping" } } } }
    node_def { name: "self" op: "pong" input: "c:output:0" }
    ret { key: "out" value: "self:out:0" }
  }
}
"""


def test_cyclic_function_calls_and_cyclic_graphs_do_not_hang(tmp_path: Path) -> None:
    model = ox.load(_write(tmp_path, "cyclic.pbtxt", CYCLIC))
    assert [f.name for f in model.functions] == ["ping", "pong"]
    assert len(list(model.graphs())) == 3
    ping = model.function("", "ping")
    assert model.function_for(ping.graph.node("c")) is model.function("", "pong")
    info = summarize(model)
    assert info["functions"] == ["ping", "pong"]
    assert layout_note(model, "w") is None  # walks the Identity loop once
    dot = pytest.importorskip("onnx_explorer.views._drawing")
    for graph in model.graphs():
        assert dot.build_dot(graph, model, expanded="all").source


# -- telling formats apart ---------------------------------------------------------
def _onnx_bytes() -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
    )
    return helper.make_model(graph).SerializeToString()


def test_onnx_and_graphdef_pb_files_are_told_apart(tmp_path: Path) -> None:
    onnx_path = _write(tmp_path, "model.pb", _onnx_bytes())
    assert ox.load(onnx_path).format == "onnx"
    graphdef_path = _write(tmp_path, "model.onnx", (DATA / "cnn_frozen.pb").read_bytes())
    assert ox.load(graphdef_path).format == "graphdef"  # content wins over the suffix
    assert ox.load(DATA / "cnn_frozen.pbtxt").format == "graphdef"


@pytest.mark.parametrize(
    ("head", "suffix", "expected"),
    [
        (_onnx_bytes(), ".pb", "onnx"),
        ((DATA / "cnn_frozen.pb").read_bytes(), ".pb", "graphdef"),
        ((DATA / "functions.pb").read_bytes(), "", "graphdef"),
        ((DATA / "cnn_frozen.pbtxt").read_bytes(), ".pbtxt", "graphdef"),
        ((DATA / "cnn_frozen.pbtxt").read_bytes(), ".pb", "graphdef"),
        (b"# written by hand\nnode {\n name: 'x' op: 'X' }", "", "graphdef"),
        (b"versions { producer: 1 }", "", "graphdef"),
        # library first (a FunctionDef inside), versions first: still GraphDef.
        (_ld(2, _ld(1, _ld(1, _ld(1, b"f")))), "", "graphdef"),
        (_ld(4, b"\x08\x01\x10\x01") + _ld(1, _ld(1, b"n")), "", "graphdef"),
        # ONNX whose first field is producer_name, then the graph (field 7).
        (_ld(2, b"pytorch") + _ld(7, _ld(1, b"")), "", "onnx"),
        (b"ir_version: 8\ngraph {}", ".pb", "onnx"),
        # A field neither knows after a first field only one of them has.
        (_ld(1, _ld(1, b"n")) + _ld(99, b"future"), "", "graphdef"),
        (b"\x08\x09" + _ld(99, b"future"), "", "onnx"),
        (random.Random(3).randbytes(500), ".pb", "onnx"),
        (b"", ".pb", "onnx"),
        (b"", ".pbtxt", "graphdef"),
    ],
)
def test_sniff_format(head: bytes, suffix: str, expected: str) -> None:
    assert sniff_format(head[:4096], suffix) == expected


def test_graphdef_encoding() -> None:
    assert graphdef_encoding((DATA / "cnn_frozen.pbtxt").read_bytes()[:4096]) == "text"
    assert graphdef_encoding((DATA / "cnn_frozen.pb").read_bytes()[:4096]) == "binary"
    assert graphdef_encoding(b"", ".pbtxt") == "text"


def test_an_input_port_of_thousands_of_digits_is_part_of_a_name(tmp_path: Path) -> None:
    port = "1" * 5000  # int() of it would raise ValueError (Python's 4,300-digit limit)
    text = (
        'node { name: "a" op: "Placeholder" }\n'
        f'node {{ name: "b" op: "Identity" input: "a:{port}" input: "a:1" }}\n'
    )
    model = ox.load(_write(tmp_path, "ports.pbtxt", text))
    node = model.graph.nodes[1]
    assert node.inputs == (f"a:{port}", "a:1")  # kept as written; the short one is a port


def test_a_histogram_of_integers_past_2_53_has_a_range() -> None:
    text = (
        'node { name: "c" op: "Const" attr { key: "value" value { tensor { dtype: DT_INT64 '
        "tensor_shape { dim { size: 2 } } int64_val: 4611686018427387904 "
        "int64_val: 4611686018427387905 } } } }"
    )
    tensor = ox.load(text.encode()).graph.initializers["c"]
    histogram = tensor.histogram(bins=10)
    assert histogram.total == 2 and histogram.edges[0] < histogram.edges[-1]


def test_a_text_number_out_of_its_fields_range_is_a_format_error(tmp_path: Path) -> None:
    text = (
        'node { name: "c" op: "Const" attr { key: "dtype" value { type: ' + "1" * 400 + " } } }"
    )  # an enum given as a number: protobuf's setattr raises a bare ValueError
    with pytest.raises(ox.ModelFormatError, match="not a valid text-format GraphDef"):
        ox.load(_write(tmp_path, "big.pbtxt", text))
