"""Repeated blocks folded, in a real browser at 1400×900: a generated 32-layer decoder draws
one fold ``layers.0–31 ×32``; its stepper shows layer 17; selecting a node of another layer
in the node list moves the stepper there and shows the node. Screenshots go to
test-artifacts/browser-folds/."""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import Steps, check_notebook_in_browser, write_notebook
from locations import REPO

pytestmark = [pytest.mark.browser, pytest.mark.graphviz]

ARTIFACTS = REPO / "test-artifacts" / "browser-folds"

CELLS = [
    f"import sys\nsys.path.insert(0, {str(REPO / 'tests' / 'views')!r})\n"
    "from repeat_models import decoder\nimport onnx_explorer as ox",
    "ex = ox.explore(decoder(32, scaled_layer=9))\nex.graph_view.wait(120)\nex",
]

#: The heading of the open fold's frame and the labels of the fold boxes drawn.
FOLD_TEXT = """explorer => [...explorer.querySelectorAll('.oxe-graph-stage g.oxe-kind-fold')]
  .map(g => [...g.querySelectorAll('text')].map(t => t.textContent).join(' '))"""


def check_folds(page: Any, steps: Steps, figures: dict[str, Any]) -> None:
    explorer = page.locator(".oxe-explorer").first
    explorer.locator(".oxe-graph-stage g.oxe-kind-node").first.wait_for()
    explorer.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    steppers = explorer.locator(".oxe-graph-folds .oxe-graph-fold")
    assert steppers.count() == 1, "one fold, one stepper"
    assert "layers.0–31 ×32" in steppers.first.inner_text()
    figures["first view"] = explorer.evaluate(FOLD_TEXT)
    steps.shot("first-view", explorer)

    # The stepper shows layer 17.
    picker = steppers.first.locator("select")
    picker.select_option(value="17")
    page.wait_for_function(
        f"e => ({FOLD_TEXT})(e).some(t => t.includes('showing layers.17'))",
        arg=explorer.element_handle(), timeout=60_000,
    )  # fmt: skip
    page.wait_for_timeout(500)
    figures["layer 17"] = explorer.evaluate(FOLD_TEXT)
    assert any("layers.0–16" in t for t in figures["layer 17"])
    assert any("layers.18–31" in t for t in figures["layer 17"])
    steps.shot("stepper-layer-17", explorer)

    # A node of layer 23 picked in the node list: the stepper moves, the node is drawn.
    search = explorer.locator(".oxe-node-search input").first
    search.fill("/model/layers.23/self_attn/Softmax")
    options = explorer.locator(".oxe-node-results select")
    option = options.locator("option").first
    option.wait_for()
    options.select_option(value=option.get_attribute("value"))
    page.wait_for_function(
        f"e => ({FOLD_TEXT})(e).some(t => t.includes('showing layers.23'))",
        arg=explorer.element_handle(), timeout=60_000,
    )  # fmt: skip
    selected = explorer.locator(".oxe-graph-stage g.oxe-selected")
    selected.wait_for()
    page.wait_for_timeout(600)
    assert "Softmax" in (selected.text_content() or "")
    assert steppers.first.locator("select").input_value() == "23"
    steps.shot("node-list-layer-23", explorer)

    # The weights button names the outlier layer.
    steppers.first.get_by_role("button", name="weights").click()
    report = explorer.locator(".oxe-graph-fold-report")
    page.wait_for_function(
        "e => e.textContent.includes('most different')", arg=report.element_handle(),
        timeout=60_000,
    )  # fmt: skip
    figures["report"] = report.inner_text()
    assert "is layers.9" in figures["report"]
    steps.shot("weights-report", explorer)


def test_a_32_layer_decoder_draws_one_fold_with_a_stepper(browser, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "folds.ipynb", CELLS)
    check_notebook_in_browser(browser, tmp_path, root / "folds.ipynb", ARTIFACTS, check_folds)
