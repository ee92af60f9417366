"""Benchmark: what starting costs — ``import onnx_explorer`` and a whole ``summary`` process.

    .venv/bin/python bench/startup.py            # measure, print
    .venv/bin/python bench/startup.py --write    # ... and write bench/results/startup.md

Two rows of issue 30, each measured in fresh processes, interleaved round by round with
its reference so that the load of the machine hits both alike (min and median kept):

- ``import onnx_explorer`` after ``import numpy``, timed inside the child: target
  ≤ 40 ms, and ``onnx`` (and protobuf) not imported. ``import onnx`` after numpy is
  printed beside it for orientation.
- ``onnx-explorer summary small.onnx``, the whole process (the console script's own
  code, run as ``python -c``), against ``python -c "import onnx; onnx.load(p)"``:
  target ≤ 1.5×. ``small``: the transformer of ``bench/open.py`` at 20 layers (484
  nodes, 1.6 MB of embedded weights), generated under ``bench/_models/``.

The children compile the package's bytecode once into ``bench/_models/pycache``
(``PYTHONPYCACHEPREFIX``) and reuse it, as an installed package does: a tree run with
``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module of the package at each
start (some 40 ms on these cores), which no user pays twice.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from _common import (
    MODELS_DIR,
    Run,
    fmt_ratio,
    fmt_seconds,
    git_revision,
    machine_description,
    markdown_table,
    package_version,
    run_python,
    timed_child,
    today,
    warm_page_cache,
    write_result,
)

SMALL = MODELS_DIR / "small.onnx"
PYCACHE = MODELS_DIR / "pycache"
IMPORT_TARGET_S = 0.040
SUMMARY_TARGET = 1.5


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def make_small() -> None:
    """The small model (in a child: the parent stays small, see ``_common``)."""
    if SMALL.is_file():
        return
    here = str(Path(__file__).resolve().parent)
    code = (
        f"import sys; sys.path.insert(0, {here!r})\n"
        "import open as o\n"
        "spec = o.Spec('small', 'embedded', 20, 64, 256, 1000, '484 nodes')\n"
        "o.MODELS_DIR.mkdir(parents=True, exist_ok=True)\n"
        "o._write_embedded(spec)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


IMPORT_CHILD = timed_child(
    "import sys\nimport numpy",
    "import onnx_explorer",
    "report['onnx'] = 'onnx' in sys.modules or 'google.protobuf' in sys.modules\n"
    "report['modules'] = sum(m.startswith('onnx_explorer') for m in sys.modules)",
)
ONNX_IMPORT_CHILD = timed_child("import numpy", "import onnx")
SUMMARY_CHILD = (
    "import sys\nfrom onnx_explorer.cli import main\n"
    f"sys.argv = ['onnx-explorer', 'summary', {str(SMALL)!r}]\nsys.exit(main())"
)
REFERENCE_CHILD = f"import onnx; onnx.load({str(SMALL)!r})"

CASES = {
    "import onnx_explorer (after numpy)": IMPORT_CHILD,
    "import onnx (after numpy)": ONNX_IMPORT_CHILD,
    "onnx-explorer summary small.onnx": SUMMARY_CHILD,
    'python -c "import onnx; onnx.load(p)"': REFERENCE_CHILD,
}


def measure(rounds: int) -> dict[str, list[Run]]:
    env = _env()
    for code in CASES.values():  # compile the bytecode once, outside the figures
        run_python(code, env=env)
    runs: dict[str, list[Run]] = {name: [] for name in CASES}
    for _ in range(rounds):  # interleaved: drift hits every case alike
        for name, code in CASES.items():
            runs[name].append(run_python(code, env=env))
    return runs


def _figures(runs: list[Run], inside: bool) -> tuple[float, float]:
    values = [r.seconds if inside else r.process_s for r in runs]
    return min(values), statistics.median(values)


def render(runs: dict[str, list[Run]], rounds: int) -> str:
    versions = ", ".join(f"{p} {package_version(p)}" for p in ("onnx", "protobuf", "numpy"))
    names = list(CASES)
    imp, onnx_imp, summary, reference = names
    rows = []
    for name in names:
        inside = name in (imp, onnx_imp)
        low, mid = _figures(runs[name], inside)
        what = "import, timed in the child" if inside else "whole process"
        rows.append([f"`{name}`", what, fmt_seconds(low), fmt_seconds(mid)])
    table = markdown_table(["case", "measured", "min", "median"], rows, "llrr")
    imp_min, imp_med = _figures(runs[imp], True)
    onnx_loaded = any(r.report.get("onnx") for r in runs[imp])
    sum_min, sum_med = _figures(runs[summary], False)
    ref_min, ref_med = _figures(runs[reference], False)
    paired = statistics.median(
        a.process_s / b.process_s for a, b in zip(runs[summary], runs[reference], strict=True)
    )

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    lines = [
        "# Starting: `import onnx_explorer` and a whole `summary` process",
        "",
        f"Measured {today()} on {machine_description()}; {versions}; onnx_explorer at "
        f"{git_revision()}. Generated by `bench/startup.py`: {rounds} rounds, each case in "
        "a fresh process, cases interleaved within a round; bytecode compiled once and "
        "reused (see the script's docstring).",
        "",
        table,
        "",
        "Targets (issue 30):",
        "",
        f"- `import onnx_explorer` after numpy: {fmt_seconds(imp_min)} min, "
        f"{fmt_seconds(imp_med)} median (target ≤ 40 ms) — {verdict(imp_min <= IMPORT_TARGET_S)};"
        f" imports onnx: {'yes — MISSED' if onnx_loaded else 'no — met'} "
        f"({runs[imp][-1].report['modules']} of the package's modules imported)",
        f"- `onnx-explorer summary` ÷ `import onnx; onnx.load(p)`, whole process: "
        f"{fmt_ratio(sum_min / ref_min)} of the minima, {fmt_ratio(sum_med / ref_med)} of "
        f"the medians, {fmt_ratio(paired)} median of the rounds' ratios (target ≤ "
        f"{fmt_ratio(SUMMARY_TARGET)}) — {verdict(sum_min / ref_min <= SUMMARY_TARGET)}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds of every case")
    parser.add_argument("--write", action="store_true", help="write bench/results/startup.md")
    args = parser.parse_args(argv)
    make_small()
    warm_page_cache(SMALL)
    text = render(measure(args.rounds), args.rounds)
    print(text)
    if args.write:
        print(f"wrote {write_result('startup', text)}", file=sys.stderr)


if __name__ == "__main__":
    main()
