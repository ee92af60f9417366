"""``ex.overlay(path_or_dict)`` paints a Model Explorer / Netron node-data file, and
``onnx_explorer.read_node_data`` is public."""

from __future__ import annotations

import json

import pytest
from builders import mlp
from test_node_data import ME_MODEL_NODE_DATA_EXAMPLE, NETRON_EXAMPLE

import onnx_explorer as ox


def test_read_node_data_is_public():
    from onnx_explorer.node_data import read_node_data

    assert ox.read_node_data is read_node_data


@pytest.mark.graphviz
def test_the_explorer_paints_a_node_data_file(tmp_path):
    from onnx_explorer.widgets._explorer import Explorer

    model = ox.load(mlp())
    ex = Explorer(model)
    assert ex.graph_view.wait(60)
    path = tmp_path / "me.json"
    path.write_text(json.dumps(ME_MODEL_NODE_DATA_EXAMPLE), encoding="utf-8")
    matched = ex.overlay(path)
    assert matched is not None and matched.unknown == ("no_such_node",)
    assert "no_such_node" in ex.overlay_note.value
    assert ex.graph_view.wait(60) and "0.02" in ex.graph_view.svg
    matched = ex.overlay(NETRON_EXAMPLE, name="owner")
    assert matched is not None and matched.values == {"/layer1/Relu": "team a"}
    ex.overlay({"/layer1/Add": 3})  # a plain mapping is still a mapping of numbers
    ex.overlay(None)
    ex.close()
