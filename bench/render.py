"""Benchmark: time to the first SVG of large graphs, beside a plain whole-graph drawing.

Generates transformer-like ONNX graphs of about 2,000 / 20,000 / 100,000 nodes with
exporter-style scoped names (``/model/layers.7/self_attn/q_proj/MatMul``) and one of
20,000 nodes with numbered names (``MatMul_123``) under ``bench/_models/``, then for
each prints the time to the first view (load + scope/DOT building + ``dot``) and the
nodes drawn, beside a net_drawer-style drawing of the whole graph (every operator and
every value as its own box, handed to ``dot`` at once) with a time limit.

Then the explorer widget, on graphs that are hard to lay out as well as large ones: a
TF1-style frozen GraphDef whose scopes all send a control edge into one ``NoOp``
(``samples.frozen_tf1_graphdef``), a DenseNet-like graph whose clustered layout is
slow under one of Graphviz's two ranking modes (``samples.dense_blocks``), and the
20,000- and 100,000-node transformers. For each: how long ``explore()`` takes to
return, the time to the first picture, what was simplified, each ranking mode alone
and the drawing as it was before (plain ``dot``, control edges drawn), each capped;
and the time ``select`` takes to bring 20 random hidden nodes into view.

Weights are declared as external data in a file that is never written: the graph
structure is what is measured, and nothing here reads a weight. Every model is built
here; nothing is downloaded.

    .venv/bin/python bench/render.py            # everything (about 5 minutes on 2 cores)
    .venv/bin/python bench/render.py --quick    # 2,000 nodes and the GraphDef only
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx
from onnx import TensorProto, helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import (  # noqa: E402
    Runs,
    emit_report,
    fmt_seconds,
    machine_description,
    markdown_table,
    measure,
    profile_top,
    run_python,
    timed_child,
    today,
    warm_page_cache,
    write_result,
)

if TYPE_CHECKING:
    from onnx_explorer.model import Node
    from onnx_explorer.widgets._explorer import Explorer
    from onnx_explorer.widgets._graph_view import GraphView
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


def densenet_export(blocks: Sequence[int] = (6, 12, 24, 16), growth: int = 32) -> onnx.ModelProto:
    """A DenseNet-121 as ``torch.onnx.export`` writes it (torchvision's module paths,
    ``/features/denseblock3/denselayer7/conv1/Conv``; the first BatchNorm folded into its
    Conv): every layer's Concat reads the outputs of all the layers before it in its block,
    the real-export counterpart of ``samples.dense_blocks``. Weights are external data in a
    file never written, as above."""
    graph = onnx.GraphProto(name="main_graph")
    b = _Builder(graph, scoped=True)

    def conv(
        scope: str,
        x: str,
        c_in: int,
        c_out: int,
        k: int,
        stride: int = 1,
        pad: int = 0,
        bias: bool = False,
    ) -> str:
        prefix = scope.strip("/").replace("/", ".")
        inputs = [x, b.weight(f"{prefix}.weight", [c_out, c_in, k, k])]
        if bias:
            inputs.append(b.weight(f"{prefix}.bias", [c_out]))
        return b.node(scope, "Conv", inputs, kernel_shape=[k, k], strides=[stride, stride],
                      pads=[pad] * 4, dilations=[1, 1], group=1)[0]  # fmt: skip

    def norm(scope: str, x: str, c: int) -> str:
        prefix = scope.strip("/").replace("/", ".")
        stats = [b.weight(f"{prefix}.{n}", [c]) for n in ("weight", "bias", "running_mean",
                                                           "running_var")]  # fmt: skip
        return b.node(scope, "BatchNormalization", [x, *stats], epsilon=1e-5, momentum=0.9)[0]

    x = conv("/features/conv0", "input", 3, 64, 7, 2, 3, bias=True)
    (x,) = b.node("/features/relu0", "Relu", [x])
    (x,) = b.node("/features/pool0", "MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2],
                  pads=[1, 1, 1, 1])  # fmt: skip
    channels = 64
    for k, layers in enumerate(blocks, 1):
        features = [x]
        for j in range(1, layers + 1):
            s = f"/features/denseblock{k}/denselayer{j}"
            cat = b.node(s, "Concat", list(features), axis=1)[0] if j > 1 else x
            c_in = channels + (j - 1) * growth
            (h,) = b.node(f"{s}/relu1", "Relu", [norm(f"{s}/norm1", cat, c_in)])
            h = conv(f"{s}/conv1", h, c_in, 4 * growth, 1)
            (h,) = b.node(f"{s}/relu2", "Relu", [norm(f"{s}/norm2", h, 4 * growth)])
            features.append(conv(f"{s}/conv2", h, 4 * growth, growth, 3, 1, 1))
        (x,) = b.node(f"/features/denseblock{k}", "Concat", features, axis=1)
        channels += layers * growth
        if k < len(blocks):
            t = f"/features/transition{k}"
            (x,) = b.node(f"{t}/relu", "Relu", [norm(f"{t}/norm", x, channels)])
            x = conv(f"{t}/conv", x, channels, channels // 2, 1)
            (x,) = b.node(f"{t}/pool", "AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
            channels //= 2
    (x,) = b.node("", "Relu", [norm("/features/norm5", x, channels)])
    (x,) = b.node("", "GlobalAveragePool", [x])
    (x,) = b.node("", "Flatten", [x], axis=1)
    weight = b.weight("classifier.weight", [1000, channels])
    (x,) = b.node("/classifier", "Gemm", [x, weight, b.weight("classifier.bias", [1000])],
                  transB=1)  # fmt: skip
    graph.input.append(
        helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])
    )
    graph.output.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", 1000]))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="pytorch")  # fmt: skip


FIRST_VIEW = """
import onnx_explorer
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._render import svg_from_result
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


def time_dot(source: str, limit: float, extra: Sequence[str] = ()) -> str:
    """How long ``dot -Tsvg`` takes on ``source``: "1.23 s", or "> 30 s" when killed at ``limit``."""
    start = time.perf_counter()
    try:
        subprocess.run(
            ["dot", "-Tsvg", *extra, "-o", "/dev/null"],
            input=source.encode(),
            timeout=limit,
            check=True,
            capture_output=True,
        )
    except subprocess.TimeoutExpired:
        return f"> {limit:g} s"
    except subprocess.CalledProcessError as exc:
        return f"crashed ({exc.stderr.decode(errors='replace').strip()[-80:]})"
    return f"{time.perf_counter() - start:.2f} s"


def time_plain(path: Path, limit: float) -> str:
    model = onnx.load(path, load_external_data=False)
    return time_dot(plain_dot(model), limit)


def first_view_rows(quick: bool, limit: float) -> list[list[str]]:
    """Generate the transformer graphs; time their first view and a plain drawing of each."""
    cases = [("scoped_2k", 2_000, True)]
    if not quick:
        cases += [("scoped_20k", 20_000, True), ("scoped_100k", 100_000, True),
                  ("unscoped_20k", 20_000, False)]  # fmt: skip
    rows = []
    for name, nodes, scoped in cases:
        child = subprocess.run(
            [sys.executable, __file__, "--child", name, str(nodes), "1" if scoped else "0",
             str(limit)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        plain = child.stdout.strip().splitlines()[-1]
        path = MODELS / f"{name}.onnx"
        code = timed_child(FIRST_VIEW, FIRST_VIEW_STMT.replace("PATH", repr(str(path))),
                           FIRST_VIEW_POST)  # fmt: skip
        runs = measure(code, FIRST_VIEW_RUNS)
        median = runs.median
        report = median.report
        load, view, layout = report["split"]
        rows.append([
            f"{name} ({report['nodes']:,} nodes)",
            f"{runs.best.seconds:.2f} / {median.seconds:.2f} s",
            f"{load:.2f} / {view:.2f} / {layout:.2f} s", f"{report['drawn']:,}",
            plain, "; ".join(report["notes"])[:120],
        ])  # fmt: skip
        print(rows[-1], flush=True)
    return rows


FIRST_VIEW_RUNS = 5
#: Issue 13's target for the 100,000-node graph: load + first view on two cores.
FIRST_VIEW_TARGET = 1.5

PROFILE_SETUP = """
import onnx_explorer as ox
from onnx_explorer.views._layout import ViewRequest, draw
"""
PROFILE_STMT = """
model = ox.load(PATH)
draw(model.graph, model, ViewRequest())
"""


def first_view_profile(name: str = "scoped_100k") -> list[str]:
    """The five functions with the most own time in load + first view (cProfile), as
    ``pstats`` prints them."""
    setup = f"PATH = {str(MODELS / f'{name}.onnx')!r}\n{PROFILE_SETUP}"
    profile = profile_top(setup, PROFILE_STMT)
    return [
        "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)",
        *map(pstats_line, profile["top"]),
    ]


def pstats_line(row: dict[str, Any]) -> str:
    """One row of :func:`_common.profile_top` as ``pstats.Stats.print_stats`` prints it."""
    calls, primitive = row["calls"], row["primitive_calls"]
    count = str(calls) if calls == primitive else f"{calls}/{primitive}"
    own_per = f"{row['own_s'] / calls:8.3f}" if calls else " " * 8
    cumulative_per = f"{row['cumulative_s'] / primitive:8.3f}" if primitive else " " * 8
    if row["file"] == "~" and row["line"] == 0:  # a builtin: {method 'get' of 'dict' objects}
        name = row["function"]
        where = f"{{{name[1:-1]}}}" if name.startswith("<") and name.endswith(">") else name
    else:
        where = f"{row['file']}:{row['line']}({row['function']})"
    return (
        f"{count:>9} {row['own_s']:8.3f} {own_per} {row['cumulative_s']:8.3f} "
        f"{cumulative_per} {where}"
    )


# -- the first view against onnx.load, interleaved -----------------------------------
RATIO_SETUP = """
import onnx_explorer
import onnx_explorer.readers.onnx._read
from onnx_explorer.views._layout import ViewRequest, draw
from onnx_explorer.views._render import svg_from_result
"""
RATIO_STMTS = {
    "`load(p).graph.render_svg()`": "onnx_explorer.load(PATH).graph.render_svg()",
    "the explorer's first view (folds on)": (
        "m = onnx_explorer.load(PATH)\ndraw(m.graph, m, ViewRequest(fold_steps=()))"
    ),
}
RATIO_REFERENCE = ("import onnx", "onnx.load(PATH, load_external_data=False)")
RATIO_RUNS = 7
#: Issue 30's target: the first view of the 100,000-node graph in at most this many times
#: the time of onnx.load on the same file.
RATIO_TARGET = 8.7


def ratio_rows(name: str = "scoped_100k", runs: int = RATIO_RUNS) -> list[list[str]]:
    """The first view of ``name`` against ``onnx.load`` of the same file: each a fresh
    process, the contenders interleaved round by round (a busy machine slows all alike);
    min and median of ``runs`` rounds, and their ratios."""
    path = repr(str(MODELS / f"{name}.onnx"))
    warm_page_cache(MODELS / f"{name}.onnx")
    codes = {label: timed_child(RATIO_SETUP, stmt.replace("PATH", path))
             for label, stmt in RATIO_STMTS.items()}  # fmt: skip
    reference = timed_child(RATIO_REFERENCE[0], RATIO_REFERENCE[1].replace("PATH", path))
    times: dict[str, list[float]] = {label: [] for label in [*codes, "reference"]}
    for _ in range(runs):
        times["reference"].append(run_python(reference).seconds)
        for label, code in codes.items():
            times[label].append(run_python(code).seconds)
    ref_min, ref_median = min(times["reference"]), statistics.median(times["reference"])
    rows = [["`onnx.load(p, load_external_data=False)`", f"{ref_min:.3f} / {ref_median:.3f} s",
             "1.0× / 1.0×"]]  # fmt: skip
    for label in codes:
        low, mid = min(times[label]), statistics.median(times[label])
        rows.append([label, f"{low:.3f} / {mid:.3f} s",
                     f"{low / ref_min:.1f}× / {mid / ref_median:.1f}×"])  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def ratio_text(rows: list[list[str]]) -> str:
    table = markdown_table(["scoped_100k (99,977 nodes)", "min / median", "÷ onnx.load"], rows,
                           align="lrr")  # fmt: skip
    return (
        f"### The 100,000-node first view against onnx.load\n\n{table}\n\n"
        f"{RATIO_RUNS} rounds, each contender in a fresh process, interleaved round by round; "
        "timed inside the process around the statement (the reader and view modules imported "
        f"before the clock, as in a notebook that has drawn once). Issue 30's target: "
        f"≤ {RATIO_TARGET:g}× onnx.load.\n\n"
    )


# -- the explorer widget: first picture, what was simplified, select -------------------
#: Each ranking mode alone, and the drawing as it was before, are killed after this long.
DEFAULT_CAP = 30.0
SELECTS = 20
SEED = 20261123
RUNS = 3  # fresh processes per model; the last one also times the selections
FIRST_PICTURE_LIMIT = 300.0  # seconds a child waits for the first drawing
SELECT_LIMIT = 60.0  # seconds one selection may take before it counts as failed
CLUSTER_MARK = "subgraph cluster_"


@dataclass(frozen=True)
class WidgetCase:
    name: str
    path: Path


#: Real exports (tests/corpus): their selects are what users meet.
CORPUS = HERE.parent / "tests" / "corpus"
REAL_MODELS = ("smart_turn_v3_2_cpu.onnx", "ppocrv4_det.onnx", "ppocr_mobile_v2_cls.onnx",
               "silero_vad_16k_op15.onnx", "magika_standard_v3_3.onnx")  # fmt: skip


def widget_cases(quick: bool) -> list[WidgetCase]:
    frozen = WidgetCase("frozen_tf1 (GraphDef)", MODELS / "frozen_tf1.pbtxt")
    real = [WidgetCase(f"real: {name}", CORPUS / name) for name in REAL_MODELS]
    densenet = WidgetCase("DenseNet-121 export (generated)", MODELS / "densenet121_export.onnx")
    if quick:
        return [frozen, WidgetCase("scoped_2k", MODELS / "scoped_2k.onnx"), densenet, *real[:1]]
    return [
        frozen,
        WidgetCase("dense_blocks", MODELS / "dense_blocks.onnx"),
        densenet,
        WidgetCase("scoped_20k", MODELS / "scoped_20k.onnx"),
        WidgetCase("scoped_100k", MODELS / "scoped_100k.onnx"),
        *real,
    ]


def child_call(function: str, *args: object) -> str:
    """Code for a fresh interpreter that imports this script and calls ``function(*args)``."""
    return (
        f"import sys; sys.path.insert(0, {str(HERE)!r})\nimport render\nrender.{function}{args!r}\n"
    )


def write_samples() -> None:
    """(Child) Write the two hard-to-lay-out sample graphs under bench/_models/."""
    from onnx_explorer import samples

    MODELS.mkdir(exist_ok=True)
    (MODELS / "frozen_tf1.pbtxt").write_bytes(samples.frozen_tf1_graphdef())
    onnx.save(samples.dense_blocks(), MODELS / "dense_blocks.onnx")
    onnx.save(densenet_export(), MODELS / "densenet121_export.onnx")


def explore_child(path: str, selects: int) -> None:
    """(Child) Time ``explore()`` and its first picture; then ``selects`` hidden nodes."""
    import onnx_explorer
    import onnx_explorer.readers.onnx._read

    # explore() imports these on first use; a notebook pays for that once, not per model.
    import onnx_explorer.readers.tensorflow.graphdef._read
    import onnx_explorer.widgets._explorer

    start = time.perf_counter()
    explorer = onnx_explorer.explore(path)
    returned = time.perf_counter() - start
    view = explorer.graph_view
    if not view.wait(FIRST_PICTURE_LIMIT):
        raise SystemExit(f"no picture after {FIRST_PICTURE_LIMIT:g} s")
    first_picture = time.perf_counter() - start
    drawing = view.drawing
    if drawing is None:
        raise SystemExit(f"no drawing: {view.error}")
    report: dict[str, Any] = {
        "nodes": len(explorer.graph.nodes),
        "explore_s": returned,
        "first_picture_s": first_picture,
        "draw_s": drawing.seconds,
        "drawn": drawing.result.drawn,
        "simplified": drawing.simplified,
        "control_hidden": drawing.result.control_hidden,
    }
    if selects:
        report["hidden"] = len(hidden_nodes(view))
        report["selects"] = time_selects(explorer, selects)
    explorer.close()
    emit_report(report)


def is_hidden(view: GraphView, node: Node) -> bool:
    """True when the current drawing shows ``node`` only inside a collapsed scope box."""
    assert view.result is not None
    drawn_as = view.ids.get(view.result.locate(node) or "", {})
    return drawn_as.get("kind") == "scope"


def hidden_nodes(view: GraphView) -> list[str]:
    """Names of the nodes that have a box of their own once their scope is open."""
    from onnx_explorer.views._wiring import graph_wiring

    index = graph_wiring(view.graph)  # folded constants are drawn inside their readers
    return [
        node.name
        for node in view.graph.nodes
        if index.is_drawable(node.index) and is_hidden(view, node)
    ]


def time_selects(explorer: Explorer, count: int) -> list[dict[str, Any]]:
    """Select ``count`` random nodes, each hidden in the drawing of the moment, one after
    another (opened scopes stay open, as in a session); seconds and drawing size of each."""
    view = explorer.graph_view
    candidates = hidden_nodes(view)
    random.Random(SEED).shuffle(candidates)
    timings: list[dict[str, Any]] = []
    for name in candidates:
        if len(timings) == count:
            break
        if not is_hidden(view, explorer.graph.node(name)):
            continue  # opened by an earlier selection
        seconds = time_select(explorer, name)
        assert view.drawing is not None
        timings.append(
            {"s": seconds, "draw_s": view.drawing.seconds, "drawn": view.drawing.result.drawn}
        )
    return timings


def time_select(explorer: Explorer, name: str) -> float | None:
    """Seconds from ``select(name)`` until ``highlight_id`` is the node's own box (None: never)."""
    view = explorer.graph_view
    start = time.perf_counter()
    explorer.select(name)
    deadline = start + SELECT_LIMIT
    while not highlights(view, name):
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        view.wait(left)  # the re-layout that opens the node's scope
        if not highlights(view, name):
            time.sleep(0.001)
    return time.perf_counter() - start


def highlights(view: GraphView, name: str) -> bool:
    drawn = view.ids.get(view.highlight_id) if view.highlight_id else None
    return drawn is not None and drawn.get("name") == name


def layout_modes_child(path: str, cap: float) -> None:
    """(Child) The first view's DOT laid out under each ranking alone, and as before:
    plain ``dot``, control edges drawn. Each killed after ``cap`` seconds."""
    import onnx_explorer
    from onnx_explorer.views._layout import ViewRequest

    model = onnx_explorer.load(path)
    view = ViewRequest().build(model.graph, model)
    before = ViewRequest(control_edges="show").build(model.graph, model)
    report = {"clustered": CLUSTER_MARK in view.source, "before": time_dot(before.source, cap)}
    if report["clustered"]:
        report["newrank"] = time_dot(view.source, cap, ["-Gnewrank=true"])
        report["plain"] = time_dot(view.source, cap)
    emit_report(report)


def widget_rows(cases: list[WidgetCase], cap: float) -> tuple[list[list[str]], list[str]]:
    """One table row per model, and a line per model on where select's time went."""
    run_python(child_call("write_samples"))
    rows, lines = [], []
    for case in cases:
        explores = [  # the last run also times the selections
            child_call("explore_child", str(case.path), SELECTS if k == RUNS - 1 else 0)
            for k in range(RUNS)
        ]
        runs = Runs(tuple(map(run_python, explores)))
        modes = run_python(child_call("layout_modes_child", str(case.path), cap)).report
        rows.append(widget_row(case, runs, modes))
        lines.append(select_breakdown(case, runs.runs[-1].report))
        print(rows[-1], flush=True)
    return rows, lines


def widget_row(case: WidgetCase, runs: Runs, modes: dict[str, Any]) -> list[str]:
    reports = [run.report for run in runs.runs]
    last = reports[-1]
    return [
        f"{case.name} ({last['nodes']:,} nodes)",
        fmt_seconds(runs.median_of("explore_s")),
        fmt_seconds(runs.median_of("first_picture_s")),
        f"{last['drawn']:,}",
        simplified_text(reports),
        modes.get("newrank", "—"),
        modes.get("plain", "—"),
        modes["before"],
        select_text(last),
    ]


def simplified_text(reports: list[dict[str, Any]]) -> str:
    """What the first picture left out, over all runs (a slow machine may simplify once)."""
    notes = dict.fromkeys(r["simplified"] or "nothing" for r in reports)
    text = " / ".join(notes)
    hidden = reports[-1]["control_hidden"]
    return text + (f" ({hidden} control edges hidden by default)" if hidden else "")


def select_text(report: dict[str, Any]) -> str:
    selects = report.get("selects", [])
    if not selects:
        return "— (every node drawn)"
    times = [s["s"] for s in selects if s["s"] is not None]
    failed = len(selects) - len(times)
    text = f"{fmt_seconds(statistics.median(times))} / {fmt_seconds(max(times))}" if times else "—"
    return text + (f" ({failed} of {len(selects)} never shown)" if failed else "")


def select_breakdown(case: WidgetCase, report: dict[str, Any]) -> str:
    selects = [s for s in report.get("selects", []) if s["s"] is not None]
    if not selects:
        return f"- {case.name}: nothing hidden in the first view."
    seconds = statistics.median(s["s"] for s in selects)
    draw_s = statistics.median(s["draw_s"] for s in selects)
    drawn = [s["drawn"] for s in selects]
    return (
        f"- {case.name}: {len(selects)} selections from {report['hidden']:,} hidden nodes; "
        f"median {fmt_seconds(seconds)}, of which `draw` (DOT + `dot`) {fmt_seconds(draw_s)}; "
        f"drawings grew from {drawn[0]:,} to {drawn[-1]:,} boxes."
    )


# -- repeated blocks: what detecting the folds adds to a first view ---------------------
FOLDS_SETUP = """
import onnx_explorer
from onnx_explorer.views._repeats import repeated_blocks
from onnx_explorer.views._scopes import scope_tree
from onnx_explorer.views._wiring import graph_wiring
model = onnx_explorer.load(PATH)
graph = model.graph
graph_wiring(graph)  # what every drawing builds first, fold or not
scope_tree(graph)
"""
FOLDS_STMT = "found = repeated_blocks(graph)"
FOLDS_POST = """
report["nodes"] = len(graph.nodes)
report["folds"] = len(found.folds)
report["largest"] = max((f.count for f in found.folds), default=0)
report["work"] = found.work
report["edges"] = len(graph_wiring(graph).edges)
"""
#: Issue 32's target: detection adds at most this to a 100,000-node graph's first view.
FOLDS_TARGET = 0.2
FOLDS_SECTION = "## Repeated blocks folded"


def fold_rows(names: Sequence[str] = ("scoped_2k", "scoped_20k", "scoped_100k")) -> list[list[str]]:
    """Seconds :func:`repeated_blocks` takes after the wiring and scope tree (which every
    drawing builds anyway) on each generated transformer, min / median of 5 processes."""
    rows = []
    for name in names:
        path = MODELS / f"{name}.onnx"
        if not path.exists():
            generate(name, {"scoped_2k": 2_000, "scoped_20k": 20_000}.get(name, 100_000), True)
        code = timed_child(FOLDS_SETUP.replace("PATH", repr(str(path))), FOLDS_STMT, FOLDS_POST)
        runs = measure(code, FIRST_VIEW_RUNS)
        report = runs.median.report
        visits = report["work"] / (report["nodes"] + report["edges"])
        rows.append([
            f"{name} ({report['nodes']:,} nodes)",
            f"{runs.best.seconds:.3f} / {runs.median.seconds:.3f} s",
            f"{report['folds']:,} (largest ×{report['largest']:,})", f"{visits:.2f}",
        ])  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def folds_text(rows: list[list[str]]) -> str:
    table = markdown_table(
        ["model", "detection: min / median", "folds", "visits per node and edge"], rows,
        align="lrrr",
    )  # fmt: skip
    return (
        f"{FOLDS_SECTION}\n\n{today()}, {machine_description()}\n\n{table}\n\n"
        "What detecting repeated blocks (`views/_repeats.py`: attribute digests, node codes, "
        "per-run hashes in numpy) adds to a first view: `repeated_blocks(graph)` timed in a "
        "fresh process after `graph_wiring` and `scope_tree`, which every drawing builds "
        f"anyway; min and median of {FIRST_VIEW_RUNS} processes. Issue 32's target: "
        f"≤ {FOLDS_TARGET:g} s at 100,000 nodes. The scoped graphs hold 2,000+ layers, split "
        "into synthetic groups of about 200 before folding, so each group draws one fold. "
        "Visits: the nodes and edges detection looked at, per node and edge of the graph "
        "(its work count, stopped at 4).\n"
    )


def write_folds_section(rows: list[list[str]]) -> None:
    """Put the folds section into bench/results/render.md, replacing an older one."""
    path = HERE / "results" / "render.md"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    start = text.find(FOLDS_SECTION)
    if start >= 0:
        end = text.find("\n## ", start + len(FOLDS_SECTION))
        text = text[:start] + (text[end + 1 :] if end >= 0 else "")
    write_result("render", text.rstrip() + "\n\n" + folds_text(rows))


# -- the results file -----------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--folds", action="store_true", help="only the repeated blocks' timing")
    parser.add_argument(
        "--ratio", action="store_true", help="only the 100k first view against onnx.load (printed)"
    )
    parser.add_argument(
        "--select",
        action="store_true",
        help="only the explorer rows of the real and DenseNet exports (printed)",
    )
    parser.add_argument(
        "--limit",
        type=float,
        default=60.0,
        help="seconds before the plain drawing of a whole graph is killed",
    )
    parser.add_argument(
        "--cap",
        type=float,
        default=DEFAULT_CAP,
        help="seconds before a single-ranking or 'before' layout is killed",
    )
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
    if args.folds:
        write_folds_section(fold_rows())
        return
    if args.ratio:
        print(ratio_text(ratio_rows()))
        return
    if args.select:
        cases = [c for c in widget_cases(False) if c.name.startswith(("real:", "DenseNet"))]
        widget, breakdown = widget_rows(cases, args.cap)
        print("\n".join(map(str, widget)) + "\n" + "\n".join(breakdown))
        return
    started = time.perf_counter()
    first_views = first_view_rows(args.quick, args.limit)
    ratios = [] if args.quick else ratio_rows()
    profile = [] if args.quick else first_view_profile()
    widget, breakdown = widget_rows(widget_cases(args.quick), args.cap)
    text = results_text(first_views, widget, breakdown, args.limit, args.cap, profile, ratios)
    print(text)
    write_result("render", text)
    if not args.quick:
        write_folds_section(fold_rows())
    print(f"benchmark took {time.perf_counter() - started:.0f} s")


def results_text(
    first_views: list[list[str]],
    widget: list[list[str]],
    breakdown: list[str],
    limit: float,
    cap: float,
    profile: list[str],
    ratios: list[list[str]] | None = None,
) -> str:
    first_table = markdown_table(
        ["model", "first view: min / median", "load / view / dot", "drawn",
         "plain dot of everything",
         "notes"],
        first_views, align="lrrrrl",
    )  # fmt: skip
    widget_table = markdown_table(
        ["model", "explore() returns", "first picture", "drawn", "simplified",
         "newrank only", "plain ranking only", "before: plain dot, control edges drawn",
         f"select a hidden node: median / max of {SELECTS}"],
        widget, align="lrrrlrrrr",
    )  # fmt: skip
    return (
        f"# First view of large graphs\n\n{today()}, {machine_description()}\n\n"
        f"{first_table}\n\n"
        f"First view: min and median of {FIRST_VIEW_RUNS} fresh processes (issue 13's target "
        f"for 100,000 nodes: ≤ {FIRST_VIEW_TARGET:g} s), measured inside the process around "
        "`load` + `build_dot` + `dot -Tsvg` (split: reading the file into the model; "
        "index, scope tree and DOT text; Graphviz layout and SVG). Plain: every operator and "
        f"value handed to `dot` at once (net_drawer style), killed after {limit:.0f} s.\n\n"
        + (
            "Top 5 functions by own time, cProfile of load + first view of scoped_100k:\n\n"
            "```\n" + "\n".join(profile) + "\n```\n\n"
            if profile
            else ""
        )
        + (ratio_text(ratios) if ratios else "")
        + f"## In the explorer widget\n\n{widget_table}\n\n"
        f"- **explore() returns** / **first picture**: median of {RUNS} fresh processes, from "
        "the `onnx_explorer.explore(path)` call until it returns / until "
        "`graph_view.wait()` returns with the first drawing (load, panels, DOT and `dot` in "
        "the layout thread; the lazily imported reader and widget modules are imported "
        "before the clock starts).\n"
        "- **simplified**: the first drawing's `simplified` note (which cheaper plan was drawn "
        "after a timeout or crash), or nothing.\n"
        "- **newrank only** / **plain ranking only**: the same first-view DOT handed to "
        "`dot -Tsvg` with `-Gnewrank=true` / without, one at a time; the widget races both. "
        "— when the view has no clusters (both are the same layout then).\n"
        '- **before**: the same view built with control edges drawn (`control_edges="show"`), '
        "handed to plain `dot -Tsvg`, as the explorer did before it raced rankings and hid "
        f"control edges. Single-mode and before runs are killed after {cap:g} s.\n"
        f"- **select**: in the last of the {RUNS} processes, {SELECTS} nodes picked at random "
        f"(seed {SEED}) among those hidden in a collapsed scope of the drawing of the moment, "
        "selected one after another with `ex.select(name)`; timed until `graph_view."
        "highlight_id` is the node's own box. Opened scopes stay open, so later drawings "
        "are larger.\n\n" + "\n".join(breakdown) + "\n"
    )


if __name__ == "__main__":
    main()
