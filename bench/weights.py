"""Weight statistics at size: streaming stats/histogram against numpy on an in-memory array.

Writes one float32 tensor of about 1 GB as external data under bench/_models/, then, each
in a fresh process (time measured inside the child, peak RSS from the parent):

* ``tensor.stats()`` and ``tensor.histogram()`` (streamed from the memory-mapped file);
* numpy reductions (min, max, mean, std, NaN count) and ``numpy.histogram`` on the same
  values already in memory — the reference; only the computation is timed;
* the whole-model ``weights_report`` over the ~4 GB model of ``bench/open.py`` (generated
  with that script's own generator if missing).

"Extra memory" is the child's peak RSS minus its RSS just before the timed call.

    .venv/bin/python bench/weights.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    MODELS_DIR,
    fmt_bytes,
    fmt_ratio,
    fmt_seconds,
    machine_description,
    markdown_table,
    measure,
    run_python,
    timed_child,
    today,
    warm_page_cache,
    write_result,
)

ELEMENTS = 256 * 1024 * 1024  # float32: 1 GiB
DIR = MODELS_DIR / "weights_1gb"
MODEL = DIR / "model.onnx"
DATA = DIR / "weights.bin"
BIG = MODELS_DIR / "external_4gb.onnx"
BIG_DATA = MODELS_DIR / "external_4gb.onnx.data"
TARGET_RATIO = 0.5  # at least half of numpy's in-memory throughput
TARGET_EXTRA = 64 * 1024 * 1024  # bytes of extra memory
#: Generate bench/open.py's ~4 GB model in a child (the parent must stay small, see _common).
MAKE_BIG = (
    f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
    "import open as open_bench\n"
    "open_bench.make(open_bench.SPECS['external_4gb'])\n"
)

GENERATE = f"""
import numpy as np, onnx
from onnx import TensorProto, helper
from pathlib import Path
d = Path({str(DIR)!r}); d.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)
with open(d / "weights.bin.tmp", "wb") as fh:
    for _ in range({ELEMENTS} // (1 << 24)):
        (rng.standard_normal(1 << 24, dtype=np.float32) * 0.02).tofile(fh)
(d / "weights.bin.tmp").rename(d / "weights.bin")
t = TensorProto(name="big.weight", data_type=TensorProto.FLOAT, dims=[{ELEMENTS} // 4096, 4096])
t.data_location = TensorProto.EXTERNAL
for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", str({ELEMENTS * 4}))):
    e = t.external_data.add(); e.key, e.value = k, v
g = helper.make_graph([helper.make_node("Identity", ["big.weight"], ["y"])], "g", [], [
    helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [t])
onnx.save(helper.make_model(g), d / "model.onnx")
"""

IMPORTS = "import onnx_explorer, onnx_explorer.stats"
OURS_SETUP = f"{IMPORTS}\nt = onnx_explorer.load({str(MODEL)!r}).graph.initializers['big.weight']"
NUMPY_SETUP = f"import numpy as np\na = np.fromfile({str(DATA)!r}, dtype=np.float32)"

CASES = [
    ("statistics", "onnx_explorer `tensor.stats()` (streamed)", OURS_SETUP, "s = t.stats()"),
    ("statistics", "numpy min/max/mean/std/isnan, in memory", NUMPY_SETUP,
     "s = (a.min(), a.max(), a.mean(dtype=np.float64), a.std(dtype=np.float64), np.isnan(a).sum())"),
    ("histogram", "onnx_explorer `tensor.histogram(bins=100)` (streamed)", OURS_SETUP,
     "h = t.histogram(bins=100)"),
    ("histogram", "`numpy.histogram(a, bins=100)`, in memory", NUMPY_SETUP,
     "h = np.histogram(a, bins=100)"),
]  # fmt: skip


def main() -> None:
    if not (MODEL.exists() and DATA.exists() and DATA.stat().st_size == ELEMENTS * 4):
        print("writing the 1 GB tensor ...", flush=True)
        run_python(GENERATE, timeout=1800)
    warm_page_cache(DATA)
    rows, seconds, extras = [], {}, {}
    for task, label, setup, stmt in CASES:
        runs = measure(timed_child(setup, stmt, rss_before=True), 3)
        median, extra = runs.median, runs.extra_rss
        seconds[label] = median.seconds
        extras[label] = extra
        rows.append([task, label, fmt_seconds(median.seconds),
                     f"{ELEMENTS * 4 / median.seconds / 1e9:.2f} GB/s", fmt_bytes(extra)])  # fmt: skip
        print(rows[-1], flush=True)
    ratios = []
    for task, ours, theirs in (("statistics", 0, 1), ("histogram", 2, 3)):
        ratio = seconds[CASES[theirs][1]] / seconds[CASES[ours][1]]
        verdict = (
            "met" if ratio >= TARGET_RATIO and extras[CASES[ours][1]] < TARGET_EXTRA else "MISSED"
        )
        ratios.append(
            f"{task}: throughput ÷ numpy in memory {fmt_ratio(ratio)}, extra memory "
            f"{fmt_bytes(extras[CASES[ours][1]])} (target ≥ {fmt_ratio(TARGET_RATIO)} and "
            f"< {TARGET_EXTRA >> 20} MiB) — {verdict}"
        )
    report_line = "the ~4 GB model of bench/open.py could not be generated"
    if not BIG.exists():
        print("generating bench/open.py's ~4 GB model ...", flush=True)
        run_python(MAKE_BIG, timeout=3600)
    if BIG.exists():
        warm_page_cache(BIG_DATA)
        code = timed_child(
            f"{IMPORTS}\nm = onnx_explorer.load({str(BIG)!r})",
            "rows = m.weights_report(progress=False, as_list=True)",
            "report['rows'] = len(rows); report['errors'] = sum(1 for r in rows if r['error'])"
            "\nreport['bytes'] = sum(r['bytes'] for r in rows)",
            rss_before=True,
        )  # fmt: skip
        run = run_python(code, timeout=3600)
        report_line = (
            f"whole-model `weights_report` over {BIG.name} ({fmt_bytes(run.report['bytes'])}, "
            f"{run.report['rows']} tensors, {run.report['errors']} errors): "
            f"{fmt_seconds(run.seconds)} ({run.report['bytes'] / run.seconds / 1e9:.2f} GB/s), "
            f"peak RSS {fmt_bytes(run.max_rss)}, extra memory "
            f"{fmt_bytes(run.extra_rss)}"
        )
    table = markdown_table(["task", "how", "time", "throughput", "extra memory"], rows,
                           align="llrrr")  # fmt: skip
    text = (
        f"# Weight statistics at size\n\n{today()}, {machine_description()}\n\n"
        f"One float32 tensor of {fmt_bytes(ELEMENTS * 4)} in an external data file (page cache "
        "warm); median of 3 fresh processes.\n\n"
        f"{table}\n\n- " + "\n- ".join(ratios) + f"\n- {report_line}\n\n"
        "Extra memory is peak RSS minus RSS just before the timed call; mapped pages are "
        "counted, and onnx_explorer drops the pages it has streamed past. numpy's float64 "
        "`std` makes a float64 temporary of the whole array (hence its 2 GB). The machine "
        "was shared with other jobs, so times vary by ±30 % between runs.\n"
    )
    print(text)
    write_result("weights", text)


if __name__ == "__main__":
    main()
