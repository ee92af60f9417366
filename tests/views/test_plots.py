"""Weight figures: object-API matplotlib, stats in the legend, per-channel ranges streamed."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.stats import array_histogram
from onnx_explorer.views import _plots as plots
from onnx_explorer.views._plots import (
    channel_axis,
    channel_ranges,
    channel_ranges_figure,
    histogram_figure,
    plain_text,
)
from onnx_explorer.weights._quant import find_dequantization

RNG = np.random.default_rng(11)


def _graph(nodes, arrays, opset=21):
    inits = [numpy_helper.from_array(a, n) for n, a in arrays.items()]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None) for n in nodes],
        inits,
    )
    return ox.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])).graph


def _render(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=50)
    return buffer.getvalue()


def test_histogram_figure_has_stats_in_legend_and_no_pyplot_state():
    from matplotlib.figure import Figure

    values = RNG.standard_normal((16, 8)).astype(np.float32)
    graph = _graph([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": values})
    before = _pyplot_figures()
    figure = histogram_figure(graph.initializers["w"], bins=20)
    assert isinstance(figure, Figure)
    assert _pyplot_figures() == before  # nothing registered with pyplot
    ax = figure.axes[0]
    legend = ax.get_legend().get_texts()[0].get_text()
    assert "n = 128" in legend and "mean = " in legend and "zeros = " in legend
    assert ax.get_title().startswith("w  float32[16×8]")
    assert _render(figure).startswith(b"\x89PNG")


def _pyplot_figures() -> list[int]:
    pyplot = sys.modules.get("matplotlib.pyplot")
    return list(pyplot.get_fignums()) if pyplot is not None else []


def test_histogram_figure_from_a_histogram_and_log_scale():
    hist = array_histogram(RNG.standard_normal(1000), bins=10, log=True)
    figure = histogram_figure(hist)
    assert figure.axes[0].get_yscale() == "log"
    figure = histogram_figure(hist, log=False)
    assert figure.axes[0].get_yscale() == "linear"
    figure = histogram_figure(np.array([1.0, np.nan, np.inf]), bins=3)
    legend = figure.axes[0].get_legend().get_texts()[0].get_text()
    assert "NaN = 1" in legend and "1 above" in legend


def test_legend_shows_zeros_as_a_count_and_a_percentage():
    figure = histogram_figure(np.array([0.0, 0.0, 1.0, 2.0, 0.0, 3.0, 4.0, 5.0]), bins=4)
    legend = figure.axes[0].get_legend().get_texts()[0].get_text()
    assert "zeros = 3 (37.5 %)" in legend


def test_figure_png_and_warm_up_use_agg_and_leave_pyplot_alone():
    before = _pyplot_figures()
    plots.warm_up()
    png = plots.figure_png(histogram_figure(np.arange(10.0), bins=5), dpi=40)
    assert png.startswith(b"\x89PNG")
    assert _pyplot_figures() == before


def test_names_are_plain_text():
    name = "$\\alpha$ weight\x1b[31m"
    graph = _graph([helper.make_node("Relu", [name], ["y"])], {name: np.ones(3, np.float32)})
    figure = histogram_figure(graph.initializers[name])
    title = figure.axes[0].title
    assert title.get_text().startswith(r"\$\alpha\$ weight\x1b[31m")
    assert not title.get_usetex()
    _render(figure)  # mathtext would have parsed \alpha; plain text renders as is
    assert plain_text("x" * 200).count("…") == 1 and len(plain_text("x" * 200)) <= 90


def test_channel_axis_from_consumers():
    arrays = {
        "conv_w": np.zeros((4, 2, 3, 3), np.float32),
        "deconv_w": np.zeros((2, 4, 3, 3), np.float32),
        "mm_w": np.zeros((5, 6), np.float32),
        "gemm_t": np.zeros((6, 5), np.float32),
        "q_w": np.zeros((5, 6), np.int8),
        "q_s": np.array(0.1, np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "conv_w"], ["a"]),
        helper.make_node("ConvTranspose", ["x", "deconv_w"], ["b"]),
        helper.make_node("MatMul", ["x", "mm_w"], ["c"]),
        helper.make_node("Gemm", ["x", "gemm_t"], ["d"], transB=1),
        helper.make_node("DequantizeLinear", ["q_w", "q_s"], ["q_real"]),
        helper.make_node("MatMul", ["x", "q_real"], ["e"]),
    ]
    graph = _graph(nodes, arrays)
    assert channel_axis(graph, "conv_w", 4) == 0
    assert channel_axis(graph, "deconv_w", 4) == 1
    assert channel_axis(graph, "mm_w", 2) == 1
    assert channel_axis(graph, "gemm_t", 2) == 0
    assert channel_axis(graph, "q_w", 2) == 1  # QDQ: the MatMul after the DequantizeLinear
    assert channel_axis(None, "anything", 3) == 0


@pytest.mark.parametrize(
    ("shape", "axis"),
    [((6, 3, 2, 2), 0), ((37, 11), 1), ((37, 11), 0), ((4, 5, 6), 1), ((7,), 0), ((), 0)],
)
@pytest.mark.parametrize("small_chunks", [False, True])
def test_channel_ranges_match_numpy(monkeypatch, shape, axis, small_chunks):
    if small_chunks:  # chunks that cut channels anywhere: the slow, general path
        monkeypatch.setattr(plots, "_CHANNEL_CHUNK", 5)
        monkeypatch.setattr(plots, "CHUNK_ELEMENTS", 7)
    values = RNG.standard_normal(shape).astype(np.float32)
    graph = _graph([helper.make_node("Relu", ["w"], ["y"])], {"w": values})
    mins, maxs = channel_ranges(graph.initializers["w"], axis)
    arr = values.reshape(shape or (1,))
    others = tuple(d for d in range(arr.ndim) if d != axis)
    np.testing.assert_array_equal(mins, arr.min(axis=others))
    np.testing.assert_array_equal(maxs, arr.max(axis=others))


def test_channel_ranges_skip_non_finite_values():
    values = np.array([[1.0, np.nan], [np.inf, -2.0], [np.nan, np.nan]], np.float32)
    graph = _graph([helper.make_node("Relu", ["w"], ["y"])], {"w": values})
    mins, maxs = channel_ranges(graph.initializers["w"], 0)
    np.testing.assert_array_equal(mins, [1.0, -2.0, np.nan])
    np.testing.assert_array_equal(maxs, [1.0, -2.0, np.nan])
    with pytest.raises(ValueError):
        channel_ranges(graph.initializers["w"], 2)


def test_channel_ranges_figure_for_dequantized_conv_weights():
    q = RNG.integers(-128, 128, (8, 2, 3, 3), dtype=np.int8)
    scale = np.linspace(0.01, 0.08, 8).astype(np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["w_real"], axis=0)]
    graph = _graph(nodes, {"w": q, "s": scale})
    dq = find_dequantization(graph, "w")
    mins, maxs = channel_ranges(graph.initializers["w"], 0, dequantize=dq)
    real = q.astype(np.float32) * scale[:, None, None, None]
    np.testing.assert_allclose(mins, real.min(axis=(1, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(maxs, real.max(axis=(1, 2, 3)), rtol=1e-6)
    figure = channel_ranges_figure(graph.initializers["w"], dequantize=dq)
    ax = figure.axes[0]
    assert "(dequantized)" in ax.get_title() and ax.get_ylabel() == "dequantized value"
    _render(figure)


def test_channel_ranges_figure_picks_the_axis_from_the_graph():
    w = RNG.standard_normal((3, 40)).astype(np.float32)
    graph = _graph([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": w})
    figure = channel_ranges_figure(graph.initializers["w"], graph=graph)
    assert figure.axes[0].get_xlabel() == "channel (axis 1 of 2)"
