"""ONNX shape inference in a child Python process that is stopped after a time limit.

Why this module exists: ``onnx.shape_inference`` is C++ that holds the GIL and never
looks at signals, and a hostile model can make it loop for ever (onnx 1.23: an
``Einsum`` whose equation puts two ``...`` in one operand of an input of known rank,
``"...ij..."``). In the kernel's own process that is 100 % CPU that neither Ctrl-C
nor Jupyter's "interrupt kernel" stops, and every ``to_dot()`` / ``explore()`` of the
model hangs with it. A child process can be killed: when the time limit passes, when
the caller waiting for it is interrupted (``KeyboardInterrupt``), and when Python
exits. DESIGN.md keeps subprocesses in ``views/render.py`` (for ``dot``); this is the
one other place, and it runs nothing but this module, as ``python -m``.

A fresh interpreter, not ``fork``: the kernel has threads (layouts, comms, the
heartbeat), and a forked copy of a threaded process may deadlock on a lock held by
a thread that does not exist in the copy.

Protocol: the parent writes a serialized, structure-only ModelProto (no weight
bytes: :func:`.onnx_shapes.structure_only`) to the child's stdin; the child writes the
inferred ModelProto to stdout and exits 0, or writes one line saying why inference
failed to stderr and exits :data:`_FAILED`. The child also arms ``SIGALRM`` a little
after the limit, so it ends even if its parent died without killing it.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

#: Seconds shape inference may run before its process is killed and the model is
#: drawn with the file's own shapes only; counted from the start of the child, whose
#: own start-up (importing onnx) takes 0.3-0.5 s of it here.
INFERENCE_TIME_LIMIT = 10.0

_FAILED = 3  # the child's exit code when inference raised (the reason is on stderr)
_GRACE = 5  # seconds past the limit after which the child ends itself (SIGALRM)

_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
_SHUTTING_DOWN = False


@dataclass(frozen=True)
class Outcome:
    """What the child gave back: the inferred ModelProto's bytes, or why there are none."""

    inferred: bytes | None
    error: str | None = None


@atexit.register
def kill_all() -> None:
    """Kill every inference child still running and start no new one (called at exit)."""
    global _SHUTTING_DOWN
    with _LIVE_LOCK:
        _SHUTTING_DOWN = True
        live = list(_LIVE)
    for process in live:
        _kill(process)


def live_children() -> int:
    """How many inference children this Python process is running now."""
    with _LIVE_LOCK:
        return sum(1 for p in _LIVE if p.poll() is None)


def infer_in_child(model: bytes, time_limit: float | None = None) -> Outcome:
    """Run shape inference on a serialized ModelProto in a child process (never raises,
    but for ``KeyboardInterrupt`` and the like, which kill the child on their way up).

    ``time_limit``: seconds, default :data:`INFERENCE_TIME_LIMIT` (read at each call).
    """
    limit = INFERENCE_TIME_LIMIT if time_limit is None else float(time_limit)
    if not sys.executable:
        return Outcome(None, "ONNX shape inference skipped: no Python executable to run it in")
    with _LIVE_LOCK:  # held across the start, so kill_all() cannot miss this process
        if _SHUTTING_DOWN:
            return Outcome(None, "ONNX shape inference skipped: Python is exiting")
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", __name__, f"{limit!r}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=_package_root(),
            )
        except OSError as exc:
            return Outcome(None, f"cannot start a process for ONNX shape inference: {exc}")
        _LIVE.add(process)
    try:
        out, err = process.communicate(model, timeout=limit)
    except subprocess.TimeoutExpired:
        _kill(process)
        process.communicate()  # reap it and close the pipes
        return Outcome(None, f"ONNX shape inference timed out after {limit:g} s and was stopped")
    except BaseException:  # Ctrl-C / "interrupt kernel" while waiting: the child goes too
        _kill(process)
        process.wait()
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(process)
    code = process.returncode
    if code == 0:
        return Outcome(out)
    reason = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    if code == _FAILED:
        return Outcome(None, f"ONNX shape inference failed ({reason[0][:200]})")
    how = f"was stopped by signal {-code}" if code < 0 else f"ended with exit code {code}"
    return Outcome(
        None, f"ONNX shape inference {how}" + (f" ({reason[0][:200]})" if reason[0] else "")
    )


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        process.kill()


def _package_root() -> str | None:
    """The directory this package was imported from: ``-m`` puts the working directory
    first on the child's path, so the child runs the same code as its parent (and no
    ``onnx.py`` lying in the kernel's working directory is imported in place of onnx)."""
    root = Path(__file__).resolve().parents[2]
    return str(root) if root.is_dir() else None


# -- the child ---------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """Read a ModelProto from stdin, write the inferred one to stdout."""
    args = sys.argv[1:] if argv is None else argv
    limit = float(args[0]) if args else INFERENCE_TIME_LIMIT
    if hasattr(signal, "alarm"):  # POSIX
        # No Python handler for SIGALRM: its default action ends the process even while
        # the C++ loops, so an orphaned child does not spin for ever.
        signal.alarm(max(1, math.ceil(limit)) + _GRACE)
    import onnx

    data = sys.stdin.buffer.read()
    try:
        model = onnx.ModelProto()
        model.ParseFromString(data)
        inferred = onnx.shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=False
        )
        out = inferred.SerializeToString()
    except Exception as exc:  # reported to the parent, which draws without inferred shapes
        lines = str(exc).strip().splitlines()
        sys.stderr.write(f"{type(exc).__name__}: {lines[0] if lines else ''}\n")
        return _FAILED
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
