"""TensorFlow GraphDef files (``.pb`` binary, ``.pbtxt`` text) → the neutral :class:`Model`.

No TensorFlow is needed: the messages come from :mod:`._proto`. This module
holds the entry points; the jobs live in :mod:`._parse` (bytes → message:
text format, binary with payloads cut out), :mod:`._tensors` (element types,
lazy tensors), :mod:`._attrs` (attribute values), :mod:`._ops` (what
ops mean: inputs, outputs, weight layouts) and :mod:`._build` (message →
neutral model). The mapping onto the format-neutral model:

- Every ``NodeDef`` is a :class:`Node`. An input ``name:k`` is the value
  ``"name:k"``, ``name:0`` is ``"name"``; ``^name`` control inputs go to
  :attr:`Node.control_inputs`. A node's outputs are ports ``0..k`` for the largest
  port ``k`` any consumer reads (at least port 0).
- ``Placeholder`` / ``PlaceholderWithDefault`` nodes are the graph's inputs.
- ``Const`` nodes stay nodes, and their ``value`` tensor is also listed in
  :attr:`Graph.initializers` under the node's name (the same :class:`Tensor`).
- The graph's outputs are port 0 of every node nothing reads (by data or control
  edge), except nodes that produce no result worth showing (see ``NOT_OUTPUTS``).
- The function library becomes :attr:`Model.functions`. Inside a function body
  values keep TensorFlow's names: an argument ``x``, or ``node:out_arg:index``
  (``node:out_arg`` is read as index 0). Functions are never inlined, so cyclic
  calls cost nothing.
- Tensors are lazy: ``tensor_content`` is located in the file without copying
  (binary files) and typed ``*_val`` fields are decoded on first read, following
  TensorFlow's rule that fewer values than elements repeat the last one — without
  materialising such a fill for statistics.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ....errors import ModelFormatError
from ....external_data import DataFiles
from ....model import Model
from ....sources import ByteSource
from ..._sniff import graphdef_encoding
from ...protobuf._wire import strip_file
from ._attrs import FunctionRef, shape_dims
from ._build import function_path, model_from_graphdef
from ._ops import INPUT_OPS, NOT_OUTPUTS, layout_note, output_dtype
from ._parse import MAX_TEXT_DEPTH, parse_binary, parse_text, strip, text_depth
from ._tensors import MAX_FILL_BYTES, FillSource, TensorContext, tf_dtype, tf_type_name


def read_graphdef_file(path: Path) -> Model:
    """Open a ``.pb`` (binary) or ``.pbtxt`` (text) GraphDef; weights stay in the file."""
    path = Path(path)
    what = repr(str(path))
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if not head:
        raise ModelFormatError(f"{what} is empty")
    if graphdef_encoding(head, path.suffix.lower()) == "text":
        with open(path, "rb") as fh:
            proto = parse_text(fh.read(), what)
        return model_from_graphdef(proto, name=path.stem, path=path, ctx=TensorContext("embedded"))
    files = DataFiles()
    try:
        model_file = files.get(Path(os.path.realpath(path)))
        size = model_file.size
        stripped = strip_file(model_file.path, size, lambda source: strip(source, what), what)
        proto = parse_binary(stripped.data, what)
        ctx = TensorContext("embedded", stripped, model_file)
        return model_from_graphdef(proto, name=path.stem, path=path, ctx=ctx, data_files=files)
    except BaseException:
        files.close()  # a file that is no model keeps no descriptor open
        raise


def read_graphdef_source(model_file: ByteSource, files: DataFiles) -> Model:
    """A GraphDef from any byte source (a URL): a binary one walked by ranges, its weights
    left there; a text one (it has no ranges to skip) fetched whole."""
    what = repr(model_file.display)
    size = model_file.size
    if size == 0:
        raise ModelFormatError(f"{what} is empty")
    suffix = Path(model_file.display.rsplit("/", 1)[-1]).suffix.lower()
    if graphdef_encoding(model_file.fetch(0, min(size, 4096)), suffix) == "text":
        return read_graphdef_bytes(model_file.fetch(0, size))
    stripped = strip_file(model_file, size, lambda source: strip(source, what), what)
    proto = parse_binary(stripped.data, what)
    ctx = TensorContext("embedded", stripped, model_file)
    name = model_file.display.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return model_from_graphdef(proto, name=name, ctx=ctx, data_files=files)


def read_graphdef_bytes(data: bytes) -> Model:
    """A GraphDef from the bytes of a binary or text file; tensors view ``data``."""
    what = "the given bytes"
    if not data:
        raise ModelFormatError(f"{what} are empty")
    if graphdef_encoding(data[:4096]) == "text":
        return model_from_graphdef(parse_text(data, what), ctx=TensorContext("memory"))
    stripped = strip(data, what)
    proto = parse_binary(stripped.data, what)
    return model_from_graphdef(proto, ctx=TensorContext("memory", stripped, data))


def read_graphdef_proto(proto: Any) -> Model:
    """A GraphDef message already in memory (this package's class or TensorFlow's)."""
    return model_from_graphdef(proto, ctx=TensorContext("memory"))


__all__ = [
    "INPUT_OPS",
    "MAX_FILL_BYTES",
    "MAX_TEXT_DEPTH",
    "NOT_OUTPUTS",
    "FillSource",
    "FunctionRef",
    "function_path",
    "layout_note",
    "model_from_graphdef",
    "output_dtype",
    "parse_binary",
    "parse_text",
    "read_graphdef_bytes",
    "read_graphdef_file",
    "read_graphdef_proto",
    "read_graphdef_source",
    "shape_dims",
    "text_depth",
    "tf_dtype",
    "tf_type_name",
]
