"""What a model's weights hold: statistics and flags per tensor, quantization, many models.

Analyses over :meth:`Model.weights <onnx_explorer.model.Model.weights>`, returning plain
data: :func:`weights_report` (one row per weight, ``_report``), :func:`weights_report_many`
(many models in parallel workers, merged exactly, ``_many``: the one analysis that opens
files, through :func:`onnx_explorer.load`), :func:`find_dequantization` (the scale and zero
point a quantized weight's consumers name, ``_quant``) and :func:`attribute_parameters`
(learned values of ``ai.onnx.ml`` operators stored as attribute lists,
``_attribute_parameters``).
"""

from __future__ import annotations

from ._attribute_parameters import AttributeTotals, attribute_parameters, attribute_totals
from ._many import ManyReport, ModelReport, Totals, weights_report_many
from ._quant import (
    ConstantLookup,
    Dequantization,
    ScaleUnknownError,
    dequantization_for,
    find_dequantization,
)
from ._report import (
    COLUMNS,
    DEFAULT_OUTLIER_SIGMA,
    Stop,
    flags,
    report_weights,
    sort_rows,
    weights_report,
)

__all__ = [
    "COLUMNS",
    "DEFAULT_OUTLIER_SIGMA",
    "AttributeTotals",
    "ConstantLookup",
    "Dequantization",
    "ManyReport",
    "ModelReport",
    "ScaleUnknownError",
    "Stop",
    "Totals",
    "attribute_parameters",
    "attribute_totals",
    "dequantization_for",
    "find_dequantization",
    "flags",
    "report_weights",
    "sort_rows",
    "weights_report",
    "weights_report_many",
]
