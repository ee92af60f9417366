"""Shape inference runs in a child process with a time limit: a model that makes
``onnx.shape_inference`` loop for ever still draws, without inferred shapes, with a note."""

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
from onnx_explorer.readers import inference_child
from onnx_explorer.readers.inference_child import infer_in_child, live_children
from onnx_explorer.views.dot import build_dot
from onnx_explorer.views.shapes import inferred_types
from onnx_explorer.widgets.explorer import Explorer

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


@pytest.fixture
def one_second_limit(monkeypatch):
    monkeypatch.setattr(inference_child, "INFERENCE_TIME_LIMIT", 1.0)
    yield
    assert live_children() == 0
    if sys.platform.startswith("linux"):
        assert _inference_processes() == []  # killed and reaped, not left as zombies


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
        from onnx_explorer.readers import inference_child
        from onnx_explorer.views.dot import build_dot

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

    def counting(data, time_limit=None):
        started.append(1)
        return infer_in_child(data, time_limit)

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
    interrupt = threading.Timer(1.0, signal.pthread_kill, (main, signal.SIGINT))
    interrupt.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):  # what Ctrl-C / "interrupt kernel" does
            infer_in_child(data)
    finally:
        interrupt.cancel()
    assert time.monotonic() - started < HANG_GUARD / 2
    assert live_children() == 0
    if sys.platform.startswith("linux"):
        assert _inference_processes() == []


def test_children_are_killed_when_python_exits(tmp_path):
    # A kernel that shuts down while a layout thread waits for inference leaves no child.
    path = tmp_path / "hostile.onnx"
    onnx.save(_einsum_model(HOSTILE_EQUATION), path)
    script = textwrap.dedent(
        f"""
        import threading, time
        import onnx_explorer as ox
        from onnx_explorer.readers import inference_child
        from onnx_explorer.views.shapes import inferred_types

        model = ox.load({str(path)!r})
        threading.Thread(target=inferred_types, args=(model,), daemon=True).start()
        while not inference_child._LIVE:
            time.sleep(0.05)
        print(next(iter(inference_child._LIVE)).pid, flush=True)
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


def test_an_orphaned_child_ends_by_itself():
    # Were its parent killed outright, the child's own alarm still ends the endless loop.
    data = _einsum_model(HOSTILE_EQUATION).SerializeToString()
    if not hasattr(signal, "alarm"):
        pytest.skip("no SIGALRM on this platform")
    run = subprocess.run(
        [sys.executable, "-m", "onnx_explorer.readers.inference_child", "0.5"],
        input=data, capture_output=True, timeout=HANG_GUARD,
    )  # fmt: skip
    assert run.returncode == -signal.SIGALRM


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
