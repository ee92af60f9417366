"""The graph view's first minute, in a real browser, as a user meets it (1400×900).

JupyterLab 4 and Notebook 7 run a small notebook with two explorers: a ~150-node
transformer (everything drawn) and a 40-layer scoped chain (collapsed scopes). Debian's
Chromium checks what Netron users expect: labels readable at once, selection that moves
the view, expand that keeps your place, the wheel scrolling the page, keys that stay in
the widget, and a dark theme. Screenshots go to test-artifacts/browser-view/<app>/.
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import Steps, check_notebook_in_browser, set_dark_theme, write_notebook
from locations import REPO

pytestmark = [pytest.mark.browser, pytest.mark.graphviz]

ARTIFACTS = REPO / "test-artifacts" / "browser-view"
TIMEOUT_MS = 60_000

SETUP = """\
import onnx
from onnx import TensorProto, helper
import onnx_explorer as ox
from onnx_explorer.samples import tiny_transformer

def scoped_chain(layers, per_layer=12):
    nodes, prev = [], "x"
    for i in range(layers * per_layer):
        layer, j = divmod(i, per_layer)
        nodes.append(helper.make_node("Relu", [prev], [f"t{i}"], name=f"/enc/layer.{layer}/Relu_{j}"))
        prev = f"t{i}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1])])
    return helper.make_model(graph)
"""
CELLS = [
    SETUP,
    "transformer = ox.explore(tiny_transformer(layers=5))\ntransformer",
    # Identical layers would fold into one ×40 box: this test opens collapsed scopes.
    "chain = ox.explore(scoped_chain(40))\nchain.graph_view.fold_repeats = False\nchain",
    # A Graphviz that never finishes: the kernel stays free, the pane shows it is busy.
    "import os, pathlib, time\n"
    "slow = pathlib.Path('slow_dot.sh').resolve()\n"
    "slow.write_text('#!/bin/sh\\nexec sleep 120\\n')\n"
    "slow.chmod(0o755)\n"
    "os.environ['ONNX_EXPLORER_DOT'] = str(slow)  # only for this explorer's layout\n"
    "slow_view = ox.explore(tiny_transformer(layers=1))\n"
    "slow_view.graph_view.budget = 600\n"
    "slow_view.graph_view.render()\n"
    "while not slow_view.graph_view.busy.startswith('laying out'):\n"
    "    time.sleep(0.05)\n"
    "time.sleep(0.3)\n"
    "del os.environ['ONNX_EXPLORER_DOT']\n"
    "slow_view",
    "print('the kernel is free while dot runs')",
    "# room below the explorers, so the page can scroll\n" + "\n".join(f"# {k}" for k in range(80)),
]

# Label text sizes (px on screen) of the drawn labels inside the graph pane.
LABEL_HEIGHTS = """explorer => {
  const pane = explorer.querySelector('.oxe-graph-viewport').getBoundingClientRect();
  return [...explorer.querySelectorAll('.oxe-graph-stage g.node text')]
    .map(t => t.getBoundingClientRect())
    .filter(r => r.top >= pane.top && r.bottom <= pane.bottom && r.left >= pane.left && r.right <= pane.right)
    .map(r => r.height);
}"""

# Names (hover titles) of drawn nodes entirely outside the graph pane.
OFF_SCREEN = """explorer => {
  const pane = explorer.querySelector('.oxe-graph-viewport').getBoundingClientRect();
  return [...explorer.querySelectorAll('.oxe-graph-stage g.oxe-kind-node')]
    .filter(g => { const r = g.getBoundingClientRect();
      return r.bottom < pane.top || r.top > pane.bottom || r.right < pane.left || r.left > pane.right; })
    .map(g => g.querySelector('title').textContent.split('\\n')[0]);
}"""

# Where an element is relative to the pane: centre, as fractions of the pane's size.
PLACE_IN_PANE = """([explorer, selector]) => {
  const pane = explorer.querySelector('.oxe-graph-viewport').getBoundingClientRect();
  const r = explorer.querySelector(selector).getBoundingClientRect();
  return [(r.left + r.width / 2 - pane.left) / pane.width, (r.top + r.height / 2 - pane.top) / pane.height];
}"""

# The top centre (page px) of the drawn item whose hover title starts with `title`.
TOP_CENTRE = """([explorer, title]) => {
  const g = [...explorer.querySelectorAll('.oxe-graph-stage g.node, .oxe-graph-stage g.cluster')]
    .find(g => g.querySelector('title').textContent.split('\\n')[0] === title);
  if (!g) return null;
  const r = g.getBoundingClientRect();
  return [r.left + r.width / 2, r.top];
}"""

SCROLLER = """() => {
  const candidates = [...document.querySelectorAll('.jp-WindowedPanel-outer, .jp-Notebook, #main-panel, .jp-NotebookPanel-notebook')];
  const s = candidates.find(e => e.scrollHeight > e.clientHeight + 10 && getComputedStyle(e).overflowY !== 'visible');
  return s ? s.scrollTop : null;
}"""

CELL_COUNT = "() => document.querySelectorAll('.jp-Notebook .jp-Cell').length"

BACKGROUND_LUMINANCE = """explorer => {
  const c = getComputedStyle(explorer.querySelector('.oxe-graph-viewport')).backgroundColor;
  const [r, g, b] = c.match(/[\\d.]+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}"""


def check_view(page: Any, app: str, steps: Steps, figures: dict[str, Any]) -> None:
    shot = steps.shot
    transformer = page.locator(".oxe-explorer").nth(0)
    chain = page.locator(".oxe-explorer").nth(1)
    transformer.locator(".oxe-graph-stage g.oxe-kind-node").first.wait_for()
    transformer.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    shot("first-view", transformer)

    # Readable at once: the labels in view are at least 10 px high.
    heights = transformer.evaluate(LABEL_HEIGHTS)
    assert heights and min(heights) >= 10, heights
    figures["first_view_label_px"] = {
        "min": min(heights),
        "median": sorted(heights)[len(heights) // 2],
    }

    # The side panels sit beside the graph: the attribute panel's top is on screen.
    attributes = transformer.locator(".oxe-attributes")
    box = attributes.bounding_box()
    assert box is not None and box["y"] < 900 and box["x"] > 700

    # Picking an off-screen node in the node list brings it into the centre third.
    off_screen = transformer.evaluate(OFF_SCREEN)
    assert off_screen, "the first view shows everything: the model is too small for this check"
    target = off_screen[len(off_screen) // 2]
    node_list = transformer.locator(".oxe-node-results select")
    option = node_list.locator("option", has_text=target + " ").first
    node_list.select_option(value=option.get_attribute("value"))
    transformer.locator(".oxe-graph-stage g.oxe-selected").wait_for()
    page.wait_for_timeout(300)
    x, y = page.evaluate(
        PLACE_IN_PANE, [transformer.element_handle(), ".oxe-graph-stage g.oxe-selected"]
    )
    assert 1 / 3 <= x <= 2 / 3 and 1 / 3 <= y <= 2 / 3, (x, y)
    figures["picked_node_centre_in_pane"] = [round(x, 3), round(y, 3)]
    assert target in attributes.inner_text()
    shot("picked-from-list", transformer)

    # Esc in the graph deselects.
    transformer.locator(".oxe-graph-viewport").focus()
    page.keyboard.press("Escape")
    transformer.locator(".oxe-graph-stage g.oxe-selected").wait_for(state="detached")
    assert "Select a node" in attributes.inner_text()

    # Keys typed in the widget never reach notebook command mode: "dd" deletes no cell.
    cells = page.evaluate(CELL_COUNT)
    transformer.locator(".oxe-graph-viewport").click(position={"x": 5, "y": 5})
    page.wait_for_timeout(200)
    focused = page.evaluate("() => document.activeElement && document.activeElement.className")
    assert "oxe-graph-viewport" in focused, focused
    page.keyboard.press("d")
    page.keyboard.press("d")
    page.wait_for_timeout(300)
    assert page.evaluate(CELL_COUNT) == cells
    # … nor typed in the node list beside it.
    transformer.locator(".oxe-node-results select").focus()
    page.keyboard.press("d")
    page.keyboard.press("d")
    page.wait_for_timeout(300)
    assert page.evaluate(CELL_COUNT) == cells

    # The wheel over the graph scrolls the page and leaves the zoom alone.
    stage = transformer.locator(".oxe-graph-stage")
    transform = stage.evaluate("s => s.style.transform")
    before = page.evaluate(SCROLLER)
    pane = transformer.locator(".oxe-graph-viewport").bounding_box()
    page.mouse.move(pane["x"] + pane["width"] / 2, pane["y"] + pane["height"] / 2)
    page.mouse.wheel(0, 400)
    page.wait_for_timeout(400)
    assert page.evaluate(SCROLLER) != before
    assert stage.evaluate("s => s.style.transform") == transform

    # Expanding a scope keeps the clicked box where it was (± 40 px).
    chain.scroll_into_view_if_needed()
    boxes = chain.locator(".oxe-graph-stage g.oxe-kind-scope")
    boxes.first.wait_for()
    page.wait_for_timeout(300)
    shot("chain-first-view", chain)
    # Arrow keys pan: bring the collapsed layers below the open first one into view.
    chain.locator(".oxe-graph-viewport").focus()
    for _ in range(10):
        page.keyboard.press("ArrowDown")
    page.wait_for_timeout(200)
    handles = boxes.element_handles()
    pane = chain.locator(".oxe-graph-viewport").bounding_box()
    box_handle = next(
        h for h in handles
        if (b := h.bounding_box()) and b["y"] > pane["y"] + 40 and b["y"] + b["height"] < pane["y"] + pane["height"] - 40
        and "scope enc/layer." in h.evaluate("g => g.querySelector('title').textContent")
        and "double-click to open" in h.evaluate("g => g.querySelector('title').textContent")
    )  # fmt: skip
    title = box_handle.evaluate("g => g.querySelector('title').textContent.split('\\n')[0]")
    before = page.evaluate(TOP_CENTRE, [chain.element_handle(), title])
    version = chain.locator(".oxe-graph-stage svg").evaluate("s => s.outerHTML.length")
    box_handle.dblclick()
    page.wait_for_function(
        """([explorer, title]) => [...explorer.querySelectorAll('.oxe-graph-stage g.cluster title')]
          .some(t => t.textContent.split('\\n')[0] === title)""",
        arg=[chain.element_handle(), title],
        timeout=TIMEOUT_MS,
    )
    page.wait_for_timeout(300)
    after = page.evaluate(TOP_CENTRE, [chain.element_handle(), title])
    shot("chain-expanded", chain)
    assert version and after is not None
    assert abs(after[0] - before[0]) <= 40 and abs(after[1] - before[1]) <= 40, (before, after)
    figures["expand_drift_px"] = [round(after[0] - before[0], 1), round(after[1] - before[1], 1)]

    # A layout still running: busy indicator with elapsed time; Cancel stops it.
    slow = page.locator(".oxe-explorer").nth(2)
    slow.scroll_into_view_if_needed()
    busy = slow.locator(".oxe-graph-busy")
    busy.wait_for(state="visible")
    assert "laying out" in busy.inner_text() and " s" in busy.inner_text()
    assert (
        "the kernel is free while dot runs"
        in page.locator(".jp-OutputArea-output").all_inner_texts()[-1]
    )
    shot("busy", slow)
    busy.get_by_role("button", name="Cancel").click()
    busy.wait_for(state="hidden")
    slow.locator(".oxe-graph-error", has_text="cancelled").wait_for()

    # Dark theme: the graph pane turns dark with the front end.
    set_dark_theme(page)
    transformer.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    assert transformer.evaluate(BACKGROUND_LUMINANCE) < 0.25
    shot("dark", transformer)


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_the_first_minute_in_the_browser(app, browser, tmp_path):
    if app == "notebook":
        pytest.importorskip("notebook", reason="Notebook 7 is in the dev extras")
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "view.ipynb", CELLS)
    check_notebook_in_browser(
        browser, tmp_path, root / "view.ipynb", ARTIFACTS / app,
        lambda page, steps, figures: check_view(page, app, steps, figures), app=app,
    )  # fmt: skip
