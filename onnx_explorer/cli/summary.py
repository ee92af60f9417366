"""``onnx-explorer summary``: metadata, opsets, op counts, inputs/outputs, weight totals."""

from __future__ import annotations

import argparse
import json
import shutil
from typing import Any

from ._common import add_common, open_model

__all__ = ["register"]


def _summary(args: argparse.Namespace) -> int:
    from ..summary import summarize
    from ..views._summary_text import format_summary

    info = summarize(open_model(args))
    if args.json:
        print(json.dumps(info, indent=2, default=str))  # ASCII: control characters escaped
    else:
        width = None if args.full else shutil.get_terminal_size().columns
        print(format_summary(info, width=width))
    return 0


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "summary", help="metadata, opsets, op counts, inputs/outputs, weight totals"
    )
    add_common(parser)
    parser.add_argument(
        "--full", action="store_true",
        help="print doc strings and metadata values whole, not cut at the terminal width",
    )  # fmt: skip
    parser.set_defaults(handler=_summary)
