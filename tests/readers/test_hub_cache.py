"""Models in a Hugging Face cache snapshot, whose files are symlinks into the repo's
``blobs`` folder: followed there, and nowhere else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import save_file

import onnx_explorer as ox
from onnx_explorer.errors import UnsafePathError


def _snapshot(tmp_path: Path, files: dict[str, Path]) -> Path:
    """A cache repo whose snapshot links each name to a blob holding ``files[name]``."""
    repo = tmp_path / "hub" / "models--org--net"
    blobs, snapshot = repo / "blobs", repo / "snapshots" / "0123abc"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for k, (name, source) in enumerate(files.items()):
        blob = blobs / f"blob{k:02d}"
        source.rename(blob)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / name)
    return snapshot


def test_onnx_with_external_data_in_a_snapshot(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    weight = np.arange(64, dtype=np.float32).reshape(8, 8)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        [numpy_helper.from_array(weight, "w")],
    )  # fmt: skip
    onnx.save(helper.make_model(graph), work / "model.onnx", save_as_external_data=True,
              all_tensors_to_one_file=True, location="model.onnx_data", size_threshold=0)  # fmt: skip
    snapshot = _snapshot(tmp_path, {"model.onnx": work / "model.onnx",
                                    "model.onnx_data": work / "model.onnx_data"})  # fmt: skip
    model = ox.load(snapshot / "model.onnx")
    np.testing.assert_array_equal(model.graph.initializers["w"].numpy(), weight)


def test_sharded_safetensors_snapshot_folder(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    save_file({"a.w": np.ones(3, np.float32)}, work / "s1.safetensors")
    save_file({"b.w": np.zeros(2, np.float32)}, work / "s2.safetensors")
    index = work / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a.w": "model-1.safetensors",
                                                "b.w": "model-2.safetensors"}}))  # fmt: skip
    snapshot = _snapshot(tmp_path, {"model-1.safetensors": work / "s1.safetensors",
                                    "model-2.safetensors": work / "s2.safetensors",
                                    "model.safetensors.index.json": index})  # fmt: skip
    model = ox.load(snapshot)
    assert model.graph.initializers["a.w"].stats().max == 1.0
    assert model.graph.initializers["b.w"].stats().max == 0.0


def test_a_snapshot_link_leaving_the_blobs_is_still_refused(tmp_path):
    outside = tmp_path / "secret.safetensors"
    save_file({"s": np.ones(2, np.float32)}, outside)
    work = tmp_path / "work"
    work.mkdir()
    index = work / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"s": "model-1.safetensors"}}))
    snapshot = _snapshot(tmp_path, {"model.safetensors.index.json": index})
    os.symlink(outside, snapshot / "model-1.safetensors")  # not into blobs/
    with pytest.raises(UnsafePathError):
        ox.load(snapshot)
