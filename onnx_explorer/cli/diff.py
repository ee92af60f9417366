"""``onnx-explorer diff A B``: what changed between two models; exit 0 equal, 1 different,
2 on error (as ``diff`` and ``cmp`` do)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ExplorerError
from ..model_diff import compare_models
from ..readers import open_side
from ..views._text import terminal_safe

__all__ = ["register"]


def _cmd_diff(args: argparse.Namespace) -> int:
    if not (args.atol >= 0 and args.rtol >= 0):
        print("onnx-explorer: error: --atol and --rtol must not be negative", file=sys.stderr)
        return 2
    try:
        a = open_side(args.a, "a", external_data_dir=args.external_data_dir)
        b = open_side(args.b, "b", external_data_dir=args.external_data_dir)
        try:
            result = compare_models(
                a, b, weights=args.weights, atol=args.atol, rtol=args.rtol,
                progress=not args.json and sys.stderr.isatty(),
            )  # fmt: skip
            if args.json:
                print(json.dumps(result.to_dict(), indent=1))  # ASCII: controls escaped
            else:
                print("\n".join(terminal_safe(line) for line in repr(result).split("\n")))
        finally:
            a.close()
            b.close()
    except (ExplorerError, OSError, ValueError) as exc:
        print(f"onnx-explorer: error: {terminal_safe(str(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug of ours: never exit 1, which says "different"
        what = terminal_safe(f"{type(exc).__name__}: {exc}"[:500])
        print(f"onnx-explorer: error: {what} (a bug: please report it)", file=sys.stderr)
        return 2
    return 0 if result.equal else 1


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "diff", help="what changed between two models (exit 0 equal, 1 different, 2 error)"
    )
    parser.add_argument("a", help="the first model (.onnx, .pb, .pbtxt)")
    parser.add_argument("b", help="the second model")
    parser.add_argument(
        "--external-data-dir", metavar="DIR", help="where external tensor data lives"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--no-weights", dest="weights", action="store_false",
                        help="compare structure, dtypes and shapes only, not values")  # fmt: skip
    parser.add_argument("--atol", type=float, default=0.0, metavar="X",
                        help="absolute tolerance of value comparisons")  # fmt: skip
    parser.add_argument("--rtol", type=float, default=0.0, metavar="X",
                        help="relative tolerance (of |a|) of value comparisons")  # fmt: skip
    parser.set_defaults(handler=_cmd_diff)
