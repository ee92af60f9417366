"""TensorFlow GraphDef message classes, defined here so that no TensorFlow install is needed.

The descriptors are built in code with the package name (``tensorflow``), message
names and field numbers of TensorFlow's own ``tensorflow/core/framework/*.proto``
(checked against tensorflow 2.21 by ``scripts/make_graphdef_fixtures.py``), so
binary files and text-format files written by TensorFlow both parse. Only the
messages reachable from ``GraphDef`` that the explorer reads are defined (for
SavedModels also ``SavedModel``, ``MetaGraphDef``, ``SignatureDef``, the parts of
``SavedObjectGraph`` that name variables, and the tensor-bundle index messages; the
names of our own messages ``AnyValue`` and ``SavedObjectReference`` differ from
TensorFlow's nested ones, the wire format does not);
``GraphDef.debug_info`` is left out (binary parsing keeps it as an unknown field,
text parsing skips it).

The classes live in a private descriptor pool: importing TensorFlow in the same
process, which registers the same names in the default pool, does not clash.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

_F = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_SCALARS = {
    "string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES, "bool": _F.TYPE_BOOL,
    "int32": _F.TYPE_INT32, "int64": _F.TYPE_INT64, "uint32": _F.TYPE_UINT32,
    "uint64": _F.TYPE_UINT64, "float": _F.TYPE_FLOAT, "double": _F.TYPE_DOUBLE,
    "fixed32": _F.TYPE_FIXED32,
}  # fmt: skip
_ENUMS = {"DataType", "FullTypeId"}

# tensorflow/core/framework/types.proto (DataType) and full_type.proto (FullTypeId).
_DATA_TYPES = [
    "INVALID", "FLOAT", "DOUBLE", "INT32", "UINT8", "INT16", "INT8", "STRING", "COMPLEX64",
    "INT64", "BOOL", "QINT8", "QUINT8", "QINT32", "BFLOAT16", "QINT16", "QUINT16", "UINT16",
    "COMPLEX128", "HALF", "RESOURCE", "VARIANT", "UINT32", "UINT64", "FLOAT8_E5M2",
    "FLOAT8_E4M3FN", "FLOAT8_E4M3FNUZ", "FLOAT8_E4M3B11FNUZ", "FLOAT8_E5M2FNUZ", "INT4",
    "UINT4", "INT2", "UINT2", "FLOAT4_E2M1FN",
]  # fmt: skip
#: Reference types are the base type + 100 (DT_FLOAT_REF = 101).
REF_OFFSET = 100
_FULL_TYPE_IDS = {
    "TFT_UNSET": 0, "TFT_VAR": 1, "TFT_ANY": 2, "TFT_PRODUCT": 3, "TFT_NAMED": 4,
    "TFT_FOR_EACH": 20, "TFT_CALLABLE": 100, "TFT_TENSOR": 1000, "TFT_ARRAY": 1001,
    "TFT_OPTIONAL": 1002, "TFT_LITERAL": 1003, "TFT_ENCODED": 1004, "TFT_SHAPE_TENSOR": 1005,
    "TFT_BOOL": 200, "TFT_UINT8": 201, "TFT_UINT16": 202, "TFT_UINT32": 203, "TFT_UINT64": 204,
    "TFT_INT8": 205, "TFT_INT16": 206, "TFT_INT32": 207, "TFT_INT64": 208, "TFT_HALF": 209,
    "TFT_FLOAT": 210, "TFT_DOUBLE": 211, "TFT_BFLOAT16": 215, "TFT_COMPLEX64": 212,
    "TFT_COMPLEX128": 213, "TFT_STRING": 214, "TFT_DATASET": 10102, "TFT_RAGGED": 10103,
    "TFT_ITERATOR": 10104, "TFT_MUTEX_LOCK": 10202, "TFT_LEGACY_VARIANT": 10203,
}  # fmt: skip

# A field: (name, number, type, repeated?, oneof name or "").
# ``type`` is a scalar name, a message/enum name relative to the package
# ("TensorShapeProto.Dim"), or "map<key,Value>".
Field = tuple[str, int, str, bool, str]


def _f(name: str, number: int, type_: str, repeated: bool = False, oneof: str = "") -> Field:
    return (name, number, type_, repeated, oneof)


_ATTR_MAP = "map<string,AttrValue>"

# Message name → (fields, nested message names defined under it).
_MESSAGES: dict[str, list[Field]] = {
    "TensorShapeProto": [_f("dim", 2, "TensorShapeProto.Dim", True), _f("unknown_rank", 3, "bool")],
    "TensorShapeProto.Dim": [_f("size", 1, "int64"), _f("name", 2, "string")],
    "ResourceHandleProto": [
        _f("device", 1, "string"), _f("container", 2, "string"), _f("name", 3, "string"),
        _f("hash_code", 4, "uint64"), _f("maybe_type_name", 5, "string"),
        _f("dtypes_and_shapes", 6, "ResourceHandleProto.DtypeAndShape", True),
    ],
    "ResourceHandleProto.DtypeAndShape": [
        _f("dtype", 1, "DataType"), _f("shape", 2, "TensorShapeProto"),
    ],
    "VariantTensorDataProto": [
        _f("type_name", 1, "string"), _f("metadata", 2, "bytes"),
        _f("tensors", 3, "TensorProto", True),
    ],
    "TensorProto": [
        _f("dtype", 1, "DataType"), _f("tensor_shape", 2, "TensorShapeProto"),
        _f("version_number", 3, "int32"), _f("tensor_content", 4, "bytes"),
        _f("half_val", 13, "int32", True), _f("float_val", 5, "float", True),
        _f("double_val", 6, "double", True), _f("int_val", 7, "int32", True),
        _f("string_val", 8, "bytes", True), _f("scomplex_val", 9, "float", True),
        _f("int64_val", 10, "int64", True), _f("bool_val", 11, "bool", True),
        _f("dcomplex_val", 12, "double", True),
        _f("resource_handle_val", 14, "ResourceHandleProto", True),
        _f("variant_val", 15, "VariantTensorDataProto", True),
        _f("uint32_val", 16, "uint32", True), _f("uint64_val", 17, "uint64", True),
        _f("float8_val", 18, "bytes"),
    ],
    "AttrValue": [
        _f("s", 2, "bytes", oneof="value"), _f("i", 3, "int64", oneof="value"),
        _f("f", 4, "float", oneof="value"), _f("b", 5, "bool", oneof="value"),
        _f("type", 6, "DataType", oneof="value"),
        _f("shape", 7, "TensorShapeProto", oneof="value"),
        _f("tensor", 8, "TensorProto", oneof="value"),
        _f("list", 1, "AttrValue.ListValue", oneof="value"),
        _f("func", 10, "NameAttrList", oneof="value"),
        _f("placeholder", 9, "string", oneof="value"),
    ],
    "AttrValue.ListValue": [
        _f("s", 2, "bytes", True), _f("i", 3, "int64", True), _f("f", 4, "float", True),
        _f("b", 5, "bool", True), _f("type", 6, "DataType", True),
        _f("shape", 7, "TensorShapeProto", True), _f("tensor", 8, "TensorProto", True),
        _f("func", 9, "NameAttrList", True),
    ],
    "NameAttrList": [_f("name", 1, "string"), _f("attr", 2, _ATTR_MAP)],
    "FullTypeDef": [
        _f("type_id", 1, "FullTypeId"), _f("args", 2, "FullTypeDef", True),
        _f("s", 3, "string", oneof="attr"), _f("i", 4, "int64", oneof="attr"),
    ],
    "NodeDef": [
        _f("name", 1, "string"), _f("op", 2, "string"), _f("input", 3, "string", True),
        _f("device", 4, "string"), _f("attr", 5, _ATTR_MAP),
        _f("experimental_debug_info", 6, "NodeDef.ExperimentalDebugInfo"),
        _f("experimental_type", 7, "FullTypeDef"),
    ],
    "NodeDef.ExperimentalDebugInfo": [
        _f("original_node_names", 1, "string", True),
        _f("original_func_names", 2, "string", True),
    ],
    "OpDef": [
        _f("name", 1, "string"), _f("input_arg", 2, "OpDef.ArgDef", True),
        _f("output_arg", 3, "OpDef.ArgDef", True), _f("control_output", 20, "string", True),
        _f("attr", 4, "OpDef.AttrDef", True), _f("deprecation", 8, "OpDeprecation"),
        _f("summary", 5, "string"), _f("description", 6, "string"),
        _f("is_commutative", 18, "bool"), _f("is_aggregate", 16, "bool"),
        _f("is_stateful", 17, "bool"), _f("allows_uninitialized_input", 19, "bool"),
        _f("is_distributed_communication", 21, "bool"),
    ],
    "OpDef.ArgDef": [
        _f("name", 1, "string"), _f("description", 2, "string"), _f("type", 3, "DataType"),
        _f("type_attr", 4, "string"), _f("number_attr", 5, "string"),
        _f("type_list_attr", 6, "string"),
        _f("handle_data", 7, "ResourceHandleProto.DtypeAndShape", True),
        _f("is_ref", 16, "bool"), _f("experimental_full_type", 17, "FullTypeDef"),
    ],
    "OpDef.AttrDef": [
        _f("name", 1, "string"), _f("type", 2, "string"), _f("default_value", 3, "AttrValue"),
        _f("description", 4, "string"), _f("has_minimum", 5, "bool"),
        _f("minimum", 6, "int64"), _f("allowed_values", 7, "AttrValue"),
    ],
    "OpDeprecation": [_f("version", 1, "int32"), _f("explanation", 2, "string")],
    "FunctionDef": [
        _f("signature", 1, "OpDef"), _f("attr", 5, _ATTR_MAP),
        _f("arg_attr", 7, "map<uint32,FunctionDef.ArgAttrs>"),
        _f("resource_arg_unique_id", 8, "map<uint32,uint32>"),
        _f("node_def", 3, "NodeDef", True), _f("ret", 4, "map<string,string>"),
        _f("control_ret", 6, "map<string,string>"),
    ],
    "FunctionDef.ArgAttrs": [_f("attr", 1, _ATTR_MAP)],
    "GradientDef": [_f("function_name", 1, "string"), _f("gradient_func", 2, "string")],
    "RegisteredGradient": [
        _f("gradient_func", 1, "string"), _f("registered_op_type", 2, "string"),
    ],
    "FunctionDefLibrary": [
        _f("function", 1, "FunctionDef", True), _f("gradient", 2, "GradientDef", True),
        _f("registered_gradients", 3, "RegisteredGradient", True),
    ],
    "VersionDef": [
        _f("producer", 1, "int32"), _f("min_consumer", 2, "int32"),
        _f("bad_consumers", 3, "int32", True),
    ],
    "GraphDef": [
        _f("node", 1, "NodeDef", True), _f("versions", 4, "VersionDef"),
        _f("version", 3, "int32"), _f("library", 2, "FunctionDefLibrary"),
    ],
    # tensorflow/core/protobuf/meta_graph.proto and saved_model.proto. SaverDef,
    # CollectionDef and AssetFileDef are left out (kept as unknown fields).
    "OpList": [_f("op", 1, "OpDef", True)],
    "AnyValue": [_f("type_url", 1, "string"), _f("value", 2, "bytes")],  # google.protobuf.Any
    "MetaInfoDef": [
        _f("meta_graph_version", 1, "string"), _f("stripped_op_list", 2, "OpList"),
        _f("any_info", 3, "AnyValue"), _f("tags", 4, "string", True),
        _f("tensorflow_version", 5, "string"), _f("tensorflow_git_version", 6, "string"),
        _f("stripped_default_attrs", 7, "bool"),
        _f("function_aliases", 8, "map<string,string>"),
    ],
    "TensorInfo": [
        _f("name", 1, "string", oneof="encoding"),
        _f("coo_sparse", 4, "TensorInfo.CooSparse", oneof="encoding"),
        _f("dtype", 2, "DataType"), _f("tensor_shape", 3, "TensorShapeProto"),
    ],
    "TensorInfo.CooSparse": [
        _f("values_tensor_name", 1, "string"), _f("indices_tensor_name", 2, "string"),
        _f("dense_shape_tensor_name", 3, "string"),
    ],
    "SignatureDef": [
        _f("inputs", 1, "map<string,TensorInfo>"), _f("outputs", 2, "map<string,TensorInfo>"),
        _f("method_name", 3, "string"), _f("defaults", 4, "map<string,TensorProto>"),
    ],
    # saved_object_graph.proto (what links checkpoint keys to variables) and
    # trackable_object_graph.proto (ObjectReference).
    "SavedObjectReference": [_f("node_id", 1, "int32"), _f("local_name", 2, "string")],
    "SavedUserObject": [
        _f("identifier", 1, "string"), _f("version", 2, "VersionDef"),
        _f("metadata", 3, "string"),
    ],
    "SavedVariable": [
        _f("dtype", 1, "DataType"), _f("shape", 2, "TensorShapeProto"),
        _f("trainable", 3, "bool"), _f("synchronization", 4, "int32"),
        _f("aggregation", 5, "int32"), _f("name", 6, "string"), _f("device", 7, "string"),
    ],
    "SavedFunction": [_f("concrete_functions", 1, "string", True)],
    "SavedObject": [
        _f("children", 1, "SavedObjectReference", True),
        _f("dependencies", 15, "SavedObjectReference", True),
        _f("user_object", 4, "SavedUserObject", oneof="kind"),
        _f("function", 6, "SavedFunction", oneof="kind"),
        _f("variable", 7, "SavedVariable", oneof="kind"),
        _f("registered_name", 13, "string"),
    ],
    "SavedObjectGraph": [_f("nodes", 1, "SavedObject", True)],
    "MetaGraphDef": [
        _f("meta_info_def", 1, "MetaInfoDef"), _f("graph_def", 2, "GraphDef"),
        _f("signature_def", 5, "map<string,SignatureDef>"),
        _f("object_graph_def", 7, "SavedObjectGraph"),
    ],
    "SavedModel": [
        _f("saved_model_schema_version", 1, "int64"),
        _f("meta_graphs", 2, "MetaGraphDef", True),
    ],
    # tensorflow/core/protobuf/tensor_bundle.proto and framework/tensor_slice.proto.
    "BundleHeaderProto": [
        _f("num_shards", 1, "int32"), _f("endianness", 2, "int32"),  # 0 little, 1 big
        _f("version", 3, "VersionDef"),
    ],
    "TensorSliceProto": [_f("extent", 1, "TensorSliceProto.Extent", True)],
    "TensorSliceProto.Extent": [
        _f("start", 1, "int64"), _f("length", 2, "int64", oneof="has_length"),
    ],
    "BundleEntryProto": [
        _f("dtype", 1, "DataType"), _f("shape", 2, "TensorShapeProto"),
        _f("shard_id", 3, "int32"), _f("offset", 4, "int64"), _f("size", 5, "int64"),
        _f("crc32c", 6, "fixed32"), _f("slices", 7, "TensorSliceProto", True),
    ],
}  # fmt: skip


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _set_type(fp: Any, type_: str) -> None:
    if type_ in _SCALARS:
        fp.type = _SCALARS[type_]
    elif type_ in _ENUMS:
        fp.type = _F.TYPE_ENUM
        fp.type_name = f".tensorflow.{type_}"
    else:
        fp.type = _F.TYPE_MESSAGE
        fp.type_name = f".tensorflow.{type_}"


def _add_fields(dp: Any, qualified: str, fields: list[Field], lenient: bool = False) -> None:
    oneofs: list[str] = []
    for name, number, type_, repeated, oneof in fields:
        fp = dp.field.add(name=name, number=number, label=_REP if repeated else _OPT)
        if type_.startswith("map<"):
            key, value = type_[4:-1].split(",")
            entry = dp.nested_type.add(name=_camel(name) + "Entry")
            # Lenient: the entries as plain messages (the same bytes on the wire), since a
            # map cannot hold a key that is not UTF-8.
            entry.options.map_entry = not lenient
            _set_type(entry.field.add(name="key", number=1, label=_OPT), key)
            _set_type(entry.field.add(name="value", number=2, label=_OPT), value)
            fp.label = _REP
            fp.type = _F.TYPE_MESSAGE
            fp.type_name = f".tensorflow.{qualified}.{entry.name}"
            continue
        _set_type(fp, type_)
        if oneof:
            if oneof not in oneofs:
                oneofs.append(oneof)
                dp.oneof_decl.add(name=oneof)
            fp.oneof_index = oneofs.index(oneof)


def _file(lenient: bool = False) -> descriptor_pb2.FileDescriptorProto:
    """The messages as proto3 (what TensorFlow writes), or ``lenient``: the same messages
    with proto3's field semantics but no UTF-8 check, so that a string field holding other
    bytes parses (Python then hands back ``bytes`` for it)."""
    fdp = descriptor_pb2.FileDescriptorProto(
        name="onnx_explorer/tensorflow_graph_subset.proto", package="tensorflow", syntax="proto3"
    )
    if lenient:
        fdp.syntax, fdp.edition = "editions", descriptor_pb2.EDITION_2023
        features = fdp.options.features
        features.field_presence = descriptor_pb2.FeatureSet.IMPLICIT
        features.utf8_validation = descriptor_pb2.FeatureSet.NONE
    data_type = fdp.enum_type.add(name="DataType")
    for number, name in enumerate(_DATA_TYPES):
        data_type.value.add(name=f"DT_{name}", number=number)
    for number, name in enumerate(_DATA_TYPES):
        if number:
            data_type.value.add(name=f"DT_{name}_REF", number=number + REF_OFFSET)
    full_type = fdp.enum_type.add(name="FullTypeId")
    for name, number in _FULL_TYPE_IDS.items():
        full_type.value.add(name=name, number=number)
    protos: dict[str, Any] = {}
    for qualified in _MESSAGES:  # parents come before their nested messages
        parent, _, short = qualified.rpartition(".")
        container = protos[parent].nested_type if parent else fdp.message_type
        protos[qualified] = container.add(name=short)
    for qualified, fields in _MESSAGES.items():
        _add_fields(protos[qualified], qualified, fields, lenient)
    return fdp


POOL = descriptor_pool.DescriptorPool()
FILE = POOL.Add(_file())


def _cls(name: str) -> Any:
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"tensorflow.{name}"))


GraphDef: Any = _cls("GraphDef")
#: GraphDef without the UTF-8 check on string fields (see :func:`_file`), in a pool of its own.
_LENIENT_POOL = descriptor_pool.DescriptorPool()
_LENIENT_POOL.Add(_file(lenient=True))
LenientGraphDef: Any = message_factory.GetMessageClass(
    _LENIENT_POOL.FindMessageTypeByName("tensorflow.GraphDef")
)
NodeDef: Any = _cls("NodeDef")
AttrValue: Any = _cls("AttrValue")
NameAttrList: Any = _cls("NameAttrList")
TensorProto: Any = _cls("TensorProto")
TensorShapeProto: Any = _cls("TensorShapeProto")
ResourceHandleProto: Any = _cls("ResourceHandleProto")
FunctionDefLibrary: Any = _cls("FunctionDefLibrary")
FunctionDef: Any = _cls("FunctionDef")
OpDef: Any = _cls("OpDef")
VersionDef: Any = _cls("VersionDef")
SavedModel: Any = _cls("SavedModel")
MetaGraphDef: Any = _cls("MetaGraphDef")
SignatureDef: Any = _cls("SignatureDef")
TensorInfo: Any = _cls("TensorInfo")
SavedObjectGraph: Any = _cls("SavedObjectGraph")
BundleHeaderProto: Any = _cls("BundleHeaderProto")
BundleEntryProto: Any = _cls("BundleEntryProto")
DataType = EnumTypeWrapper(POOL.FindEnumTypeByName("tensorflow.DataType"))

#: Field numbers of every message defined here, for checking against TensorFlow's protos.
FIELD_NUMBERS: dict[str, dict[str, int]] = {
    f"tensorflow.{qualified}": {f[0]: f[1] for f in fields}
    for qualified, fields in _MESSAGES.items()
}

__all__ = [
    "FIELD_NUMBERS",
    "POOL",
    "AttrValue",
    "BundleEntryProto",
    "BundleHeaderProto",
    "DataType",
    "FunctionDef",
    "FunctionDefLibrary",
    "GraphDef",
    "LenientGraphDef",
    "MetaGraphDef",
    "NameAttrList",
    "NodeDef",
    "OpDef",
    "ResourceHandleProto",
    "SavedModel",
    "SavedObjectGraph",
    "SignatureDef",
    "TensorInfo",
    "TensorProto",
    "TensorShapeProto",
    "VersionDef",
]
