"""The tutorial notebooks run top to bottom on a fresh setup and are committed without outputs."""

from __future__ import annotations

from locations import REPO

import json
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager

NOTEBOOK_DIR = REPO / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT = 120  # seconds; the first import of matplotlib/onnx in a kernel is slow on 2 cores


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def venv_kernel_manager(spec_dir: Path) -> KernelManager:
    """A KernelManager whose kernel is *this* interpreter, never a python found on PATH."""
    from jupyter_client.kernelspec import KernelSpecManager

    kernel_dir = spec_dir / "oxe-test-python"
    kernel_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "onnx_explorer test kernel",
        "language": "python",
    }
    (kernel_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir)], ensure_native_kernel=False)
    return KernelManager(kernel_name="oxe-test-python", kernel_spec_manager=specs)


def test_there_are_notebooks():
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)
    ]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; clear them before committing"
    assert "widgets" not in nb.metadata, f"{path.name}: saved widget state; clear it"


@pytest.mark.notebooks
@pytest.mark.graphviz
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs_top_to_bottom(path, tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    km = venv_kernel_manager(tmp_path / "kernels")
    client = NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT,
        allow_errors=False,  # any error fails the test with the cell and traceback
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},  # the kernel's cwd
    )
    try:
        client.execute()
    finally:
        if km.has_kernel:  # nbclient leaves a kernel it was given running
            km.shutdown_kernel(now=True)
    ran = [c for c in nb.cells if c.cell_type == "code"]
    assert ran and all(c.execution_count for c in ran)
    # The magics report a bad model as a printed message, not an exception: catch it too.
    printed = [o.text for c in ran for o in c.outputs if o.output_type == "stream" and "text" in o]
    failures = [t for t in printed if t.lstrip().startswith("onnx_explorer:")]
    assert not failures, failures


def test_notebook_kernel_is_this_interpreter(tmp_path):
    km = venv_kernel_manager(tmp_path)
    assert km.kernel_spec.argv[0] == sys.executable
