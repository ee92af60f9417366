"""Per-node latency from an onnxruntime profile (``SessionOptions.enable_profiling``).

The profile is a JSON list of Chrome-trace events; each kernel run is an event with
``"cat": "Node"`` and ``"name": "<node name>_kernel_time"``, its duration ``dur`` in
microseconds and ``args.op_name``. onnxruntime renames nodes it fuses or inserts
(``MatMul_1`` and ``Add_2`` become ``MatMul_1_Add_2``-style fused nodes, memcpy nodes
appear): those names match no node of the model and are reported, not dropped.

The file is untrusted: only a regular file is read (a FIFO or device is refused, never
waited on), the list form is read event by event (memory holds one event and the totals,
not the parsed file: a 180 MB profile peaked at 1.5 GB), an event is at most
:data:`EVENT_MAX_BYTES`, the object form at most :data:`OBJECT_MAX_BYTES`; nesting too
deep, numbers past float range and other bad JSON are a
:class:`~onnx_explorer.errors.ModelFormatError`, a duration that is no finite
non-negative number leaves its event out.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import ModelFormatError
from ..model import Graph, Model

_SUFFIX = "_kernel_time"

#: A profile of a model must match at least this share of its names to be taken for it.
MATCH_MIN_SHARE = 0.5

#: Largest profile read (onnxruntime writes ~200 bytes per event).
PROFILE_MAX_BYTES = 2 * 1024**3
#: Largest single event of the list form (onnxruntime's are a few hundred bytes).
EVENT_MAX_BYTES = 1 << 20
#: Largest profile in Chrome's object form (``{"traceEvents": [...]}``), parsed whole.
OBJECT_MAX_BYTES = 64 << 20
_CHUNK = 1 << 20


@dataclass
class Profile:
    """Mean kernel time per node, in milliseconds, over the runs in a profile.

    ``latency_ms``: node name (onnxruntime's) → mean ms per run; ``runs``: runs per
    node; ``op_types``: node name → op type onnxruntime reported. With a model:
    ``matched`` (names that are nodes of the model), ``unmatched`` (names onnxruntime
    made, by fusion or by inserting copies) and ``missing`` (model nodes with no time:
    fused away, or run as part of another kernel).
    """

    latency_ms: dict[str, float]
    runs: dict[str, int] = field(default_factory=dict)
    op_types: dict[str, str] = field(default_factory=dict)
    matched: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def series(self) -> dict[str, float]:
        """Node name → mean ms, only names of the model when one was given."""
        if self.matched or self.unmatched:
            return {name: self.latency_ms[name] for name in self.matched}
        return dict(self.latency_ms)

    @property
    def total_ms(self) -> float:
        return sum(self.latency_ms.values())

    def summary(self) -> str:
        text = f"{len(self.latency_ms)} nodes timed, {self.total_ms:.3f} ms per run"
        if self.matched or self.unmatched:
            text += (
                f"; {len(self.matched)} match the model's nodes, {len(self.unmatched)} renamed "
                f"by onnxruntime (fused or inserted), {len(self.missing)} model nodes untimed"
            )
        return text


def read_ort_profile(path: str | os.PathLike[str], model: Model | Graph | None = None) -> Profile:
    """Read an onnxruntime profile JSON into per-node mean latencies (ms per run).

    With ``model``, names are matched against its main graph's nodes; a profile that
    matches under half of them raises :class:`~onnx_explorer.errors.ModelFormatError`
    saying how many matched (it was likely written for another model).
    """
    path = Path(path)
    totals: dict[str, float] = {}
    runs: dict[str, int] = {}
    op_types: dict[str, str] = {}
    try:
        with _open_regular(path) as fh:
            for event in _events(fh, path):  # one at a time: the totals are all we keep
                timed = _kernel_event(event)
                if timed is None:
                    continue
                name, dur_us, op = timed
                totals[name] = totals.get(name, 0.0) + dur_us
                runs[name] = runs.get(name, 0) + 1
                if op:
                    op_types[name] = op
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        if isinstance(exc, ModelFormatError):
            raise
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise ModelFormatError(f"{path}: not an onnxruntime profile (not JSON: {what})") from None
    latency = {name: totals[name] / runs[name] / 1000.0 for name in totals}
    profile = Profile(latency, runs, op_types)
    if model is not None:
        _match(profile, model.graph if isinstance(model, Model) else model, path)
    return profile


def _open_regular(path: Path) -> IO[bytes]:
    """``path`` opened for reading if it is a regular file of at most
    :data:`PROFILE_MAX_BYTES` (opened without blocking: a FIFO is refused, not waited on)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ModelFormatError(f"{path}: not a regular file (a profile is a JSON file)")
        if info.st_size > PROFILE_MAX_BYTES:
            raise ModelFormatError(
                f"{path}: profile of {info.st_size:,} bytes is too large to read"
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _events(fh: IO[bytes], path: Path) -> Any:
    """The profile's events, one at a time: the list form streamed, the object form
    (``{"traceEvents": [...]}``) parsed whole up to :data:`OBJECT_MAX_BYTES`."""
    decoder = json.JSONDecoder()
    buffer = fh.read(_CHUNK).decode("utf-8")
    start = len(buffer) - len(buffer.lstrip())
    if buffer[start : start + 1] == "{":
        rest = fh.read(OBJECT_MAX_BYTES + 1 - len(buffer))
        if len(buffer) + len(rest) > OBJECT_MAX_BYTES:
            raise ModelFormatError(
                f"{path}: a profile in the object form is read whole: over "
                f"{OBJECT_MAX_BYTES:,} bytes is too large (onnxruntime writes the list form)"
            )
        found = json.loads(buffer + rest.decode("utf-8"))
        events = found.get("traceEvents") if isinstance(found, dict) else None
        if not isinstance(events, list):
            raise ModelFormatError(
                f"{path}: not an onnxruntime profile (expected a list of events)"
            )
        yield from events
        return
    if buffer[start : start + 1] != "[":
        raise ModelFormatError(f"{path}: not an onnxruntime profile (expected a list of events)")
    at = start + 1
    tail = b""  # bytes of a character cut by a chunk's end
    finished = False
    expect_item = True  # after "[" or ",": an event (or "]" right after "[")
    first = True
    while True:
        while at < len(buffer) and buffer[at] in " \t\r\n":
            at += 1
        if at >= len(buffer) or (not finished and len(buffer) - at < EVENT_MAX_BYTES):
            if not finished:  # top up the buffer: an event always fits whole
                chunk = fh.read(_CHUNK)
                finished = not chunk
                data = tail + chunk
                cut = len(data) if finished else _complete(data)
                buffer, tail = buffer[at:] + data[:cut].decode("utf-8"), data[cut:]
                at = 0
                continue
            raise ModelFormatError(f"{path}: not an onnxruntime profile (the list never ends)")
        char = buffer[at]
        if char == "]" and (not expect_item or first):
            return
        if char == "," and not expect_item:
            at += 1
            expect_item = True
            continue
        if not expect_item:
            raise ModelFormatError(f"{path}: not an onnxruntime profile (bad JSON at an event)")
        try:
            event, end = decoder.raw_decode(buffer, at)
        except json.JSONDecodeError:
            if finished:
                raise
            raise ModelFormatError(  # the buffer held EVENT_MAX_BYTES from here on
                f"{path}: bad JSON or an event of over {EVENT_MAX_BYTES:,} bytes: not an "
                "onnxruntime profile"
            ) from None
        if end - at > EVENT_MAX_BYTES:
            raise ModelFormatError(
                f"{path}: an event of over {EVENT_MAX_BYTES:,} bytes: not an onnxruntime profile"
            )
        yield event
        at, expect_item, first = end, False, False


def _complete(data: bytes) -> int:
    """How many leading bytes of ``data`` are whole UTF-8 characters."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # a continuation byte: look further back
            continue
        need = 1 if byte < 0x80 else 4 if byte >= 0xF0 else 3 if byte >= 0xE0 else 2
        return len(data) if back >= need else len(data) - back
    return len(data)


def _kernel_event(event: Any) -> tuple[str, float, str] | None:
    if not isinstance(event, dict) or event.get("cat") != "Node":
        return None
    name, dur = event.get("name"), event.get("dur")
    if not isinstance(name, str) or not name.endswith(_SUFFIX):
        return None
    if isinstance(dur, bool) or not isinstance(dur, int | float):
        return None
    if isinstance(dur, int) and dur > 1 << 62:  # 400 digits: no duration (float() overflows)
        return None
    if not (math.isfinite(dur) and dur >= 0):
        return None
    args = event.get("args")
    op = args.get("op_name") if isinstance(args, dict) else None
    return name[: -len(_SUFFIX)], float(dur), op if isinstance(op, str) else ""


def _match(profile: Profile, graph: Graph, path: Path) -> None:
    names = {node.name for node in graph.nodes}
    profile.matched = [n for n in profile.latency_ms if n in names]
    profile.unmatched = [n for n in profile.latency_ms if n not in names]
    timed = set(profile.matched)
    profile.missing = [node.name for node in graph.nodes if node.name not in timed]
    if profile.latency_ms and len(profile.matched) < MATCH_MIN_SHARE * len(profile.latency_ms):
        raise ModelFormatError(
            f"{path}: only {len(profile.matched)} of {len(profile.latency_ms)} timed nodes "
            f"match the model's {len(names):,} node names: is this a profile of another model?"
        )
