"""The matcher's bulk path (``_matching._in_step``): node i of a is node i of b when the
first forward pass would say so, checked for the whole graph at once. Its answers must be
the passes' answers: each case here diffs with it and without it and compares everything
the match decided (pairs, value mapping and its order) and the diff reports."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.model_diff import _compare, _matching

W = numpy_helper.from_array(np.eye(4, dtype=np.float32), "W")


def _model(nodes: list[onnx.NodeProto], outputs: tuple[str, ...] = ("y",)) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [W],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _renamed(model: onnx.ModelProto, order: list[int] | None = None) -> onnx.ModelProto:
    """Every node and intermediate value renamed; the nodes in ``order`` when given."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    keep = {"x", "W"} | {v.name for v in model.graph.output}
    values: dict[str, str] = {}
    for k, node in enumerate(model.graph.node):
        if node.name:
            node.name = f"/other/{node.op_type}_{k + 3}"
        for o, out in enumerate(node.output):
            if out not in keep:
                values[out] = node.output[o] = f"/other/v{k + 3}_{o}"
    for node in model.graph.node:
        for i, inp in enumerate(node.input):
            node.input[i] = values.get(inp, inp)
    if order is not None:
        nodes = [onnx.NodeProto.FromString(n.SerializeToString()) for n in model.graph.node]
        del model.graph.node[:]
        model.graph.node.extend(nodes[k] for k in order)
    return model


def _constant(out: str, value: float, name: str = "") -> onnx.NodeProto:
    tensor = numpy_helper.from_array(np.full(4, value, np.float32), "")
    return helper.make_node("Constant", [], [out], name=name, value=tensor)


def _answers(a: onnx.ModelProto, b: onnx.ModelProto, bulk: bool) -> tuple[Any, list[bool]]:
    """Everything the match and the diff decided, and whether the bulk path answered."""
    taken: list[bool] = []
    matches: list[Any] = []
    in_step, match_nodes = _matching._in_step, _compare.match_nodes

    def spy(*args: Any) -> bool:
        taken.append(bulk and in_step(*args))
        return taken[-1]

    def recorded(*args: Any, **kwargs: Any) -> Any:
        match = match_nodes(*args, **kwargs)
        matches.append((match.a2b, match.b2a, list(match.values_b2a.items())))
        return match

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_matching, "_in_step", spy)
        mp.setattr(_compare, "match_nodes", recorded)
        d = ox.diff(a, b, weights=False)
        found = (
            matches, d.to_dict(), d.node_status(),
            [(x.index, y.index, x.stable, y.stable) for x, y in d.nodes_matched],
            [(r.ref.index, r.inputs, r.outputs) for r in d.removed_in()],
        )  # fmt: skip
    return found, taken


def _same_answers(a: onnx.ModelProto, b: onnx.ModelProto) -> bool:
    """Whether the bulk path answered (the diffs with and without it are asserted equal)."""
    with_bulk, taken = _answers(a, b, True)
    without, _ = _answers(a, b, False)
    assert with_bulk == without
    return any(taken)


def _chain(alphas: list[float], named: bool = True) -> list[onnx.NodeProto]:
    nodes, prev = [], "x"
    for k, alpha in enumerate(alphas):
        out = "y" if k == len(alphas) - 1 else f"h{k}"
        kind = ("MatMul", [prev, "W"]) if k % 2 == 0 else ("LeakyRelu", [prev])
        attrs = {"alpha": alpha} if kind[0] == "LeakyRelu" else {}
        name = f"n{k}" if named else ""
        nodes.append(helper.make_node(kind[0], kind[1], [out], name=name, **attrs))
        prev = out
    return nodes


def test_a_renamed_chain_with_changed_attributes_is_matched_in_step() -> None:
    a = _model(_chain([0.1] * 8))
    b = _renamed(_model(_chain([0.1, 0.2, 0.1, 0.1, 0.1, 0.3, 0.1, 0.1])))
    assert _same_answers(a, b)
    assert len(ox.diff(a, b).nodes_changed) == 2


def test_nameless_nodes_are_matched_in_step() -> None:
    a = _model(_chain([0.1] * 6, named=False))
    assert _same_answers(a, _renamed(_model(_chain([0.1, 0.1, 0.1, 0.5, 0.1, 0.1], False))))
    assert _same_answers(a, _model(_chain([0.1, 0.1, 0.1, 0.5, 0.1, 0.1], False)))


def _twins(first: float, second: float, swap: bool = False) -> list[onnx.NodeProto]:
    """Two LeakyRelu reading x (one op, one input: told apart by alpha, or by order)."""
    twins = [
        helper.make_node("LeakyRelu", ["x"], ["r1"], name="t1", alpha=first),
        helper.make_node("LeakyRelu", ["x"], ["r2"], name="t2", alpha=second),
    ]
    if swap:
        twins.reverse()
    return [
        *twins,
        helper.make_node("MatMul", ["r1", "W"], ["m"], name="mm"),
        helper.make_node("Sub", ["m", "r2"], ["y"], name="sub"),
    ]


def test_identical_twins_pair_in_order_as_the_passes_do() -> None:
    assert _same_answers(_model(_twins(0.1, 0.1)), _renamed(_model(_twins(0.1, 0.1))))


def test_twins_with_swapped_attributes_are_left_to_the_passes() -> None:
    a, b = _model(_twins(0.1, 0.2)), _renamed(_model(_twins(0.2, 0.1)))
    assert not _same_answers(a, b)  # b's first twin has a's second's signature


def test_a_twin_changed_to_a_new_value_is_matched_in_step() -> None:
    assert _same_answers(_model(_twins(0.1, 0.3)), _renamed(_model(_twins(0.2, 0.3))))


def test_twins_swapped_in_the_file_are_left_to_the_passes() -> None:
    a, b = _model(_twins(0.1, 0.2)), _renamed(_model(_twins(0.1, 0.2, swap=True)))
    assert not _same_answers(a, b)


def _with_constants(first: float, second: float) -> list[onnx.NodeProto]:
    return [
        _constant("c1", first, "c1"),
        _constant("c2", second, "c2"),
        helper.make_node("Add", ["x", "c1"], ["s"], name="add"),
        helper.make_node("Mul", ["s", "c2"], ["y"], name="mul"),
    ]


def test_distinct_constants_are_matched_in_step() -> None:
    a = _model(_with_constants(1.0, 2.0))
    assert _same_answers(a, _renamed(a))


def test_equal_constants_are_left_to_the_passes() -> None:
    a = _model(_with_constants(1.0, 1.0))
    assert not _same_answers(a, _renamed(a))  # forward, the passes pair neither


def test_a_changed_constant_is_left_to_the_passes() -> None:
    a = _model(_with_constants(1.0, 2.0))
    assert not _same_answers(a, _renamed(_model(_with_constants(1.0, 3.0))))


def test_an_inserted_or_removed_node_is_left_to_the_passes() -> None:
    a = _model(_chain([0.1] * 6))
    inserted = _chain([0.1] * 6)
    inserted.insert(3, helper.make_node("Relu", ["h2"], ["new"], name="new"))
    inserted[4].input[0] = "new"
    assert not _same_answers(a, _renamed(_model(inserted)))
    assert not _same_answers(_model(inserted), _renamed(a))


def test_names_kept_but_nodes_moved_are_left_to_the_passes() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Neg", ["x"], ["n"], name="neg"),
        helper.make_node("Add", ["r", "n"], ["y"], name="add"),
    ]
    moved = [nodes[1], nodes[0], nodes[2]]
    assert not _same_answers(_model(nodes), _model(moved))


def test_an_op_changed_or_inputs_rewired_are_left_to_the_passes() -> None:
    a = _model(_chain([0.1] * 6))
    other_op = _chain([0.1] * 6)
    other_op[3].op_type = "Relu"
    del other_op[3].attribute[:]
    assert not _same_answers(a, _renamed(_model(other_op)))
    rewired = _chain([0.1] * 6)
    rewired[4].input[0] = "h1"
    assert not _same_answers(a, _renamed(_model(rewired)))


# -- random graphs: small DAGs with repeated ops, twins, constants and perturbations --------
_OPS = [("Relu", 1), ("Neg", 1), ("LeakyRelu", 1), ("Add", 2), ("Mul", 2), ("MatMul", 2)]


def _random_graph(rng: random.Random) -> list[onnx.NodeProto]:
    nodes: list[onnx.NodeProto] = []
    values = ["x", "W"]
    for k in range(rng.randint(3, 12)):
        if rng.random() < 0.15:
            nodes.append(_constant(f"v{k}", rng.choice([1.0, 2.0]), rng.choice(["", f"c{k}"])))
        else:
            op, arity = rng.choice(_OPS)
            inputs = [rng.choice(values[-4:]) for _ in range(arity)]
            attrs = {"alpha": rng.choice([0.1, 0.2])} if op == "LeakyRelu" else {}
            name = rng.choice(["", f"n{k}"])
            nodes.append(helper.make_node(op, inputs, [f"v{k}"], name=name, **attrs))
        values.append(f"v{k}")
    nodes[-1].output[0] = "y"
    for node in nodes:
        node.input[:] = ["y" if i == f"v{len(nodes) - 1}" else i for i in node.input]
    return nodes


def _perturbed(nodes: list[onnx.NodeProto], rng: random.Random) -> Iterator[list[onnx.NodeProto]]:
    def copy() -> list[onnx.NodeProto]:
        return [onnx.NodeProto.FromString(n.SerializeToString()) for n in nodes]

    yield copy()
    changed = copy()
    for node in changed:
        for attr in node.attribute:
            if attr.name == "alpha" and rng.random() < 0.5:
                attr.f = 0.3 if rng.random() < 0.5 else 0.1 if attr.f > 0.15 else 0.2
    yield changed
    twin = copy()
    k = rng.randrange(len(twin) - 1)
    duplicate = onnx.NodeProto.FromString(twin[k].SerializeToString())
    duplicate.output[0] = "twin"
    duplicate.name = duplicate.name and duplicate.name + "_twin"
    twin.insert(k + 1, duplicate)
    yield twin
    swapped = copy()
    k = rng.randrange(len(swapped) - 1)
    first, second = swapped[k], swapped[k + 1]
    if not set(first.output) & set(second.input):  # still in topological order
        swapped[k], swapped[k + 1] = second, first
    yield swapped


@pytest.mark.parametrize("seed", range(60))
def test_random_graphs_get_the_passes_answers(seed: int) -> None:
    rng = random.Random(seed)
    nodes = _random_graph(rng)
    a = _model(nodes)
    for other in _perturbed(nodes, rng):
        b = _model(other)
        _same_answers(a, b)
        _same_answers(a, _renamed(b))
        _same_answers(b, _renamed(a))


def test_the_random_graphs_take_the_bulk_path_often() -> None:
    taken = 0
    for seed in range(60):
        rng = random.Random(seed)
        nodes = _random_graph(rng)
        changed = next(p for k, p in enumerate(_perturbed(nodes, rng)) if k == 1)
        taken += _same_answers(_model(nodes), _renamed(_model(changed)))
    assert taken > 20
