"""Reading one 256 MB embedded tensor: statistics, histogram and ``numpy().sum()``.

What it is for: comparing two versions of how tensor bytes are read from the model file
(a memory map, or ``os.pread`` into owned buffers). Writes one float32 ``raw_data``
initializer of 256 MB into bench/_models/embedded_256mb.onnx, warms the page cache, then
times each task in 5 fresh processes (min and median; peak RSS minus RSS before the call).

    PYTHONPATH=/path/to/worktree .venv/bin/python bench/embedded_read.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    MODELS_DIR,
    fmt_bytes,
    fmt_seconds,
    machine_description,
    markdown_table,
    measure,
    run_python,
    timed_child,
    today,
    warm_page_cache,
)

ELEMENTS = 64 * 1024 * 1024  # float32: 256 MiB
MODEL = MODELS_DIR / "embedded_256mb.onnx"
RUNS = 5

GENERATE = f"""
import numpy as np, onnx
from onnx import helper, numpy_helper
from pathlib import Path
rng = np.random.default_rng(0)
w = (rng.standard_normal({ELEMENTS}, dtype=np.float32) * 0.02).reshape(-1, 4096)
t = numpy_helper.from_array(w, "big.weight")
g = helper.make_graph([helper.make_node("Identity", ["big.weight"], ["y"])], "g", [], [
    helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], [t])
Path({str(MODELS_DIR)!r}).mkdir(parents=True, exist_ok=True)
onnx.save(helper.make_model(g), {str(MODEL)!r} + ".tmp")
Path({str(MODEL)!r} + ".tmp").rename({str(MODEL)!r})
"""

SETUP = (
    f"import onnx_explorer\nt = onnx_explorer.load({str(MODEL)!r}).graph.initializers['big.weight']"
)
TASKS = [
    ("`tensor.stats()`", "s = t.stats()"),
    ("`tensor.histogram(bins=100)`", "h = t.histogram(bins=100)"),
    ("`tensor.numpy().sum()`", "x = float(t.numpy().sum(dtype='float64'))"),
]


def main() -> None:
    if not MODEL.exists():
        print("writing the 256 MB model ...", flush=True)
        run_python(GENERATE, timeout=1800)
    warm_page_cache(MODEL)
    rows = []
    for label, stmt in TASKS:
        runs = measure(timed_child(SETUP, stmt, rss_before=True), RUNS)
        rows.append([label, fmt_seconds(runs.best.seconds), fmt_seconds(runs.median.seconds),
                     fmt_bytes(runs.extra_rss)])  # fmt: skip
        print(rows[-1], flush=True)
    table = markdown_table(["task", "min", "median", "extra memory"], rows, align="lrrr")
    print(f"{today()}, {machine_description()}; {RUNS} fresh processes each\n\n{table}")


if __name__ == "__main__":
    main()
