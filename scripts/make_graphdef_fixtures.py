"""Write the TensorFlow GraphDef test files in tests/data/graphdef/ with real TensorFlow.

Run once by hand, in a throwaway environment outside the repository (CI never needs
TensorFlow; the outputs are committed)::

    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu==2.21.0
    /tmp/tfvenv/bin/python scripts/make_graphdef_fixtures.py

It writes

- ``cnn_frozen.pb`` / ``cnn_frozen.pbtxt``: a small frozen CNN (Conv2D + BiasAdd +
  Relu + MaxPool + MatMul, weights from a fixed seed), plus a splat constant
  (one ``float_val`` for ten elements) and a float16 constant (``half_val``);
- ``functions.pb`` / ``functions.pbtxt``: a concrete function's graph with a
  function library (a tf.function calling a tf.function calling a tf.function);
- ``expected.json``: what TensorFlow itself says about them (node names and ops,
  Const dtypes, shapes, values, sums, histograms), which the tests check against.

Before writing anything it checks that every field of the message definitions in
``onnx_explorer/readers/tensorflow/graphdef/_proto.py`` has TensorFlow's number and type.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf
from google.protobuf import descriptor_pool
from tensorflow.core.framework import graph_pb2
from tensorflow.python.framework.convert_to_constants import (
    convert_variables_to_constants_v2,
)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "graphdef"
SEED = 20240611


def _load_our_protos() -> Any:
    # Load the module by path: importing the package would need onnx in this venv.
    path = ROOT / "onnx_explorer" / "readers" / "graphdef_proto.py"
    spec = importlib.util.spec_from_file_location("graphdef_proto", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _signature(descriptor: Any) -> dict[str, tuple[Any, ...]]:
    out = {}
    for f in descriptor.fields:
        target = f.message_type or f.enum_type
        type_name = target.full_name if target else ""
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            type_name = "map" + str([(g.number, g.type) for g in f.message_type.fields])
        oneof = f.containing_oneof.name if f.containing_oneof else ""
        out[f.name] = (f.number, f.type, f.is_repeated, type_name, oneof)
    return out


def check_protos() -> None:
    """Every message, field and enum value we define must match TensorFlow's."""
    ours = _load_our_protos()
    theirs = descriptor_pool.Default()
    assert graph_pb2.GraphDef.DESCRIPTOR.full_name == "tensorflow.GraphDef"
    problems = []
    for full_name in ours.FIELD_NUMBERS:
        a = _signature(ours.POOL.FindMessageTypeByName(full_name))
        b = _signature(theirs.FindMessageTypeByName(full_name))
        for name, sig in a.items():
            if b.get(name) != sig:
                problems.append(f"{full_name}.{name}: ours {sig}, TensorFlow {b.get(name)}")
        missing = set(b) - set(a) - {"debug_info"}  # left out on purpose
        problems += [f"{full_name}.{name}: not defined by us" for name in sorted(missing)]
    for enum in ("tensorflow.DataType", "tensorflow.FullTypeId"):
        a_values = {v.name: v.number for v in ours.POOL.FindEnumTypeByName(enum).values}
        b_values = {v.name: v.number for v in theirs.FindEnumTypeByName(enum).values}
        if a_values != b_values:
            problems.append(f"{enum}: differs in {set(a_values.items()) ^ set(b_values.items())}")
    if problems:
        sys.exit("message definitions disagree with TensorFlow:\n  " + "\n  ".join(problems))
    print(f"message definitions match TensorFlow {tf.__version__}")


# -- models ------------------------------------------------------------------------
class SmallCNN(tf.Module):
    def __init__(self) -> None:
        super().__init__(name="cnn")
        rng = np.random.default_rng(SEED)
        with tf.name_scope("conv1"):
            self.kernel = tf.Variable(
                (rng.standard_normal((3, 3, 3, 8)) * 0.2).astype(np.float32), name="kernel"
            )
            self.bias = tf.Variable(np.linspace(-0.1, 0.25, 8, dtype=np.float32), name="bias")
        with tf.name_scope("dense"):
            self.weights = tf.Variable(
                (rng.standard_normal((128, 10)) * 0.05).astype(np.float32), name="weights"
            )
            self.dense_bias = tf.Variable(np.arange(10, dtype=np.float32) / 100, name="bias")

    @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 3], tf.float32, name="image")])
    def __call__(self, image: tf.Tensor) -> tf.Tensor:
        with tf.name_scope("conv1"):
            x = tf.nn.conv2d(image, self.kernel, strides=1, padding="SAME")
            x = tf.nn.bias_add(x, self.bias)
            x = tf.nn.relu(x)
        x = tf.nn.max_pool2d(x, ksize=2, strides=2, padding="VALID", name="pool")
        x = tf.reshape(x, [-1, 128], name="flatten")
        with tf.name_scope("dense"):
            x = tf.nn.bias_add(tf.matmul(x, self.weights), self.dense_bias)
        scale = tf.constant(0.5, shape=[10], name="scale")  # one float_val, ten elements
        offset = tf.cast(
            tf.constant(np.linspace(0, 1, 10), dtype=tf.float16, name="offset_half"), tf.float32
        )
        return tf.nn.softmax(x * scale + offset, name="probs")


def frozen_cnn() -> Any:
    module = SmallCNN()
    concrete = module.__call__.get_concrete_function()
    frozen = convert_variables_to_constants_v2(concrete)
    return frozen.graph.as_graph_def()


@tf.function
def innermost(x: tf.Tensor) -> tf.Tensor:
    return tf.nn.relu(x) * 2.0


@tf.function
def inner(x: tf.Tensor) -> tf.Tensor:
    return innermost(x) + tf.constant([1.0, 2.0, 3.0, 4.0], name="bias")


@tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
def outer(x: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(inner(x), axis=1, name="total")


def function_graph() -> Any:
    return outer.get_concrete_function().graph.as_graph_def()


# -- expected values ---------------------------------------------------------------
def _tensor_record(tp: Any) -> dict[str, Any]:
    array = tf.make_ndarray(tp)
    record: dict[str, Any] = {
        "dtype": tf.as_dtype(tp.dtype).name,
        "shape": list(array.shape),
        "storage": "tensor_content" if tp.tensor_content else _typed_field(tp),
        "first": [float(v) for v in array.reshape(-1)[:6]] if array.dtype != object else [],
    }
    if array.dtype.kind in "fiub":
        values = array.astype(np.float64)
        record.update(
            sum=float(values.sum()),
            min=float(values.min()) if values.size else None,
            max=float(values.max()) if values.size else None,
            histogram=np.histogram(values, bins=10)[0].tolist() if values.size else [],
        )
    if array.size <= 16 and array.dtype.kind in "fiub":
        record["values"] = array.astype(np.float64).reshape(-1).tolist()
    return record


def _typed_field(tp: Any) -> str:
    for field, _ in tp.ListFields():
        if field.name.endswith("_val"):
            return field.name
    return "none"


def _node_records(nodes: Any) -> list[dict[str, Any]]:
    return [{"name": n.name, "op": n.op, "inputs": list(n.input)} for n in nodes]


def _consts(nodes: Any) -> dict[str, Any]:
    return {n.name: _tensor_record(n.attr["value"].tensor) for n in nodes if n.op == "Const"}


def expected(graph_def: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "nodes": _node_records(graph_def.node),
        "consts": _consts(graph_def.node),
        "placeholders": {
            n.name: {
                "dtype": tf.as_dtype(n.attr["dtype"].type).name,
                "shape": [d.size for d in n.attr["shape"].shape.dim],
            }
            for n in graph_def.node
            if n.op == "Placeholder"
        },
        "versions": {
            "producer": graph_def.versions.producer,
            "min_consumer": graph_def.versions.min_consumer,
        },
        "functions": {},
    }
    for f in graph_def.library.function:
        record["functions"][f.signature.name] = {
            "inputs": [a.name for a in f.signature.input_arg],
            "outputs": [a.name for a in f.signature.output_arg],
            "ret": dict(f.ret),
            "nodes": _node_records(f.node_def),
            "consts": _consts(f.node_def),
        }
    return record


def write(graph_def: Any, stem: str) -> None:
    tf.io.write_graph(graph_def, str(OUT), f"{stem}.pb", as_text=False)
    tf.io.write_graph(graph_def, str(OUT), f"{stem}.pbtxt", as_text=True)
    for suffix in (".pb", ".pbtxt"):
        size = (OUT / f"{stem}{suffix}").stat().st_size
        assert size < 1 << 20, f"{stem}{suffix} is {size} bytes: keep fixtures small"
        print(f"wrote {OUT / (stem + suffix)} ({size} bytes)")


def main() -> None:
    check_protos()
    OUT.mkdir(parents=True, exist_ok=True)
    cnn = frozen_cnn()
    functions = function_graph()
    write(cnn, "cnn_frozen")
    write(functions, "functions")
    record = {
        "tensorflow_version": tf.__version__,
        "seed": SEED,
        "cnn_frozen": expected(cnn),
        "functions": expected(functions),
    }
    path = OUT / "expected.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
