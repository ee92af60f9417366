"""``onnx-explorer metrics``: where parameters, memory and compute go, per node or scope."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..metrics import SERIES, Metrics, metrics
from ..metrics._table import json_rows
from ..views._text import human_bytes, human_count, shorten, terminal_safe
from ._common import add_common

__all__ = ["parse_dims", "register"]

SORT_KEYS = ("macs", "params", "activation_bytes", "param_bytes", "name", "file")
NAME_WIDTH = 60
TEXT_TOP = 20  # rows shown in text unless --top says otherwise


def parse_dims(text: str | None) -> dict[str, int]:
    """``batch=1,sequence=128`` → {"batch": 1, "sequence": 128}; ValueError naming a bad entry.

    ``metrics`` and ``run`` both take ``--dims`` this way."""
    dims: dict[str, int] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--dims entry {item!r} is not NAME=SIZE (e.g. batch=1,sequence=128)")
        try:
            size = int(value.strip())
        except ValueError:
            raise ValueError(
                f"--dims {name.strip()}: size {value.strip()!r} is not an integer"
            ) from None
        if size < 0:
            raise ValueError(f"--dims {name.strip()}: size must not be negative, not {size}")
        if not value.strip().isdigit():  # int() also takes "+1" and "1_000"
            raise ValueError(f"--dims {name.strip()}: size {value.strip()!r} is not an integer")
        dims[name.strip()] = size
    return dims


def _sorted(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    if key == "file":
        return rows
    if key == "name":
        return sorted(rows, key=lambda r: r.get("name", r.get("scope", "")))
    return sorted(rows, key=lambda r: -(r[key] or 0))


def _number(key: str, value: Any) -> str:
    if value is None:
        return "?"
    return human_bytes(value) if key.endswith("bytes") else human_count(value)


def _table(rows: list[dict[str, Any]], label: str, first: str) -> str:
    columns = [first, *([] if first == "scope" else ["op_type"]), *SERIES]
    if first == "scope":
        columns.insert(1, "nodes")
    cells = []
    for row in rows:
        name = terminal_safe(row[first]) or "(top level)"
        if len(name) > NAME_WIDTH:
            name = "…" + name[-(NAME_WIDTH - 1) :]
        line = [name]
        for column in columns[1:]:
            if column in SERIES:
                line.append(_number(column, row[column]))
            elif column == "nodes":
                line.append(str(row[column]))
            else:
                line.append(shorten(terminal_safe(row[column]), 24))
        cells.append(line)
    header = [label, *columns[1:]]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(header)]
    numeric = {i for i, c in enumerate(columns) if c in SERIES or c == "nodes"}

    def fmt(line: list[str]) -> str:
        return "  ".join(
            t.rjust(w) if i in numeric else t.ljust(w) for i, (t, w) in enumerate(zip(line, widths))
        ).rstrip()

    return "\n".join([fmt(header), *(fmt(c) for c in cells)])


def _footer(result: Metrics) -> list[str]:
    totals, unknown = result.totals, result.unknown
    lines = [
        f"total: {totals['nodes']:,} nodes, {human_count(totals['macs'])} MACs, "
        f"{human_count(totals['params'])} parameters ({human_bytes(totals['param_bytes'])}), "
        f"{human_bytes(totals['activation_bytes'])} of activations"
    ]
    if unknown["macs"] or unknown["activation_bytes"]:
        lines.append(
            f"unknown: MACs of {unknown['macs']:,} nodes, activation bytes of "
            f"{unknown['activation_bytes']:,} nodes (not counted above)"
        )
    if result.unknown_ops:
        ops = ", ".join(f"{terminal_safe(op)} ×{n}" for op, n in result.unknown_ops.items())
        lines.append(f"no MAC rule for: {shorten(ops, 300)}")
    if result.unresolved_dims:
        names = shorten(", ".join(terminal_safe(d) for d in result.unresolved_dims), 200)
        lines.append(f"sizes no inference or run could find: {names}")
    if result.binding is not None and result.binding.assumed:
        lines.append(terminal_safe(result.binding.line(command_line=True)))
    lines.append(f"shapes from: {result.shapes_from}")
    lines.extend(f"note: {terminal_safe(note)}" for note in result.notes)
    return lines


def _cmd_metrics(args: argparse.Namespace) -> int:
    from ..readers import load

    if args.top is not None and args.top < 0:
        raise ValueError(f"--top must not be negative, not {args.top}")
    dims = parse_dims(args.dims)
    model = load(args.path, external_data_dir=args.external_data_dir)
    try:
        result = metrics(model, dims=dims)
    finally:
        model.close()
    if args.by == "scope":
        rows = result.by_scope(depth=args.depth)
    else:
        rows = result.rows
    rows = _sorted(rows, args.sort)
    top = args.top if args.top is not None or args.json else TEXT_TOP
    if top is not None:
        rows = rows[:top]
    if args.json:
        out = {key: value for key, value in result.to_dict().items() if key != "rows"}
        out["rows" if args.by == "node" else "scopes"] = json_rows(rows)  # big ints: text
        print(json.dumps(out, indent=1))  # ASCII: control characters escaped
        return 0
    first, label = ("scope", "scope") if args.by == "scope" else ("name", "node")
    print(_table(rows, label, first))
    print("\n".join(_footer(result)))
    return 0


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "metrics", help="parameters, activation memory and MACs per node or per scope"
    )
    add_common(parser)
    parser.add_argument("--dims", metavar="NAME=SIZE,...",
                        help="sizes of the inputs' symbolic dimensions, e.g. "
                             "batch=1,height=640 (unbound ones: a default per kind, "
                             "said in the output)")  # fmt: skip
    parser.add_argument("--sort", choices=SORT_KEYS, default="macs",
                        help="row order (default macs, largest first; file: stored)")  # fmt: skip
    parser.add_argument("--top", type=int, metavar="N",
                        help=f"the first N rows ({TEXT_TOP} in text, all in JSON)")  # fmt: skip
    parser.add_argument("--by", choices=("node", "scope"), default="node",
                        help="one row per node (default) or per name scope")  # fmt: skip
    parser.add_argument("--depth", type=int, metavar="K", default=None,
                        help="with --by scope: scopes cut at K parts (default: all)")  # fmt: skip
    parser.set_defaults(handler=_cmd_metrics)
