"""Every command on safetensors, GGUF and TFLite files: exit codes, what the text shows, and
a broken file as one line on stderr (no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from weight_files import (
    JARVIS,
    VOCAB_GGUF,
    checkpoint,
    fine_tuned,
    save_gguf,
    save_safetensors,
    save_sharded,
)

from onnx_explorer.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("gguf")
    folder = tmp_path_factory.mktemp("formats")
    base = checkpoint()
    values = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    save_gguf(folder / "m.gguf", {"blk.0.attn_q.weight": (values, "Q4_0"),
                                  "output_norm.weight": (values[0], None)})  # fmt: skip
    return {
        "safetensors": save_safetensors(folder / "a.safetensors", base, {"format": "pt"}),
        "tuned": save_safetensors(
            folder / "b.safetensors", fine_tuned(base, {"lm_head.weight": 0.1}), {"format": "pt"}
        ),
        "sharded": save_sharded(folder / "sharded", base),
        "gguf": folder / "m.gguf",
        "vocab": VOCAB_GGUF,
        "tflite": JARVIS,
    }


KINDS = ["safetensors", "sharded", "gguf", "vocab", "tflite"]


@pytest.mark.parametrize("kind", KINDS)
def test_summary_shows_the_format_and_its_metadata(files, kind, capsys) -> None:
    assert main(["summary", str(files[kind])]) == 0
    out = capsys.readouterr().out
    expected = {
        "safetensors": ["format       safetensors", "metadata     format = pt"],
        "sharded": ["metadata     shard model-00001-of-00002.safetensors = ", "total_size"],
        "gguf": ["format       gguf", "general.architecture = llama", "Q4_0"],
        "vocab": ["tokenizer.ggml.tokens = array of 30522 strings", "0 tensors"],
        "tflite": ["format       tflite", "signature serving_default", "CONV_2D"],
    }[kind]
    for text in expected:
        assert text in out, text
    assert "IR" not in out.splitlines()[1] and "opsets" not in out  # no ONNX-only fields
    if kind != "tflite":  # a file of weights has no inputs: no empty headings
        assert "\ninputs\n" not in out and "\noutputs\n" not in out
    assert main(["summary", str(files[kind]), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == ("safetensors" if kind == "sharded" else kind.replace("vocab", "gguf"))


@pytest.mark.parametrize("kind", KINDS)
def test_weights_text_and_json(files, kind, capsys) -> None:
    for extra in ([], ["--dequantize"]):
        assert main(["weights", str(files[kind]), *extra]) == 0
        assert "0 unreadable" in capsys.readouterr().out
    assert main(["weights", str(files[kind]), "--json", "--dequantize"]) == 0
    rows = json.loads(capsys.readouterr().out)
    count = {"safetensors": 11, "sharded": 11, "gguf": 2, "vocab": 0, "tflite": 37}[kind]
    assert len(rows) == count and not any(r["error"] for r in rows)
    if kind == "gguf":
        assert {r["dtype"] for r in rows} == {"Q4_0", "float32"}
    if kind == "tflite":
        assert any(r["quantization"] for r in rows)


def test_diff_exit_codes(files, capsys) -> None:
    assert main(["diff", str(files["safetensors"]), str(files["sharded"]), "--no-weights"]) == 1
    capsys.readouterr()  # the shard map is model metadata: it differs
    assert main(["diff", str(files["safetensors"]), str(files["safetensors"])]) == 0
    assert main(["diff", str(files["safetensors"]), str(files["tuned"])]) == 1
    out = capsys.readouterr().out
    assert "tensors changed (1)" in out and "lm_head.weight: max abs" in out
    assert main(["diff", str(files["gguf"]), str(files["gguf"])]) == 0
    capsys.readouterr()
    assert main(["diff", str(files["tflite"]), str(files["tflite"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["equal"] is True
    assert main(["diff", str(files["gguf"]), str(files["safetensors"])]) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_render_to_dot(files, kind, tmp_path, capsys) -> None:
    out = tmp_path / "g.dot"
    assert main(["render", str(files[kind]), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert out.read_text().startswith("digraph")
    drawn = {"safetensors": 1, "sharded": 1, "gguf": 1, "vocab": 0, "tflite": 40}[kind]
    assert report["drawn"] >= drawn


@pytest.mark.graphviz
def test_render_to_svg(files, tmp_path) -> None:
    for kind in ("sharded", "gguf", "tflite"):
        out = tmp_path / f"{kind}.svg"
        assert main(["render", str(files[kind]), "-o", str(out)]) == 0
        assert "<svg" in out.read_text()


def test_a_broken_file_is_one_line_on_stderr(files, tmp_path) -> None:
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(files["safetensors"].read_bytes()[:200])
    bad_gguf = tmp_path / "bad.gguf"
    bad_gguf.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (2**63).to_bytes(8, "little"))
    for path, command in ((cut, "summary"), (bad_gguf, "weights"), (cut, "render")):
        args = [command, str(path)] + (
            ["-o", str(tmp_path / "x.dot")] if command == "render" else []
        )
        done = subprocess.run(
            [sys.executable, "-m", "onnx_explorer.cli", *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = subprocess.run(
        [sys.executable, "-m", "onnx_explorer.cli", "diff", str(cut), str(files["safetensors"])],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
