"""ONNX files → :class:`~onnx_explorer.model.Model`, reading no weight bytes.

External data stays where it is until a tensor is read. Weights embedded as
``raw_data`` are located by walking the wire format (see ``protowire``) so that
protobuf parses only the graph structure.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from ..dtypes import DType, dtype
from ..errors import ModelFormatError
from ..external_data import DataFiles, ExternalRef
from ..model import Attribute, Function, Graph, Model, Node, SparseTensor, ValueInfo
from ..tensors import (
    ArraySource,
    BytesSource,
    ExternalBytes,
    FileRange,
    MemoryBytes,
    Tensor,
    TensorLocation,
    TensorSource,
)
from .onnx_shapes import ShapeInference
from .protowire import ONNX_MODEL_SCHEMA, Stripped, strip_file, strip_payloads

# TensorProto.DataType → our dtype names.
_DTYPE_NAMES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8_e4m3fn",
    18: "float8_e4m3fnuz", 19: "float8_e5m2", 20: "float8_e5m2fnuz", 21: "uint4", 22: "int4",
    23: "float4_e2m1fn", 24: "float8_e8m0fnu", 25: "uint2", 26: "int2",
    27: "float6_e2m3fn", 28: "float6_e3m2fn",
}  # fmt: skip
UNDEFINED = DType("undefined", np.dtype(object), 0, is_numeric=False)
_ATTR_KINDS = {v: k for k, v in onnx.AttributeProto.AttributeType.items()}


def _s(value: str | bytes) -> str:
    """Text of a string field: protobuf hands back bytes when a proto2 string is not UTF-8."""
    if isinstance(value, str):
        return value
    return bytes(value).decode("utf-8", "replace")


def onnx_dtype(elem_type: int) -> DType:
    name = _DTYPE_NAMES.get(elem_type)
    return dtype(name) if name else UNDEFINED


def onnx_elem_name(elem_type: int) -> str:
    """ONNX's own short name for an element type, as in ``tensor(float)``."""
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"unknown({elem_type})"


# -- types -------------------------------------------------------------------------
def type_string(tp: onnx.TypeProto) -> str:
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        return f"tensor({onnx_elem_name(tp.tensor_type.elem_type)})"
    if which == "sparse_tensor_type":
        return f"sparse_tensor({onnx_elem_name(tp.sparse_tensor_type.elem_type)})"
    if which == "sequence_type":
        return f"seq({type_string(tp.sequence_type.elem_type)})"
    if which == "map_type":
        key = onnx_elem_name(tp.map_type.key_type)
        return f"map({key}, {type_string(tp.map_type.value_type)})"
    if which == "optional_type":
        return f"optional({type_string(tp.optional_type.elem_type)})"
    return ""


def _shape(tensor_type: Any) -> tuple[int | str | None, ...] | None:
    if not tensor_type.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for dim in tensor_type.shape.dim:
        which = dim.WhichOneof("value")
        dims.append(dim.dim_value if which == "dim_value" else _s(dim.dim_param) if which else None)
    return tuple(dims)


def value_info(vi: onnx.ValueInfoProto) -> ValueInfo:
    tp = vi.type
    which = tp.WhichOneof("value")
    elem = shape = None
    if which in ("tensor_type", "sparse_tensor_type"):
        inner = getattr(tp, which)
        elem = onnx_dtype(inner.elem_type).name
        shape = _shape(inner)
    return ValueInfo(_s(vi.name), type_string(tp), elem, shape, _s(vi.doc_string))


# -- tensors -----------------------------------------------------------------------
class _ProtoRawBytes(BytesSource):
    """raw_data of a TensorProto held in memory (a ModelProto passed by the caller)."""

    def __init__(self, tp: onnx.TensorProto) -> None:
        self._tp = tp
        self.location = TensorLocation("memory", length=len(tp.raw_data))

    def buffer(self, name: str) -> Any:
        return self._tp.raw_data


def _typed_loader(tp: onnx.TensorProto) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        if tp.data_type == onnx.TensorProto.STRING:
            # Elements are arbitrary bytes; onnx decodes them strictly as UTF-8.
            return np.array(
                [bytes(v).decode("utf-8", "replace") for v in tp.string_data], dtype=object
            ).reshape(tuple(tp.dims))
        return onnx.numpy_helper.to_array(tp)

    return load


class _Context:
    """What converting one model needs: where bytes live and how to name things."""

    def __init__(self, base_dir: Path | None, stripped: Stripped | None, model_file: Any) -> None:
        self.base_dir = base_dir
        self.stripped = stripped
        self.model_file = model_file  # DataFile or bytes the stripped ranges refer to
        self.files = DataFiles()

    def tensor(self, tp: onnx.TensorProto, name: str | None = None) -> Tensor:
        dt = onnx_dtype(tp.data_type)
        shape = tuple(int(d) for d in tp.dims)
        name = name or _s(tp.name)
        return Tensor(name, dt, shape, self.source(tp), _s(tp.doc_string))

    def source(self, tp: onnx.TensorProto) -> TensorSource:
        if tp.data_location == onnx.TensorProto.EXTERNAL:
            ref = ExternalRef.from_entries([(_s(e.key), _s(e.value)) for e in tp.external_data])
            return ExternalBytes(ref, self.base_dir, self.files)
        if tp.HasField("raw_data"):
            if self.stripped is not None:
                index = self.stripped.marker_index(tp.raw_data)
                if index is not None:
                    offset, length = self.stripped.ranges[index]
                    if isinstance(self.model_file, bytes | memoryview):
                        return MemoryBytes(memoryview(self.model_file)[offset : offset + length])
                    return FileRange(self.model_file, offset, length)
                return MemoryBytes(tp.raw_data, kind="embedded")
            return _ProtoRawBytes(tp)
        return ArraySource(_typed_loader(tp), TensorLocation("typed"))

    def sparse(self, sp: onnx.SparseTensorProto, name: str | None = None) -> SparseTensor:
        values = self.tensor(sp.values, name or _s(sp.values.name))
        indices = self.tensor(sp.indices, (name or _s(sp.values.name)) + ".indices")
        return SparseTensor(values, indices, tuple(int(d) for d in sp.dims))


# -- nodes and graphs --------------------------------------------------------------
def _attribute(
    ctx: _Context, a: onnx.AttributeProto, node_name: str, owner: str, graph_path: str
) -> Attribute:
    kind = _ATTR_KINDS.get(a.type, "UNDEFINED")
    if kind == "UNDEFINED":
        kind = _guess_attribute_kind(a)
    attr_name = _s(a.name)
    label = f"{node_name}.{attr_name}"
    sub_path = f"{graph_path.rstrip('/')}/{node_name.lstrip('/')}/{attr_name}"
    value: Any
    if kind == "FLOAT":
        value = a.f
    elif kind == "INT":
        value = a.i
    elif kind == "STRING":
        value = a.s.decode("utf-8", "replace")
    elif kind == "TENSOR":
        value = ctx.tensor(a.t, owner if owner else (_s(a.t.name) or label))
    elif kind == "GRAPH":
        value = _graph(ctx, a.g, sub_path)
    elif kind == "SPARSE_TENSOR":
        value = ctx.sparse(a.sparse_tensor, owner or label)
    elif kind == "TYPE_PROTO":
        value = type_string(a.tp)
    elif kind == "FLOATS":
        value = tuple(a.floats)
    elif kind == "INTS":
        value = tuple(a.ints)
    elif kind == "STRINGS":
        value = tuple(s.decode("utf-8", "replace") for s in a.strings)
    elif kind == "TENSORS":
        value = tuple(ctx.tensor(t, _s(t.name) or f"{label}[{i}]") for i, t in enumerate(a.tensors))
    elif kind == "GRAPHS":
        value = tuple(_graph(ctx, g, f"{sub_path}[{i}]") for i, g in enumerate(a.graphs))
    elif kind == "SPARSE_TENSORS":
        value = tuple(ctx.sparse(s, f"{label}[{i}]") for i, s in enumerate(a.sparse_tensors))
    elif kind == "TYPE_PROTOS":
        value = tuple(type_string(t) for t in a.type_protos)
    else:
        value = None
    return Attribute(attr_name, kind, value, _s(a.doc_string), _s(a.ref_attr_name))


def _guess_attribute_kind(a: onnx.AttributeProto) -> str:
    """IR 1/2 files may leave ``type`` unset: infer it from the field that holds a value."""
    for field, kind in (
        ("floats", "FLOATS"), ("ints", "INTS"), ("strings", "STRINGS"), ("tensors", "TENSORS"),
        ("graphs", "GRAPHS"),
    ):  # fmt: skip
        if len(getattr(a, field)):
            return kind
    for field, kind in (
        ("t", "TENSOR"),
        ("g", "GRAPH"),
        ("sparse_tensor", "SPARSE_TENSOR"),
        ("tp", "TYPE_PROTO"),
    ):
        if a.HasField(field):
            return kind
    if a.s:
        return "STRING"
    if a.i:
        return "INT"
    return "FLOAT" if a.f else "UNDEFINED"


def _nodes(ctx: _Context, protos: Any, graph_path: str) -> list[Node]:
    nodes: list[Node] = []
    seen: set[str] = {_s(n.name) for n in protos if n.name}
    used: set[str] = set()
    for i, n in enumerate(protos):
        has_name = bool(n.name)
        op_type = _s(n.op_type)
        name = _s(n.name) or f"{op_type}_{i}"
        if name in used or (not has_name and name in seen):
            k = 1
            while f"{name}#{k}" in used or f"{name}#{k}" in seen:
                k += 1
            name = f"{name}#{k}"
        used.add(name)
        # A Constant's tensor is known by the value it produces.
        outputs = tuple(map(_s, n.output))
        owner = outputs[0] if op_type == "Constant" and outputs else ""
        attrs = {_s(a.name): _attribute(ctx, a, name, owner, graph_path) for a in n.attribute}
        meta = n.metadata_props  # most nodes have none: build no dict for them
        node = Node(
            name, op_type, _s(n.domain), tuple(map(_s, n.input)), outputs, attrs, _s(n.doc_string),
            has_file_name=has_name,
            metadata_props={_s(p.key): _s(p.value) for p in meta} if meta else None,
        )  # fmt: skip
        for attr in attrs.values():
            if attr.kind == "GRAPH":
                attr.value.parent = node
            elif attr.kind == "GRAPHS":
                for g in attr.value:
                    g.parent = node
        nodes.append(node)
    return nodes


def _graph(ctx: _Context, g: onnx.GraphProto, path: str) -> Graph:
    initializers = {_s(t.name): ctx.tensor(t) for t in g.initializer}
    sparse = {_s(s.values.name): ctx.sparse(s) for s in g.sparse_initializer}
    declared = tuple(value_info(vi) for vi in g.input)
    # IR < 4 lists initializers among the inputs; a true input is one with no stored value.
    true_inputs = tuple(v for v in declared if v.name not in initializers and v.name not in sparse)
    return Graph(
        name=_s(g.name),
        nodes=_nodes(ctx, g.node, path),
        inputs=true_inputs,
        outputs=tuple(value_info(vi) for vi in g.output),
        initializers=initializers,
        value_info={_s(vi.name): value_info(vi) for vi in g.value_info},
        doc_string=_s(g.doc_string),
        path=path,
        sparse_initializers=sparse,
        declared_inputs=declared,
    )


def _function(ctx: _Context, f: onnx.FunctionProto) -> Function:
    path = f"function:{f.domain}:{f.name}" + (f":{f.overload}" if f.overload else "")
    typed = {vi.name: value_info(vi) for vi in f.value_info}
    graph = Graph(
        name=f.name,
        nodes=_nodes(ctx, f.node, path),
        inputs=tuple(typed.get(n, ValueInfo(n)) for n in f.input),
        outputs=tuple(typed.get(n, ValueInfo(n)) for n in f.output),
        initializers={},
        value_info=typed,
        doc_string=f.doc_string,
        path=path,
    )
    defaults = {a.name: _attribute(ctx, a, f.name, "", path) for a in f.attribute_proto}
    return Function(
        name=f.name,
        domain=f.domain,
        graph=graph,
        attribute_names=tuple(f.attribute) + tuple(a for a in defaults if a not in f.attribute),
        attribute_defaults=defaults,
        opset_imports={o.domain: o.version for o in f.opset_import},
        overload=f.overload,
        doc_string=f.doc_string,
    )


def model_from_proto(
    proto: onnx.ModelProto,
    *,
    path: Path | None = None,
    base_dir: Path | None = None,
    stripped: Stripped | None = None,
    model_file: Any = None,
    files: DataFiles | None = None,
) -> Model:
    ctx = _Context(base_dir, stripped, model_file)
    if files is not None:
        ctx.files = files
    return Model(
        _graph(ctx, proto.graph, "/"),
        format="onnx",
        path=path,
        ir_version=proto.ir_version,
        opset_imports={o.domain: o.version for o in proto.opset_import},
        producer_name=_s(proto.producer_name),
        producer_version=_s(proto.producer_version),
        domain=_s(proto.domain),
        model_version=proto.model_version,
        doc_string=_s(proto.doc_string),
        metadata_props={_s(p.key): _s(p.value) for p in proto.metadata_props},
        functions=tuple(_function(ctx, f) for f in proto.functions),
        data_files=ctx.files,
        source=proto,
        type_inference=ShapeInference(proto, value_info),
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


def read_onnx_file(path: Path, external_data_dir: Path | None = None) -> Model:
    files = DataFiles()
    model_file = files.get(Path(os.path.realpath(path)))
    size = model_file.size
    if size == 0:
        raise ModelFormatError(f"{str(path)!r} is empty")
    what = repr(str(path))

    def strip(source: Any) -> Stripped:
        try:
            return strip_payloads(source, ONNX_MODEL_SCHEMA)
        except ModelFormatError as exc:
            raise ModelFormatError(f"{what} is not a valid ONNX model: {exc}") from None

    stripped = strip_file(model_file.path, size, strip, what)
    proto = _parse(stripped.data, repr(str(path)))
    base_dir = Path(external_data_dir) if external_data_dir is not None else path.parent
    return model_from_proto(
        proto, path=path, base_dir=base_dir, stripped=stripped, model_file=model_file, files=files
    )


def read_onnx_bytes(data: bytes, external_data_dir: Path | None = None) -> Model:
    try:
        stripped = strip_payloads(data, ONNX_MODEL_SCHEMA)
    except ModelFormatError as exc:
        raise ModelFormatError(f"the given bytes are not a valid ONNX model: {exc}") from None
    proto = _parse(stripped.data, "the given bytes")
    base = Path(external_data_dir) if external_data_dir is not None else None
    model = model_from_proto(proto, base_dir=base, stripped=stripped, model_file=data)
    model.source_bytes = data
    return model


def read_onnx_proto(proto: onnx.ModelProto, external_data_dir: Path | None = None) -> Model:
    base = Path(external_data_dir) if external_data_dir is not None else None
    return model_from_proto(proto, base_dir=base)


__all__ = ["read_onnx_bytes", "read_onnx_file", "read_onnx_proto"]
