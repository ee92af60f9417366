"""Hostile models given to ``run``/``compare``: each ends in a clear project error in
bounded time and memory (issue 31: #2 no time bound / Ctrl-C ignored, #13 builtin
errors, #14 no memory budget), and what ran before still runs the same."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.errors import ExplorerError, ModelFormatError
from onnx_explorer.readers.onnx import _inference_child as inference_child
from onnx_explorer.runs import (
    FeedError,
    MemoryLimitError,
    RunError,
    RunFailedError,
    RunTimeoutError,
)

pytest.importorskip("onnxruntime")

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
ROOT = Path(__file__).resolve().parents[2]


def _model(nodes, inputs, outputs, inits=(), opsets=(("", 17),)):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])


def loop_model(body_nodes, cond_out="c_out", v_out="v_out", trips=1 << 62):
    """x → Loop(trips, true, x) → y; the body adds v to itself (or what ``body_nodes`` do)."""
    body = helper.make_graph(
        body_nodes,
        "body",
        [helper.make_tensor_value_info("i", I64, []), helper.make_tensor_value_info("c", B, []),
         helper.make_tensor_value_info("v", F, [1])],
        [helper.make_tensor_value_info(cond_out, B, []),
         helper.make_tensor_value_info(v_out, F, [1])],
    )  # fmt: skip
    return _model(
        [
            helper.make_node(
                "Constant", [], ["n"], value=helper.make_tensor("n", I64, [], [trips])
            ),
            helper.make_node("Constant", [], ["t"], value=helper.make_tensor("t", B, [], [True])),
            helper.make_node("Loop", ["n", "t", "x"], ["y"], body=body, name="loop"),
        ],
        [helper.make_tensor_value_info("x", F, [1])],
        [helper.make_tensor_value_info("y", F, [1])],
    )


BUSY_BODY = [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["v", "v"], ["v_out"])]  # fmt: skip
CONSTANT_BODY = [helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", B, [], [True]))]  # fmt: skip


def einsum_model():
    """84 bytes on which ONNX shape inference (and so ``InferenceSession()``) never ends."""
    return _model(
        [helper.make_node("Einsum", ["x"], ["y"], equation="......", name="einsum")],
        [helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info("y", F, None)],
    )


def constant_of_shape(size, *, as_input=False):
    """ConstantOfShape [size] float32: its size in the file (an initializer) or fed."""
    value = helper.make_tensor("v", F, [1], [1.0])
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], value=value, name="big")
    if as_input:
        return _model([node], [helper.make_tensor_value_info("s", I64, [1])],
                      [helper.make_tensor_value_info("y", F, None)])  # fmt: skip
    shape = numpy_helper.from_array(np.array([size], np.int64), "s")
    return _model([node], [], [helper.make_tensor_value_info("y", F, None)], [shape])


def relu_model(dims, elem_type=F):
    return _model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", elem_type, dims)],
        [helper.make_tensor_value_info("y", F, None)],
    )


# -- #2: time bound and Ctrl-C ------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "cond", "value"),
    [(BUSY_BODY, "c_out", "v_out"), ([], "c", "v"), (CONSTANT_BODY, "k", "v")],
    ids=["busy-body", "empty-body", "constant-body"],
)
def test_a_loop_of_2_62_trips_is_stopped_at_the_timeout(body, cond, value):
    # An empty body (or one of constants onnxruntime folds away) runs no kernel, so it
    # never looked at RunOptions.terminate: the run gives each Loop body a check.
    began = time.monotonic()
    with pytest.raises(RunTimeoutError, match=r"time limit of 1\.5 s.*node 'loop' \(op Loop\)"):
        ox.run(loop_model(body, cond, value), timeout=1.5)
    assert time.monotonic() - began < 8


def test_loops_that_end_give_the_same_values_with_their_stop_check():
    feeds = {"x": np.ones(1, np.float32)}
    result = ox.run(loop_model(BUSY_BODY, trips=3), feeds)
    assert result.outputs["y"].tolist() == [8.0]  # 1 doubled three times
    assert ox.run(loop_model([], "c", "v", trips=5), feeds).outputs["y"].tolist() == [1.0]


def test_ctrl_c_stops_a_run_promptly():
    # Jupyter's "interrupt kernel" is a SIGINT: onnxruntime's C++ never looks at it,
    # the run's waiting thread does (and tells onnxruntime to stop).
    main_thread = threading.main_thread().ident
    assert main_thread is not None
    timer = threading.Timer(1.0, signal.pthread_kill, (main_thread, signal.SIGINT))
    began = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            ox.run(loop_model([], "c", "v"), timeout=None)
    finally:
        timer.cancel()
    assert time.monotonic() - began < 8
    assert ox.run(loop_model(BUSY_BODY, trips=2), {"x": np.ones(1, np.float32)}).outputs  # usable


def test_a_session_that_would_never_be_built_is_refused(monkeypatch):
    # InferenceSession() runs ONNX shape inference, which this Einsum makes loop for ever
    # (in C++, in the kernel's process): inference is first run in the killable child.
    monkeypatch.setattr(inference_child, "INFERENCE_TIME_LIMIT", 2.0)
    began = time.monotonic()
    with pytest.raises(RunTimeoutError, match="ONNX shape inference did not finish in 2 s"):
        ox.run(einsum_model())
    with pytest.raises(RunTimeoutError, match=r"time limit of 1 s .*during ONNX shape inference"):
        ox.run(einsum_model(), timeout=1)
    assert time.monotonic() - began < 15


def test_compare_has_the_same_time_limit():
    with pytest.raises(RunTimeoutError):
        ox.compare(loop_model([], "c", "v"), loop_model([], "c", "v"), timeout=1)


def test_timeout_and_memory_limit_are_checked_arguments():
    model = relu_model([2])
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="timeout"):
            ox.run(model, timeout=bad)
    with pytest.raises(TypeError, match="timeout"):
        ox.run(model, timeout="5")
    with pytest.raises(ValueError, match="memory_limit"):
        ox.run(model, memory_limit=0)
    assert ox.run(model, timeout=None, memory_limit=None).outputs["y"].shape == (2,)


def test_the_cli_exits_2_when_the_time_limit_passes(tmp_path, capsys):
    path = tmp_path / "loop.onnx"
    onnx.save(loop_model([], "c", "v"), path)
    assert main(["run", str(path), "--timeout", "1"]) == 2
    assert "time limit of 1 s" in capsys.readouterr().err


# -- #13: errors of ours, never builtin ones ----------------------------------------------
def test_a_declared_negative_dim_is_any_size(tmp_path):
    model = relu_model([-5, 3])
    assert ox.run(model).outputs["y"].shape[1] == 3
    onnx.save(model, tmp_path / "m.onnx")
    assert ox.run(tmp_path / "m.onnx", {"x": np.ones((2, 3), np.float32)}).outputs["y"].shape == (
        2,
        3,
    )


def test_an_unknown_elem_type_is_a_feed_error_and_the_cli_exits_2(tmp_path, capsys):
    model = relu_model([2], elem_type=99)
    with pytest.raises(FeedError, match=r"input 'x'.*elem_type 99 is not an ONNX tensor type"):
        ox.run(model)
    onnx.save(model, tmp_path / "m.onnx")
    assert main(["run", str(tmp_path / "m.onnx")]) == 2
    assert "elem_type 99" in capsys.readouterr().err


def test_huge_declared_or_bound_dims_are_refused_before_allocating(tmp_path, capsys):
    with pytest.raises(
        FeedError, match=r"input 'x' generated at float32\[1099511627776\].*4\.0 TB"
    ):
        ox.run(relu_model([1 << 40]))
    symbolic = relu_model(["batch", 4])
    with pytest.raises(FeedError, match=r"input 'x'.*\[99999999999, 4\]"):
        ox.run(symbolic, dims={"batch": 99999999999})
    onnx.save(symbolic, tmp_path / "m.onnx")
    assert main(["run", str(tmp_path / "m.onnx"), "--dims", "batch=99999999999"]) == 2
    assert "memory limit" in capsys.readouterr().err


def test_a_sequence_of_maps_passed_between_segments_is_typed():
    # ZipMap makes seq(map(int64, float)); read again in a later segment, the segment's
    # input was typed from value[0].dtype: AttributeError on a dict.
    nodes = [helper.make_node("ZipMap", ["x"], ["z"], domain="ai.onnx.ml",
                              classlabels_int64s=[0, 1, 2], name="zip")]  # fmt: skip
    nodes += [
        helper.make_node("Identity", [f"a{i}" if i else "x"], [f"a{i + 1}"]) for i in range(3)
    ]
    nodes.append(helper.make_node("SequenceLength", ["z"], ["n"], name="len"))
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info("n", I64, []), helper.make_tensor_value_info("a3", F, None)],
        opsets=(("", 17), ("ai.onnx.ml", 3)),
    )
    with pytest.raises(RunFailedError, match=r"node 'len' \(op SequenceLength\)") as caught:
        ox.run(model, segment_nodes=1)
    assert "z" in caught.value.result.tensors  # made, then refused by its reader


def test_an_npz_whose_header_declares_2_40_floats_is_a_feed_error(tmp_path):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (1 << 40,)}
    )
    path = tmp_path / "feeds.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", header.getvalue() + bytes(24))
    with pytest.raises(FeedError, match=r"array 'x' declares float32\[1099511627776\] = 4\.0 TB"):
        ox.run(relu_model(None), path)


# -- #14: a memory budget --------------------------------------------------------------------
def test_a_value_beyond_the_memory_limit_is_refused_before_the_run():
    with pytest.raises(MemoryLimitError, match=r"node 'big' \(op ConstantOfShape\).*float32\[536870912\] = 2\.0 GB"):  # fmt: skip
        ox.run(constant_of_shape(1 << 29))
    with pytest.raises(MemoryLimitError, match=r"memory_limit=1000000"):
        ox.run(constant_of_shape(1 << 20), memory_limit=1_000_000)
    assert ox.run(constant_of_shape(1 << 20), memory_limit=8 << 20).outputs["y"].size == 1 << 20


def test_sizes_known_only_at_run_time_meet_the_arena_cap():
    model = constant_of_shape(0, as_input=True)
    with pytest.raises(
        RunFailedError, match=r"node 'big'.*more memory than the run's memory limit"
    ):
        ox.run(model, {"s": np.array([1 << 29], np.int64)})
    assert ox.run(model, {"s": np.array([1000], np.int64)}).outputs["y"].shape == (1000,)


def test_the_refused_runs_stay_small_in_memory():
    # Peak RSS of a fresh process: the 150-byte ConstantOfShape [2^29] peaked at 4.2 GB.
    code = f"""
        import json, sys
        sys.path.insert(0, {str(ROOT / "tests" / "runs")!r})
        import numpy as np
        import onnx_explorer as ox
        from test_run_limits import constant_of_shape
        errors = []
        for model, feeds in ((constant_of_shape(1 << 29), None),
                             (constant_of_shape(0, as_input=True), {{"s": np.array([1 << 29])}})):
            try:
                ox.run(model, feeds)
            except ox.ExplorerError as exc:
                errors.append(type(exc).__name__)
        # The process's own peak (VmHWM): ru_maxrss survives exec, so a child of a big
        # pytest process would report pytest's peak.
        peak = next(int(line.split()[1]) for line in open("/proc/self/status")
                    if line.startswith("VmHWM:"))
        print(json.dumps([errors, peak]))
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    errors, peak_kib = json.loads(done.stdout.strip().splitlines()[-1])
    assert errors == ["MemoryLimitError", "RunFailedError"]
    assert peak_kib < 600 * 1024, f"peak RSS {peak_kib / 1024:.0f} MB"


def test_errors_are_the_projects_own():
    for error in (RunTimeoutError, MemoryLimitError):
        assert issubclass(error, RunError) and issubclass(error, ExplorerError)


# -- found by fuzz/harness_run.py --------------------------------------------------------------
def test_a_value_name_that_is_not_utf8_is_a_format_error():
    # protobuf hands an invalid UTF-8 string field over as bytes: the segment model's
    # ValueInfoProto(name=...) raised UnicodeDecodeError.
    model = _model(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["QQ", "y"])],
        [helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("y", F, None)],
    )
    data = model.SerializeToString().replace(b"QQ", b"\x88\x82")
    with pytest.raises(ModelFormatError, match="not UTF-8 text"):
        ox.run(data)
    named = relu_model(["batch", 2])  # an input's name: its feed was generated first
    named.graph.input[0].name = named.graph.node[0].input[0] = "XX"
    with pytest.raises(ModelFormatError, match="not UTF-8 text"):
        ox.run(named.SerializeToString().replace(b"XX", b"\xb8\xb8"))
    parsed = onnx.ModelProto()
    parsed.ParseFromString(data)
    with pytest.raises(ModelFormatError, match="not UTF-8 text"):
        ox.run(parsed)


def test_a_graph_name_that_is_not_utf8_does_not_stop_the_run():
    model = relu_model([2])
    model.graph.name = "GG"
    data = model.SerializeToString().replace(b"GG", b"\x80\x80")
    assert ox.run(data).outputs["y"].shape == (2,)


def test_a_loop_body_name_that_is_not_utf8_is_a_run_error():
    model = loop_model(BUSY_BODY, trips=2)
    loop = model.graph.node[2]
    body = loop.attribute[0].g
    body.input[0].name = "II"
    data = model.SerializeToString().replace(b"II", b"\xa0\xa0")
    with pytest.raises(RunFailedError, match="Loop body's names are not UTF-8 text") as caught:
        ox.run(data, {"x": np.ones(1, np.float32)})
    failure = caught.value.result.failure
    assert failure is not None and failure.node == "loop"


def test_one_worker_thread_makes_a_runs_calls_and_one_left_running_is_replaced(monkeypatch):
    """A run's onnxruntime calls share one thread; a call left running past the deadline
    keeps its thread (ended after it), the next call gets a new one, and close() ends it."""
    from onnx_explorer.runs import _limits

    monkeypatch.setattr(_limits, "STOP_GRACE", 0.05)
    worker, no_deadline, gate = _limits.Worker(), _limits.Limits(), threading.Event()
    first = _limits.call(threading.get_ident, no_deadline, None, worker)
    assert _limits.call(threading.get_ident, no_deadline, None, worker) == first
    with pytest.raises(_limits.Expired):
        _limits.call(lambda: gate.wait(5), _limits.Limits.start(0.05, None), None, worker)
    second = _limits.call(threading.get_ident, no_deadline, None, worker)
    assert second != first
    gate.set()
    worker.close()
    deadline = time.monotonic() + 5
    while {first, second} & {t.ident for t in threading.enumerate()}:
        assert time.monotonic() < deadline, "a worker thread did not end"
        time.sleep(0.01)
