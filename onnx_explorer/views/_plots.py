"""matplotlib figures of weights: a histogram with its statistics, per-channel value ranges.

Figures are built with the object API (``matplotlib.figure.Figure``), never pyplot,
so no global figure state is touched and nothing opens a window; display one in a
notebook as it is, or save it with ``figure.savefig``. matplotlib is imported
inside the functions. Tensor names are shown as plain text (``$`` escaped, TeX
off), whatever they contain.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..stats import (
    CHUNK_ELEMENTS,
    Dequantizer,
    Histogram,
    TensorStats,
    array_histogram,
    array_stats,
    tensor_histogram,
    tensor_stats,
    tensor_values,
)
from ..weights._quant import channel_axis  # the per-op axis rules live with quantization's
from ._text import number_text, plain_text, share_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..model import Graph
    from ..tensors import Tensor

_COLOR = "#4c72b0"
#: Elements per aligned chunk when reducing per channel (multiples of a channel slice).
_CHANNEL_CHUNK = 1 << 18


def stats_lines(stats: TensorStats) -> list[str]:
    """The statistics as short lines for a legend."""
    lines = [
        f"n = {stats.count:,}",
        f"min = {number_text(stats.min, 4)}   max = {number_text(stats.max, 4)}",
        f"mean = {number_text(stats.mean, 4)}   std = {number_text(stats.std, 4)}",
        "p1 / p50 / p99 = "
        + " / ".join(number_text(p, 4) for p in (stats.p1, stats.p50, stats.p99))
        + ("" if stats.exact_percentiles else " (sampled)"),
        f"zeros = {share_text(round(stats.zeros * stats.count), stats.count)}",
    ]
    if stats.nan or stats.inf:
        lines.append(f"NaN = {stats.nan:,}   Inf = {stats.inf:,}")
    return lines


#: A figure the width of the explorer's side panel at :func:`figure_png`'s 80 dpi (336 px):
#: shown unscaled, its 10 pt text is 11 px (a 6.4-inch figure squeezed there was 5 px).
PANEL_FIGSIZE = (4.2, 2.6)


def _new_figure(figsize: tuple[float, float]) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize, layout="constrained")
    return figure, figure.subplots()


def _tensor_title(tensor: Any, dequantize: Dequantizer | None) -> str:
    dims = "×".join(str(d) for d in getattr(tensor, "shape", ())) or "scalar"
    title = f"{tensor.name}  {tensor.dtype_name}[{dims}]"
    return title + ("  (dequantized)" if dequantize is not None else "")


def histogram_figure(
    source: Tensor | Histogram | np.ndarray,
    *,
    histogram: Histogram | None = None,
    stats: TensorStats | None = None,
    bins: int = 100,
    range: tuple[float, float] | None = None,
    log: bool | None = None,
    dequantize: Dequantizer | None = None,
    title: str | None = None,
    figsize: tuple[float, float] = (6.4, 3.6),
    legend: bool = True,
) -> Figure:
    """A histogram with the statistics in its legend.

    ``source`` is a tensor (statistics and histogram are streamed, unless given as
    ``stats`` / ``histogram``), an array in memory, or a ready :class:`Histogram`.
    ``log`` (default: the histogram's own flag) draws counts on a log scale.
    ``legend=False`` leaves the statistics out (a panel shows them as a table beside the
    figure, which :data:`PANEL_FIGSIZE` sizes to the panel so its text stays ≥ 10 px).
    """
    if isinstance(source, Histogram):
        histogram = source
        default_title = ""
    elif isinstance(source, np.ndarray):
        stats = stats or array_stats(source)
        histogram = histogram or array_histogram(source, bins, range)
        default_title = ""
    else:
        stats = stats or tensor_stats(source, dequantize=dequantize)
        if histogram is None:
            hint = stats if range is None else None
            histogram = tensor_histogram(source, bins, range, dequantize=dequantize, stats=hint)
        default_title = _tensor_title(source, dequantize)
    figure, ax = _new_figure(figsize)
    label = "\n".join(stats_lines(stats)) if stats is not None else "counts"
    if histogram.underflow or histogram.overflow:
        label += f"\noutside the bins: {histogram.underflow:,} below, {histogram.overflow:,} above"
    ax.stairs(histogram.counts, histogram.edges, fill=True, color=_COLOR, alpha=0.85, label=label)
    if histogram.log if log is None else log:
        ax.set_yscale("log")
    ax.set_xlabel("dequantized value" if dequantize is not None else "value")
    ax.set_ylabel("count")
    text = title if title is not None else default_title
    if text:
        ax.set_title(plain_text(text), fontsize=10, usetex=False)
    if legend:
        ax.legend(loc="upper right", fontsize=8, handlelength=0, handletextpad=0, frameon=True)
    return figure


def figure_png(figure: Figure, dpi: float = 80) -> bytes:
    """``figure`` as PNG bytes, drawn by the Agg canvas (object API: no pyplot, no display)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)  # attaches itself as figure.canvas
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def warm_up(draw: Callable[[], bool] | None = None) -> None:
    """Import matplotlib's figure and Agg modules, then draw one tiny histogram (unless
    ``draw()`` says no by then), so the first real figure of a process is quick.

    The first figure otherwise pays ~0.3–1 s for importing matplotlib and loading its
    fonts. Only the object API and the Agg canvas are used, so this works (and opens
    nothing) in any process, with or without a display.
    """
    import matplotlib.figure  # noqa: F401 - the bulk of the cost
    from matplotlib.backends import backend_agg  # noqa: F401

    if draw is None or draw():
        values = np.array([-1.0, 0.0, 0.0, 1.0], dtype=np.float32)
        figure = histogram_figure(values, bins=4, title="warm-up", figsize=(2.0, 1.5))
        figure_png(figure, dpi=20)


# -- per-channel ranges -------------------------------------------------------------------
def _reduce_run(mins: np.ndarray, maxs: np.ndarray, v: np.ndarray, channel: int) -> None:
    mins[channel] = np.fmin(mins[channel], np.fmin.reduce(v))
    maxs[channel] = np.fmax(maxs[channel], np.fmax.reduce(v))


def _reduce(
    mins: np.ndarray, maxs: np.ndarray, v: np.ndarray, pos: int, inner: int, channels: int
) -> None:
    """Fold values at flat positions ``pos``... into per-channel min/max (channel of a flat
    position p: ``(p // inner) % channels``)."""
    n, i = v.size, 0
    unit = inner * channels
    if pos % unit == 0 and n >= unit:  # whole (outer, channel, inner) slices: one reduction
        k = n // unit
        part = v[: k * unit].reshape(k, channels, inner)
        np.fmin(mins, np.fmin.reduce(part, axis=(0, 2)), out=mins)
        np.fmax(maxs, np.fmax.reduce(part, axis=(0, 2)), out=maxs)
        i = k * unit
    if i == n:
        return
    p = pos + i
    head = min(n - i, (-p) % inner)
    if head:
        _reduce_run(mins, maxs, v[i : i + head], (p // inner) % channels)
        i, p = i + head, p + head
    k = (n - i) // inner
    if k:  # whole runs of ``inner`` values, one channel each
        rows = v[i : i + k * inner].reshape(k, inner)
        ch = (p // inner + np.arange(k)) % channels
        np.fmin.at(mins, ch, np.fmin.reduce(rows, axis=1))
        np.fmax.at(maxs, ch, np.fmax.reduce(rows, axis=1))
        i, p = i + k * inner, p + k * inner
    if i < n:
        _reduce_run(mins, maxs, v[i:], (p // inner) % channels)


def channel_ranges(
    tensor: Tensor,
    axis: int = 0,
    *,
    dequantize: Dequantizer | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel (min, max) of the finite values along ``axis``, streamed.

    Channels with no finite value get NaN. With ``dequantize`` the ranges are of the
    real values, laid out as ``dequantize.output_shape``.
    """
    shape = tuple(getattr(dequantize, "output_shape", tensor.shape)) or (1,)
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of range for shape {shape}")
    channels = shape[axis]
    inner = math.prod(shape[axis + 1 :])
    mins = np.full(channels, np.inf)
    maxs = np.full(channels, -np.inf)
    if channels == 0 or inner == 0:
        return mins, maxs
    # Chunks that start on whole channel slices keep the fast path (see _reduce).
    unit = inner * channels
    step = unit * 4 // math.gcd(unit, 4)
    chunk = step * max(1, _CHANNEL_CHUNK // step) if step <= CHUNK_ELEMENTS else CHUNK_ELEMENTS
    values = tensor_values(tensor, dequantize, chunk, block=chunk)
    for pos, block in values.blocks():
        v = values.widen(block)
        if values.is_float and v.size and not (math.isfinite(v.min()) and math.isfinite(v.max())):
            v = np.where(np.isfinite(v), v, np.nan)  # fmin/fmax skip NaN
        _reduce(mins, maxs, v, pos, inner, channels)
    missing = ~np.isfinite(mins)
    mins[missing] = np.nan
    maxs[missing] = np.nan
    return mins, maxs


def channel_ranges_figure(
    tensor: Tensor,
    axis: int | None = None,
    *,
    graph: Graph | None = None,
    dequantize: Dequantizer | None = None,
    title: str | None = None,
    figsize: tuple[float, float] = (6.4, 3.6),
) -> Figure:
    """Per-output-channel min..max ranges of a weight, one vertical bar per channel.

    ``axis`` defaults to :func:`channel_axis` from the consumer in ``graph`` (Conv:
    0, MatMul: last, Gemm: by ``transB``), or 0 without a graph.
    """
    shape = tuple(getattr(dequantize, "output_shape", tensor.shape))
    if axis is None:
        axis = 0 if dequantize is not None else channel_axis(graph, tensor.name, len(shape))
    mins, maxs = channel_ranges(tensor, axis, dequantize=dequantize)
    figure, ax = _new_figure(figsize)
    x = np.arange(mins.size)
    ax.vlines(x, mins, maxs, color=_COLOR, linewidth=1.0 if mins.size <= 512 else 0.5)
    if mins.size <= 64:
        ax.plot(x, mins, "_", color=_COLOR)
        ax.plot(x, maxs, "_", color=_COLOR)
    ax.axhline(0.0, color="0.6", linewidth=0.6)
    ax.set_xlabel(f"channel (axis {axis} of {len(shape)})" if shape else "channel")
    ax.set_ylabel("dequantized value" if dequantize is not None else "value")
    if mins.size:
        ax.set_xlim(-0.5 - mins.size * 0.01, mins.size - 0.5 + mins.size * 0.01)
    text = title if title is not None else f"{_tensor_title(tensor, dequantize)}: channel ranges"
    ax.set_title(plain_text(text), fontsize=10, usetex=False)
    return figure


__all__ = [
    "channel_axis",
    "channel_ranges",
    "channel_ranges_figure",
    "figure_png",
    "histogram_figure",
    "plain_text",
    "stats_lines",
    "warm_up",
]
