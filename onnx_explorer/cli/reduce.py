"""``onnx-explorer reduce MODEL --check nonfinite -o culprit.onnx``: shrink a model to the
smallest subgraph where the check still holds (a node makes a NaN/Inf, onnxruntime fails,
or the model differs from ``--reference``), printing each step; Ctrl-C keeps the best so
far. Exit 0 when a subgraph was written, 1 when the check does not hold on the whole
model, 2 on error."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ExplorerError
from ..runs import ReduceError, ReduceStep, reduce
from ..views._text import terminal_safe
from .metrics import parse_dims

__all__ = ["register"]


def _cmd_reduce(args: argparse.Namespace) -> int:
    def show(step: ReduceStep) -> None:
        if not args.json:
            print(terminal_safe(str(step)), file=sys.stderr)

    try:
        dims = parse_dims(",".join(args.dims or []))
        result = reduce(
            args.path, args.check, args.feeds, reference=args.reference,
            atol=args.atol, rtol=args.rtol, dims=dims, seed=args.seed,
            linear=not args.no_linear, on_step=show,
        )  # fmt: skip
        path = result.save(args.output, overwrite=args.overwrite)
    except ReduceError as exc:
        print(terminal_safe(f"onnx-explorer: {exc}"), file=sys.stderr)
        return 1
    except (ExplorerError, OSError, ValueError) as exc:
        print(terminal_safe(f"onnx-explorer: error: {exc}"), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"path": str(path), **result.to_dict()}, indent=1, default=str))
        return 0
    state = " (interrupted: the smallest found so far)" if result.interrupted else ""
    print(terminal_safe(
        f"wrote {path}: {len(result.node_names):,} of {result.nodes_total:,} nodes{state}"
    ))  # fmt: skip
    for name in result.node_names:
        print(terminal_safe(f"  {name}"))
    for note in (*result.notes, *result.submodel.notes):
        print(terminal_safe(f"  {note}"))
    return 0


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "reduce",
        help="shrink a model to the smallest subgraph where a check holds (exit 0 written, "
        "1 the check does not hold, 2 error)",
    )
    parser.add_argument("path", help="the ONNX model")
    parser.add_argument("--check", choices=["nonfinite", "ort-error", "differs"], default=None,
                        help="what must still hold (default: nonfinite, or differs with "
                        "--reference)")  # fmt: skip
    parser.add_argument("--reference", metavar="OTHER", help="the model to compare with")
    parser.add_argument("--atol", type=float, default=1e-3, metavar="X")
    parser.add_argument("--rtol", type=float, default=1e-3, metavar="X")
    parser.add_argument("--feeds", metavar="X.npz", help="inputs (default: generated)")
    parser.add_argument("--dims", action="append", metavar="NAME=INT[,...]",
                        help="values of symbolic input dims, e.g. batch=1,seq=16")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of generated feeds")
    parser.add_argument("--no-linear", action="store_true", help="bisection only")
    parser.add_argument("-o", "--output", required=True, metavar="CULPRIT.onnx", help="new file")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(handler=_cmd_reduce)
