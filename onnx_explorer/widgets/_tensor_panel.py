"""The tensor panel: a sortable list of stored tensors and details of the selected one.

Bytes are read only when a tensor is selected; a failure shows in the panel and
leaves the rest of the explorer working. The first panel of a process starts a
background warm-up of matplotlib, so the first histogram does not pay its import.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import traitlets

from ..errors import ExplorerError
from ..model import Graph
from ..tensors import Tensor
from ..views._tables import TensorRow, sort_rows, stats_rows, tensor_rows
from ..views._text import as_text, human_bytes, preview_values, shape_text, typed_shape_text
from . import _html as h
from ._picking import QuietPicking

LIST_LIMIT = 500  # rows sent to the browser at once; the filter box narrows the rest
PROGRESS_MIN_BYTES = 16 << 20  # show a progress bar for tensors larger than this
_QUANTIZED_DTYPES = {
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "int4",
    "uint4",
    "int2",
    "uint2",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
}
#: Long names (300-character scoped paths are common) wrap anywhere instead of widening the
#: panel or being cut; the heading always shows the whole name.
_WRAP_STYLE = (
    "<style>.oxe-tensor-details .oxe-title,.oxe-tensor-details .oxe-table td+td"
    "{overflow-wrap:anywhere;word-break:break-word}"
    ".oxe-tensor-details .oxe-table td:first-child{white-space:nowrap}</style>"
)


class TensorPanel(QuietPicking, widgets.VBox):
    """Initializers and Constant values of the current graph: sortable, filterable, inspectable.

    ``selected`` holds the name of the tensor shown; ``layout_note(tensor)`` may add a remark
    such as TensorFlow's HWIO filter layout.
    """

    selected = traitlets.Unicode(None, allow_none=True)

    def __init__(
        self,
        graph: Graph,
        layout_note: Callable[[Tensor], str | None] | None = None,
        *,
        listed: bool = True,
        **kwargs: Any,
    ) -> None:
        """``listed=False``: list the tensors only when :meth:`activate` is called (the
        explorer does that when its tab is first opened)."""
        self.layout_note = layout_note
        self.sort_by = widgets.Dropdown(
            options=[("largest first", "size"), ("name", "name"), ("dtype", "dtype"),
                     ("location", "location")],
            value="size", description="sort", layout=widgets.Layout(width="220px"),
        )  # fmt: skip
        self.filter_box = widgets.Text(
            placeholder="filter by name", layout=widgets.Layout(width="auto", flex="1 1 auto")
        )
        self.listing = widgets.Select(rows=10, layout=widgets.Layout(width="100%"))
        self.count = widgets.Label()
        self.details = widgets.HTML()
        self.progress = widgets.FloatProgress(
            min=0.0, max=1.0, description="reading", layout=widgets.Layout(visibility="hidden")
        )
        self.plot = widgets.Image(format="png", layout=widgets.Layout(max_width="520px"))
        self.dequantize_box = widgets.Checkbox(
            value=True, description="dequantized values", indent=False,
            layout=widgets.Layout(display="none"),
        )  # fmt: skip
        super().__init__(
            [widgets.HBox([self.sort_by, self.filter_box]), self.listing, self.count,
             self.progress, self.dequantize_box, self.details, self.plot],
            **kwargs,
        )  # fmt: skip
        self.add_class("oxe-tensors")
        self.listing.add_class("oxe-tensor-list")
        self.details.add_class("oxe-tensor-details")
        self.plot.add_class("oxe-histogram")
        self._extra: dict[str, Tensor] = {}
        self._by_name: dict[str, Tensor] = {}
        self._active = listed
        self.sort_by.observe(lambda _c: self.refresh(), "value")
        self.filter_box.observe(lambda _c: self.refresh(), "value")
        self.listing.observe(self._on_pick, "value")
        self.dequantize_box.observe(self._on_dequantize_toggle, "value")
        self.set_graph(graph)
        _start_plot_warm_up()

    # -- public ------------------------------------------------------------------
    def set_graph(self, graph: Graph) -> None:
        """Show another graph's tensors (listed when the panel is first shown)."""
        self.graph = graph
        self._rows: list[TensorRow] | None = None
        if self._active:
            self.refresh()
        else:
            with self.quietly():
                self.listing.options = []
            self.count.value = ""
        self._show_nothing()

    def activate(self) -> None:
        """The panel is on screen: list the tensors now, if not done yet."""
        if not self._active:
            self._active = True
            self.refresh()

    @property
    def rows(self) -> list[TensorRow]:
        # Built on first use: 54,000 tensors take ~1 s, which explore() must not wait for.
        if self._rows is None:
            self._rows = tensor_rows(self.graph)
            self._by_name = {row.name: row.tensor for row in self._rows}
        return self._rows

    def tensor(self, name: str) -> Tensor:
        self.rows  # noqa: B018 - builds the name index on first use
        tensor = self._by_name.get(name) or self._extra.get(name)
        if tensor is None:
            raise KeyError(f"no stored tensor named {name!r} in graph {self.graph.path!r}")
        return tensor

    def refresh(self) -> None:
        needle = self.filter_box.value.strip().lower()
        rows = [r for r in self.rows if needle in r.name.lower()] if needle else self.rows
        rows = sort_rows(rows, self.sort_by.value)
        shown = rows[:LIST_LIMIT]
        with self.quietly():
            self.listing.options = [(self._label(r), r.name) for r in shown]
            names = {r.name for r in shown}
            self.listing.value = self.selected if self.selected in names else None
        total_bytes = sum(r.nbytes for r in rows)
        more = f" (first {LIST_LIMIT} shown; filter to narrow)" if len(rows) > LIST_LIMIT else ""
        self.count.value = f"{len(rows):,} tensors, {human_bytes(total_bytes)}{more}"

    def show_tensor(self, tensor: Tensor) -> None:
        """Show any tensor, including attribute tensors not in the list."""
        self.activate()
        if tensor.name not in self._by_name:
            self._extra[tensor.name] = tensor
        self.selected = None  # re-selecting the same name must refresh too
        self.selected = tensor.name

    # -- internals ---------------------------------------------------------------
    @staticmethod
    def _label(row: TensorRow) -> str:
        return as_text(
            f"{row.name}   {typed_shape_text(row.dtype, row.shape)}  {human_bytes(row.nbytes)}"
            f"  {row.location}"
        )

    def _on_dequantize_toggle(self, _change: Any) -> None:
        if self.selected is not None:
            self._show(self.tensor(self.selected))

    @traitlets.observe("selected")
    def _on_selected(self, change: Any) -> None:
        name = change["new"]
        if name is None:
            return
        self.show_picked(self.listing, name)
        try:
            tensor = self.tensor(name)
        except KeyError as exc:
            self.details.value = h.error(exc.args[0])
            self.plot.value = b""
            return
        self._show(tensor)

    def _show_nothing(self) -> None:
        self.details.value = (
            h.STYLE + _WRAP_STYLE + h.muted("Select a tensor to read it and see its statistics.")
        )
        self.plot.value = b""

    def _show(self, tensor: Tensor) -> None:
        rows: list[tuple[str, str]] = [
            ("name", tensor.name), ("dtype", tensor.dtype_name),
            ("shape", shape_text(tensor.shape)),
            ("elements", f"{tensor.size:,}"), ("bytes", human_bytes(tensor.nbytes)),
            ("stored", tensor.location.describe()),
        ]  # fmt: skip
        note = self.layout_note(tensor) if self.layout_note else None
        if note:
            rows.append(("layout", note))
        dequantization, problem = self._dequantization(tensor)
        self.dequantize_box.layout.display = "flex" if dequantization is not None else "none"
        if dequantization is not None:
            rows.append(("quantized", dequantization.describe()))
        elif problem:
            rows.append(("quantized", problem))
        if dequantization is not None and not self.dequantize_box.value:
            dequantization = None
        head = h.STYLE + _WRAP_STYLE + h.title(tensor.name) + h.table(rows)
        self.details.value = head + h.muted("reading…")
        self.plot.value = b""
        try:
            values_html, png = self._read(tensor, dequantization)
        except (ExplorerError, OSError, ValueError, MemoryError) as exc:
            self.details.value = head + h.error(f"cannot read this tensor: {exc}")
            return
        finally:
            self.progress.layout.visibility = "hidden"
        self.details.value = head + values_html
        self.plot.value = png

    def _dequantization(self, tensor: Tensor) -> tuple[Any, str]:
        """How a consumer dequantizes this tensor, if one does (QuantizeLinear, QLinear*...)."""
        from ..weights._quant import ScaleUnknownError, find_dequantization

        if tensor.dtype_name not in _QUANTIZED_DTYPES:
            return None, ""
        try:
            return find_dequantization(self.graph, tensor.name, tensor.shape), ""
        except ScaleUnknownError as exc:  # "quantized (scale unknown): ..."
            return None, str(exc)
        except (ExplorerError, ValueError) as exc:
            return None, f"scale/zero point unusable: {exc}"

    def _read(self, tensor: Tensor, dequantization: Any = None) -> tuple[str, bytes]:
        from ..stats import tensor_histogram, tensor_stats

        progress = None
        if tensor.nbytes >= PROGRESS_MIN_BYTES:
            self.progress.value = 0.0
            self.progress.layout.visibility = "visible"

            def progress(fraction: float) -> None:
                self.progress.value = float(fraction)

        first = next(tensor.iter_chunks(max_elements=16), None)
        label = "first values"
        if first is not None and dequantization is not None:
            first = dequantization.apply(first, 0)  # the values the statistics describe
            label = "first values (dequantized)"
        preview = h.table([(label, preview_values(first) if first is not None else "[]")])
        if not tensor.dtype_info.is_numeric:
            return preview, b""
        source: Any = tensor if progress is None else _Progress(tensor, progress)
        stats = tensor_stats(source, dequantize=dequantization)
        histogram = tensor_histogram(source, stats=stats, dequantize=dequantization)
        rows = stats_rows(stats)
        if stats.count != tensor.size:  # packed formats: more real values than stored elements
            rows.insert(0, ("values", f"{stats.count:,}"))
        header = ["statistic", "dequantized value" if dequantization is not None else "value"]
        _wait_for_warm_up()  # never import matplotlib from two threads at once
        from ..views._plots import PANEL_FIGSIZE, figure_png, histogram_figure

        figure = histogram_figure(
            tensor, histogram=histogram, stats=stats, dequantize=dequantization,
            figsize=PANEL_FIGSIZE, legend=False,
        )  # fmt: skip
        return preview + h.table(rows, header), figure_png(figure, dpi=80)


class _Progress:
    """A tensor whose chunk stream reports how far it has got (for the progress bar)."""

    def __init__(self, tensor: Tensor, report: Callable[[float], None]) -> None:
        self._tensor = tensor
        self._report = report

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tensor, name)

    def iter_chunks(self, max_elements: int = 1 << 22) -> Any:
        done, total = 0, max(1, self._tensor.size)
        for chunk in self._tensor.iter_chunks(max_elements):
            yield chunk
            done += chunk.size
            self._report(done / total)


#: Longest wait of a pick for a warm-up still running (it normally ends within a second).
WARM_UP_WAIT = 30.0
_warm_up_lock = threading.Lock()
_warm_up_thread: threading.Thread | None = None
_pick_waiting = threading.Event()


def _start_plot_warm_up() -> None:
    """Once per process: import matplotlib and draw a tiny figure in a thread.

    Not a daemon: Python stops daemon threads where they stand when it finalizes, and
    one inside matplotlib's C++ (fonts, Agg) then aborts the process at exit. Exit waits
    for this one instead (about a second, once)."""
    global _warm_up_thread
    with _warm_up_lock:
        if _warm_up_thread is not None:
            return
        thread = threading.Thread(target=_warm_up, name="onnx-explorer-plot-warm-up", daemon=False)
        thread.start()
        _warm_up_thread = thread


def _wait_for_warm_up() -> None:
    """Let a running warm-up finish (two threads importing matplotlib's circular modules at
    once could see a half-initialised module); once its imports are done it skips drawing."""
    thread = _warm_up_thread
    if thread is not None and thread.is_alive() and thread is not threading.current_thread():
        _pick_waiting.set()
        thread.join(WARM_UP_WAIT)


def _warm_up() -> None:
    try:
        from ..views._plots import warm_up

        warm_up(draw=lambda: not _pick_waiting.is_set())
    except Exception:  # a failed warm-up only leaves the first pick slower
        pass
