"""Models on the network: bytes transferred and time, against downloading the file whole.

Offline: a local HTTP server with Range support (tests/range_server.py) hosts
(a) an external-data model (default 400 MB of weights beside a small graph) and
(b) an embedded-weights model (default 300 MB of raw_data). For each: open, one
tensor's statistics, the whole weights report, and downloading the file whole.
Then weights_report_many over several models on a dask LocalCluster of 2 workers
vs 1 process (the merge must be exact). Sizes: --external-mb, --embedded-mb.

    PYTHONPATH=. python bench/remote.py [--external-mb 400] [--embedded-mb 300]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from range_server import RangeServer

import onnx_explorer as ox
from onnx_explorer.weights._report import weights_report

TENSOR_MB = 4


def build(directory: Path, total_mb: int, external: bool) -> Path:
    count = max(1, total_mb // TENSOR_MB)
    elements = TENSOR_MB * (1 << 20) // 4
    rng = np.random.default_rng(0)
    inits, nodes = [], []
    blob = open(directory / "weights.bin", "wb") if external else None  # noqa: SIM115
    offset = 0
    for i in range(count):
        arr = rng.standard_normal(elements, dtype=np.float32)
        tensor = numpy_helper.from_array(arr, f"layer{i}/W")
        if blob is not None:
            blob.write(arr.tobytes())
            tensor.ClearField("raw_data")
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", "weights.bin"), ("offset", str(offset)),
                               ("length", str(arr.nbytes))):  # fmt: skip
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            offset += arr.nbytes
        inits.append(tensor)
        nodes.append(
            helper.make_node("Add", ["x" if i == 0 else f"y{i - 1}", tensor.name], [f"y{i}"])
        )
    if blob is not None:
        blob.close()
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])],
        [helper.make_tensor_value_info(f"y{count - 1}", TensorProto.FLOAT, [elements])], inits,
    )  # fmt: skip
    path = directory / "model.onnx"
    onnx.save(helper.make_model(graph), path)
    return path


def measure(server: RangeServer, label: str, action):
    server.reset_counts()
    start = time.perf_counter()
    result = action()
    seconds = time.perf_counter() - start
    print(
        f"  {label:<28} {server.bytes_served / 1e6:>10.3f} MB  {len(server.requests):>5} requests  {seconds:>7.2f} s"
    )
    return result, server.bytes_served


def bench_model(server: RangeServer, name: str, path: Path, data_bytes: int) -> None:
    import fsspec

    url = f"{server.url}/{name}/model.onnx"
    print(
        f"{name}: graph file {path.stat().st_size / 1e6:.3f} MB, weights {data_bytes / 1e6:.0f} MB"
    )
    model, opened = measure(server, "open", lambda: ox.load(url))
    tensor = model.graph.initializers["layer3/W"]
    _, one = measure(server, f"stats of one tensor ({tensor.nbytes / 1e6:.1f} MB)", tensor.stats)
    measure(
        server,
        "whole weights report",
        lambda: weights_report(model, progress=False, as_list=True),
    )
    fs = fsspec.filesystem("http")
    files = [url] + (
        [url.replace("model.onnx", "weights.bin")] if (path.parent / "weights.bin").exists() else []
    )
    measure(server, "download whole (fsspec cat)", lambda: [len(fs.cat_file(f)) for f in files])
    print(
        f"  -> open: {opened} bytes for a {path.stat().st_size}-byte model file; "
        f"one tensor: {one - tensor.nbytes} bytes over its own {tensor.nbytes}"
    )
    model.close()


def bench_many(server: RangeServer, root: Path) -> None:
    from dask.distributed import Client, LocalCluster

    sources = []
    for i in range(4):
        (root / f"zoo{i}").mkdir()
        build(root / f"zoo{i}", 48, external=True)
        sources.append(f"{server.url}/zoo{i}/model.onnx")
    print(f"weights_report_many over {len(sources)} models of 48 MB")
    start = time.perf_counter()
    alone = ox.weights_report_many(sources, workers=1)
    one = time.perf_counter() - start
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        start = time.perf_counter()
        spread = ox.weights_report_many(sources, client=client)
        two = time.perf_counter() - start
    same = spread.totals.to_dict() == alone.totals.to_dict()
    print(
        f"  1 process {one:.2f} s, LocalCluster of 2 workers {two:.2f} s "
        f"(speed-up {one / two:.2f}x on this machine); merge exact: {same}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--external-mb", type=int, default=400)
    parser.add_argument("--embedded-mb", type=int, default=300)
    parser.add_argument("--no-many", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "a").mkdir()
        (root / "b").mkdir()
        a = build(root / "a", args.external_mb, external=True)
        b = build(root / "b", args.embedded_mb, external=False)
        server = RangeServer(root).start()
        try:
            bench_model(server, "a", a, (root / "a" / "weights.bin").stat().st_size)
            bench_model(server, "b", b, b.stat().st_size)
            if not args.no_many:
                bench_many(server, root)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
