"""The ``onnx-explorer summary`` command line."""

from __future__ import annotations

import json
import subprocess
import sys

import onnx
import pytest
from builders import mlp, nested_if, with_external_data

from onnx_explorer.cli import main


def test_summary_json_has_the_documented_keys(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(mlp(), path)
    assert main(["summary", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    for key in (
        "ir_version",
        "opsets",
        "producer",
        "nodes",
        "nodes_total",
        "op_counts",
        "inputs",
        "outputs",
        "initializers",
        "parameters",
        "weight_bytes",
    ):
        assert key in info, key
    assert info["opsets"] == {"": 17}
    assert info["producer"] == "tests"
    assert info["nodes"] == 4 and info["nodes_total"] == 4
    assert info["op_counts"] == {"MatMul": 2, "Add": 1, "Relu": 1}
    assert info["inputs"] == [
        {"name": "x", "type": "float32", "dtype": "float32", "shape": ["batch", 4]}
    ]
    assert info["initializers"] == 3
    assert info["parameters"] == 4 * 8 + 8 + 8 * 3
    assert info["weight_bytes"] == 4 * info["parameters"]
    assert (
        info["weights_by_location"] == {"embedded": {"tensors": 3, "bytes": 256}}
        or sum(v["bytes"] for v in info["weights_by_location"].values()) == 256
    )


def test_summary_counts_subgraph_nodes_and_constant_weights(tmp_path, capsys):
    path = tmp_path / "nested.onnx"
    onnx.save(nested_if(4), path)
    assert main(["summary", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["nodes"] == 1
    assert info["nodes_total"] > 10
    assert info["initializers"] == 0
    assert info["parameters"] == 8 * 4  # eight 2×2 Constant tensors


def test_summary_text_with_external_data(tmp_path, capsys):
    path, _ = with_external_data(tmp_path / "m")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (tmp_path / "m" / "weights.bin").rename(data_dir / "weights.bin")
    assert main(["summary", str(path), "--external-data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    assert "external" in out and "MatMul" in out and "x  float32  [batch, 4]" in out


@pytest.mark.parametrize("content", [b"not a model", b""], ids=["garbage", "empty"])
def test_bad_file_exits_nonzero_with_one_line(tmp_path, content):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    result = subprocess.run(
        [sys.executable, "-m", "onnx_explorer.cli", "summary", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.onnx" in lines[0] and "Traceback" not in result.stderr


def test_missing_file_exits_nonzero(tmp_path, capsys):
    assert main(["summary", str(tmp_path / "nope.onnx")]) == 1
    assert "does not exist" in capsys.readouterr().err
