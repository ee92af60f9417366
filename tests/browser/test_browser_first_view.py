"""The first view of real models, their If bodies and a SavedModel's network, in a real
browser at 1400×900: readable node boxes in the pane at once, never empty space.

Models from tests/corpus (real exports) and tests/data/savedmodel (written by
TensorFlow). Screenshots go to test-artifacts/browser-first-view/<app>/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_support import Steps, check_notebook_in_browser, write_notebook
from locations import REPO

pytestmark = [pytest.mark.browser, pytest.mark.graphviz]

ARTIFACTS = REPO / "test-artifacts" / "browser-first-view"
CORPUS = REPO / "tests" / "corpus"
SAVED = REPO / "tests" / "data" / "savedmodel"

#: (label, source, graph path to show: "/" the main graph)
VIEWS = [
    ("paddle detector", CORPUS / "ppocrv4_det.onnx", "/"),
    ("paddle classifier", CORPUS / "ppocr_mobile_v2_cls.onnx", "/"),
    ("QDQ transformer", CORPUS / "smart_turn_v3_2_cpu.onnx", "/"),
    ("tf2onnx CNN", CORPUS / "magika_standard_v3_3.onnx", "/"),
    ("VAD main graph", CORPUS / "silero_vad_16k_op15.onnx", "/"),
    ("VAD If body", CORPUS / "silero_vad_16k_op15.onnx", "/model/decoder/If_1/then_branch"),
    ("SavedModel network", SAVED / "tf2_mlp", "function::__inference___call___26"),
    ("safetensors checkpoint", CORPUS / "other_formats" / "silero_vad_16k.safetensors", "/"),
    ("TFLite model", CORPUS / "other_formats" / "hey_jarvis.tflite", "/"),
    ("GGUF model", Path("tiny_llm.gguf"), "/"),  # written by the reference writer below
]

# A small GGUF with quantized blocks, written by the format's own library (gguf-py).
GGUF_WRITER = """
import gguf, numpy as np
rng = np.random.default_rng(0)
writer = gguf.GGUFWriter("tiny_llm.gguf", "llama")
writer.add_name("tiny llm")
writer.add_tensor("token_embd.weight", rng.standard_normal((64, 32)).astype(np.float32))
for i in range(2):
    for part in ("attn_q", "attn_k", "ffn_up"):
        q = gguf.quants.quantize(rng.standard_normal((32, 64)).astype(np.float32),
                                 gguf.GGMLQuantizationType.Q8_0)
        writer.add_tensor(f"blk.{i}.{part}.weight", q, raw_shape=q.shape,
                          raw_dtype=gguf.GGMLQuantizationType.Q8_0)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
"""

SETUP = "import onnx_explorer as ox\nviews = {}\n" + GGUF_WRITER


def _cell(label: str, source: Path, path: str) -> str:
    return (
        f"ex = ox.explore({str(source)!r})\n"
        + (f"ex.show_graph({path!r})\n" if path != "/" else "")
        + "ex.graph_view.wait(120)\n"
        + f"views[{label!r}] = ex\n"
        + "ex"
    )


CELLS = [SETUP, *(_cell(*view) for view in VIEWS)]

# Operator and scope boxes wholly inside the pane (not the ellipses of values a body
# reads from outside), and the on-screen heights of their labels.
IN_PANE = """explorer => {
  const pane = explorer.querySelector('.oxe-graph-viewport').getBoundingClientRect();
  const inside = r => r.left >= pane.left && r.right <= pane.right && r.top >= pane.top && r.bottom <= pane.bottom;
  const boxes = [...explorer.querySelectorAll('.oxe-graph-stage g.oxe-kind-node, .oxe-graph-stage g.oxe-kind-scope')]
    .filter(g => inside(g.getBoundingClientRect()));
  const heights = boxes.flatMap(g => [...g.querySelectorAll('text')].map(t => t.getBoundingClientRect().height));
  return {boxes: boxes.length, heights};
}"""


# The minimap's size, and whether the view's frame shows inside it (None: no minimap).
MINIMAP = """explorer => {
  const m = explorer.querySelector('.oxe-graph-minimap');
  if (!m || getComputedStyle(m).display === 'none') return null;
  const box = m.getBoundingClientRect();
  const f = m.querySelector('.oxe-graph-minimap-frame').getBoundingClientRect();
  const visible = f.right > box.left && f.left < box.right && f.bottom > box.top && f.top < box.bottom;
  return {box: [box.width, box.height], "frame visible": visible};
}"""


def check_first_views(page: Any, steps: Steps, figures: dict[str, Any]) -> None:
    explorers = page.locator(".oxe-explorer")
    explorers.nth(len(VIEWS) - 1).locator(".oxe-graph-stage g.node").first.wait_for()
    for i, (label, _source, _path) in enumerate(VIEWS):
        explorer = explorers.nth(i)
        explorer.locator(".oxe-graph-stage g.node").first.wait_for()
        explorer.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        seen = explorer.evaluate(IN_PANE)
        heights = sorted(seen["heights"])
        figures[label] = {
            "boxes in pane": seen["boxes"],
            "median label px": heights[len(heights) // 2] if heights else 0,
        }
        minimap = explorer.evaluate(MINIMAP)
        if minimap is not None:  # a drawing bigger than the pane: a minimap, never a sliver
            figures[label]["minimap"] = minimap
            assert minimap["box"][0] >= 40 and minimap["box"][1] >= 40, (label, minimap)
            assert minimap["frame visible"], (label, minimap)
        steps.shot(f"{i:02d}-{label.replace(' ', '-')}")
        assert seen["boxes"] >= 1, f"{label}: no node box in the pane"
        assert heights and heights[len(heights) // 2] >= 10, f"{label}: labels {heights[:5]}"
    check_exports(page, explorers.first, figures)
    check_kernel_gone(page, explorers.first, steps)


def check_kernel_gone(page: Any, explorer: Any, steps: Steps) -> None:
    """A click answered while the kernel runs shows nothing; once it is shut down, the
    next click says the view no longer reaches it (before: clicks silently ignored)."""
    notice = explorer.locator(".oxe-graph-offline")
    box = explorer.locator(".oxe-graph-stage g.oxe-kind-node").first
    box.click()
    page.wait_for_timeout(6000)
    assert not notice.is_visible()
    page.evaluate(
        """async () => {
          const base = document.querySelector('body').dataset.baseUrl || '/';
          const token = JSON.parse(document.getElementById('jupyter-config-data').textContent).token;
          const headers = {Authorization: `token ${token}`};
          const kernels = await (await fetch(`${base}api/kernels`, {headers})).json();
          for (const k of kernels) await fetch(`${base}api/kernels/${k.id}`, {method: 'DELETE', headers});
        }"""
    )
    page.wait_for_timeout(1000)
    box.click()
    notice.wait_for(state="visible", timeout=15_000)
    assert "did not answer" in notice.inner_text()
    steps.shot("kernel-gone", explorer)


def check_exports(page: Any, explorer: Any, figures: dict[str, Any]) -> None:
    """SVG and PNG are named after the model and the view; the PNG is what the pane shows
    (Shift+click: the whole drawing)."""
    from PIL import Image

    explorer.scroll_into_view_if_needed()
    with page.expect_download() as svg:
        explorer.get_by_role("button", name="SVG", exact=True).click()
    assert svg.value.suggested_filename == "ppocrv4_det_main.svg"
    with page.expect_download() as view:
        explorer.get_by_role("button", name="PNG", exact=True).click()
    assert view.value.suggested_filename == "ppocrv4_det_main_view.png"
    with page.expect_download() as whole:
        explorer.get_by_role("button", name="PNG", exact=True).click(modifiers=["Shift"])
    assert whole.value.suggested_filename == "ppocrv4_det_main.png"
    pane = explorer.locator(".oxe-graph-viewport").bounding_box()
    with Image.open(view.value.path()) as picture:
        view_size = picture.size
    with Image.open(whole.value.path()) as picture:
        whole_size = picture.size
    figures["exports"] = {"pane": [pane["width"], pane["height"]], "view png": view_size,
                          "whole png": whole_size}  # fmt: skip
    assert view_size[0] <= 2 * pane["width"] + 2 and view_size[1] <= 2 * pane["height"] + 2
    assert whole_size[1] > view_size[1]


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_every_real_model_body_and_function_opens_on_readable_nodes(app, browser, tmp_path):
    if app == "notebook":
        pytest.importorskip("notebook", reason="Notebook 7 is in the dev extras")
    root = tmp_path / "root"
    root.mkdir()
    write_notebook(root / "first_view.ipynb", CELLS)
    check_notebook_in_browser(
        browser, tmp_path, root / "first_view.ipynb", ARTIFACTS / app, check_first_views, app=app
    )
