"""The notebook view of a model diff: b drawn coloured by what changed, the changes listed
by size, and both sides shown for the one picked.

Most tests drive the view with :class:`FakeDiff`, a small stand-in that answers the
questions of the ModelDiff contract (DIFF_CONTRACT.md) about a known pair of models, so
the view is tested on exactly the changes it is told about. The last tests run the real
comparison (``onnx_explorer.diff``) end to end.
"""

from __future__ import annotations

import html
import re
from typing import Any

import numpy as np
import onnx
import pytest
from locations import CORPUS
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.errors import ExplorerError
from onnx_explorer.model_diff import NodeChange, NodeRef, RemovedNode, TensorChange
from onnx_explorer.stats import array_histogram
from onnx_explorer.views._paint import PALETTE
from onnx_explorer.widgets._diff_explorer import DiffExplorer, change_rows, explore_diff

W_A = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
W_B = W_A + np.array([0.0, 0.5, 0.0, 0.0], dtype=np.float32)


def _model(nodes: list[onnx.NodeProto], w: np.ndarray) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        initializer=[numpy_helper.from_array(w, "W")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def model_a() -> onnx.ModelProto:
    return _model([
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Neg", ["r"], ["n"], name="neg"),
        helper.make_node("LeakyRelu", ["n"], ["l"], name="leaky", alpha=0.1),
        helper.make_node("Mul", ["l", "W"], ["y"], name="mul"),
    ], W_A)  # fmt: skip


def model_b(leaky_name: str = "leaky") -> onnx.ModelProto:
    """Neg removed, LeakyRelu's alpha changed, Mul renamed, Abs appended, W perturbed."""
    return _model([
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("LeakyRelu", ["r"], ["l"], name=leaky_name, alpha=0.2),
        helper.make_node("Mul", ["l", "W"], ["m"], name="mul_renamed"),
        helper.make_node("Abs", ["m"], ["y"], name="abs"),
    ], W_B)  # fmt: skip


# -- a stand-in for onnx_explorer.model_diff.ModelDiff: its results written by hand -------
class FakeDiff:
    """What the real comparison reports for model_a → model_b, written out by hand."""

    def __init__(self, leaky_name: str = "leaky", change_line: str = "attribute alpha: 0.1 → 0.2"):
        self.a, self.b = ox.load(model_a()), ox.load(model_b(leaky_name))
        self.equal = False
        self.model_changes: list[tuple[str, Any, Any]] = [("producer", "exporter 1", "exporter 2")]
        leaky_a, leaky_b = (
            NodeRef("/", "leaky", 2, "LeakyRelu"),
            NodeRef("/", leaky_name, 1, "LeakyRelu"),
        )
        self.nodes_changed = [NodeChange(leaky_a, leaky_b, (change_line, "input 0: n → r"), 2)]
        self.nodes_added = [NodeRef("/", "abs", 3, "Abs")]
        self.nodes_removed = [NodeRef("/", "neg", 1, "Neg")]
        self.nodes_renamed = [
            (NodeRef("/", "mul", 3, "Mul"), NodeRef("/", "mul_renamed", 2, "Mul"))
        ]
        self.tensors_added: list[str] = []
        self.tensors_removed: list[str] = []
        self.tensors_renamed: list[tuple[str, str]] = []
        delta = W_B - W_A
        self.tensors_changed = [
            TensorChange("W", "W", "float32", "float32", (4,), (4,), False, 0.5, 0.25,
                         0.125, 0.99, 1, None)
        ]  # fmt: skip
        self._delta = delta

    def node_status(self, graph_path: str = "/") -> dict[str, str]:
        if graph_path != "/":
            return {}
        leaky = self.nodes_changed[0].b.name
        return {"relu": "unchanged", "abs": "added", leaky: "changed", "mul_renamed": "renamed"}

    def removed_in(self, graph_path: str = "/") -> list[RemovedNode]:
        return [RemovedNode(self.nodes_removed[0], ("r",), ("r",))] if graph_path == "/" else []

    def node_change(self, b_name: str, graph_path: str = "/") -> NodeChange | None:
        change = self.nodes_changed[0]
        return change if (graph_path, b_name) == ("/", change.b.name) else None

    def tensor_change(self, name: str) -> TensorChange | None:
        return self.tensors_changed[0] if name == "W" else None

    def dequantization(self, change: TensorChange, side: str) -> None:
        return None  # both sides float: compared as stored

    def difference_histogram(self, change: TensorChange, bins: int = 64) -> Any:
        return array_histogram(self._delta, bins)

    def _repr_html_(self) -> str:
        return "<b>diff</b>"


def _drawn(view: DiffExplorer) -> DiffExplorer:
    assert view.graph_view.wait(60), "the layout did not finish in 60 s"
    assert not view.graph_view.error, view.graph_view.error
    return view


def _fill_of(view: DiffExplorer, name: str) -> str | None:
    graph_view = view.graph_view
    item = next(
        k for k, v in graph_view.ids.items() if v.get("kind") == "node" and v["name"] == name
    )
    group = re.search(rf'<g id="{item}" class="node">(.*?)</g>', graph_view.svg, re.S)
    assert group, item
    fill = re.search(r'fill="(#[0-9a-f]{6})"', group.group(1))
    return fill.group(1) if fill else None


def _wait_for(predicate, what: str) -> None:
    import time

    deadline = time.monotonic() + 30  # only to end a hang
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not happen within 30 s"
        time.sleep(0.05)


@pytest.mark.graphviz
def test_b_is_drawn_coloured_by_what_changed_with_the_removed_node_as_a_ghost():
    view = _drawn(DiffExplorer(FakeDiff()))
    assert _fill_of(view, "leaky") == PALETTE["changed"].fill
    assert _fill_of(view, "abs") == PALETTE["added"].fill
    assert _fill_of(view, "mul_renamed") == PALETTE["renamed"].fill
    assert _fill_of(view, "relu") == PALETTE["unchanged"].fill
    ghosts = [v for v in view.graph_view.ids.values() if v["kind"] == "ghost"]
    assert ghosts == [{"kind": "ghost", "key": "/#1", "name": "neg", "op": "Neg"}]
    assert 'id="legend"' in view.graph_view.svg
    # hover text of the changed node tells what changed, of the renamed one its old name
    titles = view.graph_view.result.titles
    assert any("attribute alpha: 0.1 → 0.2" in t for t in titles.values())
    assert any("was mul" in t for t in titles.values())
    view.close()


def test_the_diff_view_never_folds_repeated_layers():
    # One changed layer among identical ones must stay in sight, not inside a ×N fold.
    view = DiffExplorer(FakeDiff())
    assert view.graph_view.fold_repeats is False
    view.close()


def test_changes_are_listed_nodes_then_tensors_largest_first():
    rows = change_rows(FakeDiff())
    assert [(r.kind, r.status) for r in rows] == [
        ("node", "changed"), ("node", "added"), ("node", "removed"), ("node", "renamed"),
        ("tensor", "changed"),
    ]  # fmt: skip
    assert "leaky" in rows[0].label and "alpha" in rows[0].label
    assert "mul → mul_renamed" in rows[3].label
    assert "max |Δ| 0.5" in rows[4].label


@pytest.mark.graphviz
def test_picking_a_changed_node_selects_it_and_shows_both_sides():
    view = _drawn(DiffExplorer(FakeDiff()))
    view.pick(0)
    assert view.graph_view.selected == "leaky"
    detail = view.detail.value
    assert "attribute alpha: 0.1 → 0.2" in html.unescape(detail)
    # each side's attribute value, in one row marked as differing
    row = re.search(
        r"<tr><td[^>]*>alpha</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>", detail
    )
    assert row and "0.1" in row.group(1) and "0.2" in row.group(2) and row.group(3) == "≠"
    _drawn(view)
    assert (
        view.graph_view.highlight_id
        and view.graph_view.ids[view.graph_view.highlight_id]["name"] == "leaky"
    )
    view.close()


@pytest.mark.graphviz
def test_clicking_a_node_in_the_drawing_shows_its_status_and_both_sides():
    view = _drawn(DiffExplorer(FakeDiff()))
    view.graph_view.selected = "mul_renamed"
    assert "renamed: mul_renamed" in view.detail.value and "was mul in a" in view.detail.value
    view.graph_view.selected = "relu"
    assert "unchanged: relu" in view.detail.value
    view.close()


@pytest.mark.graphviz
def test_picking_a_removed_node_rings_its_ghost_and_shows_side_a():
    view = _drawn(DiffExplorer(FakeDiff()))
    view.pick(2)
    assert "removed: neg" in view.detail.value and "Neg" in view.detail.value
    _drawn(view)
    ringed = view.graph_view.ids.get(view.graph_view.highlight_id, {})
    assert ringed.get("kind") == "ghost" and ringed.get("name") == "neg"
    view.close()


@pytest.mark.graphviz
def test_clicking_a_ghost_shows_the_removed_node():
    view = _drawn(DiffExplorer(FakeDiff()))
    ghost = next(k for k, v in view.graph_view.ids.items() if v["kind"] == "ghost")
    view.graph_view.click(ghost)
    assert "removed: neg" in view.detail.value
    view.close()


@pytest.mark.graphviz
def test_picking_a_tensor_shows_both_sides_statistics_and_the_difference_histogram():
    view = _drawn(DiffExplorer(FakeDiff()))
    view.pick(4)
    assert "tensor changed: W" in view.detail.value
    _wait_for(lambda: view.plot.layout.display != "none", "the histogram")
    detail = html.unescape(view.detail.value)
    assert "max |Δ|" in detail and "0.5" in detail
    assert "mean = 2.5" in detail and "mean = 2.625" in detail  # a's and b's statistics
    assert view.plot.value[:4] == b"\x89PNG"
    view.close()


@pytest.mark.graphviz
def test_text_from_the_models_is_escaped_in_the_panels():
    hostile = "<img src=x onerror=alert(1)>\u202e"
    view = _drawn(DiffExplorer(FakeDiff(leaky_name=hostile, change_line=f"attribute {hostile}")))
    view.pick(0)
    for text in (view.detail.value, view.summary.value):
        assert "<img" not in text and "\u202e" not in text
    assert "&lt;img" in view.detail.value
    assert all("\u202e" not in label for label, _ in view.changes.options)
    view.close()


@pytest.mark.graphviz
def test_a_saved_notebook_keeps_the_diff_summary_and_the_coloured_drawing():
    view = _drawn(DiffExplorer(FakeDiff()))
    bundle = view._repr_mimebundle_()
    static = bundle["text/html"]
    assert static.startswith("<b>diff</b>")  # the ModelDiff's own summary
    assert "<svg" in static and PALETTE["changed"].fill in static
    view.close()


def test_a_side_that_cannot_be_opened_is_named(tmp_path):
    good = tmp_path / "a.onnx"
    onnx.save(model_a(), good)
    with pytest.raises(ExplorerError, match="model b"):
        explore_diff(good, tmp_path / "missing.onnx")
    with pytest.raises(ExplorerError, match="model a"):
        ox.explore_diff(b"not a model", good)


def test_the_magic_prints_a_bad_side_instead_of_raising(tmp_path, capsys):
    from onnx_explorer.ipython import onnx_diff

    good = tmp_path / "a.onnx"
    onnx.save(model_a(), good)
    assert onnx_diff(f"{good} {tmp_path / 'missing.onnx'}") is None
    assert "model b" in capsys.readouterr().out
    assert onnx_diff(str(good)) is None  # B missing: the usage, not a traceback
    assert "onnx_diff" in capsys.readouterr().out


# -- with the real comparison ---------------------------------------------------------
@pytest.mark.graphviz
def test_explore_diff_draws_the_real_comparison(tmp_path):
    view = _drawn(ox.explore_diff(model_a(), model_b()))
    status = view.diff.node_status("/")
    assert status["leaky"] == "changed" and status["abs"] == "added"
    assert _fill_of(view, "leaky") == PALETTE["changed"].fill
    assert _fill_of(view, "abs") == PALETTE["added"].fill
    assert any(v["kind"] == "ghost" and v["name"] == "neg" for v in view.graph_view.ids.values())
    tensors = [k for k, row in enumerate(view.rows) if row.kind == "tensor"]
    assert tensors and "W" in view.rows[tensors[0]].label
    view.pick(tensors[0])
    _wait_for(lambda: view.plot.layout.display != "none", "the difference histogram")
    assert view.plot.value[:4] == b"\x89PNG"
    view.close()


@pytest.mark.graphviz
def test_the_magic_opens_the_diff(tmp_path):
    from onnx_explorer.ipython import onnx_diff

    a, b = tmp_path / "a b.onnx", tmp_path / "b.onnx"
    onnx.save(model_a(), a)
    onnx.save(model_b(), b)
    view = onnx_diff(f'"{a}" {b} --no-weights')
    assert isinstance(view, DiffExplorer)
    assert not view.diff.tensors_changed  # weights not compared
    view.close()


def test_the_live_diff_names_both_files(tmp_path):
    import onnx
    from builders import mlp

    import onnx_explorer as ox

    a, b = tmp_path / "before.onnx", tmp_path / "after_quant.onnx"
    onnx.save(mlp(), a)
    onnx.save(mlp(), b)
    view = ox.explore_diff(a, b)
    assert "before.onnx" in view.summary.value and "after_quant.onnx" in view.summary.value


def _bbox(svg: str, gid: str) -> tuple[float, float, float, float]:
    import re

    found = re.search(r'<g id="' + re.escape(gid) + r'" class="(?:node|cluster)">.*?(?:points|d)="([^"]+)"',
                      svg, re.S)  # fmt: skip
    assert found, gid
    nums = [float(v) for v in re.findall(r"-?\d+\.?\d*", found.group(1))]
    xs, ys = nums[0::2], nums[1::2]
    return min(xs), min(ys), max(xs), max(ys)


@pytest.mark.graphviz
def test_a_removed_node_is_drawn_in_its_old_scopes_frame():
    # silero v6 against its dynamic-int8 copy: each Conv became ConvInteger. The removed
    # Conv's ghost must sit in its scope's frame, beside what replaced it (it was drawn
    # outside every frame, at the drawing's edge).

    import onnx_explorer as ox
    from onnx_explorer.widgets._diff_explorer import DiffExplorer

    corpus = CORPUS
    view = DiffExplorer(
        ox.diff(corpus / "silero_vad_v6.onnx", corpus / "silero_vad_v6_dynint8.onnx")
    )
    graph = view.graph_view
    graph.expand("encoder")
    graph.expand("encoder/conv_layers.0")
    assert graph.wait(60)
    ids = graph.ids
    ghost = next(k for k, v in ids.items() if v.get("kind") == "ghost"
                 and v["name"] == "/encoder/conv_layers.0/Conv")  # fmt: skip
    frame = next(k for k, v in ids.items() if v.get("kind") == "scope"
                 and v.get("path") == "encoder/conv_layers.0" and v.get("open"))  # fmt: skip
    gx0, gy0, gx1, gy1 = _bbox(graph.svg, ghost)
    fx0, fy0, fx1, fy1 = _bbox(graph.svg, frame)
    assert fx0 <= gx0 and gx1 <= fx1 and fy0 <= gy0 and gy1 <= fy1
