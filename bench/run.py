"""``onnx_explorer.run`` capture-all vs a plain onnxruntime run of the same model.

    python bench/run.py            # writes bench/results/run.md (2,000 and 20,000 nodes)
    python bench/run.py --quick    # 2,000 nodes only

The graphs are the decoder-only transformers of ``bench/render.py`` (same builder,
same node count) made narrow enough to run here (hidden 64, FFN 256, 4 heads; weights
random in an external ``weights.bin``), fed ``hidden_states`` of 1×128×64. Each
contender runs in a fresh process: the plain run builds one session for the model's
outputs and times one warm-up and three runs (median); ``onnx_explorer.run`` captures
every tensor (streamed statistics) and reports the time spent building its segment
sessions apart from the rest (both import onnxruntime before the clock starts). Peak memory is the child's peak RSS.
Target (issue 17): capture time after session creation ≤ 2× the plain run; peak ≤ plain
+ 2× the largest activation + 64 MB.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import render  # noqa: E402  (the benchmark graphs)
from _common import (  # noqa: E402
    fmt_bytes,
    fmt_ratio,
    fmt_seconds,
    machine_description,
    markdown_table,
    package_version,
    run_python,
    timed_child,
    today,
    write_result,
)

render.HIDDEN, render.FFN, render.HEADS = 64, 256, 4
SEQ = 128

PLAIN_SETUP = """
import numpy as np, onnxruntime as ort, time, statistics
x = {"hidden_states": np.random.default_rng(0).standard_normal((1, SEQ, 64)).astype(np.float32)}
began = time.perf_counter()
session = ort.InferenceSession(PATH, providers=["CPUExecutionProvider"])
report["session_seconds"] = time.perf_counter() - began
session.run(None, x)
"""
PLAIN_STMT = """
times = []
for _ in range(3):
    began = time.perf_counter()
    session.run(None, x)
    times.append(time.perf_counter() - began)
report["run_seconds"] = statistics.median(times)
"""
CAPTURE_SETUP = """
import numpy as np, onnx_explorer as ox, onnxruntime, time  # imported outside the timing, as for plain
x = {"hidden_states": np.random.default_rng(0).standard_normal((1, SEQ, 64)).astype(np.float32)}
"""
CAPTURE_STMT = """
began = time.perf_counter()
result = ox.run(PATH, x)
total = time.perf_counter() - began
report["session_seconds"] = result.session_seconds
report["run_seconds"] = total - result.session_seconds
report["tensors"] = len(result.tensors)
report["largest"] = max(r.stats.count * 4 for r in result.tensors.values() if r.stats)
"""


def make(path: Path, nodes: int) -> int:
    model = render.transformer(nodes, scoped=False)  # scoped names repeat: ORT refuses them
    size = sum(
        int(next(e.value for e in t.external_data if e.key == "length"))
        for t in model.graph.initializer
        if t.data_location == onnx.TensorProto.EXTERNAL
    )
    rng = np.random.default_rng(0)
    with open(path.parent / "weights.bin", "wb") as fh:
        left = size // 4
        while left:
            n = min(left, 1 << 22)
            fh.write((rng.standard_normal(n) * 0.02).astype(np.float32).tobytes())
            left -= n
    onnx.save(model, path)
    return len(model.graph.node)


def child(setup: str, stmt: str, path: Path) -> dict:
    code = timed_child(
        setup.replace("PATH", repr(str(path))).replace("SEQ", str(SEQ)),
        stmt.replace("PATH", repr(str(path))),
    )
    run = run_python(code)
    return {**run.report, "peak": run.max_rss}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rows = []
    for target in (2_000,) if args.quick else (2_000, 20_000):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.onnx"
            nodes = make(path, target)
            plain = child(PLAIN_SETUP, PLAIN_STMT, path)
            capture = child(CAPTURE_SETUP, CAPTURE_STMT, path)
        budget = plain["peak"] + 2 * capture["largest"] + (64 << 20)
        rows.append([
            f"{nodes:,}", str(capture["tensors"]),
            fmt_seconds(plain["session_seconds"]), fmt_seconds(plain["run_seconds"]),
            fmt_seconds(capture["session_seconds"]), fmt_seconds(capture["run_seconds"]),
            fmt_ratio(capture["run_seconds"] / plain["run_seconds"]),
            fmt_bytes(plain["peak"]), fmt_bytes(capture["peak"]), fmt_bytes(budget),
            fmt_bytes(capture["largest"]),
        ])  # fmt: skip
        print(rows[-1], flush=True)
    header = ["nodes", "tensors captured", "plain: session", "plain: run",
              "capture: sessions", "capture: run + stats", "ratio", "plain peak",
              "capture peak", "peak budget", "largest activation"]  # fmt: skip
    text = "\n".join([
        "# onnx_explorer.run: capture every tensor vs a plain onnxruntime run", "",
        f"{today()}, {machine_description()}, onnxruntime {package_version('onnxruntime')}.",
        "", (__doc__ or "").strip(), "", markdown_table(header, rows), "",
    ])  # fmt: skip
    print(write_result("run", text))


if __name__ == "__main__":
    main()
