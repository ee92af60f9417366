"""End to end in a real browser: the quick-start notebook in JupyterLab and Notebook 7.

A throwaway Jupyter server (temporary profile, 127.0.0.1, free port) serves a copy of
notebooks/01_quick_start.ipynb; Debian's Chromium, driven by Playwright, runs all its
cells from the Run menu and checks what a user sees in the first explorer (the CNN):
the graph is drawn, the node list is filled, clicking a node in the graph shows it in
the attribute panel, and picking an initializer in the tensors tab shows a histogram.
Screenshots of every step go to test-artifacts/browser/<app>/.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from browser_support import (
    ALL_CELLS_RAN,
    JupyterServer,
    Steps,
    jupyter_server,
    run_all_cells,
    wait_for_kernel,
)
from locations import REPO

pytestmark = [pytest.mark.browser, pytest.mark.graphviz]

NOTEBOOK = REPO / "notebooks" / "01_quick_start.ipynb"
ARTIFACTS = REPO / "test-artifacts" / "browser"
TIMEOUT_MS = 60_000  # any single wait; JupyterLab on 2 cores is slow to start
RUN_ALL_TIMEOUT_MS = 150_000  # a fresh kernel importing onnx, matplotlib, ipywidgets

NODE_CLICKED = "/features/conv1/Conv"  # the first Conv of tiny_cnn; has a `pads` attribute
TENSOR_PICKED = "conv1.weight"

CELL_ERRORS = """() => [...document.querySelectorAll('.jp-OutputArea-output')]
  .map(e => e.textContent)
  .filter(t => t.includes('Traceback') || t.trimStart().startsWith('onnx_explorer:'))"""

HISTOGRAM_SHOWN = """img => img.complete && img.naturalWidth > 0 && !!img.getAttribute('src')"""

IMAGE_BYTES_HEAD = """async img => {
  const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
  return [bytes.length, Array.from(bytes.slice(0, 8))];
}"""

PNG_SIGNATURE = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]


def check_quick_start(page: Any, server: JupyterServer, steps: Steps) -> None:
    # Should a "Select Kernel" dialog cover the page before an action, accept the default.
    page.add_locator_handler(
        page.locator(".jp-Dialog").get_by_role("button", name="Select", exact=True),
        lambda button: button.click(),
    )
    page.goto(server.notebook_url(NOTEBOOK.name))
    page.wait_for_selector(".jp-Notebook .jp-CodeCell")
    wait_for_kernel(server)
    steps.shot("opened")

    run_all_cells(page)
    page.wait_for_function(ALL_CELLS_RAN, timeout=RUN_ALL_TIMEOUT_MS)
    assert page.evaluate(CELL_ERRORS) == []

    explorer = page.locator(".oxe-explorer").first
    drawn = explorer.locator(".oxe-graph svg g.oxe-kind-node")
    drawn.first.wait_for()
    steps.shot("explorer", explorer, focus=explorer)
    assert drawn.count() == 9  # every node of tiny_cnn is drawn

    node_options = explorer.locator(".oxe-node-results select option")
    node_options.first.wait_for(state="attached")
    assert node_options.count() == 9
    attributes = explorer.locator(".oxe-attributes")
    assert "pads" not in attributes.inner_text()

    # Click a node in the drawing (its tooltip <title> starts with the node's name): the
    # attribute panel shows it, the node list selects it, the drawing highlights it.
    target = drawn.filter(has=page.locator("title", has_text=NODE_CLICKED))
    assert target.count() == 1
    target.click()
    attributes.get_by_text(NODE_CLICKED, exact=True).first.wait_for()
    shown = attributes.inner_text()
    assert "Conv" in shown and "pads" in shown  # its op type and its attribute
    node_list_choice = explorer.locator(".oxe-node-results select").evaluate(
        "s => s.selectedIndex >= 0 ? s.options[s.selectedIndex].textContent : ''"
    )
    assert NODE_CLICKED in node_list_choice
    explorer.locator(".oxe-graph svg g.oxe-selected").first.wait_for()
    assert explorer.locator(".oxe-graph svg g.oxe-selected").count() == 1
    steps.shot("node-clicked", explorer, focus=target)

    # Tensors tab, pick an initializer: its details and histogram appear.
    explorer.locator(".oxe-tabs .lm-TabBar-tab", has_text="tensors").click()
    tensor_list = explorer.locator(".oxe-tensor-list select")
    tensor_list.wait_for()
    option = tensor_list.locator("option", has_text=TENSOR_PICKED).first
    tensor_list.select_option(value=option.get_attribute("value"))
    details = explorer.locator(".oxe-tensor-details")
    details.get_by_text("float32").first.wait_for()
    assert TENSOR_PICKED in details.inner_text()
    histogram = explorer.locator("img.oxe-histogram, .oxe-histogram img").first
    histogram.wait_for()
    page.wait_for_function(HISTOGRAM_SHOWN, arg=histogram.element_handle())
    size, head = histogram.evaluate(IMAGE_BYTES_HEAD)
    assert size > 1000 and head == PNG_SIGNATURE
    steps.shot("histogram", explorer, focus=histogram)


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_quick_start_in_the_browser(app, browser, tmp_path):
    if app == "notebook":
        pytest.importorskip("notebook", reason="Notebook 7 is in the dev extras")
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)  # the notebook writes next to this copy
    artifacts = ARTIFACTS / app
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)

    with jupyter_server(app, root, tmp_path / "home") as server:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(TIMEOUT_MS)
        console: list[str] = []
        page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
        steps = Steps(page, artifacts)
        try:
            check_quick_start(page, server, steps)
        except Exception:
            steps.shot("failure")
            raise
        finally:
            (artifacts / "browser-console.log").write_text("\n".join(console), encoding="utf-8")
            page.close()
            (artifacts / f"jupyter-{app}.log").write_text(server.log_tail(200_000))
