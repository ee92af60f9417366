"""Colouring the graph by MACs in a real browser: fills change, a colour bar explains them.

JupyterLab runs a notebook that opens a small transformer and calls
``ex.overlay("macs")``; Debian's Chromium checks what a user sees: the heaviest MatMul
filled with the top of the scale instead of its op colour, the colour bar with "macs"
and its ends, the dropdown switching to "params" (fills change again, no new layout),
and the same in the dark theme. Screenshots go to test-artifacts/browser-overlay/.
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import (
    FILL_OF,
    PAGE_TIMEOUT_MS,
    Steps,
    check_notebook_in_browser,
    set_dark_theme,
    write_notebook,
)
from locations import REPO

from onnx_explorer.views._colour_scale import colour_at

pytestmark = [pytest.mark.browser, pytest.mark.graphviz]

ARTIFACTS = REPO / "test-artifacts" / "browser-overlay"
HEAVIEST = "/lm_head/MatMul"  # 1×64 @ 64×500: the most MACs of the model
MATMUL_OWN_FILL = "#dbe4ff"

CELLS = [
    """\
import onnx_explorer as ox
from onnx_explorer import samples
ex = ox.explore(samples.tiny_transformer(), dims={"batch": 1, "sequence": 1})
ex""",
    """\
ex.graph_view.wait(60)
layouts = ex.graph_view.layouts
ex.overlay("macs")""",
]


def _zoom_on(page: Any, explorer: Any, name: str) -> None:
    """Select the node in the list, so the drawing centres it at a readable zoom."""
    search = explorer.locator(".oxe-node-search input").first
    search.fill(name)
    options = explorer.locator(".oxe-node-results select")
    option = options.locator("option").first
    option.wait_for()
    options.select_option(value=option.get_attribute("value"))
    explorer.locator(".oxe-graph-stage g.oxe-selected").wait_for()
    page.wait_for_timeout(600)


def check_overlay(page: Any, steps: Steps, figures: dict[str, Any]) -> None:
    explorer = page.locator(".oxe-explorer").first
    explorer.locator(".oxe-graph-stage g.oxe-kind-node").first.wait_for()
    explorer.scroll_into_view_if_needed()
    handle = explorer.element_handle()
    top = colour_at(1.0)
    page.wait_for_function(
        f"([e, n]) => ({FILL_OF})([e, n]) === '{top}'", arg=[handle, HEAVIEST],
        timeout=PAGE_TIMEOUT_MS,
    )  # fmt: skip
    legend = explorer.locator(".oxe-graph-legend")
    assert legend.is_visible()
    figures["legend"] = legend.inner_text()
    assert legend.locator(".oxe-graph-legend-title").inner_text() == "macs"
    assert "32.0k" in figures["legend"]  # the largest node's MACs, in human units
    bar = legend.locator(".oxe-graph-legend-bar").evaluate("e => e.style.background")
    assert "linear-gradient" in bar
    steps.shot("macs", explorer)
    _zoom_on(page, explorer, HEAVIEST)
    steps.shot("macs-zoomed", explorer)
    fills = {"macs": page.evaluate(FILL_OF, [handle, HEAVIEST])}
    assert fills["macs"] != MATMUL_OWN_FILL

    # The dropdown picks another series: the fills change on the same drawing.
    picker = explorer.locator(".oxe-overlay-bar select").first
    picker.select_option(value="params")
    page.wait_for_function(
        "e => e.querySelector('.oxe-graph-legend-title').textContent === 'params'", arg=handle
    )
    page.wait_for_timeout(300)
    fills["params"] = page.evaluate(FILL_OF, [handle, "/model/layers.0/self_attn/q_proj/MatMul"])
    figures["fills"] = fills
    assert fills["params"] not in (None, MATMUL_OWN_FILL)
    steps.shot("params", explorer)

    # Dark theme: the drawing and the colour bar are inverted alike, text stays readable.
    picker.select_option(value="macs")
    page.wait_for_function(
        "e => e.querySelector('.oxe-graph-legend-title').textContent === 'macs'", arg=handle
    )
    set_dark_theme(page)
    page.wait_for_timeout(600)
    assert "invert" in legend.locator(".oxe-graph-legend-bar").evaluate(
        "e => getComputedStyle(e).filter"
    )
    assert page.evaluate(FILL_OF, [handle, HEAVIEST]) == top
    steps.shot("macs-dark", explorer)


def test_an_overlay_colours_the_nodes_and_shows_a_legend_in_jupyterlab(browser, tmp_path):
    pytest.importorskip("onnx_explorer.metrics", reason="the analysis of issue 16")
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "overlay.ipynb", CELLS)
    check_notebook_in_browser(browser, tmp_path, root / "overlay.ipynb", ARTIFACTS, check_overlay)
