"""The one registry of this package's child processes (``dot`` layouts, the ONNX
shape-inference worker): started under one lock, killed together at exit.

Why one: every child must die with the kernel, and none may start once exit has begun.
``kill_all`` (registered with atexit when this module is first imported, so it runs
after the handlers of the modules that import it) sets the exiting flag and kills
every child still running; :func:`start` holds the same lock across ``Popen``, so no
child starts unseen between the two. A forked copy of the process owns none of its
parent's children and starts with an empty registry.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import threading
from collections.abc import Sequence
from typing import Any

_LIVE: dict[subprocess.Popen[bytes], str] = {}  # child → its kind ("dot", "inference")
_LOCK = threading.Lock()
_SHUTTING_DOWN = False


def start(kind: str, args: Sequence[str], **popen: Any) -> subprocess.Popen[bytes] | None:
    """Start ``args`` with pipes on stdin, stdout and stderr and register it under ``kind``;
    None when Python is exiting (nothing is started). ``OSError`` from ``Popen`` passes."""
    with _LOCK:  # held across the start, so kill_all() cannot miss this process
        if _SHUTTING_DOWN:
            return None
        process = subprocess.Popen(
            list(args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **popen,
        )
        _LIVE[process] = kind
    return process


def forget(process: subprocess.Popen[bytes]) -> None:
    """Drop a process that has ended from the registry."""
    with _LOCK:
        _LIVE.pop(process, None)


def kill(process: subprocess.Popen[bytes]) -> None:
    """Kill a process (gone already: nothing happens)."""
    with contextlib.suppress(OSError):
        process.kill()


def live(kind: str | None = None) -> int:
    """How many registered children (of ``kind``, or of any) are running now."""
    with _LOCK:
        return sum(1 for p, k in _LIVE.items() if (kind is None or k == kind) and p.poll() is None)


def processes(kind: str) -> list[subprocess.Popen[bytes]]:
    """The registered children of ``kind`` (for tests and diagnostics)."""
    with _LOCK:
        return [p for p, k in _LIVE.items() if k == kind]


def exiting() -> bool:
    """True once :func:`kill_all` has run: no child starts any more."""
    return _SHUTTING_DOWN


@atexit.register
def kill_all() -> None:
    """Kill every child still running and start no new one (called at exit).

    atexit runs this before the kernel's own exit handlers, while layout threads may
    still be alive: without the flag, a thread seeing its ``dot`` killed would start the
    next cheaper plan's ``dot``, which nobody would kill.
    """
    global _SHUTTING_DOWN
    with _LOCK:
        _SHUTTING_DOWN = True
        live_now = list(_LIVE)
    for process in live_now:
        kill(process)


def _forget_after_fork() -> None:
    """A forked copy of this process does not own its parent's children (nor their
    pipes): it starts its own when it needs them."""
    global _LIVE, _LOCK
    _LIVE, _LOCK = {}, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


__all__ = ["exiting", "forget", "kill", "kill_all", "live", "processes", "start"]
