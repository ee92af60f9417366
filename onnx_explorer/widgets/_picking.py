"""Shared by the lists that feed the explorer's selection (node list, tensor list)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import ipywidgets as widgets


class QuietPicking:
    """A list whose own updates (new options, following a selection made elsewhere) are not
    mistaken for the user picking an entry. Subclasses have a ``selected`` trait."""

    _updating = False
    selected: Any

    @contextmanager
    def quietly(self) -> Iterator[None]:
        self._updating = True
        try:
            yield
        finally:
            self._updating = False

    def show_picked(self, select: widgets.Select, name: str) -> None:
        """Highlight ``name`` in ``select`` if it is listed, without echoing it back."""
        if select.value != name and name in {value for _, value in select.options}:
            with self.quietly():
                select.value = name

    def _on_pick(self, change: Any) -> None:
        if not self._updating and change["new"] is not None:
            self.selected = change["new"]
