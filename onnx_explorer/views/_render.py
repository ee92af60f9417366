"""The only code that runs Graphviz: DOT text in, SVG / PNG out, with a timeout.

Model text reaches the picture only through escaped DOT labels (``dot.py``) and the
hover titles written here with XML escaping.

``dot`` is a subprocess that can run for minutes on an unlucky graph, so every run
is a :class:`Layout`: several variants of the same DOT may race (the first drawing
wins, the others are killed), the caller waits with a deadline, and any thread can
cancel it. Processes still running when Python exits are killed (the package's one
registry of child processes, :mod:`onnx_explorer._children`), so a kernel that shuts
down leaves no ``dot`` behind.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from .. import _children
from ..errors import GraphvizNotFoundError, LayoutCancelledError, LayoutTimeoutError, RenderError
from ._drawing import DotResult

DEFAULT_TIMEOUT = 60.0
FORMATS = ("svg", "png", "dot")

INSTALL_HINT = (
    "the Graphviz 'dot' program was not found: install Graphviz and make sure 'dot' is on "
    "your PATH (Debian/Ubuntu: sudo apt-get install graphviz; conda: conda install -c "
    "conda-forge graphviz; macOS: brew install graphviz). Everything but drawing the graph "
    "keeps working without it."
)

_TITLE = re.compile(
    r'(<g id="([a-z]\d+)" class="(?:node|cluster|edge)">\s*<title>)(.*?)(</title>)', re.S
)


def _escape(text: str) -> str:
    """``&``, ``<`` and ``>`` as XML entities (what ``xml.sax.saxutils.escape`` does, without
    importing it: it brings in ``urllib.request`` and the email package, 10 ms at start)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def dot_executable() -> str:
    """Path of ``dot``, or raise :class:`GraphvizNotFoundError` saying how to install it."""
    found = shutil.which(os.environ.get("ONNX_EXPLORER_DOT", "dot"))
    if found is None:
        raise GraphvizNotFoundError(INSTALL_HINT)
    return found


#: Graph attributes tried for clustered views. Measured on real models, ``newrank=true``
#: turned a 215 s DenseNet layout into 0.18 s and stopped a "Pshortestpath failed" crash,
#: while on ``samples.dense_blocks()`` it is the slow one (> 30 s against 0.2 s). Neither
#: is always right, so both run and the first drawing wins; the second starts only
#: after :data:`STAGGER` seconds (or at once if the first fails), because on two busy
#: cores running both from the start made the common fast case 3× slower. 0.35 s keeps
#: the common case (< 0.3 s) alone. newrank goes first: on the real exports it is as fast
#: or faster (opening scopes of a real QDQ transformer: 0.08-0.19 s of CPU against
#: 0.32-2.3 s plain; a DenseNet export 0.5 s either way), and the widget then starts with
#: whichever ranking won the graph's last layout (``views/_layout.py``).
CLUSTER_VARIANTS: tuple[tuple[str, ...], ...] = (("-Gnewrank=true",), ())
STAGGER = 0.35

_KIND = "dot"  # this module's children in the one registry (onnx_explorer._children)


def live_processes() -> int:
    """How many ``dot`` processes this Python process is running now."""
    return _children.live(_KIND)


_kill = _children.kill


class Layout:
    """``dot`` running on one DOT source, in one or more variants at once.

    ``variants`` are extra command-line arguments per process (``("-Gnewrank=true",)``),
    each started ``stagger`` seconds after the one before it, or at once when every
    running one has failed; :meth:`wait` returns the first output that is a drawing and
    kills the rest. :meth:`cancel` may be called from any thread.
    """

    def __init__(
        self,
        source: str,
        fmt: str = "svg",
        variants: Sequence[Sequence[str]] = ((),),
        stagger: float = STAGGER,
    ) -> None:
        if fmt not in ("svg", "png"):
            raise ValueError(f"format must be svg or png, not {fmt!r}")
        self.fmt = fmt
        self.stagger = stagger
        self.started = time.monotonic()
        self._done = threading.Condition()
        self._results: list[tuple[int, bytes | None, str]] = []  # (variant, output, error)
        self._cancelled = False
        self._processes: list[subprocess.Popen[bytes] | None] = []  # None: failed to start
        self._variants = [tuple(v) for v in variants] or [()]
        self._executable = dot_executable()
        self._data = source.encode("utf-8")
        self._start_next()

    def _start_next(self) -> None:
        k = len(self._processes)
        try:
            process = _children.start(
                _KIND, [self._executable, f"-T{self.fmt}", *self._variants[k]]
            )
        except OSError as exc:
            if k == 0 and exc.errno in (errno.ENOENT, errno.EACCES, errno.ENOEXEC):
                raise GraphvizNotFoundError(f"{INSTALL_HINT} ({exc.strerror})") from None
            if k == 0:
                raise RenderError(f"cannot start Graphviz: {exc.strerror}") from None
            # A later variant that cannot start (EAGAIN, EMFILE) is one failed variant;
            # the running one may still win.
            self._processes.append(None)
            self._results.append((k, None, f"cannot start dot: {exc.strerror}"))
            return
        if process is None:  # Python is exiting (the registry's kill_all ran)
            self._cancelled = True
            raise LayoutCancelledError("Python is exiting: no new layout")
        self._processes.append(process)
        threading.Thread(
            target=self._collect, args=(k, process, self._data), daemon=True, name="oxe-dot"
        ).start()

    def _collect(self, k: int, process: subprocess.Popen[bytes], data: bytes) -> None:
        out, error = b"", "dot ended unexpectedly"
        try:
            try:
                out, err = process.communicate(data)
            except (OSError, ValueError):  # killed while writing, or pipes closed
                out, err = b"", b""
                process.wait()
            error = ""
            if process.returncode != 0 or not _is_drawing(out, self.fmt):
                lines = err.decode("utf-8", "replace").strip().splitlines()
                error = " ".join(lines[-3:])
                if process.returncode and process.returncode < 0:
                    error = f"dot was stopped by signal {-process.returncode}" + (
                        f" ({error})" if error else ""
                    )
                error = error or "no drawing in its output"
        finally:  # whatever happened, wait() hears of this variant
            _children.forget(process)
            with self._done:
                self._results.append((k, None if error else out, error))
                self._done.notify_all()

    def wait(self, timeout: float | None = DEFAULT_TIMEOUT) -> tuple[int, bytes]:
        """(variant index, output) of the first drawing; kills the other variants.

        Raises LayoutTimeoutError after ``timeout`` seconds (the processes are killed),
        LayoutCancelledError after :meth:`cancel`, RenderError when every variant failed.
        """
        deadline = None if timeout is None else self.started + timeout
        with self._done:
            while True:
                if self._cancelled:
                    raise LayoutCancelledError("the layout was cancelled")
                winner = next((r for r in self._results if r[1] is not None), None)
                if winner is not None:
                    break
                started = len(self._processes)
                all_failed = len(self._results) == started
                if started < len(self._variants) and (
                    all_failed or time.monotonic() >= self.started + self.stagger * started
                ):
                    self._start_next()
                    continue
                if all_failed:
                    errors = sorted({r[2] for r in self._results})
                    raise RenderError(f"Graphviz failed: {'; '.join(errors)[:500]}")
                now = time.monotonic()
                waits = [] if deadline is None else [deadline - now]
                if started < len(self._variants):
                    waits.append(self.started + self.stagger * started - now)
                if deadline is not None and deadline - now <= 0:
                    break
                self._done.wait(max(0.0, min(waits)) if waits else None)
        self.cancel(mark=False)
        if winner is None:
            raise LayoutTimeoutError(f"Graphviz took more than {timeout:g} s to lay out the graph")
        assert winner[1] is not None
        return winner[0], winner[1]

    def cancel(self, mark: bool = True) -> None:
        """Kill every process of this layout (from any thread)."""
        with self._done:
            if mark:
                self._cancelled = True
            self._done.notify_all()
        for process in self._processes:
            if process is not None and process.poll() is None:
                _kill(process)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


def _is_drawing(out: bytes, fmt: str) -> bool:
    if fmt == "png":
        return out.startswith(b"\x89PNG")
    return b"<svg" in out[:4096] and out.rstrip().endswith(b"</svg>")


def run_dot(
    source: str,
    fmt: str = "svg",
    timeout: float = DEFAULT_TIMEOUT,
    variants: Sequence[Sequence[str]] = ((),),
) -> bytes:
    """Lay out ``source`` with ``dot -T<fmt>``; raise RenderError on failure or timeout."""
    layout = Layout(source, fmt, variants)
    try:
        return layout.wait(timeout)[1]
    except LayoutTimeoutError:
        raise LayoutTimeoutError(
            f"Graphviz took more than {timeout:g} s to lay out the graph; draw fewer nodes "
            "(collapse scopes, or focus on one node)"
        ) from None
    finally:
        layout.cancel(mark=False)


def add_titles(svg: str, titles: dict[str, str] | object) -> str:
    """Replace Graphviz's ``<title>n3</title>`` by the escaped hover text for n3."""
    lookup = dict(titles) if not isinstance(titles, dict) else titles  # type: ignore[call-overload]

    def replace(match: re.Match[str]) -> str:
        text = lookup.get(match.group(2))
        if text is None:
            return match.group(0)
        return match.group(1) + _escape(str(text)) + match.group(4)

    return _TITLE.sub(replace, svg)


def layout_variants(source: str) -> tuple[tuple[str, ...], ...]:
    """The variants worth racing for this DOT: both rankings when it has clusters."""
    return CLUSTER_VARIANTS if "subgraph cluster_" in source else ((),)


def finish_svg(output: bytes, result: DotResult) -> str:
    """Graphviz's SVG output for ``result`` without the XML prolog, hover titles added."""
    # Body cells carry HREF="#" only so Graphviz emits their <g id>; the link goes.
    svg = output.decode("utf-8", "replace").replace(' xlink:href="#"', "")
    start = svg.find("<svg")
    return add_titles(svg[start:] if start >= 0 else svg, result.titles)


def svg_from_result(result: DotResult, timeout: float = DEFAULT_TIMEOUT) -> str:
    """The SVG of a built view, hover titles included, without the XML prolog."""
    output = run_dot(result.source, "svg", timeout, layout_variants(result.source))
    return finish_svg(output, result)


def save_result(
    result: DotResult, path: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT
) -> Path:
    """Write a built view to ``path`` as SVG, PNG or DOT, chosen by the suffix.

    The picture is drawn before the file is opened, so a failure leaves no empty file;
    ``.dot`` (or ``.gv``) needs no Graphviz.
    """
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in ("svg", "png", "dot", "gv"):
        raise ValueError(f"cannot tell the format of {path.name!r}: use a .svg, .png or .dot name")
    if suffix in ("dot", "gv"):
        data = result.source.encode("utf-8")
    elif suffix == "svg":
        data = svg_from_result(result, timeout).encode("utf-8")
    else:
        data = run_dot(result.source, "png", timeout, layout_variants(result.source))
    path.write_bytes(data)
    return path
