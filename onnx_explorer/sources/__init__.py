"""Byte sources: where a model's bytes come from (a local file, or any fsspec URL).

One small interface (:class:`ByteSource`: a size, read a range) with a local-file
implementation (:class:`LocalFile`) and an fsspec one (:mod:`.remote`, imported only
when a URL is opened, so fsspec stays an optional dependency).
"""

from __future__ import annotations

from .base import ByteSource
from .local import LocalFile
from .memory import InMemory
from .urls import is_url, redact_url

__all__ = ["ByteSource", "InMemory", "LocalFile", "is_url", "redact_url"]
