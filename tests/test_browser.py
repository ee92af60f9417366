"""End to end in a real browser: JupyterLab runs the quick-start notebook in Chromium.

Checks what a user sees: the graph is drawn, the node list is filled, clicking a node in
the drawing shows its attributes, picking an initializer shows a histogram. Screenshots of
each step go to ``test-artifacts/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from browser_support import CHROMIUM, CHROMIUM_ARGS, jupyter_server

pytestmark = [pytest.mark.browser, pytest.mark.graphviz]

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "01_quick_start.ipynb"
ARTIFACTS = ROOT / "test-artifacts"
LONG = 180_000  # ms: the first kernel start and imports on 2 cores are slow


@pytest.fixture
def page_factory():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield lambda: browser.new_page(viewport={"width": 1500, "height": 1100})
        finally:
            browser.close()


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def _run_all_cells(page, app: str) -> None:
    page.locator(".jp-Notebook").first.wait_for(timeout=LONG)
    # A "Select Kernel" dialog may still appear on a fresh profile: accept the default.
    dialog = page.locator(".jp-Dialog-button.jp-mod-accept")
    if dialog.count():
        dialog.first.click()
    # Wait for the kernel, then make the notebook the current widget before running it.
    page.locator(".jp-Notebook .jp-Cell").first.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-Notebook-ExecutionIndicator, "
        ".jp-KernelStatus, .jp-StatusBar-TextItem')].some(e => /Idle|idle/.test("
        "e.getAttribute('data-status') || e.textContent))",
        timeout=LONG,
    )
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_quick_start_notebook_in_the_browser(tmp_path, page_factory, app):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    with jupyter_server(app, root, tmp_path / "home") as server:
        page = page_factory()
        try:
            page.goto(server.notebook_url(NOTEBOOK.name), timeout=LONG)
            _run_all_cells(page, app)
            explorer = page.locator(".oxe-explorer").first
            explorer.wait_for(timeout=LONG)
            explorer.scroll_into_view_if_needed()

            # The graph is drawn.
            node_boxes = explorer.locator(".oxe-graph svg g.oxe-kind-node")
            node_boxes.first.wait_for(timeout=LONG)
            assert node_boxes.count() > 3
            _shot(page, f"{app}-1-graph")

            # The node list is filled.
            options = explorer.locator(".oxe-node-results select option")
            options.first.wait_for(state="attached", timeout=LONG)
            assert options.count() >= 9

            # Clicking a node in the drawing shows its attributes.
            box = explorer.locator(".oxe-graph svg g.oxe-kind-node", has_text="Conv").first
            title = box.locator("title").text_content() or ""
            name = title.splitlines()[0]
            box.click()
            panel = explorer.locator(".oxe-attributes")
            panel.get_by_text(name, exact=True).first.wait_for(timeout=60_000)
            assert "pads" in panel.inner_text()  # a Conv attribute, shown in the panel
            assert explorer.locator(".oxe-graph svg g.oxe-selected").count() == 1
            _shot(page, f"{app}-2-attributes")

            # Picking an initializer in the tensors tab shows its histogram.
            explorer.locator(".oxe-tabs .lm-TabBar-tab", has_text="tensors").click()
            listing = explorer.locator(".oxe-tensor-list select")
            listing.wait_for(timeout=30_000)
            listing.select_option(index=0)
            image = explorer.locator(".oxe-histogram")
            page.wait_for_function(
                "el => el.naturalWidth > 100", arg=image.element_handle(), timeout=60_000
            )
            assert "mean" in explorer.locator(".oxe-tensor-details").inner_text()
            _shot(page, f"{app}-3-histogram")
        except Exception:
            _shot(page, f"{app}-failure")
            print(server.log_tail())
            raise
        finally:
            page.close()
