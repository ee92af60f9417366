"""Write the TensorFlow-made SavedModels next to this script (run once, with TensorFlow).

    python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu tf-keras
    /tmp/tfvenv/bin/python tests/data/savedmodel/make_savedmodels.py

Made with tensorflow-cpu 2.21.0. Writes:

* ``tf2_mlp/``: ``tf.saved_model.save`` of a two-layer MLP module (a ``serving_default``
  signature, ``StatefulPartitionedCall`` → function library, ``VarHandleOp`` variables,
  the object graph) plus a string variable;
* ``tf1_mlp/``: a TF1 graph saved with ``tf.compat.v1.saved_model.Builder`` (``VariableV2``
  nodes, checkpoint keys = variable names, tags ``serve``), and ``tf1_ckpt/model.ckpt.meta``
  + checkpoint from ``tf.compat.v1.train.Saver``;
* ``keras_adam/``: a Keras 2 model with Adam's slot variables and metric variables;
* ``expected.json``: every checkpoint tensor's values (as lists), for the tests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import tensorflow as tf

HERE = Path(__file__).resolve().parent


class MLP(tf.Module):
    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(0)
        self.w1 = tf.Variable(rng.standard_normal((4, 8)).astype(np.float32), name="w1")
        self.b1 = tf.Variable(np.linspace(-1, 1, 8).astype(np.float32), name="b1")
        self.w2 = tf.Variable(rng.standard_normal((8, 3)).astype(np.float32), name="w2")
        self.label = tf.Variable("an MLP", name="label")

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def __call__(self, x):
        return {"y": tf.matmul(tf.nn.relu(tf.matmul(x, self.w1) + self.b1), self.w2)}


def tf2() -> dict:
    out = HERE / "tf2_mlp"
    shutil.rmtree(out, ignore_errors=True)
    module = MLP()
    tf.saved_model.save(module, str(out), signatures=module.__call__)
    reader = tf.train.load_checkpoint(str(out / "variables" / "variables"))
    return {k: _jsonable(reader.get_tensor(k)) for k in reader.get_variable_to_shape_map()}


def tf1() -> tuple[dict, dict]:
    out = HERE / "tf1_mlp"
    ckpt = HERE / "tf1_ckpt"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ckpt, ignore_errors=True)
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        w = v1.get_variable(
            "dense/kernel",
            initializer=np.arange(12, dtype=np.float32).reshape(4, 3) / 10,
            use_resource=False,
        )
        b = v1.get_variable(
            "dense/bias", initializer=np.float32([0.5, -0.5, 0.25]), use_resource=False
        )
        y = tf.identity(tf.matmul(x, w) + b, name="y")
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(str(out))
            sig = v1.saved_model.predict_signature_def({"x": x}, {"y": y})
            builder.add_meta_graph_and_variables(
                sess, ["serve"], signature_def_map={"serving_default": sig}
            )
            builder.save()
            ckpt.mkdir()
            v1.train.Saver().save(sess, str(ckpt / "model.ckpt"))
    saved = tf.train.load_checkpoint(str(out / "variables" / "variables"))
    meta = tf.train.load_checkpoint(str(ckpt / "model.ckpt"))
    return (
        {k: _jsonable(saved.get_tensor(k)) for k in saved.get_variable_to_shape_map()},
        {k: _jsonable(meta.get_tensor(k)) for k in meta.get_variable_to_shape_map()},
    )


def _jsonable(value) -> dict:
    if isinstance(value, bytes):  # a string scalar (np.asarray would drop trailing NULs)
        value = np.array(value, dtype=object)
    array = np.asarray(value)
    if array.dtype.kind in "OS":
        return {
            "dtype": "string",
            "shape": list(array.shape),
            "values": [bytes(v).decode("latin-1") for v in array.reshape(-1)],
        }
    return {
        "dtype": str(array.dtype),
        "shape": list(array.shape),
        "values": array.reshape(-1).tolist(),
    }


def keras_adam() -> dict:
    """A Keras 2 model trained one epoch with Adam and three metrics, saved with
    ``model.save(..., save_format="tf")``: optimizer slot variables and metric variables
    (three ``total``/``count`` pairs, uniquified as ``total_1``...) in the checkpoint."""
    import os

    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tf_keras as keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(3)])  # fmt: skip
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse",
                  metrics=["mae", keras.metrics.RootMeanSquaredError()])  # fmt: skip
    x = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
    model.fit(x, np.zeros((16, 3), np.float32), epochs=1, verbose=0)
    out = HERE / "keras_adam"
    shutil.rmtree(out, ignore_errors=True)
    model.save(str(out), save_format="tf")
    shutil.rmtree(out / "assets", ignore_errors=True)
    reader = tf.train.load_checkpoint(str(out / "variables" / "variables"))
    return {k: _jsonable(reader.get_tensor(k)) for k in reader.get_variable_to_shape_map()}


def main() -> None:
    expected = {"tf_version": tf.__version__, "tf2_mlp": tf2()}
    expected["tf1_mlp"], expected["tf1_ckpt"] = tf1()
    expected["keras_adam"] = keras_adam()
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
