"""Small weight files written by the formats' reference writers, for tests of every entry
point: safetensors checkpoints (``safetensors.numpy.save_file``, single or sharded with an
index) and GGUF files (``gguf.GGUFWriter`` + ``gguf.quants.quantize``).

Each writer returns what it wrote, so a test compares the package with numpy directly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from locations import CORPUS

JARVIS = CORPUS / "other_formats" / "hey_jarvis.tflite"
VOCAB_GGUF = CORPUS / "other_formats" / "ggml-vocab-bert-bge.gguf"
SILERO_SAFETENSORS = CORPUS / "other_formats" / "silero_vad_16k.safetensors"


def checkpoint(seed: int = 0) -> dict[str, np.ndarray]:
    """A tiny transformer-shaped state dict (float32 and one float16 tensor)."""
    rng = np.random.default_rng(seed)
    tensors: dict[str, np.ndarray] = {"model.embed_tokens.weight": rng.standard_normal((16, 8))}
    for layer in range(2):
        for proj in ("q_proj", "k_proj", "v_proj"):
            tensors[f"model.layers.{layer}.self_attn.{proj}.weight"] = rng.standard_normal((8, 8))
        tensors[f"model.layers.{layer}.input_layernorm.weight"] = np.ones(8)
    tensors["lm_head.weight"] = rng.standard_normal((16, 8))
    out = {k: v.astype(np.float32) for k, v in tensors.items()}
    out["model.norm.weight"] = np.ones(8, np.float16)
    return out


def fine_tuned(
    tensors: Mapping[str, np.ndarray], changed: Mapping[str, float], seed: int = 1
) -> dict[str, np.ndarray]:
    """A copy of ``tensors`` where each name in ``changed`` gets Gaussian noise of that
    standard deviation (the others are the very same arrays)."""
    rng = np.random.default_rng(seed)
    out = dict(tensors)
    for name, sigma in changed.items():
        noise = rng.standard_normal(tensors[name].shape) * sigma
        out[name] = (tensors[name] + noise).astype(tensors[name].dtype)
    return out


def save_safetensors(
    path: Path, tensors: Mapping[str, np.ndarray], metadata: Mapping[str, str] | None = None
) -> Path:
    from safetensors.numpy import save_file

    save_file(dict(tensors), str(path), metadata=dict(metadata) if metadata else None)
    return path


def save_sharded(
    folder: Path, tensors: Mapping[str, np.ndarray], shards: int = 2, prefix: str = "model"
) -> Path:
    """``tensors`` split over ``shards`` files plus ``{prefix}.safetensors.index.json``
    (as ``transformers`` writes them); returns the index's path."""
    folder.mkdir(parents=True, exist_ok=True)
    names = list(tensors)
    weight_map: dict[str, str] = {}
    total = 0
    for k in range(shards):
        file = f"{prefix}-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[k::shards]}
        save_safetensors(folder / file, part, {"format": "pt"})
        weight_map.update(dict.fromkeys(part, file))
        total += sum(a.nbytes for a in part.values())
    index = folder / f"{prefix}.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return index


def save_gguf(
    path: Path,
    tensors: Mapping[str, tuple[np.ndarray, str | None]],
    arch: str = "llama",
) -> dict[str, np.ndarray]:
    """A GGUF of ``name → (float32 values, block type name or None for float32)``; returns
    each tensor's values as the reference dequantizes them (``gguf.quants.dequantize``).
    uint8 values with a block type are stored as they are: whole blocks (see
    :func:`q4_k_blocks`; gguf-py cannot quantize the K types)."""
    import gguf
    from gguf.quants import dequantize, quantize

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(2)
    writer.add_context_length(128)
    writer.add_name("weights-test")
    expected: dict[str, np.ndarray] = {}
    for name, (values, block_type) in tensors.items():
        if block_type is not None and values.dtype == np.uint8:
            qtype = gguf.GGMLQuantizationType[block_type]
            writer.add_tensor(name, values, raw_shape=values.shape, raw_dtype=qtype)
            expected[name] = dequantize(values, qtype)
            continue
        values = np.ascontiguousarray(values, dtype=np.float32)
        if block_type is None:
            writer.add_tensor(name, values)
            expected[name] = values
            continue
        qtype = gguf.GGMLQuantizationType[block_type]
        stored = quantize(values, qtype)
        writer.add_tensor(name, stored, raw_shape=stored.shape, raw_dtype=qtype)
        expected[name] = dequantize(stored, qtype).reshape(values.shape)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return expected


def q4_k_blocks(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """Random Q4_K blocks (144 bytes per 256 values) with finite scales: a ``rows × cols``
    tensor's bytes, ``cols`` a multiple of 256. Each block starts with its fp16 ``d`` and
    ``dmin``; the 6-bit scales and 4-bit values after them are random."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (rows, cols // 256, 144), dtype=np.uint8)
    scales = rng.uniform(0.001, 0.01, (rows, cols // 256, 2)).astype(np.float16)
    blocks[..., :4] = scales.view(np.uint8)
    return blocks.reshape(rows, -1)
