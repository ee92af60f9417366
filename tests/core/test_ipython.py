"""``%load_ext onnx_explorer``: magics, ModelProto display, unload — through a real IPython shell."""

from __future__ import annotations

import onnx
import pytest
from builders import mlp

from onnx_explorer.widgets._explorer import Explorer

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def ip():
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    yield shell
    shell.run_line_magic("unload_ext", "onnx_explorer")


@pytest.fixture
def model_path(tmp_path):
    path = tmp_path / "my model.onnx"
    onnx.save(mlp(), path)
    return path


def test_load_registers_magics_and_explore_returns_an_explorer(ip, model_path):
    ip.run_line_magic("load_ext", "onnx_explorer")
    assert "onnx_explore" in ip.magics_manager.magics["line"]
    ex = ip.run_line_magic("onnx_explore", f'"{model_path}"')
    assert isinstance(ex, Explorer)
    assert ex.model.path == model_path


def test_summary_magic_prints_the_summary(ip, model_path, capsys):
    ip.run_line_magic("load_ext", "onnx_explorer")
    ip.run_line_magic("onnx_summary", f'"{model_path}"')
    out = capsys.readouterr().out
    assert "MatMul" in out and "x  float32  [batch, 4]" in out


def test_magic_errors_are_one_line_not_a_traceback(ip, tmp_path, capsys):
    ip.run_line_magic("load_ext", "onnx_explorer")
    assert ip.run_line_magic("onnx_explore", str(tmp_path / "missing.onnx")) is None
    assert "does not exist" in capsys.readouterr().out
    assert ip.run_line_magic("onnx_explore", "") is None
    assert "onnx_explore" in capsys.readouterr().out


def test_external_data_dir_option(ip, tmp_path):
    from builders import with_external_data

    path, arrays = with_external_data(tmp_path / "m")
    (tmp_path / "d").mkdir()
    (tmp_path / "m" / "weights.bin").rename(tmp_path / "d" / "weights.bin")
    ip.run_line_magic("load_ext", "onnx_explorer")
    ex = ip.run_line_magic("onnx_explore", f"{path} --external-data-dir {tmp_path / 'd'}")
    assert ex.tensor("/layer1/b").tolist() == arrays["/layer1/b"].tolist()


def test_model_proto_displays_as_the_explorer(ip):
    ip.run_line_magic("load_ext", "onnx_explorer")
    data, _ = ip.display_formatter.format(mlp())
    assert WIDGET_MIME in data
    assert "MatMul" in data["text/html"]


def test_unload_removes_everything(ip, model_path):
    ip.run_line_magic("load_ext", "onnx_explorer")
    ip.run_line_magic("unload_ext", "onnx_explorer")
    assert "onnx_explore" not in ip.magics_manager.magics["line"]
    assert "onnx_summary" not in ip.magics_manager.magics["line"]
    data, _ = ip.display_formatter.format(mlp())
    assert WIDGET_MIME not in data
    # Loading again works after an unload.
    ip.run_line_magic("load_ext", "onnx_explorer")
    assert "onnx_explore" in ip.magics_manager.magics["line"]


def test_explore_magic_opens_safetensors_gguf_and_tflite(ip, tmp_path, capsys):
    pytest.importorskip("gguf")
    import numpy as np
    from weight_files import JARVIS, checkpoint, save_gguf, save_sharded

    ip.run_line_magic("load_ext", "onnx_explorer")
    save_gguf(tmp_path / "m.gguf", {"blk.0.attn_q.weight": (np.ones((2, 32), np.float32), "Q8_0")})
    index = save_sharded(tmp_path / "ckpt", checkpoint())
    for path, fmt in ((index, "safetensors"), (tmp_path / "ckpt", "safetensors"),
                      (tmp_path / "m.gguf", "gguf"), (JARVIS, "tflite")):  # fmt: skip
        ex = ip.run_line_magic("onnx_explore", f'"{path}"')
        assert isinstance(ex, Explorer) and ex.model.format == fmt
        assert ex.model.graph.nodes  # module boxes, or the TFLite operators
    ip.run_line_magic("onnx_summary", f'"{JARVIS}"')
    out = capsys.readouterr().out
    assert "signature serving_default" in out and "CONV_2D" in out
