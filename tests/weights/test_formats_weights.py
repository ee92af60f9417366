"""The weights report on safetensors, GGUF and TFLite files: dequantized statistics equal
numpy over the reference readers' values (``gguf.quants.dequantize``, the ``tflite``
schema's stored scales), and ``weights_report_many`` over a mix of every format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from weight_files import (
    JARVIS,
    SILERO_SAFETENSORS,
    VOCAB_GGUF,
    checkpoint,
    q4_k_blocks,
    save_gguf,
    save_safetensors,
    save_sharded,
)

import onnx_explorer as ox

pytest.importorskip("gguf")


def _rows(model: ox.Model, dequantize: bool = True) -> dict[str, dict[str, Any]]:
    report = model.weights_report(dequantize=dequantize, as_list=True, progress=False)
    return {row["name"]: row for row in report}


def _assert_stats(row: dict[str, Any], values: np.ndarray) -> None:
    values = values.astype(np.float64)
    assert row["min"] == pytest.approx(values.min(), rel=1e-6, abs=1e-12)
    assert row["max"] == pytest.approx(values.max(), rel=1e-6, abs=1e-12)
    assert row["mean"] == pytest.approx(values.mean(), rel=1e-5, abs=1e-9)
    assert row["std"] == pytest.approx(values.std(), rel=1e-5, abs=1e-9)


def test_gguf_block_types_are_reported_dequantized_like_the_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    values = rng.standard_normal((4, 256)).astype(np.float32)
    written = {
        f"blk.0.{kind.lower()}.weight": (values * (k + 1), kind)
        for k, kind in enumerate(("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"))
    }
    written["blk.1.q4_k.weight"] = (q4_k_blocks(4, 512), "Q4_K")  # gguf-py cannot write it
    written["output_norm.weight"] = (values[0], None)
    expected = save_gguf(tmp_path / "m.gguf", written)
    model = ox.load(tmp_path / "m.gguf")
    for dequantize in (True, False):  # block types are always read as their real values
        rows = _rows(model, dequantize)
        assert set(rows) == set(expected)
        for name, (_values, kind) in written.items():
            row = rows[name]
            assert row["dtype"] == (kind or "float32") and not row["error"]
            _assert_stats(row, expected[name])
            assert tuple(row["shape"]) == expected[name].shape
            assert np.isfinite(expected[name]).all()


def test_tflite_int8_weights_are_dequantized_by_their_stored_scales() -> None:
    tflite = pytest.importorskip("tflite")
    data = JARVIS.read_bytes()
    ref = tflite.Model.GetRootAs(data, 0)
    sub = ref.Subgraphs(0)
    rows = _rows(ox.load(JARVIS))
    checked = 0
    for j in range(sub.TensorsLength()):
        t = sub.Tensors(j)
        q, raw = t.Quantization(), ref.Buffers(t.Buffer()).DataAsNumpy()
        if t.Type() != tflite.TensorType.INT8 or q is None or not q.ScaleLength():
            continue
        if not isinstance(raw, np.ndarray) or not raw.size:
            continue
        stored = raw.view(np.int8).reshape(t.ShapeAsNumpy()).astype(np.float64)
        shape = [1] * stored.ndim
        shape[q.QuantizedDimension()] = -1
        scale = q.ScaleAsNumpy().astype(np.float64)
        zero = q.ZeroPointAsNumpy().astype(np.float64)
        if scale.size > 1:
            scale, zero = scale.reshape(shape), zero.reshape(shape)
        row = rows[t.Name().decode()]
        assert row["quantization"], row["name"]
        _assert_stats(row, (stored - zero) * scale)
        checked += 1
    assert checked >= 10


def test_safetensors_rows_equal_numpy(tmp_path: Path) -> None:
    tensors = checkpoint()
    rows = _rows(ox.load(save_safetensors(tmp_path / "m.safetensors", tensors)))
    assert set(rows) == set(tensors)
    for name, values in tensors.items():
        assert rows[name]["dtype"] == values.dtype.name
        _assert_stats(rows[name], values)


def test_weights_report_many_over_every_format(tmp_path: Path) -> None:
    tensors = checkpoint()
    single = save_safetensors(tmp_path / "one.safetensors", tensors)
    index = save_sharded(tmp_path / "sharded", tensors)
    values = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    gguf = tmp_path / "m.gguf"
    expected = save_gguf(gguf, {"blk.0.w": (values, "Q8_0"), "blk.0.n": (values[0], None)})
    sources = [single, index, gguf, JARVIS, VOCAB_GGUF, SILERO_SAFETENSORS]
    many = ox.weights_report_many(sources, workers=1)
    assert [m.error for m in many.models] == [None] * len(sources)
    counts = [m.totals.tensors for m in many.models]
    assert counts == [len(tensors), len(tensors), 2, 37, 0, 15]
    assert many.totals.tensors == sum(counts)
    assert many.models[0].totals.values == many.models[1].totals.values  # one checkpoint
    gguf_values = np.concatenate([v.reshape(-1) for v in expected.values()]).astype(np.float64)
    assert many.models[2].totals.min == pytest.approx(gguf_values.min())
    assert many.models[2].totals.max == pytest.approx(gguf_values.max())
    assert many.models[2].totals.mean == pytest.approx(gguf_values.mean(), rel=1e-6)
    assert many.models[4].totals.values == 0  # a vocab-only GGUF: a model without weights
