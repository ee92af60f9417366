"""Drawing never blocks and never leaves an empty pane: background layout, budgets, fallbacks.

A stand-in ``dot`` put first on PATH plays the slow, crashing or garbage-printing
Graphviz; the real one draws the graphs that used to hang it.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from builders import mlp, nested_if, scoped_chain
from onnx import TensorProto, helper

import onnx_explorer as ox
from onnx_explorer.errors import GraphvizNotFoundError, RenderError
from onnx_explorer.samples import dense_blocks, frozen_tf1_graphdef
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._layout import ViewRequest, draw, plans
from onnx_explorer.views._render import live_processes

pytestmark = pytest.mark.graphviz

REAL_DOT = shutil.which("dot")


def _stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """Put a ``dot`` made of ``script`` (sh) first on PATH; it may call the real one."""
    folder = tmp_path / "bin"
    folder.mkdir()
    dot = folder / "dot"
    dot.write_text(f"#!/bin/sh\nREAL_DOT={REAL_DOT}\n{script}\n")
    dot.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("ONNX_EXPLORER_DOT", raising=False)
    return dot


def _wait_until(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


# -- the kernel never waits -----------------------------------------------------------------
def test_explore_and_select_return_at_once_while_a_slow_layout_runs(tmp_path, monkeypatch):
    _stand_in(tmp_path, monkeypatch, "exec sleep 30")
    started = time.monotonic()
    ex = ox.explore(scoped_chain(40))
    view = ex.graph_view
    assert time.monotonic() - started < 5
    assert view.busy and view.busy_since > 0  # the pane shows what is being laid out
    assert _wait_until(lambda: live_processes() >= 1)

    started = time.monotonic()
    ex.select("/enc/layer.33/Relu_5")
    assert time.monotonic() - started < 1.0
    assert ex.selected.name == "/enc/layer.33/Relu_5"  # the panels follow at once

    # Cancel (the button sends this message) kills dot and clears the busy state.
    view._on_message(view, {"event": "cancel"}, [])
    assert view.wait(10)
    assert _wait_until(lambda: live_processes() == 0)
    assert view.busy == "" and "cancelled" in view.error
    ex.close()


def test_a_newer_request_kills_the_stale_dot(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    _stand_in(tmp_path, monkeypatch, f'echo $$ >> "{pids}"; exec sleep 30')
    view = ox.explore(scoped_chain(40)).graph_view
    assert _wait_until(lambda: pids.exists() and pids.read_text().strip())
    first = int(pids.read_text().split()[0])
    view.expand("enc/layer.1")  # supersedes the first layout

    def gone(pid: int) -> bool:
        try:
            return "zombie" in Path(f"/proc/{pid}/status").read_text()
        except OSError:  # reaped (ENOENT, or ESRCH while reading)
            return True

    assert _wait_until(lambda: gone(first), 30)
    for k in range(2, 6):
        view.expand(f"enc/layer.{k}")
    assert _wait_until(lambda: live_processes() <= 2, 30)  # one request left (two modes)
    view.close()
    # A layout thread still building its DOT at close() starts dot and kills it at once.
    assert _wait_until(lambda: live_processes() == 0, 30)
    assert _wait_until(lambda: all(gone(int(pid)) for pid in pids.read_text().split()), 30)


def test_a_slow_plan_falls_back_to_a_cheaper_picture_with_a_note(tmp_path, monkeypatch):
    # dot is slow only on big inputs: the first plan times out, a smaller one draws.
    _stand_in(
        tmp_path,
        monkeypatch,
        "input=$(cat); if [ ${#input} -gt 6000 ]; then exec sleep 30; fi\n"
        'printf "%s" "$input" | exec "$REAL_DOT" "$@"',
    )
    model = ox.load(scoped_chain(40))
    drawing = draw(model.graph, model, ViewRequest(expanded=("enc/layer.3",)), budget=1.0)
    assert drawing.svg.startswith("<svg") and "<g id=" in drawing.svg
    assert drawing.simplified and drawing.simplified.startswith("Simplified to ")
    assert "took more than 1 s" in drawing.simplified
    assert _wait_until(lambda: live_processes() == 0)


def test_a_crashing_dot_gives_a_clear_error_and_the_explorer_keeps_working(tmp_path, monkeypatch):
    _stand_in(tmp_path, monkeypatch, 'echo "Error: Pshortestpath failed" >&2; kill -SEGV $$')
    ex = ox.explore(mlp())
    assert ex.graph_view.wait(30)
    assert ex.graph_view.svg == ""
    assert "Graphviz" in ex.graph_view.error and "Pshortestpath failed" in ex.graph_view.error
    ex.select("/layer1/Relu")  # the rest of the explorer still works
    assert ex.selected is not None and ex.attribute_panel.node is ex.selected


def test_garbage_from_dot_is_not_a_drawing(tmp_path, monkeypatch):
    _stand_in(tmp_path, monkeypatch, "cat >/dev/null; echo 'hello <b>world</b>'")
    model = ox.load(mlp())
    with pytest.raises(RenderError, match="no drawing"):
        draw(model.graph, model, ViewRequest(), budget=5)


def test_dot_crashing_in_one_ranking_mode_still_draws(tmp_path, monkeypatch):
    # The real-world "Pshortestpath failed" crash depends on the ranking mode. newrank runs
    # first; when it crashes, the plain ranking starts at once instead of after the stagger.
    _stand_in(
        tmp_path,
        monkeypatch,
        'case "$*" in *newrank*) ;; *) exec "$REAL_DOT" "$@";; esac\n'
        'echo "Error: Pshortestpath failed" >&2; kill -SEGV $$',
    )
    model = ox.load(scoped_chain(40))
    drawing = draw(model.graph, model, ViewRequest(expanded=("enc/layer.3",)))
    assert drawing.simplified is None and "cluster" in drawing.svg


def test_the_second_ranking_mode_starts_only_when_the_first_is_slow(tmp_path, monkeypatch):
    log = tmp_path / "runs.log"
    _stand_in(
        tmp_path,
        monkeypatch,
        f'echo "$(date +%s.%N) $*" >> "{log}"\n'
        'case "$*" in *newrank*) exec sleep 30;; esac\nexec "$REAL_DOT" "$@"',
    )
    model = ox.load(scoped_chain(40))
    drawing = draw(model.graph, model, ViewRequest(expanded=("enc/layer.3",)))
    assert "cluster" in drawing.svg
    runs = [line.split(" ", 1) for line in log.read_text().splitlines()]
    assert len(runs) == 2 and "newrank" in runs[0][1] and "newrank" not in runs[1][1]
    from onnx_explorer.views._render import STAGGER

    # staggered, not raced from the start
    assert float(runs[1][0]) - float(runs[0][0]) >= 0.8 * STAGGER
    assert _wait_until(lambda: live_processes() == 0)  # the slow plain one was killed


def test_the_next_layout_of_a_graph_starts_with_the_ranking_that_won(tmp_path, monkeypatch):
    # newrank hangs on this graph: the first layout waits the stagger for the plain ranking;
    # opening another scope starts with the plain one and never needs newrank.
    log = tmp_path / "runs.log"
    _stand_in(
        tmp_path,
        monkeypatch,
        f'echo "$*" >> "{log}"\n'
        'case "$*" in *newrank*) exec sleep 30;; esac\nexec "$REAL_DOT" "$@"',
    )
    model = ox.load(scoped_chain(40))
    draw(model.graph, model, ViewRequest(expanded=("enc/layer.3",)))
    assert ["newrank" in line for line in log.read_text().splitlines()] == [True, False]
    drawing = draw(model.graph, model, ViewRequest(expanded=("enc/layer.3", "enc/layer.5")))
    assert "cluster" in drawing.svg
    assert ["newrank" in line for line in log.read_text().splitlines()] == [True, False, False]
    assert _wait_until(lambda: live_processes() == 0)


def test_a_quick_layout_never_starts_the_second_ranking_mode(tmp_path, monkeypatch):
    log = tmp_path / "runs.log"
    _stand_in(tmp_path, monkeypatch, f'echo "$*" >> "{log}"\nexec "$REAL_DOT" "$@"')
    model = ox.load(scoped_chain(4, per_layer=3))
    draw(model.graph, model, ViewRequest(expanded=("enc/layer.1",)))
    assert len(log.read_text().splitlines()) == 1


def test_no_new_dot_starts_once_python_is_exiting(monkeypatch):
    from onnx_explorer import _children
    from onnx_explorer.errors import LayoutCancelledError

    monkeypatch.setattr(_children, "_SHUTTING_DOWN", True)
    model = ox.load(mlp())
    with pytest.raises(LayoutCancelledError):
        draw(model.graph, model, ViewRequest())


def test_missing_graphviz_says_how_to_install_it(monkeypatch):
    monkeypatch.setenv("ONNX_EXPLORER_DOT", "no-such-dot")
    model = ox.load(mlp())
    with pytest.raises(GraphvizNotFoundError, match="apt-get install graphviz"):
        draw(model.graph, model, ViewRequest())


# -- graphs that used to hang Graphviz ------------------------------------------------------
def test_control_edges_into_one_noop_are_hidden_and_the_graph_draws_fast():
    model = ox.load(frozen_tf1_graphdef())
    started = time.monotonic()
    drawing = draw(model.graph, model, ViewRequest(), budget=20)
    assert time.monotonic() - started < 10  # measured: 50 s with the edges, 0.05 s without
    assert drawing.simplified is None
    assert drawing.result.control_hidden == 85
    assert any("85 control-dependency edges hidden" in note for note in drawing.result.notes)
    assert "arrowhead=odot" not in drawing.result.source


def test_control_edges_on_request_are_bundled_and_do_not_shape_the_layout():
    model = ox.load(frozen_tf1_graphdef(blocks=2, batch_norm_ops=2))
    result = build_dot(model.graph, model, control_edges="show", expanded=[])
    control = [line for line in result.source.splitlines() if "arrowhead=odot" in line]
    assert control and all("constraint=false" in line for line in control)
    # Eight Mul ops in one collapsed scope box → one bundled edge labelled with its count.
    assert any('label="8"' in line for line in control)


def test_a_layout_that_is_slow_in_one_ranking_mode_draws_in_the_other():
    model = ox.load(dense_blocks())
    drawing = draw(model.graph, model, ViewRequest(), budget=20)
    assert drawing.simplified is None and drawing.svg.startswith("<svg")
    assert drawing.seconds < 20
    assert _wait_until(lambda: live_processes() == 0)  # the losing variant was killed


def test_plans_end_with_the_neighbourhood_of_the_inputs():
    model = ox.load(frozen_tf1_graphdef())
    steps = [what for what, _plan in plans(model.graph, ViewRequest(control_edges="show"))]
    assert steps[0] is None
    assert steps[1] == "control-dependency edges hidden"
    assert steps[-1] == "only the neighbourhood of the graph inputs"


# -- selection ------------------------------------------------------------------------------
def test_selecting_a_drawn_node_never_runs_dot_again():
    view = ox.explore(scoped_chain(3, per_layer=5)).graph_view
    assert view.wait(60)
    version = view.version
    view.selected = "/enc/layer.0/Relu_3"
    assert view.busy == "" and view.version == version
    assert view.ids[view.highlight_id]["name"] == "/enc/layer.0/Relu_3"


def test_selecting_a_hidden_node_lays_out_once():
    view = ox.explore(scoped_chain(40)).graph_view
    assert view.wait(60)
    version = view.version
    view.selected = "/enc/layer.37/Relu_59"
    assert view.wait(60)
    assert view.version == version + 1
    assert view.ids[view.highlight_id]["name"] == "/enc/layer.37/Relu_59"


def test_a_click_made_on_an_old_drawing_is_ignored():
    view = ox.explore(scoped_chain(40)).graph_view
    assert view.wait(60)
    stale_version = view.version
    node_id = next(k for k, v in view.ids.items() if v["kind"] == "node")
    view.expand("enc/layer.5")
    assert view.wait(60) and view.version > stale_version
    selected = view.selected
    view._on_message(view, {"event": "click", "id": node_id, "version": stale_version}, [])
    assert view.selected == selected


# -- control flow ---------------------------------------------------------------------------
def test_both_if_branches_open_from_the_graph():
    model = ox.load(nested_if(2))
    view = ox.explore(model).graph_view
    assert view.wait(60)
    cells = {v["label"]: k for k, v in view.ids.items() if v["kind"] == "body"}
    assert set(cells) == {"then_branch", "else_branch"}
    assert f'id="a_{cells["else_branch"]}"' in view.svg
    view.click(cells["else_branch"], double=True)
    assert view.graph_path == "/If/else_branch"
    assert view.wait(60) and view.svg.startswith("<svg")


def _if_reading_outer_values():
    then_body = helper.make_graph(
        [helper.make_node("Add", ["scaled", "bias"], ["t"], name="then_add")],
        "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    else_body = helper.make_graph(
        [helper.make_node("Mul", ["scaled", "undefined_name"], ["e"], name="else_mul")],
        "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["scaled"], name="relu"),
            helper.make_node(
                "If", ["cond"], ["y"], name="branch", then_branch=then_body, else_branch=else_body
            ),
        ],
        "g",
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("bias", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_names_a_body_reads_from_outside_are_connected():
    model = ox.load(_if_reading_outer_values())
    result = build_dot(model.graph, model)
    ids = {v.get("name"): k for k, v in result.ids.items()}
    edges = [line for line in result.source.splitlines() if " -> " in line]
    # "bias" is a graph input used only inside then_branch: no longer left unconnected.
    assert any(line.startswith(f"{ids['bias']} -> {ids['branch']} ") for line in edges)
    assert any(
        line.startswith(f"{ids['relu']} -> {ids['branch']} ") and "style=dashed" in line
        for line in edges
    )
    # A name defined nowhere is a dangling outer input, not an exception.
    outer = [k for k, v in result.ids.items() if v["kind"] == "outer"]
    assert [result.ids[k]["name"] for k in outer] == ["undefined_name"]
    # Inside the body the captured names are outer inputs.
    body = build_dot(model.graph_at("/branch/else_branch"), model)
    names = {v["name"] for v in body.ids.values() if v["kind"] == "outer"}
    assert names == {"scaled", "undefined_name"}


def test_no_dot_outlives_the_python_process(tmp_path, monkeypatch):
    # A kernel that shuts down (atexit) takes its running layouts with it.
    import subprocess
    import sys

    pid_file = tmp_path / "dot.pid"
    _stand_in(tmp_path, monkeypatch, f'echo $$ > "{pid_file}"; exec sleep 30')
    code = (
        "import time, onnx_explorer as ox\n"
        "from onnx_explorer.samples import tiny_cnn\n"
        "view = ox.explore(tiny_cnn()).graph_view\n"
        f"while not __import__('os').path.exists({str(pid_file)!r}): time.sleep(0.02)\n"
        "time.sleep(0.2)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    pid = int(pid_file.read_text())

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A zombie waits for its parent (already gone) to be reaped by init.
        status = Path(f"/proc/{pid}/status")
        return status.exists() and "zombie" in status.read_text()

    assert _wait_until(gone, 10)


# -- races between the layout thread and the user ----------------------------------------------
def test_a_node_whose_scope_cannot_open_is_shown_in_its_neighbourhood_instead():
    # Two big scopes and a small max_nodes: opening the one holding the node is refused.
    view = ox.explore(scoped_chain(2, per_layer=150), max_nodes=120).graph_view
    assert view.wait(60)
    view.selected = "/enc/layer.1/Relu_77"
    assert view.wait(60)  # returns: no endless re-layout
    assert view.focus_node == "/enc/layer.1/Relu_77"
    assert view.ids[view.highlight_id]["name"] == "/enc/layer.1/Relu_77"
    versions = view.version
    time.sleep(0.3)
    assert view.version == versions and view.busy == ""


def test_a_click_on_the_old_graph_after_opening_a_body_is_ignored():
    model = ox.load(nested_if(2))
    view = ox.explore(model).graph_view
    assert view.wait(60)
    if_id = next(k for k, v in view.ids.items() if v.get("name") == "/If")
    version = view.version
    view.open_body("/If/then_branch")  # the body's drawing is on its way
    view._on_message(view, {"event": "click", "id": if_id, "version": version}, [])
    assert view.selected == ""  # nothing of the body was selected by the stale id
    assert view.wait(60) and view.graph_path == "/If/then_branch"


def test_a_selection_made_while_dot_runs_is_highlighted_and_survives_cancel(tmp_path, monkeypatch):
    ex = ox.explore(scoped_chain(3, per_layer=5))
    view = ex.graph_view
    assert view.wait(60)
    _stand_in(tmp_path, monkeypatch, "exec sleep 30")
    view.show_control_edges(True)  # any redraw: it now hangs in the stand-in
    assert _wait_until(lambda: live_processes() >= 1)
    ex.select("/enc/layer.0/Relu_3")  # drawn in the picture on screen
    assert view.ids[view.highlight_id]["name"] == "/enc/layer.0/Relu_3"
    view.cancel()
    assert view.wait(10) and view.busy == ""
    assert view.ids[view.highlight_id]["name"] == "/enc/layer.0/Relu_3"


def test_names_with_backslashes_and_control_characters_stay_text_and_stay_usable():
    from onnx_explorer.views._statements import body_cells_label

    label = body_cells_label(["op \\N\\G"], [("n0_b0", "x\\L<b>")])
    assert "op \\\\N\\\\G" in label and "x\\\\L&lt;b&gt;" in label
    # An If whose name holds a control character still opens from its cell.
    model_proto = nested_if(1)
    model_proto.graph.node[0].name = "/If\x01odd"
    model = ox.load(model_proto)
    view = ox.explore(model).graph_view
    assert view.wait(60)
    cell = next(
        k for k, v in view.ids.items() if v["kind"] == "body" and v["label"] == "else_branch"
    )
    view.click(cell, double=True)
    assert view.graph is model.graph_at(view.graph_path)
    assert view.wait(60) and view.svg.startswith("<svg")
