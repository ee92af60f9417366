"""Tensor data from hostile files: each is a clear project error or a correct result.

- a file that shrinks after the model was opened (the kernel must not die of SIGBUS);
- a GraphDef "splat" of 2**46 elements (statistics in constant time, exact);
- an external-data offset or length of thousands of digits;
- string tensors whose shape has 2**124 elements.

Crashes and hangs are caught in a child process: a SIGBUS kills only the child, and a
hang ends at the child's time limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from builders import set_external, with_external_data
from onnx import TensorProto, helper

import onnx_explorer as ox
from onnx_explorer.readers.tensorflow.graphdef import _proto as pb
from onnx_explorer.stats import array_histogram, array_stats
from onnx_explorer.weights._report import weights_report

DT = pb.DataType
HANG_LIMIT = 120  # seconds: only to catch a hang (the fixed code takes about one)


def _run_child(code: str) -> str:
    """Run ``code`` in a fresh interpreter; fail on a crash (signal) or a hang."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=HANG_LIMIT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child did not finish within {HANG_LIMIT} s (a hang)")
    assert proc.returncode == 0, f"child exited with {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout


# -- 1. a file that shrinks after the model was opened -------------------------------------
BIG = "big.weight"  # 2 MiB: numpy() maps it
SMALL = "small.weight"  # 16 KiB: cut out of the file, but copied when read


def _embedded_model(path: Path) -> None:
    big = np.arange(1 << 19, dtype=np.float32).reshape(512, 1024)
    small = np.ones((64, 64), np.float32)
    graph = helper.make_graph(
        [helper.make_node("Add", [BIG, SMALL], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(big, BIG), onnx.numpy_helper.from_array(small, SMALL)],
    )
    onnx.save(helper.make_model(graph), path)


# The child opens the model and its data files, shrinks the file to 100 bytes, then tries each way of reading
# every tensor: each must be a project error naming the tensor (before the fix: SIGBUS).
_READ_AFTER_SHRINK = """
import os, sys
import onnx_explorer as ox
path, names = sys.argv[1], sys.argv[2:]
model = ox.load(path)
tensors = {**model.graph.initializers}
for tensor in tensors.values():
    tensor.check()  # every data file is open, and its size known, before it shrinks
os.truncate(os.environ["SHRINK"], 100)
reads = {
    "numpy": lambda t: float(t.numpy().sum()),
    "stats": lambda t: t.stats(),
    "histogram": lambda t: t.histogram(),
    "chunks": lambda t: [float(c.sum()) for c in t.iter_chunks()],
    "check": lambda t: t.check(),
}
for name in names:
    for how, read in reads.items():
        try:
            read(tensors[name])
        except ox.ExternalDataError as exc:
            assert name in str(exc) and "shrank" in str(exc), str(exc)
            print(how, name, "refused")
        else:
            print(how, name, "READ")
"""


def _read_after_shrink(model: Path, shrink: Path, names: list[str]) -> list[str]:
    code = f"import os, sys; sys.argv = {['x', str(model), *names]!r}\n"
    code += f"os.environ['SHRINK'] = {str(shrink)!r}\n" + _READ_AFTER_SHRINK
    return _run_child(code).splitlines()


def test_embedded_data_truncated_after_opening_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    _embedded_model(path)
    lines = _read_after_shrink(path, path, [BIG, SMALL])
    assert len(lines) == 10 and all(line.endswith("refused") for line in lines)


def test_external_data_truncated_after_opening_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path, arrays = with_external_data(tmp_path, checksum=False)
    names = [n for n in arrays if n != "/layer1/W"]  # this one lies in the first 100 bytes
    lines = _read_after_shrink(path, tmp_path / "weights.bin", names)
    assert len(lines) == 5 * len(names) and all(line.endswith("refused") for line in lines)


def test_a_file_shrinking_while_statistics_stream_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    _embedded_model(path)
    out = _run_child(
        f"""
        import os
        import onnx_explorer as ox
        t = ox.load({str(path)!r}).graph.initializers[{BIG!r}]
        chunks = t.iter_chunks(max_elements=1 << 16)
        first = next(chunks)
        os.truncate({str(path)!r}, 100)
        try:
            for chunk in chunks:
                float(chunk.sum())
        except ox.ExternalDataError as exc:
            print("refused:", exc)
        print("first chunk still readable:", float(first[:4].sum()))
        """
    )
    assert f"refused: tensor {BIG!r}" in out
    assert "first chunk still readable: 6.0" in out


def test_reading_an_intact_file_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    _embedded_model(path)
    model = ox.load(path)
    big = model.graph.initializers[BIG]
    values = big.numpy()
    assert not values.flags.writeable
    assert values[511, 1023] == (1 << 19) - 1
    assert not model.graph.initializers[SMALL].numpy().flags.writeable  # a copy, read-only too
    chunks = list(big.iter_chunks(max_elements=100_000))
    np.testing.assert_array_equal(np.concatenate(chunks), values.reshape(-1))
    assert big.stats().max == (1 << 19) - 1
    model.close()


# -- 2. GraphDef splats: a huge fill summarised in constant time --------------------------
def _graphdef(dtype: str, shape: tuple[int, ...], **fields: list) -> bytes:
    tp = pb.TensorProto(dtype=DT.Value(dtype))
    tp.tensor_shape.dim.extend([pb.TensorShapeProto.Dim(size=d) for d in shape])
    for key, values in fields.items():
        getattr(tp, key).extend(values)
    graph = pb.GraphDef()
    node = graph.node.add(name="c", op="Const")
    node.attr["dtype"].type = tp.dtype
    node.attr["value"].tensor.CopyFrom(tp)
    return graph.SerializeToString()


SPLAT_SHAPE = (1 << 23, 1 << 23)  # 2**46 float32 elements, 256 TiB if materialised


def test_a_60_byte_splat_of_2_46_floats_has_exact_statistics_at_once() -> None:
    data = _graphdef("DT_FLOAT", SPLAT_SHAPE, float_val=[1.5])
    assert len(data) < 64
    out = _run_child(
        f"""
        import onnx_explorer as ox
        from onnx_explorer.weights._report import weights_report
        model = ox.load({data!r})
        t = model.graph.initializers["c"]
        s = t.stats()
        print(s.count, s.min, s.max, s.mean, s.std, s.zeros, s.nan, s.inf, s.p1, s.p50, s.p99)
        h = t.histogram(bins=10)
        print(h.total, int(h.counts.max()), h.underflow, h.overflow)
        row = weights_report(model, progress=False, as_list=True)[0]
        print(row["error"], row["max"])
        try:
            t.numpy()
        except ox.TensorDataError as exc:
            print("numpy refused:", exc)
        """
    )
    n = 1 << 46
    lines = out.splitlines()
    assert lines[0] == f"{n} 1.5 1.5 1.5 0.0 0.0 0 0 1.5 1.5 1.5"
    assert lines[1] == f"{n} {n} 0 0"
    assert lines[2] in ("None 1.5", " 1.5")
    assert lines[3].startswith("numpy refused: tensor 'c'")


@pytest.mark.parametrize(
    ("dtype", "field", "stored"),
    [
        ("DT_FLOAT", "float_val", [0.1, 0.7]),
        ("DT_FLOAT", "float_val", [2.0, 0.0]),  # a fill of zeros
        ("DT_FLOAT", "float_val", [3.0, float("nan")]),
        ("DT_FLOAT", "float_val", [-1.0, float("-inf")]),
        ("DT_DOUBLE", "double_val", [1e30]),
        ("DT_INT32", "int_val", [7, -3]),
        ("DT_BOOL", "bool_val", [True]),
        ("DT_INT8", "int_val", []),  # no value: zeros
    ],
)
def test_statistics_of_a_fill_equal_those_of_the_materialised_array(
    dtype: str, field: str, stored: list
) -> None:
    shape = (300, 700)  # below the sample size: percentiles are exact too
    tensor = ox.load(_graphdef(dtype, shape, **{field: stored})).graph.initializers["c"]
    assert tensor.repeated_elements == 300 * 700 - len(stored)
    dense = np.asarray(tensor.numpy()).copy()  # small enough to build
    got, want = tensor.stats(), array_stats(dense)
    for key, value in want.to_dict().items():
        if isinstance(value, float) and key in ("mean", "std"):
            assert got.to_dict()[key] == pytest.approx(value, rel=1e-12, abs=1e-300), key
        else:
            assert got.to_dict()[key] == value or (value != value and got.to_dict()[key] != got.to_dict()[key]), key  # fmt: skip
    for kwargs in ({"bins": 7}, {"bins": 5, "range": (-0.5, 0.5)}):
        h, ref = tensor.histogram(**kwargs), array_histogram(dense, **kwargs)
        np.testing.assert_array_equal(h.counts, ref.counts)
        np.testing.assert_array_equal(h.edges, ref.edges)
        assert (h.underflow, h.overflow, h.nan) == (ref.underflow, ref.overflow, ref.nan)


def test_a_huge_partial_fill_has_exact_statistics_at_once() -> None:
    data = _graphdef("DT_INT32", SPLAT_SHAPE, int_val=[-4, 0, 9])
    out = _run_child(
        f"""
        import onnx_explorer as ox
        t = ox.load({data!r}).graph.initializers["c"]
        s = t.stats()
        print(s.count, s.min, s.max, s.zeros * s.count, s.p50, s.exact_percentiles)
        h = t.histogram(bins=14)
        print(h.total, h.counts[0], h.counts[4], h.counts[-1])
        """
    )
    n = 1 << 46
    assert out.splitlines() == [f"{n} -4 9 1.0 9.0 False", f"{n} 1 1 {n - 2}"]


def test_a_huge_splat_is_refused_as_an_array_but_a_modest_one_is_a_free_view() -> None:
    huge = ox.load(_graphdef("DT_FLOAT", SPLAT_SHAPE, float_val=[1.5])).graph.initializers["c"]
    with pytest.raises(ox.TensorDataError, match="'c'.*stats"):
        huge.numpy()
    modest = ox.load(_graphdef("DT_FLOAT", (1000, 1000), float_val=[2.0])).graph.initializers["c"]
    assert modest.numpy().strides == (0, 0) and modest.numpy()[999, 999] == 2.0


# -- 3. external-data offsets and lengths of thousands of digits -------------------------
@pytest.mark.parametrize("key", ["offset", "length"])
@pytest.mark.parametrize("digits", ["9" * 5000, "0" * 4999 + "1"])
def test_a_size_of_thousands_of_digits_opens_and_fails_only_that_tensor(
    tmp_path: Path, key: str, digits: str
) -> None:
    path, arrays = with_external_data(tmp_path, checksum=False)
    proto = onnx.load(path, load_external_data=False)
    hostile = proto.graph.initializer[0]
    set_external(hostile, **{key: digits})
    onnx.save(proto, path)
    model = ox.load(path)  # before the fix: ValueError from int() here
    tensors = model.graph.initializers
    bad = tensors[hostile.name]
    assert bad.shape == arrays[hostile.name].shape
    assert len(bad.location.describe()) < 200
    if digits.startswith("0"):  # 1 with 4,999 leading zeros: still a number, just long
        if key == "offset":
            with pytest.raises(ox.ExternalDataError, match=hostile.name):
                bad.numpy()
        return
    with pytest.raises(ox.ExternalDataError, match=f"'{hostile.name}'.*past the end") as info:
        bad.numpy()
    assert len(str(info.value)) < 300
    for name, expected in arrays.items():
        if name != hostile.name:
            np.testing.assert_array_equal(tensors[name].numpy(), expected)


# -- 4. string tensors whose shape has 2**124 elements ------------------------------------
HUGE_SHAPE = (1 << 62, 1 << 62)


def test_a_graphdef_string_splat_of_2_124_elements_is_a_tensor_data_error() -> None:
    tensor = ox.load(_graphdef("DT_STRING", HUGE_SHAPE, string_val=[b"x"])).graph.initializers["c"]
    assert tensor.size == 1 << 124
    for read in (tensor.numpy, tensor.check, lambda: next(tensor.iter_chunks())):
        with pytest.raises(ox.TensorDataError, match="'c'"):
            read()
    with pytest.raises(ox.TensorDataError):
        tensor.stats()


@pytest.mark.parametrize(
    ("data_type", "field", "values"),
    [
        (TensorProto.STRING, "string_data", [b"x"]),
        (TensorProto.FLOAT, "float_data", [1.0]),
        (TensorProto.INT64, "int64_data", [1]),
    ],
)
def test_onnx_typed_tensors_with_2_124_elements_are_tensor_data_errors(
    data_type: int, field: str, values: list
) -> None:
    tp = TensorProto(name="w", data_type=data_type, dims=list(HUGE_SHAPE))
    getattr(tp, field).extend(values)
    graph = helper.make_graph(
        [helper.make_node("Identity", ["w"], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", data_type, None)],
        [tp],
    )
    tensor = ox.load(helper.make_model(graph).SerializeToString()).graph.initializers["w"]
    assert tensor.size == 1 << 124
    for read in (tensor.numpy, tensor.check):
        with pytest.raises(ox.TensorDataError, match="'w'"):
            read()
    rows = weights_report(ox.load(helper.make_model(graph)), progress=False, as_list=True)
    assert rows[0]["error"] and "'w'" in rows[0]["error"]


# -- siblings --------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [1e30, -3e38, 7.0])
def test_a_histogram_of_one_repeated_large_value_has_one_full_bin(value: float) -> None:
    # ±0.5 around 1e30 is no range at all: it used to divide by zero.
    values = np.full(5, value, np.float32)
    h = array_histogram(values, bins=4)
    assert h.total == 5 and int(h.counts.max()) == 5
    assert h.edges[0] < np.float32(value) < h.edges[-1]
    splat = ox.load(_graphdef("DT_FLOAT", (10, 10), float_val=[value])).graph.initializers["c"]
    assert splat.histogram(bins=4).counts.max() == 100


def test_selecting_a_huge_splat_in_the_explorer_shows_its_statistics_at_once() -> None:
    data = _graphdef("DT_FLOAT", SPLAT_SHAPE, float_val=[1.5])
    out = _run_child(
        f"""
        import onnx_explorer as ox
        ex = ox.explore({data!r})
        ex.tensor_panel.show_tensor(ex.model.graph.initializers["c"])
        print(ex.tensor_panel.details.value)
        print(len(ex.tensor_panel.plot.value))
        """
    )
    page, png_bytes = out.rsplit("\n", 2)[:2]
    assert "70,368,744,177,664" in page  # 2^46 elements, counted
    assert "cannot read" not in page and "1.5" in page
    assert int(png_bytes) > 1000  # the histogram was drawn


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("suffix", [".onnx", ".pb"])
def test_files_that_are_no_model_keep_no_descriptor_open(tmp_path: Path, suffix: str) -> None:
    bad = tmp_path / f"bad{suffix}"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f" + b"x" * 64)  # a length past the end
    before = _open_descriptors()
    for _ in range(300):  # the fuzzer hit EMFILE after ~65,000 such files
        with pytest.raises(ox.ModelFormatError):
            ox.load(bad)
    assert _open_descriptors() <= before + 2


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_models_dropped_without_close_give_their_descriptors_back(tmp_path: Path) -> None:
    import gc

    path = tmp_path / "m.onnx"
    _embedded_model(path)
    before = _open_descriptors()
    for _ in range(300):
        model = ox.load(path)
        model.graph.initializers[SMALL].stats()  # reads through the model file's descriptor
        del model
    gc.collect()
    assert _open_descriptors() <= before + 2


@pytest.mark.parametrize(
    "values",
    [
        [0.0, 1.591496843e-314],  # a subnormal width: bins / width overflows (NaN bins)
        [-1.7e308, 0.0, 1.7e308],  # hi - lo overflows float64
    ],
)
def test_histograms_of_extreme_ranges_count_every_value(values: list[float]) -> None:
    tensor = helper.make_tensor("t", TensorProto.DOUBLE, [len(values)], values)
    graph = helper.make_graph([helper.make_node("Identity", ["t"], ["y"])], "g", [], [
        helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)], [tensor])  # fmt: skip
    t = ox.load(helper.make_model(graph)).graph.initializers["t"]
    histogram = t.histogram(bins=8)
    assert histogram.total == len(values) == int(histogram.counts.sum())  # none lost
    assert np.all(np.isfinite(histogram.edges)) and histogram.edges[0] < histogram.edges[-1]


def test_an_empty_tensor_with_a_shape_too_big_for_numpy_is_a_tensor_data_error() -> None:
    tensor = TensorProto(name="t", data_type=TensorProto.FLOAT, dims=[0, 2**62, 2**62])
    tensor.raw_data = b""
    graph = helper.make_graph([helper.make_node("Identity", ["t"], ["y"])], "g", [], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [tensor])  # fmt: skip
    t = ox.load(helper.make_model(graph)).graph.initializers["t"]
    assert t.size == 0
    with pytest.raises(ox.TensorDataError, match="cannot be an array"):
        t.numpy()
