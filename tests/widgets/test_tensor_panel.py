"""The tensor panel: readable statistics, dequantized previews, whole names, a quick first pick."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.stats import TensorStats
from onnx_explorer.views._tables import stats_rows
from onnx_explorer.views._text import share_text
from onnx_explorer.widgets._tensor_panel import TensorPanel


def _panel(nodes, arrays, opset=21):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a, n) for n, a in arrays.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return TensorPanel(ox.load(model).graph)


def _row(details: str, label: str) -> str:
    """The (unescaped) value cell of the details row labelled ``label``."""
    match = re.search(f"<td[^>]*>{re.escape(html.escape(label))}</td><td>(.*?)</td>", details)
    assert match, f"no row {label!r} in the panel"
    return html.unescape(match.group(1))


def _quantized_panel():
    q = np.array([[-100, 50, 0], [20, 127, -3]], dtype=np.int8)
    scale = np.array([0.5, 0.25, 2.0], dtype=np.float32)
    zero_point = np.array([0, 10, -3], dtype=np.int8)
    nodes = [
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["w"], axis=1, name="dq"),
        helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
    ]
    panel = _panel(nodes, {"q": q, "s": scale, "z": zero_point})
    return panel, (q.astype(np.float32) - zero_point) * scale


def test_statistics_have_readable_labels_and_no_internal_flags():
    values = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(4, 6)
    panel = _panel([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": values})
    panel.listing.value = "w"
    details = panel.details.value
    assert "exact_percentiles" not in details and "is_float" not in details
    assert "abs_max" not in details and ">p50<" not in details
    for label in ("min", "max", "mean", "std", "largest |value|", "1st percentile", "median"):
        assert _row(details, label)
    assert _row(details, "min") == "-1" and _row(details, "max") == "1"
    assert _row(details, "NaN") == "0 (0.0 %)"


def test_zeros_are_shown_as_a_count_and_a_percentage():
    values = np.array([0, 0, 0, 1, 2, 3, 4, 5], dtype=np.int32)
    panel = _panel([helper.make_node("Add", ["x", "w"], ["y"])], {"w": values})
    panel.listing.value = "w"
    assert _row(panel.details.value, "zeros") == "3 (37.5 %)"
    assert "NaN" not in panel.details.value  # integers have none to count


def test_shares_never_round_to_none_or_all():
    assert share_text(1_234, 10_000) == "1,234 (12.3 %)"
    assert share_text(1, 10_000_000) == "1 (<0.1 %)"
    assert share_text(9_999_999, 10_000_000) == "9,999,999 (>99.9 %)"
    assert share_text(0, 0) == "0"


def test_sampled_percentiles_are_said_to_be_estimates():
    stats = TensorStats(
        count=10_000_000, min=-2.0, max=2.0, mean=0.0, std=1.0, abs_max=2.0, zeros=0.25,
        nan=0, inf=0, p1=-1.9, p50=0.0, p99=1.9, exact_percentiles=False,
    )  # fmt: skip
    rows = dict(stats_rows(stats, sample_size=1000))
    assert rows["zeros"] == "2,500,000 (25.0 %)"
    assert rows["percentiles"] == "estimated from a random sample of 1,000 values"
    assert not any("exact" in label or "is_float" in label for label in rows)


def test_quantized_weight_shows_dequantized_first_values():
    panel, real = _quantized_panel()
    panel.listing.value = "q"
    details = panel.details.value
    shown = _row(details, "first values (dequantized)")
    assert shown == "[" + ", ".join(f"{v:.6g}" for v in real.reshape(-1)) + "]"
    assert "-100" not in shown  # not the stored int8
    assert "dequantized value" in details  # the statistics say so too
    panel.dequantize_box.value = False  # the stored integers, labelled plainly
    details = panel.details.value
    assert "first values (dequantized)" not in details
    assert _row(details, "first values").startswith("[-100, 50, 0, 20, 127")


def test_a_300_character_name_appears_whole_and_escaped_and_wraps():
    name = "/model/" + "layers.0/self_attn/" * 14 + '<b>"q&k"</b>'
    name = name + "x" * (300 - len(name))
    assert len(name) == 300
    panel = _panel(
        [helper.make_node("MatMul", ["x", name], ["y"])],
        {name: np.ones((2, 2), np.float32)},
    )
    panel.listing.value = name
    details = panel.details.value
    assert f'<div class="oxe-title">{html.escape(name, quote=True)}</div>' in details
    assert "<b>" not in details  # escaped, never a tag
    assert "…" not in details  # nothing cut
    assert "overflow-wrap:anywhere" in details


def test_warm_up_draws_with_agg_only_and_makes_the_first_pick_quick():
    # A fresh process with a display backend that cannot work here: the warm-up uses the
    # object API and Agg, never pyplot, so nothing breaks and the first pick is quick.
    code = textwrap.dedent(
        """
        import sys, time
        import onnx_explorer as ox
        from onnx_explorer.samples import tiny_transformer
        from onnx_explorer.widgets import _tensor_panel as tensor_panel

        ex = ox.explore(tiny_transformer())
        tensor_panel._warm_up_thread.join(60)
        assert "matplotlib.figure" in sys.modules
        assert "matplotlib.backends.backend_agg" in sys.modules
        assert "matplotlib.pyplot" not in sys.modules
        start = time.perf_counter()
        ex.show_tensor(ex.tensor_panel.rows[0].name)
        took = time.perf_counter() - start
        assert ex.tensor_panel.plot.value[:4] == b"\\x89PNG"
        assert "matplotlib.pyplot" not in sys.modules
        print(f"{took:.3f}")
        """
    )
    env = {**os.environ, "MPLBACKEND": "TkAgg", "DISPLAY": ""}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr  # not even from the warm-up thread
    assert float(result.stdout.split()[-1]) < 2.0  # generous: ~0.15 s, but CI machines are busy


def test_a_failing_warm_up_leaves_the_panel_working():
    code = textwrap.dedent(
        """
        import onnx_explorer.samples
        import onnx_explorer as ox
        from onnx_explorer.views import _plots as plots
        from onnx_explorer.widgets import _tensor_panel as tensor_panel

        def broken():
            raise RuntimeError("no fonts")

        plots.warm_up = broken
        panel = tensor_panel.TensorPanel(ox.load(onnx_explorer.samples.tiny_transformer()).graph)
        tensor_panel._warm_up_thread.join(60)
        panel.listing.value = panel.rows[0].name
        assert panel.plot.value[:4] == b"\\x89PNG"
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "no fonts" not in result.stderr


def test_the_histogram_is_drawn_at_the_panels_width_so_its_text_stays_readable():
    # A 6.4-inch figure squeezed into the 340 px panel had 5 px text; drawn at the
    # panel's own width it is shown unscaled (10 pt at 80 dpi: 11 px).
    import struct

    values = np.linspace(-1.0, 1.0, 600, dtype=np.float32).reshape(20, 30)
    panel = _panel([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": values})
    panel.listing.value = "w"
    png = panel.plot.value
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    assert png[:4] == b"\x89PNG" and 300 <= width <= 360 and height < width
