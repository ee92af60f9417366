"""Reading and writing a node-data JSON file: bounded, strict, never over a model.

Reading: at most :data:`MAX_BYTES` (the file's size is checked before a byte is read),
strict JSON (``NaN``, ``Infinity`` and numbers beyond float range are refused, as
browsers' ``JSON.parse`` refuses them), nesting beyond Python's recursion limit refused
(the parser stops at it, in bounded time). Every failure is a :class:`NodeDataError`
naming the file. Writing: only to a ``.json`` path (so never over a model file), through a
temporary file beside it renamed into place.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import NodeDataError

#: The largest node-data file read (a 100,000-node series with colours is ~10 MB).
MAX_BYTES = 256 * 1024 * 1024
#: Longest key (node or tensor name) and text value accepted.
MAX_TEXT = 65_536

Source = str | os.PathLike[str] | bytes | Mapping[str, Any]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (Model Explorer and Netron refuse it too)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is beyond the range of a float")
    return value


def parse_json(data: bytes | str, where: str) -> Any:
    """Strict JSON text → Python objects, or NodeDataError naming ``where``."""
    try:
        return json.loads(data, parse_constant=_refuse_constant, parse_float=_float)
    except RecursionError:
        raise NodeDataError(f"{where}: JSON nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise NodeDataError(f"{where}: not valid JSON: {exc}") from None


def load_source(source: Source, max_bytes: int = MAX_BYTES) -> tuple[Any, str]:
    """(the parsed JSON, a name for messages) from a path, JSON text/bytes or a dict."""
    if isinstance(source, Mapping):
        return source, "node data"
    if isinstance(source, bytes):
        _check_size(len(source), max_bytes, "node data")
        return parse_json(source, "node data"), "node data"
    if isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        _check_size(len(source), max_bytes, "node data")
        return parse_json(source, "node data"), "node data"
    if not isinstance(source, str | os.PathLike):
        raise TypeError(
            f"node data must be a path, JSON text, bytes or a dict, not {type(source).__name__}"
        )
    path = Path(source)
    where = path.name or str(path)
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if not path.is_file():
                raise NodeDataError(f"{where}: not a regular file")
            _check_size(size, max_bytes, where)
            data = f.read(max_bytes + 1)
    except FileNotFoundError:
        raise NodeDataError(f"{where}: no such file ({path})") from None
    except OSError as exc:
        raise NodeDataError(f"{where}: cannot read: {exc.strerror or exc}") from None
    _check_size(len(data), max_bytes, where)
    return parse_json(data, where), where


def _check_size(size: int, max_bytes: int, where: str) -> None:
    if size > max_bytes:
        raise NodeDataError(
            f"{where}: {size:,} bytes is more than the {max_bytes:,} a node-data file may "
            "have (pass max_bytes= to read it anyway)"
        )


def write_json(data: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``data`` to ``path`` (which must end in ``.json``), replacing it whole."""
    target = Path(path)
    if target.suffix.lower() != ".json":
        raise NodeDataError(
            f"{target.name}: node data is written to a .json file only (never over a model)"
        )
    if target.exists() and not target.is_file():
        raise NodeDataError(f"{target.name}: exists and is not a regular file")
    text = json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False)
    fd, temp = tempfile.mkstemp(prefix=".oxe-", suffix=".json", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target
