"""A run's bounds: a time limit and a memory limit, and onnxruntime calls that respect them.

onnxruntime's work is C++ that never looks at Python's signals: a ``session.run`` of a
Loop with 2^62 trips neither ends nor lets Ctrl-C (Jupyter's "interrupt kernel")
through, and ``InferenceSession()`` runs ONNX shape inference, which a 150-byte
``Einsum`` makes loop for ever. So every onnxruntime call of a run is made on a
thread of its own (one per run, :class:`Worker`; onnxruntime releases the GIL) while
the caller's thread waits in short, interruptible steps: on Ctrl-C or when the run's
deadline passes, a ``session.run`` is told to stop (``RunOptions.terminate``, which
onnxruntime checks before each kernel, also inside Loop bodies) and the call raises at
once (:class:`RunTimeoutError` or the ``KeyboardInterrupt`` itself). A session being built
cannot be told to stop; a model on which ONNX shape inference does not end is refused
before any session is built (:mod:`._precheck`, inference in a child process that is
killed), so a build left behind ends by itself.

The memory limit bounds what onnxruntime may hold for a run's values: checked before
the run on the sizes shape inference gives (:mod:`._precheck`), and at run time by the
shared arena's ``max_mem`` (:mod:`._ort`), so an allocation beyond it fails in
onnxruntime (a clear error naming the node) instead of taking the kernel's memory.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..views._text import human_bytes
from ._ort import ARENA_LIMIT, RunError, arena_settled, make_session, onnxruntime

#: Seconds a run (or a comparison) may take in all, by default: ``timeout=`` changes it,
#: ``timeout=None`` removes it.
RUN_TIMEOUT = 300.0
#: Seconds to wait, after telling onnxruntime to stop, for the kernel it is in to end.
STOP_GRACE = 5.0
_TICK = 0.1  # seconds between looks at the deadline while onnxruntime works

T = TypeVar("T")


#: Bytes of values onnxruntime may hold at once for a run, by default: 1 GiB, or a
#: quarter of the machine's memory when that is less. ``memory_limit=`` changes it.
MEMORY_LIMIT = ARENA_LIMIT


class RunTimeoutError(RunError):
    """The run's time limit passed (``timeout=``): the message says what was under way."""


class MemoryLimitError(RunError):
    """A value the run would make is larger than its memory limit (``memory_limit=``)."""


@dataclass(frozen=True)
class Limits:
    """One run's bounds: its deadline (``time.monotonic``) and memory limit (None: none)."""

    timeout: float | None = None
    memory_limit: int | None = None
    deadline: float | None = None

    @classmethod
    def start(cls, timeout: float | None, memory_limit: int | None) -> Limits:
        """The bounds of a run starting now (TypeError/ValueError for a bad argument)."""
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, int | float):
                raise TypeError(f"timeout must be a number of seconds or None, not {timeout!r}")
            if not timeout > 0:
                raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        if memory_limit is not None:
            if isinstance(memory_limit, bool) or not isinstance(memory_limit, int):
                raise TypeError(
                    f"memory_limit must be a number of bytes or None, not {memory_limit!r}"
                )
            if memory_limit <= 0:
                raise ValueError(
                    f"memory_limit must be a positive number of bytes, not {memory_limit}"
                )
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        return cls(None if timeout is None else float(timeout), memory_limit, deadline)

    def remaining(self) -> float | None:
        """Seconds left before the deadline (never negative), or None without one."""
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def timeout_text(self) -> str:
        return f"the run's time limit of {self.timeout:g} s (timeout=)"

    def check(self, doing: str) -> None:
        """RunTimeoutError when the deadline has passed (``doing``: what was next)."""
        if self.expired():
            raise RunTimeoutError(f"{self.timeout_text()} passed before {doing}")

    def memory_text(self) -> str:
        limit = self.memory_limit
        return (
            "no memory limit"
            if limit is None
            else (f"the run's memory limit of {human_bytes(limit)} (memory_limit={limit})")
        )


#: A run's bounds when none are given: no deadline, the default memory limit.
UNTIMED = Limits(None, MEMORY_LIMIT, None)


class Expired(Exception):
    """The deadline passed while onnxruntime worked: ``reason`` is what its call raised
    once told to stop (it may name the node), or None when it had not ended yet."""

    def __init__(self, reason: BaseException | None) -> None:
        super().__init__("the run's time limit passed")
        self.reason = reason


class Worker:
    """One daemon thread making a run's onnxruntime calls in turn: starting a thread per
    call took 0.16 s of a 20,000-node capture's 111 calls (cProfile), each start waiting
    for the new thread to take the GIL from the statistics thread. A call left running
    (a deadline, Ctrl-C) keeps its thread, which ends after it; the next call gets a new
    one. :meth:`close` when the run ends."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], None]) -> None:
        if self._thread is None:
            jobs = self._jobs
            self._thread = threading.Thread(
                target=self._serve, args=(jobs,), name="onnx-explorer-onnxruntime", daemon=True
            )
            self._thread.start()
        self._jobs.put(job)

    @staticmethod
    def _serve(jobs: queue.SimpleQueue[Callable[[], None] | None]) -> None:
        while (job := jobs.get()) is not None:
            job()

    def abandon(self) -> None:
        """The current call is left running: its thread ends after it, unjoined."""
        if self._thread is not None:
            self._jobs.put(None)
            self._jobs, self._thread = queue.SimpleQueue(), None

    def close(self) -> None:
        """End the thread (it is idle unless a call was abandoned: then it is left)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join(STOP_GRACE)


def call(
    fn: Callable[[], T],
    limits: Limits,
    stop: Callable[[], None] | None = None,
    worker: Worker | None = None,
) -> T:
    """``fn()`` (an onnxruntime call, which releases the GIL) on a thread of its own (or
    ``worker``'s) while this thread waits interruptibly. When the deadline passes:
    ``stop()`` (if given), a short wait for ``fn`` to end, then :class:`Expired`; a
    ``KeyboardInterrupt`` (or any exception) while waiting does the same and is raised
    itself. ``fn``'s own exception is raised as it is."""
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()

    def target() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed to the waiting thread
            outcome.append((False, exc))
        finally:
            done.set()

    if worker is None:
        threading.Thread(target=target, name="onnx-explorer-onnxruntime", daemon=True).start()
    else:
        worker.submit(target)
    try:
        while not done.wait(_TICK if limits.deadline is None else min(_TICK, _left(limits))):
            if limits.expired():
                raise Expired(None)
    except BaseException as exc:  # the deadline, Ctrl-C / "interrupt kernel": stop it
        if stop is not None:
            stop()
        if not done.wait(STOP_GRACE) and worker is not None:
            worker.abandon()
        if isinstance(exc, Expired) and outcome and not outcome[0][0]:
            raise Expired(outcome[0][1]) from None
        raise
    ok, value = outcome[0]
    if ok:
        result: T = value
        return result
    try:
        raise value
    finally:
        del value


def build_session(
    model_bytes: bytes, base_dir: Path | None, limits: Limits, worker: Worker | None = None
) -> Any:
    """:func:`._ort.make_session` on a thread, waited for within ``limits`` (a session
    being built cannot be stopped: one left behind ends by itself, the model having
    passed :mod:`._precheck`). Raises :class:`Expired`, or onnxruntime's error."""
    if not arena_settled(limits.remaining()):
        raise RunTimeoutError(
            f"{limits.timeout_text()} passed while onnxruntime was still handing back the "
            "memory of the previous run (a run that made very many values leaves as many "
            "pieces of memory to free): run again in a moment"
        )
    memory = limits.memory_limit
    return call(
        lambda: make_session(model_bytes, base_dir, memory_limit=memory), limits, None, worker
    )


def run_session(
    session: Any,
    names: list[str],
    inputs: dict[str, Any],
    limits: Limits,
    worker: Worker | None = None,
) -> Any:
    """``session.run(names, inputs)`` on a thread, stopped (``RunOptions.terminate``) when
    the deadline passes or the wait is interrupted. Raises :class:`Expired`, the
    ``KeyboardInterrupt``, or onnxruntime's error."""
    options = onnxruntime().RunOptions()
    options.log_severity_level = 4  # our error says what failed: no ORT lines on stderr

    def stop() -> None:
        options.terminate = True

    return call(lambda: session.run(names, inputs, options), limits, stop, worker)


def _left(limits: Limits) -> float:
    left = limits.remaining()
    return max(left if left is not None else _TICK, 0.001)


__all__ = [
    "MEMORY_LIMIT",
    "RUN_TIMEOUT",
    "UNTIMED",
    "Expired",
    "Limits",
    "MemoryLimitError",
    "RunTimeoutError",
    "Worker",
    "build_session",
    "call",
    "run_session",
]
