"""``weights_report_many`` over 8 models: a 2-worker dask LocalCluster against one process.

    python bench/many.py [--rounds 3] [--mb 48]

Eight models of ``--mb`` MB of float32 weights each (external data, ``bench/remote.py``'s
builder) on local disk, page cache warm. Each round runs, in fresh processes and one
after the other, the one-process report (``workers=1``: every model in the caller's
process, the reference) and the cluster report (``LocalCluster(n_workers=2,
threads_per_worker=1)``, processes, started before the clock as a user's cluster is).
The cluster child also records dask's task stream: each task's compute time, the gaps
between a worker's tasks (scheduling and result transfer) and the time from the call to
the first task starting (submission). The ratio is one process ÷ cluster within a round;
the table gives min and median over the rounds. Writes ``bench/results/many.md``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import (  # noqa: E402
    MODELS_DIR,
    fmt_seconds,
    machine_description,
    markdown_table,
    package_version,
    run_python,
    timed_child,
    today,
    write_result,
)

MODELS = 8

BUILD = """
import sys
from pathlib import Path
sys.path.insert(0, BENCH)
from remote import build
root = Path(ROOT)
for i in range(COUNT):
    d = root / f"zoo{i}"
    if not (d / "model.onnx").exists():
        d.mkdir(parents=True, exist_ok=True)
        build(d, MB, external=True)
"""

ONE_SETUP = """
import onnx_explorer as ox
sources = SOURCES
"""
ONE_STMT = "result = ox.weights_report_many(sources, workers=1)"
ONE_POST = "report['values'] = result.totals.values"

CLUSTER_SETUP = """
import time
import onnx_explorer as ox
from dask.distributed import Client, LocalCluster, get_task_stream
sources = SOURCES
cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
client = Client(cluster)
stream = get_task_stream(client)
stream.__enter__()
called = time.time()
"""
CLUSTER_STMT = "result = ox.weights_report_many(sources, client=client)"
CLUSTER_POST = """
report['values'] = result.totals.values
stream.__exit__(None, None, None)
tasks = [s for t in stream.data for s in t["startstops"] if s["action"] == "compute"]
per_worker = {}
for t in stream.data:
    for s in t["startstops"]:
        if s["action"] == "compute":
            per_worker.setdefault(t["worker"], []).append((s["start"], s["stop"]))
gaps = 0.0
for spans in per_worker.values():
    spans.sort()
    gaps += sum(b[0] - a[1] for a, b in zip(spans, spans[1:]))
report['compute'] = sum(s["stop"] - s["start"] for s in tasks)
report['gaps'] = gaps
report['to_first'] = min(s["start"] for s in tasks) - called
firsts = [min(spans)[1] - min(spans)[0] for spans in per_worker.values()]
rest = [b - a for spans in per_worker.values() for a, b in sorted(spans)[1:]]
report['first_task'] = sum(firsts) / len(firsts)
report['later_task'] = sum(rest) / len(rest) if rest else 0.0
client.close(); cluster.close()
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mb", type=int, default=48)
    args = parser.parse_args()
    root = MODELS_DIR / f"many_{args.mb}mb"
    code = (BUILD.replace("BENCH", repr(str(HERE))).replace("ROOT", repr(str(root)))
            .replace("COUNT", str(MODELS)).replace("MB", str(args.mb)))  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True)
    sources = [str(root / f"zoo{i}" / "model.onnx") for i in range(MODELS)]
    subprocess.run(["cat", *(str(Path(s).parent / "weights.bin") for s in sources)],
                   stdout=subprocess.DEVNULL, check=True)  # fmt: skip
    one_code = timed_child(ONE_SETUP.replace("SOURCES", repr(sources)), ONE_STMT, ONE_POST)
    cluster_code = timed_child(
        CLUSTER_SETUP.replace("SOURCES", repr(sources)), CLUSTER_STMT, CLUSTER_POST
    )
    ones, clusters, ratios = [], [], []
    for round_ in range(args.rounds):
        one = run_python(one_code)
        two = run_python(cluster_code)
        if one.report["values"] != two.report["values"]:
            raise SystemExit("the merged totals differ")
        ones.append(one.seconds)
        clusters.append(two)
        ratios.append(one.seconds / two.seconds)
        r = two.report
        print(f"round {round_ + 1}: one process {one.seconds:.2f} s, cluster {two.seconds:.2f} s "
              f"(×{ratios[-1]:.2f}); tasks {r['compute']:.2f} s of compute, gaps "
              f"{r['gaps'] * 1000:.0f} ms, first task {r['first_task']:.2f} s, later "
              f"{r['later_task']:.2f} s, call→first task {r['to_first'] * 1000:.0f} ms",
              flush=True)  # fmt: skip

    def med(key: str) -> float:
        return statistics.median(c.report[key] for c in clusters)

    seconds = [c.seconds for c in clusters]
    rows = [[
        f"{MODELS} × {args.mb} MB", f"{fmt_seconds(min(ones))} / {fmt_seconds(statistics.median(ones))}",
        f"{fmt_seconds(min(seconds))} / {fmt_seconds(statistics.median(seconds))}",
        f"×{max(ratios):.2f} / ×{statistics.median(ratios):.2f}",
        fmt_seconds(med("compute")), fmt_seconds(med("gaps")), fmt_seconds(med("to_first")),
        f"{fmt_seconds(med('first_task'))} / {fmt_seconds(med('later_task'))}",
    ]]  # fmt: skip
    header = ["models", "one process: min / median", "2-worker LocalCluster: min / median",
              "speed-up: best / median round", "cluster: task compute (sum)",
              "gaps between a worker's tasks", "call → first task", "task: first / later"]  # fmt: skip
    text = "\n".join([
        "# weights_report_many: a 2-worker dask LocalCluster against one process", "",
        f"{today()}, {machine_description()}, dask {package_version('distributed')}; "
        f"{args.rounds} rounds, fresh processes, interleaved.", "",
        (__doc__ or "").strip(), "", markdown_table(header, rows), "",
    ])  # fmt: skip
    print(write_result("many", text))


if __name__ == "__main__":
    main()
