"""Painting over a drawing: fills per node, ghosts of removed nodes, "N changes", a legend.

The overlay is what a model diff (and later a numeric colour scale) hands the drawing;
it must stay on every drawing the user gets: re-layouts, selection, expansion, bodies,
and the cheaper plans drawn when Graphviz is too slow.
"""

from __future__ import annotations

import re

import pytest
from builders import nested_if, scoped_chain

import onnx_explorer as ox
from onnx_explorer.errors import LayoutTimeoutError
from onnx_explorer.views import _layout as layout_module
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._layout import ViewRequest, draw
from onnx_explorer.views._paint import PALETTE, Ghost, Overlay, status_overlay
from onnx_explorer.widgets._graph_view import GraphView

CHANGED = PALETTE["changed"].fill
ADDED = PALETTE["added"].fill
REMOVED = PALETTE["removed"].fill


def _chain(layers: int = 2, per_layer: int = 12) -> ox.Model:
    return ox.load(scoped_chain(layers, per_layer))


def _diff_overlay(model: ox.Model) -> Overlay:
    """Every node unchanged but one changed (layer 0) and one added (layer 1); one removed
    node used to read t13 (written by layer 1 Relu_1) and write t14 (read by Relu_3)."""
    status = {node.name: "unchanged" for node in model.graph.nodes}
    status["/enc/layer.0/Relu_3"] = "changed"
    status["/enc/layer.1/Relu_2"] = "added"
    ghost = Ghost("a:13", "/enc/layer.1/Neg", "Neg", inputs=("t13",), outputs=("t14",))
    titles = {"/enc/layer.0/Relu_3": "attribute alpha: 0.1 → 0.2"}
    return status_overlay(status, [ghost], titles)


def _statement(source: str, item_id: str) -> str:
    return next(line for line in source.splitlines() if line.startswith(f"{item_id} ["))


def _id_of(result, name: str) -> str:
    return next(k for k, v in result.ids.items() if v.get("kind") == "node" and v["name"] == name)


def test_nodes_are_filled_by_their_status_and_say_it_on_hover():
    model = _chain()
    result = build_dot(model.graph, model, expanded="all", overlay=_diff_overlay(model))
    changed = _id_of(result, "/enc/layer.0/Relu_3")
    assert f'fillcolor="{CHANGED}"' in _statement(result.source, changed)
    assert f'fillcolor="{ADDED}"' in _statement(
        result.source, _id_of(result, "/enc/layer.1/Relu_2")
    )
    plain = _statement(result.source, _id_of(result, "/enc/layer.0/Relu_0"))
    assert f'fillcolor="{PALETTE["unchanged"].fill}"' in plain
    assert result.ids[changed]["status"] == "changed"
    assert result.titles[changed].splitlines()[1] == "changed"
    assert "attribute alpha: 0.1 → 0.2" in result.titles[changed]


def test_without_an_overlay_nothing_changes():
    model = _chain()
    plain = build_dot(model.graph, model, expanded="all")
    assert plain.source == build_dot(model.graph, model, expanded="all", overlay=None).source
    assert "legend" not in plain.ids and CHANGED not in plain.source


def test_graph_inputs_and_outputs_are_not_filled_like_an_added_node_under_an_overlay():
    model = _chain()
    plain = build_dot(model.graph, model, expanded="all")
    painted = build_dot(model.graph, model, expanded="all", overlay=_diff_overlay(model))
    for result, fill in ((plain, "#d3f9d8"), (painted, "#ffffff")):
        box = next(k for k, v in result.ids.items() if v.get("kind") == "input")
        assert f'fillcolor="{fill}"' in _statement(result.source, box)
    box = next(k for k, v in painted.ids.items() if v.get("kind") == "input")
    assert ADDED not in _statement(painted.source, box)


def test_nodes_an_overlay_does_not_name_keep_their_operator_colour():
    model = _chain()
    overlay = Overlay(styles={"/enc/layer.0/Relu_3": "changed"})
    result = build_dot(model.graph, model, expanded="all", overlay=overlay)
    other = _statement(result.source, _id_of(result, "/enc/layer.0/Relu_4"))
    assert 'fillcolor="#fff3bf"' in other  # Relu's usual colour


def test_collapsed_scopes_say_how_many_changes_they_hold():
    model = _chain()
    result = build_dot(model.graph, model, expanded=["enc/layer.0"], overlay=_diff_overlay(model))
    box = next(k for k, v in result.ids.items() if v["kind"] == "scope" and not v["open"])
    assert result.ids[box]["path"] == "enc/layer.1"
    # one added node and one removed (its ghost is inside the box, not drawn apart)
    assert "2 changes" in _statement(result.source, box)
    assert result.ids[box]["changes"] == 2 and "2 changes" in result.titles[box]
    assert not any(v["kind"] == "ghost" for v in result.ids.values())
    # the open layer.0 cluster says it in its heading; so does enc, holding all three
    assert re.search(r'label="layer\.0 · 12 nodes · 1 change"', result.source)
    assert re.search(r'label="enc · 24 nodes · 3 changes"', result.source)


def test_scopes_without_changes_say_nothing():
    model = _chain(3)
    overlay = Overlay(styles={"/enc/layer.0/Relu_3": "changed"})
    result = build_dot(model.graph, model, expanded=["enc"], overlay=overlay)
    boxes = [k for k, v in result.ids.items() if v["kind"] == "scope" and not v["open"]]
    assert boxes
    for box in boxes:
        expected = "1 change" if result.ids[box]["path"] == "enc/layer.0" else None
        assert result.ids[box].get("changes") == (1 if expected else None)
        assert ("change" in _statement(result.source, box)) == bool(expected)


def test_a_removed_node_is_a_dashed_ghost_wired_where_it_was():
    model = _chain()
    result = build_dot(model.graph, model, expanded="all", overlay=_diff_overlay(model))
    ghost = next(k for k, v in result.ids.items() if v["kind"] == "ghost")
    assert result.ids[ghost] == {"kind": "ghost", "key": "a:13", "name": "/enc/layer.1/Neg",
                                 "op": "Neg"}  # fmt: skip
    statement = _statement(result.source, ghost)
    assert "dashed" in statement and f'fillcolor="{REMOVED}"' in statement
    producer = _id_of(result, "/enc/layer.1/Relu_1")  # writes t13
    consumer = _id_of(result, "/enc/layer.1/Relu_3")  # reads t14
    assert re.search(rf"^{producer} -> {ghost} \[.*style=dashed", result.source, re.M)
    assert re.search(rf"^{ghost} -> {consumer} \[.*style=dashed", result.source, re.M)
    assert "removed" in result.titles[ghost]


def test_ghosts_near_a_focused_node_are_drawn_and_far_ones_are_not():
    model = _chain()
    overlay = _diff_overlay(model)
    near = build_dot(model.graph, model, focus="/enc/layer.1/Relu_1", hops=1, overlay=overlay)
    assert any(v["kind"] == "ghost" for v in near.ids.values())
    far = build_dot(model.graph, model, focus="/enc/layer.0/Relu_0", hops=1, overlay=overlay)
    assert not any(v["kind"] == "ghost" for v in far.ids.values())


def test_the_legend_lists_the_statuses_drawn():
    model = _chain()
    result = build_dot(model.graph, model, expanded="all", overlay=_diff_overlay(model))
    assert result.ids["legend"] == {"kind": "legend"}
    legend = _statement(result.source.replace("{rank=source; ", ""), "legend")
    for word in ("added", "changed", "unchanged", "removed"):
        assert f">{word}</TD>" in legend and PALETTE[word].fill in legend
    assert ">renamed</TD>" not in legend  # no node was renamed
    only_changed = build_dot(
        model.graph, model, overlay=Overlay(styles={"/enc/layer.0/Relu_3": "changed"})
    )
    assert ">added</TD>" not in only_changed.source
    hidden = build_dot(
        model.graph, model, overlay=Overlay(styles={"/enc/layer.0/Relu_3": "changed"}, legend=False)
    )
    assert "legend" not in hidden.ids


def test_a_numeric_scale_is_one_more_producer_of_fills():
    model = _chain(1)
    overlay = Overlay(
        styles={"/enc/layer.0/Relu_0": "#FFC9C9", "/enc/layer.0/Relu_1": "#ffffff"},
        counted=frozenset(),
        legend_title="max |Δ|",
        legend_entries=(("#ffc9c9", "≥ 0.1"), ("#ffffff", "0")),
    )
    result = build_dot(model.graph, model, expanded="all", overlay=overlay)
    assert 'fillcolor="#ffc9c9"' in _statement(result.source, _id_of(result, "/enc/layer.0/Relu_0"))
    assert "max |Δ|" in result.source and "≥ 0.1" in result.source
    assert "change" not in result.source  # a scale counts no "changes"


def test_style_words_from_outside_cannot_write_dot():
    model = _chain(1)
    hostile = 'red"] x [label="pwned'
    overlay = Overlay(styles={"/enc/layer.0/Relu_0": hostile})
    result = build_dot(model.graph, model, expanded="all", overlay=overlay)
    assert "pwned" not in result.source
    assert "status" not in result.ids[_id_of(result, "/enc/layer.0/Relu_0")]


def test_ghost_names_are_quoted_like_any_model_text():
    model = _chain(1)
    ghost = Ghost("k", 'evil"]; x -> y; z [label="\n\u202e', "Neg", inputs=("t0",))
    result = build_dot(model.graph, model, expanded="all", overlay=Overlay(ghosts=(ghost,)))
    statement = _statement(result.source, "g0")
    assert re.search(r'(?<!\\)"\]; x -> y', statement) is None  # the quote is escaped
    assert "\u202e" not in statement and "\n" not in statement
    assert not re.search(r"^\s*x -> y", result.source, re.M)


def test_more_ghosts_than_the_drawing_allows_are_counted_in_a_note():
    model = _chain(1, 4)
    ghosts = tuple(Ghost(str(k), f"gone{k}", "Neg", inputs=("t0",)) for k in range(30))
    result = build_dot(model.graph, model, max_nodes=12, overlay=Overlay(ghosts=ghosts))
    assert result.drawn <= 12
    drawn = sum(v["kind"] == "ghost" for v in result.ids.values())
    assert drawn < 30
    assert any(f"{30 - drawn} removed nodes not drawn" in note for note in result.notes)


@pytest.mark.graphviz
def test_the_cheaper_plans_keep_the_overlay(monkeypatch):
    model = _chain()
    real_wait = layout_module.Layout.wait
    calls = []

    def first_too_slow(self, limit):  # Graphviz runs out of time on the view as asked
        calls.append(limit)
        if len(calls) == 1:
            raise LayoutTimeoutError("too slow")
        return real_wait(self, limit)

    monkeypatch.setattr(layout_module.Layout, "wait", first_too_slow)
    drawing = draw(model.graph, model, ViewRequest(), overlay=_diff_overlay(model))
    assert drawing.simplified and len(calls) >= 2
    assert CHANGED in drawing.svg or "1 change" in drawing.svg
    assert 'id="legend"' in drawing.svg


def _drawn(view: GraphView) -> GraphView:
    assert view.wait(60), "the layout did not finish in 60 s"
    assert not view.error, view.error
    return view


def _fill_of(view: GraphView, name: str) -> str | None:
    """The fill Graphviz wrote for the drawn box of node ``name``."""
    item = next((k for k, v in view.ids.items() if v.get("name") == name), None)
    if item is None:
        return None
    group = re.search(rf'<g id="{item}" class="node">(.*?)</g>', view.svg, re.S)
    assert group, item
    fill = re.search(r'fill="(#[0-9a-f]{6})"', group.group(1))
    return fill.group(1) if fill else None


@pytest.mark.graphviz
def test_the_widget_keeps_the_overlay_through_expansion_selection_and_bodies():
    model = _chain(12, 12)  # large enough to start with collapsed layers
    view = _drawn(
        GraphView(model.graph, model=model, overlay=_diff_overlay(model), fold_repeats=False)
    )  # the layers are identical: folded, they would not each show a box
    boxes = {v["path"]: v for v in view.ids.values() if v["kind"] == "scope"}
    assert boxes["enc/layer.1"].get("changes") == 2
    view.expand("enc/layer.1")
    _drawn(view)
    assert _fill_of(view, "/enc/layer.1/Relu_2") == ADDED
    assert any(v["kind"] == "ghost" for v in view.ids.values())
    view.selected = "/enc/layer.0/Relu_3"  # hidden in a collapsed scope: opened for it
    _drawn(view)
    assert _fill_of(view, "/enc/layer.0/Relu_3") == CHANGED
    assert view.highlight_id == next(
        k for k, v in view.ids.items() if v.get("name") == "/enc/layer.0/Relu_3"
    )
    view.focus("/enc/layer.0/Relu_3", 1)
    _drawn(view)
    assert _fill_of(view, "/enc/layer.0/Relu_3") == CHANGED
    view.close()


@pytest.mark.graphviz
def test_an_overlay_per_graph_follows_the_user_into_bodies():
    model = ox.load(nested_if(1))
    body = next(g for g in model.graphs() if g.path != "/")
    target = body.nodes[-1].name

    def overlay_for(graph):
        return Overlay(styles={target: "renamed"}) if graph is body else None

    view = _drawn(GraphView(model.graph, model=model, overlay=overlay_for))
    assert "legend" not in view.ids
    view.show_graph(body)
    _drawn(view)
    assert _fill_of(view, target) == PALETTE["renamed"].fill
    assert "legend" in view.ids
    view.close()


@pytest.mark.graphviz
def test_clicking_a_ghost_reports_its_key():
    model = _chain()
    view = _drawn(
        GraphView(model.graph, model=model, overlay=_diff_overlay(model), fold_repeats=False)
    )
    view.expand("enc/layer.1")
    _drawn(view)
    ghost = next(k for k, v in view.ids.items() if v["kind"] == "ghost")
    view.selected = "/enc/layer.0/Relu_0"
    seen = []
    view.observe(lambda change: seen.append(change["new"]), "picked_ghost")
    view._on_message(view, {"event": "click", "id": ghost, "version": view.version}, [])
    assert view.picked_ghost == "a:13" and "a:13" in seen
    assert view.selected == "" and view.highlight_id == ghost
    view.close()
