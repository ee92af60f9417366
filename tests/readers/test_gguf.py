"""GGUF: files written by the reference library (``gguf.GGUFWriter``), the real vocab-only
corpus file, and hostile variants built byte by byte.

Every value is compared with the reference reader (``gguf.GGUFReader`` +
``gguf.quants.dequantize``); block-quantized tensors are checked to be dequantized a
chunk of blocks at a time, never whole.
"""

from __future__ import annotations

import struct
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from locations import CORPUS

from onnx_explorer.dtypes import BlockDType, block_dtype, decode_bytes
from onnx_explorer.errors import ExternalDataError, ModelFormatError, TensorDataError
from onnx_explorer.readers.gguf import (
    looks_like_gguf,
    read_gguf_bytes,
    read_gguf_file,
    read_gguf_source,
)
from onnx_explorer.readers.gguf._cursor import BLOCK_BYTES
from onnx_explorer.readers.gguf._types import GGML_TYPES
from onnx_explorer.sources import ByteSource, LocalFile
from onnx_explorer.tensors import BlockBytes

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as Q  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402

VOCAB = CORPUS / "other_formats" / "ggml-vocab-bert-bge.gguf"
ROWS, COLS = 4, 512  # every block size (32, 64, 128, 256) divides a row


def _quantizable() -> list[Q]:
    """The block types ``gguf.quants`` can write (its quantize), which the test files hold."""
    sample = np.zeros((1, 256), np.float32)
    found = []
    for qtype in Q:
        if GGML_TYPES.get(qtype.value) is None or GGML_TYPES[qtype.value].plain is not None:
            continue
        try:
            quantize(sample, qtype)
        except (NotImplementedError, ValueError):
            continue
        found.append(qtype)
    return found


def _dequantize_only() -> list[Q]:
    """Block types the reference can read but not write: stored as random blocks."""
    found = []
    for qtype in Q:
        info = GGML_TYPES.get(qtype.value)
        if info is None or info.plain is not None or qtype in QUANTIZABLE:
            continue
        try:
            dequantize(np.zeros(info.block_bytes, np.uint8), qtype)
        except NotImplementedError:
            continue
        found.append(qtype)
    return found


QUANTIZABLE = _quantizable()
DEQUANTIZE_ONLY = _dequantize_only()


def _write_reference(path: Path) -> dict[str, np.ndarray]:
    """A GGUF written by gguf.GGUFWriter: plain tensors, every quantizable block type, raw
    random blocks of the types it only reads, and metadata of every value type."""
    rng = np.random.default_rng(0)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny llama")
    writer.add_description("a test file")
    writer.add_uint8("t.u8", 200)
    writer.add_int8("t.i8", -100)
    writer.add_uint16("t.u16", 60000)
    writer.add_int16("t.i16", -30000)
    writer.add_uint32("t.u32", 4_000_000_000)
    writer.add_int32("t.i32", -2_000_000_000)
    writer.add_float32("t.f32", 1e-5)
    writer.add_uint64("t.u64", 2**64 - 1)
    writer.add_int64("t.i64", -(2**63))
    writer.add_float64("t.f64", 0.1)
    writer.add_bool("t.bool", True)
    writer.add_string("t.str", "tab\there, nul\x00, é")
    writer.add_array("t.short", [1, 2, 3])
    writer.add_array("t.strings", [f"tok{i}" for i in range(1000)])
    writer.add_array("t.floats", [float(i) / 2 for i in range(100)])
    writer.add_array("t.nested", [[1, 2], [3]])
    data = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    expected: dict[str, np.ndarray] = {}
    plain = {
        "token_embd.weight": data,
        "blk.0.f16.weight": data.astype(np.float16),
        "blk.0.f64.weight": data.astype(np.float64),
        "blk.0.i8.weight": (data * 20).astype(np.int8),
        "blk.0.i16.weight": (data * 2000).astype(np.int16),
        "blk.0.i32.weight": (data * 1e6).astype(np.int32),
        "blk.0.i64.weight": (data * 1e12).astype(np.int64),
        "output_norm.weight": data[0],  # 1-D
    }
    for name, array in plain.items():
        writer.add_tensor(name, array)
        expected[name] = array
    for qtype in [Q.BF16, *QUANTIZABLE]:
        name = f"blk.1.{qtype.name.lower()}.weight"
        stored = quantize(data, qtype)
        writer.add_tensor(name, stored, raw_shape=stored.shape, raw_dtype=qtype)
        expected[name] = dequantize(stored, qtype)
    for qtype in DEQUANTIZE_ONLY:
        info = GGML_TYPES[qtype.value]
        name = f"blk.2.{qtype.name.lower()}.weight"
        stored = rng.integers(0, 256, (ROWS, COLS // info.block_size * info.block_bytes))
        stored = stored.astype(np.uint8)
        writer.add_tensor(name, stored, raw_shape=stored.shape, raw_dtype=qtype)
        expected[name] = dequantize(stored, qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return expected


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    return path, _write_reference(path)


def _field_text(field: Any) -> str | None:
    """The reference reader's scalar value as our metadata shows it (None for arrays)."""
    kind = field.types[0]
    if kind == gguf.GGUFValueType.ARRAY:
        return None
    value = field.contents()
    if kind == gguf.GGUFValueType.BOOL:
        return "true" if value else "false"
    if kind == gguf.GGUFValueType.FLOAT32:
        return str(np.float32(value))
    if kind == gguf.GGUFValueType.FLOAT64:
        return repr(float(value))
    return str(value)


def _check_against_reader(path: Path) -> None:
    model = read_gguf_file(path)
    reader = gguf.GGUFReader(str(path))
    assert list(model.metadata_props) == list(reader.fields)
    for key, field in reader.fields.items():
        shown = model.metadata_props[key]
        text = _field_text(field)
        if text is not None:
            assert shown == text, key
        else:
            nested = field.types[1] == gguf.GGUFValueType.ARRAY  # the reference flattens
            count = len(field.contents()) if not nested else shown.split()[2]
            assert shown.startswith(f"array of {count} "), (key, shown)
    tensors = model.graph.initializers
    assert list(tensors) == [t.name for t in reader.tensors]
    for ref in reader.tensors:
        tensor = tensors[ref.name]
        try:
            values = dequantize(ref.data, ref.tensor_type)
        except NotImplementedError:  # F64 and the integer types: the reader's own array
            values = np.asarray(ref.data)
        assert tensor.shape == values.shape == tuple(int(d) for d in reversed(ref.shape))
        assert tensor.nbytes == ref.n_bytes
        np.testing.assert_array_equal(tensor.numpy(), values)
    model.close()


def test_reference_file_values_equal_the_reference_reader(reference) -> None:
    path, _ = reference
    _check_against_reader(path)


def test_block_types_are_shown_and_dequantized_like_the_reference(reference) -> None:
    path, expected = reference
    assert {Q.Q4_0, Q.Q8_0, Q.Q5_1} <= set(QUANTIZABLE)
    assert {Q.Q2_K, Q.Q4_K, Q.Q6_K} <= set(DEQUANTIZE_ONLY)
    with read_gguf_file(path) as model:
        tensors = model.graph.initializers
        for qtype in QUANTIZABLE + DEQUANTIZE_ONLY:
            group = 1 if qtype in QUANTIZABLE else 2
            tensor = tensors[f"blk.{group}.{qtype.name.lower()}.weight"]
            assert tensor.dtype_name == qtype.name
            assert isinstance(tensor.dtype_info, BlockDType)
            assert tensor.dtype == np.float32
            values = expected[tensor.name]
            np.testing.assert_array_equal(tensor.numpy(), values)
            chunks = list(tensor.iter_chunks(1000))
            np.testing.assert_array_equal(np.concatenate(chunks), values.reshape(-1))
        assert tensors["blk.0.f16.weight"].dtype_name == "float16"
        assert tensors["blk.1.bf16.weight"].dtype_name == "bfloat16"


def test_statistics_equal_numpy_over_the_reference_values(reference) -> None:
    path, expected = reference
    with read_gguf_file(path) as model:
        for name, values in expected.items():
            if name.startswith("blk.2."):  # random blocks: scales may be NaN or infinite
                continue
            stats = model.graph.initializers[name].stats()
            flat = values.astype(np.float64).reshape(-1)
            assert stats.min == pytest.approx(flat.min())
            assert stats.max == pytest.approx(flat.max())
            assert stats.mean == pytest.approx(flat.mean(), rel=1e-6, abs=1e-9)
        q8 = model.graph.initializers["blk.1.q8_0.weight"]
        hist = q8.histogram(bins=10)
        assert int(np.sum(hist.counts)) == ROWS * COLS


def test_metadata_summarises_arrays_and_keeps_scalars(reference) -> None:
    path, _ = reference
    with read_gguf_file(path) as model:
        props = model.metadata_props
        assert model.format == "gguf"
        assert model.producer_name == "tiny llama (llama)"
        assert model.doc_string == "a test file"
        assert props["t.str"] == "tab\there, nul\x00, é"  # data as it is: views escape it
        assert props["t.u64"] == str(2**64 - 1)
        assert props["t.f32"] == "1e-05"
        assert props["t.short"] == "array of 3 int32: 1, 2, 3"
        assert props["t.strings"] == (
            "array of 1000 strings: 'tok0', 'tok1', 'tok2', 'tok3', 'tok4', …"
        )
        assert (
            props["t.nested"]
            == "array of 2 arrays: [array of 2 int32: 1, 2], [array of 1 int32: 3]"
        )
        # The module graph: one box per dotted prefix, its tensors as inputs.
        nodes = {node.name: node for node in model.graph.nodes}
        assert "blk.1.q4_0.weight" in nodes["blk/1/q4_0"].inputs
        assert nodes["blk/1/q4_0"].op_type == "q4_0"  # a module box is typed by its own name


def test_vocab_only_corpus_file_opens_with_its_tokens_summarised() -> None:
    assert looks_like_gguf(VOCAB.read_bytes()[:4096])
    with read_gguf_file(VOCAB) as model:
        props = model.metadata_props
        assert not model.graph.initializers
        assert props["general.architecture"] == "bert"
        tokens = props["tokenizer.ggml.tokens"]
        assert tokens.startswith("array of 30522 strings: '[PAD]', '[unused0]'")
        assert len(tokens) < 200
        assert sum(len(v) for v in props.values()) < 2000  # no 30k-entry dump anywhere
    _check_against_reader(VOCAB)


class CountingSource(ByteSource):
    """A local file that records every range asked of it."""

    def __init__(self, path: Path) -> None:
        self._file = LocalFile(path)
        self.display = str(path)
        self.ranges: list[tuple[int, int]] = []

    @property
    def size(self) -> int:
        return self._file.size

    def read_into(self, offset: int, out: Any) -> None:
        self.ranges.append((offset, memoryview(out).nbytes))
        self._file.read_into(offset, out)

    def close(self) -> None:
        self._file.close()


def test_opening_reads_the_header_by_blocks_and_no_tensor_bytes(tmp_path) -> None:
    # A vocab of 100k strings (~1.3 MB of header) over 8 MB of tensor data.
    path = tmp_path / "big.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_array("tokenizer.ggml.tokens", [f"token number {i}" for i in range(100_000)])
    writer.add_tensor("blk.0.w", np.zeros((1 << 21,), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    source = CountingSource(path)
    model = read_gguf_source(source)
    fetched = sum(length for _, length in source.ranges)
    tensor = model.graph.initializers["blk.0.w"]
    assert tensor.location.offset is not None
    assert fetched <= tensor.location.offset + BLOCK_BYTES  # the header and at most a block
    assert len(source.ranges) <= 6  # 64 KiB, 128 KiB, … 1 MiB blocks, not one read per field
    assert model.metadata_props["tokenizer.ggml.tokens"].startswith("array of 100000 strings")
    source.close()


def test_a_file_in_memory_reads_alike(reference) -> None:
    path, expected = reference
    model = read_gguf_bytes(path.read_bytes(), "tiny.gguf")
    for name in ("token_embd.weight", "blk.1.q4_0.weight", "blk.2.q6_k.weight"):
        np.testing.assert_array_equal(model.graph.initializers[name].numpy(), expected[name])
    assert model.metadata_props["general.name"] == "tiny llama"


def test_a_small_header_costs_one_small_read(reference) -> None:
    path, _ = reference
    source = CountingSource(path)
    read_gguf_source(source)
    assert source.ranges == [(0, 1 << 16)]  # 64 KiB: the whole header of a few tensors
    source.close()


def _write_q4_k(path: Path, rows: int, cols: int) -> np.ndarray:
    """A Q4_K tensor of random blocks with sane scales; returns its stored bytes."""
    rng = np.random.default_rng(1)
    blocks = rows * cols // 256
    raw = rng.integers(0, 256, (blocks, 144)).astype(np.uint8)
    raw[:, 0:2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)  # d
    raw[:, 2:4] = np.frombuffer(np.float16(0.002).tobytes(), np.uint8)  # dmin
    stored = raw.reshape(rows, cols // 256 * 144)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("blk.0.ffn_up.weight", stored, raw_shape=stored.shape, raw_dtype=Q.Q4_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return stored


def test_a_quantized_tensor_is_dequantized_a_chunk_at_a_time(tmp_path, monkeypatch) -> None:
    path = tmp_path / "q4k.gguf"
    stored = _write_q4_k(path, 1024, 4096)  # 4 Mi elements: 2.3 MB stored, 16 MB as float32
    reference = dequantize(stored, Q.Q4_K)
    seen: list[int] = []
    real = gguf.quants.dequantize

    def recording(data: np.ndarray, qtype: Any) -> np.ndarray:
        seen.append(data.size // 144 * 256)
        return real(data, qtype)

    monkeypatch.setattr(gguf.quants, "dequantize", recording)
    with read_gguf_file(path) as model:
        tensor = model.graph.initializers["blk.0.ffn_up.weight"]
        assert tensor.dtype_name == "Q4_K" and tensor.nbytes == stored.nbytes
        stats = tensor.stats()
        assert len(seen) > 1 and max(seen) <= 1 << 20  # stats' chunks, never the whole
        flat = reference.astype(np.float64).reshape(-1)
        assert stats.min == pytest.approx(flat.min())
        assert stats.max == pytest.approx(flat.max())
        assert stats.mean == pytest.approx(flat.mean(), rel=1e-6)
        for limit in (100_000, 1000, 256, 100):  # a chunk never exceeds the limit asked
            seen.clear()
            sizes = []
            for i, chunk in enumerate(tensor.iter_chunks(limit)):
                sizes.append(chunk.size)
                if i == 20:
                    break
            assert max(sizes) <= limit and max(seen) <= max(limit, 256)
        seen.clear()
        np.testing.assert_array_equal(tensor.numpy(), reference)
        assert max(seen) <= 1 << 22  # numpy() fills one array a chunk at a time


def test_without_the_gguf_package_files_open_and_stats_say_what_to_install(
    reference, monkeypatch
) -> None:
    path, _ = reference
    monkeypatch.setitem(sys.modules, "gguf", None)
    monkeypatch.setitem(sys.modules, "gguf.quants", None)
    monkeypatch.setitem(sys.modules, "gguf.constants", None)
    with read_gguf_file(path) as model:
        tensors = model.graph.initializers
        assert tensors["token_embd.weight"].stats().count == ROWS * COLS  # plain: no gguf
        quantized = tensors["blk.1.q4_0.weight"]
        with pytest.raises(TensorDataError, match=r"pip install 'onnx_explorer\[gguf\]'") as err:
            quantized.stats()
        assert "blk.1.q4_0.weight" in str(err.value)


def test_block_dtype_sizes() -> None:
    q4k = block_dtype("Q4_K", 256, 144)
    assert q4k.storage_bytes(4096) == 16 * 144
    assert q4k.storage_bytes(2**70) == 2**62 * 144  # Python ints
    assert q4k.is_numeric and not q4k.packed and q4k.numpy == np.float32
    with pytest.raises(ValueError, match="block-quantized"):
        decode_bytes(b"\0" * 144, q4k, 256)
    for code, info in GGML_TYPES.items():  # our table is the reference's
        assert gguf.GGML_QUANT_SIZES[Q(code)] == (info.block_size, info.block_bytes)
        assert Q(code).name == info.name


# -- files built byte by byte: other versions and hostile input -----------------------------


def _string(text: str | bytes, wide: bool = True) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q" if wide else "<I", len(data)) + data


def _build(
    kvs: list[bytes],
    infos: list[bytes],
    data: bytes = b"",
    *,
    version: int = 3,
    alignment: int = 32,
    counts: tuple[int, int] | None = None,
) -> bytes:
    wide = version >= 2
    size = "<Q" if wide else "<I"
    n_tensors, n_kv = counts if counts is not None else (len(infos), len(kvs))
    head = b"GGUF" + struct.pack("<I", version)
    head += struct.pack(size, n_tensors) + struct.pack(size, n_kv) + b"".join(kvs) + b"".join(infos)
    pad = -len(head) % alignment
    return head + b"\0" * pad + data


def _kv(key: str, code: int, payload: bytes, wide: bool = True) -> bytes:
    return _string(key, wide) + struct.pack("<I", code) + payload


def _info(name: str, dims: tuple[int, ...], ggml: int, offset: int, wide: bool = True) -> bytes:
    size = "<Q" if wide else "<I"
    packed = b"".join(struct.pack(size, d) for d in dims)
    return (
        _string(name, wide)
        + struct.pack("<I", len(dims))
        + packed
        + struct.pack("<IQ", ggml, offset)
    )


def _open(tmp_path: Path, data: bytes, name: str = "x.gguf") -> Any:
    path = tmp_path / name
    path.write_bytes(data)
    return read_gguf_file(path)


def test_version_1_and_2_files(tmp_path) -> None:
    values = np.arange(8, dtype=np.float32)
    for version in (1, 2):
        wide = version >= 2
        kvs = [
            _kv("general.architecture", 8, _string("llama", wide), wide),
            _kv(
                "a.arr",
                9,
                struct.pack("<I", 4) + struct.pack("<Q" if wide else "<I", 2) + b"\1\0\0\0\2\0\0\0",
                wide,
            ),
            _kv("a.empty", 9, struct.pack("<I", 8) + bytes(8 if wide else 4), wide),
        ]
        infos = [_info("w", (8,), 0, 0, wide)]
        with _open(tmp_path, _build(kvs, infos, values.tobytes(), version=version)) as model:
            assert model.metadata_props["GGUF.version"] == str(version)
            assert model.metadata_props["a.arr"] == "array of 2 uint32: 1, 2"
            assert model.metadata_props["a.empty"] == "array of 0 strings"
            np.testing.assert_array_equal(model.graph.initializers["w"].numpy(), values)


def test_a_file_ending_right_after_the_metadata_is_valid(tmp_path) -> None:
    kvs = [_kv("general.architecture", 8, _string("llama"))]
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kvs[0]  # no padding, no data
    with _open(tmp_path, data) as model:
        assert model.metadata_props["general.architecture"] == "llama"
        assert not model.graph.initializers


HUGE = 2**64 - 1


@pytest.mark.parametrize(
    ("case", "data", "message"),
    [
        ("bad magic", b"GGML" + bytes(20), "not a GGUF file"),
        ("empty", b"", "not a GGUF file"),
        ("big-endian", b"GGUF" + struct.pack(">IQQ", 3, 0, 0), "big-endian"),
        ("version 9", b"GGUF" + struct.pack("<IQQ", 9, 0, 0), "version 9"),
        ("huge kv count", b"GGUF" + struct.pack("<IQQ", 3, 0, HUGE), "more than any"),
        ("huge tensor count", b"GGUF" + struct.pack("<IQQ", 3, HUGE, 0), "more than any"),
        (
            "more tensors than the file holds",
            b"GGUF" + struct.pack("<IQQ", 3, 1000, 0) + bytes(64),
            "more than the",
        ),
        (
            "more tensors than any model",
            b"GGUF" + struct.pack("<IQQ", 3, 2**21, 0) + bytes(64),
            "more than any model",
        ),
        (
            "huge key length",
            b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, HUGE) + bytes(16),
            "longer than",
        ),
        (
            "huge string value",
            _build([_kv("k", 8, struct.pack("<Q", 2**63) + b"abc")], []),
            "longer than",
        ),
        (
            "huge array count",
            _build([_kv("k", 9, struct.pack("<IQ", 8, HUGE) + bytes(32))], []),
            "more than the",
        ),
        (
            "huge numeric array",
            _build([_kv("k", 9, struct.pack("<IQ", 12, 2**61) + bytes(32))], []),
            "more than the",
        ),
        (
            "string in an array runs past the end",
            _build([_kv("k", 9, struct.pack("<IQQ", 8, 10, 2**40) + bytes(100))], []),
            "truncated",
        ),
        (
            "deep nesting",
            _build([_kv("k", 9, struct.pack("<IQ", 9, 1) * 50 + struct.pack("<IQ", 4, 0))], []),
            "deep",
        ),
        ("unknown value type", _build([_kv("k", 77, b"\0" * 8)], []), "value type 77"),
        (
            "duplicate key",
            _build([_kv("k", 4, b"\1\0\0\0"), _kv("k", 4, b"\2\0\0\0")], []),
            "twice",
        ),
        (
            "bad alignment",
            _build([_kv("general.alignment", 4, struct.pack("<I", 3))], []),
            "power of two",
        ),
        (
            "alignment as a string",
            _build([_kv("general.alignment", 8, _string("32"))], []),
            "integer",
        ),
        (
            "offset past the end",
            _build([], [_info("w", (8,), 0, 2**40)], bytes(32)),
            "past the end",
        ),
        ("offset 2^64-1", _build([], [_info("w", (8,), 0, HUGE)], bytes(32)), "past the end"),
        ("huge dims", _build([], [_info("w", (HUGE, HUGE), 0, 0)], bytes(32)), "past the end"),
        (
            "overlapping tensors",
            _build([], [_info("a", (8,), 0, 0), _info("b", (8,), 0, 16)], bytes(64)),
            "share bytes",
        ),
        (
            "duplicate tensor names",
            _build([], [_info("a", (8,), 0, 0), _info("a", (8,), 0, 32)], bytes(64)),
            "two tensors",
        ),
        ("too many dims", _build([], [_info("a", (1,) * 20, 0, 0)], bytes(32)), "dims"),
        ("partial block", _build([], [_info("a", (33,), 8, 0)], bytes(64)), "whole Q8_0 blocks"),
        (
            "truncated header",
            _build([_kv("general.name", 8, _string("x" * 100))], [])[:60],
            "truncated",
        ),
    ],
)
def test_hostile_files_raise_model_format_errors_quickly(tmp_path, case, data, message) -> None:
    start = time.perf_counter()
    with pytest.raises(ModelFormatError, match=message):
        _open(tmp_path, data)
    assert time.perf_counter() - start < 0.5, case


def test_every_truncation_of_a_real_file_is_an_error_or_the_whole_file(reference, tmp_path) -> None:
    path, _ = reference
    whole = path.read_bytes()
    with read_gguf_file(path) as model:
        tensors = model.graph.initializers
        end = max((t.location.offset or 0) + (t.location.length or 0) for t in tensors.values())
        header_end = min(t.location.offset or 0 for t in tensors.values())
    cut_path = tmp_path / "cut.gguf"
    cuts = [*range(0, header_end, max(1, header_end // 200)), *range(header_end, len(whole), 1999)]
    for cut in cuts:
        cut_path.write_bytes(whole[:cut])
        if cut >= end:
            read_gguf_file(cut_path).close()  # only padding is missing
            continue
        with pytest.raises(ModelFormatError):
            read_gguf_file(cut_path)


def test_a_tensor_of_an_unknown_type_is_shown_and_its_reading_fails(tmp_path) -> None:
    data = _build([], [_info("w", (8,), 99, 0), _info("v", (8,), 0, 0)], bytes(32))
    with _open(tmp_path, data) as model:
        unknown = model.graph.initializers["w"]
        assert unknown.dtype_name == "ggml_type_99"
        with pytest.raises(TensorDataError, match="ggml type 99 is unknown"):
            unknown.stats()
        assert model.graph.initializers["v"].numpy().tolist() == [0.0] * 8


def test_names_with_control_characters_are_data(tmp_path) -> None:
    name = "blk.0.<b>\x1b[31m\n.weight"
    data = _build([_kv("key\n<i>", 8, _string("<script>"))], [_info(name, (4,), 0, 0)], bytes(32))
    with _open(tmp_path, data) as model:
        assert model.metadata_props["key\n<i>"] == "<script>"
        assert name in model.graph.initializers


def test_block_bytes_reports_a_short_file_as_this_tensors_error(tmp_path) -> None:
    path = tmp_path / "q.gguf"
    _write_q4_k(path, 2, 256)
    source = LocalFile(path)
    offset = path.stat().st_size - 2 * 144
    tensor_bytes = BlockBytes(source, offset, 2 * 144 + 144, lambda raw: np.zeros(0, np.float32))
    bt = block_dtype("Q4_K", 256, 144)
    with pytest.raises(ExternalDataError, match="tensor 'w'.* lies outside"):
        list(tensor_bytes.chunks(bt, 768, "w", 1000))
    wrong = BlockBytes(source, offset, 2 * 144, lambda raw: np.zeros(3, np.float32))
    with pytest.raises(TensorDataError, match="gave 3 values"):
        list(wrong.chunks(bt, 512, "w", 1000))
    source.close()


def test_over_http_the_header_and_one_tensor_transfer_only_their_bytes(tmp_path) -> None:
    pytest.importorskip("fsspec")
    pytest.importorskip("aiohttp")
    from range_server import RangeServer

    from onnx_explorer.sources.remote import open_url

    server = RangeServer(tmp_path / "site").start()
    try:
        server.root.mkdir(parents=True, exist_ok=True)
        path = server.root / "model.gguf"
        stored = _write_q4_k(path, 64, 4096)  # 147 KB of Q4_K
        writer = gguf.GGUFWriter(str(path), "llama")  # rewritten with 8 MB of F32 beside it
        writer.add_tensor("blk.0.ffn_up.weight", stored, raw_shape=stored.shape, raw_dtype=Q.Q4_K)
        writer.add_tensor("blk.1.big.weight", np.ones(1 << 21, np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        source, _ = open_url(f"{server.url}/model.gguf", progress=False)
        model = read_gguf_source(source)
        tensor = model.graph.initializers["blk.0.ffn_up.weight"]
        np.testing.assert_array_equal(tensor.numpy(), dequantize(stored, Q.Q4_K))
        assert tensor.stats().count == 64 * 4096
        assert server.bytes_served < 3 << 20, server.bytes_served  # not the 8 MB tensor
        source.close()
    finally:
        server.stop()
