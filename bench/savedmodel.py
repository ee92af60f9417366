"""Opening a SavedModel reads no variable bytes: ~540 MB of variables, index only.

Writes (once, in a child) a SavedModel of a 4096 → 8192 → 8192 → 4096 MLP with
``onnx_explorer.samples.write_dense_saved_model`` under bench/_models/, then, each in a
fresh process (time measured inside the child, peak RSS from the parent):

* ``onnx_explorer.load(directory)``, counting the bytes the process read from files
  during the call (``rchar`` of /proc/self/io: every read and pread; a tiny SavedModel is
  opened first so that imports are not counted) and the bytes that reached the shard
  through ``DataFile.read_into`` / ``DataFile.view`` (must be 0);
* ``stats()`` of one 256 MB kernel (read on demand, streamed);
* ``verify_checksum()`` of that kernel (CRC-32C of its bytes, numpy, no package).

    .venv/bin/python bench/savedmodel.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    MODELS_DIR,
    fmt_bytes,
    fmt_seconds,
    machine_description,
    markdown_table,
    run_python,
    timed_child,
    today,
    write_result,
)

WIDTHS = (4096, 8192, 8192, 4096)
DIR = MODELS_DIR / "savedmodel_540mb"
SHARD = DIR / "variables" / "variables.data-00000-of-00001"

GENERATE = f"""
from onnx_explorer.samples import write_dense_saved_model
from onnx_explorer.readers.tensorflow.bundle._crc32c import crc32c
write_dense_saved_model({str(DIR)!r}, {WIDTHS!r}, crc32c=crc32c)
"""

READ_BYTES = """
import tempfile
from onnx_explorer.external_data import DataFile
from onnx_explorer.samples import write_dense_saved_model

def read_bytes():
    with open('/proc/self/io') as fh:
        return int(next(line for line in fh if line.startswith('rchar:')).split()[1])

# Count what reaches the checkpoint shards through the only two ways in (pread, map).
shard_bytes = [0]
_read_into, _view = DataFile.read_into, DataFile.view
def read_into(self, offset, out):
    if '.data-' in self.path.name:
        shard_bytes[0] += memoryview(out).nbytes
    return _read_into(self, offset, out)
def view(self, offset, length):
    if '.data-' in self.path.name:
        shard_bytes[0] += length
    return _view(self, offset, length)
DataFile.read_into, DataFile.view = read_into, view
# Warm up on a tiny SavedModel, so that imports made by the first load are not counted.
ox.load(write_dense_saved_model(tempfile.mkdtemp() + '/tiny'))
"""

OPEN = timed_child(
    f"import onnx_explorer as ox\n{READ_BYTES}\nbefore = read_bytes()",
    f"model = ox.load({str(DIR)!r})",
    "report['read'] = read_bytes() - before\n"
    "report['shard_read'] = shard_bytes[0]\n"
    "report['variables'] = sum(1 for t in model.graph.initializers.values() if t.is_external)\n"
    "report['nodes'] = model.nodes_total",
)
STATS = timed_child(
    f"import onnx_explorer as ox\nmodel = ox.load({str(DIR)!r})\n"
    "kernel = model.graph.initializers['dense_1/kernel']",
    "stats = kernel.stats()",
    "report['max'] = float(stats.max); report['nbytes'] = kernel.nbytes",
)
CHECK = timed_child(
    f"import onnx_explorer as ox\nmodel = ox.load({str(DIR)!r})\n"
    "kernel = model.graph.initializers['dense_1/kernel']",
    "ok = kernel.verify_checksum()",
    "report['ok'] = ok; report['nbytes'] = kernel.nbytes",
)


def main() -> None:
    if not SHARD.is_file():
        print("writing the SavedModel ...", flush=True)
        run_python(GENERATE, timeout=1800)
    shard_bytes = SHARD.stat().st_size
    opened = run_python(OPEN)
    stats = run_python(STATS)
    check = run_python(CHECK)
    read = opened.report["read"]
    assert opened.report["shard_read"] == 0, (
        f"opening read {opened.report['shard_read']} shard bytes"
    )
    assert read < shard_bytes / 1000, f"opening read {read} bytes"
    kernel = stats.report["nbytes"]
    rows = [
        [
            "`load(directory)`",
            fmt_seconds(opened.seconds),
            fmt_bytes(read),
            fmt_bytes(opened.max_rss),
        ],
        [
            "`stats()` of one kernel",
            fmt_seconds(stats.seconds),
            fmt_bytes(kernel),
            fmt_bytes(stats.max_rss),
        ],
        [
            "`verify_checksum()` (CRC-32C)",
            fmt_seconds(check.seconds),
            fmt_bytes(kernel),
            fmt_bytes(check.max_rss),
        ],
    ]
    text = "\n".join([
        "# SavedModel benchmark",
        "",
        f"{today()}, {machine_description()}",
        "",
        f"A SavedModel written by `onnx_explorer.samples.write_dense_saved_model` (MLP "
        f"{' → '.join(map(str, WIDTHS))}): {opened.report['variables']} checkpoint tensors, "
        f"{fmt_bytes(shard_bytes)} in one shard, {opened.report['nodes']} nodes. Each row "
        "is one fresh process; \"bytes read\" is the process's `rchar` during `load` (after "
        "a warm-up load, so imports are not counted) and the kernel's size for the other rows.",
        "",
        markdown_table(["task", "time", "bytes read", "peak RSS"], rows),
        "",
        f"Opening read {read:,} bytes (the saved_model.pb and variables.index) and "
        f"{opened.report['shard_read']} of the {shard_bytes:,} variable bytes. CRC-32C runs at "
        f"{kernel / check.seconds / 1e6:.0f} MB/s (numpy, lane-parallel).",
    ])  # fmt: skip
    print(text)
    write_result("savedmodel", text)


if __name__ == "__main__":
    main()
