"""``onnx-explorer weights``: the report from the command line."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
from builders import mlp, with_external_data
from onnx import numpy_helper

from onnx_explorer.cli import main


def test_json_rows_have_the_documented_keys(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(mlp(), path)
    assert main(["weights", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} == {"/layer1/W", "/layer1/b", "/layer2/W"}
    for row in rows:
        for key in (
            "name",
            "dtype",
            "shape",
            "location",
            "min",
            "max",
            "mean",
            "std",
            "zeros",
            "nan",
            "inf",
        ):
            assert key in row
    bias = next(r for r in rows if r["name"] == "/layer1/b")
    assert bias["shape"] == [8] and bias["min"] == 0.0 and bias["max"] == 7.0
    assert bias["mean"] == 3.5


def test_sort_top_and_flags(tmp_path, capsys):
    model = mlp()
    bad = np.ones((8, 3), np.float32)
    bad[0, 0] = np.nan
    model.graph.initializer[2].CopyFrom(numpy_helper.from_array(bad, "/layer2/W"))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert main(["weights", str(path), "--json", "--sort", "nan", "--top", "1"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["name"] == "/layer2/W" and row["nan"] == 1 and "nan" in row["flags"]
    assert main(["weights", str(path), "--sort", "name"]) == 0
    text = capsys.readouterr().out
    assert text.index("/layer1/W") < text.index("/layer2/W")
    assert "3 tensors, 1 flagged, 0 unreadable" in text


def test_unreadable_tensor_is_a_row_not_a_crash(tmp_path, capsys):
    path, _ = with_external_data(tmp_path)
    (tmp_path / "weights.bin").write_bytes(b"\0" * 100)  # truncated
    assert main(["weights", str(path), "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["/layer2/W"]["error"] and rows["/layer2/W"]["min"] is None
    assert main(["weights", str(path)]) == 0
    assert "unreadable" in capsys.readouterr().out


def test_bad_file_is_one_line(tmp_path):
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"\x00\x01garbage")
    done = subprocess.run([sys.executable, "-m", "onnx_explorer.cli", "weights", str(path)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1


def _hostile_model(tmp_path):
    from onnx import TensorProto, helper

    name = "w\x1b[2J\x07"  # a terminal escape sequence and a bell in a tensor name
    weight = numpy_helper.from_array(np.arange(6, dtype=np.int8).reshape(2, 3), name)
    scale = numpy_helper.from_array(np.array(0.5, np.float32), "scale")
    node = helper.make_node("DequantizeLinear", [name, "scale"], ["y"])
    graph = helper.make_graph(
        [node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight, scale],
    )  # fmt: skip
    path = tmp_path / "hostile.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), path)
    return path


def test_control_characters_in_names_are_escaped_in_text(tmp_path, capsys):
    assert main(["weights", str(_hostile_model(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "w\\x1b[2J\\x07" in out


def test_dequantize_option(tmp_path, capsys):
    path = _hostile_model(tmp_path)
    assert main(["weights", str(path), "--json"]) == 0
    raw = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert main(["weights", str(path), "--json", "--dequantize"]) == 0
    real = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    name = "w\x1b[2J\x07"
    assert raw[name]["max"] == 5 and real[name]["max"] == 2.5
    assert real[name]["quantization"].startswith("per-tensor")


def test_bad_sort_key_is_one_line_before_reading(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(mlp(), path)
    assert main(["weights", str(path), "--sort", "colour"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot sort by 'colour'" in err[0]
