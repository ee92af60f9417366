"""The fast statistics of a captured activation (``runs/_activation_stats``) against
``summarize``, the reference definitions, on the values that take its special paths."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from builders import scoped_chain

import onnx_explorer
from onnx_explorer.runs import _execute, _run
from onnx_explorer.runs._activation_stats import (
    SAMPLE_SIZE,
    _sample_positions,
    activation_histogram,
    activation_stats,
    fast_path,
)
from onnx_explorer.runs._background import Background
from onnx_explorer.runs._ort import RunError
from onnx_explorer.stats import array_stats, array_values, histogram

RNG = np.random.default_rng(7)


def _same(got, want, rel=1e-5):
    assert got is not None
    assert (got.count, got.min, got.max, got.abs_max) == (
        want.count,
        want.min,
        want.max,
        want.abs_max,
    )
    assert (got.nan, got.inf, got.is_float) == (want.nan, want.inf, want.is_float)
    assert got.zeros == want.zeros
    assert got.mean == pytest.approx(want.mean, rel=rel, abs=1e-9)
    assert got.std == pytest.approx(want.std, rel=rel, abs=1e-9)


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(RNG.standard_normal((2, 3, 50)).astype(np.float32), id="float32"),
        pytest.param(np.maximum(RNG.standard_normal(5000), 0).astype(np.float32), id="relu-zeros"),
        pytest.param(RNG.standard_normal(300_000).astype(np.float32) * 7 + 3, id="several-chunks"),
        pytest.param(RNG.standard_normal(999).astype(np.float16), id="float16"),
        pytest.param(RNG.standard_normal(999) * 1e-30, id="float64-tiny"),
        pytest.param(RNG.integers(-5, 5, 4000).astype(np.int8), id="int8"),
        pytest.param(np.array([2**62, -(2**62), 3], np.int64), id="int64-past-2**53"),
        pytest.param(np.full((4, 4), 3.5, np.float32), id="constant"),
        pytest.param(
            np.float32(1000) + RNG.standard_normal(70_000).astype(np.float32), id="mean>>std"
        ),
        pytest.param(
            RNG.standard_normal(5000).astype(np.float32) * 1e30, id="squares-overflow-f32"
        ),
        pytest.param(np.array([1e200, -1e200, 5.0]), id="squares-overflow-f64"),
        pytest.param((RNG.random(5000) * 1e-22).astype(np.float32), id="squares-subnormal-f32"),
        pytest.param(RNG.integers(0, 3, 200_000).astype(np.uint8), id="uint8-several-chunks"),
        pytest.param(RNG.standard_normal(200_000).astype(np.float16), id="float16-several-chunks"),
    ],
)
def test_matches_summarize(values):
    assert fast_path(values)
    got, want = activation_stats(values), array_stats(values)
    if got is None:  # only where float64 itself overflows: summarize takes it
        with np.errstate(over="ignore"):
            assert not np.isfinite(values.astype(np.float64) ** 2).all()
        return
    _same(got, want)
    if values.size <= SAMPLE_SIZE:  # every value: the exact percentiles
        assert got.exact_percentiles
        assert (got.p1, got.p50, got.p99) == pytest.approx((want.p1, want.p50, want.p99))


@pytest.mark.parametrize("n", [1, 2, 3, 101, SAMPLE_SIZE - 1, SAMPLE_SIZE, 8192, 65_537])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_percentiles_are_numpys_of_the_values_or_of_the_sample(n, dtype):
    """The ranks placed by a partition give numpy's linear interpolation exactly: of
    every value up to SAMPLE_SIZE, else of the values at the sample's positions."""
    values = (RNG.standard_normal(n) * 50).astype(dtype)
    got = activation_stats(values)
    sample = values if n <= SAMPLE_SIZE else values[_sample_positions(n)]
    want = np.percentile(sample.astype(np.float64), [1, 50, 99])
    assert got.exact_percentiles == (n <= SAMPLE_SIZE)
    assert (got.p1, got.p50, got.p99) == pytest.approx(tuple(want), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("n", [8192, 65_536, 65_537, 300_000])
def test_float32_sums_are_near_float64(n):
    """Sum and sum of squares by BLAS dots a chunk at a time: mean and std within 1e-6
    of float64's on the whole tensor (the mean relative to the values' spread)."""
    values = (RNG.standard_normal(n) * 3 + 0.5).astype(np.float32)
    got = activation_stats(values)
    exact = values.astype(np.float64)
    assert got.mean == pytest.approx(exact.mean(), abs=1e-6 * exact.std())
    assert got.std == pytest.approx(exact.std(), rel=1e-6)


@pytest.mark.parametrize(
    "values",
    [np.zeros((64, 100), np.float32), np.full(3000, -2.5, np.float16), np.full(7, 9, np.int64),
     np.zeros(1, np.uint8)],
    ids=["zeros", "float16-fill", "int64-fill", "one-zero"],
)  # fmt: skip
def test_a_constant_tensor_needs_no_pass_and_matches_numpy(values):
    got = activation_stats(values)
    _same(got, array_stats(values))
    want = np.percentile(values.astype(np.float64), [1, 50, 99])
    assert (got.p1, got.p50, got.p99) == tuple(want)
    assert got.exact_percentiles == (values.size <= SAMPLE_SIZE)


def test_cancellation_is_computed_centred():
    """std of 1000 + N(0, 1e-3) in float32: E[x²] − mean² in float32 would be noise."""
    values = np.float32(1000) + (RNG.standard_normal(50_000) * 1e-3).astype(np.float32)
    got = activation_stats(values)
    exact = values.astype(np.float64)
    assert got.std == pytest.approx(exact.std(), rel=1e-6)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_go_to_summarize(bad):
    values = RNG.standard_normal(100).astype(np.float32)
    values[17] = bad
    assert activation_stats(values) is None


def test_sampled_percentiles_do_not_alias_with_the_layout():
    """[channels=64, 4096] with every value of a row equal to its channel: a stride that
    is a multiple of 64 (or of a row) would see a few channels only. p1/p50/p99 of
    0..63 equally represented are about 0.6, 31.5 and 62.4."""
    values = np.repeat(np.arange(64, dtype=np.float32), 4096).reshape(64, 4096)
    got = activation_stats(values.T.copy())  # channel fastest
    assert got.exact_percentiles is False
    assert got.p50 == pytest.approx(31.5, abs=2)
    assert got.p1 <= 2 and got.p99 >= 61
    got = activation_stats(values)  # channel slowest
    assert got.p50 == pytest.approx(31.5, abs=2)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float16])
def test_narrow_dtypes_are_widened_a_chunk_at_a_time(dtype):
    """A 4M-element int8/int32/float16 activation is not copied whole to float64 or
    float32 (that was 32 MB beside a 4 MB tensor): the extra memory is a few chunks."""
    import tracemalloc

    values = (RNG.integers(0, 4, 4 << 20)).astype(dtype)
    tracemalloc.start()
    got = activation_stats(values)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 2 << 20
    _same(got, array_stats(values))


@pytest.mark.parametrize("n", [2 * SAMPLE_SIZE, 4 * SAMPLE_SIZE, 8 * SAMPLE_SIZE, 11 * SAMPLE_SIZE])
def test_a_sampled_tensor_sorts_about_sample_size_values(n):
    """Sizes a few times the sample used to get a stride of 11 (the first coprime with
    2·3·5·7): 187 values at 2,048. The sample is ~1,024 distinct in-range positions."""
    positions = _sample_positions(n)
    assert len(positions) >= 0.95 * SAMPLE_SIZE
    assert (np.diff(positions) > 0).all() and positions[0] >= 0 and positions[-1] < n
    assert np.diff(positions).max() <= 3 * n / SAMPLE_SIZE  # no stretch left unseen


def test_ml_dtypes_reusing_numpy_type_codes_are_left_to_summarize():
    """float8_e4m3b11fnuz's type code is uint64's ("L"): it is not summarised as integers."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert not fast_path(np.zeros(3, ml_dtypes.float8_e4m3b11fnuz))
    assert not fast_path(np.zeros(3, ml_dtypes.bfloat16))


def test_other_dtypes_are_left_to_summarize():
    assert not fast_path(np.array([True, False]))
    assert not fast_path(np.array(["a"]))
    assert not fast_path(np.zeros(0, np.float32))


def test_background_keeps_order_and_bounds_what_waits():
    """Jobs finish in submission order; a submit past the byte bound waits for the
    oldest jobs, so no more than the bound is ever queued."""
    background = Background(queued_bytes=100)
    gate = threading.Event()
    started = []

    def job(k):
        def run():
            started.append(k)
            gate.wait(5)
            return k

        return run

    background.submit(job(0), 60)
    background.submit(job(1), 30)
    waited = []

    def third():
        began = time.perf_counter()
        background.submit(job(2), 60)  # 150 > 100: waits for job 0
        waited.append(time.perf_counter() - began)

    thread = threading.Thread(target=third)
    thread.start()
    time.sleep(0.3)
    assert not waited  # still blocked
    gate.set()
    thread.join(5)
    assert waited
    assert list(background.results()) == [0, 1, 2]
    background.close()


def test_background_raises_a_jobs_error():
    background = Background()
    background.submit(lambda: 1 / 0, 10)
    with pytest.raises(ZeroDivisionError):
        list(background.results())
    background.close()


def test_background_results_wait_for_every_job():
    """Jobs still running when the results are asked for are waited for, not cancelled
    (a run whose statistics fell behind onnxruntime lost them)."""
    background = Background()
    for k in range(5):
        background.submit(lambda k=k: (time.sleep(0.03), k)[1], 1)
    assert list(background.results()) == [0, 1, 2, 3, 4]
    background.close()


def test_a_run_whose_statistics_fall_behind_keeps_every_record(monkeypatch):
    real = _run.summary
    monkeypatch.setattr(_run, "summary", lambda v: (time.sleep(0.002), real(v))[1])
    result = onnx_explorer.run(scoped_chain(2), {"x": np.ones(1, np.float32)}, segment_nodes=8)
    assert len(result.tensors) == 120
    assert all(r.stats is not None for r in result.tensors.values())


def test_a_failing_statistics_job_is_our_error(monkeypatch):
    def broken(value):
        raise MemoryError("no room")

    monkeypatch.setattr(_run, "summary", broken)
    with pytest.raises(RunError, match="statistics failed.*no room"):
        onnx_explorer.run(scoped_chain(1), {"x": np.ones(1, np.float32)}, segment_nodes=8)


def test_an_interrupt_during_a_run_is_raised_as_is(monkeypatch):
    """Ctrl-C while onnxruntime runs: the KeyboardInterrupt reaches the user (not an
    error of the statistics thread), and the thread is stopped."""
    real = _execute.Execution._run
    calls = []

    def interrupted(self, segment, live):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, segment, live)

    monkeypatch.setattr(_execute.Execution, "_run", interrupted)
    before = threading.active_count()
    with pytest.raises(KeyboardInterrupt):
        onnx_explorer.run(scoped_chain(2), {"x": np.ones(1, np.float32)}, segment_nodes=8)
    assert threading.active_count() == before


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(RNG.standard_normal((4, 128, 128)).astype(np.float32), id="float32"),
        pytest.param(np.maximum(RNG.standard_normal(200_000), 0).astype(np.float32), id="relu"),
        pytest.param(np.float32(1000) + RNG.random(5000).astype(np.float32), id="offset"),
    ],
)
def test_activation_histograms_match_the_float64_binning(values):
    """Binned in float32 between the statistics' min and max: the same edges as the
    weights' histogram, every value counted, counts equal but for a value on an edge."""
    stats = activation_stats(values)
    got = activation_histogram(values, 48, stats)
    want = histogram(array_values(values), 48, stats=stats)
    np.testing.assert_allclose(got.edges, want.edges)
    assert got.total == values.size
    assert np.abs(got.counts - want.counts).sum() <= 2


def test_an_activation_histogram_leaves_what_it_cannot_bin_exactly():
    constant = np.full(100, 2.0, np.float32)
    assert activation_histogram(constant, 10, activation_stats(constant)) is None
    huge = np.array([-3e38, 3e38, 0], np.float32)
    assert activation_histogram(huge, 10, activation_stats(huge)) is None
    assert activation_histogram(np.arange(9.0), 10, activation_stats(np.arange(9.0))) is None
    half = np.arange(9.0, dtype=np.float16)
    assert activation_histogram(half, 10, activation_stats(half)) is None
    tiny = np.array([1e-38, 2e-38, 1.5e-38], np.float32)  # 48 / 1e-38 overflows float32
    assert activation_histogram(tiny, 48, activation_stats(tiny)) is None
