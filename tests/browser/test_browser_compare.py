"""Two models side by side in a real browser (JupyterLab and Notebook 7, 1400×900).

A notebook opens ``compare_view`` on a model before and after an optimizer pass: 24
blocks of MatMul → Add → Relu (flat names: no scope, nothing folded), then the same with every MatMul + Add fused into one Gemm
and a debug output added. Chromium checks what a user sees: both panes drawn and each at
least 600 px wide (or stacked); a click on a node far down pane a (fitted small) selects its
partner in pane b and pane b centres it at a readable zoom (the selected box inside b's
viewport, near its middle); a
click on a node of a fused group outlines the group on both sides; the debug node is
outlined as unmatched; a drag on pane a moves pane b by the same amount while pan/zoom
is linked, and not after it is unlinked; the selection does not bounce between panes.
Screenshots go to test-artifacts/browser-compare/<app>/.
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import Steps, check_notebook_in_browser, write_notebook
from locations import REPO

pytestmark = [pytest.mark.browser, pytest.mark.graphviz]

ARTIFACTS = REPO / "test-artifacts" / "browser-compare"
BLOCKS = 24

CELLS = [
    f"""\
import numpy as np
from onnx import TensorProto, helper, numpy_helper
import onnx_explorer as ox

def export(fused):
    nodes, inits, prev = [], [], "x"
    for i in range({BLOCKS}):
        w = numpy_helper.from_array(np.eye(16, dtype=np.float32) * (1 + i / 100), f"w{{i}}")
        b = numpy_helper.from_array(np.full(16, 0.01 * i, dtype=np.float32), f"b{{i}}")
        inits += [w, b]
        if fused:
            nodes.append(helper.make_node("Gemm", [prev, w.name, b.name], [f"a{{i}}"],
                                          name=f"gemm_{{i}}"))
        else:
            nodes.append(helper.make_node("MatMul", [prev, w.name], [f"m{{i}}"],
                                          name=f"matmul_{{i}}"))
            nodes.append(helper.make_node("Add", [f"m{{i}}", b.name], [f"a{{i}}"],
                                          name=f"add_{{i}}"))
        nodes.append(helper.make_node("Relu", [f"a{{i}}"], [f"r{{i}}"], name=f"relu_{{i}}"))
        prev = f"r{{i}}"
    outputs = [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 16])]
    if fused:
        nodes.append(helper.make_node("Identity", ["r3"], ["debug"], name="debug_identity"))
        outputs.append(helper.make_tensor_value_info("debug", TensorProto.FLOAT, [1, 16]))
    graph = helper.make_graph(
        nodes, "before" if not fused else "after",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])], outputs,
        initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
""",
    "view = ox.compare_view(export(False), export(True), max_nodes=400)\nview",
]

#: The drawn box of the node named ``name`` in one pane, as {id, x, y, w, h} on screen.
BOX_OF = """([pane, name]) => {
  const g = [...pane.querySelectorAll('.oxe-graph-stage g.oxe-kind-node')]
    .find(g => g.querySelector('title').textContent.split('\\n')[0] === name);
  if (!g) return null;
  const r = g.getBoundingClientRect();
  return {id: g.id, x: r.left, y: r.top, w: r.width, h: r.height};
}"""
#: The name of the node selected in a pane (null: none).
SELECTED_IN = """pane => {
  const g = pane.querySelector('.oxe-graph-stage g.oxe-selected');
  return g ? g.querySelector('title').textContent.split('\\n')[0] : null;
}"""
VIEWPORT_OF = """pane => {
  const r = pane.querySelector('.oxe-graph-viewport').getBoundingClientRect();
  return {x: r.left, y: r.top, w: r.width, h: r.height};
}"""
TRANSFORM_OF = "pane => pane.querySelector('.oxe-graph-stage').style.transform"
NAMES_MARKED = """([pane, word]) => [...pane.querySelectorAll(`.oxe-graph-stage g.oxe-mark-${word}`)]
  .map(g => g.querySelector('title').textContent.split('\\n')[0])"""


def _inside(box: dict[str, float], port: dict[str, float]) -> bool:
    return (
        box["x"] >= port["x"] and box["y"] >= port["y"]
        and box["x"] + box["w"] <= port["x"] + port["w"]
        and box["y"] + box["h"] <= port["y"] + port["h"]
    )  # fmt: skip


def _translate(transform: str) -> tuple[float, float, float]:
    """(tx, ty, scale) of ``translate(Xpx, Ypx) scale(S)``."""
    import re

    numbers = [float(n) for n in re.findall(r"-?[\d.]+(?:e-?\d+)?", transform)]
    return numbers[0], numbers[1], numbers[2]


def check_compare_view(page: Any, steps: Steps, figures: dict[str, Any]) -> None:
    view = page.locator(".oxe-compare").first
    pane_a, pane_b = (view.locator(".oxe-compare-column").nth(k) for k in (0, 1))
    for pane in (pane_a, pane_b):
        pane.locator(".oxe-graph-stage g.oxe-kind-node").first.wait_for()
    view.scroll_into_view_if_needed()
    page.wait_for_timeout(800)
    steps.shot("first-view", view)

    # Readable at 1400×900: side by side with each pane ≥ 600 px, or stacked.
    boxes = [p.bounding_box() for p in (pane_a, pane_b)]
    figures["columns"] = boxes
    side_by_side = abs(boxes[0]["y"] - boxes[1]["y"]) < 2
    if side_by_side:
        assert min(b["width"] for b in boxes) >= 600, boxes
    else:
        assert boxes[1]["y"] >= boxes[0]["y"] + boxes[0]["height"] - 1, boxes

    a, b = pane_a.element_handle(), pane_b.element_handle()
    # The debug node has no counterpart in a: outlined on its side.
    marked = page.evaluate(NAMES_MARKED, [b, "unmatched"])
    figures["unmatched in b"] = marked
    assert marked == ["debug_identity"], marked

    # A node far down pane a: fit pane a (its fit button), click the node.
    pane_a.locator(".oxe-graph-button", has_text="fit").click()
    page.wait_for_timeout(300)
    target = f"relu_{BLOCKS - 3}"
    box = page.evaluate(BOX_OF, [a, target])
    page.mouse.click(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)
    page.wait_for_function(f"pane => ({SELECTED_IN})(pane) === {target!r}", arg=b, timeout=30_000)
    page.wait_for_timeout(500)  # pane b centres the partner
    port = page.evaluate(VIEWPORT_OF, b)
    box_b = page.evaluate(BOX_OF, [b, target])
    figures["pane b viewport"], figures["partner box"] = port, box_b
    assert _inside(box_b, port), (box_b, port)
    assert box_b["h"] >= 15, box_b  # at a readable zoom, though pane a is fitted small
    centre = (box_b["x"] + box_b["w"] / 2 - port["x"], box_b["y"] + box_b["h"] / 2 - port["y"])
    assert abs(centre[0] - port["w"] / 2) < port["w"] / 4, centre
    assert abs(centre[1] - port["h"] / 2) < port["h"] / 4, centre
    assert page.evaluate(SELECTED_IN, a) == target
    steps.shot("selected-on-a-centred-on-b", view)

    # A fused group: a's Add stands, with its MatMul, for b's Gemm.
    add = f"add_{BLOCKS - 3}"
    box = page.evaluate(BOX_OF, [a, add])
    if box is None or not _inside(box, page.evaluate(VIEWPORT_OF, a)):
        raise AssertionError(f"{add} not on screen in pane a: {box}")
    page.mouse.click(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)
    gemm = f"gemm_{BLOCKS - 3}"
    page.wait_for_function(f"pane => ({SELECTED_IN})(pane) === {gemm!r}", arg=b, timeout=30_000)
    page.wait_for_function(
        f"""pane => ({NAMES_MARKED})([pane, 'related']).includes({f"matmul_{BLOCKS - 3}"!r})""",
        arg=a, timeout=30_000,
    )  # fmt: skip
    # No echo: a second later both selections are still the ones made.
    page.wait_for_timeout(1000)
    assert page.evaluate(SELECTED_IN, a) == add
    assert page.evaluate(SELECTED_IN, b) == gemm
    steps.shot("fused-group", view)

    # Linked pan: a drag on pane a moves pane b by the same amount.
    before = _translate(page.evaluate(TRANSFORM_OF, b))
    port_a = page.evaluate(VIEWPORT_OF, a)
    start = (port_a["x"] + 40, port_a["y"] + port_a["h"] - 60)
    page.mouse.move(*start)
    page.mouse.down()
    for step in range(1, 11):
        page.mouse.move(start[0] + 8 * step, start[1] - 15 * step)
    page.mouse.up()
    page.wait_for_timeout(600)
    after = _translate(page.evaluate(TRANSFORM_OF, b))
    figures["pane b moved by"] = [after[0] - before[0], after[1] - before[1]]
    assert abs((after[0] - before[0]) - 80) < 2 and abs((after[1] - before[1]) + 150) < 2
    steps.shot("linked-pan", view)

    # Unlinked: the same drag leaves pane b where it is.
    view.get_by_text("link pan/zoom").click()
    page.wait_for_timeout(500)
    before = _translate(page.evaluate(TRANSFORM_OF, b))
    page.mouse.move(*start)
    page.mouse.down()
    for step in range(1, 11):
        page.mouse.move(start[0] + 8 * step, start[1] - 15 * step)
    page.mouse.up()
    page.wait_for_timeout(600)
    assert _translate(page.evaluate(TRANSFORM_OF, b)) == before
    steps.shot("unlinked-pan", view)

    # JupyterLab with its file browser closed leaves room for both panes side by side.
    left = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    if left.count():
        left.first.click()
        page.wait_for_timeout(800)
        boxes = [p.bounding_box() for p in (pane_a, pane_b)]
        figures["columns, sidebar closed"] = boxes
        assert abs(boxes[0]["y"] - boxes[1]["y"]) < 2, boxes
        assert min(box["width"] for box in boxes) >= 600, boxes
        view.scroll_into_view_if_needed()
        steps.shot("side-by-side", view)


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_select_on_one_side_centres_the_partner_on_the_other(app, browser, tmp_path):
    if app == "notebook":
        pytest.importorskip("notebook", reason="Notebook 7 is in the dev extras")
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "compare.ipynb", CELLS)
    check_notebook_in_browser(
        browser, tmp_path, root / "compare.ipynb", ARTIFACTS / app, check_compare_view, app=app
    )
