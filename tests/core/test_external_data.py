"""External tensor data: lazy, shared, and safe against hostile model files."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import onnx
import pytest
from builders import set_external, with_external_data

import onnx_explorer as ox
from onnx_explorer.errors import ExplorerError

HOSTILE = "/layer1/W"  # the tensor each hostile case rewrites; the others must keep working


def test_external_tensors_read_lazily_and_share_one_map(tmp_path):
    path, arrays = with_external_data(tmp_path)
    model = ox.load(path)
    tensors = model.graph.initializers
    for name, expected in arrays.items():
        assert tensors[name].location.kind == "external"
        assert tensors[name].location.path == "weights.bin"
        np.testing.assert_array_equal(tensors[name].numpy(), expected)
    # One map for the data file, however many tensors live in it.
    mapped = [p.name for p in model._data_files._files]
    assert mapped.count("weights.bin") == 1


def test_missing_data_file_still_opens_and_lists_every_tensor(tmp_path):
    path, arrays = with_external_data(tmp_path)
    (tmp_path / "weights.bin").unlink()
    model = ox.load(path)
    assert {n: t.shape for n, t in model.graph.initializers.items()} == {
        n: a.shape for n, a in arrays.items()
    }
    with pytest.raises(ox.ExternalDataError, match=r"/layer1/W.*does not exist"):
        model.graph.initializers["/layer1/W"].numpy()


def test_open_never_touches_external_data(tmp_path):
    # A FIFO blocks whoever reads it: opening and listing must not even open it.
    path, _ = with_external_data(tmp_path)
    (tmp_path / "weights.bin").unlink()
    os.mkfifo(tmp_path / "weights.bin")
    model = ox.load(path)
    assert sum(t.nbytes for t in model.graph.initializers.values()) > 0
    from onnx_explorer.summary import summarize

    assert summarize(model)["weight_bytes"] > 0


def test_data_in_another_directory(tmp_path):
    path, arrays = with_external_data(tmp_path / "model")
    data_dir = tmp_path / "elsewhere"
    data_dir.mkdir()
    os.replace(tmp_path / "model" / "weights.bin", data_dir / "weights.bin")
    model = ox.load(path, external_data_dir=data_dir)
    np.testing.assert_array_equal(
        model.graph.initializers["/layer2/W"].numpy(), arrays["/layer2/W"]
    )
    with pytest.raises(ox.ExternalDataError):
        ox.load(path).graph.initializers["/layer2/W"].numpy()


def test_in_memory_model_needs_external_data_dir(tmp_path):
    path, arrays = with_external_data(tmp_path)
    proto = onnx.load(path, load_external_data=False)
    with pytest.raises(ox.ExternalDataError, match="external_data_dir"):
        ox.load(proto).graph.initializers["/layer1/b"].numpy()
    model = ox.load(proto, external_data_dir=tmp_path)
    np.testing.assert_array_equal(
        model.graph.initializers["/layer1/b"].numpy(), arrays["/layer1/b"]
    )
    from_bytes = ox.load(path.read_bytes(), external_data_dir=tmp_path)
    np.testing.assert_array_equal(
        from_bytes.graph.initializers["/layer1/b"].numpy(), arrays["/layer1/b"]
    )


def test_checksum_verification(tmp_path):
    path, _ = with_external_data(tmp_path)
    tensor = ox.load(path).graph.initializers["/layer1/W"]
    assert tensor.checksum == hashlib.sha1((tmp_path / "weights.bin").read_bytes()).hexdigest()
    assert tensor.verify_checksum() is True
    with open(tmp_path / "weights.bin", "r+b") as fh:
        fh.seek(10)
        fh.write(b"\xff")
    assert ox.load(path).graph.initializers["/layer1/W"].verify_checksum() is False


def test_checksum_absent_or_tensor_not_external(tmp_path):
    path, _ = with_external_data(tmp_path, checksum=False)
    model = ox.load(path)
    with pytest.raises(ox.ExternalDataError, match="no checksum"):
        model.graph.initializers["/layer1/W"].verify_checksum()
    from builders import mlp

    with pytest.raises(ox.ExternalDataError, match="not stored as external"):
        ox.load(mlp()).graph.initializers["/layer1/W"].verify_checksum()


# -- hostile and broken entries ------------------------------------------------------
def _model_with(tmp_path, **entries):
    """The external MLP with one tensor's entries replaced; returns the opened model."""
    path, arrays = with_external_data(tmp_path, checksum=False)
    proto = onnx.load(path, load_external_data=False)
    tensor = next(t for t in proto.graph.initializer if t.name == HOSTILE)
    set_external(tensor, **entries)
    onnx.save(proto, path)
    return ox.load(path), arrays


def _assert_rejected(model, arrays, error_type, pattern):
    tensor = model.graph.initializers[HOSTILE]
    assert tensor.shape == (4, 8)  # still listed with its shape and dtype
    with pytest.raises(error_type, match=pattern) as info:
        tensor.numpy()
    assert isinstance(info.value, ExplorerError)
    assert HOSTILE in str(info.value)
    # The rest of the model stays usable.
    np.testing.assert_array_equal(
        model.graph.initializers["/layer2/W"].numpy(), arrays["/layer2/W"]
    )


@pytest.mark.parametrize(
    ("location", "pattern"),
    [
        ("../secret.bin", r"'\.\.' component"),
        ("sub/../../secret.bin", r"'\.\.' component"),
        ("sub/../weights.bin", r"'\.\.' component"),
        ("..\\secret.bin", r"'\.\.' component"),
        ("/etc/passwd", "absolute path"),
        ("C:\\Windows\\system32\\config", "drive path"),
        ("c:weights.bin", "drive path"),
        ("\\\\server\\share\\weights.bin", "UNC path"),
        ("//server/share/weights.bin", "UNC path"),
        ("weights.bin\x00.txt", "NUL byte"),
        ("", "no location"),
    ],
    ids=[
        "dotdot",
        "nested-dotdot",
        "dotdot-back-inside",
        "backslash-dotdot",
        "absolute",
        "drive",
        "drive-relative",
        "unc-backslash",
        "unc-slash",
        "nul",
        "empty",
    ],
)
def test_hostile_locations_are_refused(tmp_path, location, pattern):
    model, arrays = _model_with(tmp_path, location=location, offset="0", length="128")
    _assert_rejected(model, arrays, ox.UnsafePathError, pattern)


def test_missing_location_key(tmp_path):
    model, arrays = _model_with(tmp_path, offset="0", length="128")
    _assert_rejected(model, arrays, ox.UnsafePathError, "no location")


def test_symlinked_file_pointing_outside(tmp_path):
    secret = tmp_path.parent / f"{tmp_path.name}-secret.bin"
    secret.write_bytes(b"\x01" * 128)
    model, arrays = _model_with(tmp_path, location="link.bin", offset="0", length="128")
    os.symlink(secret, tmp_path / "link.bin")
    _assert_rejected(model, arrays, ox.UnsafePathError, "symlink")


def test_symlinked_file_even_inside_the_directory(tmp_path):
    model, arrays = _model_with(tmp_path, location="link.bin", offset="0", length="128")
    os.symlink(tmp_path / "weights.bin", tmp_path / "link.bin")
    _assert_rejected(model, arrays, ox.UnsafePathError, "symlink")


def test_symlinked_parent_directory_escaping(tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "w.bin").write_bytes(b"\x01" * 128)
    model, arrays = _model_with(tmp_path, location="sub/w.bin", offset="0", length="128")
    os.symlink(outside, tmp_path / "sub")
    _assert_rejected(model, arrays, ox.UnsafePathError, "outside")


def test_fifo_is_refused_without_blocking(tmp_path):
    model, arrays = _model_with(tmp_path, location="pipe.bin", offset="0", length="128")
    os.mkfifo(tmp_path / "pipe.bin")
    _assert_rejected(model, arrays, ox.UnsafePathError, "not a regular file")


def test_directory_is_refused(tmp_path):
    model, arrays = _model_with(tmp_path, location="adir", offset="0", length="128")
    (tmp_path / "adir").mkdir()
    _assert_rejected(model, arrays, ox.ExternalDataError, "adir")


def test_missing_file(tmp_path):
    model, arrays = _model_with(tmp_path, location="nope.bin", offset="0", length="128")
    _assert_rejected(model, arrays, ox.ExternalDataError, "does not exist")


@pytest.mark.parametrize(
    ("offset", "length", "pattern"),
    [
        ("-4", "128", "offset '-4' is not a non-negative integer"),
        ("abc", "128", "offset 'abc'"),
        ("1e3", "128", "offset '1e3'"),
        (" 12", "128", "offset ' 12'"),
        ("\u0661\u0662", "128", "not a non-negative integer"),  # Arabic-Indic digits
        ("0", "-128", "length '-128'"),
        ("0", "0x80", "length '0x80'"),
        ("999999999999999999999999", "128", "past the end"),
        ("0", "999999999999999999999999", "run past the end"),
        ("200", "128", "run past the end"),
    ],
    ids=[
        "negative-offset",
        "alpha-offset",
        "float-offset",
        "space-offset",
        "unicode-digits",
        "negative-length",
        "hex-length",
        "huge-offset",
        "huge-length",
        "range-past-end",
    ],
)
def test_bad_offsets_and_lengths(tmp_path, offset, length, pattern):
    model, arrays = _model_with(tmp_path, location="weights.bin", offset=offset, length=length)
    _assert_rejected(model, arrays, ox.ExternalDataError, pattern)


def test_length_disagreeing_with_dims(tmp_path):
    model, arrays = _model_with(tmp_path, location="weights.bin", offset="0", length="64")
    _assert_rejected(model, arrays, ox.TensorDataError, "needs 128")


def test_truncated_data_file(tmp_path):
    path, arrays = with_external_data(tmp_path, checksum=False)
    data = (tmp_path / "weights.bin").read_bytes()
    (tmp_path / "weights.bin").write_bytes(data[:150])
    model = ox.load(path)
    with pytest.raises(ox.ExternalDataError, match="truncated"):
        model.graph.initializers["/layer2/W"].numpy()
    np.testing.assert_array_equal(
        model.graph.initializers["/layer1/W"].numpy(), arrays["/layer1/W"]
    )


def test_unknown_keys_are_ignored(tmp_path):
    model, arrays = _model_with(
        tmp_path, location="weights.bin", offset="0", length="128", color="blue", **{"": "x"}
    )
    np.testing.assert_array_equal(model.graph.initializers[HOSTILE].numpy(), arrays[HOSTILE])


def test_basepath_in_the_file_is_ignored(tmp_path):
    elsewhere = tmp_path.parent / f"{tmp_path.name}-basepath"
    elsewhere.mkdir()
    (elsewhere / "weights.bin").write_bytes(b"\xff" * 4096)
    model, arrays = _model_with(
        tmp_path, location="weights.bin", offset="0", length="128", basepath=str(elsewhere)
    )
    np.testing.assert_array_equal(model.graph.initializers[HOSTILE].numpy(), arrays[HOSTILE])


def test_very_long_location(tmp_path):
    model, arrays = _model_with(tmp_path, location="a" * 10_000, offset="0", length="128")
    _assert_rejected(model, arrays, ox.ExternalDataError, "cannot be opened|does not exist")


def test_missing_offset_means_zero_and_missing_length_means_rest(tmp_path):
    model, arrays = _model_with(tmp_path, location="weights.bin")
    # The whole file is longer than the tensor: a length that disagrees is reported.
    with pytest.raises(ox.TensorDataError, match=HOSTILE):
        model.graph.initializers[HOSTILE].numpy()
    model, arrays = _model_with(tmp_path, location="weights.bin", length="128")
    np.testing.assert_array_equal(model.graph.initializers[HOSTILE].numpy(), arrays[HOSTILE])


def test_model_file_is_never_written(tmp_path):
    path, _ = with_external_data(tmp_path)
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    model = ox.load(path)
    for tensor in model.graph.initializers.values():
        tensor.numpy()
        tensor.verify_checksum()
    model.close()
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    assert before == after


def test_checksum_of_a_fifo_is_refused_without_blocking(tmp_path):
    model, arrays = _model_with(
        tmp_path, location="pipe.bin", offset="0", length="128", checksum="0" * 40
    )
    os.mkfifo(tmp_path / "pipe.bin")
    with pytest.raises(ox.UnsafePathError, match=r"/layer1/W.*not a regular file"):
        model.graph.initializers[HOSTILE].verify_checksum()
    np.testing.assert_array_equal(
        model.graph.initializers["/layer2/W"].numpy(), arrays["/layer2/W"]
    )


def test_checksum_of_a_symlink_is_refused(tmp_path):
    model, _ = _model_with(
        tmp_path, location="link.bin", offset="0", length="128", checksum="0" * 40
    )
    os.symlink(tmp_path / "weights.bin", tmp_path / "link.bin")
    with pytest.raises(ox.UnsafePathError, match="symlink.*external_data_dir"):
        model.graph.initializers[HOSTILE].verify_checksum()
