"""Example models built in code with ``onnx.helper`` (no downloads, no PyTorch).

Realistic small ONNX graphs for the README's quick start, the tutorials, the tests and
the benchmarks (a CNN, a transformer, a DenseNet-like graph that is slow to lay out),
one TF1-style frozen GraphDef (text) whose control edges make naive drawing slow, and
:func:`save_with_external_data` to write a model's weights beside it.
"""

from __future__ import annotations

from pathlib import Path

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
