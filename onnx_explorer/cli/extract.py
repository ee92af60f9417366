"""``onnx-explorer extract MODEL --inputs a,b --outputs c -o sub.onnx``: cut a subgraph out of
an ONNX model as a new file (``--nodes`` or ``--scope`` instead of inputs and outputs).
External weights stay in the source's data files, referenced; the source is never written."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..runs import extract
from ..views._text import terminal_safe
from .metrics import parse_dims

__all__ = ["register"]


def _cmd_extract(args: argparse.Namespace) -> int:
    if not (args.outputs or args.nodes or args.scope):
        raise ValueError("say what to cut: --outputs (with --inputs), --nodes or --scope")
    dims = parse_dims(",".join(args.dims or []))
    submodel = extract(
        args.path,
        inputs=args.inputs if args.outputs else None,
        outputs=args.outputs or None,
        nodes=args.nodes or None,
        scope=args.scope or None,
        dims=dims,
        copy_weights=args.copy_weights,
    )
    path = submodel.save(args.output, overwrite=args.overwrite)
    if args.json:
        info = {
            "path": str(path),
            "nodes": submodel.nodes,
            "inputs": submodel.inputs,
            "outputs": submodel.outputs,
            "notes": submodel.notes,
        }
        print(json.dumps(info, indent=1))
        return 0
    print(terminal_safe(f"wrote {path}: {len(submodel.nodes):,} node(s)"))
    print(terminal_safe(f"  inputs:  {', '.join(submodel.inputs)}"))
    print(terminal_safe(f"  outputs: {', '.join(submodel.outputs)}"))
    for note in submodel.notes:
        print(terminal_safe(f"  {note}"))
    return 0


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "extract", help="cut a subgraph out as a new ONNX file (weights referenced, not copied)"
    )
    parser.add_argument("path", help="the ONNX model")
    parser.add_argument("--inputs", metavar="A,B", default="", help="values fed in")
    parser.add_argument("--outputs", metavar="C,D", default="", help="values to compute")
    parser.add_argument("--nodes", metavar="N1,N2", default="", help="node names to cut")
    parser.add_argument("--scope", metavar="PATH", help="a name scope to cut (/encoder/layer.3)")
    parser.add_argument("-o", "--output", required=True, metavar="SUB.onnx", help="new file")
    parser.add_argument(
        "--dims", action="append", metavar="NAME=INT[,...]",
        help="sizes of symbolic input dims the cut's inputs are typed at",
    )  # fmt: skip
    parser.add_argument(
        "--copy-weights", action="store_true",
        help="embed the weights instead of referencing the source's data files",
    )  # fmt: skip
    parser.add_argument("--overwrite", action="store_true", help="replace an existing file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(handler=_cmd_extract)
