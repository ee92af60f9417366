"""The ``onnx-explorer`` command line: quick looks at a model without a notebook.

Each subcommand lives in a small ``_cmd_*`` function; errors of the project's own
types become one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .errors import ExplorerError
from .readers import load

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def _open(args: argparse.Namespace) -> Any:
    return load(args.path, external_data_dir=args.external_data_dir)


def _cmd_summary(args: argparse.Namespace) -> int:
    from .summary import summarize
    from .views.summary_text import format_summary

    info = summarize(_open(args))
    if args.json:
        print(json.dumps(info, indent=2, default=str))  # ASCII: control characters escaped
    else:
        width = None if args.full else shutil.get_terminal_size().columns
        print(format_summary(info, width=width))
    return 0


def _fail(message: str) -> int:
    """One line on stderr, whatever the message holds (names from the file included)."""
    from .views.text import terminal_safe

    print(f"onnx-explorer: error: {terminal_safe(message)}", file=sys.stderr)
    return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnx-explorer", description="Inspect ONNX and TensorFlow GraphDef model files."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    summary = sub.add_parser(
        "summary", help="metadata, opsets, op counts, inputs/outputs, weight totals"
    )
    _add_common(summary)
    summary.add_argument(
        "--full", action="store_true",
        help="print doc strings and metadata values whole, not cut at the terminal width",
    )  # fmt: skip
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
    """Subcommands defined in other modules register here (weights, render, diff, metrics)."""
    for module_name in ("cli_weights", "cli_render", "cli_diff", "cli_metrics", "cli_run"):
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
        return _fail(str(exc))
    except (OSError, ValueError) as exc:  # bad paths or arguments given on the command line
        return _fail(str(exc))
    except KeyError as exc:  # a node, graph or scope named on the command line does not exist
        return _fail(str(exc.args[0] if exc.args else exc))
    except BrokenPipeError:  # pragma: no cover - piping into `head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
