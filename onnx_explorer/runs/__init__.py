"""Running a model with onnxruntime: intermediate activations and layer-by-layer comparison.

The optional layer above the analyses (``pip install onnx_explorer[run]``); onnxruntime
is imported only here, lazily (``_ort``). How intermediates are captured is in
``_plan``: the graph is run in topological segments built in memory, so no file is
written and external data is read in place.
"""

from __future__ import annotations

from ._compare import CompareResult, TensorComparison, compare
from ._execute import Failure
from ._feeds import FeedError
from ._observe import observed_shapes
from ._ort import OnnxRuntimeMissingError, RunError
from ._run import RunFailedError, RunResult, TensorRecord, run

__all__ = [
    "CompareResult",
    "Failure",
    "FeedError",
    "OnnxRuntimeMissingError",
    "RunError",
    "RunFailedError",
    "RunResult",
    "TensorComparison",
    "TensorRecord",
    "compare",
    "observed_shapes",
    "run",
]
