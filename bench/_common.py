"""Shared helpers for the benchmark scripts in bench/.

Each measurement runs in a fresh Python process, so imports, caches and freed
memory of one case never leak into the next. The parent reads the child's peak
resident set size from ``os.wait4`` (``ru_maxrss``) and the child reports the
time of the timed statement itself.

One trap, handled here: on Linux a child's ``ru_maxrss`` starts at the RSS of
the process that spawned it (the high-water mark survives fork + exec). Keep the
process calling :func:`run_python` small — do heavy work such as generating
models in a subprocess too. :func:`run_python` raises :class:`BenchError` when
a figure could be the parent's rather than the child's.

Scripts run as ``python bench/<name>.py`` import this module as ``_common``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
MODELS_DIR = BENCH_DIR / "_models"
RESULTS_DIR = BENCH_DIR / "results"

#: The child prints its report as the last stdout line starting with this marker.
REPORT_MARKER = "@@bench-report "


class BenchError(RuntimeError):
    """A benchmark child failed, or its figures cannot be trusted."""


@dataclass(frozen=True)
class Run:
    """One child process: whole-process wall time, peak RSS and what it reported."""

    process_s: float  # spawn to exit, seen from the parent (includes interpreter start, imports)
    max_rss: int  # bytes, ru_maxrss of the child
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        """The timed statement's wall time, measured inside the child."""
        return float(self.report["seconds"])

    @property
    def extra_rss(self) -> int:
        """Bytes the peak RSS rose above the RSS just before the timed statement
        (children made by :func:`timed_child` with ``rss_before=True``)."""
        return self.max_rss - int(self.report["rss_before"])


@dataclass(frozen=True)
class Runs:
    """Repeated :class:`Run`s of the same child, each in a fresh process."""

    runs: tuple[Run, ...]

    @property
    def best(self) -> Run:
        """Each figure (time, process time, peak RSS) at its least over the runs, with the
        last run's other report fields (the same in every run)."""
        last = self.runs[-1]
        return Run(
            process_s=min(r.process_s for r in self.runs),
            max_rss=min(r.max_rss for r in self.runs),
            report={**last.report, "seconds": min(r.seconds for r in self.runs)},
        )

    @property
    def median(self) -> Run:
        """The run in the middle by time (of an even count, the slower of the two middle ones)."""
        return sorted(self.runs, key=lambda r: r.seconds)[len(self.runs) // 2]

    def median_of(self, key: str) -> float:
        """The median over the runs of the report field ``key``."""
        return statistics.median(float(r.report[key]) for r in self.runs)

    @property
    def extra_rss(self) -> int:
        """The most any run's peak RSS rose above its RSS before the timed statement."""
        return max(r.extra_rss for r in self.runs)


def _ru_maxrss_bytes(value: int) -> int:
    # Linux reports kilobytes, macOS bytes.
    return value if sys.platform == "darwin" else value * 1024


def _own_peak_rss() -> int:
    return _ru_maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


#: Bytecode of the package compiled once and reused by every child, as an installed package
#: does: this tree runs with ``PYTHONDONTWRITEBYTECODE``, which would otherwise compile every
#: module at each start (some 40 ms on these cores) and count it in every process column.
PYCACHE = MODELS_DIR / "pycache"


def installed_env() -> dict[str, str]:
    """This process's environment, with bytecode cached under :data:`PYCACHE`."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return env


def run_python(
    code: str,
    *,
    timeout: float = 900.0,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Run:
    """Run ``code`` in a fresh interpreter; return its wall time, peak RSS and report.

    The report is the JSON object the child printed after :data:`REPORT_MARKER`
    (see :func:`timed_child`); ``{}`` if it printed none. A child that fails or
    runs past ``timeout`` seconds raises :class:`BenchError` with its stderr.
    """
    parent_rss = _own_peak_rss()
    start = time.perf_counter()
    # -P (3.11+): do not put the working directory first on sys.path, so the child imports
    # the installed package, or the copy PYTHONPATH names (handy to compare two versions).
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []
    proc = subprocess.Popen(
        [sys.executable, *safe_path, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env if env is not None else installed_env(),
        cwd=cwd,
    )
    # Drain the pipes in threads so that this thread can block in wait4, which is
    # what returns the child's own resource usage.
    out: dict[str, bytes] = {}

    def drain(name: str, stream: Any) -> None:
        out[name] = stream.read()

    readers = [
        threading.Thread(target=drain, args=(name, stream), daemon=True)
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr))
    ]
    for reader in readers:
        reader.start()
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        killer.cancel()
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    stdout = out.get("stdout", b"").decode("utf-8", "replace")
    stderr = out.get("stderr", b"").decode("utf-8", "replace")
    if proc.returncode != 0:
        why = "timed out" if elapsed >= timeout else f"exited with {proc.returncode}"
        tail = "\n".join(stderr.strip().splitlines()[-20:])
        raise BenchError(f"benchmark child {why}:\n{tail}")
    max_rss = _ru_maxrss_bytes(usage.ru_maxrss)
    if max_rss <= parent_rss:
        raise BenchError(
            f"child peak RSS {max_rss} B is not above the parent's {parent_rss} B: it may be "
            "inherited from the parent; run heavy work in a subprocess"
        )
    report: dict[str, Any] = {}
    for line in stdout.splitlines():
        if line.startswith(REPORT_MARKER):
            report = json.loads(line[len(REPORT_MARKER) :])
    return Run(elapsed, max_rss, report)


#: Child code recording the resident set size now (Linux /proc), for :attr:`Run.extra_rss`.
_RSS_BEFORE = """
import os as _os
with open('/proc/self/statm') as _fh:
    report['rss_before'] = int(_fh.read().split()[1]) * _os.sysconf('SC_PAGE_SIZE')
"""


def timed_child(setup: str, stmt: str, post: str = "", *, rss_before: bool = False) -> str:
    """Child code that runs ``setup``, times ``stmt`` once, then runs ``post``.

    ``post`` may fill the dict ``report`` with extra JSON-able facts (counts to
    check that every contender saw the same thing). ``report["seconds"]`` is the
    wall time of ``stmt``. With ``rss_before``, ``report["rss_before"]`` is the RSS
    just before ``stmt`` (Linux only), for :attr:`Run.extra_rss`.
    """
    return "\n".join(
        [
            "import json as _json, time as _time",
            "report = {}",
            textwrap.dedent(setup),
            _RSS_BEFORE if rss_before else "",
            "_t0 = _time.perf_counter()",
            textwrap.dedent(stmt),
            "report['seconds'] = _time.perf_counter() - _t0",
            textwrap.dedent(post),
            f"print({REPORT_MARKER!r} + _json.dumps(report), flush=True)",
        ]
    )


def emit_report(report: dict[str, Any]) -> None:
    """Print ``report`` as the child's report line (for children that time several things)."""
    print(REPORT_MARKER + json.dumps(report), flush=True)


def measure(code: str, repeat: int = 3, **kwargs: Any) -> Runs:
    """Run the child ``repeat`` times (each in a fresh process) and keep every run."""
    return Runs(tuple(run_python(code, **kwargs) for _ in range(repeat)))


def profile_top(setup: str, stmt: str, top: int = 5) -> dict[str, Any]:
    """The ``top`` functions with the most own time while a fresh process runs ``stmt``
    under cProfile, after ``setup`` (not profiled).

    Returns ``{"total_s": own time of every function, "top": [row, ...]}``; a row has
    ``file``, ``line``, ``function`` as cProfile names them (file ``"~"`` for a builtin),
    ``calls``, ``primitive_calls`` (without recursive ones), ``own_s`` and ``cumulative_s``.
    """
    code = "\n".join(
        [
            "import cProfile as _cProfile, json as _json, pstats as _pstats",
            textwrap.dedent(setup),
            "_profile = _cProfile.Profile()",
            "_profile.enable()",
            textwrap.dedent(stmt),
            "_profile.disable()",
            "_stats = _pstats.Stats(_profile).stats",
            "_rows = sorted(_stats.items(), key=lambda item: -item[1][2])",
            "_top = [",
            "    {'file': f[0], 'line': f[1], 'function': f[2], 'calls': nc,",
            "     'primitive_calls': cc, 'own_s': tt, 'cumulative_s': ct}",
            f"    for f, (cc, nc, tt, ct, _) in _rows[:{top}]",
            "]",
            "_total = sum(row[2] for row in _stats.values())",
            f"print({REPORT_MARKER!r} + _json.dumps({{'top': _top, 'total_s': _total}}), flush=True)",
        ]
    )
    return run_python(code).report


def warm_page_cache(*paths: str | os.PathLike[str]) -> None:
    """Read the files once (in another process: this one must stay small, see above) so
    that every contender finds them in the page cache."""
    subprocess.run(["cat", *map(str, paths)], stdout=subprocess.DEVNULL, check=True)


# -- formatting ----------------------------------------------------------------------
def fmt_seconds(seconds: float) -> str:
    if seconds < 0.01:
        return f"{seconds * 1000:.2f} ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


def fmt_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.{2 if unit == 'GB' else 0}f} {unit}"
    return f"{int(n)} B"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.2f}×" if ratio >= 0.1 else f"{ratio:.3f}×"


def markdown_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None
) -> str:
    """A GitHub markdown table; ``align`` has one of ``l``/``r``/``c`` per column."""
    align = align or "l" + "r" * (len(headers) - 1)
    marks = {"l": ":--", "r": "--:", "c": ":-:"}
    cells = [[str(c).replace("|", "\\|") for c in row] for row in rows]
    lines = [
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join(marks[a] for a in align) + " |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def machine_description() -> str:
    """Cores, memory, OS and Python version, for the header of a results file."""
    memory = ""
    try:
        with open("/proc/meminfo") as fh:
            kb = int(fh.readline().split()[1])
        memory = f", {kb / 1024**2:.0f} GB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{os.cpu_count()} cores{memory}, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}"
    )


def today() -> str:
    return datetime.date.today().isoformat()


def package_version(name: str) -> str:
    """Version of an installed package, asked of a child so that the parent stays small."""
    code = f"import importlib.metadata as m; print(m.version({name!r}))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    return result.stdout.strip() or "?"


def git_revision() -> str:
    """Short commit of the repository, with ``+changes`` when the working tree differs."""

    def git(*args: str) -> str:
        result = subprocess.run(
            ["git", *args], cwd=BENCH_DIR, capture_output=True, text=True, check=False
        )
        return result.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "?"
    return commit + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def write_result(name: str, text: str) -> Path:
    """Write ``bench/results/<name>.md``."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.md"
    path.write_text(text.rstrip() + "\n", encoding="utf-8")
    return path
