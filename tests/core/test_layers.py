"""The layers hold: the core loads without the notebook stack, imports form no cycle.

The full contracts live in ``pyproject.toml`` and CI checks them with ``lint-imports``;
these tests prove what that cannot see (an import made lazily really is lazy) and keep
the cycle rule close to the tests.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest
from locations import REPO

import onnx_explorer

ROOT = REPO
NOTEBOOK_STACK = ("IPython", "ipywidgets", "anywidget", "traitlets", "matplotlib", "graphviz")


def _core_modules() -> list[str]:
    names = [
        info.name
        for info in pkgutil.walk_packages(onnx_explorer.__path__, "onnx_explorer.")
        if not info.name.startswith(("onnx_explorer.widgets", "onnx_explorer.ipython"))
        and not info.name.endswith(".__main__")
    ]
    assert "onnx_explorer.views._plots" in names and "onnx_explorer.readers.onnx._read" in names
    return sorted(names)


def test_every_core_module_imports_without_the_notebook_stack():
    code = f"""
import importlib, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {NOTEBOOK_STACK!r}:
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
for name in {_core_modules()!r}:
    importlib.import_module(name)
import onnx_explorer
from onnx_explorer.samples import tiny_cnn
graph = onnx_explorer.load(tiny_cnn()).graph
print(graph.to_dot().startswith("digraph"))  # a facade method, without the notebook stack
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_no_import_cycles_lazy_imports_included():
    pytest.importorskip("importlinter")
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_cycles.py")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_views_see_inference_through_the_model_only():
    from onnx_explorer.model import InferredTypes
    from onnx_explorer.samples import tiny_cnn
    from onnx_explorer.views._edge_types import inferred_types

    model = onnx_explorer.load(tiny_cnn())
    assert model.type_inference is not None  # attached by the ONNX reader
    result = inferred_types(model)
    assert isinstance(result, InferredTypes) and result.error is None
    assert result.types[id(model.graph)]  # value name → ValueInfo, no protobuf in sight


def test_onnx_and_protobuf_stay_below_the_model_by_contract():
    # The import-linter contract "formats-below-the-model" names every top-level module
    # and package but readers, runs and samples: a new one must be added to it.
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = {c["id"]: c for c in config["tool"]["importlinter"]["contracts"]}
    contract = contracts["formats-below-the-model"]
    assert set(contract["forbidden_modules"]) == {"onnx", "google"}
    top = {f"onnx_explorer.{m.name}" for m in pkgutil.iter_modules(onnx_explorer.__path__)}
    allowed = {"onnx_explorer.readers", "onnx_explorer.runs", "onnx_explorer.samples"}
    assert set(contract["source_modules"]) == top - allowed
    assert contracts["formats-below-the-model-root"]["source_modules"] == ["onnx_explorer"]


def test_a_summary_loads_no_drawing_stack_and_the_format_table_no_parser():
    """``onnx-explorer summary`` needs the summary text, not the drawing (the views package
    names its modules lazily); sniffing a file's format needs no format's parser."""
    code = """
import sys
from onnx_explorer.samples import tiny_cnn
import onnx_explorer
from onnx_explorer.summary import summarize
from onnx_explorer.views import format_summary
import onnx_explorer.views as views
text = format_summary(summarize(onnx_explorer.load(tiny_cnn())))
heavy = [m for m in ("onnx_explorer.views._drawing", "onnx_explorer.views._layout",
                     "onnx_explorer.readers.tflite._parse", "onnx_explorer.readers.gguf._read",
                     "onnx_explorer.readers.safetensors._read") if m in sys.modules]
print(bool(text), heavy, "build_dot" in dir(views))
views.build_dot  # asked for: imported then
print("onnx_explorer.views._drawing" in sys.modules)
try:
    views.no_such_name
except AttributeError as exc:
    print(exc)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "True [] True",
        "True",
        "module 'onnx_explorer.views' has no attribute 'no_such_name'",
    ]
