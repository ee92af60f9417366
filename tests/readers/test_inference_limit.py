"""Shape inference runs in a child process with a time limit: a model that makes
``onnx.shape_inference`` loop for ever still draws, without inferred shapes, with a note.

The child is one long-lived worker per Python process (POSIX), reused by every request;
an idle worker may outlive a test, so tests that count processes allow it and
``stop_worker()`` ends it where a test needs none.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

import onnx_explorer as ox
from onnx_explorer.readers.onnx import _inference_child as inference_child
from onnx_explorer.readers.onnx._inference_child import (
    infer_in_child,
    live_children,
    stop_worker,
    warm_up,
    worker_pid,
)
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._edge_types import inferred_types
from onnx_explorer.widgets._explorer import Explorer

HANG_GUARD = 60  # seconds: anything slower is the hang this file is about
HOSTILE_EQUATION = "...ij..."  # two ellipses in one operand of a ranked input: onnx loops
TIMED_OUT = "timed out after 1 s"


def _einsum_model(equation: str) -> onnx.ModelProto:
    """x (7×11×13) → Relu → r → Einsum(equation) → y; r's shape is known only by inference."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Einsum", ["r"], ["y"], equation=equation, name="einsum"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7, 11, 13])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _relu_to_einsum_edge(source: str) -> str:
    (line,) = [line for line in source.splitlines() if line.startswith("n0 -> n1")]
    return line


def _inference_processes() -> list[int]:
    """Pids of inference children of this process still in the process table."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"inference_child" in cmdline:
            found.append(int(entry.name))
    return found


def _assert_at_most_the_idle_worker_left():
    pid = worker_pid()
    assert live_children() == (pid is not None)
    if sys.platform.startswith("linux"):  # killed and reaped, not left as zombies
        assert _inference_processes() == ([pid] if pid is not None else [])
    stop_worker()
    assert live_children() == 0 and worker_pid() is None
    if sys.platform.startswith("linux"):
        assert _inference_processes() == []


@pytest.fixture
def one_second_limit(monkeypatch):
    monkeypatch.setattr(inference_child, "INFERENCE_TIME_LIMIT", 1.0)
    yield
    _assert_at_most_the_idle_worker_left()


needs_worker = pytest.mark.skipif(
    not inference_child._CAN_WAIT_ON_PIPES,
    reason="one child per request where pipes cannot be selected",
)


def _within_guard(call):
    started = time.monotonic()
    result = call()
    assert time.monotonic() - started < HANG_GUARD, "shape inference hung the caller"
    return result


def test_hostile_einsum_still_draws_without_inferred_shapes(tmp_path):
    # In a Python of its own: were inference run in-process, this would loop for ever
    # holding the GIL, and only a process can be given up on.
    path = tmp_path / "hostile.onnx"
    onnx.save(_einsum_model(HOSTILE_EQUATION), path)
    script = textwrap.dedent(
        f"""
        import json
        import onnx_explorer as ox
        from onnx_explorer.readers.onnx import _inference_child as inference_child
        from onnx_explorer.views._drawing import build_dot

        inference_child.INFERENCE_TIME_LIMIT = 1.0
        model = ox.load({str(path)!r})
        source = model.graph.to_dot()
        notes = build_dot(model.graph, model).notes  # cached: no second wait
        print(json.dumps({{"source": source, "notes": notes,
                          "live": inference_child.live_children()}}))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert "label=" not in _relu_to_einsum_edge(out["source"])  # no inferred shape on r
    assert "float32 7×11×13" in out["source"]  # the file's own shape of x is still drawn
    assert any(TIMED_OUT in note and "file only" in note for note in out["notes"])
    assert out["live"] == 0


@pytest.mark.graphviz
def test_hostile_einsum_renders_svg(one_second_limit):
    model = ox.load(_einsum_model(HOSTILE_EQUATION))
    svg = _within_guard(model.graph.render_svg)
    assert svg.startswith("<svg") and "Einsum" in svg
    assert "7×11×13" in svg and "7×13×11" not in svg


@pytest.mark.graphviz
def test_hostile_einsum_in_the_explorer_shows_the_note(one_second_limit):
    ex = _within_guard(lambda: Explorer(ox.load(_einsum_model(HOSTILE_EQUATION))))
    try:
        _within_guard(lambda: ex.select("einsum"))  # the panel waits for the same child
        assert ex.graph_view.wait(HANG_GUARD)
        assert ex.graph_view.svg.startswith("<svg") and not ex.graph_view.error
        assert any(TIMED_OUT in note for note in ex.graph_view.notes)
        panel_text = "".join(getattr(w, "value", "") for w in ex.attribute_panel.children)
        assert TIMED_OUT in panel_text
    finally:
        ex.close()


def test_normal_models_get_their_shapes_from_the_child(one_second_limit, monkeypatch):
    def in_this_process(*args, **kwargs):
        raise AssertionError("shape inference ran in the kernel's own process")

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", in_this_process)
    monkeypatch.setattr(inference_child, "INFERENCE_TIME_LIMIT", float(HANG_GUARD))  # busy CI
    model = ox.load(_einsum_model("...ij->...ji"))
    result = build_dot(model.graph, model)
    assert 'label="float32 7×11×13"' in _relu_to_einsum_edge(result.source)
    assert "float32 7×13×11" in result.source  # y, the Einsum's inferred output
    assert not any("shape" in note for note in result.notes)


def test_one_model_is_inferred_once_however_many_threads_ask(one_second_limit, monkeypatch):
    started: list[int] = []

    def counting(data, time_limit=None, data_prop=False):
        started.append(1)
        return infer_in_child(data, time_limit, data_prop=data_prop)

    monkeypatch.setattr(inference_child, "infer_in_child", counting)
    model = ox.load(_einsum_model(HOSTILE_EQUATION))
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(inferred_types(model))) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG_GUARD)
    assert len(results) == 3 and len({id(r) for r in results}) == 1
    assert TIMED_OUT in (results[0].error or "")
    assert len(started) == 1


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")
def test_interrupting_the_caller_kills_the_child(monkeypatch):
    monkeypatch.setattr(inference_child, "INFERENCE_TIME_LIMIT", float(HANG_GUARD))
    main = threading.get_ident()
    data = _einsum_model(HOSTILE_EQUATION).SerializeToString()
    assert infer_in_child(_normal()).inferred is not None  # a worker is up and idle
    worker = worker_pid()
    interrupt = threading.Timer(1.0, signal.pthread_kill, (main, signal.SIGINT))
    interrupt.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):  # what Ctrl-C / "interrupt kernel" does
            infer_in_child(data)
    finally:
        interrupt.cancel()
    assert time.monotonic() - started < HANG_GUARD / 2
    assert live_children() == 0 and worker_pid() is None
    if sys.platform.startswith("linux"):
        assert _inference_processes() == []
    if worker is not None:
        assert not _alive(worker)
    assert infer_in_child(_normal()).inferred is not None  # and the next request works
    stop_worker()


def test_children_are_killed_when_python_exits(tmp_path):
    # A kernel that shuts down while a layout thread waits for inference leaves no child.
    path = tmp_path / "hostile.onnx"
    onnx.save(_einsum_model(HOSTILE_EQUATION), path)
    script = textwrap.dedent(
        f"""
        import threading, time
        import onnx_explorer as ox
        from onnx_explorer import _children
        from onnx_explorer.readers.onnx import _inference_child as inference_child
        from onnx_explorer.views._edge_types import inferred_types

        model = ox.load({str(path)!r})
        threading.Thread(target=inferred_types, args=(model,), daemon=True).start()
        while inference_child.live_children() == 0:
            time.sleep(0.05)
        print(_children.processes("inference")[0].pid, flush=True)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert run.returncode == 0, run.stderr
    pid = int(run.stdout.strip())
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)


def test_without_select_on_pipes_each_request_has_a_child_of_its_own(monkeypatch):
    # Windows cannot wait on a pipe with a deadline: one child per request, as before.
    monkeypatch.setattr(inference_child, "_CAN_WAIT_ON_PIPES", False)
    stop_worker()
    assert _shape_of_y(infer_in_child(_normal(), float(HANG_GUARD))) == [7, 13, 11]
    hostile = _einsum_model(HOSTILE_EQUATION).SerializeToString()
    outcome = _within_guard(lambda: infer_in_child(hostile, 1.0))
    assert outcome.inferred is None and TIMED_OUT in (outcome.error or "")
    failed = infer_in_child(b"not a model", float(HANG_GUARD))
    assert failed.inferred is None and "ONNX shape inference failed" in (failed.error or "")
    warm_up()  # starts no worker there
    assert worker_pid() is None and live_children() == 0
    if sys.platform.startswith("linux"):
        assert _inference_processes() == []


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    if stat.exists():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# -- the reused worker -------------------------------------------------------------------
def _normal() -> bytes:
    return _einsum_model("...ij->...ji").SerializeToString()


def _shape_of_y(outcome) -> list[int]:
    assert outcome.error is None and outcome.inferred is not None
    inferred = onnx.ModelProto.FromString(outcome.inferred)
    (y,) = inferred.graph.output
    return [d.dim_value for d in y.type.tensor_type.shape.dim]


def _wait_until_dead(pid: int) -> None:
    deadline = time.monotonic() + HANG_GUARD / 2
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


@needs_worker
def test_inferences_reuse_one_worker(one_second_limit, monkeypatch):
    monkeypatch.setattr(inference_child, "INFERENCE_TIME_LIMIT", float(HANG_GUARD))  # busy CI
    assert _shape_of_y(infer_in_child(_normal())) == [7, 13, 11]
    pid = worker_pid()
    assert pid is not None
    results = []
    callers = [  # concurrent callers queue for the one worker
        threading.Thread(target=lambda: results.append(infer_in_child(_normal()))) for _ in range(3)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(HANG_GUARD)
    assert [_shape_of_y(r) for r in results] == [[7, 13, 11]] * 3
    assert worker_pid() == pid and live_children() == 1
    failed = infer_in_child(b"not a model")  # said why, and the worker stays
    assert failed.inferred is None and "ONNX shape inference failed" in (failed.error or "")
    assert worker_pid() == pid


@needs_worker
def test_warm_up_starts_the_worker_the_next_inference_uses(one_second_limit, monkeypatch):
    monkeypatch.setattr(inference_child, "INFERENCE_TIME_LIMIT", float(HANG_GUARD))
    stop_worker()
    warm_up()  # returns at once: the worker imports onnx in the background
    pid = worker_pid()
    assert pid is not None
    warm_up()  # a second call starts nothing more
    assert worker_pid() == pid and live_children() == 1
    assert _shape_of_y(infer_in_child(_normal())) == [7, 13, 11]
    assert worker_pid() == pid


@needs_worker
def test_a_timeout_kills_the_worker_and_the_next_request_starts_a_new_one(one_second_limit):
    assert _shape_of_y(infer_in_child(_normal(), float(HANG_GUARD))) == [7, 13, 11]
    first = worker_pid()
    assert first is not None
    hostile = _einsum_model(HOSTILE_EQUATION).SerializeToString()
    outcome = _within_guard(lambda: infer_in_child(hostile))
    assert outcome.inferred is None and TIMED_OUT in (outcome.error or "")
    assert worker_pid() is None and live_children() == 0 and not _alive(first)
    assert _shape_of_y(infer_in_child(_normal(), float(HANG_GUARD))) == [7, 13, 11]
    assert worker_pid() not in (None, first)


@needs_worker
def test_a_worker_that_died_between_requests_is_replaced(one_second_limit, monkeypatch):
    monkeypatch.setattr(inference_child, "INFERENCE_TIME_LIMIT", float(HANG_GUARD))
    infer_in_child(_normal())
    first = worker_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)  # the OOM killer, a user's kill, ...
    _wait_until_dead(first)
    assert _shape_of_y(infer_in_child(_normal())) == [7, 13, 11]
    assert worker_pid() not in (None, first)


@needs_worker
def test_a_worker_that_ends_as_a_request_is_written_is_replaced(one_second_limit, monkeypatch):
    # The race with the idle timeout: the worker looked alive, but the request meets a
    # closed pipe. It is sent once more, to a fresh worker.
    monkeypatch.setattr(inference_child, "INFERENCE_TIME_LIMIT", float(HANG_GUARD))
    infer_in_child(_normal())
    worker = inference_child._WORKER
    assert worker is not None
    first = worker.pid
    os.kill(first, signal.SIGKILL)
    _wait_until_dead(first)
    monkeypatch.setattr(worker, "poll", lambda: None)  # still looks alive when checked
    assert _shape_of_y(infer_in_child(_normal())) == [7, 13, 11]
    assert worker_pid() not in (None, first)


@needs_worker
def test_an_idle_worker_ends_and_the_next_request_starts_a_new_one(one_second_limit, monkeypatch):
    monkeypatch.setattr(inference_child, "INFERENCE_TIME_LIMIT", float(HANG_GUARD))
    monkeypatch.setattr(inference_child, "WORKER_IDLE_TIMEOUT", 0.5)
    stop_worker()
    infer_in_child(_normal())
    first = worker_pid()
    assert first is not None
    _wait_until_dead(first)
    assert _shape_of_y(infer_in_child(_normal())) == [7, 13, 11]
    assert worker_pid() not in (None, first)


@needs_worker
def test_the_worker_ends_when_its_parent_dies_without_killing_it():
    # Killed outright, the parent runs no atexit: the worker sees its stdin close.
    script = textwrap.dedent(
        """
        import os, signal
        from onnx_explorer.readers.onnx import _inference_child as inference_child

        inference_child.warm_up()
        print(inference_child.worker_pid(), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_GUARD
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    _wait_until_dead(int(run.stdout.strip()))


@needs_worker
@pytest.mark.skipif(not hasattr(signal, "alarm"), reason="no SIGALRM on this platform")
def test_a_worker_orphaned_in_an_endless_inference_ends_by_itself():
    # Its parent died while it looped, and something else holds its stdin open: the
    # alarm armed for the request still ends it.
    data = _einsum_model(HOSTILE_EQUATION).SerializeToString()
    worker = subprocess.Popen(
        [sys.executable, "-m", "onnx_explorer.readers.onnx._inference_child", "--serve", "60"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert worker.stdin is not None
        worker.stdin.write(inference_child._REQUEST.pack(0.5, len(data), False) + data)
        worker.stdin.flush()
        assert worker.wait(HANG_GUARD) == -signal.SIGALRM
    finally:
        worker.kill()
        worker.wait()
        assert worker.stdin is not None
        worker.stdin.close()
