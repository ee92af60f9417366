"""``diff`` of two safetensors checkpoints (which tensors a fine-tune changed, and by how
much) and of two GGUF files (block types compared dequantized), against numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from weight_files import (
    JARVIS,
    checkpoint,
    fine_tuned,
    q4_k_blocks,
    save_gguf,
    save_safetensors,
    save_sharded,
)

import onnx_explorer as ox

CHANGED = {
    "model.layers.0.self_attn.q_proj.weight": 1e-3,
    "model.layers.1.self_attn.v_proj.weight": 0.05,
    "model.norm.weight": 0.01,  # float16
}


def _max_abs(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(b.astype(np.float64) - a.astype(np.float64)).max())


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    x, y = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(x @ y / np.sqrt((x @ x) * (y @ y)))


def test_a_fine_tune_names_exactly_the_tensors_it_changed(tmp_path: Path) -> None:
    base = checkpoint()
    tuned = fine_tuned(base, CHANGED)
    a = save_safetensors(tmp_path / "a.safetensors", base, {"format": "pt"})
    b = save_safetensors(tmp_path / "b.safetensors", tuned, {"format": "pt"})
    result = ox.diff(a, b)
    assert not result.equal
    assert {c.b for c in result.tensors_changed} == set(CHANGED)
    assert not (result.tensors_added or result.tensors_removed or result.model_changes)
    for change in result.tensors_changed:
        name = change.b
        assert change.a == name and change.error is None
        assert change.max_abs == pytest.approx(_max_abs(base[name], tuned[name]), rel=1e-12)
        assert change.cosine == pytest.approx(_cosine(base[name], tuned[name]), rel=1e-9)
        assert change.differing == int(np.count_nonzero(base[name] != tuned[name]))
    # The text names each changed tensor.
    text = repr(result)
    assert all(name in text for name in CHANGED)
    assert ox.diff(a, a).equal


def test_a_sharded_checkpoint_against_the_single_file(tmp_path: Path) -> None:
    base = checkpoint()
    index = save_sharded(tmp_path / "sharded", base)
    single = save_safetensors(tmp_path / "one.safetensors", fine_tuned(base, CHANGED))
    result = ox.diff(index, single)
    assert {c.b for c in result.tensors_changed} == set(CHANGED)
    assert not (result.tensors_added or result.tensors_removed)
    same = ox.diff(index, save_safetensors(tmp_path / "same.safetensors", base))
    assert not same.tensors_changed and not same.nodes_changed  # re-saved: the same modules
    assert ox.diff(index, tmp_path / "sharded").equal  # by its index or by its folder


def test_gguf_block_types_are_compared_dequantized(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 64)).astype(np.float32)
    y = x.copy()
    y[1] += 0.25
    k_blocks = q4_k_blocks(2, 256)
    k_other = k_blocks.copy()
    k_other[0, 100] ^= 0xFF  # one byte of the 4-bit values of the first block
    a = save_gguf(
        tmp_path / "a.gguf",
        {"blk.0.q.weight": (x, "Q8_0"), "blk.0.k.weight": (x, "Q4_0"),
         "blk.0.v.weight": (k_blocks, "Q4_K"), "output_norm.weight": (x[0], None)},
    )  # fmt: skip
    b = save_gguf(
        tmp_path / "b.gguf",
        {"blk.0.q.weight": (y, "Q8_0"), "blk.0.k.weight": (x, "Q4_0"),
         "blk.0.v.weight": (k_other, "Q4_K"), "output_norm.weight": (x[0], None)},
    )  # fmt: skip
    result = ox.diff(tmp_path / "a.gguf", tmp_path / "b.gguf")
    changed = {c.b: c for c in result.tensors_changed}
    assert set(changed) == {"blk.0.q.weight", "blk.0.v.weight"}
    for name, change in changed.items():
        assert change.max_abs == pytest.approx(_max_abs(a[name], b[name]), rel=1e-9)
        assert change.differing == int(np.count_nonzero(a[name] != b[name]))
    # The same floats quantized two ways: compared value for value, dequantized.
    c = save_gguf(tmp_path / "c.gguf", {"blk.0.q.weight": (x, "Q4_0")})
    result = ox.diff(tmp_path / "a.gguf", tmp_path / "c.gguf")
    (change,) = result.tensors_changed
    assert (change.dtype_a, change.dtype_b) == ("Q8_0", "Q4_0")
    assert change.max_abs == pytest.approx(_max_abs(a["blk.0.q.weight"], c["blk.0.q.weight"]))
    assert set(result.tensors_removed) == {"blk.0.k.weight", "blk.0.v.weight", "output_norm.weight"}


def test_a_tflite_model_diffs_equal_with_itself() -> None:
    result = ox.diff(JARVIS, JARVIS)
    assert result.equal and len(result.nodes_matched) >= 45
