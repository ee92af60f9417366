"""Decoders built with onnx.helper for the repeated-blocks tests (views, widgets, browser)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 8


def decoder(
    layers: int = 32,
    *,
    odd_layer: int | None = None,
    scaled_layer: int | None = None,
    seed: int = 0,
) -> onnx.ModelProto:
    """A decoder of ``layers`` identical layers named as torch exports them
    (``/model/layers.3/self_attn/q_proj/MatMul``, weights ``model.layers.3.…``).

    ``odd_layer``: that layer's Softmax takes another axis (one attribute differs).
    ``scaled_layer``: that layer's weights are 50× larger (an outlier by value only).
    """
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def weight(name: str, shape: tuple[int, ...], scale: float = 1.0) -> str:
        values = (rng.standard_normal(shape) * 0.02 * scale).astype(np.float32)
        inits.append(numpy_helper.from_array(values, name))
        return name

    def node(op: str, scope: str, inputs: list[str], **attrs: object) -> str:
        name = f"{scope}/{op}_{len(nodes)}"
        out = f"{name}_output_0"
        nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    x = node("Identity", "/model/embed_tokens", ["input"])
    for i in range(layers):
        s, p = f"/model/layers.{i}", f"model.layers.{i}"
        scale = 50.0 if i == scaled_layer else 1.0
        h = node("LayerNormalization", f"{s}/input_layernorm",
                 [x, weight(f"{p}.input_layernorm.weight", (HIDDEN,), scale)], axis=-1)  # fmt: skip
        heads = []
        for proj in ("q", "k", "v"):
            w = weight(f"{p}.self_attn.{proj}_proj.weight", (HIDDEN, HIDDEN), scale)
            heads.append(node("MatMul", f"{s}/self_attn/{proj}_proj", [h, w]))
        t = node("Transpose", f"{s}/self_attn", [heads[1]], perm=[1, 0])
        scores = node("MatMul", f"{s}/self_attn", [heads[0], t])
        probs = node("Softmax", f"{s}/self_attn", [scores], axis=0 if i == odd_layer else -1)
        ctx = node("MatMul", f"{s}/self_attn", [probs, heads[2]])
        o = node("MatMul", f"{s}/self_attn/o_proj",
                 [ctx, weight(f"{p}.self_attn.o_proj.weight", (HIDDEN, HIDDEN), scale)])  # fmt: skip
        x = node("Add", s, [x, o])
        h = node("LayerNormalization", f"{s}/post_attention_layernorm",
                 [x, weight(f"{p}.post_attention_layernorm.weight", (HIDDEN,), scale)], axis=-1)  # fmt: skip
        up = node("MatMul", f"{s}/mlp/up_proj",
                  [h, weight(f"{p}.mlp.up_proj.weight", (HIDDEN, 2 * HIDDEN), scale)])  # fmt: skip
        act = node("Relu", f"{s}/mlp", [up])
        down = node("MatMul", f"{s}/mlp/down_proj",
                    [act, weight(f"{p}.mlp.down_proj.weight", (2 * HIDDEN, HIDDEN), scale)])  # fmt: skip
        x = node("Add", s, [x, down])
    y = node("LayerNormalization", "/model/norm", [x, weight("model.norm.weight", (HIDDEN,))],
             axis=-1)  # fmt: skip
    graph = helper.make_graph(
        nodes, "decoder",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [4, HIDDEN])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [4, HIDDEN])],
        inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
