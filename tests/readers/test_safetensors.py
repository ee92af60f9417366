"""safetensors files, sharded checkpoints and adapters, checked against the format's own
reader (``safetensors.numpy``) and hand-written bytes for what it cannot write."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from locations import CORPUS
from safetensors.numpy import load_file, save_file

from onnx_explorer.errors import ExplorerError, ModelFormatError, UnsafePathError
from onnx_explorer.readers.safetensors import (
    read_safetensors_bytes,
    read_safetensors_file,
)

RNG = np.random.default_rng(28)
REAL = CORPUS / "other_formats" / "silero_vad_16k.safetensors"


def _write(path: Path, header: dict[str, object], data: bytes, pad: int = 0) -> Path:
    raw = json.dumps(header).encode() + b" " * pad
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def test_real_checkpoint_equals_the_reference_reader():
    model = read_safetensors_file(REAL)
    reference = load_file(REAL)
    assert set(model.graph.initializers) == set(reference)
    for name, expected in reference.items():
        tensor = model.graph.initializers[name]
        assert tensor.shape == expected.shape and tensor.dtype == expected.dtype
        np.testing.assert_array_equal(tensor.numpy(), expected)
        stats = tensor.stats()
        assert stats.min == pytest.approx(float(expected.min()))
        assert stats.max == pytest.approx(float(expected.max()))
        assert stats.mean == pytest.approx(float(expected.mean()), rel=1e-5, abs=1e-7)


def test_tensors_are_grouped_into_modules_by_their_dotted_names(tmp_path):
    names = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
             "model.layers.0.self_attn.q_proj.bias", "model.layers.1.mlp.up_proj.weight",
             "lm_head.weight", "scale"]  # fmt: skip
    save_file({n: np.ones((2, 2), np.float32) for n in names}, tmp_path / "m.safetensors")
    model = read_safetensors_file(tmp_path / "m.safetensors")
    nodes = {n.name: n.inputs for n in model.graph.nodes}
    assert nodes["model/layers/0/self_attn/q_proj"] == (
        "model.layers.0.self_attn.q_proj.bias",
        "model.layers.0.self_attn.q_proj.weight",
    )
    assert nodes["lm_head"] == ("lm_head.weight",) and nodes["scale"] == ("scale",)
    kinds = {n.name: n.op_type for n in model.graph.nodes}
    assert kinds["model/layers/0/self_attn/q_proj"] == "q_proj" and kinds["scale"] == "scale"
    assert not any(n.has_file_name for n in model.graph.nodes)
    assert model.format == "safetensors"


def test_every_numpy_dtype_written_by_the_reference_reads_back(tmp_path):
    arrays = {
        str(dt): (RNG.standard_normal((3, 5)) * 50).astype(dt)
        for dt in (np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8,
                   np.uint64, np.uint32, np.uint16, np.uint8, np.bool_, np.complex64)
    }  # fmt: skip
    save_file(arrays, tmp_path / "all.safetensors", metadata={"format": "np"})
    model = read_safetensors_file(tmp_path / "all.safetensors")
    for name, expected in load_file(tmp_path / "all.safetensors").items():
        np.testing.assert_array_equal(model.graph.initializers[name].numpy(), expected)
    assert model.metadata_props["format"] == "np"


@pytest.mark.parametrize(
    ("code", "dtype"),
    [("BF16", ml_dtypes.bfloat16), ("F8_E4M3", ml_dtypes.float8_e4m3fn),
     ("F8_E5M2", ml_dtypes.float8_e5m2), ("F8_E8M0", ml_dtypes.float8_e8m0fnu),
     ("F8_E4M3FNUZ", ml_dtypes.float8_e4m3fnuz), ("F8_E5M2FNUZ", ml_dtypes.float8_e5m2fnuz)],
)  # fmt: skip
def test_ml_dtypes_the_numpy_reader_cannot_write(tmp_path, code, dtype):
    values = np.abs(RNG.standard_normal(6)).astype(np.float32).astype(dtype)
    path = _write(
        tmp_path / "x.safetensors",
        {"w": {"dtype": code, "shape": [2, 3], "data_offsets": [0, values.nbytes]}},
        values.tobytes(),
    )
    tensor = read_safetensors_file(path).graph.initializers["w"]
    assert tensor.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(tensor.numpy().reshape(-1), values)


def test_offsets_in_any_order_unaligned_and_null_metadata(tmp_path):
    a = np.arange(3, dtype=np.uint8)
    b = np.arange(5, dtype=np.float32)
    # b is stored first at offset 3 (not 4- or 8-aligned), a last; the header lists a first.
    data = b"\x07\x07\x07" + b.tobytes() + a.tobytes()
    header = {
        "__metadata__": None,
        "a": {"dtype": "U8", "shape": [3], "data_offsets": [23, 26]},
        "b": {"dtype": "F32", "shape": [5], "data_offsets": [3, 23]},
    }
    path = _write(tmp_path / "odd.safetensors", header, data, pad=3)
    model = read_safetensors_file(path)
    np.testing.assert_array_equal(model.graph.initializers["a"].numpy(), a)
    np.testing.assert_array_equal(model.graph.initializers["b"].numpy(), b)
    assert list(model.graph.initializers) == ["a", "b"]
    assert dict(model.metadata_props) == {}


def test_bytes_read_alike(tmp_path):
    save_file({"x": np.arange(4, dtype=np.float32)}, tmp_path / "x.safetensors")
    model = read_safetensors_bytes((tmp_path / "x.safetensors").read_bytes())
    np.testing.assert_array_equal(model.graph.initializers["x"].numpy(), np.arange(4))


def _sharded(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    first = {"model.layers.0.w": RNG.standard_normal((4, 4)).astype(np.float32)}
    second = {"model.layers.1.w": RNG.standard_normal((4, 4)).astype(np.float32),
              "lm_head.weight": RNG.standard_normal((2, 4)).astype(np.float32)}  # fmt: skip
    save_file(first, tmp_path / "model-00001-of-00002.safetensors")
    save_file(second, tmp_path / "model-00002-of-00002.safetensors")
    weight_map = {name: "model-00001-of-00002.safetensors" for name in first}
    weight_map |= {name: "model-00002-of-00002.safetensors" for name in second}
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 160}, "weight_map": weight_map}))
    return index, first | second


def test_sharded_checkpoint_by_its_index_and_by_its_folder(tmp_path):
    index, expected = _sharded(tmp_path)
    for model in (read_safetensors_file(index), read_safetensors_file(tmp_path)):
        assert set(model.graph.initializers) == set(expected)
        for name, values in expected.items():
            np.testing.assert_array_equal(model.graph.initializers[name].numpy(), values)
        assert model.metadata_props["shard model-00002-of-00002.safetensors"] == "2 tensors"
        assert model.metadata_props["total_size"] == "160"


def test_index_shard_names_cannot_leave_the_folder(tmp_path):
    (tmp_path / "inner").mkdir()
    save_file({"w": np.ones(2, np.float32)}, tmp_path / "outside.safetensors")
    index = tmp_path / "inner" / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "../outside.safetensors"}}))
    with pytest.raises(UnsafePathError):
        read_safetensors_file(index)


def test_index_naming_a_tensor_no_shard_holds(tmp_path):
    index, _ = _sharded(tmp_path)
    table = json.loads(index.read_text())
    table["weight_map"]["ghost"] = "model-00001-of-00002.safetensors"
    index.write_text(json.dumps(table))
    with pytest.raises(ModelFormatError, match="no shard holds"):
        read_safetensors_file(index)


def test_peft_adapter_folder(tmp_path):
    save_file({"base_model.model.layers.0.q_proj.lora_A.weight": np.ones((8, 16), np.float32),
               "base_model.model.layers.0.q_proj.lora_B.weight": np.zeros((16, 8), np.float32)},
              tmp_path / "adapter_model.safetensors")  # fmt: skip
    (tmp_path / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"],
        "base_model_name_or_path": "org/base"}))  # fmt: skip
    model = read_safetensors_file(tmp_path)
    assert model.producer_name == "PEFT adapter"
    assert model.metadata_props["adapter"] == "PEFT LORA"
    assert model.metadata_props["adapter r"] == "8"
    assert model.metadata_props["adapter base_model_name_or_path"] == "org/base"
    assert [n.name for n in model.graph.nodes] == [
        "base_model/model/layers/0/q_proj/lora_A",
        "base_model/model/layers/0/q_proj/lora_B",
    ]


def test_names_with_control_characters_are_data(tmp_path):
    name = "evil\x1b[31m.<script>"
    save_file({name: np.ones(2, np.float32)}, tmp_path / "n.safetensors")
    model = read_safetensors_file(tmp_path / "n.safetensors")
    assert name in model.graph.initializers


HOSTILE = {
    "header length 2^63": lambda: struct.pack("<Q", 1 << 63) + b"{}",
    "header past the end": lambda: struct.pack("<Q", 100) + b"{}",
    "not JSON": lambda: struct.pack("<Q", 3) + b"{x}",
    "not an object": lambda: struct.pack("<Q", 2) + b"[]",
    "duplicate name": lambda: _raw(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                                   b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', 1),
    "offsets past the end": lambda: _raw(_entry("U8", [8], [0, 8]), 4),
    "size disagrees": lambda: _raw(_entry("F32", [2], [0, 4]), 8),
    "unknown dtype": lambda: _raw(_entry("F128", [1], [0, 16]), 16),
    "negative dim": lambda: _raw(_entry("U8", [-1], [0, 0]), 0),
    "huge dims": lambda: _raw(_entry("F32", [1 << 40, 1 << 40], [0, 4]), 4),
    "begin after end": lambda: _raw(_entry("U8", [0], [4, 2]), 4),
    "float offsets": lambda: _raw(_entry("U8", [1], [0.0, 1.0]), 1),
    "metadata not strings": lambda: _raw(b'{"__metadata__": {"a": 1}}', 0),
    "overlap": lambda: _raw(b'{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},'
                            b'"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}', 6),
    "deep nesting": lambda: _raw(b"[" * 100_000 + b"]" * 100_000, 0),
    "not UTF-8": lambda: struct.pack("<Q", 3) + b"{\xff}",
}  # fmt: skip


def _entry(code: str, shape: list[int], offsets: list[float]) -> bytes:
    return json.dumps({"t": {"dtype": code, "shape": shape, "data_offsets": offsets}}).encode()


def _raw(header: bytes, data_size: int) -> bytes:
    return struct.pack("<Q", len(header)) + header + b"\0" * data_size


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_headers_get_a_clear_error(tmp_path, case):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(HOSTILE[case]())
    with pytest.raises(ModelFormatError):
        read_safetensors_file(path)
    with pytest.raises(ExplorerError):
        read_safetensors_bytes(path.read_bytes())


def test_a_file_that_shrinks_after_opening_fails_for_that_tensor_only(tmp_path):
    path = tmp_path / "s.safetensors"
    save_file({"a": np.ones(4, np.float32), "b": np.ones(4096, np.float32)}, path)
    model = read_safetensors_file(path)
    a, b = (model.graph.initializers[n] for n in ("a", "b"))
    assert a.location.offset < b.location.offset  # the reference writes a first
    with open(path, "r+b") as fh:
        fh.truncate(b.location.offset + 8)
    assert a.stats().max == 1.0
    with pytest.raises(ExplorerError, match="'b'"):
        b.stats()
