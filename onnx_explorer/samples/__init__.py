"""Small but realistic example models, built with ``onnx.helper`` (no downloads, no PyTorch).

Used by the README's quick start, the tutorials and the tests::

    from onnx_explorer.samples import tiny_transformer
    onnx_explorer.explore(tiny_transformer())
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _init(
    rng: np.random.Generator,
    name: str,
    shape: tuple[int, ...],
    scale: float = 0.05,
    dtype: type = np.float32,
) -> TensorProto:
    values = rng.standard_normal(shape) * scale
    return numpy_helper.from_array(values.astype(dtype), name)


def tiny_cnn(seed: int = 0) -> onnx.ModelProto:
    """An image classifier: two Conv/Relu/MaxPool stages, global pooling and a Gemm head."""
    rng = np.random.default_rng(seed)
    inits = [
        _init(rng, "conv1.weight", (8, 3, 3, 3), 0.2), _init(rng, "conv1.bias", (8,)),
        _init(rng, "conv2.weight", (16, 8, 3, 3), 0.1), _init(rng, "conv2.bias", (16,)),
        _init(rng, "fc.weight", (10, 16), 0.3), _init(rng, "fc.bias", (10,)),
    ]  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["c1"],
                         name="/features/conv1/Conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="/features/relu1/Relu"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="/features/pool1/MaxPool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.weight", "conv2.bias"], ["c2"],
                         name="/features/conv2/Conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="/features/relu2/Relu"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="/pool/GlobalAveragePool"),
        helper.make_node("Flatten", ["g"], ["f"], name="/pool/Flatten"),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="/classifier/Gemm",
                         transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="/classifier/Softmax"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )  # fmt: skip
    model = helper.make_model(
        graph, producer_name="onnx_explorer.samples", opset_imports=[helper.make_opsetid("", OPSET)]
    )
    model.ir_version = 10  # what current runtimes read; opset 17 needs IR >= 8
    model.doc_string = "A tiny CNN image classifier for tutorials."
    return model


def tiny_transformer(
    layers: int = 2, hidden: int = 64, heads: int = 4, vocab: int = 500, seed: int = 0
) -> onnx.ModelProto:
    """A decoder-style transformer with exporter-like scoped names (``/model/layers.0/...``)."""
    rng = np.random.default_rng(seed)
    head_dim = hidden // heads
    inits: list[TensorProto] = [
        _init(rng, "model.embed_tokens.weight", (vocab, hidden), 0.02),
        numpy_helper.from_array(np.array([0, 0, heads, head_dim], dtype=np.int64), "shape_split"),
        numpy_helper.from_array(np.array([0, 0, hidden], dtype=np.int64), "shape_merge"),
        numpy_helper.from_array(np.array(np.sqrt(head_dim), dtype=np.float32), "attn_scale"),
    ]
    nodes = [
        helper.make_node(
            "Gather",
            ["model.embed_tokens.weight", "input_ids"],
            ["h_0"],
            name="/model/embed_tokens/Gather",
        )
    ]
    h = "h_0"
    for i in range(layers):
        s = f"/model/layers.{i}"
        p = f"model.layers.{i}"

        def lin(
            x: str, name: str, n_in: int, n_out: int, scope: str, out: str, p: str = p, s: str = s
        ) -> list[onnx.NodeProto]:
            w = f"{p}.{scope}.{name}"  # Hugging Face style: model.layers.0.self_attn.q_proj
            inits.extend(
                [
                    _init(rng, f"{w}.weight", (n_in, n_out)),
                    _init(rng, f"{w}.bias", (n_out,), 0.01),
                ]
            )
            return [
                helper.make_node(
                    "MatMul",
                    [x, f"{w}.weight"],
                    [f"{out}_mm"],
                    name=f"{s}/{scope}/{name}/MatMul",
                ),
                helper.make_node(
                    "Add", [f"{out}_mm", f"{w}.bias"], [out], name=f"{s}/{scope}/{name}/Add"
                ),
            ]

        def norm(x: str, name: str, out: str, p: str = p, s: str = s) -> onnx.NodeProto:
            inits.extend(
                [
                    numpy_helper.from_array(np.ones(hidden, np.float32), f"{p}.{name}.weight"),
                    numpy_helper.from_array(np.zeros(hidden, np.float32), f"{p}.{name}.bias"),
                ]
            )
            return helper.make_node(
                "LayerNormalization",
                [x, f"{p}.{name}.weight", f"{p}.{name}.bias"],
                [out],
                name=f"{s}/{name}/LayerNormalization",
                axis=-1,
            )

        a = f"l{i}_"
        nodes.append(norm(h, "input_layernorm", a + "ln1"))
        for proj in ("q", "k", "v"):
            nodes += lin(a + "ln1", f"{proj}_proj", hidden, hidden, "self_attn", a + proj)
            nodes.append(
                helper.make_node(
                    "Reshape",
                    [a + proj, "shape_split"],
                    [a + proj + "_r"],
                    name=f"{s}/self_attn/{proj}_proj/Reshape",
                )
            )
            perm = [0, 2, 3, 1] if proj == "k" else [0, 2, 1, 3]
            nodes.append(
                helper.make_node(
                    "Transpose",
                    [a + proj + "_r"],
                    [a + proj + "_t"],
                    name=f"{s}/self_attn/{proj}_proj/Transpose",
                    perm=perm,
                )
            )
        nodes += [
            helper.make_node(
                "MatMul", [a + "q_t", a + "k_t"], [a + "scores"], name=f"{s}/self_attn/MatMul"
            ),
            helper.make_node(
                "Div", [a + "scores", "attn_scale"], [a + "scaled"], name=f"{s}/self_attn/Div"
            ),
            helper.make_node(
                "Softmax", [a + "scaled"], [a + "probs"], name=f"{s}/self_attn/Softmax", axis=-1
            ),
            helper.make_node(
                "MatMul", [a + "probs", a + "v_t"], [a + "ctx"], name=f"{s}/self_attn/MatMul_1"
            ),
            helper.make_node(
                "Transpose",
                [a + "ctx"],
                [a + "ctx_t"],
                name=f"{s}/self_attn/Transpose",
                perm=[0, 2, 1, 3],
            ),
            helper.make_node(
                "Reshape",
                [a + "ctx_t", "shape_merge"],
                [a + "ctx_m"],
                name=f"{s}/self_attn/Reshape",
            ),
        ]
        nodes += lin(a + "ctx_m", "o_proj", hidden, hidden, "self_attn", a + "attn")
        nodes.append(helper.make_node("Add", [h, a + "attn"], [a + "res1"], name=f"{s}/Add"))
        nodes.append(norm(a + "res1", "post_attention_layernorm", a + "ln2"))
        nodes += lin(a + "ln2", "fc1", hidden, 4 * hidden, "mlp", a + "fc1")
        nodes.append(helper.make_node("Relu", [a + "fc1"], [a + "act"], name=f"{s}/mlp/act/Relu"))
        nodes += lin(a + "act", "fc2", 4 * hidden, hidden, "mlp", a + "fc2")
        nodes.append(
            helper.make_node("Add", [a + "res1", a + "fc2"], [f"h_{i + 1}"], name=f"{s}/Add_1")
        )
        h = f"h_{i + 1}"
    inits.append(_init(rng, "lm_head.weight", (hidden, vocab), 0.02))
    nodes.append(
        helper.make_node("MatMul", [h, "lm_head.weight"], ["logits"], name="/lm_head/MatMul")
    )
    graph = helper.make_graph(
        nodes, "tiny_transformer",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "sequence", vocab])],
        inits,
    )  # fmt: skip
    model = helper.make_model(
        graph, producer_name="onnx_explorer.samples", opset_imports=[helper.make_opsetid("", OPSET)]
    )
    model.ir_version = 10
    model.doc_string = f"A {layers}-layer toy transformer (hidden {hidden}) for tutorials."
    helper.set_model_props(model, {"architecture": "decoder-only", "layers": str(layers)})
    return model


def frozen_tf1_graphdef(blocks: int = 14, batch_norm_ops: int = 3) -> bytes:
    """A TF1-style frozen MobileNet GraphDef (``.pbtxt`` text) that is hard to lay out.

    Every op of every scope sends a control dependency (``^name``) into one ``NoOp``,
    as ``tf.group`` initialisers do: drawn naively, Graphviz needs about a minute for
    its 145 boxes. The explorer hides those edges (bundled, with a note and a toggle).
    """
    lines: list[str] = []

    def node(name: str, op: str, inputs: tuple[str, ...] = (), dtype: bool = True) -> None:
        ins = "".join(f' input: "{i}"' for i in inputs)
        attr = ' attr { key: "T" value { type: DT_FLOAT } }' if dtype else ""
        lines.append(f'node {{ name: "{name}" op: "{op}"{ins}{attr} }}')

    lines.append(
        'node { name: "input" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } '
        'attr { key: "shape" value { shape { dim { size: 1 } dim { size: 224 } '
        "dim { size: 224 } dim { size: 3 } } } } }"
    )
    previous, controls = "input", []
    for b in range(blocks):
        for part in ("depthwise", "pointwise"):
            scope = f"MobilenetV1/MobilenetV1/Conv2d_{b}_{part}"
            lines.append(
                f'node {{ name: "{scope}/weights" op: "Const" attr {{ key: "dtype" value {{ '
                'type: DT_FLOAT } } attr { key: "value" value { tensor { dtype: DT_FLOAT '
                "tensor_shape { dim { size: 3 } dim { size: 3 } dim { size: 8 } dim { size: 8 } "
                "} float_val: 0.1 } } } }"
            )
            node(f"{scope}/Conv2D", "Conv2D", (previous, f"{scope}/weights"))
            last = f"{scope}/Conv2D"
            for k in range(batch_norm_ops):
                name = f"{scope}/BatchNorm/mul_{k}"
                node(name, "Mul", (last, f"{scope}/weights"))
                controls.append(f"^{name}")
                last = name
            node(f"{scope}/Relu6", "Relu6", (last,))
            previous = f"{scope}/Relu6"
    node("init", "NoOp", tuple(controls), dtype=False)
    node("MobilenetV1/Predictions/Softmax", "Softmax", (previous, "^init"))
    return "\n".join(lines).encode()


def dense_blocks(blocks: int = 4, layers: int = 12) -> onnx.ModelProto:
    """A DenseNet-like graph: each layer reads the concatenation of all earlier ones.

    Its clustered layout is very sensitive to Graphviz's ranking mode: here 0.9 s with
    the default ranking and over 100 s with ``newrank=true`` (real DenseNet exports have
    shown the opposite), which is why the explorer races both.
    """
    nodes, previous = [], "x"
    for b in range(blocks):
        features = [previous]
        for k in range(layers):
            s = f"/features/denseblock{b}/denselayer{k}"
            nodes += [
                helper.make_node("Concat", features, [f"{s}/cat"], name=f"{s}/Concat", axis=1),
                helper.make_node("BatchNormalization", [f"{s}/cat", "scale", "bias", "mean", "var"],
                                 [f"{s}/bn"], name=f"{s}/norm1/BatchNormalization"),
                helper.make_node("Relu", [f"{s}/bn"], [f"{s}/r1"], name=f"{s}/relu1/Relu"),
                helper.make_node("Conv", [f"{s}/r1", "w"], [f"{s}/c1"], name=f"{s}/conv1/Conv"),
                helper.make_node("Relu", [f"{s}/c1"], [f"{s}/r2"], name=f"{s}/relu2/Relu"),
                helper.make_node("Conv", [f"{s}/r2", "w"], [f"{s}/out"], name=f"{s}/conv2/Conv"),
            ]  # fmt: skip
            features.append(f"{s}/out")
        t = f"/features/transition{b}"
        nodes.append(helper.make_node("Concat", features, [f"{t}/cat"], name=f"{t}/Concat", axis=1))
        nodes.append(helper.make_node("Conv", [f"{t}/cat", "w"], [f"{t}/out"], name=f"{t}/Conv"))
        previous = f"{t}/out"
    inits = [helper.make_tensor(n, TensorProto.FLOAT, [1], [1.0])
             for n in ("scale", "bias", "mean", "var", "w")]  # fmt: skip
    graph = helper.make_graph(
        nodes, "dense_blocks",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, None)], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def save_with_external_data(
    model: onnx.ModelProto, path: str | Path, location: str | None = None
) -> Path:
    """Save ``model`` with every initializer of 1 KB or more in one external data file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    location = location or path.name + ".data"
    data_file = path.parent / location
    if data_file.exists():
        data_file.unlink()  # onnx appends to an existing data file
    onnx.save_model(
        model,
        path,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=location,
        size_threshold=1024,
    )
    return path


# -- TensorFlow SavedModels, written without TensorFlow ---------------------------------
# The protobuf wire format is written by hand here (samples is a leaf: it cannot use the
# readers' message classes), which also keeps the writer independent of the reader.
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
