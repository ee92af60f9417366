"""What ``onnx_explorer`` exports is a promise: changing it must be deliberate."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

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
    "compare_view",
    "diff",
    "explore",
    "explore_diff",
    "extract",
    "load",
    "metrics",
    "read_node_data",
    "read_ort_profile",
    "reduce",
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


def _public_modules() -> list[str]:
    """Every module of the package without an underscore in its dotted name."""
    found = ["onnx_explorer"]
    for info in pkgutil.walk_packages(onnx_explorer.__path__, "onnx_explorer."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return sorted(found)


@pytest.mark.parametrize("name", _public_modules())
def test_every_public_module_says_what_is_public(name):
    # onnx-ir style: a module without an underscore is public, so it lists its public
    # names in __all__, and each of them exists (lazy ones included).
    module = importlib.import_module(name)
    assert hasattr(module, "__all__"), f"{name} has no __all__"
    assert len(set(module.__all__)) == len(module.__all__), f"{name}.__all__ repeats a name"
    for public in module.__all__:
        assert hasattr(module, public), f"{name}.__all__ names {public!r}, which is missing"


def test_lazy_names_are_what_type_checkers_see():
    # The names imported on first use are also imported under TYPE_CHECKING (for mypy and
    # IDEs) and listed in __all__: the three lists must agree.
    source = Path(onnx_explorer.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    checked: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.level == 1:
                    checked.update(alias.asname or alias.name for alias in statement.names)
    lazy = set(onnx_explorer._LAZY)
    assert lazy <= checked
    assert lazy <= set(onnx_explorer.__all__)


def test_import_is_light():
    # `import onnx_explorer` imports neither onnx nor protobuf nor the notebook stack, and
    # only a few of the package's own modules: the rest come on first use.
    code = (
        "import sys, onnx_explorer; "
        "print(sorted(m for m in ('onnx', 'google.protobuf', 'IPython', 'ipywidgets', "
        "'matplotlib', 'graphviz') if m in sys.modules)); "
        "print(sum(m.startswith('onnx_explorer') for m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    heavy, count = result.stdout.split("\n")[:2]
    assert heavy == "[]"
    assert int(count) <= 30, f"import onnx_explorer imported {count} of its modules"


def test_lazy_names_resolve_in_a_fresh_process():
    code = (
        "import onnx_explorer as ox; "
        "print(ox.load.__module__, ox.run.__module__, ox.ModelDiff.__name__, "
        "ox.weights_report_many.__name__, callable(ox.metrics), 'load' in dir(ox))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == [
        "onnx_explorer.readers",
        "onnx_explorer.runs._run",
        "ModelDiff",
        "weights_report_many",
        "True",
        "True",
    ]


def _keywords(function) -> dict[str, tuple[object, object]]:
    """Keyword parameters → (default, annotation text) of ``function``."""
    return {
        p.name: (p.default, str(p.annotation))
        for p in inspect.signature(function).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }


def test_drawing_methods_take_build_dots_parameters():
    # Graph.to_dot & co. copy build_dot's keyword parameters (so IDEs show them): the
    # copies must not drift from the original.
    from onnx_explorer.views import build_dot

    expected = _keywords(build_dot)
    assert _keywords(onnx_explorer.Graph.to_dot) == expected
    timeout = {"timeout": (60.0, "float")}
    assert _keywords(onnx_explorer.Graph.render_svg) == {**timeout, **expected}
    assert _keywords(onnx_explorer.Graph.save) == {**timeout, **expected}


def test_weights_report_method_takes_the_functions_parameters():
    from onnx_explorer.weights import weights_report

    assert _keywords(onnx_explorer.Model.weights_report) == _keywords(weights_report)


def test_entry_points_take_the_widgets_parameters():
    from onnx_explorer.widgets import explore, explore_diff

    assert inspect.signature(onnx_explorer.explore).parameters.keys() == (
        inspect.signature(explore).parameters.keys()
    )
    assert _keywords(onnx_explorer.explore) == _keywords(explore)
    assert _keywords(onnx_explorer.explore_diff) == _keywords(explore_diff)
