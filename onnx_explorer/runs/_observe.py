"""Shapes onnxruntime actually produces: the reference where shape inference stops.

One session over the model with every main-graph node output made a graph output, run
once on generated feeds of the bound input shapes (:mod:`onnx_explorer.bindings`). What
comes back is each value's dtype and concrete shape; the arrays are dropped as they
are read. Used by :func:`onnx_explorer.metrics` (``shapes="run"``, and automatically
when inference leaves a compute op's shape unknown).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx

from ..model import Model, ValueInfo
from ._feeds import generate_feeds, input_specs
from ._ort import RunError, make_session, short
from ._plan import check_external, load_proto

#: Largest graph observed automatically: one session holds every value until the end.
OBSERVE_MAX_NODES = 20_000


def observed_shapes(
    model: Model, input_shapes: Mapping[str, tuple[int, ...]]
) -> dict[str, ValueInfo]:
    """Value name → type seen in one onnxruntime run (main graph; RunError if it fails)."""
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
    feeds = generate_feeds(specs, shapes=input_shapes)
    names = [v.name for v in graph.output]
    try:
        session = make_session(work.SerializeToString(), base_dir)
        del work
        values = session.run(names, feeds)
    except Exception as exc:  # onnxruntime's own exception types
        reason = short(str(exc))
        raise RunError(f"onnxruntime could not run the model to observe shapes: {reason}") from exc
    found: dict[str, ValueInfo] = {}
    for name, value in zip(names, values):
        if isinstance(value, np.ndarray):
            dtype = value.dtype.name
            found[name] = ValueInfo(name, dtype, dtype, tuple(int(d) for d in value.shape))
    return found


__all__ = ["OBSERVE_MAX_NODES", "observed_shapes"]
