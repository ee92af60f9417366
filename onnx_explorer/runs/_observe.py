"""Shapes onnxruntime actually produces: the reference where shape inference stops.

One session over the model with every main-graph node output made a graph output, run
once on generated inputs of the bound shapes (:mod:`onnx_explorer.bindings`). What comes
back is each value's dtype and concrete shape; the values themselves never leave the
child process.

The model file is untrusted and onnxruntime cannot be interrupted (a Loop of 10^11
trips runs for ever in C++), so the run happens in a child Python process, stopped
after :data:`OBSERVE_TIME_LIMIT` seconds, and refused up front when its generated inputs
alone would take more than :data:`MAX_FEED_BYTES`. Used by :func:`onnx_explorer.metrics`
(``shapes="run"``, and automatically when inference leaves a compute op's shape unknown).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ..model import Model, ValueInfo
from ..views._text import squeezed
from ._feeds import generate_feeds, input_specs
from ._ort import RunError
from ._plan import check_external, load_proto

#: Seconds the observing run may take, its process started and the model loaded.
OBSERVE_TIME_LIMIT = 15.0
#: Bytes of generated inputs beyond which no run is tried (dims of 10^6 × 10^6...).
MAX_FEED_BYTES = 256 << 20
_FAILED = 3  # the child's exit code when the run raised (reason on stderr)


def observed_shapes(
    model: Model, input_shapes: Mapping[str, tuple[int, ...]], time_limit: float | None = None
) -> dict[str, ValueInfo]:
    """Value name → type seen in one onnxruntime run (main graph). Raises
    :class:`RunError` when the run fails, times out or would need absurd inputs."""
    proto, base_dir = load_proto(model)
    check_external(proto, base_dir)
    work = onnx.ModelProto()
    work.CopyFrom(proto)
    graph = work.graph
    declared = {v.name for v in graph.output}
    for node in graph.node:
        for name in node.output:
            if name and name not in declared:
                graph.output.append(onnx.ValueInfoProto(name=name))
                declared.add(name)
    specs = input_specs(graph)
    needed = 0
    for spec in specs:
        shape = input_shapes.get(spec.name)
        if shape is not None and spec.dtype is not None:
            needed += math.prod(shape) * spec.dtype.itemsize
    if needed > MAX_FEED_BYTES:
        raise RunError(
            f"the inputs would take {needed:,} bytes: no onnxruntime run to observe shapes "
            "(bind smaller dims)"
        )
    header = {"base_dir": str(base_dir) if base_dir else None,
              "shapes": {k: list(v) for k, v in input_shapes.items()}}  # fmt: skip
    request = json.dumps(header).encode() + b"\n" + work.SerializeToString()
    del work
    limit = OBSERVE_TIME_LIMIT if time_limit is None else float(time_limit)
    root = Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(
            [sys.executable, "-m", __name__], input=request, capture_output=True,
            timeout=limit, cwd=str(root) if root.is_dir() else None, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RunError(f"onnxruntime did not finish in {limit:g} s: its run was stopped") from None
    except OSError as exc:
        raise RunError(f"cannot start a process to run the model: {exc}") from exc
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = lines[-1] if lines else f"its process ended with code {done.returncode}"
        raise RunError(f"onnxruntime could not run the model to observe shapes: {squeezed(reason)}")
    try:
        found = json.loads(done.stdout)
        return {
            name: ValueInfo(name, dtype, dtype, tuple(int(d) for d in shape))
            for name, (dtype, shape) in found.items()
        }
    except (ValueError, TypeError) as exc:
        raise RunError(f"the observing run answered nonsense: {exc}") from exc


# -- the child ---------------------------------------------------------------------------
def main() -> int:
    """Read ``header JSON \\n model bytes`` on stdin, run once, print name → (dtype, shape)."""
    data = sys.stdin.buffer.read()
    head, _, body = data.partition(b"\n")
    try:
        header = json.loads(head)
        print(json.dumps(_run(body, header)))
    except Exception as exc:  # reported to the parent as the run's reason
        sys.stderr.write(f"{type(exc).__name__}: {' '.join(str(exc).split())[:600]}\n")
        return _FAILED
    return 0


def _run(model_bytes: bytes, header: dict[str, Any]) -> dict[str, Any]:
    from ._ort import make_session

    model = onnx.ModelProto()
    model.ParseFromString(model_bytes)
    shapes = {k: tuple(v) for k, v in header["shapes"].items()}
    feeds = generate_feeds(input_specs(model.graph), shapes=shapes)
    base_dir = Path(header["base_dir"]) if header.get("base_dir") else None
    session = make_session(model_bytes, base_dir)
    names = [v.name for v in model.graph.output]
    found: dict[str, Any] = {}
    for name, value in zip(names, session.run(names, feeds)):
        if isinstance(value, np.ndarray):
            found[name] = [value.dtype.name, [int(d) for d in value.shape]]
    return found


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["MAX_FEED_BYTES", "OBSERVE_TIME_LIMIT", "observed_shapes"]
