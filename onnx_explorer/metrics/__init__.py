"""Where a model's parameters, memory and compute go: per-node numbers, plain data.

:func:`metrics` counts parameters, activation bytes and multiply-accumulates (MACs)
of every node (rules in :mod:`onnx_explorer.metrics._rules`); :func:`read_ort_profile`
reads per-node latencies from an onnxruntime profile. Both take a model already
opened; neither reads files of the model format nor draws anything.
"""

from __future__ import annotations

from ._profile import Profile, read_ort_profile
from ._table import COLUMNS, SERIES, Metrics, metrics, scope_of

__all__ = ["COLUMNS", "SERIES", "Metrics", "Profile", "metrics", "read_ort_profile", "scope_of"]
