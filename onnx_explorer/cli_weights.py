"""``onnx-explorer weights``: every weight's statistics and flags, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from typing import Any

from .summary import human_bytes

JSON_KEYS = (
    "name", "graph", "kind", "dtype", "shape", "parameters", "bytes", "location", "min", "max",
    "mean", "std", "abs_max", "zeros", "nan", "inf", "p1", "p50", "p99", "quantization",
    "flags", "error",
)  # fmt: skip


def _number(value: Any) -> Any:
    """JSON has no NaN or infinity: write them as null, keep the rest."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _number(value.item())
    return value


def _terminal_safe(text: str) -> str:
    """Names come from the file: show control characters (terminal escape sequences) escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, tuple):
        return "×".join(str(d) for d in value) or "scalar"
    return _terminal_safe(str(value))


def _table(rows: list[dict[str, Any]]) -> str:
    columns = [("name", 48), ("dtype", 9), ("shape", 14), ("bytes", 9), ("location", 9),
               ("min", 10), ("max", 10), ("std", 10), ("flags", 24)]  # fmt: skip
    lines = ["  ".join(f"{c:<{w}}" for c, w in columns).rstrip()]
    for row in rows:
        cells = []
        for column, width in columns:
            text = human_bytes(row["bytes"]) if column == "bytes" else _cell(row.get(column))
            if column == "flags" and row.get("error"):
                text = "ERROR: " + _terminal_safe(str(row["error"]))
                cells.append(text)
                continue
            if len(text) > width:
                text = "…" + text[-(width - 1) :] if column == "name" else text[: width - 1] + "…"
            cells.append(f"{text:<{width}}")
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _cmd_weights(args: argparse.Namespace) -> int:
    from .readers import load
    from .report import sort_rows, weights_report

    if args.top is not None and args.top < 0:
        raise ValueError(f"--top must not be negative, not {args.top}")
    if args.sort:
        sort_rows([], args.sort)  # a bad key fails before any tensor is read
    model = load(args.path, external_data_dir=args.external_data_dir)
    try:
        rows = weights_report(
            model,
            progress=not args.json and sys.stderr.isatty(),
            sort=args.sort,
            dequantize=args.dequantize,
            as_list=True,
        )
    finally:
        model.close()
    if args.top is not None:
        rows = rows[: args.top]
    if args.json:
        out = [{key: _number(row.get(key)) for key in JSON_KEYS} for row in rows]
        for item in out:
            item["shape"] = list(item["shape"]) if item["shape"] is not None else None
        print(json.dumps(out, indent=1))
    else:
        print(_table(rows))
        bad = sum(1 for r in rows if r.get("error"))
        flagged = sum(1 for r in rows if r.get("flags"))
        print(f"{len(rows)} tensors, {flagged} flagged, {bad} unreadable")
    return 0


def register(sub: Any, add_common: Callable[[argparse.ArgumentParser], None]) -> None:
    parser = sub.add_parser("weights", help="statistics and warning flags of every weight")
    add_common(parser)
    parser.add_argument(
        "--sort", metavar="KEY", default="bytes",
        help="column to sort by (bytes, abs_max, std, name, ...; +KEY ascending, -KEY descending)",
    )  # fmt: skip
    parser.add_argument("--top", type=int, metavar="N", help="show only the first N rows")
    parser.add_argument("--dequantize", action="store_true",
                        help="statistics of dequantized values for quantized weights")  # fmt: skip
    parser.set_defaults(handler=_cmd_weights)
