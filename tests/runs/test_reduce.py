"""``onnx_explorer.reduce`` and ``onnx-explorer reduce``: failing models built here shrink to
a few nodes around the one that fails, whatever comes before and after it."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.runs import ReduceError, ReduceStep, RunError, Submodel

pytest.importorskip("onnxruntime")

F, H, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64
MIX = ("Relu", "Neg", "Abs", "Sigmoid")


def _model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _chain(prefix: str, start: str, count: int) -> tuple[list[onnx.NodeProto], str]:
    nodes, current = [], start
    for i in range(count):
        op = MIX[i % len(MIX)]
        nodes.append(helper.make_node(op, [current], [f"{prefix}{i}"], name=f"{prefix}_{op}_{i}"))
        current = f"{prefix}{i}"
    return nodes, current


def division_by_zero(before: int = 12, after: int = 12) -> onnx.ModelProto:
    """… → Sub(a, a) = 0 → Div(a, 0): Inf and NaN (0/0), then more nodes carrying them."""
    head, a = _chain("pre", "x", before)
    tail, y = _chain("post", "q", after)
    nodes = [
        *head,
        helper.make_node("Sub", [a, a], ["zero"], name="make_zero"),
        helper.make_node("Div", [a, "zero"], ["q"], name="divide"),
        *tail,
        helper.make_node("Identity", [y], ["y"], name="out"),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", F, ["batch", 16])],
                  [helper.make_tensor_value_info("y", F, None)])  # fmt: skip


def fp16_layers(dtype: int = H, before: int = 10, after: int = 10) -> onnx.ModelProto:
    """An fp16 stack where one MatMul's sums pass 65,504 (Inf), then layers that turn the
    Inf into NaN; ``dtype=FLOAT`` is the same model in fp32 (no overflow)."""
    np_dtype = np.float16 if dtype == H else np.float32
    rng = np.random.default_rng(0)
    big = numpy_helper.from_array(np.full((64, 64), 1000.0, np_dtype), "w_big")
    small = numpy_helper.from_array((rng.standard_normal((64, 64)) * 0.1).astype(np_dtype), "w")
    nodes, current = [], "x"
    for i in range(before):
        nodes.append(helper.make_node("MatMul", [current, "w"], [f"a{i}"], name=f"pre_matmul_{i}"))
        nodes.append(helper.make_node("Tanh", [f"a{i}"], [f"t{i}"], name=f"pre_tanh_{i}"))
        current = f"t{i}"
    nodes.append(helper.make_node("Add", [current, "x"], ["s"], name="residual"))
    nodes.append(helper.make_node("MatMul", ["s", "w_big"], ["big"], name="overflowing_matmul"))
    current = "big"
    for i in range(after):
        nodes.append(helper.make_node("Sub", [current, current], [f"d{i}"], name=f"post_sub_{i}"))
        nodes.append(helper.make_node("Add", [f"d{i}", "x"], [f"e{i}"], name=f"post_add_{i}"))
        current = f"e{i}"
    nodes.append(helper.make_node("Identity", [current], ["y"], name="out"))
    return _model(nodes, [helper.make_tensor_value_info("x", dtype, [2, 64])],
                  [helper.make_tensor_value_info("y", dtype, None)], [big, small])  # fmt: skip


def fp16_feeds(dtype=np.float16) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {"x": (np.abs(rng.standard_normal((2, 64))) + 1).astype(dtype)}


def rejected_op(before: int = 10, after: int = 10) -> onnx.ModelProto:
    """``Sin`` of an int64 tensor: a type onnxruntime has no kernel for."""
    head, a = _chain("pre", "x", before)
    tail, y = _chain("post", "back", after)
    nodes = [
        *head,
        helper.make_node("Cast", [a], ["as_int"], to=I64, name="to_int"),
        helper.make_node("Sin", ["as_int"], ["bad"], name="sin_of_int"),
        helper.make_node("Cast", ["bad"], ["back"], to=F, name="to_float"),
        *tail,
        helper.make_node("Identity", [y], ["y"], name="out"),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", F, [1, 16])],
                  [helper.make_tensor_value_info("y", F, None)])  # fmt: skip


def _assert_small_around(result, culprit: str, *, valid: bool = True) -> None:
    assert culprit in result.node_names
    assert len(result.node_names) <= 5, result.node_names
    assert not result.interrupted
    if valid:
        onnx.checker.check_model(result.proto, full_check=True)


def test_a_nan_from_a_division_by_zero_reduces_to_the_division():
    steps: list[ReduceStep] = []
    result = ox.reduce(division_by_zero(), "nonfinite", on_step=steps.append)
    _assert_small_around(result, "divide")
    assert result.nodes_total == 27
    assert steps == result.steps and steps[0].phase == "whole" and steps[0].holds
    assert {s.phase for s in steps} >= {"whole", "end", "start"}
    outputs = result.submodel.run()  # on the values the full run had at the cut
    assert any(np.isinf(v).any() or np.isnan(v).any() for v in outputs.values())


def test_an_fp16_overflow_in_a_matmul_reduces_to_that_matmul():
    result = ox.reduce(fp16_layers(), "nonfinite", fp16_feeds())
    _assert_small_around(result, "overflowing_matmul")
    # downstream nodes fed the Inf (and making NaN of it) are not taken for the culprit
    assert not any(name.startswith("post_") for name in result.node_names)
    (out,) = result.submodel.run(every_value=True).values()
    assert np.isinf(out).any()


def test_an_op_onnxruntime_rejects_reduces_to_it():
    result = ox.reduce(rejected_op(), "ort-error")
    # no valid model holds the rejected node (onnx.checker refuses Sin of int64 too)
    _assert_small_around(result, "sin_of_int", valid=False)
    assert any("failed at node 'sin_of_int'" in note for note in result.notes)
    with pytest.raises(RunError, match="sin_of_int|Sin"):
        result.submodel.run()


def test_differs_from_a_reference_feeds_the_reference_values_at_the_cut():
    result = ox.reduce(
        fp16_layers(), None, fp16_feeds(), reference=fp16_layers(F), atol=1e-2, rtol=1e-2
    )
    assert result.check == "differs"
    _assert_small_around(result, "overflowing_matmul")


def test_a_callable_check_gets_submodels_with_golden_feeds():
    seen: list[Submodel] = []

    def has_division(sub: Submodel) -> bool:
        seen.append(sub)
        assert set(sub.feeds) == set(sub.inputs)
        return any(node.op_type == "Div" for node in sub.proto.graph.node)

    result = ox.reduce(division_by_zero(), has_division)
    assert result.node_names == ["divide"]
    assert result.check == "has_division" and len(seen) == len(result.steps)


def test_ctrl_c_returns_the_smallest_subgraph_found_so_far():
    calls = 0

    def interrupted_at_step_4(sub: Submodel) -> bool:
        nonlocal calls
        calls += 1
        if calls == 4:
            raise KeyboardInterrupt
        return any(node.name == "divide" for node in sub.proto.graph.node)

    result = ox.reduce(division_by_zero(), interrupted_at_step_4)
    assert result.interrupted and len(result.steps) == 3
    best = min((s for s in result.steps if s.holds), key=lambda s: s.nodes)
    assert len(result.node_names) == best.nodes < result.nodes_total
    assert "divide" in result.node_names
    assert "interrupted" in repr(result)


def test_a_check_that_does_not_hold_on_the_whole_model_is_an_error():
    with pytest.raises(ReduceError, match="does not hold on the whole model"):
        ox.reduce(rejected_op(), "nonfinite")
    with pytest.raises(ValueError, match="needs reference"):
        ox.reduce(rejected_op(), "differs")


def test_saving_the_culprit_writes_a_new_file(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(division_by_zero(), path)
    result = ox.reduce(path, "nonfinite")
    saved = result.save(tmp_path / "culprit.onnx")
    assert [n.name for n in onnx.load(saved).graph.node] == result.node_names
    with pytest.raises(FileExistsError):
        result.save(path, overwrite=True)


def test_cli_reduce(tmp_path, capsys):
    path, out = tmp_path / "fp16.onnx", tmp_path / "culprit.onnx"
    onnx.save(fp16_layers(), path)
    np.savez(tmp_path / "feeds.npz", **fp16_feeds())
    code = main(["reduce", str(path), "--check", "nonfinite", "--feeds",
                 str(tmp_path / "feeds.npz"), "-o", str(out)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "overflowing_matmul" in captured.out and "step 1 [whole]" in captured.err
    assert "overflowing_matmul" in [n.name for n in onnx.load(out).graph.node]
    healthy = tmp_path / "fp32.onnx"
    onnx.save(fp16_layers(F), healthy)
    assert main(["reduce", str(healthy), "-o", str(tmp_path / "none.onnx")]) == 1
    assert "does not hold" in capsys.readouterr().err
    code = main(["reduce", str(path), "--feeds", str(tmp_path / "feeds.npz"), "--json",
                 "-o", str(tmp_path / "again.onnx")])  # fmt: skip
    assert code == 0
    info = json.loads(capsys.readouterr().out)
    assert "overflowing_matmul" in info["nodes"] and info["steps"][0]["phase"] == "whole"


def test_the_linear_pass_drops_the_nodes_bisection_leaves_between():
    def both(sub: Submodel) -> bool:
        names = {node.name for node in sub.proto.graph.node}
        return {"pre_Neg_1", "make_zero"} <= names

    result = ox.reduce(division_by_zero(), both)
    assert result.node_names == ["pre_Neg_1", "make_zero"]
    assert any(s.phase == "linear" and s.holds for s in result.steps)
    assert ox.reduce(division_by_zero(), both, linear=False).node_names[-1] == "make_zero"
