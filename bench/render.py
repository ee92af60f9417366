"""Benchmark: time to the first SVG of large graphs, beside a plain whole-graph drawing.

Generates transformer-like ONNX graphs of about 2,000 / 20,000 / 100,000 nodes with
exporter-style scoped names (``/model/layers.7/self_attn/q_proj/MatMul``) and one of
20,000 nodes with numbered names (``MatMul_123``) under ``bench/_models/``, then for
each prints the time to the first view (load + scope/DOT building + ``dot``) and the
nodes drawn, beside a net_drawer-style drawing of the whole graph (every operator and
every value as its own box, handed to ``dot`` at once) with a time limit.

Weights are declared as external data in a file that is never written: the graph
structure is what is measured, and nothing here reads a weight.

    .venv/bin/python bench/render.py            # all models, 60 s limit for the plain drawing
    .venv/bin/python bench/render.py --quick    # 2,000 nodes only
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import onnx
from onnx import TensorProto, helper

HERE = Path(__file__).resolve().parent
MODELS = HERE / "_models"
HIDDEN, FFN, HEADS = 768, 3072, 12


class _Builder:
    """Appends nodes and initializers straight into a GraphProto (fast: no make_node)."""

    def __init__(self, graph: onnx.GraphProto, scoped: bool) -> None:
        self.graph = graph
        self.scoped = scoped
        self.count = 0
        self.offset = 0

    def name(self, scope: str, op: str) -> str:
        self.count += 1
        return f"{scope}/{op}" if self.scoped else f"{op}_{self.count}"

    def node(
        self, scope: str, op: str, inputs: list[str], n_out: int = 1, **attrs: object
    ) -> list[str]:
        name = self.name(scope, op)
        node = self.graph.node.add()
        node.op_type = op
        node.name = name
        node.input.extend(inputs)
        outs = [f"{name}_output_{i}" for i in range(n_out)]
        node.output.extend(outs)
        for key, value in attrs.items():
            node.attribute.append(helper.make_attribute(key, value))
        return outs

    def weight(self, name: str, dims: list[int]) -> str:
        t = self.graph.initializer.add()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        length = 4
        for d in dims:
            length *= d
        for key, value in (
            ("location", "weights.bin"),
            ("offset", self.offset),
            ("length", length),
        ):
            entry = t.external_data.add()
            entry.key, entry.value = key, str(value)
        self.offset += length
        return name

    def shape_const(self, name: str, values: list[int]) -> str:
        self.graph.initializer.append(
            helper.make_tensor(name, TensorProto.INT64, [len(values)], values)
        )
        return name

    def constant(self, scope: str, value: float) -> str:
        tensor = helper.make_tensor("value", TensorProto.FLOAT, [], [value])
        return self.node(scope, "Constant", [], value=tensor)[0]

    def linear(self, scope: str, x: str, n_in: int, n_out: int, prefix: str) -> str:
        w = self.weight(f"{prefix}.weight", [n_in, n_out])
        b = self.weight(f"{prefix}.bias", [n_out])
        (y,) = self.node(scope, "MatMul", [x, w])
        return self.node(scope, "Add", [y, b])[0]

    def layer_norm(self, scope: str, x: str, prefix: str) -> str:
        s = self.weight(f"{prefix}.weight", [HIDDEN])
        b = self.weight(f"{prefix}.bias", [HIDDEN])
        return self.node(scope, "LayerNormalization", [x, s, b], axis=-1)[0]

    def layer(self, i: int, x: str) -> str:
        p, s = f"model.layers.{i}", f"/model/layers.{i}"
        h = self.layer_norm(f"{s}/input_layernorm", x, f"{p}.input_layernorm")
        split = self.shape_const(f"{p}.heads_shape", [0, 0, HEADS, HIDDEN // HEADS])
        merge = self.shape_const(f"{p}.merge_shape", [0, 0, HIDDEN])
        a = f"{s}/self_attn"
        heads = []
        for proj in ("q", "k", "v"):
            y = self.linear(f"{a}/{proj}_proj", h, HIDDEN, HIDDEN, f"{p}.self_attn.{proj}_proj")
            (r,) = self.node(a, "Reshape", [y, split])
            perm = [0, 2, 3, 1] if proj == "k" else [0, 2, 1, 3]
            heads.append(self.node(a, "Transpose", [r], perm=perm)[0])
        (scores,) = self.node(a, "MatMul", heads[:2])
        (scaled,) = self.node(a, "Div", [scores, self.constant(a, 8.0)])
        (probs,) = self.node(a, "Softmax", [scaled], axis=-1)
        (ctx,) = self.node(a, "MatMul", [probs, heads[2]])
        (t,) = self.node(a, "Transpose", [ctx], perm=[0, 2, 1, 3])
        (m,) = self.node(a, "Reshape", [t, merge])
        o = self.linear(f"{a}/o_proj", m, HIDDEN, HIDDEN, f"{p}.self_attn.o_proj")
        (x,) = self.node(s, "Add", [x, o])
        h = self.layer_norm(f"{s}/post_attention_layernorm", x, f"{p}.post_attention_layernorm")
        mlp = f"{s}/mlp"
        up = self.linear(f"{mlp}/fc1", h, HIDDEN, FFN, f"{p}.mlp.fc1")
        g = f"{mlp}/act"  # GELU written out, as older exporters do
        (d,) = self.node(g, "Div", [up, self.constant(g, 1.4142135)])
        (e,) = self.node(g, "Erf", [d])
        (one,) = self.node(g, "Add", [e, self.constant(g, 1.0)])
        (prod,) = self.node(g, "Mul", [up, one])
        (act,) = self.node(g, "Mul", [prod, self.constant(g, 0.5)])
        down = self.linear(f"{mlp}/fc2", act, FFN, HIDDEN, f"{p}.mlp.fc2")
        return self.node(s, "Add", [x, down])[0]


def transformer(target_nodes: int, scoped: bool = True) -> onnx.ModelProto:
    """A decoder-only transformer with enough layers to reach about ``target_nodes`` nodes."""
    graph = onnx.GraphProto(name="bench")
    b = _Builder(graph, scoped)
    x, i = "hidden_states", 0
    while b.count < target_nodes - 40:
        x = b.layer(i, x)
        i += 1
    x = b.layer_norm("/model/norm", x, "model.norm")
    logits = b.linear("/lm_head", x, HIDDEN, 32000, "lm_head")
    graph.input.append(
        helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, ["batch", "seq", HIDDEN])
    )
    graph.output.append(helper.make_tensor_value_info(logits, TensorProto.FLOAT, None))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def generate(name: str, nodes: int, scoped: bool) -> tuple[Path, float]:
    MODELS.mkdir(exist_ok=True)
    path = MODELS / f"{name}.onnx"
    start = time.perf_counter()
    if not path.exists():
        onnx.save(transformer(nodes, scoped), path)
    return path, time.perf_counter() - start


FIRST_VIEW = """
import onnx_explorer
from onnx_explorer.views.dot import build_dot
from onnx_explorer.views.render import svg_from_result
"""
FIRST_VIEW_STMT = """
_a = _time.perf_counter()
model = onnx_explorer.load(PATH)
_b = _time.perf_counter()
result = build_dot(model.graph, model)
_c = _time.perf_counter()
svg = svg_from_result(result, timeout=120)
report["split"] = [_b - _a, _c - _b, _time.perf_counter() - _c]
"""
FIRST_VIEW_POST = """
report["drawn"] = result.drawn
report["nodes"] = len(model.graph.nodes)
report["notes"] = list(result.notes)
"""


def plain_dot(model: onnx.ModelProto) -> str:
    """What net_drawer-style tools hand to dot: every operator and every value, at once."""
    lines = ["digraph G {", "rankdir=TB;"]
    values: dict[str, str] = {}

    def value_id(name: str) -> str:
        if name not in values:
            values[name] = f"v{len(values)}"
            lines.append(f'{values[name]} [shape=ellipse label="{len(values)}"];')
        return values[name]

    for i, node in enumerate(model.graph.node):
        lines.append(f'n{i} [shape=box label="{node.op_type}"];')
        for name in node.input:
            if name:
                lines.append(f"{value_id(name)} -> n{i};")
        for name in node.output:
            lines.append(f"n{i} -> {value_id(name)};")
    lines.append("}")
    return "\n".join(lines)


def time_plain(path: Path, limit: float) -> str:
    model = onnx.load(path, load_external_data=False)
    source = plain_dot(model)
    start = time.perf_counter()
    try:
        subprocess.run(
            ["dot", "-Tsvg", "-o", "/dev/null"],
            input=source.encode(),
            timeout=limit,
            check=True,
            capture_output=True,
        )
    except subprocess.TimeoutExpired:
        return f"> {limit:.0f} s (killed)"
    return f"{time.perf_counter() - start:.2f} s"


def main() -> None:
    sys.path.insert(0, str(HERE))
    from _common import (
        machine_description,
        markdown_table,
        run_python,
        timed_child,
        today,
        write_result,
    )

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--child", nargs=4, metavar=("NAME", "NODES", "SCOPED", "LIMIT"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    if args.child:
        # Heavy work (generating, loading for the plain drawing) runs here, in a child, so
        # the parent stays small and its peak RSS cannot pollute the measured children.
        name, nodes, scoped, limit = args.child
        path, _ = generate(name, int(nodes), scoped == "1")
        print(time_plain(path, float(limit)))
        return
    cases = [("scoped_2k", 2_000, True)]
    if not args.quick:
        cases += [("scoped_20k", 20_000, True), ("scoped_100k", 100_000, True),
                  ("unscoped_20k", 20_000, False)]  # fmt: skip
    rows = []
    for name, nodes, scoped in cases:
        child = subprocess.run(
            [sys.executable, __file__, "--child", name, str(nodes), "1" if scoped else "0",
             str(args.limit)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        plain = child.stdout.strip().splitlines()[-1]
        path = MODELS / f"{name}.onnx"
        code = timed_child(FIRST_VIEW, FIRST_VIEW_STMT.replace("PATH", repr(str(path))),
                           FIRST_VIEW_POST)  # fmt: skip
        runs = [run_python(code) for _ in range(3)]
        median = sorted(runs, key=lambda r: r.seconds)[1]
        report = median.report
        load, view, layout = report["split"]
        rows.append([
            f"{name} ({report['nodes']:,} nodes)", f"{median.seconds:.2f} s",
            f"{load:.2f} / {view:.2f} / {layout:.2f} s", f"{report['drawn']:,}",
            plain, "; ".join(report["notes"])[:120],
        ])  # fmt: skip
        print(rows[-1], flush=True)
    table = markdown_table(
        ["model", "first view", "load / view / dot", "drawn", "plain dot of everything",
         "notes"],
        rows, align="lrrrrl",
    )  # fmt: skip
    text = (
        f"# First view of large graphs\n\n{today()}, {machine_description()}\n\n{table}\n\n"
        "First view: median of 3 fresh processes, measured inside the process around "
        "`load` + `build_dot` + `dot -Tsvg` (split: reading the file into the model; "
        "index, scope tree and DOT text; Graphviz layout and SVG). Plain: every operator and value handed to "
        f"`dot` at once (net_drawer style), killed after {args.limit:.0f} s.\n"
    )
    print(text)
    write_result("render", text)


if __name__ == "__main__":
    main()
