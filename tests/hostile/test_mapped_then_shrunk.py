"""A file that shrinks *after* ``numpy()`` mapped one of its tensors (issue 31, finding 1).

``numpy()`` of a large tensor in a local file is a view of the file's map, cached on the
tensor. Statistics, histograms, chunks, weights reports and diffs used to read that cached
map: once the file shrank (an export rewritten while a notebook holds the explorer) the
kernel died of SIGBUS. Streaming now reads the file again into buffers of its own,
checked against its size, and ``numpy()`` checks the size before handing the map out
again: every way of reading is a clear project error.

Each format runs in a child process, so a SIGBUS fails the test instead of killing pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_explorer.readers.tensorflow.bundle._crc32c import crc32c
from onnx_explorer.samples import write_dense_saved_model, write_tensor_bundle
from onnx_explorer.tensors import MAP_MIN_BYTES

HANG_LIMIT = 120  # seconds: only to catch a hang (each child takes about two)
BIG = np.arange(1 << 19, dtype=np.float32).reshape(512, 1024)  # 2 MiB: numpy() maps it
assert BIG.nbytes >= 2 * MAP_MIN_BYTES

# The child loads the model twice (one to keep intact for the diff would need a copy of
# the file, so side b is a copy made before the shrink), maps the tensor, truncates the
# data file, then tries every way of reading it. Each must be a project error that names
# the tensor; a signal kills the child and fails the test.
_CHILD = """
import json, os, shutil, sys
import numpy as np
import onnx_explorer as ox
from onnx_explorer.weights._report import weights_report

model_path, data_path, name, copy_path = sys.argv[1:5]
model = ox.load(model_path)
tensor = model.graph.initializers[name]
values = tensor.numpy()
assert not values.flags.owndata and values.base is not None, "not a view"
assert float(values.reshape(-1)[-1]) == float((1 << 19) - 1)
intact = ox.load(copy_path)  # side b of the diff: the same bytes, in a file left alone
os.truncate(data_path, 100)
del values  # what the user holds is theirs to guard (see Tensor.numpy); ours is not read
results = {}

def attempt(how, read):
    try:
        read()
    except ox.ExplorerError as exc:
        results[how] = [type(exc).__name__, str(exc)]
    else:
        results[how] = ["READ", ""]

attempt("stats", lambda: tensor.stats())
attempt("histogram", lambda: tensor.histogram())
attempt("chunks", lambda: [float(c.sum()) for c in tensor.iter_chunks()])
attempt("runs", lambda: [c.size for c in tensor.iter_runs()])
attempt("numpy", lambda: float(np.asarray(tensor.numpy()).sum()))
rows = weights_report(model, progress=False, as_list=True)
row = next(r for r in rows if r["name"] == name)
results["weights_report"] = ["row error", row["error"] or ""]
result = ox.diff(model, intact)
change = result.tensor_change(name)
results["diff"] = ["change error", (change.error or "") if change is not None else "EQUAL"]
print(json.dumps(results))
"""


def _read_after_shrink(model: Path, data: Path, name: str, tmp_path: Path) -> dict[str, list[str]]:
    copy = tmp_path / "intact"
    copy.mkdir()
    if model.is_dir():
        import shutil

        shutil.copytree(model, copy / model.name)
        intact = copy / model.name
    else:
        for sibling in model.parent.iterdir():
            if sibling.is_file():
                (copy / sibling.name).write_bytes(sibling.read_bytes())
        intact = copy / model.name
    try:
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(_CHILD), str(model), str(data), name,
             str(intact)],
            capture_output=True, text=True, timeout=HANG_LIMIT,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child did not finish within {HANG_LIMIT} s (a hang)")
    assert proc.returncode == 0, f"child exited with {proc.returncode}:\n{proc.stderr[-3000:]}"
    results: dict[str, list[str]] = json.loads(proc.stdout.splitlines()[-1])
    return results


def _check(results: dict[str, list[str]], name: str, *words: str) -> None:
    assert set(results) == {
        "stats", "histogram", "chunks", "runs", "numpy", "weights_report", "diff",
    }  # fmt: skip
    for how, (kind, message) in results.items():
        assert kind in ("ExternalDataError", "TensorDataError", "row error", "change error"), (
            how, kind, message,
        )  # fmt: skip
        assert name in message, (how, message)
        assert any(word in message for word in words), (how, message)


def _onnx_embedded(folder: Path) -> tuple[Path, Path, str]:
    path = folder / "model.onnx"
    graph = helper.make_graph(
        [helper.make_node("Identity", ["big"], ["y"])], "g", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(BIG, "big")],
    )  # fmt: skip
    onnx.save(helper.make_model(graph), path)
    return path, path, "big"


def _onnx_external(folder: Path) -> tuple[Path, Path, str]:
    path = folder / "model.onnx"
    tensor = onnx.numpy_helper.from_array(BIG, "big")
    graph = helper.make_graph(
        [helper.make_node("Identity", ["big"], ["y"])], "g", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [tensor],
    )  # fmt: skip
    onnx.save(helper.make_model(graph), path, save_as_external_data=True, location="w.bin",
              size_threshold=0)  # fmt: skip
    return path, folder / "w.bin", "big"


def _safetensors(folder: Path) -> tuple[Path, Path, str]:
    from safetensors.numpy import save_file

    path = folder / "model.safetensors"
    save_file({"big": BIG}, path)
    return path, path, "big"


def _gguf(folder: Path) -> tuple[Path, Path, str]:
    gguf = pytest.importorskip("gguf")
    path = folder / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("big.weight", BIG)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path, path, "big.weight"


def _savedmodel(folder: Path) -> tuple[Path, Path, str]:
    directory = write_dense_saved_model(folder / "sm", (4, 8, 3))
    prefix = directory / "variables" / "variables"
    # Replace the checkpoint by one whose first kernel is 2 MiB (the graph claims it by key).
    write_tensor_bundle(
        prefix, {"layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE": BIG}, crc32c=crc32c
    )
    key = "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"  # unclaimed: other shape
    return directory, prefix.with_name("variables.data-00000-of-00001"), key


@pytest.mark.parametrize(
    "build", [_onnx_embedded, _onnx_external, _safetensors, _gguf, _savedmodel],
    ids=["onnx-embedded", "onnx-external", "safetensors", "gguf", "savedmodel-variable"],
)  # fmt: skip
def test_reads_after_numpy_and_a_shrink_are_errors_not_a_sigbus(tmp_path: Path, build) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    model, data, name = build(folder)
    results = _read_after_shrink(model, data, name, tmp_path)
    _check(results, name, "shrank", "past the end", "truncated")
