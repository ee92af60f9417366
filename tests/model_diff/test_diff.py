"""Comparing two models: ``onnx_explorer.diff``, ``compare_models`` and ``onnx-explorer diff``.

Each test builds a pair that differs in one known way and checks the diff finds exactly
that change and nothing else.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from builders import embedding_matmul_conv, quantize_dynamic_copy, with_external_data
from locations import CORPUS
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.model_diff import compare_models
from onnx_explorer.samples import frozen_tf1_graphdef
from onnx_explorer.weights._quant import find_dequantization

W = (np.arange(32, dtype=np.float32).reshape(4, 8) - 16) / 8  # exact in float32 and fp16
W2 = (np.arange(24, dtype=np.float32).reshape(8, 3) - 12) / 16 + 1 / 3  # not exact in fp16
B = np.linspace(-1, 1, 8, dtype=np.float32)


def chain(alpha: float = 0.1, w: np.ndarray = W, w2: np.ndarray = W2) -> onnx.ModelProto:
    """x[2,4] → MatMul(W) → Add(B) → LeakyRelu(alpha) → MatMul(W2) → y[2,3]."""
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "B"], ["h1"], name="add"),
        helper.make_node("LeakyRelu", ["h1"], ["h2"], name="act", alpha=alpha),
        helper.make_node("MatMul", ["h2", "W2"], ["y"], name="mm2"),
    ]
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(B, "B"),
         numpy_helper.from_array(w2, "W2")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def renumbered(model: onnx.ModelProto, prefix: str = "n") -> onnx.ModelProto:
    """The same model with every node and every intermediate value renamed, as another
    export would number them."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    keep = {v.name for v in model.graph.input} | {v.name for v in model.graph.output}
    keep |= {t.name for t in model.graph.initializer}
    values = {}
    for k, node in enumerate(model.graph.node):
        node.name = f"/{prefix}/{node.op_type}_{k + 7}"
        for o, out in enumerate(node.output):
            if out not in keep:
                values[out] = f"/{prefix}/{node.op_type}_{k + 7}_output_{o}"
                node.output[o] = values[out]
    for node in model.graph.node:
        for i, inp in enumerate(node.input):
            node.input[i] = values.get(inp, inp)
    return model


def nothing_but(diff: ox.ModelDiff, **expected: int) -> None:
    """The diff has exactly these many entries per list, every other list empty."""
    lists = ("model_changes", "nodes_added", "nodes_removed", "nodes_renamed", "nodes_changed",
             "tensors_added", "tensors_removed", "tensors_renamed", "tensors_changed")  # fmt: skip
    found = {name: len(getattr(diff, name)) for name in lists}
    assert found == {name: expected.get(name, 0) for name in lists}, repr(diff)


def test_the_same_model_is_equal():
    diff = ox.diff(chain(), chain())
    nothing_but(diff)
    assert diff.equal
    assert set(diff.node_status().values()) == {"unchanged"}


def test_renumbered_names_match_node_for_node():
    diff = ox.diff(chain(), renumbered(chain()))
    nothing_but(diff, nodes_renamed=4)
    assert diff.equal
    assert [(a.name, b.name) for a, b in diff.nodes_renamed] == [
        ("mm1", "/n/MatMul_7"), ("add", "/n/Add_8"), ("act", "/n/LeakyRelu_9"),
        ("mm2", "/n/MatMul_10"),
    ]  # fmt: skip
    assert diff.node_status()["/n/Add_8"] == "renamed"


def test_renumbered_twice_with_names_that_collide_still_match():
    # a's names reappear in b on other nodes: only a name with the same op type matches.
    a, b = renumbered(chain(), "x"), renumbered(chain(), "x")
    for node in b.graph.node:
        node.name = node.name.replace("MatMul", "Tmp")
    diff = ox.diff(a, b)
    nothing_but(diff, nodes_renamed=2)


def test_one_attribute_changed():
    diff = ox.diff(chain(alpha=0.1), renumbered(chain(alpha=0.2)))
    nothing_but(diff, nodes_changed=1, nodes_renamed=3)
    (change,) = diff.nodes_changed
    assert (change.a.name, change.b.name) == ("act", "/n/LeakyRelu_9")
    assert change.changes == ("attribute alpha: 0.1 → 0.2",)
    assert diff.node_status()["/n/LeakyRelu_9"] == "changed"
    assert diff.node_change("/n/LeakyRelu_9") == change
    assert not diff.equal


def _with_inserted_relu(model: onnx.ModelProto) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(model.SerializeToString())
    nodes = list(model.graph.node)
    nodes.insert(2, helper.make_node("Relu", ["h1"], ["r"], name="inserted"))
    nodes[3].input[0] = "r"
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


@pytest.mark.parametrize("rename", [False, True])
def test_one_node_inserted(rename):
    b = _with_inserted_relu(chain())
    if rename:
        b = renumbered(b)
    diff = ox.diff(chain(), b)
    nothing_but(diff, nodes_added=1, nodes_changed=1, nodes_renamed=3 if rename else 0)
    assert diff.nodes_added[0].op_type == "Relu"
    (change,) = diff.nodes_changed
    assert change.a.name == "act"
    assert change.changes == (f"input 0: h1 → {b.graph.node[2].output[0]}",)
    assert diff.node_status()[b.graph.node[2].name] == "added"


def test_a_removed_node_says_where_it_was_wired_on_side_b():
    diff = ox.diff(_with_inserted_relu(chain()), chain())
    nothing_but(diff, nodes_removed=1, nodes_changed=1)
    (removed,) = diff.removed_in("/")
    assert removed.ref.name == "inserted"
    assert removed.inputs == ("h1",)  # produced by b's Add
    assert removed.outputs == ("h1",)  # what b's LeakyRelu reads in its place


def test_one_weight_perturbed():
    w = W.copy()
    w[1, 2] += 0.25
    diff = ox.diff(chain(), renumbered(chain(w=w)))
    nothing_but(diff, nodes_renamed=4, tensors_changed=1)
    (change,) = diff.tensors_changed
    assert (change.a, change.b) == ("W", "W")
    assert change.max_abs == 0.25
    assert change.differing == 1
    assert change.mean_abs == pytest.approx(0.25 / 32)
    assert change.max_rel == pytest.approx(0.25 / abs(W[1, 2]))
    assert 0.99 < change.cosine < 1.0
    assert not change.bit_identical and change.error is None
    assert diff.tensor_change("W") == change
    hist = diff.difference_histogram(change, bins=8)
    assert hist.total == 32 and hist.counts[-1] == 1 and hist.counts[0] == 31


def test_tolerances_hide_small_differences():
    w = W.copy()
    w[0, 0] += 0.25
    assert ox.diff(chain(), chain(w=w), atol=0.25).equal
    assert not ox.diff(chain(), chain(w=w), atol=0.2).equal
    assert ox.diff(chain(), chain(w=w), rtol=0.25 / abs(W[0, 0])).equal
    assert ox.diff(chain(), chain(w=w), weights=False).equal  # values not read


def test_an_initializer_converted_to_fp16_is_compared_by_value():
    a = chain()
    b = chain()
    b.graph.initializer[2].CopyFrom(numpy_helper.from_array(W2.astype(np.float16), "W2"))
    diff = ox.diff(a, b)
    nothing_but(diff, tensors_changed=1)
    (change,) = diff.tensors_changed
    assert (change.dtype_a, change.dtype_b) == ("float32", "float16")
    expected = np.abs(W2.astype(np.float16).astype(np.float64) - W2.astype(np.float64)).max()
    assert change.max_abs == pytest.approx(expected) and 0 < change.max_abs < 1e-3
    assert change.differing > 0
    within = ox.diff(a, b, atol=1e-3).tensors_changed[0]
    assert within.differing == 0  # equal values within atol, yet the dtype changed


def test_a_quantized_copy_is_compared_dequantized():
    scale = np.float32(1 / 64)
    q = np.clip(np.round(W / scale), -128, 127).astype(np.int8)
    b = chain()
    b.graph.initializer[0].CopyFrom(numpy_helper.from_array(q, "W_quantized"))
    b.graph.initializer.extend([numpy_helper.from_array(np.array(scale), "W_scale"),
                                numpy_helper.from_array(np.array(0, np.int8), "W_zero_point")])  # fmt: skip
    dq = helper.make_node("DequantizeLinear", ["W_quantized", "W_scale", "W_zero_point"],
                          ["W_dq"], name="dq")  # fmt: skip
    b.graph.node.insert(0, dq)
    b.graph.node[1].input[1] = "W_dq"
    diff = ox.diff(chain(), b)
    nothing_but(diff, nodes_added=1, nodes_changed=1, tensors_added=2, tensors_renamed=1,
                tensors_changed=1)  # fmt: skip
    assert diff.nodes_changed[0].changes == ("input 1: W → W_dq",)
    assert diff.tensors_renamed == [("W", "W_quantized")]
    (change,) = diff.tensors_changed
    assert (change.dtype_a, change.dtype_b) == ("float32", "int8")
    # W is a multiple of 1/8, so exactly representable: dequantized, the values are equal.
    assert change.max_abs == 0.0 and change.differing == 0 and change.cosine == pytest.approx(1)


def _steps(model: ox.Model) -> dict[str, float]:
    """Each dequantized weight's quantization step (its largest scale)."""
    found = {}
    for name in model.graph.initializers:
        dq = find_dequantization(model.graph, name)
        if dq is not None:
            found[name] = float(np.max(dq.scale))
    return found


@pytest.mark.parametrize("with_names", [True, False], ids=["named", "nameless"])
@pytest.mark.parametrize("weight_type", ["QInt8", "QUInt8"])
def test_a_dynamic_int8_copy_diffs_as_small_value_changes(tmp_path, weight_type, with_names):
    pytest.importorskip("onnxruntime.quantization")
    folder = quantize_dynamic_copy(embedding_matmul_conv(with_names), tmp_path, weight_type)
    a, b = ox.load(folder / "float.onnx"), ox.load(folder / "quantized.onnx")
    diff = ox.diff(a, b)
    changed = {c.a: c for c in diff.tensors_changed}
    # Every weight is a value change, compared dequantized: the embedding read through
    # Gather → DequantizeLinear, the one read by MatMulInteger, MatMul and Conv weights.
    assert sorted(changed) == ["C", "E", "E2", "W", "W2"], repr(diff)
    steps = _steps(b)
    for name, change in changed.items():
        assert change.b == f"{name}_quantized" and change.dequantized, change
        weight = name in ("W", "W2", "C")  # embeddings are stored as activations: uint8
        assert change.dtype_b == ("int8" if weight and weight_type == "QInt8" else "uint8")
        assert change.cosine > 0.999, change
        assert 0 < change.max_abs <= steps[change.b] / 2 * (1 + 1e-5), change  # half a step
    assert diff.tensors_removed == []  # no weight removed here and added under another name
    assert not [n for n in diff.tensors_added if n.endswith("_quantized")]
    assert diff.nodes_renamed == []
    text = repr(diff)
    assert f"~ E → E_quantized (float32 → {changed['E'].dtype_b}, compared dequantized)" in text
    entry = next(t for t in diff.to_dict()["tensors"]["changed"] if t["a"] == "E")
    assert entry["compared"].startswith("dequantized: b per-tensor (scale ")
    assert "through Gather" in entry["compared"]
    # The other way round, the quantized side is a; the figures are the same.
    back = {c.b: c for c in ox.diff(b, a).tensors_changed}
    assert back["W"].max_abs == changed["W"].max_abs and back["W"].a == "W_quantized"
    hist = diff.difference_histogram(changed["C"], bins=4)
    assert hist.total == 72
    # Each side's statistics as compared: the quantized side in real units, not 0..255.
    real_c = a.graph.initializers["C"].numpy()
    stats = b.graph.initializers["C_quantized"].stats(
        dequantize=diff.dequantization(changed["C"], "b")
    )
    assert stats.max == pytest.approx(real_c.max(), abs=steps["C_quantized"] / 2 + 1e-6)
    assert diff.dequantization(changed["C"], "a") is None


def test_a_real_dynamic_int8_model_diffs_against_its_float_source():
    corpus = CORPUS
    a = ox.load(corpus / "silero_vad_v6.onnx")
    b = ox.load(corpus / "silero_vad_v6_dynint8.onnx")
    diff = ox.diff(a, b)
    changed = {c.a: c for c in diff.tensors_changed}
    assert len(changed) == 8  # 6 ConvInteger weights, the 2 DynamicQuantizeLSTM weights
    assert diff.tensors_removed == []
    steps = _steps(b)
    for change in changed.values():
        assert change.dequantized and change.error is None, change
        assert change.cosine > 0.98, change
        assert change.max_abs <= steps[change.b] / 2 * (1 + 1e-5), change
    lstm = changed["onnx::LSTM_209"]  # stored [1, in, 4·hidden] by the quantizer
    assert (lstm.shape_a, lstm.shape_b) == ((1, 512, 128), (1, 128, 512))
    assert "transposed" in lstm.compared and lstm.cosine > 0.999
    assert diff.nodes_renamed == []


def test_one_node_inserted_among_nameless_nodes_is_one_added_node():
    ops = ["Relu", "Neg", "Abs", "Sigmoid", "Tanh"]

    def nameless_chain(insert: bool) -> onnx.ModelProto:
        nodes, previous = [], "x"
        if insert:
            nodes.append(helper.make_node("Identity", ["x"], ["inserted"]))
            previous = "inserted"
        for k in range(50):
            out = f"v{k}" if k < 49 else "y"
            nodes.append(helper.make_node(ops[k % 5], [previous], [out]))
            previous = out
        graph = helper.make_graph(
            nodes, "nameless", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        )  # fmt: skip
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    diff = ox.diff(nameless_chain(False), nameless_chain(True))
    nothing_but(diff, nodes_added=1, nodes_changed=1)
    assert [r.label for r in diff.nodes_added] == ["Identity(inserted)"]
    assert diff.nodes_changed[0].b.label == "Relu(v0)"  # named by its output, not position
    assert diff.nodes_changed[0].changes == ("input 0: x → inserted",)


def _if_model(alpha: float) -> onnx.ModelProto:
    def body(name: str, op: str, **attrs: float) -> onnx.GraphProto:
        node = helper.make_node(op, ["x"], [f"{name}_y"], name=f"{name}_node", **attrs)
        out = helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [2])
        return helper.make_graph([node], name, [], [out])

    node = helper.make_node("If", ["c"], ["y"], name="branch",
                            then_branch=body("then", "LeakyRelu", alpha=alpha),
                            else_branch=body("else", "Neg"))  # fmt: skip
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_change_inside_an_if_body():
    diff = ox.diff(_if_model(0.1), _if_model(0.3))
    nothing_but(diff, nodes_changed=1)
    (change,) = diff.nodes_changed
    body = change.b.graph
    assert body != "/" and change.b.name == "then_node"
    assert change.changes == ("attribute alpha: 0.1 → 0.3",)
    assert diff.node_status(body) == {"then_node": "changed"}
    assert diff.node_status("/") == {"branch": "unchanged"}


def _external_pair(tmp_path):
    path_a, arrays = with_external_data(tmp_path / "a")
    path_b, _ = with_external_data(tmp_path / "b")
    return path_a, path_b, arrays


def test_external_data_on_both_sides(tmp_path):
    path_a, path_b, arrays = _external_pair(tmp_path)
    assert ox.diff(path_a, path_b).equal
    blob = bytearray((path_b.parent / "weights.bin").read_bytes())
    first = arrays["/layer1/W"].reshape(-1)
    blob[0:4] = np.float32(first[0] + 1.5).tobytes()  # the first tensor sits at offset 0
    (path_b.parent / "weights.bin").write_bytes(bytes(blob))
    for tensor in onnx.load(path_b, load_external_data=False).graph.initializer:
        assert tensor.data_location == TensorProto.EXTERNAL
    model_b = onnx.load(path_b, load_external_data=False)
    for tensor in model_b.graph.initializer:  # the checksum no longer holds: drop it
        kept = [e for e in tensor.external_data if e.key != "checksum"]
        del tensor.external_data[:]
        tensor.external_data.extend(kept)
    onnx.save(model_b, path_b)
    diff = ox.diff(path_a, path_b)
    nothing_but(diff, tensors_changed=1)
    change = diff.tensors_changed[0]
    assert (
        change.b == "/layer1/W" and change.max_abs == pytest.approx(1.5) and change.differing == 1
    )


def test_one_unreadable_tensor_is_reported_and_the_rest_stands(tmp_path):
    path_a, path_b, arrays = _external_pair(tmp_path)
    data = path_b.parent / "weights.bin"
    data.write_bytes(data.read_bytes()[: -4 * arrays["/layer2/W"].size])  # the last tensor gone
    w = arrays["/layer1/W"].copy()
    diff = ox.diff(path_a, path_b)
    nothing_but(diff, tensors_changed=1)
    (change,) = diff.tensors_changed
    assert change.b == "/layer2/W"
    assert change.error.startswith("could not compare: ") and change.max_abs is None
    assert w.size == 32  # the other tensors were compared and found equal


def test_shapes_that_disagree_are_reported_not_broadcast():
    diff = ox.diff(chain(), chain(w=W.reshape(8, 4)))
    nothing_but(diff, tensors_changed=1)
    assert diff.tensors_changed[0].error == "shapes differ: [4, 8] vs [8, 4]"


def test_renamed_initializers_are_matched_by_content():
    b = chain()
    b.graph.initializer[1].name = "bias_renamed"
    b.graph.node[1].input[1] = "bias_renamed"
    diff = ox.diff(chain(), b)
    nothing_but(diff, tensors_renamed=1)
    assert diff.tensors_renamed == [("B", "bias_renamed")]
    assert diff.equal


def test_model_fields_are_compared():
    b = chain()
    b.opset_import[0].version = 18
    b.producer_name = "other"
    b.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 5
    diff = ox.diff(chain(), b)
    assert diff.model_changes == [
        ("producer", "", "other"), ("opset ai.onnx", 17, 18),
        ("input x shape", [2, 4], [5, 4]),
    ]  # fmt: skip


def test_either_side_unreadable_names_the_side(tmp_path):
    good = tmp_path / "good.onnx"
    onnx.save(chain(), good)
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage that is not a model")
    with pytest.raises(ox.ExplorerError, match="^model b: "):
        ox.diff(good, tmp_path / "bad.onnx")
    with pytest.raises(ox.ExplorerError, match="^model a: "):
        ox.diff(tmp_path / "missing.onnx", good)


def test_graphdef_renamed_and_one_const_changed():
    text = frozen_tf1_graphdef(blocks=2).decode()
    renamed = text.replace("MobilenetV1/MobilenetV1/", "Net/")
    changed = renamed.replace("float_val: 0.1 ", "float_val: 0.2 ", 1)
    a = ox.load(text.encode(), format="graphdef")
    diff = compare_models(a, ox.load(renamed.encode(), format="graphdef"))
    assert diff.equal and diff.nodes_renamed and not diff.nodes_changed
    diff = compare_models(a, ox.load(changed.encode(), format="graphdef"))
    nothing_but(diff, nodes_renamed=len(diff.nodes_renamed), tensors_renamed=
                len(diff.tensors_renamed), tensors_changed=1)  # fmt: skip
    change = diff.tensors_changed[0]
    assert change.b == "Net/Conv2d_0_depthwise/weights"
    assert change.max_abs == pytest.approx(0.1) and change.differing == 3 * 3 * 8 * 8


def test_repr_and_html_show_untrusted_names_safely():
    b = renumbered(chain(alpha=0.5))
    b.graph.node[2].name = "<script>x</script>\u202eevil"
    diff = ox.diff(chain(), b)
    page = diff._repr_html_()
    assert "&lt;script&gt;" in page and "<script>" not in page and "\u202e" not in page
    text = repr(diff)
    assert "\u202e" not in text and "attribute alpha: 0.1 → 0.5" in text


# -- command line -----------------------------------------------------------------------
def _save(tmp_path, name, model):
    path = tmp_path / name
    onnx.save(model, path)
    return str(path)


def test_cli_exit_status_is_0_equal_1_different_2_error(tmp_path, capsys):
    a = _save(tmp_path, "a.onnx", chain())
    same = _save(tmp_path, "same.onnx", renumbered(chain()))
    other = _save(tmp_path, "other.onnx", chain(alpha=0.3))
    assert main(["diff", a, same]) == 0
    assert main(["diff", a, other]) == 1
    assert "attribute alpha: 0.1 → 0.3" in capsys.readouterr().out
    assert main(["diff", a, str(tmp_path / "missing.onnx")]) == 2
    assert "model b" in capsys.readouterr().err


def test_cli_json_follows_the_documented_schema(tmp_path, capsys):
    w = W.copy()
    w[0, 0] = 7
    a = _save(tmp_path, "a.onnx", chain())
    b = _save(tmp_path, "b.onnx", renumbered(_with_inserted_relu(chain(alpha=0.3, w=w))))
    assert main(["diff", a, b, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"equal", "model", "nodes", "tensors"} and out["equal"] is False
    assert set(out["nodes"]) == {"added", "removed", "renamed", "changed"}
    assert out["nodes"]["added"] == ["/n/Relu_9"] and out["nodes"]["removed"] == []
    assert ["mm1", "/n/MatMul_7"] in out["nodes"]["renamed"]
    (changed,) = out["nodes"]["changed"]
    assert changed["a"] == "act" and changed["changes"] == [
        "attribute alpha: 0.1 → 0.3", "input 0: h1 → /n/Relu_9_output_0"]  # fmt: skip
    (tensor,) = out["tensors"]["changed"]
    assert {"a", "b", "max_abs", "max_rel", "cosine", "differing", "dtype_a", "dtype_b"} <= set(
        tensor
    )
    assert tensor["max_abs"] == 9.0 and tensor["differing"] == 1
    assert main(["diff", a, b, "--json", "--no-weights"]) == 1
    assert json.loads(capsys.readouterr().out)["tensors"]["changed"] == []


def test_nan_on_both_sides_is_equal_and_nan_on_one_side_differs():
    w_nan = W.copy()
    w_nan[0, 1] = np.nan
    assert ox.diff(chain(w=w_nan), chain(w=w_nan.copy())).equal
    w_other = w_nan.copy()
    w_other[0, 1] = 1.0
    (change,) = ox.diff(chain(w=w_nan), chain(w=w_other)).tensors_changed
    assert change.differing == 1 and change.max_abs == np.inf
    assert (
        ox.diff(chain(w=w_nan), chain(w=w_other)).to_dict()["tensors"]["changed"][0]["max_abs"]
        is None
    )  # JSON has no infinity


def test_values_are_read_in_chunks_across_chunk_boundaries(monkeypatch):
    from onnx_explorer.model_diff import _values

    monkeypatch.setattr(_values, "_CHUNK", 5)  # chunks that cut rows: the pieces realign
    w = W.copy()
    w[3, 7] -= 2.0  # the last element
    (change,) = ox.diff(chain(), chain(w=w)).tensors_changed
    assert change.max_abs == 2.0 and change.differing == 1


def test_onnx_against_graphdef_reports_what_it_can():
    diff = ox.diff(chain(), frozen_tf1_graphdef(blocks=1))
    assert diff.model_changes[0] == ("format", "onnx", "graphdef")
    assert len(diff.nodes_removed) == 4 and diff.nodes_added and not diff.equal


# -- matching around a node removed or inserted in the middle of a chain -----------------
def long_chain(
    blocks: int = 5,
    *,
    drop: tuple[int, str] | None = None,
    insert: tuple[int, str] | None = None,
    replace: tuple[int, str, str] | None = None,
    residual: bool = False,
) -> onnx.ModelProto:
    """``blocks`` × (MatMul(W) → Add(zero bias) → Identity → LeakyRelu), ~20 nodes, every
    block alike (the same weight, equal zero biases), as a repeated layer exports. ``drop``
    leaves out the (block, op) node, ``insert`` puts a Relu after it, ``replace`` swaps its
    op, ``residual`` adds each block's input to its output (an Add after the LeakyRelu) in
    every block but the one given by ``drop=(block, "Residual")``."""
    ops = ["MatMul", "Add", "Identity", "LeakyRelu"] + (["Residual"] if residual else [])
    nodes, inits, prev = [], [numpy_helper.from_array(W[:, :4], "W")], "x"
    for i in range(blocks):
        bias = f"bias{i}"
        inits.append(numpy_helper.from_array(np.zeros(4, np.float32), bias))
        block_input = prev
        for op in ops:
            if (i, op) == drop:
                continue
            inputs = {"MatMul": [prev, "W"], "Add": [prev, bias], "Residual": [prev, block_input]}
            kind = "Add" if op == "Residual" else op
            if replace is not None and (i, op) == replace[:2]:
                kind = replace[2]
            attrs = {"alpha": 0.1} if kind == "LeakyRelu" else {}
            out = f"b{i}.{op}"
            nodes.append(helper.make_node(kind, inputs.get(op, [prev]), [out], name=out, **attrs))
            prev = out
            if (i, op) == insert:
                nodes.append(helper.make_node("Relu", [prev], [f"b{i}.new"], name=f"b{i}.new"))
                prev = f"b{i}.new"
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(
        nodes, "long_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_node_removed_in_the_middle_of_a_renamed_chain():
    a, b = long_chain(), renumbered(long_chain(drop=(2, "Identity")))
    diff = ox.diff(a, b)
    nothing_but(diff, nodes_removed=1, nodes_changed=1, nodes_renamed=18)
    assert diff.nodes_removed[0].name == "b2.Identity"
    (change,) = diff.nodes_changed
    assert change.a.name == "b2.LeakyRelu"
    assert change.changes[0].startswith("input 0: b2.Identity → ")


def test_a_node_inserted_in_the_middle_of_a_renamed_chain():
    a, b = long_chain(), renumbered(long_chain(insert=(2, "Add")))
    diff = ox.diff(a, b)
    nothing_but(diff, nodes_added=1, nodes_changed=1, nodes_renamed=19)
    assert diff.nodes_added[0].op_type == "Relu"
    assert diff.nodes_changed[0].a.name == "b2.Identity"


def test_one_node_inserted_and_another_removed_in_a_renamed_chain():
    b = renumbered(long_chain(insert=(1, "Add"), drop=(3, "Identity")))
    diff = ox.diff(long_chain(), b)
    nothing_but(diff, nodes_added=1, nodes_removed=1, nodes_changed=2, nodes_renamed=17)
    assert diff.nodes_added[0].op_type == "Relu"
    assert diff.nodes_removed[0].name == "b3.Identity"
    assert {c.a.name for c in diff.nodes_changed} == {"b1.Identity", "b3.LeakyRelu"}


def test_both_sides_renamed_with_a_removal_and_an_insertion():
    a = renumbered(long_chain(insert=(1, "Add")))
    b = renumbered(long_chain(drop=(3, "Identity")))  # the same numbering: names collide
    diff = ox.diff(a, b)
    assert (len(diff.nodes_added), len(diff.nodes_removed), len(diff.nodes_changed)) == (0, 2, 2)
    assert {r.op_type for r in diff.nodes_removed} == {"Relu", "Identity"}


def test_a_residual_branch_removed_in_a_renamed_chain():
    a = long_chain(residual=True)
    b = renumbered(long_chain(residual=True, drop=(2, "Residual")))
    diff = ox.diff(a, b)
    nothing_but(diff, nodes_removed=1, nodes_changed=2, nodes_renamed=22)
    assert diff.nodes_removed[0].name == "b2.Residual"
    # both readers of block 2's output now read its LeakyRelu: block 3's MatMul and residual
    assert {c.a.name for c in diff.nodes_changed} == {"b3.MatMul", "b3.Residual"}


def test_an_op_type_changed_in_a_renamed_chain():
    b = renumbered(long_chain(replace=(2, "LeakyRelu", "Sigmoid")))
    diff = ox.diff(long_chain(), b)
    nothing_but(diff, nodes_changed=1, nodes_renamed=19)
    (change,) = diff.nodes_changed
    assert change.a.name == "b2.LeakyRelu"
    assert change.changes == ("op type: LeakyRelu → Sigmoid", "attribute alpha: 0.1 → (none)")


@pytest.mark.parametrize("where", ["memory", "file"])
def test_stored_bytes_are_compared_piece_by_piece_across_pieces(where, tmp_path, monkeypatch):
    from onnx_explorer.model_diff import _values

    monkeypatch.setattr(_values, "_BYTES_CHUNK", 24)  # 6 floats: pieces cut rows of 8
    w = W.copy()
    w[3, 7] = np.nextafter(w[3, 7], np.float32(9))  # one bit of the last element
    a, b = chain(), chain(w=w)
    if where == "file":
        a, b = _save(tmp_path, "a.onnx", a), _save(tmp_path, "b.onnx", b)
    (change,) = ox.diff(a, b).tensors_changed
    assert change.b == "W" and change.differing == 1
    assert ox.diff(a, a).equal


def test_a_tensor_gives_its_stored_bytes_into_a_reused_buffer(tmp_path):
    model = ox.load(_save(tmp_path, "m.onnx", chain()))
    weight = model.graph.initializers["W"]
    buffer = np.empty(40, np.uint8)
    pieces = [bytes(p) for p in weight.iter_stored_bytes(buffer)]
    assert [len(p) for p in pieces] == [40, 40, 40, 8]
    assert b"".join(pieces) == W.tobytes()
    typed = helper.make_tensor("T", TensorProto.INT64, [3], [1, 2, 3])  # int64_data, not bytes
    graph = helper.make_graph([], "g", [], [], [typed])
    assert (
        ox.load(helper.make_model(graph)).graph.initializers["T"].iter_stored_bytes(buffer) is None
    )


def _string_constant(text: bytes, initializer: str = "") -> onnx.ModelProto:
    """A STRING tensor as a Constant's value or (``initializer``) as a stored tensor."""
    if initializer:
        stored = helper.make_tensor(initializer, TensorProto.STRING, [2], [text, b"b"])
        nodes = [helper.make_node("Identity", [initializer], ["c"], name="id")]
        inits = [stored]
    else:
        value = helper.make_tensor("v", TensorProto.STRING, [2], [text, b"b"])
        nodes = [helper.make_node("Constant", [], ["c"], value=value, name="const")]
        inits = []
    out = helper.make_tensor_value_info("c", TensorProto.STRING, [2])
    graph = helper.make_graph(nodes, "g", [], [out], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_string_tensors_are_compared_by_content():
    """Label-map constants (sklearn exports) are strings: equal ones are equal, changed
    ones a changed tensor with one differing value, a renamed stored one a rename (this
    used to raise TypeError hashing an object array)."""
    assert ox.diff(_string_constant(b"cat"), _string_constant(b"cat")).equal
    changed = ox.diff(_string_constant(b"cat"), _string_constant(b"dog"))
    assert [(t.b, t.differing) for t in changed.tensors_changed] == [("c", 1)]
    renamed = ox.diff(_string_constant(b"cat", "w"), _string_constant(b"cat", "w_renamed"))
    assert renamed.tensors_renamed == [("w", "w_renamed")]
