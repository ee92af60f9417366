"""The ``onnx-explorer`` command line: quick looks at a model without a notebook.

Each subcommand lives in a small ``_cmd_*`` function; errors of the project's own
types become one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .errors import ExplorerError
from .readers import load

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def _open(args: argparse.Namespace) -> Any:
    return load(args.path, external_data_dir=args.external_data_dir)


def _cmd_summary(args: argparse.Namespace) -> int:
    from .summary import format_summary, summarize

    info = summarize(_open(args))
    if args.json:
        print(json.dumps(info, indent=2, default=str))
    else:
        print(format_summary(info))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnx-explorer", description="Inspect ONNX and TensorFlow GraphDef model files."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    summary = sub.add_parser(
        "summary", help="metadata, opsets, op counts, inputs/outputs, weight totals"
    )
    _add_common(summary)
    summary.set_defaults(handler=_cmd_summary)

    _add_more_commands(sub)
    return parser


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="model file (.onnx, .pb, .pbtxt)")
    parser.add_argument(
        "--external-data-dir", metavar="DIR", help="where external tensor data lives"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def _add_more_commands(sub: Any) -> None:
    """Subcommands defined in other modules register here (weights, render)."""
    for module_name in ("cli_weights", "cli_render"):
        try:
            module = __import__(f"onnx_explorer.{module_name}", fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != f"onnx_explorer.{module_name}":
                raise
            continue
        module.register(sub, _add_common)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except ExplorerError as exc:
        print(f"onnx-explorer: error: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:  # bad paths or arguments given on the command line
        print(f"onnx-explorer: error: {exc}", file=sys.stderr)
        return 1
    except KeyError as exc:  # a node, graph or scope named on the command line does not exist
        print(f"onnx-explorer: error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # pragma: no cover - piping into `head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
