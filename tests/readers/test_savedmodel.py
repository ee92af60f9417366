"""TensorFlow SavedModels and MetaGraphDefs, written without TensorFlow (onnx_explorer.samples)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from locations import DATA

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.readers.tensorflow.bundle._crc32c import crc32c, mask, unmask
from onnx_explorer.readers.tensorflow.bundle._table import table_entries
from onnx_explorer.readers.tensorflow.graphdef import _proto as pb
from onnx_explorer.samples import (
    crc32c_pure,
    dense_saved_model_weights,
    sstable,
    write_dense_saved_model,
    write_tensor_bundle,
)

KERNEL0 = "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE"


@pytest.fixture
def saved(tmp_path):
    return write_dense_saved_model(tmp_path / "mlp", (4, 8, 3))


def test_a_saved_model_directory_opens_with_its_signature_as_inputs_and_outputs(saved):
    model = ox.load(saved)
    graph = model.graph
    assert model.metadata_props["container"] == "SavedModel"
    assert model.metadata_props["tags"] == "serve"
    (x,) = graph.inputs
    assert (x.name, x.dtype, x.shape) == ("serving_default_x", "float32", (None, 4))
    (y,) = graph.outputs
    assert (y.name, y.shape) == ("StatefulPartitionedCall", (None, 3))
    assert graph.producer(y.name).op_type == "StatefulPartitionedCall"
    line = model.metadata_props["signature.serving_default"]
    assert line.startswith("inputs x=serving_default_x:0 float32[?, 4] → outputs output_0=")


def test_saved_model_pb_and_the_directory_give_the_same_model(saved):
    a, b = ox.load(saved), ox.load(saved / "saved_model.pb")
    assert [n.name for n in a.graph.nodes] == [n.name for n in b.graph.nodes]
    assert a.graph.initializers.keys() == b.graph.initializers.keys()


def test_the_call_node_opens_the_function_body(saved):
    model = ox.load(saved)
    call = model.graph.node("StatefulPartitionedCall")
    function = model.function_for(call)
    assert function is not None and function.name == "__inference_serving_default_42"
    body = model.graph_at(function.graph.path)
    assert [n.op_type for n in body.nodes].count("MatMul") == 2
    assert body.producer(body.outputs[0].name).op_type == "BiasAdd"


def test_variables_are_lazy_tensors_with_the_checkpoint_values(saved):
    model = ox.load(saved)
    weights = dense_saved_model_weights((4, 8, 3))
    kernel = model.graph.initializers["dense/kernel"]
    assert (kernel.dtype_name, kernel.shape) == ("float32", (4, 8))
    assert kernel.location.kind == "external"
    assert kernel.location.path == "variables.data-00000-of-00001"
    np.testing.assert_array_equal(kernel.numpy(), weights[KERNEL0])
    assert kernel.stats().max == pytest.approx(float(weights[KERNEL0].max()))
    assert kernel.verify_checksum() is True
    node = model.graph.node("dense/kernel")
    assert node.metadata_props["checkpoint key"] == KERNEL0  # the object-graph name
    assert model.graph.value("dense/kernel").shape == (4, 8)


def test_variables_no_node_claims_are_listed_under_their_key(saved):
    graph = ox.load(saved).graph
    counter = graph.initializers["save_counter/.ATTRIBUTES/VARIABLE_VALUE"]
    assert counter.numpy() == 1
    strings = graph.initializers["_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert strings.dtype_name == "string"
    assert strings.numpy()[()] == b"(object graph)"


def test_the_weights_report_covers_the_variables(saved):
    rows = ox.load(saved).weights_report(progress=False, as_list=True)
    names = {row["name"] for row in rows}
    assert {"dense/kernel", "dense_1/bias"} <= names


def test_serve_comes_first_and_other_meta_graphs_are_graphs_too(tmp_path):
    model = ox.load(write_dense_saved_model(tmp_path / "two", extra_meta_graph=True))
    assert model.metadata_props["meta_graphs"] == "serve; train"
    assert model.graph.has_node("StatefulPartitionedCall")
    train = [f for f in model.functions if f.name == "MetaGraphDef [train]"]
    assert train and train[0].graph.nodes[0].name == "step"


def test_a_saved_model_without_variables_opens_graph_only(tmp_path):
    model = ox.load(write_dense_saved_model(tmp_path / "bare", variables=False))
    assert "graph only" in model.metadata_props["variables"]
    assert "dense/kernel" not in model.graph.initializers
    assert model.graph.node("dense/kernel").attributes["shape"].value is not None


def test_cli_summary_of_a_saved_model_directory(saved, capsys):
    assert main(["summary", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "StatefulPartitionedCall" in out or "VarHandleOp" in out


# -- the bundle format ------------------------------------------------------------------
def test_crc32c_matches_the_standard_check_values():
    assert crc32c(b"123456789") == 0xE3069283 == crc32c_pure(b"123456789")
    data = np.random.default_rng(0).integers(0, 256, (1 << 20) + 13, dtype=np.uint8).tobytes()
    assert crc32c(data) == crc32c_pure(data)  # the lane-parallel path agrees with the loop
    assert crc32c(data[100:], crc32c(data[:100])) == crc32c(data)
    assert unmask(mask(0x12345678)) == 0x12345678


def test_sstable_with_many_blocks_and_restart_points_reads_back():
    items = sorted(
        (f"key/{i:05d}/.ATTRIBUTES".encode(), bytes([i % 256]) * (i % 7)) for i in range(500)
    )
    table = sstable(items, block_size=256, restart_interval=4)
    assert list(table_entries(table, "t")) == items


def test_a_corrupt_index_block_is_a_format_error(saved):
    index = saved / "variables" / "variables.index"
    data = bytearray(index.read_bytes())
    data[3] ^= 0xFF
    index.write_bytes(bytes(data))
    with pytest.raises(ox.ModelFormatError, match="CRC-32C"):
        ox.load(saved)


def _varint(data, pos):
    value = shift = 0
    while True:
        value |= (data[pos] & 0x7F) << shift
        pos += 1
        if not data[pos - 1] & 0x80:
            return value, pos
        shift += 7


def test_a_snappy_compressed_index_is_refused_clearly(tmp_path):
    saved = write_dense_saved_model(tmp_path / "m")
    index = saved / "variables" / "variables.index"
    data = bytearray(index.read_bytes())
    footer = len(data) - 48
    _, pos = _varint(data, _varint(data, footer)[1])  # skip the metaindex handle
    offset, pos = _varint(data, pos)
    size, _ = _varint(data, pos)
    data[offset + size] = 1  # the index block's trailer: compression type Snappy
    index.write_bytes(bytes(data))
    with pytest.raises(ox.ModelFormatError, match="Snappy"):
        ox.load(saved)


def test_hostile_entries_break_only_their_variable(tmp_path):
    def tamper(key, entry):
        if key == KERNEL0:
            entry["shard_id"] = 7  # no such shard
        elif key.startswith("layer_with_weights-0/bias"):
            entry["offset"] = 1 << 40  # far past the shard's end
        elif key.startswith("layer_with_weights-1/kernel"):
            entry["crc32c"] ^= 1

    model = ox.load(write_dense_saved_model(tmp_path / "m", tamper=tamper))
    init = model.graph.initializers
    with pytest.raises(ox.TensorDataError, match="shard id 7"):
        init["dense/kernel"].numpy()
    with pytest.raises(ox.TensorDataError, match="run past the end"):
        init["dense/bias"].numpy()
    with pytest.raises(ox.TensorDataError, match="CRC-32C"):
        init["dense_1/kernel"].verify_checksum()
    assert init["dense_1/kernel"].numpy().shape == (8, 3)  # reading itself does not check
    assert init["dense_1/bias"].verify_checksum()


def test_a_truncated_shard_breaks_the_variables_past_its_end(saved):
    shard = saved / "variables" / "variables.data-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[:40])
    init = ox.load(saved).graph.initializers
    assert init["_CHECKPOINTABLE_OBJECT_GRAPH"].numpy()[()] == b"(object graph)"  # first: intact
    with pytest.raises(ox.TensorDataError, match="truncated shard"):
        init["dense/kernel"].numpy()


def test_shard_names_come_from_the_shard_id_only(tmp_path):
    weights = {"a": np.arange(4, dtype=np.float32), "b": np.ones(2, np.int32)}
    write_tensor_bundle(tmp_path / "sm" / "variables" / "variables", weights, num_shards=2)
    (tmp_path / "sm" / "saved_model.pb").write_bytes(
        (write_dense_saved_model(tmp_path / "m", variables=False) / "saved_model.pb").read_bytes()
    )
    init = ox.load(tmp_path / "sm").graph.initializers
    assert init["b"].location.path == "variables.data-00001-of-00002"
    np.testing.assert_array_equal(init["a"].numpy(), weights["a"])
    np.testing.assert_array_equal(init["b"].numpy(), weights["b"])


# -- MetaGraphDef files and detection ---------------------------------------------------
def _meta_graph(saved) -> bytes:
    proto = pb.SavedModel()
    proto.ParseFromString((saved / "saved_model.pb").read_bytes())
    return proto.meta_graphs[0].SerializeToString()


def test_a_meta_file_opens_with_its_checkpoint(saved, tmp_path):
    meta = tmp_path / "ckpt" / "model.ckpt.meta"
    meta.parent.mkdir()
    meta.write_bytes(_meta_graph(saved))
    for path in (saved / "variables").iterdir():
        target = meta.parent / path.name.replace("variables", "model.ckpt")
        target.write_bytes(path.read_bytes())
    model = ox.load(meta)
    assert model.metadata_props["container"] == "MetaGraphDef"
    np.testing.assert_array_equal(
        model.graph.initializers["dense/kernel"].numpy(),
        dense_saved_model_weights()[KERNEL0],
    )


def test_a_meta_graph_is_known_by_content_whatever_its_name(saved, tmp_path):
    path = tmp_path / "exported.pb"
    path.write_bytes(_meta_graph(saved))
    model = ox.load(path)
    assert model.metadata_props["container"] == "MetaGraphDef"
    assert "graph only" in model.metadata_props["variables"]


def test_text_format_saved_model_opens(saved, tmp_path):
    from google.protobuf import text_format

    proto = pb.SavedModel()
    proto.ParseFromString((saved / "saved_model.pb").read_bytes())
    folder = tmp_path / "text"
    folder.mkdir()
    (folder / "saved_model.pbtxt").write_text(text_format.MessageToString(proto))
    model = ox.load(folder)
    assert model.graph.inputs[0].name == "serving_default_x"


def test_saved_model_bytes_open_graph_only(saved):
    model = ox.load((saved / "saved_model.pb").read_bytes())
    assert model.metadata_props["container"] == "SavedModel"
    assert "graph only" in model.metadata_props["variables"]


# -- files written by TensorFlow 2.21 (tests/data/savedmodel/make_savedmodels.py) -----------
TF_DATA = DATA / "savedmodel"
EXPECTED = json.loads((TF_DATA / "expected.json").read_text())


def _expected(record):
    if record["dtype"] == "string":
        return np.array([v.encode("latin-1") for v in record["values"]], dtype=object)
    return np.array(record["values"], dtype=record["dtype"]).reshape(record["shape"])


def _checkpoint_tensors(model):
    """Checkpoint key → tensor, whether a node claimed it or not."""
    found = {}
    for name, tensor in model.graph.initializers.items():
        if tensor.is_external:
            node = model.graph.node(name) if model.graph.has_node(name) else None
            found[node.metadata_props["checkpoint key"] if node else name] = tensor
    return found


@pytest.mark.parametrize("name", ["tf2_mlp", "tf1_mlp", "tf1_ckpt/model.ckpt.meta", "keras_adam"])
def test_tensorflow_written_checkpoints_read_back_exactly(name):
    model = ox.load(TF_DATA / name)
    tensors = _checkpoint_tensors(model)
    expected = EXPECTED[name.split("/")[0]]
    assert tensors.keys() == expected.keys()
    for key, record in expected.items():
        assert tensors[key].verify_checksum()  # TensorFlow's CRC-32C, strings included
        np.testing.assert_array_equal(
            tensors[key].numpy().reshape(-1), _expected(record).reshape(-1)
        )


def test_tensorflow_tf2_saved_model_signature_functions_and_object_graph():
    model = ox.load(TF_DATA / "tf2_mlp")
    graph = model.graph
    assert [v.name for v in graph.inputs] == ["serving_default_x"]
    assert [(v.name, v.shape) for v in graph.outputs] == [("StatefulPartitionedCall", (None, 3))]
    assert "__saved_model_init_op" in model.metadata_props["signature.__saved_model_init_op"]
    body = model.function_for(graph.node("StatefulPartitionedCall"))
    assert body is not None and body.name.startswith("__inference_signature_wrapper")
    assert graph.node("w1").metadata_props["checkpoint key"] == "w1/.ATTRIBUTES/VARIABLE_VALUE"
    assert graph.initializers["w1"].shape == (4, 8)
    assert graph.initializers["label"].numpy()[()] == b"an MLP"


def test_tensorflow_tf1_variables_are_variablev2_nodes_with_their_values():
    model = ox.load(TF_DATA / "tf1_mlp")
    node = model.graph.node("dense/kernel")
    assert node.op_type == "VariableV2"
    assert model.graph.value("dense/kernel").shape == (4, 3)
    assert [v.name for v in model.graph.outputs] == ["y"]


@pytest.mark.parametrize(
    ("name", "container"),
    [("tf1_ckpt/model.ckpt.meta", "MetaGraphDef"), ("tf2_mlp/saved_model.pb", "SavedModel")],
)
def test_tensorflow_files_are_known_by_content_under_any_name(tmp_path, name, container):
    path = tmp_path / "graph.pb"
    path.write_bytes((TF_DATA / name).read_bytes())
    assert ox.load(path).metadata_props["container"] == container


# -- hostile tables -----------------------------------------------------------------------
def _table_block(entries):
    """One uncompressed block with a restart at every entry, and its trailer."""
    body = b"".join(bytes([0, len(k), len(v)]) + k + v for k, v in entries)
    starts, pos = [], 0
    for k, v in entries:
        starts.append(pos)
        pos += 3 + len(k) + len(v)
    body += b"".join(s.to_bytes(4, "little") for s in starts) + len(starts).to_bytes(4, "little")
    return body, body + b"\x00" + mask(crc32c(body + b"\x00")).to_bytes(4, "little")


def _table(index_entries, data=b""):
    index, index_block = _table_block(index_entries)
    footer = bytes([0, 0, len(data), len(index)])  # metaindex (0, 0), index handle
    return (
        data
        + index_block
        + footer
        + bytes(40 - len(footer))
        + (0xDB4775248B80FB57).to_bytes(8, "little")
    )


def test_an_index_pointing_at_the_same_block_twice_is_refused():
    data_body, data_block = _table_block([(b"a", b"1")])
    handle = bytes([0, len(data_body)])
    table = _table([(b"a", handle), (b"b", handle)], data_block)
    with pytest.raises(ox.ModelFormatError, match="overlaps"):
        list(table_entries(table, "t"))


def test_keys_longer_than_any_tensor_name_are_refused():
    # Keys are rebuilt from shared prefixes: unbounded, a small block could grow them forever.
    items = [(b"k" * 3000 + bytes([i]) * 1500, b"") for i in range(3)]
    with pytest.raises(ox.ModelFormatError, match="more than 4096"):
        list(table_entries(sstable(items, restart_interval=16), "t"))


def test_a_graphdef_partitioned_call_opens_its_function():
    model = ox.load(DATA / "graphdef" / "functions.pb")
    calls = [n for g in model.graphs() for n in g.nodes if n.op_type == "PartitionedCall"]
    assert calls
    for node in calls:
        function = model.function_for(node)
        assert function is not None and function.name == node.attributes["f"].value.name


def test_cli_weights_and_the_explorer_take_a_saved_model(saved, capsys):
    assert main(["weights", str(saved), "--dequantize"]) == 0
    out = capsys.readouterr().out
    assert "dense/kernel" in out and "external" in out
    explorer = ox.explore(saved)
    assert explorer.model.graph.has_node("StatefulPartitionedCall")


def test_keras_optimizer_slots_and_metric_variables_all_get_their_values():
    # A Keras 2 model saved by TensorFlow after one epoch of Adam: 20 VarHandleOps, the
    # three metrics each own a "total" and a "count" (uniquified total_1, total_2 in
    # the graph, plain "total" in the object graph).
    model = ox.load(TF_DATA / "keras_adam")
    variables = [n for n in model.graph.nodes if n.op_type == "VarHandleOp"]
    assert len(variables) == 20
    missing = [n.name for n in variables if n.outputs[0] not in model.graph.initializers]
    assert missing == []
    want = EXPECTED["keras_adam"]
    for node in variables:
        key = node.metadata_props["checkpoint key"]
        got = model.graph.initializers[node.outputs[0]].numpy()
        np.testing.assert_array_equal(got.reshape(-1), want[key]["values"], err_msg=key)
    by_key = {n.metadata_props["checkpoint key"]: n.name for n in variables}
    assert by_key["keras_api/metrics/1/total/.ATTRIBUTES/VARIABLE_VALUE"] == "total_1"
    assert by_key["keras_api/metrics/2/count/.ATTRIBUTES/VARIABLE_VALUE"] == "count_2"
