"""``onnx_explorer.metrics``: speed on a 100,000-node graph, and MAC totals against onnx-tool.

    python bench/metrics.py            # writes bench/results/metrics.md

onnx-tool is never a dependency: the comparison runs it in the Python named by
``ONNX_TOOL_PYTHON`` (a separate venv: ``python -m venv /tmp/ot && /tmp/ot/bin/pip install
onnx-tool``), or in this Python if it has onnx_tool; otherwise it is skipped.
The models are built here with onnx.helper: a ResNet-18-style CNN (batch norm folded
into the convolutions, as exporters write it) and a BERT-style encoder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

import onnx_explorer as ox

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_result

F = TensorProto.FLOAT


def _init(name, *shape):
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def chain(nodes_total: int) -> onnx.ModelProto:
    """MatMul → Add → Relu blocks with every value's shape stored (no inference needed)."""
    nodes, inits, infos, x = [], [_init("W", 16, 16), _init("b", 16)], [], "x"
    for i in range(nodes_total // 3):
        scope = f"/blocks/b{i // 100}/l{i}"
        for op, ins in (("MatMul", [x, "W"]), ("Add", [f"{scope}/mm", "b"]),
                        ("Relu", [f"{scope}/add"])):  # fmt: skip
            out = {"MatMul": f"{scope}/mm", "Add": f"{scope}/add", "Relu": f"{scope}/relu"}[op]
            nodes.append(helper.make_node(op, ins, [out], name=f"{scope}/{op}"))
            infos.append(helper.make_tensor_value_info(out, F, [8, 16]))
        x = out
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", F, [8, 16])],
                              [helper.make_tensor_value_info(x, F, [8, 16])], inits,
                              value_info=infos[:-1])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def resnet() -> onnx.ModelProto:
    """ResNet-18 layout at 224×224: 7×7 stem, 4 stages of 2 basic blocks, GAP, FC."""
    nodes, inits = [], []
    count = iter(range(10_000))

    def conv(x, cin, cout, k, stride):
        n = next(count)
        inits.extend([_init(f"w{n}", cout, cin, k, k), _init(f"b{n}", cout)])
        nodes.append(helper.make_node("Conv", [x, f"w{n}", f"b{n}"], [f"c{n}"], name=f"/conv{n}/Conv",
                                      kernel_shape=[k, k], strides=[stride] * 2,
                                      pads=[k // 2] * 4))  # fmt: skip
        return f"c{n}"

    def relu(x):
        nodes.append(helper.make_node("Relu", [x], [f"{x}r"], name=f"/{x}/Relu"))
        return f"{x}r"

    x = relu(conv("x", 3, 64, 7, 2))
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], name="/pool", kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))  # fmt: skip
    x, cin = "pool", 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = conv(relu(conv(x, cin, cout, 3, stride)), cout, cout, 3, 1)
            skip = conv(x, cin, cout, 1, stride) if stride != 1 or cin != cout else x
            nodes.append(helper.make_node("Add", [y, skip], [f"{y}a"], name=f"/{y}/Add"))
            x, cin = relu(f"{y}a"), cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="/gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="/flatten"))
    inits.extend([_init("fc_w", 1000, 512), _init("fc_b", 1000)])
    nodes.append(helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"], name="/fc", transB=1))
    graph = helper.make_graph(nodes, "resnet", [helper.make_tensor_value_info("x", F, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("y", F, [1, 1000])], inits)  # fmt: skip
    return shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    )


def bert(layers: int = 4, hidden: int = 256, heads: int = 4, seq: int = 128) -> onnx.ModelProto:
    """BERT-style encoder: QKV projections, scaled dot-product attention, GELU FFN, LayerNorm."""
    nodes, inits = [], []
    head = hidden // heads
    inits += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
              (("split_shape", [1, seq, heads, head]), ("merge_shape", [1, seq, hidden]))]  # fmt: skip
    inits += [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
              (("scale", np.sqrt(head)), ("sqrt2", np.sqrt(2)), ("one", 1.0), ("half", 0.5))]  # fmt: skip

    def op(kind, ins, name, **attrs):
        nodes.append(helper.make_node(kind, ins, [name], name=name, **attrs))
        return name

    def dense(x, n_in, n_out, name):
        inits.extend([_init(f"{name}.w", n_in, n_out), _init(f"{name}.b", n_out)])
        return op(
            "Add", [op("MatMul", [x, f"{name}.w"], f"{name}/MatMul"), f"{name}.b"], f"{name}/Add"
        )

    def norm(x, name):
        inits.extend([_init(f"{name}.g", hidden), _init(f"{name}.b", hidden)])
        return op("LayerNormalization", [x, f"{name}.g", f"{name}.b"], f"{name}/LayerNorm", axis=-1)

    x = "x"
    for i in range(layers):
        p = f"/layer.{i}"
        q, k, v = (op("Transpose", [op("Reshape", [dense(x, hidden, hidden, f"{p}/{n}"), "split_shape"],
                                       f"{p}/{n}/Reshape")], f"{p}/{n}/Transpose",
                      perm=[0, 2, 3, 1] if n == "k" else [0, 2, 1, 3]) for n in "qkv")  # fmt: skip
        scores = op("Div", [op("MatMul", [q, k], f"{p}/scores"), "scale"], f"{p}/scaled")
        ctx = op("MatMul", [op("Softmax", [scores], f"{p}/Softmax", axis=-1), v], f"{p}/context")
        merged = op("Reshape", [op("Transpose", [ctx], f"{p}/merge/Transpose", perm=[0, 2, 1, 3]),
                                "merge_shape"], f"{p}/merge/Reshape")  # fmt: skip
        x = norm(
            op("Add", [dense(merged, hidden, hidden, f"{p}/out"), x], f"{p}/residual1"), f"{p}/ln1"
        )
        h = dense(x, hidden, 4 * hidden, f"{p}/ffn1")
        erf = op("Erf", [op("Div", [h, "sqrt2"], f"{p}/gelu/Div")], f"{p}/gelu/Erf")
        gelu = op("Mul", [op("Mul", [h, op("Add", [erf, "one"], f"{p}/gelu/Add")], f"{p}/gelu/Mul"),
                          "half"], f"{p}/gelu/Mul2")  # fmt: skip
        x = norm(
            op("Add", [dense(gelu, 4 * hidden, hidden, f"{p}/ffn2"), x], f"{p}/residual2"),
            f"{p}/ln2",
        )
    graph = helper.make_graph(nodes, "bert", [helper.make_tensor_value_info("x", F, [1, seq, hidden])],
                              [helper.make_tensor_value_info(x, F, [1, seq, hidden])], inits)  # fmt: skip
    return shape_inference.infer_shapes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    )


_ONNX_TOOL = """
import sys, json, onnx_tool
m = onnx_tool.Model(sys.argv[1])
m.graph.shape_infer()
m.graph.profile()
per_op = {}
for node in m.graph.nodemap.values():
    per_op[node.op_type] = per_op.get(node.op_type, 0) + int(node.macs[0])
print(json.dumps({"macs": int(round(m.graph.macs[0])), "params": int(m.graph.params), "per_op": per_op}))
"""


def onnx_tool_totals(path: Path) -> dict | None:
    python = os.environ.get("ONNX_TOOL_PYTHON", sys.executable)
    done = subprocess.run([python, "-c", _ONNX_TOOL, str(path)], capture_output=True, text=True,
                          check=False, timeout=600)  # fmt: skip
    if done.returncode != 0:
        print(f"onnx-tool unavailable ({python}): {done.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(name: str, proto: onnx.ModelProto, tmp: Path) -> list[str]:
    path = tmp / f"{name}.onnx"
    onnx.save(proto, path)
    ours = ox.metrics(ox.load(path))
    per_op: dict[str, int] = {}
    for row in ours.rows:
        per_op[row["op_type"]] = per_op.get(row["op_type"], 0) + (row["macs"] or 0)
    theirs = onnx_tool_totals(path)
    line = f"| {name} | {len(ours.rows)} | {ours.totals['macs']:,} | {ours.totals['params']:,} |"
    if theirs is None:
        return [line + " – | – | – |"]
    ratio = ours.totals["macs"] / theirs["macs"]
    lines = [line + f" {theirs['macs']:,} | {theirs['params']:,} | {ratio:.4f} |"]
    differ = [f"{op} {per_op.get(op, 0):,} vs {theirs['per_op'].get(op, 0):,}"
              for op in sorted(set(per_op) | set(theirs["per_op"]))
              if per_op.get(op, 0) != theirs["per_op"].get(op, 0)]  # fmt: skip
    if differ:
        lines.append(f"|  | ops that differ (ours vs onnx-tool): {'; '.join(differ)} | | | | | |")
    return lines


_ONNX_TOOL_REAL = """
import sys, json, numpy as np, onnx_tool
m = onnx_tool.Model(sys.argv[1])
shapes = json.loads(sys.argv[2])
m.graph.shape_infer({k: np.zeros(v["shape"], v["dtype"]) for k, v in shapes.items()})
m.graph.profile()
macs = {n.name: int(n.macs[0]) for n in m.graph.nodemap.values()}
print(json.dumps({"macs": macs}))
"""


def onnx_tool_node_macs(path: Path, feeds: dict) -> dict | None:
    python = os.environ.get("ONNX_TOOL_PYTHON", sys.executable)
    shapes = json.dumps(
        {k: {"shape": list(v.shape), "dtype": v.dtype.name} for k, v in feeds.items()}
    )
    try:
        done = subprocess.run([python, "-c", _ONNX_TOOL_REAL, str(path), shapes],
                              capture_output=True, text=True, check=False, timeout=600)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])["macs"]


def real_models() -> list[str]:
    """The corpus of real exports (tests/corpus): compute-op MACs, ours against those the
    shapes onnxruntime observes give (tests/corpus_reference.py) and onnx-tool's."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from corpus_reference import BATCHABLE, CORPUS, ONNX_MODELS, feeds, reference_macs

    out = ["", "## Real exports (tests/corpus): compute-op MACs with the inputs bound", "",
           "Compute ops: Conv, ConvInteger, ConvTranspose, MatMul, MatMulInteger, Gemm, LSTM, "
           "DynamicQuantizeLSTM of the main graph. Reference: the same formulas on the shapes "
           "onnxruntime produces with every node output exposed.", "",
           "| model | batch | reference | ours | ours / ref | onnx-tool | onnx-tool / ref | "
           "metrics time |", "|---|--:|--:|--:|--:|--:|--:|--:|"]  # fmt: skip
    for name in ONNX_MODELS:
        for batch in (1, 8) if name in BATCHABLE else (1,):
            inputs = feeds(name, batch)
            reference = reference_macs(onnx.load(CORPUS / name), inputs)
            start = time.perf_counter()
            result = ox.metrics(ox.load(CORPUS / name),
                                input_shapes={k: v.shape for k, v in inputs.items()})  # fmt: skip
            seconds = time.perf_counter() - start
            ours = {row["name"]: row["macs"] or 0 for row in result.rows}
            ref = sum(reference.values())
            mine = sum(ours.get(n, 0) for n in reference)
            tool = onnx_tool_node_macs(CORPUS / name, inputs)
            tool_total = sum(tool.get(n, 0) for n in reference) if tool is not None else None
            tool_text = ("–", "–") if tool_total is None else (
                f"{tool_total:,}", f"{tool_total / ref:.4f}")  # fmt: skip
            out.append(f"| {name} | {batch} | {ref:,} | {mine:,} | {mine / ref:.4f} | "
                       f"{tool_text[0]} | {tool_text[1]} | {seconds:.2f} s |")  # fmt: skip
    return out


def main() -> None:
    out = ["# metrics benchmark", ""]
    proto = chain(100_000)
    model = ox.load(proto)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        result = ox.metrics(model)
        times.append(time.perf_counter() - start)
    out.append(f"- {len(result.rows):,}-node graph: metrics in {min(times):.2f} s (best of 3; "
               f"target ≤ 2 s), {result.totals['macs']:,} MACs, {result.unknown} unknown")  # fmt: skip
    out += ["", "| model | nodes | our MACs | our params | onnx-tool MACs | onnx-tool params | ratio |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        out += compare("resnet18-style", resnet(), Path(tmp))
        out += compare("bert-base-style (2 layers, 768 hidden, seq 128)",
                       bert(layers=2, hidden=768, heads=12), Path(tmp))  # fmt: skip
        out += compare("small bert-style (4 layers, 256 hidden, seq 128)", bert(), Path(tmp))
    out += real_models()
    text = "\n".join(out) + "\n"
    print(text)
    write_result("metrics", text)


if __name__ == "__main__":
    main()
