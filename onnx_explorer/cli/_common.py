"""What every command shares: the common arguments, opening a model, the one-line error."""

from __future__ import annotations

import argparse
import sys

from ..model import Model
from ..readers import load


def add_common(parser: argparse.ArgumentParser) -> None:
    """The model path, where its external data lives, and ``--json``."""
    parser.add_argument("path", help="model file (.onnx, .pb, .pbtxt) or SavedModel directory")
    parser.add_argument(
        "--external-data-dir", metavar="DIR", help="where external tensor data lives"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def open_model(args: argparse.Namespace) -> Model:
    return load(args.path, external_data_dir=args.external_data_dir)


def fail(message: str) -> int:
    """One line on stderr, whatever the message holds (names from the file included)."""
    from ..views._text import terminal_safe

    print(f"onnx-explorer: error: {terminal_safe(message)}", file=sys.stderr)
    return 1
