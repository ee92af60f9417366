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
from types import ModuleType

HARNESSES = ("onnx", "graphdef", "pbtxt", "external", "views")
#: Never reached by a harness: notebook widgets, entry points, subprocess rendering.
_SKIPPED = ("onnx_explorer.ipython", "onnx_explorer.cli", "onnx_explorer.views.render")
#: Seconds one input may take before libFuzzer calls it a hang and saves it.
TIMEOUT = 10
RSS_LIMIT_MB = 2048
_WIDGETS_USED = ("onnx_explorer.widgets.static", "onnx_explorer.widgets.html")


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
        module.test_one_input,
        custom_mutator=module.custom_mutator,
        custom_crossover=module.custom_crossover,
    )
    atheris.Fuzz()


if __name__ == "__main__":
    main()
