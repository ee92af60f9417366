"""The independent reference for the real-model corpus: shapes onnxruntime produces.

Written apart from the package on purpose (onnx + onnxruntime + numpy only): every node
output of the main graph is made a graph output, the model runs once on the manifest's
feeds, and the MACs of the compute ops are worked out from those observed shapes and the
weights' own dims. The package's metrics are checked against this.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

CORPUS = Path(__file__).parent / "corpus"
MANIFEST = {entry["file"]: entry for entry in json.loads((CORPUS / "MANIFEST.json").read_text())}
ONNX_MODELS = sorted(name for name in MANIFEST if name.endswith(".onnx"))
COMPUTE_OPS = {"Conv", "ConvInteger", "ConvTranspose", "MatMul", "MatMulInteger", "Gemm",
               "LSTM", "DynamicQuantizeLSTM"}  # fmt: skip


def feeds(name: str, batch: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """The manifest's working feeds, with the batch (axis 0 of every input that has one,
    and axis 1 of recurrent state inputs) set to ``batch``."""
    rng = np.random.default_rng(seed)
    out = {}
    for input_name, spec in MANIFEST[name]["working_feeds"].items():
        shape = list(spec["shape"])
        if batch != 1 and shape:
            axis = 1 if input_name in _STATE_INPUTS.get(name, ()) else 0
            shape[axis] = batch
        dtype = np.dtype(spec["dtype"])
        if "value" in spec:
            out[input_name] = np.full(shape, spec["value"], dtype)
        elif "low" in spec:
            out[input_name] = rng.integers(spec["low"], spec["high"], shape).astype(dtype)
        else:
            out[input_name] = rng.standard_normal(shape).astype(dtype)
    return out


#: Inputs whose batch is axis 1 (LSTM states are (directions, batch, hidden)).
_STATE_INPUTS = {
    "silero_vad_16k_op15.onnx": ("state",),
    "silero_vad_v6_dynint8.onnx": ("h", "c"),
}
#: Models whose batch cannot vary (the export fixed it), and those that take it.
BATCHABLE = {
    "ppocrv4_det.onnx", "ppocr_mobile_v2_cls.onnx", "silero_vad_16k_op15.onnx",
    "magika_standard_v3_3.onnx", "smart_turn_v3_2_cpu.onnx", "g2p_id_lstm_decoder_dynint8.onnx",
}  # fmt: skip


def observed(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, tuple]:
    """Value name → shape seen by onnxruntime (every main-graph node output exposed)."""
    import onnxruntime as ort

    work = onnx.ModelProto()
    work.CopyFrom(model)
    have = {o.name for o in work.graph.output}
    for node in work.graph.node:
        for name in node.output:
            if name and name not in have:
                work.graph.output.append(onnx.ValueInfoProto(name=name))
                have.add(name)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(work.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])  # fmt: skip
    names = [o.name for o in work.graph.output]
    shapes = {
        name: tuple(np.asarray(v).shape) for name, v in zip(names, session.run(names, inputs))
    }
    shapes.update({name: value.shape for name, value in inputs.items()})
    return shapes


def weight_shapes(model: onnx.ModelProto) -> dict[str, tuple]:
    found = {t.name: tuple(t.dims) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.name == "value":
                    found[node.output[0]] = tuple(numpy_helper.to_array(a.t).shape)
    return found


def reference_macs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, int]:
    """Node name → MACs of every main-graph compute node, from observed shapes."""
    shapes = {**weight_shapes(model), **observed(model, inputs)}
    macs: dict[str, int] = {}
    for i, node in enumerate(model.graph.node):
        if node.op_type not in COMPUTE_OPS:
            continue
        x = shapes[node.input[0]]
        w = shapes[node.input[1]]
        out = math.prod(shapes[node.output[0]])
        has_bias = len(node.input) > 2 and node.input[2] != ""
        if node.op_type in ("Conv", "ConvInteger"):
            value = out * math.prod(w[1:]) + (out if has_bias and node.op_type == "Conv" else 0)
        elif node.op_type == "ConvTranspose":
            value = math.prod(x) * math.prod(w[1:]) + (out if has_bias else 0)
        elif node.op_type in ("MatMul", "MatMulInteger"):
            value = out * x[-1]
        elif node.op_type == "Gemm":
            trans_a = any(a.name == "transA" and a.i for a in node.attribute)
            value = out * (x[0] if trans_a else x[1]) + (out if has_bias else 0)
        else:  # LSTM (W: dirs, 4H, I) and DynamicQuantizeLSTM (W: dirs, I, 4H)
            r = shapes[node.input[2]]
            layout = any(a.name == "layout" and a.i for a in node.attribute)
            steps, batch = (x[1], x[0]) if layout else (x[0], x[1])
            value = steps * batch * (math.prod(w) + math.prod(r))
        macs[node.name or f"#{i}"] = value
    return macs
