"""The ``onnx-explorer`` command line: quick looks at a model without a notebook.

One module per command (``summary``, ``weights``, ``render``, ``diff``, ``metrics``,
``run``, ``extract``, ``reduce``), each with a ``register(subparsers)``; errors of the
project's own types become one line on stderr and exit status 1, never a traceback
(``diff``, ``run`` and ``reduce`` use 2 for errors, as ``diff`` and ``cmp`` do).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import import_module

from ..errors import ExplorerError
from ._common import fail

__all__ = ["COMMANDS", "build_parser", "main"]

#: The commands, in the order ``--help`` lists them; each is the module of that name here.
COMMANDS = ("summary", "weights", "render", "diff", "metrics", "run", "extract", "reduce")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone (the others then stay bare
    names: their modules, and what those import, are not imported)."""
    parser = argparse.ArgumentParser(
        prog="onnx-explorer", description="Inspect ONNX and TensorFlow GraphDef model files."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        if command is None or name == command:
            import_module(f".{name}", __name__).register(sub)
        else:
            sub.add_parser(name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    # The command is the first word (the parser has no options of its own before it):
    # only its module is imported, so `summary` costs what summarizing costs.
    command = words[0] if words and words[0] in COMMANDS else None
    args = build_parser(command).parse_args(words)
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
