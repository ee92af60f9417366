"""What ``onnx_explorer`` exports is a promise: changing it must be deliberate."""

from __future__ import annotations

import subprocess
import sys

import onnx_explorer

EXPECTED = {
    "Attribute",
    "CompareResult",
    "ExplorerError",
    "ExternalDataError",
    "FeedError",
    "Function",
    "Graph",
    "GraphvizNotFoundError",
    "Histogram",
    "Model",
    "ModelDiff",
    "ModelFormatError",
    "Node",
    "OnnxRuntimeMissingError",
    "RenderError",
    "RunError",
    "RunFailedError",
    "RunResult",
    "SparseTensor",
    "Tensor",
    "TensorDataError",
    "TensorLocation",
    "TensorStats",
    "UnsafePathError",
    "ValueInfo",
    "__version__",
    "compare",
    "diff",
    "explore",
    "explore_diff",
    "load",
    "metrics",
    "read_ort_profile",
    "run",
    "weights_report_many",
}


def test_all_is_pinned():
    assert set(onnx_explorer.__all__) == EXPECTED
    for name in onnx_explorer.__all__:
        assert hasattr(onnx_explorer, name), name


def test_errors_subclass_the_builtins_callers_catch():
    assert issubclass(onnx_explorer.ModelFormatError, ValueError)
    assert issubclass(onnx_explorer.TensorDataError, ValueError)
    assert issubclass(onnx_explorer.ExternalDataError, OSError)
    assert issubclass(onnx_explorer.UnsafePathError, onnx_explorer.ExternalDataError)
    for name in ("ModelFormatError", "TensorDataError", "ExternalDataError", "RenderError"):
        assert issubclass(getattr(onnx_explorer, name), onnx_explorer.ExplorerError)


CORE_MODULES = [
    "onnx_explorer",
    "onnx_explorer.model",
    "onnx_explorer.tensors",
    "onnx_explorer.readers",
    "onnx_explorer.readers.onnx._read",
    "onnx_explorer.summary",
    "onnx_explorer.cli",
]


def test_core_imports_neither_ipython_nor_widgets():
    # Block the notebook stack: the core must import and open a model without it.
    code = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('IPython', 'ipywidgets', 'anywidget', 'matplotlib', 'graphviz'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
import importlib
for name in {CORE_MODULES!r}:
    importlib.import_module(name)
import onnx_explorer
from onnx_explorer.samples import tiny_cnn
model = onnx_explorer.load(tiny_cnn())
print(len(model.graph.nodes))
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "9"
