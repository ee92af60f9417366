"""The explorer on safetensors, GGUF and TFLite files: the model tab shows each file's own
metadata (``__metadata__``, the shard map, GGUF summaries, TFLite signatures) and no empty
ONNX-only fields; the tensor tab shows block types and stored scales dequantized."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from weight_files import JARVIS, VOCAB_GGUF, checkpoint, save_gguf, save_safetensors, save_sharded

import onnx_explorer as ox
from onnx_explorer.widgets._explorer import TAB_MODEL, TAB_TENSORS, Explorer


def _text(html: str) -> str:
    html = re.sub(r"<style>.*?</style>", "", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#x27;", "'")


def _model_tab(ex: Explorer) -> str:
    ex.tabs.selected_index = TAB_MODEL
    return _text(ex.model_panel.summary.value)


def _no_onnx_blanks(text: str) -> None:
    assert ", IR " not in text and "opsets" not in text
    assert "inputs name type shape outputs" not in text  # no empty input/output tables


def test_safetensors_metadata_and_shard_map(tmp_path: Path) -> None:
    tensors = checkpoint()
    single = save_safetensors(tmp_path / "m.safetensors", tensors, {"format": "pt", "note": "x"})
    ex = ox.explore(single)
    text = _model_tab(ex)
    assert "metadata: format pt" in text and "metadata: note x" in text
    assert f"{len(tensors)} tensors" in text
    _no_onnx_blanks(text)
    assert "inputs" not in text and "outputs" not in text
    np.testing.assert_array_equal(ex.tensor("lm_head.weight"), tensors["lm_head.weight"])

    ex = ox.explore(save_sharded(tmp_path / "sharded", tensors))
    text = _model_tab(ex)
    for shard in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        assert f"metadata: shard {shard}" in text
    assert "metadata: total_size" in text
    _no_onnx_blanks(text)
    # Module boxes: a tensor's module is a node whose tensors the tensor tab lists.
    ex.select("model/layers/0/self_attn/q_proj")
    assert ex.selected is not None and ex.selected.op_type == "q_proj"


def test_gguf_metadata_summaries_and_block_types(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    values = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
    expected = save_gguf(tmp_path / "m.gguf", {"blk.0.attn_q.weight": (values, "Q4_0")})
    ex = ox.explore(tmp_path / "m.gguf")
    text = _model_tab(ex)
    assert "metadata: general.architecture llama" in text and "Q4_0" in text
    _no_onnx_blanks(text)
    ex.tabs.selected_index = TAB_TENSORS
    panel = ex.tensor_panel
    panel.listing.value = "blk.0.attn_q.weight"
    details = _text(panel.details.value)
    assert "Q4_0" in details and f"{expected['blk.0.attn_q.weight'].max():.6g}" in details
    np.testing.assert_array_equal(ex.tensor("blk.0.attn_q.weight"), expected["blk.0.attn_q.weight"])

    text = _model_tab(ox.explore(VOCAB_GGUF))  # vocab only: the tokenizer, summarised
    assert "tokenizer.ggml.tokens array of 30522 strings: '[PAD]'" in text
    assert "0 tensors" in text and len(text) < 5000
    _no_onnx_blanks(text)


def test_tflite_signatures_inputs_and_int8_scales() -> None:
    ex = ox.explore(JARVIS)
    text = _model_tab(ex)
    assert "metadata: signature serving_default subgraph main" in text
    assert "metadata: min_runtime_version 2.6.0" in text
    assert "serving_default_input_audio:0 int8 1×3×40" in text  # real inputs stay
    assert ", IR " not in text and "opsets" not in text
    ex.tabs.selected_index = TAB_TENSORS
    panel = ex.tensor_panel
    panel.listing.value = "model/conv2d_4/Conv2D"
    assert panel.dequantize_box.layout.display == "flex"
    details = _text(panel.details.value)
    assert "per-axis (axis 0, 60 scales)" in details and "dequantized value" in details
    ex.select("CALL_ONCE_0")
    assert ex.selected is not None and ex.selected.op_type == "CALL_ONCE"
