"""The model diff's notebook view in a real browser: changed nodes are drawn coloured.

JupyterLab runs a notebook that compares two small exports with ``explore_diff``;
Debian's Chromium checks what a user sees: the changed node filled amber and the added
one green in the SVG, the removed node as a ghost, the legend, picking a change in the
list selecting its node, and the colours kept (and dark) in the dark theme.
Screenshots go to test-artifacts/browser-diff/.
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import (
    FILL_OF,
    Steps,
    check_notebook_in_browser,
    set_dark_theme,
    write_notebook,
)
from locations import REPO

from onnx_explorer.views._paint import PALETTE

pytestmark = [pytest.mark.browser, pytest.mark.graphviz]

ARTIFACTS = REPO / "test-artifacts" / "browser-diff"

CELLS = [
    """\
import numpy as np
from onnx import TensorProto, helper, numpy_helper
import onnx_explorer as ox

def export(version):
    w = np.arange(16, dtype=np.float32).reshape(4, 4) + (version == 2)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu")]
    if version == 1:
        nodes.append(helper.make_node("Neg", ["r"], ["n"], name="neg"))
    nodes.append(helper.make_node("LeakyRelu", ["n" if version == 1 else "r"], ["l"],
                                  name="leaky", alpha=0.1 * version))
    nodes.append(helper.make_node("MatMul", ["l", "W"], ["m"], name="matmul"))
    if version == 2:
        nodes.append(helper.make_node("Abs", ["m"], ["y"], name="abs"))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y" if version == 2 else "m", TensorProto.FLOAT, [1, 4])],
        initializer=[numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    # Long model fields, as real exporters write them: the side panel must wrap them.
    model.producer_name = "pytorch" if version == 1 else "onnxruntime.quantization.quantize_dynamic"
    model.producer_version = "2.5.1+cu121.dynamo_export" if version == 1 else "1.20.1"
    model.doc_string = "exported" if version == 1 else (
        "NormalizedQuantizedExportWithDynamicInt8WeightsAndPerChannelScalesForEveryMatMulNode")
    return model
""",
    "view = ox.explore_diff(export(1), export(2))\nview",
]

# The fill Graphviz painted the box of the node whose hover title starts with `name`.

# The colour the user sees for that box: its computed fill, through the theme's filter.
SEEN_FILTER = (
    """explorer => getComputedStyle(explorer.querySelector('.oxe-graph-stage svg')).filter"""
)


def check_diff_view(page: Any, steps: Steps, figures: dict[str, Any]) -> None:
    explorer = page.locator(".oxe-diff").first
    explorer.locator(".oxe-graph-stage g.oxe-kind-node").first.wait_for()
    explorer.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    steps.shot("diff-view", explorer)

    handle = explorer.element_handle()
    fills = {name: page.evaluate(FILL_OF, [handle, name]) for name in ("leaky", "abs", "relu")}
    figures["fills"] = fills
    assert fills["leaky"] == PALETTE["changed"].fill, fills
    assert fills["abs"] == PALETTE["added"].fill, fills
    assert fills["relu"] == PALETTE["unchanged"].fill, fills
    # the removed Neg is a ghost, and the legend is drawn
    ghost = explorer.locator(".oxe-graph-stage g.oxe-kind-ghost")
    assert ghost.count() == 1 and "neg" in ghost.locator("title").text_content()
    assert explorer.locator(".oxe-graph-stage g.oxe-kind-legend").count() == 1

    # The side panel fits its column: no table cell and no panel wider than its box.
    clipped = explorer.evaluate(
        """e => [...e.querySelectorAll('.oxe-table td, .oxe-table th')]
              .filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent)"""
    )
    figures["clipped cells"] = clipped
    assert clipped == []
    side = explorer.locator(".oxe-diff-changes").evaluate(
        "e => [e.parentElement.scrollWidth, e.parentElement.clientWidth]"
    )
    figures["side panel scroll/client width"] = side
    assert side[0] <= side[1] + 1, side

    # Picking the changed node in the list selects its box and shows both sides.
    changes = explorer.locator(".oxe-diff-changes select")
    option = changes.locator("option", has_text="leaky").first
    changes.select_option(value=option.get_attribute("value"))
    explorer.locator(".oxe-graph-stage g.oxe-selected").wait_for()
    selected = explorer.locator(".oxe-graph-stage g.oxe-selected title").text_content()
    assert selected.split("\n")[0] == "leaky"
    explorer.locator(".oxe-pre", has_text="attribute alpha: 0.1 → 0.2").wait_for()
    steps.shot("picked-changed-node", explorer)

    # Dark theme: the drawing is inverted (hues kept), the fills stay in the SVG.
    set_dark_theme(page)
    page.wait_for_timeout(500)
    assert "invert" in page.evaluate(SEEN_FILTER, handle)
    assert page.evaluate(FILL_OF, [handle, "leaky"]) == PALETTE["changed"].fill
    swatches = explorer.locator(".oxe-diff-legend")  # the side panel's, darkened alike
    assert "invert" in swatches.evaluate("e => getComputedStyle(e).filter")
    steps.shot("dark", explorer)


def test_a_changed_node_is_drawn_coloured_in_jupyterlab(browser, tmp_path):
    pytest.importorskip("onnx_explorer.model_diff", reason="the analysis of issue 15")
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "diff.ipynb", CELLS)
    check_notebook_in_browser(browser, tmp_path, root / "diff.ipynb", ARTIFACTS, check_diff_view)
