"""The readers' format table: every format load() knows is one row, and every kind of
source (path, bytes, in-memory message, URL) goes through that row."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from locations import CORPUS
from onnx import TensorProto, helper

import onnx_explorer as ox
from onnx_explorer.errors import ModelFormatError
from onnx_explorer.readers import FORMATS, Format, _table, detect_format, format_named
from onnx_explorer.samples import tiny_cnn


def _onnx_bytes() -> bytes:
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph).SerializeToString()


def test_every_row_has_a_unique_name_and_is_found_by_it():
    names = [row.name for row in FORMATS]
    assert len(set(names)) == len(names)
    assert {"onnx", "graphdef", "savedmodel", "metagraph"} <= set(names)
    for row in FORMATS:
        assert isinstance(row, Format) and format_named(row.name) is row
        assert row.suffixes and all(s.startswith(".") for s in row.suffixes)
    with pytest.raises(ModelFormatError, match="unknown format 'nope'"):
        format_named("nope")


def test_a_row_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FORMATS[0].name = "other"  # type: ignore[misc]


def _spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """Replace the row called ``name`` by one that records which reader was asked."""
    calls: list[str] = []
    index = next(i for i, row in enumerate(FORMATS) if row.name == name)
    row = FORMATS[index]

    def wrap(kind: str, read):  # type: ignore[no-untyped-def]
        def spy(*args):  # type: ignore[no-untyped-def]
            calls.append(kind)
            return read(*args)

        return spy

    spied = dataclasses.replace(
        row,
        read_path=wrap("path", row.read_path),
        read_bytes=wrap("bytes", row.read_bytes),
        read_proto=wrap("proto", row.read_proto),
    )
    monkeypatch.setattr(_table, "FORMATS", (*FORMATS[:index], spied, *FORMATS[index + 1 :]))
    return calls


def test_path_bytes_and_message_dispatch_through_the_same_row(monkeypatch, tmp_path: Path):
    import onnx

    calls = _spy(monkeypatch, "onnx")
    data = _onnx_bytes()
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    for source in (path, data, onnx.ModelProto.FromString(data)):
        assert ox.load(source).format == "onnx"
    assert calls == ["path", "bytes", "proto"]


def test_a_new_row_is_all_load_needs(monkeypatch, tmp_path: Path):
    # What the next formats do: one row before the protobuf family; nothing else learns it.
    read: list[Path] = []

    def read_path(path: Path, data_dir: Path | None) -> ox.Model:
        read.append(path)
        return ox.load(tiny_cnn())

    row = Format(
        name="toy",
        suffixes=(".toy",),
        sniff=lambda head, suffix, name: head.startswith(b"TOY1"),
        read_path=read_path,
    )
    monkeypatch.setattr(_table, "FORMATS", (row, *FORMATS))
    path = tmp_path / "m.bin"
    path.write_bytes(b"TOY1" + bytes(100))
    assert detect_format(path) == "toy"
    assert len(ox.load(path).graph.nodes) > 0 and read == [path]
    with pytest.raises(ModelFormatError, match="toy models cannot be read from bytes"):
        ox.load(path.read_bytes())


def test_the_protobuf_rows_sniff_the_same_file_exactly_once(tmp_path: Path):
    head = _onnx_bytes()[:4096]
    claims = [row.name for row in FORMATS if row.sniff(head, ".pb", "m.pb")]
    assert claims == ["onnx"]


def test_a_file_no_row_claims_says_what_it_is(tmp_path: Path):
    path = tmp_path / "weights.pt"
    path.write_bytes(b"PK\x03\x04" + bytes(26) + b"archive/data.pkl" + bytes(64))
    with pytest.raises(ModelFormatError, match="PyTorch checkpoint"):
        ox.load(path)


@pytest.mark.parametrize(
    ("name", "format"),
    [("silero_vad_16k.safetensors", "safetensors"), ("hey_jarvis.tflite", "tflite"),
     ("ggml-vocab-bert-bge.gguf", "gguf")],
)  # fmt: skip
def test_weight_formats_are_recognised_by_content_not_suffix(tmp_path: Path, name, format):
    data = (CORPUS / "other_formats" / name).read_bytes()
    renamed = tmp_path / "model.bin"
    renamed.write_bytes(data)
    assert detect_format(renamed) == format
    assert ox.load(renamed).format == format
    assert ox.load(data).format == format


def test_a_model_carries_its_format_support_and_no_source():
    model = ox.load(_onnx_bytes())
    assert not hasattr(model, "source") and not hasattr(model, "source_bytes")
    assert model.support.runnable and model.support.has_op_domains
    assert model.support.input_slot_names("", "MatMul") == ("A", "B")
    assert model.support.check(model) == "onnx.checker: the model is valid."
    proto, base = model.support.runtime_model(model)
    assert type(proto).__name__ == "ModelProto" and base is None


def test_the_default_support_can_do_nothing():
    from onnx_explorer.model import FormatSupport

    model = ox.Model(ox.load(_onnx_bytes()).graph, format="toy")
    support = model.support
    assert type(support) is FormatSupport and model.type_inference is None
    assert support.checker is None and not support.runnable
    assert support.input_slot_names("", "MatMul") is None
    assert support.constants(model.graph) == {} and support.weight_note(model, "w") is None
    with pytest.raises(ModelFormatError, match="toy models cannot be run"):
        support.runtime_model(model)
