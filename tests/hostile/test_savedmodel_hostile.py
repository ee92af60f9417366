"""Hostile SavedModels and checkpoints (issue 31, findings 6, 7, 8 and 16).

- object-graph paths kept whole per object: a 1 MB ``saved_model.pb`` took 1.5 GB (6);
- a ``variables.index`` of 999,999 empty entries: 26 s and 1.8 GB at ``load()`` (7);
- a string variable of 1-byte strings: some 9 times the shard in memory (8);
- a ``variables/`` folder, index or shard symlinked out of the model's folder was
  followed (16): refused as ONNX external data is.

Memory and time are measured in a child process (its peak RSS), so a blow-up fails the
test rather than the machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import onnx_explorer as ox
from onnx_explorer.readers.tensorflow.bundle._crc32c import crc32c
from onnx_explorer.readers.tensorflow.bundle._read import MAX_ENTRIES, MAX_STRING_ELEMENTS
from onnx_explorer.readers.tensorflow.graphdef import _proto as pb
from onnx_explorer.readers.tensorflow.savedmodel._build import MAX_OBJECT_PATH
from onnx_explorer.samples import sstable, write_dense_saved_model, write_tensor_bundle

TIME_LIMIT = 60
KERNEL0 = "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"


def _child(code: str, *args: object) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; it prints a JSON line; ``rss_mb`` is added."""
    # Peak RSS from /proc (VmHWM: this process's own; ru_maxrss keeps the forking
    # parent's across exec). Elsewhere: 0, memory unchecked.
    wrapped = textwrap.dedent(code) + textwrap.dedent(
        """
        import os as _os
        _peak = 0.0
        if _os.path.exists("/proc/self/status"):
            for _line in open("/proc/self/status"):
                if _line.startswith("VmHWM:"):
                    _peak = int(_line.split()[1]) / 1024
        print(json.dumps({**out, "rss_mb": _peak}))
        """
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", wrapped, *map(str, args)],
            capture_output=True, text=True, timeout=TIME_LIMIT,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"not done within {TIME_LIMIT} s")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


# -- 6. object-graph paths ---------------------------------------------------------------
def _deep_object_graph(directory: Path, depth: int, name_length: int) -> None:
    """Append a chain of ``depth`` objects, each a variable, to the model's object graph."""
    pb_path = directory / "saved_model.pb"
    saved = pb.SavedModel()
    saved.ParseFromString(pb_path.read_bytes())
    graph = saved.meta_graphs[0].object_graph_def
    if not len(graph.nodes):
        graph.nodes.add()
    parent = 0
    for i in range(depth):
        graph.nodes[parent].children.add(node_id=len(graph.nodes), local_name="n" * name_length)
        parent = len(graph.nodes)
        graph.nodes.add().variable.name = f"v{i}"
    pb_path.write_bytes(saved.SerializeToString())


def test_a_deep_object_graph_costs_memory_linear_in_its_size(tmp_path: Path) -> None:
    directory = write_dense_saved_model(tmp_path / "sm")
    _deep_object_graph(directory, depth=20_000, name_length=40)  # paths to 800 KB each
    assert (directory / "saved_model.pb").stat().st_size < 2_000_000
    out = _child(
        """
        import json, sys
        import onnx_explorer as ox
        model = ox.load(sys.argv[1])
        kernel = model.graph.initializers["dense/kernel"]  # still found by its path
        out = {"shape": list(kernel.shape)}
        """,
        directory,
    )
    assert out["shape"] == [4, 8]
    assert isinstance(out["rss_mb"], float) and out["rss_mb"] < 400  # 8 GB of paths before


def test_variables_deeper_than_the_path_limit_keep_their_key() -> None:
    assert MAX_OBJECT_PATH >= 1024  # real Keras paths are a few hundred characters


# -- 7. index entries ----------------------------------------------------------------------
def _index_of_empty_entries(directory: Path, count: int) -> None:
    items = [(b"", bytes([8, 1]))]  # header: num_shards 1
    items += [(f"k{i:07d}".encode(), b"") for i in range(count)]
    (directory / "variables" / "variables.index").write_bytes(sstable(items))


def test_an_index_of_a_million_empty_entries_is_refused_at_once(tmp_path: Path) -> None:
    directory = write_dense_saved_model(tmp_path / "sm")
    _index_of_empty_entries(directory, 999_999)
    out = _child(
        """
        import json, sys, time
        import onnx_explorer as ox
        start = time.perf_counter()
        try:
            ox.load(sys.argv[1])
            out = {"error": None}
        except ox.ModelFormatError as exc:
            out = {"error": str(exc)}
        out["seconds"] = time.perf_counter() - start
        """,
        directory,
    )
    assert out["error"] and f"more than {MAX_ENTRIES} checkpoint tensors" in str(out["error"])
    assert isinstance(out["seconds"], float) and out["seconds"] < 5
    assert isinstance(out["rss_mb"], float) and out["rss_mb"] < 400


def test_index_entries_below_the_cap_become_tensors_only_when_looked_up(tmp_path: Path) -> None:
    directory = write_dense_saved_model(tmp_path / "sm")
    _index_of_empty_entries(directory, MAX_ENTRIES - 1)
    out = _child(
        """
        import json, sys, time
        import onnx_explorer as ox
        start = time.perf_counter()
        model = ox.load(sys.argv[1])
        inits = model.graph.initializers
        out = {"seconds": time.perf_counter() - start, "count": len(inits),
               "made": len(inits._made), "note": model.metadata_props["variables"]}
        t = inits["k0000007"]
        try:
            t.numpy()
        except ox.TensorDataError as exc:
            out["read"] = str(exc)
        """,
        directory,
    )
    assert out["count"] == MAX_ENTRIES - 1 and out["made"] == 0
    assert str(out["note"]).startswith(f"{MAX_ENTRIES - 1} tensors")
    assert "'k0000007'" in str(out["read"])
    assert isinstance(out["seconds"], float) and out["seconds"] < 5
    assert isinstance(out["rss_mb"], float) and out["rss_mb"] < 500


def test_an_entry_that_does_not_parse_fails_only_its_tensor(tmp_path: Path) -> None:
    directory = write_dense_saved_model(tmp_path / "sm")
    prefix = directory / "variables" / "variables"
    index = prefix.with_name("variables.index")
    # Rewrite the index with one entry's value replaced by bytes that are no proto.
    items = [(b"", bytes([8, 1]) + bytes([26, 2, 8, 1]))]
    from onnx_explorer.readers.tensorflow.bundle._table import table_entries

    for key, value in table_entries(index.read_bytes(), "index"):
        if key:
            items.append((key, b"\xff\xff\xff" if key.decode() == KERNEL0 else value))
    index.write_bytes(sstable(items))
    model = ox.load(directory)
    broken = model.graph.initializers[KERNEL0]  # no node claims it: listed under its key
    with pytest.raises(ox.TensorDataError, match="cannot|parse|Error|error"):
        broken.numpy()
    bias = model.graph.initializers["dense/bias"]
    assert bias.numpy().shape == (8,)


# -- 8. string variables ----------------------------------------------------------------
def test_a_variable_of_millions_of_one_byte_strings_is_refused_before_reading(
    tmp_path: Path,
) -> None:
    directory = write_dense_saved_model(tmp_path / "sm")
    prefix = directory / "variables" / "variables"
    count = MAX_STRING_ELEMENTS + 1
    strings = np.empty(count, dtype=object)
    strings[:] = [b"x"] * count
    write_tensor_bundle(prefix, {"vocab": strings}, crc32c=crc32c)
    out = _child(
        """
        import json, sys
        import onnx_explorer as ox
        t = ox.load(sys.argv[1]).graph.initializers["vocab"]
        out = {}
        for how, read in (("numpy", t.numpy), ("check", t.check),
                          ("chunks", lambda: next(t.iter_chunks()))):
            try:
                read()
                out[how] = "READ"
            except ox.TensorDataError as exc:
                out[how] = str(exc)
        """,
        directory,
    )
    for how in ("numpy", "check", "chunks"):
        assert f"{count} strings" in str(out[how]) and "'vocab'" in str(out[how]), out
    assert isinstance(out["rss_mb"], float) and out["rss_mb"] < 400


def test_a_string_variable_within_the_cap_reads_as_before(tmp_path: Path) -> None:
    directory = write_dense_saved_model(tmp_path / "sm")
    prefix = directory / "variables" / "variables"
    strings = np.array([b"a", b"", b"xyz" * 100], dtype=object)
    write_tensor_bundle(prefix, {"vocab": strings}, crc32c=crc32c)
    tensor = ox.load(directory).graph.initializers["vocab"]
    assert tensor.numpy().tolist() == strings.tolist()
    assert tensor.verify_checksum()


# -- 16. symlinks out of the model's folder -------------------------------------------
def _elsewhere(tmp_path: Path) -> Path:
    """Another model's checkpoint, outside the model's folder."""
    other = write_dense_saved_model(tmp_path / "other", seed=7)
    return other / "variables"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_symlinked_variables_folder_leading_out_is_refused(tmp_path: Path) -> None:
    directory = write_dense_saved_model(tmp_path / "sm", variables=False)
    (directory / "variables").symlink_to(_elsewhere(tmp_path), target_is_directory=True)
    with pytest.raises(ox.UnsafePathError, match="outside|symlink"):
        ox.load(directory)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_symlinked_index_is_refused(tmp_path: Path) -> None:
    directory = write_dense_saved_model(tmp_path / "sm")
    index = directory / "variables" / "variables.index"
    index.unlink()
    index.symlink_to(_elsewhere(tmp_path) / "variables.index")
    with pytest.raises(ox.UnsafePathError, match="symlink"):
        ox.load(directory)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_symlinked_shard_fails_its_tensors_only(tmp_path: Path) -> None:
    directory = write_dense_saved_model(tmp_path / "sm")
    shard = directory / "variables" / "variables.data-00000-of-00001"
    shard.unlink()
    shard.symlink_to(_elsewhere(tmp_path) / shard.name)
    model = ox.load(directory)  # the index is the model's own
    kernel = model.graph.initializers["dense/kernel"]
    with pytest.raises(ox.UnsafePathError, match="symlink"):
        kernel.numpy()
    assert kernel.shape == (4, 8)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_variables_symlink_inside_the_model_folder_still_reads(tmp_path: Path) -> None:
    directory = write_dense_saved_model(tmp_path / "sm")
    shutil.move(directory / "variables", directory / "variables_v2")
    (directory / "variables").symlink_to("variables_v2", target_is_directory=True)
    model = ox.load(directory)
    assert model.graph.initializers["dense/kernel"].numpy().shape == (4, 8)
