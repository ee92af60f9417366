"""Repeated blocks: detection (views/_repeats.py), the fold drawn (views/_drawing.py), the
stepper and selection in the graph widget."""

from __future__ import annotations

import pytest
from repeat_models import decoder

import onnx_explorer as ox
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._repeats import compare_members, detect, repeated_blocks
from onnx_explorer.views._scopes import scope_tree
from onnx_explorer.views._wiring import graph_wiring


def _folds(model: ox.Model) -> list[tuple[str, int]]:
    return [(fold.label, fold.count) for fold in repeated_blocks(model.graph).folds]


def test_a_32_layer_decoder_is_one_fold_of_32():
    assert _folds(ox.load(decoder(32))) == [("layers.0–31", 32)]


def test_a_layer_with_another_attribute_splits_the_fold_around_it():
    folds = repeated_blocks(ox.load(decoder(32, odd_layer=5)).graph).folds
    assert [(f.label, f.count) for f in folds] == [("layers.0–4", 5), ("layers.6–31", 26)]
    assert all("model/layers.5" not in [m.path for m in f.members] for f in folds)


def test_other_weight_values_still_fold_other_weight_shapes_do_not():
    assert _folds(ox.load(decoder(32, scaled_layer=17))) == [("layers.0–31", 32)]
    proto = decoder(8)
    for tensor in proto.graph.initializer:  # layer 3's norm weight one element longer
        if tensor.name == "model.layers.3.input_layernorm.weight":
            tensor.dims[0] += 1
            tensor.raw_data += b"\0\0\0\0"
    assert _folds(ox.load(proto)) == [("layers.0–2", 3), ("layers.4–7", 4)]


def test_wiring_counts_not_only_operators():
    proto = decoder(6)
    # Layer 2's Relu reads the layer input instead of up_proj's output: same ops, other wiring.
    relu = next(n for n in proto.graph.node if n.name.startswith("/model/layers.2/mlp/Relu"))
    ln = next(n for n in proto.graph.node if n.name.startswith("/model/layers.2/post_attention"))
    relu.input[0] = ln.output[0]
    assert _folds(ox.load(proto)) == [("layers.0–1", 2), ("layers.3–5", 3)]


def test_detection_work_is_linear_in_the_graph():
    work = []
    for layers in (8, 16, 32, 64):
        graph = ox.load(decoder(layers)).graph
        found = detect(graph, scope_tree(graph), graph_wiring(graph))
        size = len(graph.nodes) + len(graph_wiring(graph).edges)
        assert not found.stopped and found.work <= 3 * size
        work.append(found.work / size)
    assert max(work) - min(work) < 0.1  # the same visits per node and edge at every size


def test_the_outlier_layer_is_named_from_its_weights():
    model = ox.load(decoder(12, scaled_layer=7))
    fold = repeated_blocks(model.graph).folds[0]
    report = compare_members(model.graph, fold, pair=(3, 7))
    assert report.outlier == "layers.7"
    assert "layers.7" in report.text().splitlines()[0]
    assert report.slots[0] == "input_layernorm.weight"
    assert report.pair == ("layers.3", "layers.7") and all(r[2] > 10 for r in report.pair_rows)


def test_a_checkpoints_module_graph_folds_its_layers(tmp_path):
    import numpy as np
    from safetensors.numpy import save_file

    tensors = {"model.embed_tokens.weight": np.ones((10, 4), np.float32)}
    for i in range(6):
        for part in ("self_attn.q_proj", "self_attn.k_proj", "mlp.up_proj"):
            tensors[f"model.layers.{i}.{part}.weight"] = np.full((4, 4), i, np.float32)
    save_file(tensors, tmp_path / "m.safetensors")
    assert _folds(ox.load(tmp_path / "m.safetensors")) == [("layers/0–5", 6)]


def test_the_fold_is_drawn_once_and_opens_on_the_member_asked_for():
    model = ox.load(decoder(32))
    graph = model.graph
    shut = build_dot(graph, model, expanded=["model"], fold_steps={})
    folds = [v for v in shut.ids.values() if v["kind"] == "fold"]
    assert len(folds) == 1 and folds[0]["open"] is False and folds[0]["count"] == 32
    assert "layers.0–31 ×32" in shut.source
    assert len(shut.folds) == 1
    inside = graph.node(next(n.name for n in graph.nodes if "/layers.20/mlp/Relu" in n.name))
    assert shut.ids[shut.locate(inside)]["kind"] == "fold"
    open_ = build_dot(
        graph, model, expanded=["model/layers.17/mlp"], fold_steps={"model/layers.0": 17}
    )
    parts = {v["part"]: v for v in open_.ids.values() if v["kind"] == "fold"}
    assert parts["fold"]["open"] and parts["fold"]["index"] == 17
    assert parts["before"]["label"] == "layers.0–16" and parts["after"]["label"] == "layers.18–31"
    relu = graph.node(next(n.name for n in graph.nodes if "/layers.17/mlp/Relu" in n.name))
    assert open_.ids[open_.locate(relu)]["kind"] == "node"
    assert open_.ids[open_.locate(inside)]["part"] == "after"
    # Without fold_steps nothing is folded (the default of build_dot).
    assert not any(v["kind"] == "fold" for v in build_dot(graph, model).ids.values())


@pytest.mark.graphviz
def test_the_widget_steps_and_selecting_a_node_in_a_fold_shows_its_layer():
    ex = ox.explore(decoder(32))
    view = ex.graph_view
    assert view.wait(60)
    assert len(view.folds) == 1 and view.folds[0]["count"] == 32
    key = view.folds[0]["key"]
    view._on_message(view, {"event": "fold_step", "fold": key, "index": 17, "seq": 1}, [])
    assert view.wait(60)
    assert view.fold_steps == {key: 17} and view.folds[0]["shown"] == "layers.17"
    name = next(n.name for n in ex.graph.nodes if "/layers.23/self_attn/Softmax" in n.name)
    ex.node_list.selected = name  # from the node list
    assert view.wait(60)
    assert view.fold_steps[key] == 23 and view.ids[view.highlight_id]["name"] == name
    view.compare_fold(key, (0, 23))
    assert "most different member" in view.fold_report
    view.fold_repeats = False
    assert view.wait(60) and view.folds == []
    ex.close()
