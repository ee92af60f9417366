"""A package's public names, each imported from its private module when first asked for
(PEP 562): importing the package stays cheap, and a name costs its module once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(
    package: str, where: Mapping[str, str], namespace: dict[str, Any], extra: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``globals()``: ``namespace``)
    for names defined in the modules ``where`` maps them to (relative, like ``"._read"``)."""
    listed = sorted({*where, *extra})

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value  # asked once: later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *listed})

    return __getattr__, __dir__


__all__ = ["lazy_names"]
