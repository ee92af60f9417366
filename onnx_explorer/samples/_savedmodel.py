"""TensorFlow SavedModels written without TensorFlow, for the tests of the SavedModel reader.

:func:`write_dense_saved_model` lays a Keras-style MLP out as ``tf.saved_model.save``
does (``saved_model.pb`` plus a tensor bundle under ``variables/``);
:func:`write_tensor_bundle` writes a bundle alone (with options to corrupt it), whose
index is an :func:`sstable`.

The protobuf wire format, the CRC-32C and the SSTable are written here by hand, small and
slow on purpose. ``samples`` is a leaf of the import layers (it may not import
``readers``), and a writer that shares no code with the reader it tests is the point:
``readers/tensorflow/bundle`` has the fast CRC-32C, and the tests check it against
:func:`crc32c_pure`.
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any

import numpy as np

_TF_TYPES = {
    "float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "int64": 9,
    "bool": 10, "float16": 19,
}  # fmt: skip
_TF_STRING = 7
_TF_RESOURCE = 20


def _pb_varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64: ten-byte two's complement, as protobuf writes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _pb_int(field: int, value: int) -> bytes:
    return _pb_varint(field << 3) + _pb_varint(value)


def _pb_bytes(field: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _pb_varint(field << 3 | 2) + _pb_varint(len(data)) + data


def _pb_map(field: int, items: dict[str, bytes | str]) -> bytes:
    return b"".join(_pb_bytes(field, _pb_bytes(1, k) + _pb_bytes(2, v)) for k, v in items.items())


def _tf_shape(shape: tuple[int, ...]) -> bytes:
    return b"".join(_pb_bytes(2, _pb_int(1, d)) for d in shape)


def crc32c_pure(data: bytes, crc: int = 0) -> int:
    """CRC-32C, byte by byte (fine for small files; the reader has a fast one)."""
    table = _crc_table()
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


@functools.cache
def _crc_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


def crc32c_mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def sstable(
    items: list[tuple[bytes, bytes]], block_size: int = 4096, restart_interval: int = 16
) -> bytes:
    """An SSTable in LevelDB's table format (as TensorFlow's bundle index), uncompressed.

    ``items`` must be sorted by key. Keys are prefix-compressed, with a restart point
    every ``restart_interval`` entries; data blocks close near ``block_size`` bytes; each
    block has its trailer (type 0 + masked CRC-32C); then an empty metaindex block, the
    index block (last key of each data block → its handle) and the 48-byte footer.
    """
    out = bytearray()

    def finish_block(entries: list[tuple[bytes, bytes]]) -> tuple[int, int]:
        body = bytearray()
        restarts: list[int] = []
        previous = b""
        for i, (key, value) in enumerate(entries):
            if i % restart_interval == 0:
                restarts.append(len(body))
                shared = 0
            else:
                shared = 0
                while shared < min(len(key), len(previous)) and key[shared] == previous[shared]:
                    shared += 1
            body += _pb_varint(shared) + _pb_varint(len(key) - shared) + _pb_varint(len(value))
            body += key[shared:] + value
            previous = key
        for r in restarts or [0]:
            body += int(r).to_bytes(4, "little")
        body += len(restarts or [0]).to_bytes(4, "little")
        offset = len(out)
        out.extend(body)
        out.append(0)  # no compression
        out.extend(crc32c_mask(crc32c_pure(bytes(body) + b"\x00")).to_bytes(4, "little"))
        return offset, len(body)

    index: list[tuple[bytes, bytes]] = []
    block: list[tuple[bytes, bytes]] = []
    size = 0
    for key, value in items:
        block.append((key, value))
        size += len(key) + len(value) + 3
        if size >= block_size:
            offset, length = finish_block(block)
            index.append((key, _pb_varint(offset) + _pb_varint(length)))
            block, size = [], 0
    if block:
        offset, length = finish_block(block)
        index.append((block[-1][0], _pb_varint(offset) + _pb_varint(length)))
    meta = finish_block([])
    handle = finish_block(index)
    footer = _pb_varint(meta[0]) + _pb_varint(meta[1]) + _pb_varint(handle[0])
    footer += _pb_varint(handle[1])
    out += footer + bytes(40 - len(footer)) + (0xDB4775248B80FB57).to_bytes(8, "little")
    return bytes(out)


def write_tensor_bundle(
    prefix: str | Path,
    tensors: dict[str, np.ndarray],
    *,
    num_shards: int = 1,
    crc32c: Any = None,
    tamper: Any = None,
) -> Path:
    """Write ``PREFIX.index`` and ``PREFIX.data-NNNNN-of-MMMMM`` as TensorFlow does.

    Tensors go round-robin over ``num_shards`` shards. ``crc32c(data) -> int`` may be a
    faster implementation (default: :func:`crc32c_pure`); ``tamper(key, entry)`` may edit
    an entry's fields (dtype, shape, shard_id, offset, size, crc32c) before it is written,
    to make broken bundles for tests. Returns the index path.
    """
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    checksum = crc32c or crc32c_pure
    shards = [bytearray() for _ in range(num_shards)]
    items: list[tuple[bytes, bytes]] = []
    header = _pb_int(1, num_shards) + _pb_bytes(3, _pb_int(1, 1))  # version.producer 1
    items.append((b"", header))
    for i, key in enumerate(sorted(tensors)):
        array = tensors[key]
        shard = i % num_shards
        if array.dtype == object:
            strings = [bytes(s) for s in array.reshape(-1)]
            lengths = b"".join(_pb_varint(len(s)) for s in strings)
            # TensorFlow's checksums run over each length as a little-endian uint32
            # (uint64 past 4 GiB).
            length_crc = crc32c_pure(
                b"".join(len(s).to_bytes(4 if len(s) < 1 << 32 else 8, "little") for s in strings)
            )
            masked = crc32c_mask(length_crc).to_bytes(4, "little")
            data = lengths + masked + b"".join(strings)
            entry_crc = crc32c_pure(b"".join(strings), crc32c_pure(masked, length_crc))
            code = _TF_STRING
        else:
            data = np.ascontiguousarray(array).tobytes()
            entry_crc = checksum(data)
            code = _TF_TYPES[array.dtype.name]
        entry: dict[str, Any] = {
            "dtype": code, "shape": tuple(array.shape), "shard_id": shard,
            "offset": len(shards[shard]), "size": len(data),
            "crc32c": crc32c_mask(entry_crc),
        }  # fmt: skip
        shards[shard] += data
        if tamper is not None:
            tamper(key, entry)
        encoded = _pb_int(1, entry["dtype"]) + _pb_bytes(2, _tf_shape(entry["shape"]))
        encoded += _pb_int(3, entry["shard_id"]) + _pb_int(4, entry["offset"])
        encoded += _pb_int(5, entry["size"]) + bytes([6 << 3 | 5])
        encoded += int(entry["crc32c"]).to_bytes(4, "little")
        items.append((key.encode(), encoded))
    index = prefix.with_name(prefix.name + ".index")
    index.write_bytes(sstable(items))
    for shard, written in enumerate(shards):
        name = f"{prefix.name}.data-{shard:05d}-of-{num_shards:05d}"
        prefix.with_name(name).write_bytes(bytes(written))
    return index


def _attr(kind: str, value: Any) -> bytes:
    if kind == "type":
        return _pb_int(6, value)
    if kind == "shape":
        return _pb_bytes(7, _tf_shape(value))
    if kind == "s":
        return _pb_bytes(2, value)
    if kind == "types":
        return _pb_bytes(1, b"".join(_pb_int(6, t) for t in value))
    if kind == "func":
        return _pb_bytes(10, _pb_bytes(1, value))
    raise ValueError(kind)


def _node(name: str, op: str, inputs: list[str] = (), **attrs: tuple[str, Any]) -> bytes:  # type: ignore[assignment]
    body = _pb_bytes(1, name) + _pb_bytes(2, op)
    body += b"".join(_pb_bytes(3, i) for i in inputs)
    body += _pb_map(5, {k: _attr(*v) for k, v in sorted(attrs.items())})
    return body


def _dense_names(layer: int) -> str:
    return "dense" if layer == 0 else f"dense_{layer}"


def dense_saved_model_weights(
    widths: tuple[int, ...] = (4, 8, 3), seed: int = 0
) -> dict[str, np.ndarray]:
    """Checkpoint keys → values of :func:`write_dense_saved_model`'s Keras-style MLP."""
    rng = np.random.default_rng(seed)
    weights: dict[str, np.ndarray] = {}
    for i, (a, b) in enumerate(itertools.pairwise(widths)):
        base = f"layer_with_weights-{i}"
        kernel = rng.standard_normal((a, b), dtype=np.float32) * np.float32(0.3)
        weights[f"{base}/kernel/.ATTRIBUTES/VARIABLE_VALUE"] = kernel
        weights[f"{base}/bias/.ATTRIBUTES/VARIABLE_VALUE"] = np.linspace(
            -0.1, 0.1, b, dtype=np.float32
        )
    weights["save_counter/.ATTRIBUTES/VARIABLE_VALUE"] = np.array(1, np.int64)
    weights["_CHECKPOINTABLE_OBJECT_GRAPH"] = np.array([b"(object graph)"], dtype=object).reshape(
        ()
    )
    return weights


def write_dense_saved_model(
    directory: str | Path,
    widths: tuple[int, ...] = (4, 8, 3),
    *,
    seed: int = 0,
    variables: bool = True,
    extra_meta_graph: bool = False,
    crc32c: Any = None,
    tamper: Any = None,
) -> Path:
    """A TF2-style SavedModel of a ReLU MLP (``widths``: input, hidden..., output sizes).

    As ``tf.saved_model.save`` lays it out: ``saved_model.pb`` whose ``serve``
    MetaGraphDef calls the function ``__inference_serving_default_42`` through a
    ``StatefulPartitionedCall``, with its ``serving_default`` signature and an object
    graph linking ``layer_with_weights-N/kernel`` to the ``VarHandleOp`` ``dense_N/kernel``;
    and, unless ``variables=False``, ``variables/variables.index`` + ``.data-00000-of-00001``
    (see :func:`write_tensor_bundle` for ``crc32c`` and ``tamper``). ``extra_meta_graph``
    adds a second MetaGraphDef tagged ``train`` first in the file. Returns the directory.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    layers = len(widths) - 1
    func = "__inference_serving_default_42"
    f32 = _TF_TYPES["float32"]
    # The main graph: input, variable handles, one call.
    nodes = [
        _node(
            "serving_default_x",
            "Placeholder",
            dtype=("type", f32),
            shape=("shape", (-1, widths[0])),
        )
    ]
    handles: list[str] = []
    for i in range(layers):
        for part, shape in (("kernel", (widths[i], widths[i + 1])), ("bias", (widths[i + 1],))):
            name = f"{_dense_names(i)}/{part}"
            handles.append(name)
            nodes.append(
                _node(
                    name,
                    "VarHandleOp",
                    dtype=("type", f32),
                    shape=("shape", shape),
                    shared_name=("s", name),
                )
            )
    nodes.append(
        _node(
            "StatefulPartitionedCall", "StatefulPartitionedCall", ["serving_default_x", *handles],
            f=("func", func), Tin=("types", [f32] + [_TF_RESOURCE] * len(handles)),
            Tout=("types", [f32]),
        )
    )  # fmt: skip
    # The function body: ReadVariableOp → MatMul → BiasAdd (→ Relu) per layer.
    args = [_pb_bytes(2, _pb_bytes(1, "x") + _pb_int(3, f32))]
    body: list[bytes] = []
    current = "x"
    for i in range(layers):
        scope = _dense_names(i)
        k_arg, b_arg = (
            f"{scope}_matmul_readvariableop_resource",
            f"{scope}_biasadd_readvariableop_resource",
        )
        args += [_pb_bytes(2, _pb_bytes(1, a) + _pb_int(3, _TF_RESOURCE)) for a in (k_arg, b_arg)]
        body.append(
            _node(f"{scope}/MatMul/ReadVariableOp", "ReadVariableOp", [k_arg], dtype=("type", f32))
        )
        body.append(
            _node(
                f"{scope}/MatMul",
                "MatMul",
                [current, f"{scope}/MatMul/ReadVariableOp:value:0"],
                T=("type", f32),
            )
        )
        body.append(
            _node(f"{scope}/BiasAdd/ReadVariableOp", "ReadVariableOp", [b_arg], dtype=("type", f32))
        )
        body.append(
            _node(
                f"{scope}/BiasAdd",
                "BiasAdd",
                [f"{scope}/MatMul:product:0", f"{scope}/BiasAdd/ReadVariableOp:value:0"],
                T=("type", f32),
            )
        )
        current = f"{scope}/BiasAdd:output:0"
        if i < layers - 1:
            body.append(_node(f"{scope}/Relu", "Relu", [current], T=("type", f32)))
            current = f"{scope}/Relu:activations:0"
    signature = (
        _pb_bytes(1, func)
        + b"".join(args)
        + _pb_bytes(3, _pb_bytes(1, "output_0") + _pb_int(3, f32))
    )
    function = _pb_bytes(1, signature) + b"".join(_pb_bytes(3, n) for n in body)
    function += _pb_map(4, {"output_0": current})
    graph = b"".join(_pb_bytes(1, n) for n in nodes)
    graph += _pb_bytes(2, _pb_bytes(1, function)) + _pb_bytes(4, _pb_int(1, 1882))
    # The signature and the object graph (root → layer_with_weights-N → kernel/bias).
    x_info = (
        _pb_bytes(1, "serving_default_x:0")
        + _pb_int(2, f32)
        + _pb_bytes(3, _tf_shape((-1, widths[0])))
    )
    y_info = (
        _pb_bytes(1, "StatefulPartitionedCall:0")
        + _pb_int(2, f32)
        + _pb_bytes(3, _tf_shape((-1, widths[-1])))
    )
    sig = _pb_map(1, {"x": x_info}) + _pb_map(2, {"output_0": y_info})
    sig += _pb_bytes(3, "tensorflow/serving/predict")
    objects: list[bytes] = []
    root_children = [(f"layer_with_weights-{i}", 1 + 3 * i) for i in range(layers)]
    root_children.append(("save_counter", 1 + 3 * layers))
    objects.append(
        b"".join(_pb_bytes(1, _pb_int(1, n) + _pb_bytes(2, k)) for k, n in root_children)
        + _pb_bytes(4, _pb_bytes(1, "_generic_user_object"))
    )
    for i in range(layers):
        node = 1 + 3 * i
        children = _pb_bytes(1, _pb_int(1, node + 1) + _pb_bytes(2, "kernel"))
        children += _pb_bytes(1, _pb_int(1, node + 2) + _pb_bytes(2, "bias"))
        objects.append(children + _pb_bytes(4, _pb_bytes(1, "_tf_keras_layer")))
        for part, shape in (("kernel", (widths[i], widths[i + 1])), ("bias", (widths[i + 1],))):
            var = _pb_int(1, f32) + _pb_bytes(2, _tf_shape(shape)) + _pb_int(3, 1)
            objects.append(_pb_bytes(7, var + _pb_bytes(6, f"{_dense_names(i)}/{part}")))
    objects.append(_pb_bytes(7, _pb_int(1, _TF_TYPES["int64"]) + _pb_bytes(6, "save_counter")))
    object_graph = b"".join(_pb_bytes(1, o) for o in objects)
    info = _pb_bytes(4, "serve") + _pb_bytes(5, "2.21.0") + _pb_int(7, 1)
    serve = _pb_bytes(1, info) + _pb_bytes(2, graph) + _pb_map(5, {"serving_default": sig})
    serve += _pb_bytes(7, object_graph)
    saved = _pb_int(1, 1)
    if extra_meta_graph:
        train_graph = _pb_bytes(
            1, _node("step", "VarHandleOp", dtype=("type", 9), shape=("shape", ()))
        )
        saved += _pb_bytes(2, _pb_bytes(1, _pb_bytes(4, "train")) + _pb_bytes(2, train_graph))
    saved += _pb_bytes(2, serve)
    (directory / "saved_model.pb").write_bytes(saved)
    if variables:
        weights = dense_saved_model_weights(widths, seed)
        write_tensor_bundle(
            directory / "variables" / "variables", weights, crc32c=crc32c, tamper=tamper
        )
    return directory
