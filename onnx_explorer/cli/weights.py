"""``onnx-explorer weights``: every weight's statistics and flags, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from ..views._text import human_bytes, number_text, shape_text, terminal_safe
from ._common import add_common

__all__ = ["register"]

JSON_KEYS = (
    "name", "graph", "kind", "dtype", "shape", "parameters", "bytes", "location", "min", "max",
    "mean", "std", "abs_max", "zeros", "nan", "inf", "p1", "p50", "p99", "integer",
    "quantization", "flags", "error",
)  # fmt: skip


def _number(value: Any) -> Any:
    """JSON has no NaN or infinity: write them as null, keep the rest."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _number(value.item())
    return value


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return number_text(value, 4)
    if isinstance(value, tuple):
        return shape_text(value)
    return terminal_safe(str(value))


#: (column, width); the name is cut on the left past its width, every other column widens
#: to fit its values: a number is never cut (INT64_MIN is -9223372036854775808, not -92233…).
_TABLE_COLUMNS = (("name", 48), ("dtype", 9), ("shape", 14), ("bytes", 9), ("location", 9),
                  ("min", 10), ("max", 10), ("std", 10), ("flags", 0))  # fmt: skip


def _table_cell(row: dict[str, Any], column: str) -> str:
    if column == "bytes":
        return human_bytes(row["bytes"])
    if column == "flags" and row.get("error"):
        return "ERROR: " + terminal_safe(str(row["error"]))
    if column == "flags" and str(row.get("quantization") or "").startswith("quantized ("):
        return ", ".join(filter(None, [row.get("flags"), "scale unknown"]))
    return _cell(row.get(column))


def _table(rows: list[dict[str, Any]]) -> str:
    cells = [[_table_cell(row, c) for c, _ in _TABLE_COLUMNS] for row in rows]
    widths = []
    for i, (column, width) in enumerate(_TABLE_COLUMNS):
        if column != "name":
            width = max([width, len(column), *(len(line[i]) for line in cells)])
        widths.append(width)
    lines = ["  ".join(f"{c:<{w}}" for (c, _), w in zip(_TABLE_COLUMNS, widths)).rstrip()]
    for line in cells:
        name = line[0]
        if len(name) > widths[0]:
            line[0] = "…" + name[-(widths[0] - 1) :]
        lines.append("  ".join(f"{t:<{w}}" for t, w in zip(line, widths)).rstrip())
    return "\n".join(lines)


def _attribute_line(rows: list[dict[str, Any]]) -> str | None:
    """ "in attributes: N values in K nodes" when parameters live in node attributes."""
    held = [r for r in rows if r.get("kind") == "attribute"]
    if not held:
        return None
    nodes = {(r.get("graph"), r.get("node")) for r in held}
    values = sum(int(r.get("parameters") or 0) for r in held)
    return f"in attributes: {values} values in {len(nodes)} nodes"


def _cmd_many(args: argparse.Namespace) -> int:
    from ..weights._many import weights_report_many

    client = None
    if args.scheduler:
        try:
            from dask.distributed import Client
        except ImportError:
            raise ImportError(
                "--scheduler needs dask.distributed: pip install 'onnx_explorer[distributed]'"
            ) from None
        client = Client(args.scheduler)  # type: ignore[no-untyped-call]  # dask: no annotations
    try:
        result = weights_report_many([args.path, *args.more], client=client)
    finally:
        if client is not None:
            client.close()  # type: ignore[no-untyped-call]  # dask: no annotations
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    header = ("model", "tensors", "values", "min", "max", "mean", "std", "nan", "inf")
    lines: list[tuple[str, ...]] = [header]
    for item in [*result.models, None]:
        totals = result.totals if item is None else item.totals
        name = "all models" if item is None else terminal_safe(item.source)
        if item is not None and item.error:
            lines.append((name, "error: " + terminal_safe(item.error)[:120]))
            continue
        lines.append(
            (name, str(totals.tensors), str(totals.values),
             *(_cell(v) for v in (totals.to_dict()["min"], totals.to_dict()["max"],
                                  totals.mean, totals.std)),
             str(totals.nan), str(totals.inf))
        )  # fmt: skip
    widths = [max(len(line[i]) for line in lines if len(line) > i) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip())
    return 0


def _cmd_weights(args: argparse.Namespace) -> int:
    from ..readers import load
    from ..weights._report import sort_rows, weights_report

    if args.many or args.more:
        if not args.many:
            raise ValueError("several models given: add --many to report on all of them")
        return _cmd_many(args)

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
    everything = rows
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
        parameters = sum(int(r.get("parameters") or 0) for r in everything)
        attributes = _attribute_line(everything)  # the model's totals, whatever --top shows
        print(f"{parameters} parameters in all" + (f", {attributes}" if attributes else ""))
    return 0


def register(sub: Any) -> None:
    parser = sub.add_parser("weights", help="statistics and warning flags of every weight")
    add_common(parser)
    parser.add_argument(
        "--sort", metavar="KEY", default="bytes",
        help="column to sort by (bytes, abs_max, std, name, ...; +KEY ascending, -KEY descending)",
    )  # fmt: skip
    parser.add_argument("--top", type=int, metavar="N", help="show only the first N rows")
    parser.add_argument("--dequantize", action="store_true",
                        help="statistics of dequantized values for quantized weights")  # fmt: skip
    parser.add_argument("more", nargs="*", metavar="MORE",
                        help="with --many: more model paths or URLs")  # fmt: skip
    parser.add_argument("--many", action="store_true",
                        help="report on every model given, in parallel, merged")  # fmt: skip
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="with --many: a dask.distributed scheduler to run on")  # fmt: skip
    parser.set_defaults(handler=_cmd_weights)
