"""Colouring the graph by a number: MACs, parameters, bytes, latencies, any mapping.

A user calls ``ex.overlay("macs")`` (or hands a dict / pandas Series, or an onnxruntime
profile) and sees the boxes filled on a colour scale with a colour bar, collapsed scopes
showing their sum, the value in the node list (sortable) and in the attribute panel.
Changing the colours repaints the drawing in place: no new layout.
"""

from __future__ import annotations

import json
import re
import sys
import threading

import numpy as np
import pytest
from builders import scoped_chain
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.metrics import metrics
from onnx_explorer.views._colour_scale import (
    checked_values,
    colour_at,
    colour_scale_overlay,
    scope_totals,
)
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._render import svg_from_result
from onnx_explorer.views._repaint import repaint_svg
from onnx_explorer.views._text import overlay_value_text as value_text
from onnx_explorer.widgets import _graph_view as graph_view_module
from onnx_explorer.widgets._explorer import Explorer

WHITE = "#ffffff"


def _mlp(layers: int = 3, width: int = 8) -> ox.Model:
    """``/enc/layer.<i>/MatMul`` (a width×width weight) then ``/enc/layer.<i>/Relu``."""
    nodes, inits, prev = [], [], "x"
    rng = np.random.default_rng(0)
    for i in range(layers):
        w = numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32), f"w{i}")
        inits.append(w)
        nodes.append(
            helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"/enc/layer.{i}/MatMul")
        )
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"/enc/layer.{i}/Relu"))
        prev = f"r{i}"
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, width])], inits,
    )  # fmt: skip
    return ox.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def _luminance(colour: str) -> float:
    r, g, b = (int(colour[k : k + 2], 16) for k in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _fill_of(svg: str, ids: dict, key: str, value: str) -> str | None:
    """The fill Graphviz wrote for the drawn box whose id entry has ``key`` == ``value``."""
    item = next((k for k, v in ids.items() if v.get(key) == value), None)
    if item is None:
        return None
    group = re.search(rf'<g id="{item}" class="node">(.*?)</g>', svg, re.S)
    assert group, item
    fill = re.search(r'fill="([^"]+)"', group.group(1))
    return fill.group(1) if fill else None


def _drawn(ex: Explorer) -> Explorer:
    assert ex.graph_view.wait(60), "the layout did not finish in 60 s"
    assert not ex.graph_view.error, ex.graph_view.error
    return ex


# -- the scale ----------------------------------------------------------------------------
def test_larger_values_get_darker_fills_and_missing_values_stay_plain():
    model = ox.load(scoped_chain(1, 4))
    names = [n.name for n in model.graph.nodes]
    overlay = colour_scale_overlay(
        {names[0]: 1, names[1]: 50, names[2]: 100}, model.graph, name="macs"
    )
    fills = [overlay.styles[n] for n in names]
    assert _luminance(fills[0]) > _luminance(fills[1]) > _luminance(fills[2])
    assert fills[3] == WHITE  # no value: plain
    assert overlay.titles[names[2]] == "macs: 100"
    assert overlay.titles[names[3]] == "macs: no value"
    assert overlay.scale is not None and overlay.scale.title == "macs"
    assert (overlay.scale.low, overlay.scale.high) == ("1", "100")
    assert "1 nodes without a value" in overlay.scale.note


def _relative_luminance(rgb: list[float]) -> float:
    lin = [
        c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb
    ]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _dark_theme(rgb: list[float]) -> list[float]:
    """What graph_view.css's ``invert(0.88) hue-rotate(180deg)`` makes of a colour."""
    v = [255 * 0.88 + c * (1 - 2 * 0.88) for c in rgb]
    matrix = [(-0.574, 1.43, 0.144), (0.426, 0.43, 0.144), (0.426, 1.43, -0.856)]  # 180°
    return [min(255.0, max(0.0, sum(m * c for m, c in zip(row, v, strict=True)))) for row in matrix]


def _contrast(a: list[float], b: list[float]) -> float:
    high, low = sorted((_relative_luminance(a), _relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("t", [0.0, 0.5, 1.0])
def test_text_stays_readable_on_every_fill_in_both_themes(t):
    fill = colour_at(t)
    rgb = [float(int(fill[k : k + 2], 16)) for k in (1, 3, 5)]
    text = [0.0, 0.0, 0.0]  # Graphviz's black labels
    assert _contrast(rgb, text) > 4.5  # WCAG AA
    assert _contrast(_dark_theme(rgb), _dark_theme(text)) > 4.5


def test_log_scale_spreads_orders_of_magnitude_and_leaves_zeros_plain():
    model = ox.load(scoped_chain(1, 4))
    names = [n.name for n in model.graph.nodes]
    values = {names[0]: 1, names[1]: 10, names[2]: 100, names[3]: 0}
    log = colour_scale_overlay(values, model.graph, log=True)
    linear = colour_scale_overlay(values, model.graph)
    assert log.styles[names[1]] == colour_at(0.5)  # 10 lies halfway between 1 and 100
    assert linear.styles[names[1]] == colour_at(10 / 100)
    assert log.styles[names[3]] == WHITE and linear.styles[names[3]] == colour_at(0.0)
    assert log.scale is not None and log.scale.title.endswith("(log)")


def test_collapsed_scopes_show_the_sum_or_the_max_of_their_nodes():
    model = ox.load(scoped_chain(2, 3))
    values = {node.name: float(node.index + 1) for node in model.graph.nodes}  # 1 … 6
    assert scope_totals(model.graph, values) == {"enc": 21, "enc/layer.0": 6, "enc/layer.1": 15}
    assert scope_totals(model.graph, values, "max")["enc/layer.1"] == 6
    overlay = colour_scale_overlay(values, model.graph, name="macs", reduce="sum")
    result = build_dot(model.graph, model, expanded=["enc"], overlay=overlay)
    box = next(k for k, v in result.ids.items() if v.get("path") == "enc/layer.1")
    statement = next(line for line in result.source.splitlines() if line.startswith(f"{box} ["))
    assert f'fillcolor="{overlay.scope_styles["enc/layer.1"]}"' in statement
    assert "Σ macs: 15" in statement
    assert result.titles[box].endswith("Σ macs: 15")
    assert colour_scale_overlay(values, model.graph, reduce="max").scope_titles["enc/layer.1"] == (
        "max value: 6"
    )
    with pytest.raises(ValueError, match="reduce"):
        colour_scale_overlay(values, model.graph, reduce="mean")  # type: ignore[arg-type]


def test_values_that_are_not_numbers_are_refused_naming_the_first_bad_node():
    with pytest.raises(ValueError, match="'/b'.*'many'"):
        checked_values({"/a": 1, "/b": "many", "/c": "x"})
    with pytest.raises(ValueError, match="'/a'"):
        checked_values({"/a": True})
    with pytest.raises(ValueError, match="≥ 0"):
        checked_values({"/a": -1.0})
    with pytest.raises(ValueError, match="≥ 0"):
        checked_values({"/a": float("-inf")})
    with pytest.raises(TypeError):
        checked_values([1, 2, 3])
    assert checked_values({"/a": None, "/b": float("nan"), "/c": np.int64(3)}) == {
        "/a": None, "/b": None, "/c": 3.0,
    }  # fmt: skip


def test_an_infinite_value_is_painted_at_the_top_of_the_scale():
    # compare's "error vs other" is inf where one side overflowed: the worst, not an error
    model = ox.load(scoped_chain(1, 3))
    names = [n.name for n in model.graph.nodes]
    overlay = colour_scale_overlay(
        {names[0]: 1.0, names[1]: 2.0, names[2]: float("inf")}, model.graph, name="error"
    )
    assert overlay.styles[names[2]] == colour_at(1.0)
    assert overlay.styles[names[1]] == colour_at(1.0)  # the largest finite value: the top too
    assert overlay.styles[names[0]] == colour_at(0.0)
    assert value_text(float("inf"), "error") == "∞"


def test_values_read_in_human_units():
    assert value_text(2_500_000, "macs") == "2.5M"
    assert value_text(3 * 1024**2, "activation_bytes") == "3.0 MB"
    assert value_text(0.1234, "latency ms") == "0.123 ms"
    assert value_text(None, "macs") == "no value"


@pytest.mark.graphviz
def test_repainting_rewrites_fills_and_titles_and_back_again():
    model = ox.load(scoped_chain(1, 3))
    names = [n.name for n in model.graph.nodes]
    result = build_dot(model.graph, model, expanded="all")
    svg = svg_from_result(result)
    overlay = colour_scale_overlay({names[0]: 1, names[2]: 9}, model.graph, name="macs")
    painted = repaint_svg(svg, result, model.graph, None, overlay)
    assert _fill_of(painted, result.ids, "name", names[2]) == overlay.styles[names[2]]
    assert _fill_of(painted, result.ids, "name", names[1]) == WHITE
    assert "macs: 9</title>" in painted
    # Graph inputs lose their green as when laid out with the overlay (green reads as a value)
    value_fill = re.compile(r'<g id="i\d+" class="node">.*?<ellipse fill="([^"]*)"', re.S)
    assert value_fill.search(svg).group(1) == "#d3f9d8"
    assert value_fill.search(painted).group(1) == WHITE
    back = repaint_svg(svg, result, model.graph, overlay, None)
    assert back == svg  # restoring from the drawing it was laid out as
    # From a drawing laid out with the overlay, back to the ops' own colours.
    laid = build_dot(model.graph, model, expanded="all", overlay=overlay)
    plain = repaint_svg(svg_from_result(laid), laid, model.graph, overlay, None)
    assert _fill_of(plain, laid.ids, "name", names[2]) == _fill_of(
        svg, result.ids, "name", names[2]
    )
    assert "macs:" not in plain


@pytest.mark.graphviz
def test_hover_lines_of_hostile_names_are_escaped_when_repainted():
    model = ox.load(scoped_chain(1, 2))
    node = model.graph.nodes[0]
    result = build_dot(model.graph, model, expanded="all")
    overlay = colour_scale_overlay({node.name: 5}, model.graph, name="<b>&amp;")
    painted = repaint_svg(svg_from_result(result), result, model.graph, None, overlay)
    assert "&lt;b&gt;&amp;amp;: 5" in painted and "<b>" not in painted


# -- the explorer -------------------------------------------------------------------------
@pytest.mark.graphviz
def test_an_overlay_repaints_the_drawing_without_a_new_layout(monkeypatch):
    model = ox.load(scoped_chain(1, 4))
    ex = _drawn(Explorer(model))
    view = ex.graph_view
    runs = []
    real_draw = graph_view_module.draw
    monkeypatch.setattr(
        graph_view_module, "draw", lambda *a, **k: runs.append(1) or real_draw(*a, **k)
    )
    names = [n.name for n in model.graph.nodes]
    before, version, layouts = view.svg, view.version, view.layouts
    ex.overlay({names[0]: 1, names[3]: 40}, name="latency ms")
    assert view.wait(60) and runs == [] and view.layouts == layouts
    assert view.version == version + 1 and view.svg != before
    assert _fill_of(view.svg, view.ids, "name", names[3]) == colour_at(1.0)
    assert view.legend["title"] == "latency ms" and view.legend["high"] == "40 ms"
    ex.overlay(None)
    assert runs == [] and view.svg == before and view.legend == {}
    # A later layout (expand, select…) draws the overlay itself.
    ex.overlay({names[3]: 40}, name="latency ms")
    view.render()
    _drawn(ex)
    assert runs == [1]
    assert _fill_of(view.svg, view.ids, "name", names[3]) == colour_at(1.0)
    assert view.legend["title"] == "latency ms"
    ex.close()


@pytest.mark.graphviz
def test_an_overlay_asked_while_a_layout_runs_is_drawn_by_a_new_layout():
    model = ox.load(scoped_chain(1, 4))
    ex = Explorer(model)
    name = model.graph.nodes[0].name
    ex.overlay({name: 3}, name="n")  # the first drawing may still be on its way
    _drawn(ex)
    assert _fill_of(ex.graph_view.svg, ex.graph_view.ids, "name", name) == colour_at(1.0)
    ex.close()


@pytest.mark.graphviz
def test_the_node_list_shows_the_values_and_sorts_by_them():
    model = ox.load(scoped_chain(1, 4))
    names = [n.name for n in model.graph.nodes]
    ex = Explorer(model)
    ex.overlay({names[1]: 5, names[2]: 300_000, names[3]: 20}, name="params")
    listed = [label for label, _ in ex.node_list.results.options]
    assert listed[2].startswith("300.0k ") and listed[0].startswith("no value ")
    ex.node_list.sort_box.value = True
    order = [value for _, value in ex.node_list.results.options]
    assert order == [names[2], names[3], names[1], names[0]]  # no value last
    assert ex.node_list.sort_box.description == "sort by params"
    ex.overlay(None)
    assert ex.node_list.results.options[0][0] == f"{names[0]}   [Relu]"
    assert ex.node_list.sort_box.disabled
    ex.close()


@pytest.mark.graphviz
def test_the_attribute_panel_shows_the_selected_nodes_value():
    model = ox.load(scoped_chain(1, 2))
    name = model.graph.nodes[1].name
    ex = Explorer(model)
    ex.select(name)
    ex.overlay({name: 2048}, name="activation_bytes")
    header = ex.attribute_panel.children[0].value
    assert ">activation_bytes</td><td>2.0 KB</td>" in header
    ex.overlay(None)
    assert "activation_bytes" not in ex.attribute_panel.children[0].value
    ex.close()


def test_bad_overlay_input_is_refused_before_anything_changes():
    model = ox.load(scoped_chain(1, 2))
    ex = Explorer(model)
    with pytest.raises(ValueError, match="no series 'flops'"):
        ex.overlay("flops")
    with pytest.raises(ValueError, match="/enc/layer.0/Relu_1"):
        ex.overlay({"/enc/layer.0/Relu_1": "fast"})
    with pytest.raises(ValueError, match="reduce"):
        ex.overlay({}, reduce="mean")  # type: ignore[arg-type]
    assert ex.graph_view.legend == {} and ex.overlay_picker.value == ""
    ex.close()


def test_a_pandas_series_is_taken_like_a_dict():
    pd = pytest.importorskip("pandas")
    model = ox.load(scoped_chain(1, 2))
    names = [n.name for n in model.graph.nodes]
    ex = Explorer(model)
    ex.overlay(pd.Series({names[0]: 1.5, names[1]: None}), name="score")
    assert ex.node_list.results.options[0][0].startswith("1.5 ")
    assert ex.node_list.results.options[1][0].startswith("no value ")
    assert ex.overlay_picker.value == "(custom)"
    ex.close()


@pytest.mark.graphviz
def test_built_in_series_come_from_metrics_and_the_dropdown_picks_them():
    model = _mlp()
    ex = _drawn(Explorer(model))
    ex.overlay("params")
    expected = metrics(model).series("params")
    assert ex.node_list._values == {k: float(v) for k, v in expected.items()}
    assert ex.overlay_picker.value == "params"
    layouts = ex.graph_view.layouts
    ex.overlay_picker.value = "macs"  # the user's pick in the widget
    assert ex.graph_view.legend["title"] == "macs"
    assert ex.graph_view.layouts == layouts
    matmul = "/enc/layer.1/MatMul"
    assert ex.node_list._values[matmul] == 64  # 1×8 @ 8×8
    ex.overlay_log.value = True
    assert ex.graph_view.legend["title"] == "macs (log)"
    ex.overlay_picker.value = ""
    assert ex.graph_view.legend == {}
    ex.close()


def _metrics_held_back(monkeypatch):
    """metrics() made to wait for the returned Event (and the real function, to compare)."""
    metrics_package = sys.modules["onnx_explorer.metrics"]  # the attribute is the function
    release = threading.Event()
    real = metrics_package.metrics

    def slow_metrics(*args, **kwargs):
        release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(metrics_package, "metrics", slow_metrics)
    return release, real


def _release_metrics(release):
    release.set()
    for worker in [t for t in threading.enumerate() if t.name == "oxe-metrics"]:
        worker.join(30)


@pytest.mark.graphviz
def test_a_dropdown_pick_computes_metrics_off_the_kernels_thread(monkeypatch):
    """Picking "macs" before any metrics exist returns at once with a note; the colours
    arrive when the background computation ends, and a later pick wins over it."""
    model = _mlp()
    ex = _drawn(Explorer(model))
    release, real = _metrics_held_back(monkeypatch)
    ex.overlay_picker.value = "macs"  # returns while metrics wait on `release`
    assert "computing macs" in ex.overlay_note.value
    assert ex.graph_view.legend == {}
    ex.overlay_picker.value = "params"  # a second pick while the first computes
    _release_metrics(release)
    assert ex.graph_view.legend["title"] == "params"  # the later pick, not "macs"
    assert ex.overlay_picker.value == "params"
    assert ex.node_list._values == {k: float(v) for k, v in real(model).series("params").items()}
    ex.close()


@pytest.mark.graphviz
@pytest.mark.parametrize("later", ["values", "none"])
def test_an_overlay_from_a_cell_after_a_pick_is_not_painted_over(monkeypatch, later):
    """A dropdown pick is still computing when a cell calls ``ex.overlay(...)`` (or takes
    the colours away): when the pick's metrics arrive, the cell's overlay stays."""
    ex = _drawn(Explorer(_mlp()))
    release, _ = _metrics_held_back(monkeypatch)
    ex.overlay_picker.value = "macs"
    if later == "values":
        ex.overlay({"/enc/layer.1/MatMul": 1.0}, name="mine")
    else:
        ex.overlay(None)
    _release_metrics(release)
    expected = {"title": "mine"} if later == "values" else {}
    assert {k: v for k, v in ex.graph_view.legend.items() if k == "title"} == expected
    ex.close()


@pytest.mark.graphviz
def test_an_overlay_refused_from_a_cell_leaves_a_pick_computing_alone(monkeypatch):
    """``ex.overlay`` with a value that is no number raises, and the pick made before it
    still paints when its metrics arrive (it was cancelled: "computing macs" forever)."""
    ex = _drawn(Explorer(_mlp()))
    release, _ = _metrics_held_back(monkeypatch)
    ex.overlay_picker.value = "macs"
    with pytest.raises(ValueError, match="MatMul"):
        ex.overlay({"/enc/layer.1/MatMul": "x"})
    _release_metrics(release)
    assert ex.graph_view.legend["title"] == "macs"
    ex.close()


@pytest.mark.graphviz
def test_a_pick_made_while_a_worker_moves_the_dropdown_is_not_ignored():
    """A pick's worker moves the dropdown to follow what it painted; a user's pick on the
    kernel's thread at that moment is a pick (the flag that tells them apart is per
    thread), not a move to ignore."""
    ex = _drawn(Explorer(_mlp()))
    ex.metrics()  # computed: the pick below paints at once
    moving, done = threading.Event(), threading.Event()

    def worker_following():
        ex._picking_overlay = True
        moving.set()
        done.wait(10)
        ex._picking_overlay = False

    worker = threading.Thread(target=worker_following)
    worker.start()
    moving.wait(10)
    ex.overlay_picker.value = "params"
    done.set()
    worker.join(10)
    assert ex.graph_view.legend["title"] == "params"
    ex.close()


@pytest.mark.graphviz
def test_a_pick_made_while_a_worker_computes_its_values_wins(monkeypatch):
    """The user picks "macs" (computed on a worker), then "params" while the worker is
    still making the macs values: the later pick is what stays painted."""
    ex = _drawn(Explorer(_mlp()))
    release, _ = _metrics_held_back(monkeypatch)
    in_series, go_on = threading.Event(), threading.Event()
    real_series = ex._series

    def series(name, dims=None):
        if threading.current_thread().name == "oxe-metrics":
            in_series.set()
            go_on.wait(3)
        return real_series(name, dims)

    monkeypatch.setattr(ex, "_series", series)
    ex.overlay_picker.value = "macs"
    release.set()
    assert in_series.wait(10)
    ex.overlay_picker.value = "params"  # metrics are computed now: painted at once
    go_on.set()
    _release_metrics(release)
    assert ex.graph_view.legend["title"] == "params"
    assert ex.overlay_picker.value == "params"
    ex.close()


def _profile(path, events):
    path.write_text(json.dumps(events), encoding="utf-8")
    return path


def _kernel(name: str, dur: float, op: str = "MatMul") -> dict:
    return {"cat": "Node", "name": f"{name}_kernel_time", "dur": dur, "ph": "X",
            "args": {"op_name": op}}  # fmt: skip


@pytest.mark.graphviz
def test_a_profile_overlays_latency_and_reports_fused_names(tmp_path):
    model = _mlp(2)
    path = _profile(
        tmp_path / "profile.json",
        [
            _kernel("/enc/layer.0/MatMul", 100),
            _kernel("/enc/layer.0/MatMul", 300),  # two runs: mean 0.2 ms
            _kernel("/enc/layer.1/MatMul", 50),
            _kernel("/enc/layer.0/Relu", 10, "Relu"),
            _kernel("MatMul_Relu_fused_1", 70, "FusedMatMul"),
            {"cat": "Session", "name": "model_run", "dur": 999},
        ],
    )
    ex = _drawn(Explorer(model))
    profile = ex.overlay_profile(path)
    assert ex.node_list._values["/enc/layer.0/MatMul"] == pytest.approx(0.2)
    assert ex.graph_view.legend["title"] == "latency ms"
    note = ex.overlay_note.value
    assert "3 of 4 timed nodes match" in note and "MatMul_Relu_fused_1" in note
    assert profile.unmatched == ["MatMul_Relu_fused_1"]
    ex.overlay(None)
    assert ex.overlay_note.value == ""
    ex.close()


def test_a_profile_of_another_model_is_refused_saying_how_many_names_matched(tmp_path):
    model = _mlp(1)
    path = _profile(tmp_path / "other.json", [_kernel(f"/other/{k}", 5) for k in range(4)])
    ex = Explorer(model)
    with pytest.raises(ox.ExplorerError, match="0 of 4"):
        ex.overlay_profile(path)
    ex.close()


def _symbolic_matmul() -> ox.Model:
    node = helper.make_node("MatMul", ["X", "W"], ["Y"], name="/enc/MatMul")
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", "sequence", 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", "sequence", 2])],
        [numpy_helper.from_array(np.ones((4, 2), np.float32), "W")],
    )  # fmt: skip
    return ox.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def test_a_macs_overlay_says_which_input_sizes_it_assumed():
    ex = Explorer(_symbolic_matmul())
    ex.overlay("macs")
    assert "assumed input sizes: batch=1 (batch), sequence=128 (sequence)" in ex.overlay_note.value
    assert ex.metrics().series("macs") == {"/enc/MatMul": 1 * 128 * 2 * 4}


def test_explore_with_dims_binds_them_for_the_overlay_and_the_edges():
    ex = ox.explore(_symbolic_matmul(), dims={"batch": 2, "sequence": 3})
    ex.overlay("macs")
    assert ex.overlay_note.value == ""  # nothing assumed, nothing to say
    assert ex.metrics().series("macs") == {"/enc/MatMul": 2 * 3 * 2 * 4}
    assert "2×3×2" in ex.model.graph.to_dot()
