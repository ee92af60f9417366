"""ONNX files → :class:`~onnx_explorer.model.Model`, reading no weight bytes.

External data stays where it is until a tensor is read. Weights embedded as
``raw_data`` are located by walking the wire format (:mod:`.protobuf._wire`) so that
protobuf parses only the graph structure. The parsed graphs are converted to the
neutral model part by part, as they are first read (:mod:`._graph`): opening
costs about what parsing costs.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from pathlib import Path
from typing import Any

import onnx
from google.protobuf.message import DecodeError

from ...errors import ModelFormatError
from ...external_data import DataFiles
from ...model import Model
from ...sources import ByteSource
from ...sources.remote import RemoteDir
from ..protobuf._wire import ONNX_MODEL_SCHEMA, Stripped, strip_file, strip_payloads
from ._graph import function, graph, materialize, opset_imports
from ._shape_inference import ShapeInference
from ._support import OnnxSupport
from ._values import TensorContext, _s, value_info

#: raw_data from this size on is cut out and read from the file; smaller payloads stay in
#: the parsed proto. Cutting one costs a few microseconds of Python, as much as copying
#: some 10-50 KB; what stays is a model's biases and norms (a real transformer's are
#: 1-16 KB each and half its tensors) and weights of toy models.
CUT_FROM = 4096

#: Files up to this size are walked through the model file's map (the pages looked at are
#: brought in; for the graph's structure that is most of a file this size); larger ones,
#: whose weights are most of their bytes, are read only where the walk looks (protobuf/_wire).
WALK_MAPPED = 256 << 20


def model_from_proto(
    proto: onnx.ModelProto,
    *,
    path: Path | None = None,
    base_dir: Path | RemoteDir | None = None,
    stripped: Stripped | None = None,
    model_file: Any = None,
    files: DataFiles | None = None,
    data: bytes | None = None,
) -> Model:
    ctx = TensorContext(base_dir, stripped, model_file)
    if files is not None:
        ctx.files = files
    return Model(
        graph(ctx, proto.graph, "/"),
        format="onnx",
        path=path,
        ir_version=proto.ir_version,
        opset_imports=opset_imports(proto.opset_import),
        producer_name=_s(proto.producer_name),
        producer_version=_s(proto.producer_version),
        domain=_s(proto.domain),
        model_version=proto.model_version,
        doc_string=_s(proto.doc_string),
        metadata_props={_s(p.key): _s(p.value) for p in proto.metadata_props},
        functions=tuple(function(ctx, f) for f in proto.functions),
        data_files=ctx.files,
        support=OnnxSupport(proto, ShapeInference(proto, value_info), data),
    )


def _parse(data: bytes, what: str) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelFormatError(f"{what} is not a valid ONNX model: {exc}") from None
    if not proto.HasField("graph"):
        raise ModelFormatError(f"{what} is not an ONNX model: it has no graph")
    return proto


def _forget_pages(view: memoryview) -> None:
    """Unmap the pages of the model file the walk and the parse touched: they stay in the
    page cache, out of this process's resident memory, until a tensor is read."""
    target = view.obj
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if isinstance(target, mmap.mmap) and advice is not None:
        with contextlib.suppress(OSError, ValueError):
            target.madvise(advice)


def read_onnx_file(path: Path, external_data_dir: Path | None = None) -> Model:
    files = DataFiles()
    try:
        return _read_onnx_file(path, external_data_dir, files)
    except BaseException:
        files.close()  # a file that is no model keeps no descriptor open
        raise


def _read_onnx_file(path: Path, external_data_dir: Path | None, files: DataFiles) -> Model:
    model_file = files.get(Path(os.path.realpath(path)))
    size = model_file.size
    if size == 0:
        raise ModelFormatError(f"{str(path)!r} is empty")
    what = repr(str(path))
    if size <= WALK_MAPPED:
        # The model file's map, through which tensors are read later: no copy of the file.
        view = model_file.view(0, size)
        stripped = _strip(view, what)
        proto = _parse(stripped.data, what)
        _forget_pages(view)
    else:
        stripped = strip_file(model_file.path, size, lambda src: _strip(src, what), what)
        proto = _parse(stripped.data, what)
    stripped.data = b""  # parsed: the markers' ranges are what is left to use
    base_dir = Path(external_data_dir) if external_data_dir is not None else path.parent
    return model_from_proto(
        proto, path=path, base_dir=base_dir, stripped=stripped, model_file=model_file, files=files
    )


def _strip(source: Any, what: str) -> Stripped:
    try:
        return strip_payloads(source, ONNX_MODEL_SCHEMA, CUT_FROM)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{what} is not a valid ONNX model: {exc}") from None


def read_onnx_source(
    model_file: ByteSource, base: Path | RemoteDir | None, files: DataFiles
) -> Model:
    """An ONNX model from any byte source (a URL): the wire walk fetches only the ranges it
    looks at, skipping the weights, which tensors fetch later by range."""
    size = model_file.size
    what = repr(model_file.display)
    if size == 0:
        raise ModelFormatError(f"{what} is empty")
    stripped = strip_file(model_file, size, lambda src: _strip(src, what), what)
    proto = _parse(stripped.data, what)
    stripped.data = b""
    return model_from_proto(
        proto, base_dir=base, stripped=stripped, model_file=model_file, files=files
    )


def read_onnx_bytes(data: bytes, external_data_dir: Path | RemoteDir | None = None) -> Model:
    try:
        stripped = strip_payloads(data, ONNX_MODEL_SCHEMA, CUT_FROM)
    except ModelFormatError as exc:
        raise ModelFormatError(f"the given bytes are not a valid ONNX model: {exc}") from None
    proto = _parse(stripped.data, "the given bytes")
    stripped.data = b""
    base = external_data_dir
    if base is not None and not isinstance(base, RemoteDir):
        base = Path(base)
    return model_from_proto(proto, base_dir=base, stripped=stripped, model_file=data, data=data)


def read_onnx_proto(proto: onnx.ModelProto, external_data_dir: Path | None = None) -> Model:
    base = Path(external_data_dir) if external_data_dir is not None else None
    model = model_from_proto(proto, base_dir=base)
    # The caller keeps the proto and may change it: convert everything now, as it is.
    materialize(model)
    return model


__all__ = ["read_onnx_bytes", "read_onnx_file", "read_onnx_proto", "read_onnx_source"]
