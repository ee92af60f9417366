"""What the text views and the command line show for hostile, huge or mistaken input.

Terminal escape sequences from a model file are shown escaped; op counts cover every
graph; long metadata stays one line; dtypes and locations have one name each; files that
are not models say what they are.
"""

from __future__ import annotations

import json
import pickle
import zipfile

import numpy as np
import onnx
import pytest
from builders import nested_if, with_external_data
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer import ipython
from onnx_explorer.cli import main
from onnx_explorer.views._tables import tensor_rows
from onnx_explorer.views._text import tensor_text, terminal_safe, type_text

# Window title, clear screen, OSC 52 clipboard write, a CSI colour, C1 CSI, bidi override.
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066")


def _write(tmp_path, model, name="m.onnx"):
    path = tmp_path / name
    onnx.save(model, path)
    return path


def _hostile_text_model():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x\x1b[31m"], ["y\u202egpj.exe"], name="n")],
        "g" + CLEAR,
        [helper.make_tensor_value_info("x\x1b[31m", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y\u202egpj.exe", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(
        graph, producer_name="evil" + TITLE, opset_imports=[helper.make_opsetid("", 17)]
    )
    model.doc_string = "doc" + CLEAR + "\x9b2J"
    helper.set_model_props(model, {"clip" + CLIPBOARD: "value\u2066\x7f" + TITLE})
    return model


def _assert_no_raw_controls(text):
    for char in RAW:
        assert char not in text, repr(char)


# -- a) terminal escape sequences ------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "shown"),
    [("\x1b", "\\x1b"), ("\x07", "\\x07"), ("\x00", "\\x00"), ("\x7f", "\\x7f"),
     ("\x9b", "\\x9b"), ("\u202e", "\\u202e"), ("\u2066", "\\u2066"),
     ("\u2028", "\\u2028"),
        ("\ud800", "\\ud800"), ("\n", "\\n"), ("\t", "\\t")],
)  # fmt: skip
def test_terminal_safe_escapes_every_control_and_bidi_character(raw, shown):
    assert terminal_safe(f"a{raw}b") == f"a{shown}b"


def test_terminal_safe_keeps_ordinary_text():
    text = "/encoder/layer.0/MatMul — 中文 ⟨768×3072⟩ é"
    assert terminal_safe(text) == text


def test_summary_text_shows_escape_sequences_escaped(tmp_path, capsys):
    path = _write(tmp_path, _hostile_text_model())
    assert main(["summary", str(path), "--full"]) == 0
    out = capsys.readouterr().out
    _assert_no_raw_controls(out)
    assert "evil\\x1b]0;pwned\\x07" in out  # producer
    assert "doc\\x1b[2J\\x9b2J" in out  # doc string
    assert "clip\\x1b]52;c;ZXZpbA==\\x07 = value\\u2066\\x7f" in out  # metadata
    assert "x\\x1b[31m" in out and "y\\u202egpj.exe" in out  # input and output names


def test_summary_json_escapes_control_characters(tmp_path, capsys):
    path = _write(tmp_path, _hostile_text_model())
    assert main(["summary", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    _assert_no_raw_controls(out)
    assert json.loads(out)["producer"] == "evil" + TITLE  # the data itself is intact


def test_summary_magic_shows_escape_sequences_escaped(tmp_path, capsys):
    path = _write(tmp_path, _hostile_text_model())
    ipython.onnx_summary(f'"{path}"')
    out = capsys.readouterr().out
    _assert_no_raw_controls(out)
    assert "evil\\x1b]0;pwned\\x07" in out


def test_cli_and_magic_errors_are_escaped(tmp_path, capsys, monkeypatch):
    def fail(*_args, **_kwargs):
        raise ox.ModelFormatError("node 'a" + CLEAR + "\u202e' is broken\nsecond line")

    monkeypatch.setattr("onnx_explorer.cli._common.load", fail)
    assert main(["summary", "whatever.onnx"]) == 1
    err = capsys.readouterr().err
    _assert_no_raw_controls(err)
    assert err.count("\n") == 1 and "a\\x1b[2J\\u202e" in err

    monkeypatch.setattr("onnx_explorer.readers.load", fail)
    ipython.onnx_summary("whatever.onnx")
    out = capsys.readouterr().out
    _assert_no_raw_controls(out)
    assert out.count("\n") == 1 and "\\nsecond line" in out


# -- b) op counts over every graph -----------------------------------------------------
def _model_with_function_and_if():
    fn = helper.make_function(
        "local", "Gelu2", ["a"], ["b"],
        [helper.make_node("Mul", ["a", "a"], ["t"]), helper.make_node("Tanh", ["t"], ["b"])],
        opset_imports=[helper.make_opsetid("", 17)],
    )  # fmt: skip
    model = nested_if(3)  # Constant nodes at depth 1..3, an If and an Add at depth 1 and 2
    model.graph.node.append(helper.make_node("Gelu2", ["y"], ["z"], domain="local"))
    model.graph.output[0].name = "z"
    model.functions.append(fn)
    model.opset_import.append(helper.make_opsetid("local", 1))
    return model


def test_op_counts_cover_subgraphs_and_functions_with_the_main_graph_apart(tmp_path, capsys):
    path = _write(tmp_path, _model_with_function_and_if())
    assert main(["summary", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["op_counts"] == {"If": 1, "local::Gelu2": 1}  # the main graph, as before
    every = info["op_counts_all_graphs"]
    assert every["Constant"] == 6  # then and else bodies at three depths
    assert every["If"] == 3 and every["Add"] == 2
    assert every["Mul"] == 1 and every["Tanh"] == 1  # inside the model-local function

    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert "main" in out and "all graphs" in out
    (constant_line,) = [line for line in out.splitlines() if line.strip().startswith("Constant")]
    assert constant_line.split()[1:] == ["0", "6"]


# -- c) long metadata and doc strings --------------------------------------------------
def _ocr_like_model():
    model = helper.make_model(
        helper.make_graph([], "g", [], []), opset_imports=[helper.make_opsetid("", 17)]
    )
    alphabet = "\n".join(chr(c) for c in range(0x4E00, 0x4E00 + 6000))  # one char per line
    helper.set_model_props(model, {"character": alphabet, "short": "ok"})
    model.doc_string = "a long story " * 500
    return model, alphabet


def test_metadata_and_doc_string_are_one_line_cut_at_the_terminal_width(
    tmp_path, capsys, monkeypatch
):
    model, _ = _ocr_like_model()
    path = _write(tmp_path, model)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["summary", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) < 30  # not 6,000 lines of alphabet
    (character,) = [line for line in lines if "character =" in line]
    (doc,) = [line for line in lines if line.startswith("doc")]
    assert len(character) == 80 and character.endswith("…")
    assert len(doc) == 80 and doc.endswith("…")
    assert any(line.endswith("short = ok") for line in lines)


def test_full_prints_metadata_whole_on_one_line(tmp_path, capsys, monkeypatch):
    model, alphabet = _ocr_like_model()
    path = _write(tmp_path, model)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["summary", str(path), "--full"]) == 0
    out = capsys.readouterr().out
    assert "character = " + alphabet.replace("\n", "\\n") in out
    assert len(out.splitlines()) < 30


# -- d) one name per dtype, locations in words -----------------------------------------
def _typed_model(tmp_path):
    """Float and int8 initializers (raw and typed fields), a Constant, seq/map/optional values."""
    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
    typed = helper.make_tensor("q", TensorProto.INT8, [2], [1, 2])  # int32_data, not raw bytes
    const = helper.make_node(
        "Constant", [], ["c"], value=numpy_helper.from_array(np.ones(2, np.float32), "c")
    )
    seq_map = helper.make_value_info(
        "names",
        helper.make_sequence_type_proto(
            helper.make_map_type_proto(TensorProto.STRING, helper.make_tensor_type_proto(1, None))
        ),
    )
    opt = helper.make_value_info(
        "maybe", helper.make_optional_type_proto(helper.make_tensor_type_proto(7, [3]))
    )
    graph = helper.make_graph(
        [const, helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2]), seq_map, opt],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [1, 2])],
        initializer=[w, typed],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return _write(tmp_path, model)


def test_types_read_with_dtype_names_everywhere(tmp_path, capsys):
    path = _typed_model(tmp_path)
    assert main(["summary", str(path)]) == 0
    text = capsys.readouterr().out
    assert main(["summary", str(path), "--json"]) == 0
    raw_json = capsys.readouterr().out
    for out in (text, raw_json):
        assert "tensor(" not in out and "(float)" not in out
    assert "x  float32  [1, 2]" in text
    assert "names  seq(map(string, float32))  ?" in text
    assert "maybe  optional(int64)  ?" in text
    assert "y  bfloat16  [1, 2]" in text
    model = ox.load(path)
    assert type_text(model.graph.value("names")) == "seq(map(string, float32))"
    assert type_text(model.graph.value("w")) == "float32 2×2"  # from the initializer


def test_locations_are_embedded_external_or_in_attribute(tmp_path, capsys):
    path = _typed_model(tmp_path)
    assert main(["summary", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["weights_by_location"] == {
        "embedded": {"tensors": 2, "bytes": 16 + 2},  # raw float32 and typed int8 alike
        "in attribute": {"tensors": 1, "bytes": 8},
    }
    assert main(["weights", str(path), "--json"]) == 0
    rows = {row["name"]: row["location"] for row in json.loads(capsys.readouterr().out)}
    assert rows == {"w": "embedded", "q": "embedded", "c": "in attribute"}
    model = ox.load(path)
    assert {r.name: r.location for r in tensor_rows(model.graph)} == rows
    const = model.graph.node(model.graph.nodes[0].name)
    assert tensor_text(const.attributes["value"].value) == "float32 ⟨2⟩, in attribute"


def test_external_weights_are_external_everywhere(tmp_path, capsys):
    path, _ = with_external_data(tmp_path / "m")
    assert main(["summary", str(path), "--json"]) == 0
    assert list(json.loads(capsys.readouterr().out)["weights_by_location"]) == ["external"]
    assert main(["weights", str(path), "--json"]) == 0
    assert {row["location"] for row in json.loads(capsys.readouterr().out)} == {"external"}


# -- e) files that are not models ------------------------------------------------------
def _ld(field: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (payloads under 128 bytes)."""
    return bytes([field << 3 | 2, len(payload)]) + payload


def _torch_zip(tmp_path):
    path = tmp_path / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({"weight": [1.0]}, protocol=2))
    return path.read_bytes()


def _tensor_proto():
    return numpy_helper.from_array(np.zeros((1, 3), np.float32), "input_0").SerializeToString()


META_INFO = _ld(1, b"v1.0") + _ld(4, b"serve")  # meta_graph_version, tags
SAVED_MODEL = b"\x08\x01" + _ld(2, _ld(1, META_INFO))  # schema version 1, one MetaGraphDef

NOT_MODELS = [
    ("empty.onnx", lambda _: b"", "is empty"),
    ("pytorch_model.bin", _torch_zip, "PyTorch checkpoint"),
    ("weights.pt", lambda _: pickle.dumps({"w": [1.0]}, protocol=4), "export the model"),
    ("model.onnx", lambda _: b"\n<!DOCTYPE html><html><head>", "/resolve/"),
    ("input_0.pb", lambda _: _tensor_proto(), "single ONNX tensor"),
    # Read as what they are; these hold no graph, and say so.
    ("model.ckpt.meta", lambda _: _ld(1, META_INFO), "MetaGraphDef"),
    ("saved_model.pb", lambda _: SAVED_MODEL, "SavedModel"),
    ("exported.pb", lambda _: SAVED_MODEL, "SavedModel"),  # known by content too
]


@pytest.mark.parametrize(("name", "make", "says"), NOT_MODELS, ids=[n for n, _, _ in NOT_MODELS])
def test_files_that_are_not_models_say_what_they_are(tmp_path, capsys, name, make, says):
    path = tmp_path / name
    path.write_bytes(make(tmp_path))
    with pytest.raises(ox.ModelFormatError, match=says):
        ox.load(path)
    assert main(["summary", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert name in line and says in line


@pytest.mark.parametrize(
    ("name", "make", "says"), NOT_MODELS[1:5], ids=[n for n, *_ in NOT_MODELS[1:5]]
)
def test_bytes_that_are_not_models_say_what_they_are(tmp_path, name, make, says):
    with pytest.raises(ox.ModelFormatError, match=says):
        ox.load(make(tmp_path))


def test_saved_model_directory_is_read_as_a_saved_model(tmp_path, capsys):
    directory = tmp_path / "export"
    (directory / "variables").mkdir(parents=True)
    (directory / "saved_model.pb").write_bytes(SAVED_MODEL)  # a MetaGraphDef without graph
    with pytest.raises(ox.ModelFormatError, match="SavedModel.*has no graph"):
        ox.load(directory)
    assert main(["summary", str(directory)]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "SavedModel" in line and "has no graph" in line


def test_real_models_are_still_read(tmp_path):
    """The checks above must not catch an ONNX model or a GraphDef, whatever the name."""
    onnx_path = _typed_model(tmp_path).rename(tmp_path / "model.pb")
    assert ox.load(onnx_path).format == "onnx"
    graphdef = _ld(1, _ld(1, b"x") + _ld(2, b"Placeholder"))  # one NodeDef
    (tmp_path / "frozen.pb").write_bytes(graphdef)
    assert ox.load(tmp_path / "frozen.pb").format == "graphdef"


def test_summary_of_a_shape_beyond_the_float_range_prints_its_size(tmp_path, capsys):
    # 17 dims of 2^62 declare ~1.9e317 elements: float() overflows, str() has 318 digits
    tensor = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[2**62] * 17)
    tensor.data_location = onnx.TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "w.bin"
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Identity", ["w"], ["y"])], "g", [],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], [tensor],
    )  # fmt: skip
    path = tmp_path / "huge.onnx"
    path.write_bytes(onnx.helper.make_model(graph).SerializeToString())
    assert main(["summary", str(path)]) == 0
    assert "1.9e317 parameters" in capsys.readouterr().out


def test_summary_of_negative_declared_dims_prints_them(tmp_path, capsys):
    tensor = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[-(2**63), 2])
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Identity", ["w"], ["y"])], "g", [],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], [tensor],
    )  # fmt: skip
    path = tmp_path / "negative.onnx"
    path.write_bytes(onnx.helper.make_model(graph).SerializeToString())
    assert main(["summary", str(path)]) == 0
    assert "-1.8e19 parameters" in capsys.readouterr().out
