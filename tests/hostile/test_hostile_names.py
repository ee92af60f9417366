"""Hostile node names: thousands of ``/`` scopes in one name, a 1 MB name, 100,000 scopes.

Found by fuzzing (issue 14): a name of 2,000 components raised RecursionError while the
view was made, 60,000 took 5 GB and 15 s before failing, 150,000 ran out of memory (every
prefix of the name was stored as a scope path). Now scopes stop at SCOPE_DEPTH_MAX levels,
the rest of the name stays the node's own, and the picture appears.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import onnx
import pytest
from onnx import TensorProto, helper

import onnx_explorer as ox
from onnx_explorer.model import SCOPE_DEPTH_MAX
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._scopes import scope_tree

pytestmark = pytest.mark.graphviz

#: Generous: the fixed code peaks near 10 MB here; storing every prefix of a
#: 60,000-component name needs 5 GB.
PEAK_MB_MAX = 500


def _chain(names: list[str]) -> onnx.ModelProto:
    """A chain of Relu nodes with these names."""
    nodes, prev = [], "x"
    for i, name in enumerate(names):
        nodes.append(helper.make_node("Relu", [prev], [f"t{i}"], name=name))
        prev = f"t{i}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _deep_prefix(components: int) -> str:
    return "/".join(f"m{k % 10}" for k in range(components))


# Run in a child process: the memory a name costs is measured alone, and a regression
# that needs gigabytes fails this test (its limit) instead of the whole test run.
_IN_EXPLORER = textwrap.dedent(
    """
    import json, resource, sys, tracemalloc
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    from onnx import TensorProto, helper
    import onnx_explorer as ox

    components = int(sys.argv[1])
    prefix = "/".join(f"m{k % 10}" for k in range(components))
    deep = prefix + "/Relu"
    # "first" and "last" around two nodes sharing the deep scope, so that scope is a box.
    names = ["first", deep, prefix + "/Sibling", "last"]
    nodes, prev = [], "x"
    for i, name in enumerate(names):
        nodes.append(helper.make_node("Relu", [prev], [f"t{i}"], name=name))
        prev = f"t{i}"
    proto = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1])]))

    tracemalloc.start()
    model = ox.load(proto)
    svg = model.graph.render_svg(timeout=60)
    ex = ox.explore(model)
    view = ex.graph_view
    assert view.wait(60), "first drawing"
    view.collapse(view.result.expanded[0])  # the deep node hides in a scope box
    assert view.wait(60), "collapsed drawing"
    hidden = not any(v.get("name") == deep for v in view.ids.values())
    ex.select(deep)  # opens the scopes around it
    assert view.wait(60), "drawing after select"
    highlighted = view.ids.get(view.highlight_id, {}).get("name") == deep
    panel = [w.value for w in ex.attribute_panel.children if hasattr(w, "value")]
    _, peak = tracemalloc.get_traced_memory()
    print(json.dumps({
        "svg": svg.startswith("<svg") and "Relu" in svg,
        "view": view.svg.startswith("<svg") and not view.error,
        "hidden": hidden,
        "highlighted": highlighted,
        "panel_has_name": any(deep in value for value in panel),
        "peak_mb": peak / 1e6,
    }))
    """
)


@pytest.mark.parametrize("components", [2_000, 60_000, 150_000])
def test_a_name_of_thousands_of_scopes_draws_and_its_node_can_be_selected(components):
    done = subprocess.run(
        [sys.executable, "-c", _IN_EXPLORER, str(components)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["svg"], "render_svg gave no picture"
    assert found["view"], "the explorer's graph view gave no picture"
    assert found["hidden"], "the deep node should start inside a collapsed scope box"
    assert found["highlighted"], "selecting the deep node did not draw and highlight it"
    assert found["panel_has_name"], "the attribute panel should show the whole name"
    assert found["peak_mb"] < PEAK_MB_MAX, f"{found['peak_mb']:.0f} MB for one name"


def test_scopes_stop_at_the_depth_limit_and_the_rest_stays_in_the_name():
    prefix = _deep_prefix(2_000)
    graph = ox.load(_chain(["first", prefix + "/Relu", "last"])).graph
    tree = scope_tree(graph)
    scope = tree.node_scope[1]
    assert scope.path == _deep_prefix(SCOPE_DEPTH_MAX)
    assert len(list(scope.ancestors())) == SCOPE_DEPTH_MAX - 1
    # The full prefix (or any path deeper than the limit) finds the scope the node sits in.
    assert tree.find(prefix) is scope
    assert len(tree.by_path) == SCOPE_DEPTH_MAX + 1  # the root and one scope per level
    assert "Relu" in graph.to_dot()


def test_nested_open_scopes_as_deep_as_allowed_draw_as_clusters():
    # Every level holds a node and the next level: each one is a cluster when open.
    names = ["/".join(f"L{k}" for k in range(d)) + f"/n{d}" for d in range(1, 100)]
    graph = ox.load(_chain(names)).graph
    deepest = "/".join(f"L{k}" for k in range(SCOPE_DEPTH_MAX))
    result = build_dot(graph, expanded=[deepest], max_nodes=1200)
    assert deepest in result.expanded
    assert result.source.count("subgraph cluster_") == SCOPE_DEPTH_MAX
    svg = graph.render_svg(expanded=[deepest], timeout=60)
    assert svg.startswith("<svg") and "n99" in svg


def test_a_name_of_1_mb_without_slashes_draws_with_a_short_label_and_title():
    long = "x" * 1_000_000
    graph = ox.load(_chain(["first", long, "last"])).graph
    result = build_dot(graph)
    node_id = next(k for k, v in result.ids.items() if v.get("name") == long)  # full name kept
    assert len(result.titles[node_id]) < 10_000
    svg = graph.render_svg(timeout=60)
    assert svg.startswith("<svg") and len(svg) < 100_000


def test_a_name_of_1_mb_of_bare_slashes_sits_near_the_top():
    graph = ox.load(_chain(["first", "/" * 1_000_000 + "a/b/Relu", "last"])).graph
    assert scope_tree(graph).node_scope[1].path == "a/b"
    assert graph.render_svg(timeout=60).startswith("<svg")


def test_a_hundred_thousand_top_level_scopes_draw_as_groups():
    names = [f"s{k}_{'y' * 200}/Relu" for k in range(100_000)]
    graph = ox.load(_chain(names)).graph
    result = build_dot(graph)
    assert result.drawn <= 300 + 2
    scopes = [v for v in result.ids.values() if v["kind"] == "scope"]
    assert scopes and all(len(v["path"]) < 1000 for v in scopes)  # group names are shortened
    assert graph.render_svg(timeout=60).startswith("<svg")


def test_a_deep_metadata_scope_is_capped_too():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="node_Relu_0")]
    modules = ".".join(f"m{k}" for k in range(60_000))
    helper.set_metadata_props(
        nodes[0], {"pkg.torch.onnx.name_scopes": f"['', '{modules}', 'relu_0']"}
    )
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )  # fmt: skip
    loaded = ox.load(helper.make_model(graph)).graph
    scope = scope_tree(loaded).node_scope[0]
    assert scope.path.count("/") == SCOPE_DEPTH_MAX - 1
    assert loaded.render_svg(timeout=60).startswith("<svg")
