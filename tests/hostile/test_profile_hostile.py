"""Issue 31, finding 17: ``read_ort_profile`` on hostile files: deep nesting
(RecursionError), 400-digit durations (OverflowError), a FIFO (hung), a 180 MB profile
(1.5 GB peak) → a ModelFormatError or a bounded read, regular files only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from onnx_explorer.errors import ModelFormatError
from onnx_explorer.metrics import read_ort_profile


def _event(name: str, dur: object) -> dict[str, object]:
    return {"cat": "Node", "name": f"{name}_kernel_time", "dur": dur, "args": {"op_name": "Add"}}


def test_a_plain_profile_still_reads(tmp_path: Path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps([_event("a", 1000), _event("a", 3000), _event("b", 500),
                                {"cat": "Session", "name": "x"}]))  # fmt: skip
    profile = read_ort_profile(path)
    assert profile.latency_ms == {"a": 2.0, "b": 0.5}
    (tmp_path / "o.json").write_text(json.dumps({"traceEvents": [_event("c", 2000)]}))
    assert read_ort_profile(tmp_path / "o.json").latency_ms == {"c": 2.0}
    text = json.dumps([_event("ü" * 200_001, 1000)] * 6, ensure_ascii=False)
    (tmp_path / "u.json").write_text(text, encoding="utf-8")  # characters cut by chunks
    assert read_ort_profile(tmp_path / "u.json").runs == {"ü" * 200_001: 6}


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,  # nesting: RecursionError before
        '[{"cat": "Node", "name": "a_kernel_time", "dur": ' + "[" * 100_000,
        '{"traceEvents": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '[{"cat": "Node", "name": "a_kernel_time", "dur": 1' + "0" * 5000 + "}]",
        "[1, 2,]",
        "[1 2]",
        "[",
        "[" + "1," * 10,
        '"text"',
        "",
        "\xff\xfe",
    ],
)
def test_bad_json_is_a_model_format_error(tmp_path: Path, text: str):
    path = tmp_path / "p.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape") if text != "\xff\xfe" else b"\xff\xfe")
    with pytest.raises(ModelFormatError):
        read_ort_profile(path)


def test_durations_past_float_range_leave_their_event_out(tmp_path: Path):
    path = tmp_path / "p.json"
    path.write_text('[{"cat": "Node", "name": "a_kernel_time", "dur": 1' + "0" * 400 + "},"
                    '{"cat": "Node", "name": "b_kernel_time", "dur": 1e999},'
                    '{"cat": "Node", "name": "c_kernel_time", "dur": 2000}]')  # fmt: skip
    assert read_ort_profile(path).latency_ms == {"c": 2.0}


def test_an_event_past_the_cap_is_refused(tmp_path: Path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps([_event("x" * (2 << 20), 1)]))
    with pytest.raises(ModelFormatError, match="event of over"):
        read_ort_profile(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_is_refused_not_waited_on(tmp_path: Path):
    fifo = tmp_path / "profile.json"
    os.mkfifo(fifo)
    done = threading.Event()
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_ort_profile(fifo)
        except BaseException as exc:
            outcome.append(exc)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    finished = done.wait(5)
    if not finished:  # unblock the reader so the test process can end
        with open(fifo, "wb"):
            pass
    assert finished, "read_ort_profile waited on a FIFO"
    assert isinstance(outcome[0], ModelFormatError) and "regular file" in str(outcome[0])


def test_a_directory_is_refused(tmp_path: Path):
    with pytest.raises((ModelFormatError, OSError)):
        read_ort_profile(tmp_path)


_CHILD = """
import sys, time
from onnx_explorer.metrics import read_ort_profile
started = time.monotonic()
profile = read_ort_profile(sys.argv[1])
print(len(profile.latency_ms), time.monotonic() - started,
      int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]))
"""


@pytest.mark.skipif(
    sys.platform != "linux", reason="VmHWM: this process's peak (ru_maxrss survives exec)"
)
def test_a_180_mb_profile_reads_in_bounded_memory(tmp_path: Path):
    path = tmp_path / "big.json"
    event = json.dumps(_event("node_%05d", 1234)) + ",\n"
    with open(path, "w") as fh:
        fh.write("[\n")
        block = "".join(event.replace("%05d", f"{k:05d}") for k in range(2000))
        while fh.tell() < 180 << 20:
            fh.write(block)
        fh.write(json.dumps(_event("last", 1)) + "]\n")
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    nodes, seconds, peak_kb = out.stdout.split()
    print(nodes, seconds, peak_kb)
    assert int(nodes) == 2001
    assert int(peak_kb) < 200 * 1024  # 1.5 GB before
    assert float(seconds) < 60
