"""The format-neutral model wrapper over ONNX files."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from builders import LOCAL_FUNCTION_MODEL, mlp, nested_if
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox


@pytest.fixture
def mlp_path(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    return path


def test_metadata(mlp_path):
    model = ox.load(mlp_path)
    assert model.format == "onnx"
    assert model.ir_version == mlp().ir_version
    assert model.opset_imports == {"": 17}
    assert model.producer_name == "tests" and model.producer_version == "1.0"
    assert model.doc_string == "a two-layer perceptron"
    assert model.metadata_props == {"author": "tests", "license": "none"}
    assert model.path == mlp_path


@pytest.mark.parametrize("kind", ["path", "str", "proto", "bytes"])
def test_every_source_gives_the_same_model(mlp_path, kind):
    source = {
        "path": mlp_path,
        "str": str(mlp_path),
        "proto": mlp(),
        "bytes": mlp_path.read_bytes(),
    }[kind]
    model = ox.load(source)
    assert [n.name for n in model.graph.nodes] == [
        "/layer1/MatMul",
        "/layer1/Add",
        "/layer1/Relu",
        "/layer2/MatMul",
    ]
    expected = numpy_helper.to_array(mlp().graph.initializer[0])
    np.testing.assert_array_equal(model.graph.initializers["/layer1/W"].numpy(), expected)


def test_graph_lookups(mlp_path):
    graph = ox.load(mlp_path).graph
    assert graph.path == "/"
    add = graph.node("/layer1/Add")
    assert add.op_type == "Add" and add.inputs == ("h0", "/layer1/b") and add.outputs == ("h1",)
    assert graph.producer("h1") is add
    assert graph.producer("x") is None
    assert [n.name for n in graph.consumers("h1")] == ["/layer1/Relu"]
    assert graph.consumers("nothing") == ()
    assert graph.op_counts() == {"MatMul": 2, "Add": 1, "Relu": 1}
    assert [v.name for v in graph.inputs] == ["x"]
    assert graph.inputs[0].shape == ("batch", 4)
    assert graph.inputs[0].type == "float32" and graph.inputs[0].dtype == "float32"
    assert graph.value("h1").shape == ("batch", 8)
    assert graph.value("/layer2/W").shape == (8, 3)
    with pytest.raises(KeyError, match="no node named"):
        graph.node("missing")


def test_nodes_without_names_get_stable_unique_names(tmp_path):
    model = mlp(with_names=False)
    model.graph.node[1].name = "MatMul_0"  # collides with the synthetic name of node 0
    first = ox.load(model).graph
    again = ox.load(model).graph
    names = [n.name for n in first.nodes]
    assert len(set(names)) == 4
    assert names == [n.name for n in again.nodes]
    assert first.node(names[0]).op_type == "MatMul"
    assert not first.nodes[0].has_file_name and first.nodes[1].has_file_name


def test_duplicate_node_names_stay_reachable():
    model = mlp()
    for node in model.graph.node:
        node.name = "same"
    graph = ox.load(model).graph
    assert len({n.name for n in graph.nodes}) == 4
    assert all(graph.node(n.name) is n for n in graph.nodes)


def test_ir3_initializers_listed_as_inputs_are_not_true_inputs():
    model = mlp()
    model.ir_version = 3
    for init in model.graph.initializer:
        model.graph.input.append(
            helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
        )
    graph = ox.load(model).graph
    assert [v.name for v in graph.inputs] == ["x"]
    assert len(graph.declared_inputs) == 4


def test_subgraphs_nested_four_deep_have_readable_paths():
    model = ox.load(nested_if(4))
    paths = [g.path for g in model.graphs()]
    assert paths[0] == "/"
    assert "/If/then_branch" in paths and "/If/else_branch" in paths
    deepest = "/If/then_branch/level1/If/then_branch/level2/If/then_branch/level3/If/then_branch"
    assert deepest in paths
    inner = model.graph_at(deepest)
    assert inner.parent is not None and inner.parent.op_type == "If"
    assert inner.parent.graph is model.graph_at(deepest.rsplit("/level3", 1)[0])
    assert len(paths) == 1 + 2 * 4
    # Constant-node weights inside every body are found, with no initializer anywhere.
    weights = list(model.weights())
    assert len(weights) == 8 and all(w.kind == "constant" for w in weights)
    values = {float(w.tensor.numpy()[0, 0]) for w in weights}
    assert values == {1.0, 2.0, 3.0, 4.0}


def test_local_functions():
    model = ox.load(onnx.parser.parse_model(LOCAL_FUNCTION_MODEL))
    (function,) = model.functions
    assert (function.domain, function.name) == ("custom.domain", "Square")
    call = model.graph.nodes[0]
    assert model.function_for(call) is function
    assert [n.op_type for n in function.graph.nodes] == ["Mul"]
    assert [v.name for v in function.graph.inputs] == ["X"]
    assert function.graph.path in [g.path for g in model.graphs()]
    assert model.opset_imports == {"": 17, "custom.domain": 1}


def test_every_attribute_type_is_decoded():
    tensor = numpy_helper.from_array(np.array([1.5, 2.5], dtype=np.float32), "t")
    sub = helper.make_graph([], "sub", [], [])
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([7.0], dtype=np.float32), "sv"),
        numpy_helper.from_array(np.array([3], dtype=np.int64), "si"),
        [5],
    )
    type_proto = helper.make_tensor_type_proto(TensorProto.INT64, ["n"])
    node = helper.make_node(
        "Custom",
        [],
        ["out"],
        name="n",
        domain="com.acme",
        f=0.5,
        i=3,
        s="text",
        t=tensor,
        g=sub,
        sp=sparse,
        tp=type_proto,
        fs=[1.0, 2.0],
        is_=[1, 2],
        ss=["a", "b"],
        ts=[tensor, tensor],
        gs=[sub, sub],
        sps=[sparse],
        tps=[type_proto],
    )
    graph = helper.make_graph([node], "g", [], [])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.acme", 1)]
    )
    attrs = ox.load(model).graph.node("n").attributes
    kinds = {name: a.kind for name, a in attrs.items()}
    assert kinds == {
        "f": "FLOAT",
        "i": "INT",
        "s": "STRING",
        "t": "TENSOR",
        "g": "GRAPH",
        "sp": "SPARSE_TENSOR",
        "tp": "TYPE_PROTO",
        "fs": "FLOATS",
        "is_": "INTS",
        "ss": "STRINGS",
        "ts": "TENSORS",
        "gs": "GRAPHS",
        "sps": "SPARSE_TENSORS",
        "tps": "TYPE_PROTOS",
    }
    assert attrs["f"].value == 0.5 and attrs["i"].value == 3 and attrs["s"].value == "text"
    np.testing.assert_array_equal(attrs["t"].value.numpy(), [1.5, 2.5])
    assert isinstance(attrs["g"].value, ox.Graph)
    assert attrs["sp"].value.shape == (5,)
    np.testing.assert_array_equal(attrs["sp"].value.indices.numpy(), [3])
    assert attrs["tp"].value == "int64"
    assert attrs["fs"].value == (1.0, 2.0) and attrs["is_"].value == (1, 2)
    assert attrs["ss"].value == ("a", "b")
    assert len(attrs["ts"].value) == 2 and len(attrs["gs"].value) == 2
    assert attrs["tps"].value == ("int64",)


def test_value_types_beyond_tensors():
    seq_map = helper.make_sequence_type_proto(
        helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(1, []))
    )
    optional = helper.make_optional_type_proto(helper.make_tensor_type_proto(7, ["seq"]))
    sparse = helper.make_sparse_tensor_type_proto(TensorProto.FLOAT, [10, 10])
    graph = helper.make_graph(
        [helper.make_node("ZipMap", ["x"], ["probs"], domain="ai.onnx.ml", classlabels_int64s=[0])],
        "sk",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1]),
            helper.make_value_info("opt", optional),
            helper.make_value_info("sp", sparse),
        ],
        [helper.make_value_info("probs", seq_map)],
    )
    model = ox.load(
        helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
        )
    )
    assert model.graph.outputs[0].type == "seq(map(int64, float32))"
    assert model.graph.outputs[0].dtype is None
    x, opt, sp = model.graph.inputs
    assert x.shape == ("batch", 1)
    assert opt.type == "optional(int64)"
    assert sp.type == "sparse_tensor(float32)" and sp.shape == (10, 10)
    assert model.graph.nodes[0].qualified_op == "ai.onnx.ml::ZipMap"


def test_embedded_weights_are_located_not_copied(tmp_path):
    big = np.arange(1 << 20, dtype=np.float32)  # 4 MB
    graph = helper.make_graph(
        [helper.make_node("Identity", ["w"], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1 << 20])],
        [numpy_helper.from_array(big, "w")],
    )
    path = tmp_path / "big.onnx"
    onnx.save(helper.make_model(graph), path)
    model = ox.load(path)
    tensor = model.graph.initializers["w"]
    assert tensor.location.kind == "embedded"
    assert tensor.location.length == big.nbytes
    raw = path.read_bytes()
    offset = tensor.location.offset
    assert raw[offset : offset + 64] == big.tobytes()[:64]
    # What protobuf parsed holds the structure only, not the 4 MB of weights.
    assert model.support._proto.ByteSize() < 10_000  # the reader's parsed proto
    np.testing.assert_array_equal(tensor.numpy(), big)
    assert not tensor.numpy().flags.writeable  # a view of the read-only map


def test_parsed_model_keeps_small_tensors_and_constants(tmp_path):
    model = mlp()
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    loaded = ox.load(path)
    np.testing.assert_array_equal(loaded.graph.initializers["/layer1/b"].numpy(), np.arange(8))


DTYPE_CASES = [
    (TensorProto.FLOAT16, np.array([1.5, -2.0, 65504.0], dtype=np.float16)),
    (TensorProto.DOUBLE, np.array([1.0, 2.0**60], dtype=np.float64)),
    (TensorProto.INT8, np.array([-128, 0, 127], dtype=np.int8)),
    (TensorProto.UINT64, np.array([0, 2**64 - 1], dtype=np.uint64)),
    (TensorProto.BOOL, np.array([True, False, True])),
    (TensorProto.INT64, np.array([-(2**62), 5], dtype=np.int64)),
]


@pytest.mark.parametrize("raw", [True, False], ids=["raw_data", "typed_fields"])
@pytest.mark.parametrize(("elem", "values"), DTYPE_CASES, ids=lambda v: str(v)[:12])
def test_plain_dtypes_roundtrip(tmp_path, elem, values, raw):
    tensor = helper.make_tensor(
        "t", elem, values.shape, values.tobytes() if raw else values.tolist(), raw=raw
    )
    loaded = _load_initializer(tmp_path, tensor)
    assert loaded.dtype == values.dtype
    np.testing.assert_array_equal(loaded.numpy(), values)


def _load_initializer(tmp_path, tensor: TensorProto) -> ox.Tensor:
    graph = helper.make_graph([], "g", [], [], [tensor])
    path = tmp_path / "t.onnx"
    onnx.save(helper.make_model(graph), path)
    return ox.load(path).graph.initializers[tensor.name]


@pytest.mark.parametrize(
    "name",
    [
        "bfloat16",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "int4",
        "uint4",
        "float4_e2m1fn",
        "int2",
        "uint2",
    ],
)
@pytest.mark.parametrize("count", [7, 600])  # odd counts exercise partial packed bytes
def test_ml_dtypes_roundtrip(tmp_path, name, count):
    import ml_dtypes

    np_type = getattr(ml_dtypes, name)
    pool = {"int4": range(-8, 8), "uint4": range(16), "int2": range(-2, 2), "uint2": range(4)}.get(
        name, [0.0, 0.5, 1.0, -2.0, 4.0, 0.25]
    )
    if name == "float8_e8m0fnu":
        pool = [0.5, 1.0, 2.0, 4.0]
    values = np.resize(np.array(list(pool)), count).astype(np_type)
    tensor = numpy_helper.from_array(values, "t")
    loaded = _load_initializer(tmp_path, tensor)
    assert loaded.dtype_name == name
    assert loaded.shape == (count,)
    assert loaded.nbytes == (count * loaded.dtype_info.bits + 7) // 8
    np.testing.assert_array_equal(loaded.numpy().astype(np.float32), values.astype(np.float32))
    chunks = np.concatenate([c.astype(np.float32) for c in loaded.iter_chunks(max_elements=8)])
    np.testing.assert_array_equal(chunks, values.astype(np.float32))


def test_string_tensor(tmp_path):
    tensor = helper.make_tensor("s", TensorProto.STRING, [2], [b"<script>", b"ok"])
    loaded = _load_initializer(tmp_path, tensor)
    assert loaded.dtype_name == "string"
    assert list(loaded.numpy()) == ["<script>", "ok"]


def test_custom_domains_and_many_opsets():
    domains = [
        "",
        "ai.onnx.ml",
        "com.microsoft",
        "com.microsoft.nchwc",
        "ai.onnx.training",
        "ai.onnx.preview.training",
        "com.ms.internal.nhwc",
        "org.pytorch.aten",
        "custom",
    ]
    nodes = [
        helper.make_node(
            "QLinearAdd",
            ["a", "s", "z", "b", "s", "z", "s", "z"],
            ["y"],
            domain="com.microsoft",
            name="/q/QLinearAdd",
        ),
    ]
    graph = helper.make_graph(nodes, "q", [], [])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, 1 if d else 21) for d in domains]
    )
    loaded = ox.load(model)
    assert len(loaded.opset_imports) == 9
    assert loaded.graph.op_counts() == {"com.microsoft::QLinearAdd": 1}


def test_size_mismatch_breaks_only_that_tensor(tmp_path):
    model = mlp()
    bad = model.graph.initializer[0]
    bad.raw_data = bad.raw_data[:-4]  # one float short
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    loaded = ox.load(path)
    with pytest.raises(ox.TensorDataError, match="/layer1/W"):
        loaded.graph.initializers["/layer1/W"].numpy()
    assert loaded.graph.initializers["/layer2/W"].numpy().shape == (8, 3)


def test_astronomical_dims_cost_nothing_until_read(tmp_path):
    tensor = TensorProto(name="huge", data_type=TensorProto.FLOAT, dims=[2**40, 2**40, 2**40])
    tensor.raw_data = b"\0" * 4
    loaded = _load_initializer(tmp_path, tensor)
    assert loaded.size == 2**120  # Python int, no overflow
    with pytest.raises(ox.TensorDataError, match="huge"):
        loaded.numpy()


def test_negative_dims_are_an_error_for_that_tensor(tmp_path):
    tensor = TensorProto(name="neg", data_type=TensorProto.FLOAT, dims=[-3, 2])
    loaded = _load_initializer(tmp_path, tensor)
    with pytest.raises(ox.TensorDataError, match="neg"):
        loaded.numpy()


@pytest.mark.parametrize(
    "content",
    [b"", b"\x08", b"garbage that is not protobuf \xff\xff\xff", b"\x3a\xff\xff\xff\x0f"],
    ids=["empty", "truncated-varint", "garbage", "length-past-end"],
)
def test_corrupt_files_raise_model_format_error(tmp_path, content):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(ox.ModelFormatError, match="bad.onnx"):
        ox.load(path)


def test_truncated_model_file(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(mlp(), path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ox.ModelFormatError):
        ox.load(path)


def test_missing_and_non_file_paths(tmp_path):
    with pytest.raises(ox.ModelFormatError, match="does not exist"):
        ox.load(tmp_path / "nope.onnx")
    with pytest.raises(ox.ModelFormatError, match="not a regular file"):
        ox.load(tmp_path)
    with pytest.raises(TypeError):
        ox.load(12345)


def test_model_is_read_only(mlp_path):
    model = ox.load(mlp_path)
    with pytest.raises(TypeError):
        model.graph.initializers["x"] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        model.metadata_props["k"] = "v"  # type: ignore[index]
    before = mlp_path.read_bytes()
    model.graph.initializers["/layer1/W"].numpy()
    model.close()
    assert mlp_path.read_bytes() == before


@pytest.mark.parametrize("ir_version", range(3, 12))
def test_ir_versions_3_to_11(tmp_path, ir_version):
    opset = {3: 8, 4: 9, 5: 10, 6: 11, 7: 13, 8: 15, 9: 19, 10: 21, 11: 23}[ir_version]
    model = mlp()
    model.ir_version = ir_version
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", opset))
    if ir_version < 4:  # IR 3 lists initializers among the inputs
        for init in model.graph.initializer:
            model.graph.input.append(
                helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            )
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    loaded = ox.load(path)
    assert loaded.ir_version == ir_version and loaded.opset_imports == {"": opset}
    assert [v.name for v in loaded.graph.inputs] == ["x"]
    assert loaded.graph.initializers["/layer1/b"].numpy().tolist() == list(range(8))


def test_opset_1_model():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "old",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 1)])
    model.ir_version = 3
    loaded = ox.load(model.SerializeToString())
    assert loaded.opset_imports == {"": 1} and loaded.graph.op_counts() == {"Relu": 1}


def test_string_tensor_with_invalid_utf8(tmp_path):
    tensor = helper.make_tensor("s", TensorProto.STRING, [2], [b"\xff\xfe", b"ok"])
    loaded = _load_initializer(tmp_path, tensor)
    assert list(loaded.numpy()) == ["\ufffd\ufffd", "ok"]


def test_constants_in_every_form_are_weights():
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["f"], value_floats=[1.0, 2.5]),
            helper.make_node("Constant", [], ["i"], value_int=7),
            helper.make_node("Constant", [], ["s"], value_strings=["a", "<b>"]),
            helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.ones(3, np.float16))),
            helper.make_node("Sum", ["f", "t"], ["y"]),
        ],
        "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    model = ox.load(helper.make_model(graph))
    constants = model.graph.constants()
    assert constants["f"].numpy().tolist() == [1.0, 2.5] and constants["f"].dtype_name == "float32"
    assert constants["i"].numpy().tolist() == 7 and constants["i"].shape == ()
    assert constants["s"].numpy().tolist() == ["a", "<b>"]
    assert constants["t"].dtype_name == "float16"
    assert [(w.kind, w.tensor.name) for w in model.weights()] == [
        ("constant", "f"),
        ("constant", "i"),
        ("constant", "s"),
        ("constant", "t"),
    ]


def test_summary_counts_every_weight(tmp_path):
    from onnx_explorer.summary import summarize
    from onnx_explorer.views._summary_text import format_summary

    model = ox.load(nested_if(2))
    info = summarize(model)
    assert info["tensors"] == 4 and info["initializers"] == 0
    assert "4 tensors (0 initializers)" in format_summary(info)
