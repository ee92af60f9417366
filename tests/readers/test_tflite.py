"""The TFLite reader against independent references: the ``tflite`` schema package's own
accessors (``Buffer.DataAsNumpy()``, ``QuantizationParameters.ScaleAsNumpy()``...), LiteRT's
interpreter when installed, hand-computed MACs; and hostile variants of real and built files."""

from __future__ import annotations

import random
import struct
import time
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np
import pytest
import tflite
from locations import CORPUS

from onnx_explorer.errors import ModelFormatError, TensorDataError
from onnx_explorer.metrics import metrics
from onnx_explorer.model import Model
from onnx_explorer.readers.tflite import (
    QuantizedTensor,
    looks_like_tflite,
    read_tflite_bytes,
    read_tflite_file,
)
from onnx_explorer.weights import find_dequantization

JARVIS = CORPUS / "other_formats" / "hey_jarvis.tflite"
OPNAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
TYPES = {v: k.lower() for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}


def _reference(data: bytes) -> Any:
    return tflite.Model.GetRootAs(data, 0)


def _unique(names: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for n in names:
        k, name = 0, n
        while name in seen:
            k += 1
            name = f"{n}#{k}"
        seen.add(name)
        out.append(name)
    return out


def _subgraph_graphs(model: Model) -> list[Any]:
    return [model.graph, *(f.graph for f in model.functions)]


@pytest.fixture(scope="module")
def jarvis() -> Model:
    return read_tflite_file(JARVIS)


# -- the real model against the tflite package's accessors ---------------------------------
def test_every_tensor_matches_the_schema_accessors(jarvis: Model) -> None:
    data = JARVIS.read_bytes()
    ref = _reference(data)
    graphs = _subgraph_graphs(jarvis)
    assert len(graphs) == ref.SubgraphsLength() == 2
    checked = 0
    for k, graph in enumerate(graphs):
        sub = ref.Subgraphs(k)
        names = _unique([sub.Tensors(j).Name().decode() for j in range(sub.TensorsLength())])
        for j, name in enumerate(names):
            t = sub.Tensors(j)
            shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
            data_ref = ref.Buffers(t.Buffer()).DataAsNumpy()
            q = t.Quantization()
            if isinstance(data_ref, np.ndarray) and data_ref.size:
                tensor = graph.initializers[name]
                assert tensor.dtype_name == TYPES[t.Type()]
                assert tuple(tensor.shape) == shape
                assert tensor.numpy().tobytes() == data_ref.tobytes()
                loc = tensor.location
                assert loc.offset is not None and data[loc.offset : loc.offset + loc.length] == (
                    data_ref.tobytes()
                )
                if q is not None and q.ScaleLength():
                    assert isinstance(tensor, QuantizedTensor)
                    np.testing.assert_array_equal(tensor.quantization.scale, q.ScaleAsNumpy())
                    np.testing.assert_array_equal(
                        tensor.quantization.zero_point, q.ZeroPointAsNumpy()
                    )
                    assert tensor.quantization.axis == q.QuantizedDimension()
                checked += 1
            else:
                info = graph.value_info[name]
                assert info.shape == shape
                if t.Type() == tflite.TensorType.RESOURCE:
                    assert info.dtype is None and info.type == "resource"
                else:
                    assert info.dtype == TYPES[t.Type()]
                if q is not None and q.ScaleLength() == 1:
                    assert f"scale {float(q.ScaleAsNumpy()[0]):.6g}" in info.doc_string
                    assert f"zero point {int(q.ZeroPointAsNumpy()[0])}" in info.doc_string
    assert checked == 31 + 6


def test_operators_and_their_counts_match(jarvis: Model) -> None:
    ref = _reference(JARVIS.read_bytes())
    for k, graph in enumerate(_subgraph_graphs(jarvis)):
        sub = ref.Subgraphs(k)
        expected = []
        for j in range(sub.OperatorsLength()):
            op = sub.Operators(j)
            code = ref.OperatorCodes(op.OpcodeIndex())
            expected.append(OPNAMES[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())])
        assert [n.op_type for n in graph.nodes] == expected
        assert all(not n.has_file_name and n.domain == "" for n in graph.nodes)
        names = _unique([sub.Tensors(j).Name().decode() for j in range(sub.TensorsLength())])
        for j, node in enumerate(graph.nodes):
            op = sub.Operators(j)
            ins = (
                [names[i] if i >= 0 else "" for i in op.InputsAsNumpy()]
                if op.InputsLength()
                else []
            )
            assert list(node.inputs) == ins
    assert jarvis.graph.op_counts()["CONV_2D"] == 5
    assert jarvis.graph.op_counts()["DEPTHWISE_CONV_2D"] == 4


def test_options_and_subgraph_references(jarvis: Model) -> None:
    conv = next(n for n in jarvis.graph.nodes if n.op_type == "CONV_2D")
    attrs = {k: a.value for k, a in conv.attributes.items()}
    assert attrs["padding"] == "VALID"
    assert attrs["fused_activation_function"] == "RELU"
    assert attrs["stride_h"] == 3 and attrs["stride_w"] == 1
    call = jarvis.graph.nodes[0]
    assert call.op_type == "CALL_ONCE"
    ref = call.attributes["init_subgraph_index"]
    assert ref.kind == "FUNC" and ref.value.name == "NoOp" and ref.value.index == 1
    assert jarvis.function("", "NoOp") is not None
    assert jarvis.functions[0].graph.path == "function::NoOp"
    assert "input 1 quantization" in conv.metadata_props
    assert conv.metadata_props["input 1 quantization"].startswith(
        "int8 per-axis (axis 0): 30 scales"
    )


def test_metadata_and_signatures(jarvis: Model) -> None:
    props = jarvis.metadata_props
    assert props["min_runtime_version"] == "2.6.0"
    assert props["CONVERSION_METADATA"].endswith("bytes")
    assert props["description"] == "MLIR Converted."
    assert "input_audio=serving_default_input_audio:0" in props["signature serving_default"]
    assert jarvis.format == "tflite"


def test_macs_equal_a_hand_computation(jarvis: Model) -> None:
    """MACs of CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED from the shapes the tflite
    package reads: output elements × kernel (OHWI: H·W·I; 1HWO: H·W; FC: K) + bias."""
    ref = _reference(JARVIS.read_bytes())
    sub = ref.Subgraphs(0)
    expected = {}
    for j in range(sub.OperatorsLength()):
        op = sub.Operators(j)
        code = ref.OperatorCodes(op.OpcodeIndex())
        name = OPNAMES[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())]
        if name not in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            continue
        shape = [list(sub.Tensors(int(i)).ShapeAsNumpy()) for i in op.InputsAsNumpy()]
        out = int(np.prod(sub.Tensors(int(op.OutputsAsNumpy()[0])).ShapeAsNumpy()))
        w = shape[1] if len(shape) > 1 else None
        if name == "CONV_2D":
            expected[j] = out * w[1] * w[2] * w[3] + out
        elif name == "DEPTHWISE_CONV_2D":
            expected[j] = out * w[1] * w[2] + out
        elif name == "FULLY_CONNECTED":
            expected[j] = out * w[1] + out
    assert len(expected) == 10
    rows = metrics(jarvis).rows
    for j, macs in expected.items():
        assert rows[j]["macs"] == macs, rows[j]
    assert rows[next(iter(expected))]["macs"] == 30 * 5 * 1 * 40 + 30  # the first conv


def test_dequantized_statistics_use_the_stored_parameters(jarvis: Model) -> None:
    ref = _reference(JARVIS.read_bytes())
    sub = ref.Subgraphs(0)
    t = next(sub.Tensors(j) for j in range(sub.TensorsLength())
             if sub.Tensors(j).Name() == b"model/depthwise_conv2d_3/depthwise")  # fmt: skip
    q = t.Quantization()
    raw = ref.Buffers(t.Buffer()).DataAsNumpy().view(np.int8).reshape(t.ShapeAsNumpy())
    axis = q.QuantizedDimension()
    assert axis == 3
    real = (raw.astype(np.float32) - q.ZeroPointAsNumpy().astype(np.float32)) * q.ScaleAsNumpy()
    rows = {
        r["name"]: r for r in jarvis.weights_report(dequantize=True, as_list=True, progress=False)
    }
    row = rows["model/depthwise_conv2d_3/depthwise"]
    assert "per-axis (axis 3, 60 scales)" in row["quantization"]
    assert row["min"] == pytest.approx(float(real.min()), rel=1e-6)
    assert row["max"] == pytest.approx(float(real.max()), rel=1e-6)
    assert row["mean"] == pytest.approx(float(real.astype(np.float64).mean()), rel=1e-5)
    dq = find_dequantization(jarvis.graph, "model/depthwise_conv2d_3/depthwise")
    assert dq is not None
    np.testing.assert_allclose(dq.dequantize(raw), real, rtol=1e-6)
    # per-tensor: the FC weight
    row = rows["model/dense/MatMul"]
    assert row["quantization"].startswith("per-tensor (scale 0.00311061)")


def test_the_model_draws(jarvis: Model) -> None:
    dot = jarvis.graph.to_dot()
    assert dot.strip() and "CONV_2D" in dot
    assert jarvis.functions[0].graph.to_dot().strip()


def test_litert_interpreter_quantization_agrees(jarvis: Model) -> None:
    interpreter = pytest.importorskip("ai_edge_litert.interpreter")
    details = interpreter.Interpreter(model_path=str(JARVIS)).get_tensor_details()
    ref = _reference(JARVIS.read_bytes())
    sub = ref.Subgraphs(0)
    names = _unique([sub.Tensors(j).Name().decode() for j in range(sub.TensorsLength())])
    compared = 0
    for d in details:
        if d.get("subgraph_index", 0) != 0 or d["index"] >= len(names):
            continue
        name = names[d["index"]]
        assert name.startswith(d["name"]) or d["name"] == name
        q = d["quantization_parameters"]
        tensor = jarvis.graph.initializers.get(name)
        if tensor is None:
            info = jarvis.graph.value_info[name]
            assert tuple(d["shape"]) == info.shape
            if q["scales"].size == 1:
                assert f"scale {float(q['scales'][0]):.6g}" in info.doc_string
            continue
        assert tuple(d["shape"]) == tuple(tensor.shape)
        assert np.dtype(d["dtype"]) == tensor.dtype
        if q["scales"].size:
            assert isinstance(tensor, QuantizedTensor)
            np.testing.assert_array_equal(tensor.quantization.scale, q["scales"])
            np.testing.assert_array_equal(tensor.quantization.zero_point, q["zero_points"])
            assert tensor.quantization.axis == q["quantized_dimension"]
            compared += 1
    assert compared >= 20


# -- small files built with the flatbuffers builder + tflite schema ------------------------
def _vector(builder: flatbuffers.Builder, start: Any, values: list[Any], prepend: str) -> int:
    start(builder, len(values))
    for v in reversed(values):
        getattr(builder, prepend)(v)
    return builder.EndVector()


def _finish_model(
    b: flatbuffers.Builder,
    tensors: list[int],
    op: int,
    io: tuple[list[int], list[int]],
    builtin: int,
    buffers: list[int],
    name: str | None = None,
    description: str | None = None,
) -> bytes:
    """The subgraph of one operator, its operator code and the model around them."""
    tensors_vec = _vector(b, tflite.SubGraphStartTensorsVector, tensors, "PrependUOffsetTRelative")
    ops_vec = _vector(b, tflite.SubGraphStartOperatorsVector, [op], "PrependUOffsetTRelative")
    sg_in = _vector(b, tflite.SubGraphStartInputsVector, io[0], "PrependInt32")
    sg_out = _vector(b, tflite.SubGraphStartOutputsVector, io[1], "PrependInt32")
    sg_name = b.CreateString(name) if name is not None else None
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors_vec)
    tflite.SubGraphAddInputs(b, sg_in)
    tflite.SubGraphAddOutputs(b, sg_out)
    tflite.SubGraphAddOperators(b, ops_vec)
    if sg_name is not None:
        tflite.SubGraphAddName(b, sg_name)
    subgraph = tflite.SubGraphEnd(b)
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(builtin, 127))  # 127: look further
    tflite.OperatorCodeAddBuiltinCode(b, builtin)
    tflite.OperatorCodeAddVersion(b, 1)
    code = tflite.OperatorCodeEnd(b)
    codes_vec = _vector(b, tflite.ModelStartOperatorCodesVector, [code], "PrependUOffsetTRelative")
    sgs_vec = _vector(b, tflite.ModelStartSubgraphsVector, [subgraph], "PrependUOffsetTRelative")
    bufs_vec = _vector(b, tflite.ModelStartBuffersVector, buffers, "PrependUOffsetTRelative")
    desc = b.CreateString(description) if description is not None else None
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, sgs_vec)
    if desc is not None:
        tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, bufs_vec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def build_conv_model(*, big_offset: int | None = None) -> bytes:
    """input float32 [1,4,4,2] → CONV_2D (W int8 [3,2,2,2] per-axis, bias int32 [3]) →
    [1,3,3,3]; the weight's name repeated on the output; optional 4th input -1."""
    b = flatbuffers.Builder(1024)
    weights = np.arange(24, dtype=np.int8) - 12
    bias = np.array([100, -200, 300], np.int32)
    datas = [None, None, weights.tobytes(), bias.tobytes(), None]
    buffers = []
    for i, raw in enumerate(datas):
        data = b.CreateByteVector(raw) if raw is not None else None
        tflite.BufferStart(b)
        if data is not None and not (big_offset is not None and i == 2):
            tflite.BufferAddData(b, data)
        if big_offset is not None and i == 2:
            tflite.BufferAddOffset(b, big_offset)
            tflite.BufferAddSize(b, 24)
        buffers.append(tflite.BufferEnd(b))
    specs = [  # name, type, shape, buffer, (scales, zero points, axis)
        ("input", tflite.TensorType.FLOAT32, [1, 4, 4, 2], 1, None),
        ("conv/weights", tflite.TensorType.INT8, [3, 2, 2, 2], 2, ([0.5, 0.25, 0.125], [0, 0, 0], 0)),
        ("conv/bias", tflite.TensorType.INT32, [3], 3, ([0.01, 0.02, 0.03], [0, 0, 0], 0)),
        ("conv/weights", tflite.TensorType.FLOAT32, [1, 3, 3, 3], 4, None),
    ]  # fmt: skip
    tensors = []
    for name, type_code, shape, buffer, quant in specs:
        name_off = b.CreateString(name)
        shape_off = _vector(b, tflite.TensorStartShapeVector, shape, "PrependInt32")
        q_off = None
        if quant is not None:
            scales = _vector(
                b, tflite.QuantizationParametersStartScaleVector, quant[0], "PrependFloat32"
            )
            zps = _vector(
                b, tflite.QuantizationParametersStartZeroPointVector, quant[1], "PrependInt64"
            )
            tflite.QuantizationParametersStart(b)
            tflite.QuantizationParametersAddScale(b, scales)
            tflite.QuantizationParametersAddZeroPoint(b, zps)
            tflite.QuantizationParametersAddQuantizedDimension(b, quant[2])
            q_off = tflite.QuantizationParametersEnd(b)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape_off)
        tflite.TensorAddType(b, type_code)
        tflite.TensorAddBuffer(b, buffer)
        tflite.TensorAddName(b, name_off)
        if q_off is not None:
            tflite.TensorAddQuantization(b, q_off)
        tensors.append(tflite.TensorEnd(b))
    tflite.Conv2DOptionsStart(b)
    tflite.Conv2DOptionsAddPadding(b, tflite.Padding.VALID)
    tflite.Conv2DOptionsAddStrideW(b, 1)
    tflite.Conv2DOptionsAddStrideH(b, 1)
    tflite.Conv2DOptionsAddFusedActivationFunction(b, tflite.ActivationFunctionType.RELU6)
    options = tflite.Conv2DOptionsEnd(b)
    op_in = _vector(b, tflite.OperatorStartInputsVector, [0, 1, 2, -1], "PrependInt32")
    op_out = _vector(b, tflite.OperatorStartOutputsVector, [3], "PrependInt32")
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, 0)
    tflite.OperatorAddInputs(b, op_in)
    tflite.OperatorAddOutputs(b, op_out)
    tflite.OperatorAddBuiltinOptionsType(b, tflite.BuiltinOptions.Conv2DOptions)
    tflite.OperatorAddBuiltinOptions(b, options)
    op = tflite.OperatorEnd(b)
    return _finish_model(
        b, tensors, op, ([0], [3]), tflite.BuiltinOperator.CONV_2D, buffers,
        name="main", description="built in a test",
    )  # fmt: skip


def test_a_built_model() -> None:
    data = build_conv_model()
    assert looks_like_tflite(data[:8])
    model = read_tflite_bytes(data)
    g = model.graph
    assert [n.op_type for n in g.nodes] == ["CONV_2D"]
    node = g.nodes[0]
    assert node.inputs == ("input", "conv/weights", "conv/bias", "")
    assert node.outputs == ("conv/weights#1",)  # a repeated tensor name made unique
    assert node.attributes["padding"].value == "VALID"
    assert node.attributes["fused_activation_function"].value == "RELU6"
    w = g.initializers["conv/weights"]
    np.testing.assert_array_equal(w.numpy().reshape(-1), np.arange(24) - 12)
    dq = find_dequantization(g, "conv/weights")
    assert dq is not None and dq.axis == 0
    np.testing.assert_allclose(
        dq.dequantize(w.numpy()),
        (np.arange(24, dtype=np.float32) - 12).reshape(3, 2, 2, 2)
        * np.array([0.5, 0.25, 0.125], np.float32)[:, None, None, None],
    )
    assert g.value_info["conv/weights#1"].shape == (1, 3, 3, 3)
    assert model.doc_string == "built in a test"
    # MACs: 27 outputs × (2·2·2) + 27 for the bias
    assert metrics(model).rows[0]["macs"] == 27 * 8 + 27


def test_buffer_offset_and_size_fields_are_file_ranges(tmp_path: Path) -> None:
    """Models over 2 GB keep buffers after the flatbuffer, by ``offset``/``size``."""
    head = build_conv_model(big_offset=0)  # placeholder to learn the size
    offset = len(head) + 16
    data = build_conv_model(big_offset=offset)
    payload = (np.arange(24, dtype=np.int8) * -1).tobytes()
    data = data + b"\0" * (offset - len(data)) + payload
    path = tmp_path / "big.tflite"
    path.write_bytes(data)
    model = read_tflite_file(path)
    w = model.graph.initializers["conv/weights"]
    assert w.location.offset == offset and w.location.length == 24
    np.testing.assert_array_equal(w.numpy().reshape(-1), np.arange(24) * -1)
    model.close()


# -- hostile files -------------------------------------------------------------------------
def _refused(data: bytes, seconds: float = 2.0) -> ModelFormatError:
    start = time.perf_counter()
    with pytest.raises(ModelFormatError) as info:
        read_tflite_bytes(data)
    assert time.perf_counter() - start < seconds
    return info.value


def test_bad_identifier_and_short_files() -> None:
    data = JARVIS.read_bytes()
    assert "TFL3" in str(_refused(data[:4] + b"XXXX" + data[8:]))
    _refused(b"")
    _refused(data[:7])


def test_truncated_files_are_refused() -> None:
    data = JARVIS.read_bytes()
    for cut in (12, 64, 1000, len(data) // 2, len(data) - 1000):
        _refused(data[:cut])


def test_buffer_offset_past_the_end() -> None:
    data = build_conv_model(big_offset=1 << 40)
    assert "past the end" in str(_refused(data))


def _subgraph_tensors_length_position(data: bytes) -> int:
    """Where the main subgraph's tensors vector stores its length (found with the
    schema package's table accessors)."""
    sub = _reference(data).Subgraphs(0)
    o = sub._tab.Offset(4)
    return sub._tab.Vector(o) - 4


def test_a_vector_length_of_2_31_is_refused_quickly() -> None:
    data = bytearray(JARVIS.read_bytes())
    at = _subgraph_tensors_length_position(bytes(data))
    struct.pack_into("<I", data, at, 1 << 31)
    assert "entries" in str(_refused(bytes(data)))


def test_overlong_and_looping_offsets() -> None:
    data = bytearray(JARVIS.read_bytes())
    struct.pack_into("<I", data, 0, 0xFFFFFFF0)  # the root table far past the end
    _refused(bytes(data))
    _refused(build_shared_tensor(3000))


def build_shared_tensor(n: int) -> bytes:
    """A subgraph whose ``n`` tensors are all one table with a shape of ``n`` dims: a file
    of 8·n bytes that costs n² element reads to walk, unless the reader's budget stops it."""
    b = flatbuffers.Builder(1024)
    shape = _vector(b, tflite.TensorStartShapeVector, [1] * n, "PrependInt32")
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tensor = tflite.TensorEnd(b)
    tensors = _vector(b, tflite.SubGraphStartTensorsVector, [tensor] * n, "PrependUOffsetTRelative")
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors)
    subgraph = tflite.SubGraphEnd(b)
    sgs = _vector(b, tflite.ModelStartSubgraphsVector, [subgraph], "PrependUOffsetTRelative")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddSubgraphs(b, sgs)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def test_random_corruption_never_escapes_as_another_error() -> None:
    data = JARVIS.read_bytes()
    rng = random.Random(28)
    start = time.perf_counter()
    for _ in range(300):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(8, len(corrupt))
            corrupt[at] = rng.randrange(256)
        try:
            model = read_tflite_bytes(bytes(corrupt))
        except ModelFormatError:
            continue
        model.graph.to_dot()  # a model that opens must draw
    assert time.perf_counter() - start < 120


def test_without_the_schema_package_the_error_says_what_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def blocked(name: str, *args: object, **kwargs: object) -> object:
        if name == "tflite" or name.startswith("tflite."):
            raise ImportError(f"blocked {name}")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", blocked)
    with pytest.raises(ImportError, match=r"pip install 'onnx_explorer\[tflite\]'"):
        read_tflite_file(JARVIS)


# -- sparse tensors: densified as DENSIFY makes them ---------------------------------------
def _encode_sparse(
    dense: np.ndarray,
    formats: list[int],
    order: list[int],
    block_map: list[int],
    block: list[int],
) -> tuple[np.ndarray, list[tuple[int, list[int], list[int]]]]:
    """The stored values and per-level (dense size, segments, indices) of ``dense`` in
    TFLite's format: the dense array reshaped into (dims / blocks, blocks), walked level by
    level in ``order``; a SPARSE_CSR level keeps only the indices under which a value is
    not zero."""
    rank = dense.ndim
    sizes = [d // dict(zip(block_map, block)).get(k, 1) for k, d in enumerate(dense.shape)]
    sizes += block

    def value_at(idx: list[int]) -> Any:
        orig = [0] * rank
        for level in range(rank):
            orig[order[level]] = idx[level]
        for level in range(rank, len(order)):
            b = order[level] - rank
            orig[block_map[b]] = orig[block_map[b]] * block[b] + idx[level]
        return dense[tuple(orig)]

    def subtree_nonzero(idx: list[int], level: int) -> bool:
        if level == len(order):
            return bool(value_at(idx) != 0)
        return any(subtree_nonzero([*idx, i], level + 1) for i in range(sizes[order[level]]))

    levels: list[tuple[int, list[int], list[int]]] = [
        (sizes[order[k]], [0], []) for k in range(len(order))
    ]
    values: list[Any] = []

    def walk(idx: list[int], level: int) -> None:
        if level == len(order):
            values.append(value_at(idx))
            return
        size = sizes[order[level]]
        if formats[level] == tflite.DimensionType.DENSE:
            for i in range(size):
                walk([*idx, i], level + 1)
            return
        kept = [i for i in range(size) if subtree_nonzero([*idx, i], level + 1)]
        _, segments, indices = levels[level]
        indices += kept
        segments.append(len(indices))
        for i in kept:
            walk([*idx, i], level + 1)

    walk([], 0)
    return np.array(values, dense.dtype), levels


def build_densify_model(
    dense: np.ndarray,
    formats: list[int],
    order: list[int],
    block_map: list[int],
    block: list[int],
) -> bytes:
    """A sparse float32 constant → DENSIFY → the graph's output."""
    stored, levels = _encode_sparse(dense, formats, order, block_map, block)
    b = flatbuffers.Builder(1024)
    buffers = []
    for raw in (None, stored.tobytes(), None):
        data = b.CreateByteVector(raw) if raw is not None else None
        tflite.BufferStart(b)
        if data is not None:
            tflite.BufferAddData(b, data)
        buffers.append(tflite.BufferEnd(b))
    metas = []
    for fmt, (size, segments, indices) in zip(formats, levels, strict=True):
        seg_vec = idx_vec = None
        if fmt == tflite.DimensionType.SPARSE_CSR:
            vectors = []
            for values in (segments, indices):  # uint8 and int32 index vectors both occur
                if max(values, default=0) < 256:
                    vec = _vector(b, tflite.Uint8VectorStartValuesVector, values, "PrependUint8")
                    tflite.Uint8VectorStart(b)
                    tflite.Uint8VectorAddValues(b, vec)
                    vectors.append((tflite.SparseIndexVector.Uint8Vector, tflite.Uint8VectorEnd(b)))
                else:
                    vec = _vector(b, tflite.Int32VectorStartValuesVector, values, "PrependInt32")
                    tflite.Int32VectorStart(b)
                    tflite.Int32VectorAddValues(b, vec)
                    vectors.append((tflite.SparseIndexVector.Int32Vector, tflite.Int32VectorEnd(b)))
            seg_vec, idx_vec = vectors
        tflite.DimensionMetadataStart(b)
        tflite.DimensionMetadataAddFormat(b, fmt)
        tflite.DimensionMetadataAddDenseSize(b, size)
        if seg_vec is not None and idx_vec is not None:
            tflite.DimensionMetadataAddArraySegmentsType(b, seg_vec[0])
            tflite.DimensionMetadataAddArraySegments(b, seg_vec[1])
            tflite.DimensionMetadataAddArrayIndicesType(b, idx_vec[0])
            tflite.DimensionMetadataAddArrayIndices(b, idx_vec[1])
        metas.append(tflite.DimensionMetadataEnd(b))
    order_vec = _vector(
        b, tflite.SparsityParametersStartTraversalOrderVector, order, "PrependInt32"
    )
    map_vec = _vector(b, tflite.SparsityParametersStartBlockMapVector, block_map, "PrependInt32")
    meta_vec = _vector(b, tflite.SparsityParametersStartDimMetadataVector, metas,
                       "PrependUOffsetTRelative")  # fmt: skip
    tflite.SparsityParametersStart(b)
    tflite.SparsityParametersAddTraversalOrder(b, order_vec)
    tflite.SparsityParametersAddBlockMap(b, map_vec)
    tflite.SparsityParametersAddDimMetadata(b, meta_vec)
    sparsity = tflite.SparsityParametersEnd(b)
    tensors = []
    for name, buffer, sparse in (("weights", 1, True), ("dense", 2, False)):
        name_off = b.CreateString(name)
        shape_off = _vector(b, tflite.TensorStartShapeVector, list(dense.shape), "PrependInt32")
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape_off)
        tflite.TensorAddType(b, tflite.TensorType.FLOAT32)
        tflite.TensorAddBuffer(b, buffer)
        tflite.TensorAddName(b, name_off)
        if sparse:
            tflite.TensorAddSparsity(b, sparsity)
        tensors.append(tflite.TensorEnd(b))
    op_in = _vector(b, tflite.OperatorStartInputsVector, [0], "PrependInt32")
    op_out = _vector(b, tflite.OperatorStartOutputsVector, [1], "PrependInt32")
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, 0)
    tflite.OperatorAddInputs(b, op_in)
    tflite.OperatorAddOutputs(b, op_out)
    op = tflite.OperatorEnd(b)
    return _finish_model(b, tensors, op, ([], [1]), tflite.BuiltinOperator.DENSIFY, buffers)


def _pruned(
    shape: tuple[int, ...], keep: float, seed: int, block: tuple[int, ...] = ()
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if block:  # whole blocks pruned, as block-sparse weights are
        grid = tuple(d // k for d, k in zip(shape, block, strict=True))
        mask = np.kron(rng.random(grid) < keep, np.ones(block))
    else:
        mask = rng.random(shape) < keep
    return (rng.standard_normal(shape) * mask).astype(np.float32)


DENSE, CSR = tflite.DimensionType.DENSE, tflite.DimensionType.SPARSE_CSR
SPARSE_CASES = {
    # name: dense array, level formats, traversal order, block map, block sizes
    "rows dense, columns CSR": (_pruned((6, 20), 0.3, 0), [DENSE, CSR], [0, 1], [], []),
    "a whole row empty": (
        np.vstack([_pruned((2, 8), 0.5, 1), np.zeros((1, 8), np.float32)]),
        [DENSE, CSR], [0, 1], [], [],
    ),
    "CSR then a dense level": (_pruned((3, 5, 4), 0.4, 2), [DENSE, CSR, DENSE], [0, 1, 2], [], []),
    "columns first": (_pruned((5, 7), 0.3, 3), [DENSE, CSR], [1, 0], [], []),
    "1x4 blocks": (
        _pruned((4, 16), 0.4, 4, (1, 4)), [DENSE, CSR, DENSE], [0, 1, 2], [1], [4],
    ),
    "2x2 blocks": (
        _pruned((4, 6), 0.5, 5, (2, 2)), [DENSE, CSR, DENSE, DENSE], [0, 1, 2, 3], [0, 1], [2, 2],
    ),
    "300 columns (int32 indices)": (_pruned((2, 300), 0.5, 6), [DENSE, CSR], [0, 1], [], []),
}  # fmt: skip


@pytest.mark.parametrize("case", SPARSE_CASES, ids=str)
def test_sparse_tensors_are_densified_as_litert_densifies_them(case: str) -> None:
    dense, formats, order, block_map, block = SPARSE_CASES[case]
    data = build_densify_model(dense, formats, order, block_map, block)
    model = read_tflite_bytes(data)
    weights = model.graph.initializers["weights"]
    assert weights.shape == dense.shape
    ours = weights.numpy()
    np.testing.assert_array_equal(ours, dense)
    stats = weights.stats()
    assert stats.count == dense.size and stats.zeros == pytest.approx(np.mean(dense == 0))
    counted = metrics(model)  # DENSIFY moves a constant's values: no MACs, and known
    assert counted.rows[0]["macs"] == 0 and counted.unknown_ops == {}
    interpreter = pytest.importorskip("ai_edge_litert.interpreter")
    litert = interpreter.Interpreter(
        model_content=data,
        experimental_op_resolver_type=interpreter.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    litert.allocate_tensors()
    litert.invoke()
    np.testing.assert_array_equal(ours, litert.get_tensor(litert.get_output_details()[0]["index"]))


def test_a_sparse_tensor_declaring_more_than_it_can_hold_is_refused() -> None:
    dense = _pruned((6, 20), 0.3, 0)
    data = bytearray(build_densify_model(dense, [DENSE, CSR], [0, 1], [], []))
    model = read_tflite_bytes(bytes(data))
    good = model.graph.initializers["weights"].numpy()
    np.testing.assert_array_equal(good, dense)
    # The dense shape [6, 20] written as [6, 2^30]: a few stored values would become 24 GB.
    data = bytearray(bytes(data).replace(struct.pack("<2i", 6, 20), struct.pack("<2i", 6, 1 << 30)))
    weights = read_tflite_bytes(bytes(data)).graph.initializers["weights"]
    with pytest.raises(TensorDataError, match="dense shape"):
        weights.numpy()


def test_corrupt_sparsity_is_our_error_never_a_wrong_read_or_a_crash() -> None:
    """Random bytes changed in a block-sparse model: opening and densifying either work or
    raise the project's errors (segments running backwards or off the indices, indices
    outside the shape, levels that do not match the stored values)."""
    dense, formats, order, block_map, block = SPARSE_CASES["2x2 blocks"]
    data = build_densify_model(dense, formats, order, block_map, block)
    rng = random.Random(30)
    refused = 0
    for _ in range(400):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            corrupt[rng.randrange(8, len(corrupt))] = rng.randrange(256)
        try:
            weights = read_tflite_bytes(bytes(corrupt)).graph.initializers.get("weights")
            if weights is not None:
                weights.stats()
        except (ModelFormatError, TensorDataError):
            refused += 1
    assert refused > 0


def test_a_real_pruned_model_densifies_as_litert_does() -> None:
    """MediaPipe's sparse face detector: 46 pruned float16 weights, each read by a DENSIFY."""
    path = CORPUS / "other_formats" / "face_detection_full_range_sparse.tflite"
    graph = read_tflite_file(path).graph
    densify_nodes = [n for n in graph.nodes if n.op_type == "DENSIFY"]
    assert len(densify_nodes) == 46
    ours = {n.outputs[0]: graph.initializers[n.inputs[0]].numpy() for n in densify_nodes}
    for values in ours.values():
        assert values.dtype == np.float16 and values.ndim == 4 and (values == 0).any()
    interpreter = pytest.importorskip("ai_edge_litert.interpreter")
    litert = interpreter.Interpreter(
        model_path=str(path),
        experimental_preserve_all_tensors=True,
        experimental_op_resolver_type=interpreter.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    litert.allocate_tensors()
    for detail in litert.get_input_details():
        litert.set_tensor(detail["index"], np.zeros(detail["shape"], detail["dtype"]))
    litert.invoke()
    names = {d["index"]: d["name"] for d in litert.get_tensor_details()}
    compared = 0
    for op in litert._get_ops_details():
        if op["op_name"] == "DENSIFY":
            (src,) = [n for n in densify_nodes if n.inputs[0] == names[op["inputs"][0]]]
            np.testing.assert_array_equal(ours[src.outputs[0]], litert.get_tensor(op["outputs"][0]))
            compared += 1
    assert compared == 46
