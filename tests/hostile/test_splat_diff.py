"""GraphDef splats (one stored value, 2**40 elements) in diffs and merged weights reports
(issue 31, finding 4): compared, hashed and totalled in constant time.

Each check runs in a child process with a time limit: before the fix each walked every
element (hours), so a hang fails the test instead of stalling pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import onnx_explorer as ox
from onnx_explorer.readers.tensorflow.graphdef import _proto as pb

TIME_LIMIT = 60  # seconds; the fixed code takes well under one per check
N = 1 << 40
SHAPE = (1 << 20, 1 << 20)


def _graphdef(consts: dict[str, tuple[str, tuple[int, ...], str, list[object]]]) -> bytes:
    """Const nodes: name → (dtype, shape, ``*_val`` field, stored values)."""
    graph = pb.GraphDef()
    for name, (dtype, shape, field, values) in consts.items():
        tp = pb.TensorProto(dtype=pb.DataType.Value(dtype))
        tp.tensor_shape.dim.extend([pb.TensorShapeProto.Dim(size=d) for d in shape])
        getattr(tp, field).extend(values)
        node = graph.node.add(name=name, op="Const")
        node.attr["dtype"].type = tp.dtype
        node.attr["value"].tensor.CopyFrom(tp)
    return graph.SerializeToString()


def _child(code: str, *files: Path) -> dict[str, object]:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code), *map(str, files)],
            capture_output=True, text=True, timeout=TIME_LIMIT,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"not done within {TIME_LIMIT} s: a splat was walked element by element")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


_DIFF = """
import json, sys
import onnx_explorer as ox
from onnx_explorer.model_diff._values import content_digest
a, b = ox.load(sys.argv[1]), ox.load(sys.argv[2])
result = ox.diff(a, b)
out = {"equal": result.equal, "changes": {}}
for name in ("same", "other", "nan", "partial", "text"):
    change = result.tensor_change(name)
    out["changes"][name] = None if change is None else {
        "differing": change.differing, "max_abs": change.max_abs, "mean_abs": change.mean_abs,
        "cosine": change.cosine, "error": change.error,
    }
change = result.tensor_change("other")
hist = result.difference_histogram(change, bins=4)
out["hist"] = [hist.total, int(hist.counts.max())]
ta, tb = a.graph.initializers["same"], b.graph.initializers["same"]
out["digest_equal"] = content_digest(ta) == content_digest(tb)
out["digest_other"] = content_digest(a.graph.initializers["other"]) == content_digest(
    b.graph.initializers["other"])
print(json.dumps(out))
"""


def test_two_models_of_2_40_element_splats_diff_at_once(tmp_path: Path) -> None:
    a = tmp_path / "a.pb"
    b = tmp_path / "b.pb"
    a.write_bytes(_graphdef({
        "same": ("DT_FLOAT", SHAPE, "float_val", [1.5]),
        "other": ("DT_FLOAT", SHAPE, "float_val", [1.0]),
        "nan": ("DT_FLOAT", SHAPE, "float_val", [float("nan")]),
        "partial": ("DT_INT32", SHAPE, "int_val", [3, 4, 5]),
        "text": ("DT_STRING", SHAPE, "string_val", [b"a"]),
    }))  # fmt: skip
    b.write_bytes(_graphdef({
        "same": ("DT_FLOAT", SHAPE, "float_val", [1.5]),
        "other": ("DT_FLOAT", SHAPE, "float_val", [3.0]),
        "nan": ("DT_FLOAT", SHAPE, "float_val", [float("nan")]),
        "partial": ("DT_INT32", SHAPE, "int_val", [3, 4, 6]),
        "text": ("DT_STRING", SHAPE, "string_val", [b"b"]),
    }))  # fmt: skip
    out = _child(_DIFF, a, b)
    changes = out["changes"]
    assert isinstance(changes, dict)
    assert changes["same"] is None and changes["nan"] is None  # NaN == NaN bit for bit
    other = changes["other"]
    assert other["differing"] == N and other["max_abs"] == 2.0 and other["mean_abs"] == 2.0
    assert other["cosine"] == pytest.approx(1.0) and other["error"] is None
    partial = changes["partial"]
    assert partial["differing"] == N - 2 and partial["max_abs"] == 1.0  # 5 → 6, repeated
    assert changes["text"]["differing"] == N
    assert out["hist"] == [N, N]  # b - a = 2.0 everywhere
    assert out["digest_equal"] is True and out["digest_other"] is False
    assert out["equal"] is False


def test_a_renamed_splat_is_matched_by_its_digest(tmp_path: Path) -> None:
    a = tmp_path / "a.pb"
    b = tmp_path / "b.pb"
    a.write_bytes(_graphdef({"old_name": ("DT_FLOAT", SHAPE, "float_val", [0.25])}))
    b.write_bytes(_graphdef({"new_name": ("DT_FLOAT", SHAPE, "float_val", [0.25])}))
    out = _child(
        """
        import json, sys
        import onnx_explorer as ox
        result = ox.diff(sys.argv[1], sys.argv[2])
        print(json.dumps(result.to_dict()["tensors"]))
        """,
        a,
        b,
    )
    assert out["renamed"] == [["old_name", "new_name"]]
    assert out["added"] == out["removed"] == out["changed"] == []


def test_merged_weights_totals_count_a_splat_in_constant_time(tmp_path: Path) -> None:
    path = tmp_path / "splat.pb"
    path.write_bytes(_graphdef({
        "c": ("DT_FLOAT", SHAPE, "float_val", [0.5]),
        "d": ("DT_INT32", SHAPE, "int_val", [-3, 0, 7]),
    }))  # fmt: skip
    out = _child(
        """
        import json, sys
        from onnx_explorer.weights import weights_report_many
        report = weights_report_many([sys.argv[1]], workers=1, bins=4, range=(-1.0, 1.0))
        print(json.dumps(report.totals.to_dict()))
        """,
        path,
    )
    assert out["tensors"] == 2 and out["unreadable"] == 0
    assert out["values"] == 2 * N
    assert out["zeros"] == 1
    assert out["min"] == -3.0 and out["max"] == 7.0
    assert out["below"] == 1 and out["above"] == N - 2
    assert out["counts"] == [0, 0, 1, N]  # 0 in [0, .5); 0.5 x N in [.5, 1]
    assert out["total"] == 0.5 * N + (-3 + 0 + 7 * (N - 2))


def test_a_splat_against_stored_values_compares_as_if_materialised() -> None:
    from onnx_explorer.model_diff._values import compare_tensors, content_digest

    small = (300, 700)
    splat = ox.load(_graphdef({"c": ("DT_FLOAT", small, "float_val", [2.0])}))
    stored = ox.load(_graphdef({"c": ("DT_FLOAT", small, "float_val", [2.0] * 210000)}))
    a, b = splat.graph.initializers["c"], stored.graph.initializers["c"]
    assert a.repeated_elements and not b.repeated_elements
    assert compare_tensors(a, b) is None
    assert content_digest(a) == content_digest(b)  # a short fill hashes element by element
    other = ox.load(_graphdef({"c": ("DT_FLOAT", small, "float_val", [2.0] * 209999 + [5.0])}))
    change = compare_tensors(a, other.graph.initializers["c"])
    assert change is not None and change.differing == 1 and change.max_abs == 3.0
    dense = np.full(small, 2.0, np.float32)
    assert change.mean_abs == pytest.approx(3.0 / dense.size)
