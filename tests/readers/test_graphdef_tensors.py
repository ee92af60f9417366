"""GraphDef tensors: every DataType, TensorFlow's fill rule, lazy reads and bad sizes."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import onnx_explorer as ox
from onnx_explorer.readers.tensorflow.graphdef import _proto as pb
from onnx_explorer.readers.tensorflow.graphdef._read import tf_dtype
from onnx_explorer.summary import summarize

DT = pb.DataType


def _tensor_proto(dtype: str, shape: tuple[int, ...], **fields) -> object:
    tp = pb.TensorProto(dtype=DT.Value(dtype))
    tp.tensor_shape.dim.extend([pb.TensorShapeProto.Dim(size=d) for d in shape])
    for key, value in fields.items():
        if key in ("tensor_content", "float8_val"):
            setattr(tp, key, value)
        else:
            getattr(tp, key).extend(value)
    return tp


def _const_graph(*tensors: tuple[str, object]) -> object:
    graph = pb.GraphDef()
    for name, tp in tensors:
        node = graph.node.add(name=name, op="Const")
        node.attr["dtype"].type = tp.dtype
        node.attr["value"].tensor.CopyFrom(tp)
    return graph


def _load(*tensors: tuple[str, object], tmp_path: Path | None = None) -> ox.Model:
    data = _const_graph(*tensors).SerializeToString()
    if tmp_path is None:
        return ox.load(data)
    path = tmp_path / "g.pb"
    path.write_bytes(data)
    return ox.load(path)


def _one(dtype: str, shape: tuple[int, ...], **fields) -> ox.Tensor:
    return _load(("t", _tensor_proto(dtype, shape, **fields))).graph.initializers["t"]


@pytest.mark.parametrize(
    ("dtype", "field", "stored", "expected_dtype", "expected"),
    [
        ("DT_FLOAT", "float_val", [1.5, -2.0], "float32", [1.5, -2.0]),
        ("DT_DOUBLE", "double_val", [0.1, 0.2], "float64", [0.1, 0.2]),
        ("DT_INT32", "int_val", [-5, 7], "int32", [-5, 7]),
        ("DT_UINT8", "int_val", [255, 1], "uint8", [255, 1]),
        ("DT_INT16", "int_val", [-300, 300], "int16", [-300, 300]),
        ("DT_INT8", "int_val", [-128, 127], "int8", [-128, 127]),
        ("DT_UINT16", "int_val", [65535, 0], "uint16", [65535, 0]),
        ("DT_INT64", "int64_val", [-(2**40), 3], "int64", [-(2**40), 3]),
        ("DT_UINT32", "uint32_val", [2**32 - 1, 3], "uint32", [2**32 - 1, 3]),
        ("DT_UINT64", "uint64_val", [2**64 - 1, 3], "uint64", [2**64 - 1, 3]),
        ("DT_BOOL", "bool_val", [True, False], "bool", [True, False]),
        ("DT_QINT8", "int_val", [-3, 4], "int8", [-3, 4]),
        ("DT_QUINT8", "int_val", [200, 4], "uint8", [200, 4]),
        ("DT_QINT32", "int_val", [-70000, 4], "int32", [-70000, 4]),
        ("DT_QINT16", "int_val", [-3, 4], "int16", [-3, 4]),
        ("DT_QUINT16", "int_val", [60000, 4], "uint16", [60000, 4]),
        ("DT_INT4", "int_val", [-8, 7], "int4", [-8, 7]),
        ("DT_UINT4", "int_val", [15, 1], "uint4", [15, 1]),
        ("DT_STRING", "string_val", [b"ab", b"\xff"], "string", [b"ab", b"\xff"]),
    ],
)
def test_typed_values_of_every_kind(dtype, field, stored, expected_dtype, expected) -> None:
    tensor = _one(dtype, (2,), **{field: stored})
    assert tensor.dtype_name == expected_dtype
    assert tensor.location.kind == "typed"
    assert tensor.numpy().tolist() == expected


def test_half_bfloat16_complex_and_float8() -> None:
    halves = np.array([1.5, -2.0], np.float16).view(np.uint16).tolist()
    assert _one("DT_HALF", (2,), half_val=halves).numpy().tolist() == [1.5, -2.0]
    bf = np.array([3.0, 0.5], ml_dtypes.bfloat16).view(np.uint16).tolist()
    tensor = _one("DT_BFLOAT16", (2,), half_val=bf)
    assert tensor.dtype_name == "bfloat16"
    assert tensor.numpy().astype(np.float32).tolist() == [3.0, 0.5]
    c = _one("DT_COMPLEX64", (2,), scomplex_val=[1, 2, 3, 4]).numpy()
    assert c.tolist() == [1 + 2j, 3 + 4j]
    c = _one("DT_COMPLEX128", (3,), dcomplex_val=[1, -1]).numpy()
    assert c.tolist() == [1 - 1j] * 3
    f8 = np.array([1.0, -0.5], ml_dtypes.float8_e4m3fn).tobytes()
    tensor = _one("DT_FLOAT8_E4M3FN", (2,), float8_val=f8)
    assert tensor.dtype_name == "float8_e4m3fn"
    assert tensor.numpy().astype(np.float32).tolist() == [1.0, -0.5]


@pytest.mark.parametrize("where", ["memory", "file"])
def test_tensor_content_in_memory_and_in_files(tmp_path: Path, where: str) -> None:
    big = np.arange(1000, dtype=np.float32).reshape(10, 100)  # 4000 bytes: found in the file
    small = np.array([[1, 2], [3, 4]], dtype=np.int64)
    half = np.linspace(0, 1, 300).astype(np.float16)
    model = _load(
        ("big", _tensor_proto("DT_FLOAT", big.shape, tensor_content=big.tobytes())),
        ("small", _tensor_proto("DT_INT64", small.shape, tensor_content=small.tobytes())),
        ("half", _tensor_proto("DT_HALF", half.shape, tensor_content=half.tobytes())),
        tmp_path=tmp_path if where == "file" else None,
    )
    inits = model.graph.initializers
    np.testing.assert_array_equal(inits["big"].numpy(), big)
    np.testing.assert_array_equal(inits["small"].numpy(), small)
    np.testing.assert_array_equal(inits["half"].numpy(), half)
    if where == "file":
        assert inits["big"].location.offset is not None
        assert not inits["big"].numpy().flags.writeable  # a view of the mapped file
    chunks = list(inits["big"].iter_chunks(max_elements=300))
    assert [c.size for c in chunks] == [300, 300, 300, 100]
    model.close()


def test_fewer_values_than_elements_repeat_the_last_one() -> None:
    assert _one("DT_FLOAT", (5,), float_val=[1, 2]).numpy().tolist() == [1, 2, 2, 2, 2]
    assert _one("DT_INT32", (2, 2), int_val=[]).numpy().tolist() == [[0, 0], [0, 0]]
    assert _one("DT_STRING", (3,), string_val=[b"x"]).numpy().tolist() == [b"x"] * 3
    assert _one("DT_STRING", (2,)).numpy().tolist() == [b"", b""]
    assert _one("DT_BOOL", (3,), bool_val=[True]).numpy().tolist() == [True] * 3
    scalar = _one("DT_FLOAT", (), float_val=[4])
    assert scalar.shape == () and scalar.numpy() == 4
    chunks = list(_one("DT_FLOAT", (10,), float_val=[1, 2, 3]).iter_chunks(max_elements=4))
    assert [c.tolist() for c in chunks] == [[1, 2, 3], [3, 3, 3, 3], [3, 3, 3]]


def test_a_huge_fill_is_never_materialised() -> None:
    tensor = _one("DT_FLOAT", (100_000, 100_000), float_val=[0.5])  # 40 GB if dense
    assert tensor.nbytes == 40_000_000_000
    tracemalloc.start()
    try:
        values = tensor.numpy()
        first = next(tensor.iter_chunks())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert values.shape == (100_000, 100_000) and values[12_345, 67_890] == 0.5
    assert values.strides == (0, 0) and first.strides == (0,)
    assert peak < 1_000_000


def test_a_huge_partial_fill_streams_but_is_not_materialised() -> None:
    tensor = _one("DT_FLOAT", (100_000, 100_000), float_val=[1, 2])
    with pytest.raises(ox.TensorDataError, match="in chunks"):
        tensor.numpy()
    chunks = tensor.iter_chunks()
    assert next(chunks).tolist() == [1, 2]
    assert next(chunks).strides == (0,)


def test_statistics_of_a_fill_stream_in_small_blocks() -> None:
    tensor = _one("DT_FLOAT", (30_000, 1000), float_val=[1, 2, 3])  # 120 MB if dense
    tracemalloc.start()
    try:
        stats = tensor.stats()
        hist = tensor.histogram(bins=4)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert stats.count == 30_000_000
    assert stats.min == 1 and stats.max == 3
    assert stats.mean == pytest.approx((1 + 2 + 3 * 29_999_998) / 30_000_000)
    assert hist.total == 30_000_000
    assert peak < tensor.nbytes // 4


def test_element_types_without_values_fail_only_when_read() -> None:
    model = _load(
        ("res", _tensor_proto("DT_RESOURCE", (1,))),
        ("var", _tensor_proto("DT_VARIANT", ())),
        ("bad", _tensor_proto("DT_INVALID", (2,))),
        ("ok", _tensor_proto("DT_FLOAT", (1,), float_val=[1])),
    )
    inits = model.graph.initializers
    assert inits["res"].dtype_name == "resource"
    assert inits["var"].dtype_name == "variant"
    for name in ("res", "var", "bad"):
        with pytest.raises(ox.TensorDataError, match=name):
            inits[name].numpy()
    assert inits["ok"].numpy().tolist() == [1.0]
    assert summarize(model)["initializers"] == 4


def test_reference_types_read_as_their_base_type() -> None:
    assert tf_dtype(DT.Value("DT_FLOAT_REF")).name == "float32"
    assert tf_dtype(DT.Value("DT_QUINT8_REF")).name == "uint8"
    assert not tf_dtype(999).is_numeric


@pytest.mark.parametrize(
    ("shape", "fields", "message"),
    [
        ((3,), {"tensor_content": b"\0" * 8}, "8 bytes of data but float32 with 3 elements"),
        ((2, 2), {"float_val": [1, 2, 3, 4, 5]}, "5 values stored but its shape has only 4"),
        ((4, -2), {"float_val": [1]}, "negative dimension"),
        ((-1,), {"tensor_content": b"\0" * 4}, "negative dimension"),
        ((2**40, 2**40), {"float_val": [1]}, "far more than any file can hold"),
        ((2**62, 2**62), {"tensor_content": b"\0" * 4}, "far more than any file can hold"),
    ],
)
def test_sizes_that_disagree_with_the_shape(tmp_path: Path, shape, fields, message) -> None:
    bad = _tensor_proto("DT_FLOAT", shape, **fields)
    good = _tensor_proto("DT_FLOAT", (2,), float_val=[7])
    model = _load(("bad", bad), ("good", good), tmp_path=tmp_path)
    summarize(model)  # the model still opens and summarises
    with pytest.raises(ox.TensorDataError, match=message):
        model.graph.initializers["bad"].numpy()
    with pytest.raises(ox.TensorDataError):
        model.graph.initializers["bad"].stats()
    assert model.graph.initializers["good"].numpy().tolist() == [7, 7]
    model.close()


def test_odd_complex_parts_and_unknown_rank_are_tensor_errors() -> None:
    with pytest.raises(ox.TensorDataError, match="pairs"):
        _one("DT_COMPLEX64", (2,), scomplex_val=[1, 2, 3]).numpy()
    tp = _tensor_proto("DT_FLOAT", (), float_val=[1])
    tp.tensor_shape.unknown_rank = True
    tensor = _load(("t", tp)).graph.initializers["t"]
    with pytest.raises(ox.TensorDataError, match="unknown rank"):
        tensor.numpy()


def test_string_tensor_content_is_refused() -> None:
    tensor = _one("DT_STRING", (1,), tensor_content=b"abcd")
    with pytest.raises(ox.TensorDataError, match="string"):
        tensor.numpy()
