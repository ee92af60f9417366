"""The only place onnxruntime is imported (lazily), and its errors made ours."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ExplorerError

INSTALL_HINT = "pip install onnx_explorer[run]"


class OnnxRuntimeMissingError(ExplorerError, ImportError):
    """onnxruntime is not installed (it is the optional ``[run]`` extra)."""


class RunError(ExplorerError, RuntimeError):
    """onnxruntime could not build or run the model; the message names the node."""


def onnxruntime() -> Any:
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise OnnxRuntimeMissingError(
            f"running a model needs onnxruntime, which is not installed: {INSTALL_HINT}"
        ) from exc
    return ort


_NODE_PATTERNS = (
    re.compile(r"Name:'([^']*)'"),
    re.compile(r"node with name '([^']*)'"),
    re.compile(r"In Node, \(\"([^\"]*)\""),
)


def failing_node(message: str) -> str | None:
    """The node onnxruntime names in an error message, if it names one."""
    for pattern in _NODE_PATTERNS:
        found = pattern.search(message)
        if found:
            return found.group(1)
    return None


_shared_arena: bool | None = None  # None: not tried yet
_arena_cap: int | None = None  # the shared arena's max_mem (None: not ours, no cap known)


def _physical_memory() -> int | None:
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return int(pages) * int(size) if pages > 0 and size > 0 else None


#: The shared arena's ``max_mem``, fixed when it is registered (once per process), and
#: a run's default memory limit: 1 GiB, or a quarter of the machine's memory if less.
ARENA_LIMIT = min(1 << 30, (_physical_memory() or 1 << 32) // 4)
_arena_lock = threading.RLock()


def _use_shared_arena(ort: Any) -> bool:
    """Register one CPU arena for every segment session of every run (once per process).

    A run makes a session per segment, and each session's own arena starts empty: every
    segment's outputs were fresh pages, and page faults were most of a capture run's time
    in onnxruntime (47 → 29 ms on the 2,000-node benchmark). Sessions opt in with
    ``session.use_env_allocators``; the user's own sessions are not affected."""
    global _shared_arena
    with _arena_lock:  # two first runs at once (two threads) register it once
        if _shared_arena is None:
            _shared_arena = _register_shared_arena(ort)
            if _shared_arena:
                # The arena never hands back its first region: make that a small one, not
                # the first segment's outputs (128 MB stayed allocated after such a run).
                _tiny_run(ort.RunOptions())  # (re-enters: the lock is reentrant)
    return _shared_arena


def _register_shared_arena(ort: Any) -> bool:
    global _arena_cap
    kind, memory = ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, ort.OrtMemType.DEFAULT
    info = ort.OrtMemoryInfo("Cpu", kind, 0, memory)
    # grow by what is asked (not to the next power of two), up to the default memory
    # limit: an allocation beyond it fails in onnxruntime, naming the node, instead of
    # taking the kernel's memory (a 150-byte ConstantOfShape asked for 4 GB)
    cap = ARENA_LIMIT
    config = ort.OrtArenaCfg({"arena_extend_strategy": 1, "max_mem": cap})
    try:
        ort.create_and_register_allocator(info, config)
        _arena_cap = cap
        return True
    except Exception as exc:  # already registered by the host application: use it as is
        return "already" in str(exc).lower()


_tiny_session: Any = None  # a one-value session over the shared arena, made once


def _tiny_run(options: Any) -> None:
    global _tiny_session
    if _tiny_session is None:
        from onnx import TensorProto, helper

        a, b = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "ab")
        graph = helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], "tiny", [a], [b])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 7  # any onnxruntime this package supports reads it
        _tiny_session = make_session(model.SerializeToString(), None)
    _tiny_session.run(None, {"a": np.ones(1, np.float32)}, options)


#: Seconds a run's end waits for the arena to be handed back (see below).
SHRINK_WAIT = 1.0
_shrink_lock = threading.Lock()  # one shrink under way at a time
_settled = threading.Event()  # clear while a shrink is under way
_settled.set()


def shrink_shared_arena() -> None:
    """Hand the shared arena's free memory back to the system once a run's values are
    gone, so a run does not leave its peak allocated in the kernel. (Asked of the last
    segment's own run it freed nothing: onnxruntime's arrays are views of the arena, and
    that run's outputs still held their chunks.)

    On a thread, waited for at most :data:`SHRINK_WAIT`: after a run that made very many
    values the arena holds as many regions, and onnxruntime takes a while to free them
    (131,072 rows split into a sequence: 23 s); the caller goes on, and the next run's
    sessions wait for it (:func:`arena_settled`), since onnxruntime would block them."""
    if not _shared_arena:
        return
    with _shrink_lock:
        if not _settled.is_set():
            return  # this run's sessions waited for it: none was built, nothing to give
        _settled.clear()
    options = onnxruntime().RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def shrink() -> None:
        try:
            _tiny_run(options)
        except Exception:  # best effort: the memory is handed back at the next run instead
            pass
        finally:
            _settled.set()

    threading.Thread(target=shrink, name="onnx-explorer-arena-shrink", daemon=True).start()
    _settled.wait(SHRINK_WAIT)


def arena_settled(timeout: float | None) -> bool:
    """Wait at most ``timeout`` seconds (None: as long as it takes) for a shrink of the
    shared arena under way to end; False when it has not."""
    return _settled.wait(timeout)


def arena_cap() -> int | None:
    """The shared arena's ``max_mem`` once registered by this package (else None)."""
    return _arena_cap


def make_session(
    model_bytes: bytes, base_dir: Path | None, *, memory_limit: int | None = ARENA_LIMIT
) -> Any:
    """A CPU session over a model in memory. External data is read in place from
    ``base_dir`` (the user's model directory): nothing is written or copied.

    Its values live in the shared arena, capped at :data:`ARENA_LIMIT`, when
    ``memory_limit`` is within that cap; a larger limit (or None) gives the session an
    arena of its own, which onnxruntime cannot cap (the limit is then checked before
    the run only). Weights never count: they are allocated outside the arena."""
    ort = onnxruntime()
    options = ort.SessionOptions()
    options.log_severity_level = 4  # our error says what failed: no ORT lines on stderr
    # no spin-waiting intra-op threads: between a capture's small kernels they kept both
    # cores busy doing nothing, starving the statistics thread (20k-node capture: 4.4 →
    # 3.1 s of CPU, run part −15–30 % on the 2 shared cores; bench/results/run.md)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # weights outside the arena: its cap bounds the values a run makes, not the model
    options.add_session_config_entry("session.use_device_allocator_for_initializers", "1")
    if _use_shared_arena(ort) and (
        _arena_cap is None or (memory_limit is not None and memory_limit <= _arena_cap)
    ):
        options.add_session_config_entry("session.use_env_allocators", "1")
    if base_dir is not None:
        options.add_session_config_entry(
            "session.model_external_initializers_file_folder_path", str(base_dir)
        )
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
