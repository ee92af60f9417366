"""Running a model with onnxruntime: intermediate activations and layer-by-layer comparison.

The optional layer above the analyses (``pip install onnx_explorer[run]``); onnxruntime
is imported only here, lazily (``_ort``). How intermediates are captured is in
``_plan``: the graph is run in topological segments built in memory, so no file is
written and external data is read in place. Cutting a part out as a model of its own
(``extract``) and shrinking a model to the part where a check holds (``reduce``) live
here too: they write ONNX and run it (``_cut``, ``_submodel``, ``_extract``, ``_reduce``).
"""

from __future__ import annotations

from ._compare import CompareResult, TensorComparison, compare
from ._execute import Failure
from ._extract import extract
from ._feeds import FeedError
from ._limits import MEMORY_LIMIT, RUN_TIMEOUT, MemoryLimitError, RunTimeoutError
from ._observe import observed_shapes
from ._ort import OnnxRuntimeMissingError, RunError
from ._reduce import ReduceError, ReduceResult, ReduceStep, reduce
from ._run import RunFailedError, RunResult, TensorRecord, run
from ._submodel import SaveRefusedError, Submodel

__all__ = [
    "MEMORY_LIMIT",
    "RUN_TIMEOUT",
    "CompareResult",
    "Failure",
    "FeedError",
    "MemoryLimitError",
    "OnnxRuntimeMissingError",
    "ReduceError",
    "ReduceResult",
    "ReduceStep",
    "RunError",
    "RunFailedError",
    "RunResult",
    "RunTimeoutError",
    "SaveRefusedError",
    "Submodel",
    "TensorComparison",
    "TensorRecord",
    "compare",
    "extract",
    "observed_shapes",
    "reduce",
    "run",
]
