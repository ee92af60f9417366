"""The ``onnx-explorer`` command line: quick looks at a model without a notebook.

One module per command (``summary``, ``weights``, ``render``, ``diff``, ``metrics``,
``run``, ``extract``, ``reduce``), each with a ``register(subparsers)``; errors of the
project's own types become one line on stderr and exit status 1, never a traceback
(``diff``, ``run`` and ``reduce`` use 2 for errors, as ``diff`` and ``cmp`` do).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..errors import ExplorerError
from . import diff, extract, metrics, reduce, render, run, summary, weights
from ._common import fail

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnx-explorer", description="Inspect ONNX and TensorFlow GraphDef model files."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (summary, weights, render, diff, metrics, run, extract, reduce):
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except ExplorerError as exc:
        return fail(str(exc))
    except (OSError, ValueError) as exc:  # bad paths or arguments given on the command line
        return fail(str(exc))
    except KeyError as exc:  # a node, graph or scope named on the command line does not exist
        return fail(str(exc.args[0] if exc.args else exc))
    except BrokenPipeError:  # pragma: no cover - piping into `head`
        return 0
