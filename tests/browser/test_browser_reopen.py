"""A saved notebook with explorers, reopened without the kernel that made them.

The notebook is run by nbclient (no widget state saved, as JupyterLab and Notebook 7 save
by default) and its kernel shut down. Reopened in JupyterLab 4 and in Notebook 7 (Debian's
Chromium, 1400x900), each explorer output must show its static copy — summary and drawing
— through the package's front-end extension, never "Error displaying widget: model not
found". A trusted notebook (one the user saved) and an untrusted one (someone else's) both
get the drawing, and a hand-crafted hostile output next to them runs, loads and restyles
nothing. Trusted, the test then runs the notebook (the live widgets replace
the static copies), saves it and reloads the page with the kernel still running (the live
widgets come back from the kernel). Screenshots go to test-artifacts/browser-reopen/<case>/.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import urllib.error
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser_support import (
    JupyterServer,
    execute_notebook,
    jupyter_server,
    trust_notebook,
    wait_for_kernel,
)
from locations import REPO

ARTIFACTS = REPO / "test-artifacts" / "browser-reopen"
LABEXTENSION = REPO / "onnx_explorer" / "labextension"
NAME = "saved_explorers.ipynb"
TIMEOUT_MS = 60_000
RUN_TIMEOUT_MS = 150_000

VIEW_MIMETYPE = "application/vnd.onnx-explorer.view+json"
WIDGET_VIEW_MIMETYPE = "application/vnd.jupyter.widget-view+json"
CELLS = [
    "import onnx_explorer\nfrom onnx_explorer.samples import tiny_cnn, tiny_transformer",
    "onnx_explorer.explore(tiny_cnn())",
    "%load_ext onnx_explorer\ntiny_transformer()",  # a ModelProto displays as the explorer
]
TITLES = ["onnx_explorer: tiny_cnn", "onnx_explorer: tiny_transformer"]

# A saved output crafted to attack the static copy's renderer: every trick below must be
# dropped (nothing runs, loads, links or restyles the page) while the harmless parts stay.
HOSTILE_HTML = """<style>body { display: none !important } .oxe-title { color: rgb(1, 2, 3) }</style>
<style>@import url(http://127.0.0.1:9/a.css); .oxe-x { background: url(http://127.0.0.1:9/b.png) }</style>
<div class="oxe-static"><div class="oxe-title">crafted</div>
<script>window.__oxePwned = 1</script>
<img src="x" onerror="window.__oxePwned = 2">
<div id="oxe-clobber" class="oxe-box" style="position: fixed; inset: 0; max-height: 10px; background-image: url(http://127.0.0.1:9/c.png)">box</div>
<svg width="200" height="50"><g class="node" onclick="window.__oxePwned = 3"><text x="5" y="20">t</text></g>
<foreignObject><iframe src="javascript:parent.__oxePwned = 4"></iframe></foreignObject>
<a href="javascript:window.__oxePwned = 5"><text x="5" y="40">link</text></a>
<image href="http://127.0.0.1:9/d.png" width="5" height="5"/></svg>
<iframe srcdoc="<script>parent.__oxePwned = 6</script>"></iframe></div>"""
HOSTILE_CHECK = """out => ({
  pwned: window.__oxePwned ?? null,
  bodyShown: getComputedStyle(document.body).display !== 'none',
  titleColor: getComputedStyle(out.querySelector('.oxe-title')).color,
  boxPosition: getComputedStyle(out.querySelector('.oxe-box')).position,
  boxMaxHeight: getComputedStyle(out.querySelector('.oxe-box')).maxHeight,
  boxBackground: getComputedStyle(out.querySelector('.oxe-box')).backgroundImage,
  dropped: out.querySelectorAll(
    'script, img, iframe, foreignObject, image, [id], [href], [onclick], [onerror]').length,
  styles: [...out.querySelectorAll('style')].map(s => s.textContent).join(' '),
  nodes: out.querySelectorAll('svg g.node').length,
})"""

# Every explorer output is drawn by the extension's renderer (its own mime type won).
OUTPUTS = ".oxe-output"
STATES = """() => [...document.querySelectorAll('.oxe-output')].map(e => e.dataset.oxeState)"""
SETTLED = """([n, wanted]) => {
  const states = [...document.querySelectorAll('.oxe-output')].map(e => e.dataset.oxeState);
  return states.length === n && states.every(s => wanted.includes(s));
}"""


def test_prebuilt_extension_is_committed_and_complete():
    # CI never builds the extension: the committed build must be whole and name its entry.
    package = json.loads((LABEXTENSION / "package.json").read_text())
    assert package["name"] == "onnx-explorer"
    entry = LABEXTENSION / package["jupyterlab"]["_build"]["load"]
    assert entry.is_file() and entry.stat().st_size > 1000
    assert VIEW_MIMETYPE.encode() in b"".join(p.read_bytes() for p in entry.parent.glob("*.js"))


def test_prebuilt_extension_is_installed():
    from jupyter_core.paths import jupyter_path

    found = [
        Path(d) / "onnx-explorer"
        for d in jupyter_path("labextensions")
        if (Path(d) / "onnx-explorer" / "package.json").is_file()
    ]
    assert found, "the onnx-explorer labextension is not installed: run `bash scripts/setup.sh`"
    installed = json.loads((found[0] / "package.json").read_text())
    committed = json.loads((LABEXTENSION / "package.json").read_text())
    assert installed["jupyterlab"]["_build"] == committed["jupyterlab"]["_build"], (
        f"{found[0]} is an older build: rerun `bash scripts/setup.sh` (or pip install .)"
    )


@pytest.mark.graphviz
def test_explorer_bundle_names_the_extension_type():
    import onnx_explorer as ox
    from onnx_explorer.samples import tiny_cnn

    bundle = ox.explore(tiny_cnn())._repr_mimebundle_()
    view = bundle[WIDGET_VIEW_MIMETYPE]
    assert bundle[VIEW_MIMETYPE] == {"model_id": view["model_id"], "fallback": "text/html"}
    assert "<svg" in bundle["text/html"]


@pytest.fixture(scope="module")
def saved_notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The notebook, run once by nbclient and saved (its kernel is gone)."""
    pytest.importorskip("nbclient")
    path = tmp_path_factory.mktemp("saved") / NAME
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nbformat.write(nb, path)
    execute_notebook(path)
    nb = nbformat.read(path, as_version=4)
    crafted = nbformat.v4.new_code_cell("# an output crafted by hand")
    data = {
        "text/plain": "crafted",
        "text/html": HOSTILE_HTML,
        WIDGET_VIEW_MIMETYPE: {"version_major": 2, "version_minor": 0, "model_id": "0" * 32},
        VIEW_MIMETYPE: {"model_id": "0" * 32, "fallback": "text/html"},
    }
    crafted.outputs = [nbformat.v4.new_output("display_data", data=data)]
    nb.cells.append(crafted)
    nbformat.write(nb, path)
    return path


class Steps:
    """Numbered screenshots: the page, and each explorer output alone."""

    def __init__(self, page: Any, directory: Path) -> None:
        self.page = page
        self.directory = directory
        self.count = 0

    def shot(self, name: str, outputs: Any = None) -> None:
        self.count += 1
        stem = f"{self.count:02d}-{name}"
        self.page.screenshot(path=str(self.directory / f"{stem}.png"))
        for i in range(outputs.count() if outputs is not None else 0):
            outputs.nth(i).scroll_into_view_if_needed()
            outputs.nth(i).screenshot(path=str(self.directory / f"{stem}-output{i + 1}.png"))


def drawn_nodes(path: Path) -> list[int]:
    """How many Graphviz nodes each explorer's saved static copy draws."""
    nb = nbformat.read(path, as_version=4)
    html = [
        o["data"]["text/html"]
        for c in nb.cells
        for o in c.get("outputs", [])
        if VIEW_MIMETYPE in o.get("data", {})
    ]
    return [len(re.findall(r'<g id="[^"]*" class="node', h)) for h in html][: len(TITLES)]


def kernel_ready(server: JupyterServer) -> None:
    """wait_for_kernel, riding out the 500 /api/kernels answers seen while a kernel starts."""
    for _ in range(10):
        try:
            return wait_for_kernel(server)
        except urllib.error.HTTPError as error:
            if error.code != 500:
                raise
            time.sleep(1)
    wait_for_kernel(server)


def check_static(page: Any, expected_nodes: list[int]) -> None:
    outputs = page.locator(".oxe-output")
    for i, (title, nodes) in enumerate(zip(TITLES, expected_nodes)):
        output = outputs.nth(i)
        drawing = output.locator(".oxe-output-static svg g.node")
        drawing.first.wait_for(state="visible")
        assert drawing.count() == nodes
        assert output.locator(".oxe-output-static svg").first.is_visible()
        shown = output.inner_text()
        assert title in shown and "Static view: run the notebook" in shown
        assert "parameters" in shown  # the summary table
        # The static copy's own stylesheet survived the allow-list (.oxe-* rules only).
        weight = output.locator(".oxe-title").evaluate("e => getComputedStyle(e).fontWeight")
        assert weight == "600"
        assert output.locator("script, [id], [href], foreignObject").count() == 0
        # Its inline style (the drawing scrolls past 600 px) survived too.
        wrapper = output.locator(".oxe-output-static svg").first.locator("xpath=..")
        assert wrapper.evaluate("e => getComputedStyle(e).maxHeight") == "600px"
    text = page.locator("#main, body").first.inner_text()
    assert "model not found" not in text and "Error displaying widget" not in text

    crafted = outputs.nth(len(TITLES)).element_handle()
    found = page.evaluate(HOSTILE_CHECK, crafted)
    assert found["pwned"] is None and found["bodyShown"]
    assert found["titleColor"] == "rgb(1, 2, 3)"  # .oxe-* rules kept, `body` rule dropped
    assert found["boxPosition"] == "static" and found["boxMaxHeight"] == "10px"
    assert found["boxBackground"] == "none"
    assert found["dropped"] == 0 and found["nodes"] == 1
    assert "url(" not in found["styles"] and "body" not in found["styles"]


def reopen(page: Any, server: JupyterServer, steps: Steps, expected_nodes: list[int]) -> None:
    page.add_locator_handler(
        page.locator(".jp-Dialog").get_by_role("button", name="Select", exact=True),
        lambda button: button.click(),
    )
    page.goto(server.notebook_url(NAME))
    outputs = page.locator(OUTPUTS)
    total = len(TITLES) + 1  # the explorers and the crafted output
    outputs.nth(total - 1).wait_for()
    assert outputs.count() == total
    # A fresh kernel starts; the widget manager has none of the saved widgets.
    kernel_ready(server)
    page.wait_for_function(SETTLED, arg=[total, ["static"]], timeout=TIMEOUT_MS)
    page.wait_for_timeout(2000)  # a late answer from the widget manager would show now
    assert page.evaluate(STATES) == ["static"] * total
    check_static(page, expected_nodes)
    steps.shot("reopened-static", outputs)


def saved_model_ids(path: Path) -> list[str]:
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception:  # being written
        return []
    return [
        o["data"][VIEW_MIMETYPE]["model_id"]
        for c in nb.cells
        for o in c.get("outputs", [])
        if VIEW_MIMETYPE in o.get("data", {})
    ]


def run_live_and_reload(page: Any, server: JupyterServer, steps: Steps) -> None:
    """Run the notebook: live widgets replace the copies; save, reload: they come back."""
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.wait_for_function(SETTLED, arg=[len(TITLES), ["live"]], timeout=RUN_TIMEOUT_MS)
    outputs = page.locator(".oxe-output")
    first = outputs.nth(0).locator(".oxe-explorer .oxe-graph svg g.oxe-kind-node")
    first.first.wait_for()
    assert first.count() == 9  # every node of tiny_cnn, in the live graph widget
    assert page.locator(".oxe-output-static").count() == 0
    steps.shot("run-live", outputs)

    saved = server.root_dir / NAME
    before = saved_model_ids(saved)
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while saved_model_ids(saved) == before and time.monotonic() < deadline:
        time.sleep(0.25)
    assert saved_model_ids(saved) != before, "the notebook was not saved"
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')")
    page.goto(server.notebook_url(NAME))  # a reload; the notebook's kernel keeps running
    page.locator(".oxe-output").nth(len(TITLES) - 1).wait_for()
    page.wait_for_function(SETTLED, arg=[len(TITLES), ["live"]], timeout=TIMEOUT_MS)
    first.first.wait_for()
    assert first.count() == 9
    steps.shot("reloaded-live", page.locator(".oxe-output"))


@pytest.mark.browser
@pytest.mark.graphviz
@pytest.mark.parametrize(
    ("app", "trusted"),
    [("lab", True), ("notebook", True), ("lab", False)],
    ids=["lab", "notebook", "lab-untrusted"],
)
def test_saved_notebook_reopened_shows_static_explorers(
    app, trusted, saved_notebook, browser, tmp_path
):
    if app == "notebook":
        pytest.importorskip("notebook", reason="Notebook 7 is in the dev extras")
    expected_nodes = drawn_nodes(saved_notebook)
    assert len(expected_nodes) == len(TITLES) and all(n > 5 for n in expected_nodes)
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(saved_notebook, root / NAME)
    home = tmp_path / "home"
    if trusted:
        trust_notebook(root / NAME, home)  # as if the user had saved it
    case = app + ("" if trusted else "-untrusted")
    artifacts = ARTIFACTS / case
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)

    with jupyter_server(app, root, home) as server:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        console: list[str] = []
        page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
        steps = Steps(page, artifacts)
        try:
            reopen(page, server, steps, expected_nodes)
            if trusted:
                run_live_and_reload(page, server, steps)
        except Exception:
            steps.shot("failure")
            raise
        finally:
            (artifacts / "browser-console.log").write_text("\n".join(console), encoding="utf-8")
            page.close()
            (artifacts / f"jupyter-{app}.log").write_text(server.log_tail(200_000))


DIFF_CELLS = [
    "import onnx_explorer\nfrom onnx_explorer.samples import tiny_cnn",
    "a = tiny_cnn()\nb = tiny_cnn()\nb.graph.node[1].name = 'renamed'\ndel b.graph.node[-1]\n"
    "b.graph.output[0].name = b.graph.node[-1].output[0]\n"
    "onnx_explorer.explore_diff(a, b)",
]
WIDE_CELLS = [
    "import onnx_explorer\nfrom onnx import TensorProto, helper",
    "branches = [helper.make_node('Relu', ['x'], [f'b{i}'], name=f'branch_{i}') for i in range(40)]\n"
    "total = helper.make_node('Sum', [f'b{i}' for i in range(40)], ['y'], name='sum')\n"
    "graph = helper.make_graph(branches + [total], 'wide',\n"
    "    [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 4])],\n"
    "    [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 4])])\n"
    "onnx_explorer.explore(helper.make_model(graph))",
]
# The scroll box around the static drawing: is the graph input inside what it shows?
INPUT_IN_VIEW = """out => {
  const box = [...out.querySelectorAll('.oxe-output-static div')].find(d => d.querySelector(':scope > svg'));
  const input = [...box.querySelectorAll('g.node')].find(g => g.querySelector('ellipse'));
  const b = box.getBoundingClientRect(), r = input.getBoundingClientRect();
  return {scrollLeft: box.scrollLeft, wide: box.scrollWidth > box.clientWidth,
          inView: r.left >= b.left && r.right <= b.right && r.top >= b.top && r.bottom <= b.bottom};
}"""


def reopened_static(browser: Any, tmp_path: Path, cells: list[str], app: str, check: Any) -> None:
    """Run ``cells`` with nbclient, reopen the saved notebook in ``app`` with a fresh kernel
    and, once its one explorer output shows its static copy, ``check(page, output)``."""
    pytest.importorskip("nbclient")
    root = tmp_path / "root"
    root.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path = root / "saved.ipynb"
    nbformat.write(nb, path)
    execute_notebook(path)
    home = tmp_path / "home"
    trust_notebook(path, home)
    with jupyter_server(app, root, home) as server:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        try:
            page.add_locator_handler(
                page.locator(".jp-Dialog").get_by_role("button", name="Select", exact=True),
                lambda button: button.click(),
            )
            page.goto(server.notebook_url(path.name))
            output = page.locator(OUTPUTS).first
            output.wait_for()
            kernel_ready(server)
            page.wait_for_function(SETTLED, arg=[1, ["static"]], timeout=TIMEOUT_MS)
            output.locator(".oxe-output-static svg g.node").first.wait_for(state="visible")
            check(page, output)
        finally:
            page.close()


def _artifacts(name: str) -> Path:
    folder = ARTIFACTS / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


@pytest.mark.browser
@pytest.mark.graphviz
@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_a_saved_diff_reopened_shows_its_change_lists(app, browser, tmp_path):
    # The static copy of a diff holds <ul><li> change rows: the extension's allow-list
    # dropped them once, leaving the reopened diff without its lists.
    if app == "notebook":
        pytest.importorskip("notebook", reason="Notebook 7 is in the dev extras")
    artifacts = _artifacts(f"diff-{app}")

    def check(page: Any, output: Any) -> None:
        rows = output.locator(".oxe-output-static li")
        rows.first.wait_for(state="visible")
        assert rows.count() >= 2  # the removed node and the renamed one, at least
        assert output.locator(".oxe-output-static svg g.node").count() > 3
        page.screenshot(path=str(artifacts / "reopened-diff.png"))

    reopened_static(browser, tmp_path, DIFF_CELLS, app, check)


@pytest.mark.browser
@pytest.mark.graphviz
def test_a_wide_static_drawing_opens_on_its_input(browser, tmp_path):
    # A wide drawing at 1:1 in a scroll box showed its empty top-left corner; the
    # extension scrolls it to the graph input.
    artifacts = _artifacts("wide")

    def check(page: Any, output: Any) -> None:
        output.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        seen = output.evaluate(INPUT_IN_VIEW)
        page.screenshot(path=str(artifacts / "reopened-wide.png"))
        assert seen["wide"] and seen["scrollLeft"] > 0 and seen["inView"], seen

    reopened_static(browser, tmp_path, WIDE_CELLS, "lab", check)
