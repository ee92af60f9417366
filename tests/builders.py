"""Small models built in code for the tests (no downloads, no PyTorch)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp(with_names: bool = True) -> onnx.ModelProto:
    """x[batch,4] → MatMul(W1) → Add(b1) → Relu → MatMul(W2): two layers, scoped names."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "/layer1/W")
    b1 = numpy_helper.from_array(np.arange(8, dtype=np.float32), "/layer1/b")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 3)).astype(np.float32), "/layer2/W")

    def name(n: str) -> str:
        return n if with_names else ""

    nodes = [
        helper.make_node("MatMul", ["x", "/layer1/W"], ["h0"], name=name("/layer1/MatMul")),
        helper.make_node("Add", ["h0", "/layer1/b"], ["h1"], name=name("/layer1/Add")),
        helper.make_node("Relu", ["h1"], ["h2"], name=name("/layer1/Relu")),
        helper.make_node("MatMul", ["h2", "/layer2/W"], ["y"], name=name("/layer2/MatMul")),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [w1, b1, w2],
        value_info=[helper.make_tensor_value_info("h1", TensorProto.FLOAT, ["batch", 8])],
    )
    model = helper.make_model(
        graph,
        producer_name="tests",
        producer_version="1.0",
        opset_imports=[helper.make_opsetid("", 17)],
        doc_string="a two-layer perceptron",
    )
    helper.set_model_props(model, {"author": "tests", "license": "none"})
    return model


def scoped_chain(layers: int, per_layer: int = 60) -> onnx.ModelProto:
    """A chain of Relu nodes named like an exporter's ``/enc/layer.<i>/Relu_<j>``."""
    nodes, prev = [], "x"
    for i in range(layers * per_layer):
        layer, j = divmod(i, per_layer)
        name = f"/enc/layer.{layer}/Relu_{j}"
        nodes.append(helper.make_node("Relu", [prev], [f"t{i}"], name=name))
        prev = f"t{i}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1])],
    )  # fmt: skip
    return helper.make_model(graph)


def nested_if(depth: int) -> onnx.ModelProto:
    """If bodies nested ``depth`` deep, each branch holding a Constant weight."""

    def body(level: int, branch: str) -> onnx.GraphProto:
        value = numpy_helper.from_array(np.full((2, 2), level, dtype=np.float32), "")
        const = helper.make_node(
            "Constant", [], [f"c{level}{branch}"], value=value, name=f"/level{level}/{branch}/Const"
        )
        nodes = [const]
        out = f"c{level}{branch}"
        if level < depth and branch == "then":
            inner = helper.make_node(
                "If",
                ["cond"],
                [f"r{level}"],
                name=f"/level{level}/If",
                then_branch=body(level + 1, "then"),
                else_branch=body(level + 1, "else"),
            )
            add = helper.make_node(
                "Add", [out, f"r{level}"], [f"o{level}{branch}"], name=f"/level{level}/Add"
            )
            nodes += [inner, add]
            out = f"o{level}{branch}"
        return helper.make_graph(
            nodes,
            f"body{level}{branch}",
            [],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, [2, 2])],
        )

    top = helper.make_node(
        "If", ["cond"], ["y"], name="/If", then_branch=body(1, "then"), else_branch=body(1, "else")
    )
    graph = helper.make_graph(
        [top],
        "nested",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def with_external_data(
    directory: Path, name: str = "model.onnx", location: str = "weights.bin", checksum: bool = True
) -> tuple[Path, dict[str, np.ndarray]]:
    """The MLP with its initializers in one external file; returns the path and the arrays."""
    model = mlp()
    arrays: dict[str, np.ndarray] = {}
    offset = 0
    blob = bytearray()
    for tensor in model.graph.initializer:
        arr = numpy_helper.to_array(tensor)
        arrays[tensor.name] = arr
        data = arr.tobytes()
        pad = (-offset) % 64
        blob += b"\0" * pad
        offset += pad
        tensor.ClearField("raw_data")
        tensor.ClearField("float_data")
        tensor.data_location = TensorProto.EXTERNAL
        del tensor.external_data[:]
        for key, value in (
            ("location", location),
            ("offset", str(offset)),
            ("length", str(len(data))),
        ):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        blob += data
        offset += len(data)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / location).write_bytes(bytes(blob))
    if checksum:
        import hashlib

        digest = hashlib.sha1(bytes(blob)).hexdigest()
        for tensor in model.graph.initializer:
            entry = tensor.external_data.add()
            entry.key, entry.value = "checksum", digest
    path = directory / name
    onnx.save(model, path)
    return path, arrays


def set_external(tensor: onnx.TensorProto, **entries: str) -> None:
    """Mark a tensor as external with exactly these key/value entries."""
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value


HOSTILE_STRINGS = [
    "<script>alert('x')</script>",
    '<img src=x onerror="alert(1)">',
    "\"quoted\" & 'single' </div></td>",
    "<b>bold</b>\\N\\G\\",
    "javascript:alert(1)",
]


def hostile() -> onnx.ModelProto:
    """A model whose every string is an attempt at markup injection."""
    s = HOSTILE_STRINGS
    weight = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), s[0])
    labels = helper.make_tensor(s[1], TensorProto.STRING, [2], [s[0].encode(), s[1].encode()])
    nodes = [
        helper.make_node("MatMul", [s[2], s[0]], [s[3]], name=s[1], doc_string=s[0]),
        helper.make_node("Identity", [s[3]], [s[4]], name=s[0], note=s[1], domain=""),
        helper.make_node("Constant", [], ["labels_out"], name=s[3], value=labels),
    ]
    graph = helper.make_graph(
        nodes,
        s[1],
        [helper.make_tensor_value_info(s[2], TensorProto.FLOAT, [s[0], 2])],
        [
            helper.make_tensor_value_info(s[4], TensorProto.FLOAT, [s[1], 3]),
            helper.make_tensor_value_info("labels_out", TensorProto.STRING, [2]),
        ],
        [weight],
        doc_string=s[1],
    )
    model = helper.make_model(
        graph,
        producer_name=s[0],
        producer_version=s[1],
        doc_string=s[2],
        domain=s[3],
        opset_imports=[helper.make_opsetid("", 17)],
    )
    helper.set_model_props(model, {s[0]: s[1], "license": s[4]})
    return model


def embedding_matmul_conv(with_names: bool = True) -> onnx.ModelProto:
    """ids[1,4] → two embeddings (Gather of E, E2) → one through Add(P) and MatMul(W), the
    other straight into MatMul(W2) → Add → Relu → Unsqueeze → Conv(C, CB) → y[1,8,4,16].

    What onnxruntime's ``quantize_dynamic`` makes of it covers its dynamic-int8 patterns:
    ``Gather(E_quantized) → DequantizeLinear`` (E feeds an op it does not quantize),
    ``Gather(E2_quantized) → MatMulInteger`` (E2's scale is A's factor of the scales Mul),
    ``MatMulInteger(·, W_quantized)`` and ``ConvInteger(·, C_quantized)`` then a bias Add.
    """
    rng = np.random.default_rng(3)
    weights = {
        "E": rng.standard_normal((50, 16)),
        "P": rng.standard_normal((1, 4, 16)),
        "W": rng.standard_normal((16, 16)) * 0.2,
        "E2": rng.standard_normal((50, 16)),
        "W2": rng.standard_normal((16, 16)) * 0.2,
        "C": rng.standard_normal((8, 1, 3, 3)) * 0.3,
        "CB": rng.standard_normal(8),
    }

    def name(n: str) -> str:
        return n if with_names else ""

    nodes = [
        helper.make_node("Gather", ["E", "ids"], ["tok"], name=name("embed")),
        helper.make_node("Add", ["tok", "P"], ["s"], name=name("add_position")),
        helper.make_node("MatMul", ["s", "W"], ["h"], name=name("proj")),
        helper.make_node("Gather", ["E2", "ids"], ["tok2"], name=name("embed2")),
        helper.make_node("MatMul", ["tok2", "W2"], ["h2"], name=name("proj2")),
        helper.make_node("Add", ["h", "h2"], ["hs"], name=name("sum")),
        helper.make_node("Relu", ["hs"], ["r"], name=name("relu")),
        helper.make_node("Unsqueeze", ["r", "axes"], ["img"], name=name("unsqueeze")),
        helper.make_node("Conv", ["img", "C", "CB"], ["y"], name=name("conv"), pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "embedding_matmul_conv",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4, 16])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()]
        + [numpy_helper.from_array(np.array([1], np.int64), "axes")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def quantize_dynamic_copy(model: onnx.ModelProto, folder: Path, weight_type: str) -> Path:
    """Save ``model`` in ``folder`` as float.onnx, and its onnxruntime ``quantize_dynamic``
    copy (weight_type "QInt8" or "QUInt8") as quantized.onnx; returns the folder."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    onnx.save(model, folder / "float.onnx")
    quantize_dynamic(
        folder / "float.onnx", folder / "quantized.onnx", weight_type=QuantType[weight_type]
    )
    return folder


# A model with one local function (custom.domain.Square), in ONNX's text syntax.
LOCAL_FUNCTION_MODEL = """
<ir_version: 8, opset_import: ["" : 17, "custom.domain" : 1]>
agraph (float[N] x) => (float[N] y) {
    y = custom.domain.Square(x)
}
<domain: "custom.domain", opset_import: ["" : 17]>
Square (X) => (Y) {
    Y = Mul(X, X)
}
"""
