"""The only code that runs Graphviz: DOT text in, SVG / PNG out, with a timeout.

Model text reaches the picture only through escaped DOT labels (``dot.py``) and the
hover titles written here with XML escaping.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from xml.sax.saxutils import escape

from ..errors import GraphvizNotFoundError, RenderError
from .dot import DotResult

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


def dot_executable() -> str:
    """Path of ``dot``, or raise :class:`GraphvizNotFoundError` saying how to install it."""
    found = shutil.which(os.environ.get("ONNX_EXPLORER_DOT", "dot"))
    if found is None:
        raise GraphvizNotFoundError(INSTALL_HINT)
    return found


def run_dot(source: str, fmt: str = "svg", timeout: float = DEFAULT_TIMEOUT) -> bytes:
    """Lay out ``source`` with ``dot -T<fmt>``; raise RenderError on failure or timeout."""
    if fmt not in ("svg", "png"):
        raise ValueError(f"format must be svg or png, not {fmt!r}")
    executable = dot_executable()
    try:
        done = subprocess.run(
            [executable, f"-T{fmt}"],
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RenderError(
            f"Graphviz took more than {timeout:g} s to lay out the graph; draw fewer nodes "
            "(collapse scopes, or focus on one node)"
        ) from None
    except OSError as exc:
        raise GraphvizNotFoundError(f"{INSTALL_HINT} ({exc.strerror})") from None
    if done.returncode != 0 or not done.stdout:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RenderError(f"Graphviz failed: {' '.join(message[-3:]) or 'no output'}")
    return done.stdout


def add_titles(svg: str, titles: dict[str, str] | object) -> str:
    """Replace Graphviz's ``<title>n3</title>`` by the escaped hover text for n3."""
    lookup = dict(titles) if not isinstance(titles, dict) else titles  # type: ignore[call-overload]

    def replace(match: re.Match[str]) -> str:
        text = lookup.get(match.group(2))
        if text is None:
            return match.group(0)
        return match.group(1) + escape(str(text)) + match.group(4)

    return _TITLE.sub(replace, svg)


def svg_from_result(result: DotResult, timeout: float = DEFAULT_TIMEOUT) -> str:
    """The SVG of a built view, hover titles included, without the XML prolog."""
    svg = run_dot(result.source, "svg", timeout).decode("utf-8", "replace")
    start = svg.find("<svg")
    return add_titles(svg[start:] if start >= 0 else svg, result.titles)


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
        data = run_dot(result.source, "png", timeout)
    path.write_bytes(data)
    return path
