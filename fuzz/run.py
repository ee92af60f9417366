"""Run one harness under atheris: ``python -m fuzz.run NAME [libFuzzer options] [corpus dirs]``.

Options not given default to the harness's ``-max_len``, ``-timeout=10`` (a hang) and
``-rss_limit_mb=2048``; ``-runs=N`` or ``-max_total_time=S`` bound the run. The first
corpus directory receives the new inputs; crashing ones go to ``-artifact_prefix``.

NAME is one of :data:`HARNESSES`. onnx_explorer is imported (every module a harness can
reach, including those the package imports lazily) inside
``atheris.instrument_imports`` so that its code, and only its code, feeds coverage.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable
from types import ModuleType

HARNESSES = ("onnx", "graphdef", "pbtxt", "external", "views", "run", "bundle", "weights",
             "metrics", "diff")  # fmt: skip
#: Never reached by a harness: notebook widgets, entry points, subprocess rendering.
_SKIPPED = ("onnx_explorer.ipython", "onnx_explorer.cli", "onnx_explorer.views._render")
#: Seconds one input may take before libFuzzer calls it a hang and saves it.
TIMEOUT = 10
RSS_LIMIT_MB = 2048
_WIDGETS_USED = ("onnx_explorer.widgets._static", "onnx_explorer.widgets._html")


def harness_module(name: str) -> ModuleType:
    if name not in HARNESSES:
        raise SystemExit(f"unknown harness {name!r}: one of {', '.join(HARNESSES)}")
    return importlib.import_module(f"fuzz.harness_{name}")


def _import_explorer() -> None:
    import onnx_explorer

    for info in pkgutil.walk_packages(onnx_explorer.__path__, "onnx_explorer."):
        name = info.name
        if name.startswith(_SKIPPED) or "labextension" in name:
            continue
        if name.startswith("onnx_explorer.widgets.") and name not in _WIDGETS_USED:
            continue
        importlib.import_module(name)


def with_defaults(argv: list[str], max_len: int) -> list[str]:
    """libFuzzer options the caller did not give: small inputs, a hang limit, a memory cap."""
    given = {arg.split("=", 1)[0] for arg in argv if arg.startswith("-")}
    defaults = [
        f"-max_len={max_len}",
        f"-timeout={TIMEOUT}",
        f"-rss_limit_mb={RSS_LIMIT_MB}",
        "-print_final_stats=1",
    ]
    return [argv[0], *(d for d in defaults if d.split("=", 1)[0] not in given), *argv[1:]]


def untracing_array_comparisons(
    atheris: ModuleType, test_one_input: Callable[[bytes], None]
) -> Callable[[bytes], None]:
    """``test_one_input`` with comparisons that have a numpy array operand run untraced.

    atheris 3.0.0 keeps a reference to the result of every comparison it traces; when the
    result is a new object (``array == 3`` makes an array) it is never freed: ~230 bytes per
    comparison, which took the pbtxt harness to libFuzzer's 2 GB RSS limit after ~120,000
    inputs. Instrumented code calls ``atheris._trace_cmp``, looked up at each call, and
    ``atheris.Fuzz`` binds it when it starts: so the wrapper is put in place from inside the
    first input. Every other comparison still feeds libFuzzer.
    """
    import operator

    import numpy as np
    from atheris.version_dependent import CMP_OP_SHIFT_AMOUNT

    operators = (operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge)

    def wrap(traced: Callable[..., object]) -> Callable[..., object]:
        def trace_cmp(left: object, right: object, op: int, counter: int, is_const: bool) -> object:
            if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
                return operators[op >> CMP_OP_SHIFT_AMOUNT](left, right)
            return traced(left, right, op, counter, is_const)

        trace_cmp.untraced_arrays = True  # type: ignore[attr-defined]
        return trace_cmp

    def one_input(data: bytes) -> None:
        if not getattr(atheris._trace_cmp, "untraced_arrays", False):
            atheris._trace_cmp = wrap(atheris._trace_cmp)
        test_one_input(data)

    return one_input


def main() -> None:
    import atheris

    if len(sys.argv) < 2:
        raise SystemExit(f"usage: python -m fuzz.run NAME [libFuzzer options]; NAME in {HARNESSES}")
    name = sys.argv.pop(1)
    with atheris.instrument_imports(include=["onnx_explorer"]):
        _import_explorer()
    module = harness_module(name)
    atheris.Setup(
        with_defaults(sys.argv, module.MAX_LEN),
        untracing_array_comparisons(atheris, module.test_one_input),
        custom_mutator=module.custom_mutator,
        custom_crossover=module.custom_crossover,
    )
    atheris.Fuzz()


if __name__ == "__main__":
    main()
