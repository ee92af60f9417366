"""``onnx-explorer render``: draw a graph's view to SVG, PNG or DOT."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..views._drawing import CONTROL_EDGES, DEFAULT_HOPS, DEFAULT_MAX_NODES, EDGE_LABELS
from ._common import add_common

__all__ = ["register"]


def _cmd_render(args: argparse.Namespace) -> int:
    from ..readers import load
    from ..views._drawing import build_dot
    from ..views._quoting import one_line
    from ..views._render import save_result

    model = load(args.path, external_data_dir=args.external_data_dir)
    graph = model.graph_at(args.graph) if args.graph else model.graph
    options: dict[str, Any] = {
        "max_nodes": args.max_nodes,
        "edge_labels": args.edge_labels,
        "control_edges": args.control_edges,
    }
    if args.expand:
        options["expanded"] = "all" if args.expand == ["all"] else args.expand
    if args.focus:
        options["focus"] = args.focus
        options["hops"] = args.hops
    result = build_dot(graph, model, **options)
    path = save_result(result, args.output, args.timeout)
    if args.json:
        report = {
            "output": str(path),
            "graph": result.graph_path,
            "drawn": result.drawn,
            "expanded": list(result.expanded),
            "focus": result.focus,
            "notes": list(result.notes),
        }
        print(json.dumps(report, indent=2))
    else:
        print(f"wrote {path} ({result.drawn:,} nodes drawn)")
        for note in result.notes:  # model text: one printable line each
            print(f"  {one_line(note, 300)}")
    return 0


def register(sub: Any) -> None:
    parser = sub.add_parser("render", help="draw a graph to .svg, .png or .dot with Graphviz")
    add_common(parser)
    parser.add_argument("-o", "--output", required=True, help="output file: .svg, .png or .dot")
    parser.add_argument("--graph", metavar="PATH", help="a subgraph or function path (default: /)")
    parser.add_argument("--expand", nargs="*", metavar="SCOPE", help="scopes to expand, or 'all'")
    parser.add_argument("--focus", metavar="NODE", help="draw the neighbourhood of this node")
    parser.add_argument("--hops", type=int, default=DEFAULT_HOPS, help="neighbourhood radius")
    parser.add_argument("--max-nodes", type=int, default=DEFAULT_MAX_NODES,
                        help="most nodes in one layout")  # fmt: skip
    parser.add_argument("--edge-labels", choices=EDGE_LABELS, default="both")
    parser.add_argument("--control-edges", choices=CONTROL_EDGES, default="auto",
                        help="ordering-only edges (GraphDef ^name): auto hides them when "
                        "there are many")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                        help="stop Graphviz after this long (default 60)")  # fmt: skip
    parser.set_defaults(handler=_cmd_render)
