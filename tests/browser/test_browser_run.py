"""Activations in a real browser: after ``ex.run(feeds)`` the explorer shows a node's
output statistics and histogram, and the jump button selects the node that made a NaN.

JupyterLab runs a notebook that builds a model whose ``divide_by_itself`` node turns
zeros into NaN; Chromium clicks "go to first non-finite" and reads the panel.
Screenshots go to test-artifacts/browser-run/.
"""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import Steps, check_notebook_in_browser, write_notebook
from locations import REPO

pytestmark = [pytest.mark.browser, pytest.mark.graphviz]

ARTIFACTS = REPO / "test-artifacts" / "browser-run"

CELLS = [
    """\
import tempfile, os
import numpy as np
import onnx
from onnx import TensorProto, helper
import onnx_explorer as ox

graph = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"], name="relu"),
     helper.make_node("Div", ["r", "r"], ["q"], name="divide_by_itself"),
     helper.make_node("Add", ["q", "x"], ["y"], name="add")],
    "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
path = os.path.join(tempfile.mkdtemp(), "nan.onnx")
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
""",
    "ex = ox.explore(path)\n"
    "result = ex.run({'x': np.array([[1, -1, 2, 0]], np.float32)}, progress=False)\nex",
]


def check_activations(page: Any, steps: Steps, figures: dict[str, Any]) -> None:
    explorer = page.locator(".oxe-explorer").first
    explorer.locator(".oxe-graph-stage g.oxe-kind-node").first.wait_for()
    explorer.scroll_into_view_if_needed()
    panel = explorer.locator(".oxe-activations")
    panel.locator(".oxe-pre", has_text="first NaN/Inf made at: divide_by_itself").wait_for()
    steps.shot("after-run", explorer)

    panel.get_by_role("button", name="go to first NaN/Inf made").click()
    explorer.locator(".oxe-graph-stage g.oxe-selected").wait_for()
    selected = explorer.locator(".oxe-graph-stage g.oxe-selected title").text_content()
    assert selected.split("\n")[0] == "divide_by_itself"
    panel.locator(".oxe-error", has_text="2 NaN").wait_for()
    text = panel.inner_text()
    figures["panel"] = text
    assert "float32 ⟨1×4⟩" in text and "abs max" in text
    assert panel.locator("svg.oxe-activation-histogram rect").count() > 0
    steps.shot("first-non-finite-selected", explorer, focus=panel)


def test_the_explorer_shows_a_nodes_activation_stats_in_jupyterlab(browser, tmp_path):
    pytest.importorskip("onnxruntime")
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "run.ipynb", CELLS)
    check_notebook_in_browser(browser, tmp_path, root / "run.ipynb", ARTIFACTS, check_activations)
