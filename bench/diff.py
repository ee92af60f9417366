"""Comparing two models: structure of 20,000-node exports, and two ~300 MB weight files.

1. Structure: two exports of a 20,000-node chain (5,000 blocks MatMul → Add → LeakyRelu
   → Mul) where every node and every intermediate value was renamed (as another exporter
   version numbers them) and 1 % of the nodes changed (200 LeakyRelu alphas). Timed:
   ``onnx_explorer.diff(a, b)`` (opening both files included), with and without comparing
   the weights, against ``onnx.load`` of both files plus one walk over the nodes of both
   (each node's name, op type, inputs, outputs and attribute count: what any structure
   diff reads). Target (issue 30): ``weights=False`` ≤ 1.5× that reference. Fresh
   processes, contenders interleaved round by round; min / median.
2. Weights: two embedded-weight models of ~300 MB (12 float32 tensors of 25 MB) that differ
   in one element of one tensor. Timed: ``onnx_explorer.diff(a, b)`` against reading both
   files once with numpy (``np.fromfile``), page cache warm, imports warm as above; and the
   peak memory of the comparison above the two open models. Targets: ≤ 1.5×, ≤ 128 MB.
   The issue asks for 1.2 GB models; the comparison streams chunk by chunk, so its time
   scales with the bytes and its memory does not (run with SIZE_MB=1200 to check).

    PYTHONPATH=/path/to/worktree .venv/bin/python bench/diff.py
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    MODELS_DIR,
    fmt_bytes,
    fmt_ratio,
    fmt_seconds,
    machine_description,
    markdown_table,
    measure,
    run_python,
    timed_child,
    today,
    warm_page_cache,
    write_result,
)

RUNS = 3
STRUCT_RUNS = int(os.environ.get("STRUCT_RUNS", "7"))
BLOCKS = 5000  # × 4 nodes
SIZE_MB = int(os.environ.get("SIZE_MB", "300"))
TENSORS = 12
STRUCT_A, STRUCT_B = MODELS_DIR / "diff_struct_a.onnx", MODELS_DIR / "diff_struct_b.onnx"
WEIGHTS_A = MODELS_DIR / f"diff_weights_{SIZE_MB}mb_a.onnx"
WEIGHTS_B = MODELS_DIR / f"diff_weights_{SIZE_MB}mb_b.onnx"

GENERATE_STRUCTURE = f"""
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
from pathlib import Path

def export(renamed):
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    prev = "x"
    k = 0
    def name(op, i):
        return f"/blocks.{{i}}/{{op}}" if not renamed else f"/model/{{op}}_{{i * 4 + 13}}"
    def value(i, j):
        return f"t{{i}}_{{j}}" if not renamed else f"/model/v{{i * 4 + j + 13}}_output_0"
    for i in range({BLOCKS}):
        w, b, s = f"blocks.{{i}}.weight", f"blocks.{{i}}.bias", f"blocks.{{i}}.scale"
        inits += [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), w),
                  numpy_helper.from_array(np.zeros(8, np.float32), b),
                  numpy_helper.from_array(np.array(0.5, np.float32), s)]
        alpha = 0.2 if renamed and i % 25 == 0 else 0.1  # 200 of 20,000 nodes changed
        nodes += [helper.make_node("MatMul", [prev, w], [value(i, 0)], name=name("MatMul", i)),
                  helper.make_node("Add", [value(i, 0), b], [value(i, 1)], name=name("Add", i)),
                  helper.make_node("LeakyRelu", [value(i, 1)], [value(i, 2)],
                                   name=name("LeakyRelu", i), alpha=alpha),
                  helper.make_node("Mul", [value(i, 2), s], [value(i, 3)], name=name("Mul", i))]
        prev = value(i, 3)
    nodes[-1].output[0] = "y"
    g = helper.make_graph(nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])

Path({str(MODELS_DIR)!r}).mkdir(parents=True, exist_ok=True)
onnx.save(export(False), {str(STRUCT_A)!r})
onnx.save(export(True), {str(STRUCT_B)!r})
"""

GENERATE_WEIGHTS = f"""
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
from pathlib import Path
per = {SIZE_MB} * 1024 * 1024 // {TENSORS} // 4 // 1024 * 1024

def save(path, changed):
    rng = np.random.default_rng(0)
    inits, nodes, prev = [], [], "x"
    for i in range({TENSORS}):
        w = (rng.standard_normal(per, dtype=np.float32) * 0.02).reshape(-1, 1024)
        if changed and i == {TENSORS} // 2:
            w[3, 5] += 0.125
        inits.append(numpy_helper.from_array(w, f"layer{{i}}.weight"))
        nodes.append(helper.make_node("Add", [prev, f"layer{{i}}.weight"], [f"h{{i}}"]))
        prev = f"h{{i}}"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
        [w.shape[0], 1024])], [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)

Path({str(MODELS_DIR)!r}).mkdir(parents=True, exist_ok=True)
save({str(WEIGHTS_A)!r}, False)
save({str(WEIGHTS_B)!r}, True)
"""


def _best_seconds(code: str) -> float:
    return measure(code, RUNS).best.seconds


#: What the diff imports on first use (onnx, the reader, model_diff: ~0.14 s here), imported
#: before the clock starts, as the reference imports onnx before it (import time is a row
#: of its own: bench/startup.py); the last row times them too.
WARM = "import onnx_explorer as ox, onnx_explorer.model_diff, onnx_explorer.readers.onnx._read"

WALK = """
for _m in (_a, _b):
    for _n in _m.graph.node:
        (_n.name, _n.op_type, tuple(_n.input), tuple(_n.output), len(_n.attribute))
"""


def _interleaved(codes: dict[str, str], rounds: int) -> dict[str, tuple[float, float]]:
    """(min, median) seconds of each child, run once per round in turn (shared, busy cores:
    a slow spell hits every contender alike)."""
    times: dict[str, list[float]] = {label: [] for label in codes}
    for _ in range(rounds):
        for label, code in codes.items():
            times[label].append(run_python(code).seconds)
    return {label: (min(t), statistics.median(t)) for label, t in times.items()}


def structure() -> list[list[str]]:
    if not STRUCT_B.exists():
        print("writing the 20,000-node exports ...", flush=True)
        run_python(GENERATE_STRUCTURE, timeout=1800)
    a, b = str(STRUCT_A), str(STRUCT_B)
    check = (
        "report['changed'] = len(d.nodes_changed); report['renamed'] = len(d.nodes_renamed);"
        " report['added'] = len(d.nodes_added) + len(d.nodes_removed)"
    )
    result = run_python(
        timed_child("import onnx_explorer as ox", f"d = ox.diff({a!r}, {b!r})", check)
    )
    print("structure diff found:", result.report, flush=True)
    assert result.report == {**result.report, "changed": 200, "renamed": 19800, "added": 0}
    load = f"_a, _b = onnx.load({a!r}), onnx.load({b!r})"
    codes = {
        "`onnx.load` of both + one walk over their nodes": timed_child("import onnx", load + WALK),
        "`onnx.load` of both": timed_child("import onnx", load),
        "`diff(a, b, weights=False)`": timed_child(
            WARM, f"d = ox.diff({a!r}, {b!r}, weights=False)"
        ),
        "`diff(a, b)`": timed_child(WARM, f"d = ox.diff({a!r}, {b!r})"),
        "`diff(a, b, weights=False)`, its imports timed too": timed_child(
            "import onnx_explorer as ox", f"d = ox.diff({a!r}, {b!r}, weights=False)"
        ),
    }
    found = _interleaved(codes, STRUCT_RUNS)
    ref_min, ref_median = found["`onnx.load` of both + one walk over their nodes"]
    rows = []
    for label, (low, middle) in found.items():
        ratio = f"{fmt_ratio(low / ref_min)} / {fmt_ratio(middle / ref_median)}"
        rows.append([label, f"{fmt_seconds(low)} / {fmt_seconds(middle)}", ratio])
        print(rows[-1], flush=True)
    return rows


def weights() -> list[list[str]]:
    if not WEIGHTS_B.exists():
        print(f"writing the two {SIZE_MB} MB models ...", flush=True)
        run_python(GENERATE_WEIGHTS, timeout=1800)
    a, b = str(WEIGHTS_A), str(WEIGHTS_B)
    warm_page_cache(a, b)
    numpy_stmt = f"x = np.fromfile({a!r}, np.uint8); del x; y = np.fromfile({b!r}, np.uint8)"
    numpy_read = _best_seconds(timed_child("import numpy as np", numpy_stmt))
    rows = [["`np.fromfile` of both files", fmt_seconds(numpy_read), "1.0×", ""]]
    stmt = f"d = ox.diff({a!r}, {b!r})"
    seconds = _best_seconds(timed_child(WARM, stmt))
    setup = (
        "import onnx_explorer as ox\nfrom onnx_explorer.model_diff import compare_models\n"
        f"a, b = ox.load({a!r}), ox.load({b!r})"
    )
    post = "report['changed'] = [c.b for c in d.tensors_changed]"
    compared = measure(timed_child(setup, "d = compare_models(a, b)", post, rss_before=True), RUNS)
    changed = [r.report["changed"] for r in compared.runs]
    assert changed == [[f"layer{TENSORS // 2}.weight"]] * RUNS, changed
    rows.append(["`diff(a, b)`", fmt_seconds(seconds), fmt_ratio(seconds / numpy_read),
                 fmt_bytes(compared.extra_rss)])  # fmt: skip
    print(rows[-1], flush=True)
    return rows


def main() -> None:
    struct_rows = structure()
    weight_rows = weights()
    text = (
        f"# Model diff\n\n{today()}, {machine_description()}.\n\n"
        "## Structure: 20,000 nodes, every node renamed, 1 % changed\n\n"
        f"{STRUCT_RUNS} fresh processes per contender, interleaved; min / median, ratios to "
        "the reference's min / median.\n\n"
        + markdown_table(["task", "time: min / median", "ratio"], struct_rows, align="lrr")
        + f"\n\n## Weights: two {SIZE_MB} MB embedded models, one tensor differs\n\n"
        f"Best of {RUNS} fresh processes.\n\n"
        + markdown_table(
            ["task", "time", "ratio", "peak memory above the open models"],
            weight_rows,
            align="lrrr",
        )
        + "\n"
    )
    print(text)
    write_result("diff", text)


if __name__ == "__main__":
    main()
