"""Drawing a weights-only file (safetensors, GGUF): module boxes stacked in file order,
each weight labelled by its own name within the module."""

from __future__ import annotations

import numpy as np
from safetensors.numpy import save_file

import onnx_explorer as ox


def _checkpoint(tmp_path, layers: int = 2):
    tensors = {"model.embed_tokens.weight": np.ones((10, 4), np.float32)}
    for i in range(layers):
        tensors[f"model.layers.{i}.q_proj.weight"] = np.ones((4, 4), np.float32)
        tensors[f"model.layers.{i}.q_proj.bias"] = np.ones(4, np.float32)
    save_file(tensors, tmp_path / "m.safetensors")
    return ox.load(tmp_path / "m.safetensors")


def test_boxes_without_data_edges_stack_in_file_order(tmp_path):
    model = _checkpoint(tmp_path)
    source = model.graph.to_dot(expanded="all")
    order = [line for line in source.splitlines() if "style=invis" in line]
    boxes = source.count('[id="n')
    assert boxes == 3 and len(order) == boxes - 1  # one chain through every box


def test_graphs_with_data_edges_get_no_ordering_edges():
    from onnx_explorer.samples import tiny_cnn

    assert "style=invis" not in ox.load(tiny_cnn()).graph.to_dot()


def test_a_weight_named_after_its_module_shows_its_own_name(tmp_path):
    source = _checkpoint(tmp_path).graph.to_dot(expanded="all")
    labels = [line for line in source.splitlines() if line.startswith("n")]
    q_proj = next(line for line in labels if "q_proj\\n" in line)
    assert "\\nweight ⟨4×4⟩ float32" in q_proj and "\\nbias = [1, 1, 1, 1]" in q_proj
    assert "model.layers" not in q_proj


def test_a_file_with_metadata_only_draws_a_note_not_a_blank(tmp_path):
    from locations import CORPUS

    model = ox.load(CORPUS / "other_formats" / "ggml-vocab-bert-bge.gguf")  # vocab only
    source = model.graph.to_dot()
    assert "this graph has no nodes" in source
    assert f"{len(model.metadata_props)} metadata keys" in source


def test_a_values_note_from_the_file_shows_in_its_edge_tooltip():
    from locations import CORPUS

    from onnx_explorer.views import build_dot

    graph = ox.load(CORPUS / "other_formats" / "hey_jarvis.tflite").graph
    result = build_dot(graph, graph.model, expanded="all", max_nodes=500)
    titles = [t for t in result.titles.values() if "zero point" in t]
    assert any("int8 scale 0.101961, zero point -128" in t for t in titles)
