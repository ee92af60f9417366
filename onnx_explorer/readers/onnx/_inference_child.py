"""ONNX shape inference in a child Python process that is stopped after a time limit.

Why this module exists: ``onnx.shape_inference`` is C++ that holds the GIL and never
looks at signals, and a hostile model can make it loop for ever (onnx 1.23: an
``Einsum`` whose equation puts two ``...`` in one operand of an input of known rank,
``"...ij..."``). In the kernel's own process that is 100 % CPU that neither Ctrl-C
nor Jupyter's "interrupt kernel" stops, and every ``to_dot()`` / ``explore()`` of the
model hangs with it. A child process can be killed: when the time limit passes, when
the caller waiting for it is interrupted (``KeyboardInterrupt``), and when Python
exits: its children are in the package's one registry of child processes
(:mod:`onnx_explorer._children`), with the ``dot`` layouts. It runs nothing but this
module, as ``python -m``.

A fresh interpreter, not ``fork``: the kernel has threads (layouts, comms, the
heartbeat), and a forked copy of a threaded process may deadlock on a lock held by
a thread that does not exist in the copy.

One worker, reused (POSIX): starting a child costs 0.15-0.5 s, nearly all of it
``import onnx``, so one long-lived child per Python process serves every request,
one at a time (callers queue on a lock). It is started on first need, or ahead of it
by :func:`warm_up` (``explore()`` calls it so the import overlaps loading the model).
Over its stdin/stdout, a request is ``_REQUEST`` (time limit, length, data propagation)
+ a serialized, structure-only ModelProto (no weight bytes:
:func:`._shape_inference.structure_only`); the reply is ``_REPLY`` (status, length) + the
inferred ModelProto, or one line saying why inference failed. The parent waits for the
reply with a deadline (``selectors`` on the pipes) and kills the worker when the deadline
passes or the wait is interrupted; the next request starts a new one. The worker ends by
itself on EOF of its stdin (parent gone), after :data:`WORKER_IDLE_TIMEOUT` idle seconds,
and by ``SIGALRM`` a little after each request's limit, even if its parent died without
killing it. A worker that ended between requests is replaced transparently: a request
that meets a closed pipe (EPIPE / EOF) on a worker that served before is sent once more
to a fresh one.

Where a pipe cannot be waited on with a deadline (Windows), each request runs in a
child of its own, which reads one model from stdin, writes the inferred one to
stdout and exits 0, or writes why inference failed to stderr and exits
:data:`_FAILED`.
"""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ... import _children

#: Seconds shape inference may run before its process is killed and the model is
#: drawn with the file's own shapes only; counted from the request, so it includes
#: starting a worker (0.3-0.5 s here, mostly importing onnx) when none is running.
INFERENCE_TIME_LIMIT = 10.0

#: Seconds an idle worker waits for a request before it exits (read at its start).
WORKER_IDLE_TIMEOUT = 300.0

_FAILED = 3  # the one-shot child's exit code when inference raised (reason on stderr)
_GRACE = 5  # seconds past the limit after which the child ends itself (SIGALRM)
_SERVE = "--serve"  # argument that makes the child a worker
_DATA_PROP = "--data-prop"  # a one-shot child's argument: infer with data propagation
_REQUEST = struct.Struct("!dQ?")  # time limit in seconds, model length, data propagation
_REPLY = struct.Struct("!BQ")  # status, payload length
_OK, _ERROR = 0, 1  # reply statuses: payload is the inferred model / why it failed
_STDERR_TAIL = 4096  # bytes of a worker's stderr kept to explain its death
# Waiting on a pipe with a deadline needs select() on pipes: POSIX only.
_CAN_WAIT_ON_PIPES = os.name == "posix"

_KIND = "inference"  # this module's children in the one registry (onnx_explorer._children)
_WORKER: subprocess.Popen[bytes] | None = None
_REQUEST_LOCK = threading.Lock()  # one request at a time on the worker


@dataclass(frozen=True)
class Outcome:
    """What the child gave back: the inferred ModelProto's bytes, or why there are none."""

    inferred: bytes | None
    error: str | None = None
    #: "ok", "failed" (inference raised), "timeout" (stopped at the limit), "died" (the
    #: process crashed or was killed), "skipped" (no process could be started)
    kind: str = "ok"


def live_children() -> int:
    """How many inference children this Python process is running now (an idle worker
    counts)."""
    return _children.live(_KIND)


def worker_pid() -> int | None:
    """The process id of the running worker, if there is one."""
    worker = _WORKER
    return worker.pid if worker is not None and worker.poll() is None else None


def warm_up() -> None:
    """Start the worker if none runs, without waiting for it (never raises; does nothing
    where there is no worker, while a request is under way, or while Python exits)."""
    if not _CAN_WAIT_ON_PIPES or not _REQUEST_LOCK.acquire(blocking=False):
        return
    try:
        _running_worker()
    finally:
        _REQUEST_LOCK.release()


def stop_worker() -> None:
    """Stop the worker (after the request under way, if any) and reap it; the next
    request starts a new one. For tests, and to free its memory."""
    with _REQUEST_LOCK:
        if _WORKER is not None:
            _retire(_WORKER)


def infer_in_child(
    model: bytes, time_limit: float | None = None, *, data_prop: bool = False
) -> Outcome:
    """Run shape inference on a serialized ModelProto in a child process (never raises,
    but for ``KeyboardInterrupt`` and the like, which kill the child on their way up).

    ``time_limit``: seconds, default :data:`INFERENCE_TIME_LIMIT` (read at each call),
    counted once this request has the worker (not while it queues behind another).
    """
    limit = INFERENCE_TIME_LIMIT if time_limit is None else float(time_limit)
    if not sys.executable:
        return Outcome(
            None, "ONNX shape inference skipped: no Python executable to run it in", "skipped"
        )
    if not _CAN_WAIT_ON_PIPES:
        return _infer_one_shot(model, limit, data_prop)
    with _REQUEST_LOCK:
        deadline = time.monotonic() + limit
        for attempt in (1, 2):
            started = _running_worker()
            if isinstance(started, str):
                return Outcome(None, started, "skipped")
            worker, fresh = started
            try:
                status, payload = _exchange(worker, model, deadline, data_prop)
            except _TimedOut:
                _retire(worker)
                return Outcome(
                    None,
                    f"ONNX shape inference timed out after {limit:g} s and was stopped",
                    "timeout",
                )
            except _WorkerGone as gone:  # crashed, or ended (idle, killed) as we wrote
                rest = _retire(worker)
                if attempt == 1 and not fresh:
                    continue
                return Outcome(None, _death(worker.returncode, gone.stderr + rest), "died")
            except BaseException:  # Ctrl-C / "interrupt kernel" while waiting: it goes too
                _retire(worker)
                raise
            if status == _OK:
                return Outcome(payload)
            reason = payload.decode("utf-8", "replace")
            return Outcome(None, f"ONNX shape inference failed ({reason[:200]})", "failed")
    raise AssertionError("unreachable")  # pragma: no cover


# -- the worker, seen from the parent ----------------------------------------------------
class _TimedOut(Exception):
    pass


class _WorkerGone(Exception):
    def __init__(self, stderr: bytes) -> None:
        super().__init__("the inference worker ended")
        self.stderr = stderr


def _running_worker() -> tuple[subprocess.Popen[bytes], bool] | str:
    """The worker and whether it was started just now (a string says why none could be
    started)."""
    global _WORKER
    if _WORKER is not None and _WORKER.poll() is None:
        return _WORKER, False
    if _WORKER is not None:
        _retire(_WORKER)
    process = _spawn([_SERVE, f"{WORKER_IDLE_TIMEOUT!r}"])
    if isinstance(process, str):
        return process
    os.set_blocking(_pipe(process.stdin).fileno(), False)  # writes wait in select()
    _WORKER = process
    return process, True


def _exchange(
    process: subprocess.Popen[bytes], model: bytes, deadline: float, data_prop: bool
) -> tuple[int, bytes]:
    """Send one request and wait for its reply until ``deadline`` (time.monotonic)."""
    limit = max(deadline - time.monotonic(), 0.0)
    request = memoryview(_REQUEST.pack(limit, len(model), data_prop) + model)
    stdin, stdout, stderr = (_pipe(p).fileno() for p in (process.stdin, process.stdout,
                                                         process.stderr))  # fmt: skip
    reply = bytearray()
    errors = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(stdin, selectors.EVENT_WRITE)
        selector.register(stdout, selectors.EVENT_READ)
        selector.register(stderr, selectors.EVENT_READ)
        while True:
            if len(reply) >= _REPLY.size:
                status, length = _REPLY.unpack_from(reply)
                if len(reply) >= _REPLY.size + length:
                    return status, bytes(reply[_REPLY.size : _REPLY.size + length])
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _TimedOut
            for key, _ in selector.select(remaining):
                if key.fd == stdin:
                    try:
                        written = os.write(stdin, request)
                    except BlockingIOError:
                        continue
                    except OSError:  # EPIPE: it ended before reading the request
                        raise _WorkerGone(bytes(errors)) from None
                    request = request[written:]
                    if not request:
                        selector.unregister(stdin)
                elif key.fd == stdout:
                    chunk = os.read(stdout, 1 << 20)
                    if not chunk:
                        raise _WorkerGone(bytes(errors))
                    reply += chunk
                else:
                    chunk = os.read(stderr, 1 << 16)
                    if not chunk:
                        selector.unregister(stderr)
                    errors += chunk
                    del errors[:-_STDERR_TAIL]


def _retire(process: subprocess.Popen[bytes]) -> bytes:
    """Kill and reap a child and close its pipes (harmless if it has already ended);
    returns what it wrote to stderr that was not read yet."""
    global _WORKER
    _kill(process)
    process.wait()
    rest = b""
    with contextlib.suppress(OSError, ValueError):
        os.set_blocking(_pipe(process.stderr).fileno(), False)  # it is dead: EOF comes
        rest = _pipe(process.stderr).read() or b""
    for pipe in (process.stdin, process.stdout, process.stderr):
        with contextlib.suppress(OSError):
            _pipe(pipe).close()
    _children.forget(process)
    if _WORKER is process:
        _WORKER = None
    return rest


def _death(code: int | None, stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    reason = lines[-1][:200] if lines else ""
    code = code or 0
    how = f"was stopped by signal {-code}" if code < 0 else f"ended with exit code {code}"
    return f"ONNX shape inference {how}" + (f" ({reason})" if reason else "")


def _pipe(pipe: IO[bytes] | None) -> IO[bytes]:
    assert pipe is not None  # every child is started with all three pipes
    return pipe


# -- one child per request (no select on pipes) ------------------------------------------
def _infer_one_shot(model: bytes, limit: float, data_prop: bool) -> Outcome:
    process = _spawn([f"{limit!r}", *([_DATA_PROP] if data_prop else [])])
    if isinstance(process, str):
        return Outcome(None, process, "skipped")
    try:
        out, err = process.communicate(model, timeout=limit)
    except subprocess.TimeoutExpired:
        _kill(process)
        process.communicate()  # reap it and close the pipes
        return Outcome(
            None, f"ONNX shape inference timed out after {limit:g} s and was stopped", "timeout"
        )
    except BaseException:  # Ctrl-C / "interrupt kernel" while waiting: the child goes too
        _kill(process)
        process.wait()
        raise
    finally:
        _children.forget(process)
    code = process.returncode
    if code == 0:
        return Outcome(out)
    if code == _FAILED:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        reason = lines[-1][:200] if lines else ""
        return Outcome(None, f"ONNX shape inference failed ({reason})", "failed")
    return Outcome(None, _death(code, err), "died")


def _spawn(args: list[str]) -> subprocess.Popen[bytes] | str:
    """Start ``python -m`` this module (a string says why it was not started)."""
    try:
        process = _children.start(
            _KIND, [sys.executable, "-m", __name__, *args], cwd=_package_root()
        )
    except OSError as exc:
        return f"cannot start a process for ONNX shape inference: {exc}"
    if process is None:
        return "ONNX shape inference skipped: Python is exiting"
    return process


_kill = _children.kill


def _forget_after_fork() -> None:
    """A forked copy of this process does not own its parent's worker (nor its pipes):
    it starts its own if it needs one (the registry forgets the children itself)."""
    global _WORKER, _REQUEST_LOCK
    _WORKER, _REQUEST_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def _package_root() -> str | None:
    """The directory this package was imported from: ``-m`` puts the working directory
    first on the child's path, so the child runs the same code as its parent (and no
    ``onnx.py`` lying in the kernel's working directory is imported in place of onnx)."""
    root = Path(__file__).resolve().parents[3]
    return str(root) if root.is_dir() else None


# -- the child ---------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """``--serve IDLE``: serve requests until stdin closes or IDLE seconds pass without
    one. Otherwise ``[LIMIT]``: read one ModelProto from stdin, write the inferred one."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == [_SERVE]:
        return _serve(float(args[1]) if len(args) > 1 else WORKER_IDLE_TIMEOUT)
    limit = float(args[0]) if args else INFERENCE_TIME_LIMIT
    _arm_alarm(limit)
    data = sys.stdin.buffer.read()
    status, payload = _infer(data, _DATA_PROP in args)
    if status != _OK:
        sys.stderr.write(payload.decode("utf-8", "replace") + "\n")
        return _FAILED
    sys.stdout.buffer.write(payload)
    sys.stdout.buffer.flush()
    return 0


def _serve(idle_timeout: float) -> int:
    import select

    # Its fate is the parent's: a Ctrl-C in a terminal reaches the whole process group.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.dup(1)
    os.dup2(2, 1)  # stray prints (Python or C++) go to stderr, never into a reply
    with contextlib.suppress(Exception):
        import onnx  # noqa: F401  # now, while the parent is still loading its model
    while True:
        ready, _, _ = select.select([0], [], [], idle_timeout)
        if not ready:
            return 0  # idle: the parent starts a new worker when it needs one
        header = _read_exactly(0, _REQUEST.size)
        if header is None:
            return 0  # EOF: the parent is gone
        limit, length, data_prop = _REQUEST.unpack(header)
        _arm_alarm(limit)
        data = _read_exactly(0, length)
        if data is None:
            return 0
        status, payload = _infer(bytes(data), data_prop)
        del data
        reply = memoryview(_REPLY.pack(status, len(payload)) + payload)
        while reply:
            reply = reply[os.write(replies, reply) :]
        if hasattr(signal, "alarm"):
            signal.alarm(0)


def _arm_alarm(limit: float) -> None:
    if hasattr(signal, "alarm"):  # POSIX
        # No Python handler for SIGALRM: its default action ends the process even while
        # the C++ loops, so an orphaned child does not spin for ever.
        signal.alarm(max(1, math.ceil(limit)) + _GRACE)


def _read_exactly(fd: int, size: int) -> bytearray | None:
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return data


def _infer(data: bytes, data_prop: bool = False) -> tuple[int, bytes]:
    """Shape inference on a serialized ModelProto: (_OK, inferred) or (_ERROR, why)."""
    try:
        import onnx

        model = onnx.ModelProto()
        model.ParseFromString(data)
        inferred = onnx.shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=data_prop
        )
        return _OK, inferred.SerializeToString()
    except Exception as exc:  # reported to the parent, which draws without inferred shapes
        lines = str(exc).strip().splitlines()
        return _ERROR, f"{type(exc).__name__}: {lines[0] if lines else ''}".encode()


if __name__ == "__main__":
    sys.exit(main())
