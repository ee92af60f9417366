"""Node search on a 100,000-node graph: the explorer's node list against a plain scan.

The reference is what one would write with onnx alone: a list comprehension over
``model.graph.node`` testing ``query in node.name``. Both run in this process on the
same model; each query's time is the median of 7 runs. Target: well under 100 ms.

    python bench/search.py
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fmt_ratio, machine_description, markdown_table, today, write_result

import onnx_explorer as ox
from onnx_explorer.views._tables import NodeSearch
from onnx_explorer.widgets._node_list import NodeList

NODES = 100_000
OPS = ["MatMul", "Add", "Softmax", "LayerNormalization", "Mul", "Transpose", "Reshape", "Gelu"]


def build(nodes: int) -> onnx.ModelProto:
    """A chain of ``nodes`` nodes with transformer-like scoped names."""
    protos = []
    prev = "x"
    per_layer = 100
    for i in range(nodes):
        layer, j = divmod(i, per_layer)
        op = OPS[j % len(OPS)]
        block = "self_attn" if j < 50 else "mlp"
        out = f"t{i}"
        protos.append(
            helper.make_node(
                "Identity", [prev], [out], name=f"/model/layers.{layer}/{block}/{op}_{j}"
            )
        )
        protos[-1].op_type = op if op in ("Softmax", "Transpose", "Reshape") else "Identity"
        prev = out
    graph = helper.make_graph(
        protos, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1])],
    )  # fmt: skip
    return helper.make_model(graph)


def median_time(func, repeat: int = 7) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main() -> None:
    proto = build(NODES)
    model = ox.load(proto)
    build_s, index = median_time(lambda: NodeSearch(model.graph), repeat=3)
    assert isinstance(index, NodeSearch)
    queries = [
        ("substring 'self_attn/softmax'", lambda: index.search("self_attn/softmax"),
         lambda: [n for n in proto.graph.node if "self_attn/softmax" in n.name.lower()]),
        ("substring, no match", lambda: index.search("no-such-node"),
         lambda: [n for n in proto.graph.node if "no-such-node" in n.name.lower()]),
        ("op type filter Softmax", lambda: index.search(op_type="Softmax"),
         lambda: [n for n in proto.graph.node if n.op_type == "Softmax"]),
        ("regex 'layers\\.9\\d\\d/mlp'", lambda: index.search(r"layers\.9\d\d/mlp", regex=True),
         lambda: [n for n in proto.graph.node if re.search(r"layers\.9\d\d/mlp", n.name, re.I)]),
        ("filter + substring", lambda: index.search("layers.5", op_type="Transpose"),
         lambda: [n for n in proto.graph.node
                  if n.op_type == "Transpose" and "layers.5" in n.name.lower()]),
    ]  # fmt: skip
    rows = []
    for label, ours, reference in queries:
        ours_s, found = median_time(ours)
        ref_s, expected = median_time(reference)
        assert len(found) == len(expected), (label, len(found), len(expected))  # type: ignore[arg-type]
        rows.append(
            [
                label,
                f"{len(found):,}",
                f"{ours_s * 1000:.1f} ms",  # type: ignore[arg-type]
                f"{ref_s * 1000:.1f} ms",
                fmt_ratio(ours_s / ref_s),
            ]
        )
    node_list = NodeList(model.graph)
    widget_s, _ = median_time(
        lambda: (
            setattr(node_list.search_box, "value", "self_attn"),
            setattr(node_list.search_box, "value", ""),
        )
    )
    table = markdown_table(
        ["query (100,000 nodes)", "matches", "onnx_explorer", "scan of ModelProto", "ratio"], rows
    )
    text = (
        f"# Node search benchmark\n\n{today()}, {machine_description()}\n\n{table}\n\n"
        f"Index build (once per graph shown): {build_s * 1000:.0f} ms. "
        f"Node list widget, two searches typed (search + refill of one page): "
        f"{widget_s * 1000:.0f} ms.\n"
    )
    print(text)
    write_result("search", text)


if __name__ == "__main__":
    main()
