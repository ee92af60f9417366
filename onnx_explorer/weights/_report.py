"""A whole model's weights in one table: statistics and warning flags per tensor.

:func:`weights_report` streams every weight :meth:`Model.weights` lists
(initializers, Constant values and tensor attributes, in subgraphs and functions
too), one tensor at a time, releasing each before the next, so memory stays flat
over a multi-gigabyte model. A tensor that cannot be read becomes a row with an
``error`` and the report goes on. Learned values of ``ai.onnx.ml`` nodes stored as
attribute lists (tree ensembles, SVMs, linear models...) are rows too, of kind
``"attribute"`` (see :mod:`onnx_explorer.weights._attribute_parameters`).

``integer`` is True when the statistics describe integers: indices, shapes, Slice bounds
(whose ``INT64_MAX`` sentinels are not magnitudes) or quantized weights read raw. Sorting
by a statistic ranks such rows after those of real values, and they are never outliers.

Flags (the ``flags`` column, comma-separated):

- ``nan`` / ``inf``: the tensor holds NaN / infinite values;
- ``all_zero``: every element is zero;
- ``fp16_overflow``: a finite float value beyond float16's range (|x| > 65504), so a
  conversion to float16 would make it infinite;
- ``outlier`` (real values only): a value farther than ``outlier_sigma`` (default 50)
  standard deviations from the mean. Gaussian-like weights stay within ~6σ even with
  billions of values; the flag marks the heavy-tailed tensors worth a look (measured
  from the mean so that LayerNorm gains around 1.0 do not trigger it; a tensor needs at
  least ``outlier_sigma² + 1`` values for any value to be that far).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import ExplorerError
from ..model import location_name
from ..stats import FLOAT16_MAX, TensorStats
from ._attribute_parameters import ATTRIBUTE_LOCATION, attribute_parameters
from ._quant import ConstantLookup, ScaleUnknownError, dequantization_for

if TYPE_CHECKING:
    from ..model import Model, WeightRef

#: Columns of every row, in order.
COLUMNS = (
    "name", "graph", "kind", "node", "dtype", "shape", "parameters", "bytes", "location",
    "min", "max", "mean", "std", "abs_max", "zeros", "nan", "inf", "p1", "p50", "p99",
    "integer", "quantization", "flags", "error", "where",
)  # fmt: skip
_TEXT_COLUMNS = {"name", "graph", "kind", "node", "dtype", "location", "quantization", "flags",
                 "error", "where"}  # fmt: skip
_STAT_COLUMNS = ("min", "max", "mean", "std", "abs_max", "zeros", "nan", "inf", "p1", "p50", "p99")

DEFAULT_OUTLIER_SIGMA = 50.0

Stop = threading.Event | Callable[[], bool] | None


def flags(stats: TensorStats, outlier_sigma: float = DEFAULT_OUTLIER_SIGMA) -> list[str]:
    """The warning flags of one tensor's statistics (see the module docstring)."""
    found = []
    if stats.nan:
        found.append("nan")
    if stats.inf:
        found.append("inf")
    if stats.count and stats.zeros == 1.0:
        found.append("all_zero")
    if stats.is_float and stats.abs_max is not None and stats.abs_max > FLOAT16_MAX:
        found.append("fp16_overflow")
    if (
        stats.is_float
        and stats.std
        and stats.mean is not None
        and stats.min is not None
        and stats.max is not None
    ):
        spread = max(stats.max - stats.mean, stats.mean - stats.min)
        if spread > outlier_sigma * stats.std:
            found.append("outlier")
    return found


def weight_row(
    ref: WeightRef,
    *,
    dequantize: bool = False,
    outlier_sigma: float = DEFAULT_OUTLIER_SIGMA,
    lookup: ConstantLookup | None = None,
) -> dict[str, Any]:
    """One row of the report; reading errors become the row's ``error``, never an exception."""
    tensor = ref.tensor
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(
        name=tensor.name,
        graph=ref.graph.path,
        kind=ref.kind,
        node=ref.node.name if ref.node is not None else None,
        dtype=tensor.dtype_name,
        shape=tuple(tensor.shape),
        parameters=tensor.size,
        bytes=tensor.nbytes,
        location=location_name(tensor.location.kind, ref.kind),
        where=tensor.location.describe(),
        flags="",
    )
    dq = None
    try:
        dq = dequantization_for(ref, lookup=lookup)
        if dq is not None:
            row["quantization"] = dq.describe()
    except ScaleUnknownError as exc:  # "quantized (scale unknown): ..."
        row["quantization"] = str(exc)
    except (ExplorerError, ValueError) as exc:
        row["quantization"] = f"unusable: {exc}"
    if not tensor.dtype_info.is_numeric and tensor.location == ATTRIBUTE_LOCATION:
        return row  # class labels, encoder keys: counted, but not numbers to summarize
    try:
        stats = tensor.stats(dequantize=dq if dequantize else None)
    except (ExplorerError, OSError, ValueError) as exc:
        row["error"] = str(exc)
        return row
    finally:
        tensor.release()
    row.update((key, getattr(stats, key)) for key in _STAT_COLUMNS)
    row["integer"] = not stats.is_float
    row["flags"] = ", ".join(flags(stats, outlier_sigma))
    return row


def _stopped(stop: Stop) -> bool:
    if stop is None:
        return False
    if isinstance(stop, threading.Event):
        return stop.is_set()
    return bool(stop())


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc="weights")


def sort_rows(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Rows sorted by a column: numbers largest first, text A→Z; ``+key`` forces ascending,
    ``-key`` descending. Rows without a value for the key come last."""
    column = key.lstrip("+-")
    if column not in COLUMNS:
        raise ValueError(f"cannot sort by {column!r}; columns are: {', '.join(COLUMNS)}")
    if key.startswith("+"):
        descending = False
    elif key.startswith("-"):
        descending = True
    else:
        descending = column not in _TEXT_COLUMNS
    present = [r for r in rows if _sortable(r.get(column))]
    missing = [r for r in rows if not _sortable(r.get(column))]
    present.sort(key=lambda r: r[column], reverse=descending)
    if column in _STAT_COLUMNS:  # INT64_MAX as a Slice end is no magnitude: reals rank first
        present.sort(key=lambda r: bool(r.get("integer")))
    return present + missing


def _sortable(value: Any) -> bool:
    return (
        value is not None and not (isinstance(value, float) and math.isnan(value)) and (value != "")
    )


def weights_report(
    model: Model,
    *,
    progress: bool = True,
    sort: str | None = None,
    stop: Stop = None,
    dequantize: bool = False,
    outlier_sigma: float = DEFAULT_OUTLIER_SIGMA,
    as_list: bool = False,
    weights: Iterable[WeightRef] | None = None,
) -> Any:
    """Statistics of every weight of ``model``, one row per tensor.

    Returns a pandas DataFrame (columns :data:`COLUMNS`) when pandas is installed
    and ``as_list`` is false, else a list of dicts. ``progress`` shows a tqdm bar
    (a widget in notebooks) counting bytes. ``stop`` (a ``threading.Event`` or a
    callable returning True) ends the report before the next tensor; so does
    Ctrl-C (KeyboardInterrupt). Either way the rows done so far are returned, and a
    DataFrame's ``attrs["complete"]`` is False. ``dequantize``: for weights whose
    consumer names a scale and zero point, the statistics describe the real values.
    ``sort``: see :func:`sort_rows`. ``weights``: a subset of :func:`report_weights`.
    """
    refs = list(report_weights(model) if weights is None else weights)
    lookup = ConstantLookup()
    rows: list[dict[str, Any]] = []
    bar = _progress_bar(sum(_nbytes(r) for r in refs), progress)
    complete = True
    try:
        for ref in refs:
            if _stopped(stop):
                complete = False
                break
            rows.append(
                weight_row(ref, dequantize=dequantize, outlier_sigma=outlier_sigma, lookup=lookup)
            )
            if bar is not None:
                bar.update(_nbytes(ref))
    except KeyboardInterrupt:
        complete = False
    finally:
        if bar is not None:
            bar.close()
    if sort:
        rows = sort_rows(rows, sort)
    if as_list:
        return rows
    try:
        import pandas as pd
    except ImportError:
        return rows
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame.attrs["complete"] = complete
    frame.attrs["weights"] = len(refs)
    return frame


def report_weights(model: Model) -> Iterator[WeightRef]:
    """What the report reads: :meth:`Model.weights` and the learned attribute lists."""
    yield from model.weights()
    yield from attribute_parameters(model)


def _nbytes(ref: WeightRef) -> int:
    try:
        return int(ref.tensor.nbytes)
    except (ExplorerError, ValueError, OverflowError):
        return 0


__all__ = [
    "COLUMNS",
    "DEFAULT_OUTLIER_SIGMA",
    "flags",
    "report_weights",
    "sort_rows",
    "weight_row",
    "weights_report",
]
