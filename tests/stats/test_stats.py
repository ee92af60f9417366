"""Streaming statistics and histograms: every dtype against numpy, chunked against one-shot."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from builders import set_external
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.dtypes import dtype
from onnx_explorer.stats import (
    SAMPLE_SIZE,
    Histogram,
    TensorStats,
    array_histogram,
    array_stats,
)

RNG = np.random.default_rng(42)


def _model_with(*tensors: onnx.TensorProto) -> onnx.ModelProto:
    nodes = [helper.make_node("Identity", [t.name], [f"{t.name}_out"]) for t in tensors]
    graph = helper.make_graph(
        nodes,
        "g",
        [],
        [helper.make_tensor_value_info(f"{t.name}_out", t.data_type, None) for t in tensors],
        list(tensors),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _load_tensor(tmp_path, array: np.ndarray, name: str = "w", external: bool = False):
    proto = numpy_helper.from_array(array, name)
    if external:
        (tmp_path / "w.bin").write_bytes(proto.raw_data)
        set_external(proto, location="w.bin")
    path = tmp_path / "m.onnx"
    onnx.save(_model_with(proto), path)
    model = ox.load(path)
    return model.graph.initializers[name]


def _reference(values: np.ndarray) -> dict:
    x = np.asarray(values).astype(np.float64).reshape(-1)
    finite = x[np.isfinite(x)]
    return {
        "count": x.size,
        "min": finite.min(),
        "max": finite.max(),
        "mean": finite.mean(),
        "std": finite.std(),
        "abs_max": np.abs(finite).max(),
        "zeros": float(np.mean(x == 0)),
        "nan": int(np.isnan(x).sum()),
        "inf": int(np.isinf(x).sum()),
        "percentiles": np.percentile(finite, [1, 50, 99]),
    }


def _assert_matches(stats: TensorStats, values: np.ndarray, exact_percentiles: bool = True):
    ref = _reference(values)
    assert stats.count == ref["count"]
    assert stats.nan == ref["nan"] and stats.inf == ref["inf"]
    assert stats.min == ref["min"] and stats.max == ref["max"]
    assert stats.abs_max == ref["abs_max"]
    assert stats.zeros == pytest.approx(ref["zeros"], abs=1e-12)
    assert stats.mean == pytest.approx(ref["mean"], rel=1e-9, abs=1e-12)
    assert stats.std == pytest.approx(ref["std"], rel=1e-9, abs=1e-12)
    if exact_percentiles:
        assert stats.exact_percentiles
        np.testing.assert_allclose(
            [stats.p1, stats.p50, stats.p99], ref["percentiles"], rtol=1e-9, atol=1e-12
        )


# Values each dtype can hold exactly (so that the reference sees the same numbers).
def _values(dtype_name: str, count: int) -> np.ndarray:
    if dtype_name == "bool":
        return RNG.random(count) < 0.3
    np_type = dtype(dtype_name).numpy
    if dtype_name.startswith(("int", "uint")):
        info = ml_dtypes.iinfo(np_type)
        kind = np.uint64 if dtype_name == "uint64" else np.int64
        values = RNG.integers(int(info.min), int(info.max), count, endpoint=True, dtype=kind)
        return values.astype(np_type)
    if dtype_name == "float8_e8m0fnu":  # powers of two only, no zero
        return (2.0 ** RNG.integers(-20, 20, count)).astype(np_type)
    scale = {"float4_e2m1fn": 2.0, "float6_e2m3fn": 2.0, "float6_e3m2fn": 8.0}.get(dtype_name, 3.0)
    values = (RNG.standard_normal(count) * scale).astype(np_type)
    values[:7] = 0  # some zeros
    return values


NUMERIC = [
    "float32", "float64", "float16", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
    "float4_e2m1fn", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "int4", "uint4", "int2", "uint2", "bool",
]  # fmt: skip


@pytest.mark.parametrize("dtype_name", NUMERIC)
def test_stats_match_numpy_on_every_dtype(tmp_path, dtype_name):
    values = _values(dtype_name, 1001)  # odd: packed types end on a half-filled byte
    tensor = _load_tensor(tmp_path, values)
    assert tensor.dtype_name == dtype_name
    one_shot = tensor.stats()
    _assert_matches(one_shot, values)
    # Chunks much smaller than the tensor (and not a multiple of a packed byte group).
    chunked = tensor.stats(chunk_elements=61)
    assert chunked.min == one_shot.min and chunked.max == one_shot.max
    assert chunked.mean == pytest.approx(one_shot.mean, rel=1e-12, abs=1e-15)
    assert chunked.std == pytest.approx(one_shot.std, rel=1e-12, abs=1e-15)
    assert (chunked.p1, chunked.p50, chunked.p99) == (one_shot.p1, one_shot.p50, one_shot.p99)
    assert chunked.zeros == one_shot.zeros


@pytest.mark.parametrize("dtype_name", NUMERIC)
def test_histogram_matches_numpy_on_every_dtype(tmp_path, dtype_name):
    values = _values(dtype_name, 1001)
    tensor = _load_tensor(tmp_path, values)
    hist = tensor.histogram(bins=16)
    ref = np.asarray(values).astype(np.float64)
    finite = ref[np.isfinite(ref)]
    expected, _ = np.histogram(finite, bins=hist.edges)
    np.testing.assert_array_equal(hist.counts, expected)
    assert hist.total == values.size
    assert hist.counts.sum() == finite.size
    np.testing.assert_array_equal(tensor.histogram(bins=16, chunk_elements=61).counts, hist.counts)


def test_integer_stats_are_exact_ints():
    stats = array_stats(np.array([-128, 127, 5], np.int8))
    assert stats.min == -128 and isinstance(stats.min, int)
    assert stats.abs_max == 128  # not int8's wrapped abs(-128) == -128
    assert not stats.is_float
    big = np.array([2**63 - 1, 0], np.int64)
    assert array_stats(big).max == 2**63 - 1


def test_bool_counts_as_zero_and_one():
    stats = array_stats(np.array([True, False, False, True]))
    assert (stats.min, stats.max, stats.mean, stats.zeros) == (0, 1, 0.5, 0.5)
    hist = array_histogram(np.array([True, False, False, True]), bins=10)
    np.testing.assert_array_equal(hist.counts, [2, 2])  # one bin per value
    np.testing.assert_array_equal(hist.edges, [-0.5, 0.5, 1.5])


def test_nan_and_inf_are_counted_not_summarised():
    values = np.array([1.0, np.nan, 3.0, np.inf, -np.inf, 0.0, np.nan], np.float32)
    stats = array_stats(values)
    assert (stats.nan, stats.inf, stats.finite) == (2, 2, 3)
    assert (stats.min, stats.max, stats.abs_max) == (0.0, 3.0, 3.0)
    assert stats.mean == pytest.approx(4 / 3)
    assert stats.zeros == pytest.approx(1 / 7)
    hist = array_histogram(values, bins=3)
    assert (hist.nan, hist.underflow, hist.overflow) == (2, 1, 1)
    np.testing.assert_array_equal(hist.counts, [1, 1, 1])
    assert hist.total == values.size


def test_only_non_finite_values_and_empty_tensors():
    stats = array_stats(np.array([np.nan, np.inf], np.float32))
    assert stats.min is None and stats.mean is None and stats.p50 is None
    assert (stats.nan, stats.inf, stats.count) == (1, 1, 2)
    empty = array_stats(np.zeros((0, 3), np.float32))
    assert empty.count == 0 and empty.max is None and empty.zeros == 0.0
    hist = array_histogram(np.zeros(0, np.float32), bins=4)
    assert hist.total == 0 and hist.edges[0] == 0.0 and hist.edges[-1] == 1.0


def test_constant_tensor_gets_a_unit_range_like_numpy():
    hist = array_histogram(np.full(10, 2.5, np.float32), bins=5)
    expected_counts, expected_edges = np.histogram(np.full(10, 2.5), bins=5)
    np.testing.assert_array_equal(hist.counts, expected_counts)
    np.testing.assert_allclose(hist.edges, expected_edges)
    assert array_stats(np.full(10, 2.5, np.float32)).std == 0.0


def test_explicit_range_counts_values_outside():
    values = RNG.standard_normal(5000)
    hist = array_histogram(values, bins=20, range=(-1.0, 1.0))
    expected, edges = np.histogram(values, bins=20, range=(-1.0, 1.0))
    np.testing.assert_array_equal(hist.counts, expected)
    np.testing.assert_allclose(hist.edges, edges)
    assert hist.underflow == np.sum(values < -1) and hist.overflow == np.sum(values > 1)
    # A value equal to the upper edge is in the last bin, as with numpy.
    edge = array_histogram(np.array([0.0, 1.0]), bins=2, range=(0, 1))
    np.testing.assert_array_equal(edge.counts, [1, 1])
    assert edge.overflow == 0


def test_integer_histogram_bins_are_integer_aligned():
    values = np.arange(-128, 128, dtype=np.int8)
    hist = array_histogram(values, bins=100)  # 256 values: 86 bins of 3 integers
    assert hist.bins == 86
    assert set(hist.counts[:-1].tolist()) == {3}
    assert np.all(np.diff(hist.edges) == 3)
    assert hist.edges[0] == -128.5


def test_histogram_log_flag_and_bad_arguments():
    assert array_histogram(np.arange(5.0), log=True).log
    with pytest.raises(ValueError):
        array_histogram(np.arange(5.0), bins=0)
    with pytest.raises(ValueError):
        array_histogram(np.arange(5.0), range=(2.0, 1.0))
    with pytest.raises(ValueError):
        array_histogram(np.arange(5.0), range=(0.0, np.inf))


@pytest.mark.parametrize("dtype_name", ["string", "complex64"])
def test_non_numeric_tensors_raise_a_clear_error(tmp_path, dtype_name):
    if dtype_name == "string":
        proto = helper.make_tensor("w", TensorProto.STRING, [2], [b"a", b"b"])
    else:
        proto = numpy_helper.from_array(np.array([1 + 2j], np.complex64), "w")
    path = tmp_path / "m.onnx"
    onnx.save(_model_with(proto), path)
    tensor = ox.load(path).graph.initializers["w"]
    with pytest.raises(ox.TensorDataError, match="'w'"):
        tensor.stats()
    with pytest.raises(ox.TensorDataError):
        tensor.histogram()


def test_larger_than_a_chunk_external_tensor_matches_numpy(tmp_path):
    from onnx_explorer.stats import CHUNK_ELEMENTS

    values = RNG.standard_normal(CHUNK_ELEMENTS + 12345).astype(np.float32) * 0.02 + 0.5
    values[::1000] = 0
    values[17] = np.nan
    tensor = _load_tensor(tmp_path, values, external=True)
    assert tensor.is_external
    stats = tensor.stats()
    _assert_matches(stats, values, exact_percentiles=False)
    # Percentiles come from a sample: check their rank in the full data.
    finite = np.sort(values[np.isfinite(values)].astype(np.float64))
    assert not stats.exact_percentiles
    for p, estimate in ((1, stats.p1), (50, stats.p50), (99, stats.p99)):
        rank = np.searchsorted(finite, estimate) / finite.size * 100
        assert abs(rank - p) < 0.5, (p, rank)
    small_chunks = tensor.stats(chunk_elements=100_003)
    assert small_chunks.min == stats.min and small_chunks.max == stats.max
    assert small_chunks.std == pytest.approx(stats.std, rel=1e-12)
    hist = tensor.histogram(bins=50)
    np.testing.assert_array_equal(
        hist.counts, tensor.histogram(bins=50, chunk_elements=99_999).counts
    )
    expected, _ = np.histogram(finite, bins=hist.edges)
    np.testing.assert_array_equal(hist.counts, expected)
    assert hist.nan == 1


def test_sources_agree(tmp_path):
    values = RNG.standard_normal((30, 7)).astype(np.float32)
    typed = helper.make_tensor("w", TensorProto.FLOAT, values.shape, values.reshape(-1).tolist())
    path = tmp_path / "typed.onnx"
    onnx.save(_model_with(typed), path)
    from_typed = ox.load(path).graph.initializers["w"]
    from_proto = ox.load(_model_with(numpy_helper.from_array(values, "w"))).graph.initializers["w"]
    embedded = _load_tensor(tmp_path, values)
    for tensor in (from_typed, from_proto, embedded):
        _assert_matches(tensor.stats(chunk_elements=50), values)
        np.testing.assert_array_equal(
            tensor.histogram(bins=9).counts, embedded.histogram(bins=9).counts
        )


def test_stats_survive_a_loaded_array():
    tensor = ox.load(_model_with(numpy_helper.from_array(np.arange(10, dtype=np.float32), "w")))
    w = tensor.graph.initializers["w"]
    w.numpy()  # cached: streaming reads the cached array
    assert w.stats().max == 9.0


def test_to_dict_is_plain_data():
    d = array_stats(np.array([1.0, 2.0])).to_dict()
    assert d["min"] == 1.0 and d["count"] == 2 and set(d) >= {"p1", "p50", "p99", "zeros"}
    h = array_histogram(np.array([1.0, 2.0]), bins=2).to_dict()
    assert h["counts"] == [1, 1] and len(h["edges"]) == 3
    assert isinstance(array_histogram(np.array([1.0]), bins=2), Histogram)


def test_small_tensors_have_exact_percentiles():
    values = RNG.standard_normal(SAMPLE_SIZE).astype(np.float32)
    _assert_matches(array_stats(values), values)


def test_streaming_does_not_keep_mapped_pages(tmp_path):
    """Statistics of an external tensor leave the process's resident set about where it was."""
    status = "/proc/self/status"
    try:
        open(status).close()
    except OSError:
        pytest.skip("needs /proc")

    def rss_file() -> int:
        with open(status) as fh:
            for line in fh:
                if line.startswith("RssFile:"):
                    return int(line.split()[1]) * 1024
        pytest.skip("no RssFile in /proc/self/status")

    values = np.ones(16 << 20, np.float32)  # 64 MB
    tensor = _load_tensor(tmp_path, values, external=True)
    del values
    before = rss_file()
    stats = tensor.stats()
    assert stats.mean == 1.0
    assert rss_file() - before < 24 << 20
