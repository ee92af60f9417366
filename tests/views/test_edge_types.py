"""Edge types: value_info from the file, ONNX shape inference on a structure-only copy."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.readers.protobuf._wire import MAGIC
from onnx_explorer.views import _edge_types as shapes
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._edge_types import inferred_types, value_types


def _embedded_model() -> onnx.ModelProto:
    """MatMul by a 64×64 weight embedded as raw_data, then Reshape by a small shape tensor."""
    w = numpy_helper.from_array(np.ones((64, 64), np.float32), "W")  # 16 KB: cut by the reader
    target = numpy_helper.from_array(np.array([0, 8, 8], np.int64), "target")  # 24 B: kept
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="/mm/MatMul"),
        helper.make_node("Reshape", ["h", "target"], ["y"], name="/mm/Reshape"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, target],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


ASSUMED = "assumed input sizes: batch=1 (batch); bind them with dims={'batch': 1}"


def test_inference_sees_dims_of_cut_weights_and_values_of_small_ones(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_embedded_model(), path)
    model = ox.load(path)
    proto = model.support._proto  # the reader's parsed proto (no public attribute)
    (w,) = [t for t in proto.graph.initializer if t.name == "W"]
    assert w.raw_data.startswith(MAGIC)  # the reader left a marker in place of the bytes

    types, note = value_types(model.graph, model, infer=True)
    assert note == ASSUMED  # edges show sizes: batch bound to its default, said aloud
    assert types.get("h").shape == (1, 64)  # from W's dims alone
    assert types.get("y").shape == (1, 8, 8)  # Reshape read the kept target values
    # The model's own proto is untouched: inference worked on a copy.
    assert w.raw_data.startswith(MAGIC) and w.data_location == TensorProto.DEFAULT


def test_in_memory_protos_keep_their_weights():
    proto = _embedded_model()
    model = ox.load(proto)
    types, note = value_types(model.graph, model, infer=True)
    assert note == ASSUMED and types.get("y").shape == (1, 8, 8)
    assert len(proto.graph.initializer[0].raw_data) == 64 * 64 * 4


def test_bound_sizes_replace_stale_declared_symbols_and_results_are_cached():
    proto = _embedded_model()
    proto.graph.value_info.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, ["n", 64]))
    model = ox.load(proto)
    types, _ = value_types(model.graph, model)
    assert types.get("h").shape == (1, 64)  # "n" was the exporter's name: batch is bound
    assert inferred_types(model) is inferred_types(model)
    model.bind(dims={"batch": 8})
    types, note = value_types(model.graph, model)
    assert types.get("y").shape == (8, 8, 8) and note is None


def test_a_fixed_model_keeps_the_declared_types_first():
    proto = _embedded_model()
    proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    proto.graph.value_info.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, [2, 64]))
    model = ox.load(proto)
    types, note = value_types(model.graph, model)
    assert note is None and types.get("h").shape == (2, 64) and types.get("y").shape == (2, 8, 8)


def test_failed_inference_is_a_note_not_an_error():
    proto = _embedded_model()
    del proto.opset_import[:]  # inference (in its own process) raises: no opset for MatMul
    model = ox.load(proto)
    types, note = value_types(model.graph, model, infer=True)
    assert note is not None and "InferenceError" in note and "No opset import" in note
    assert types.get("x").shape == ("batch", 64)  # declared types still label edges
    assert types.get("h") is None
    result = build_dot(model.graph, model, infer_shapes=True)
    assert note in result.notes and result.drawn == 4


def test_large_graphs_skip_inference_unless_asked(monkeypatch):
    monkeypatch.setattr(shapes, "INFER_AUTO_MAX_NODES", 1)
    model = ox.load(_embedded_model())
    types, note = value_types(model.graph, model)
    assert note is not None and "infer_shapes=True" in note and types.get("y").shape is None
    types, note = value_types(model.graph, model, infer=True)
    assert note == ASSUMED and types.get("y").shape == (1, 8, 8)
