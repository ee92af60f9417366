"""TensorFlow tensor bundles (``variables.index`` + ``variables.data-*``): a SavedModel's
variables, read in place.

``_table`` reads the index (a LevelDB-style SSTable), ``_crc32c`` checks its blocks and
the tensors (CRC-32C, masked as TensorFlow stores it), ``_read`` maps each variable to
its byte range in the data shards.
"""

from __future__ import annotations

from ._crc32c import crc32c, mask, unmask
from ._read import Bundle, read_bundle

__all__ = ["Bundle", "crc32c", "mask", "read_bundle", "unmask"]
