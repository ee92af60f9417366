"""The graph widget driven from Python, the way the browser drives it: by setting traits."""

from __future__ import annotations

import pytest
from builders import mlp, nested_if, scoped_chain
from locations import CORPUS, DATA

import onnx_explorer as ox
from onnx_explorer.widgets._graph_view import GraphView

pytestmark = pytest.mark.graphviz


def _drawn(view: GraphView) -> GraphView:
    """Wait for the background layout, as a user waits for the picture."""
    assert view.wait(60), "the layout did not finish in 60 s"
    return view


def _click(view: GraphView, item_id: str, double: bool = False) -> None:
    """A click as the browser sends it: the item and the drawing it was made on."""
    view._on_message(view, {"event": "click", "id": item_id, "double": double,
                            "version": view.version}, [])  # fmt: skip
    _drawn(view)


def _id_of(view: GraphView, name: str) -> str:
    return next(k for k, v in view.ids.items() if v.get("kind") == "node" and v["name"] == name)


def test_click_selects_and_python_selection_highlights():
    view = _drawn(GraphView(ox.load(mlp()).graph))
    assert view.svg.startswith("<svg") and not view.error
    # The browser reports a click on a drawn node by its synthetic id.
    _click(view, _id_of(view, "/layer1/Relu"))
    assert view.selected == "/layer1/Relu"
    assert view.highlight_id == _id_of(view, "/layer1/Relu")
    # From Python: the highlight follows.
    view.selected = "/layer2/MatMul"
    assert view.highlight_id == _id_of(view, "/layer2/MatMul")
    view.selected = ""
    assert view.highlight_id == ""


def test_double_clicking_a_collapsed_scope_expands_it_and_one_click_does_not():
    view = _drawn(GraphView(ox.load(scoped_chain(40)).graph, fold_repeats=False))
    collapsed = [(k, v) for k, v in view.ids.items() if v["kind"] == "scope" and not v["open"]]
    assert collapsed
    item_id, entry = collapsed[-1]
    version = view.version
    _click(view, item_id)  # one click only picks the box, in the browser
    assert view.version == version and entry["path"] not in view.result.expanded
    _click(view, item_id, double=True)
    assert entry["path"] in view.result.expanded
    opened = [v for v in view.ids.values() if v["kind"] == "scope" and v["path"] == entry["path"]]
    assert opened and opened[0]["open"]
    assert view.result.drawn <= view.max_nodes


def test_selecting_a_hidden_node_opens_its_scope():
    model = ox.load(scoped_chain(40))
    view = _drawn(GraphView(model.graph))
    target = "/enc/layer.33/Relu_5"
    assert not any(v.get("name") == target for v in view.ids.values())
    view.selected = target
    _drawn(view)
    assert view.ids[view.highlight_id]["name"] == target


def test_focus_and_reset():
    view = _drawn(GraphView(ox.load(scoped_chain(40)).graph))
    view.focus("/enc/layer.10/Relu_3", hops=1)
    _drawn(view)
    names = {v["name"] for v in view.ids.values() if v["kind"] == "node"}
    assert names == {"/enc/layer.10/Relu_2", "/enc/layer.10/Relu_3", "/enc/layer.10/Relu_4"}
    assert view.selected == "/enc/layer.10/Relu_3"
    view.reset()
    _drawn(view)
    assert view.focus_node == ""


def test_double_click_opens_a_body():
    model = ox.load(nested_if(2))
    view = _drawn(GraphView(model.graph, model))
    _click(view, _id_of(view, "/If"), double=True)
    assert view.graph_path in ("/If/then_branch", "/If/else_branch")
    assert view.graph is model.graph_at(view.graph_path)


def test_missing_graphviz_shows_an_error_not_an_exception(monkeypatch):
    monkeypatch.setenv("ONNX_EXPLORER_DOT", "no-such-dot")
    view = _drawn(GraphView(ox.load(mlp()).graph))
    assert view.svg == "" and "apt-get install graphviz" in view.error


def test_explorer_follows_a_double_click_into_a_body():
    ex = ox.explore(nested_if(2))
    _drawn(ex.graph_view)
    _click(ex.graph_view, _id_of(ex.graph_view, "/If"), double=True)
    assert ex.graph_path in ("/If/then_branch", "/If/else_branch")
    assert ex.graph is ex.graph_view.graph
    assert ex.node_list.status.value.endswith("nodes")


# -- the JavaScript in a real browser, with a stand-in for anywidget's model ----------------
_MOCK_MODEL = """
window.sent = [];
window.handlers = {};
window.model = {
  send: (content) => { window.sent.push(["send", content]); },
  get: (key) => window.state[key],
  // view_move stays in the browser (set without save_changes: a compare view links two
  // panes' moves with jslink, no kernel in between), so it is not recorded as sent.
  set: (key, value) => { window.state[key] = value; if (key !== "view_move") window.sent.push([key, value]); },
  save_changes: () => {},
  on: (event, cb) => { (window.handlers[event] = window.handlers[event] || []).push(cb); },
  off: () => {},
};
window.change = (key, value) => {
  window.state[key] = value;
  for (const cb of window.handlers["change:" + key] || []) cb();
};
"""


@pytest.fixture
def browser_page(browser):
    page = browser.new_page(viewport={"width": 900, "height": 700})
    try:
        yield page
    finally:
        page.close()


def _mount(page, view: GraphView, svg: str | None = None) -> None:
    import json
    from pathlib import Path

    here = Path(ox.__file__).parent / "widgets"
    js = (
        (here / "graph_view.js")
        .read_text()
        .replace("export default { render };", "window.oxeRender = render;")
    )
    keys = ("ids", "highlight_id", "notes", "error", "height", "version", "busy", "busy_since")
    state = {k: getattr(view, k) for k in (*keys, "control_edges", "control_hidden")}
    state["svg"] = view.svg if svg is None else svg
    page.set_content(
        f"<html><head><style>{(here / 'graph_view.css').read_text()}</style></head>"
        "<body><div id='w' style='width:800px'></div></body></html>"
    )
    page.add_script_tag(content=f"window.state = {json.dumps(state)};" + _MOCK_MODEL)
    page.add_script_tag(content=js, type="module")
    page.wait_for_function("window.oxeRender !== undefined")
    # Keep the cleanup function in the page: returning it to Playwright would dispose it.
    page.evaluate(
        "() => { window.oxeCleanup = window.oxeRender("
        "{model: window.model, el: document.getElementById('w')}); }"
    )
    page.wait_for_timeout(200)


@pytest.mark.browser
def test_the_browser_reports_clicks_drags_and_double_clicks(browser_page):
    page = browser_page
    model = ox.load(nested_if(2))
    view = _drawn(GraphView(model.graph, model))
    if_id = _id_of(view, "/If")
    _mount(page, view)
    box = page.locator(f'#w g[id="{if_id}"]').bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    stage = "document.querySelector('.oxe-graph-stage').style.transform"

    # A drag pans the whole way and is not a click.
    before = page.evaluate(stage)
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 60, y + 40, steps=5)
    page.mouse.up()
    assert page.evaluate(stage) != before and page.evaluate("window.sent") == []

    box = page.locator(f'#w g[id="{if_id}"]').bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.click(x, y)
    ((kind, single),) = page.evaluate("window.sent")
    assert kind == "send" and single["id"] == if_id and single["version"] == view.version
    view._on_message(view, single, [])  # what the comm would deliver to Python
    assert view.selected == "/If" and view.highlight_id == if_id

    page.evaluate(f"window.change('highlight_id', '{if_id}')")
    assert page.locator("#w .oxe-selected").count() == 1

    page.evaluate("window.sent = []")
    page.mouse.dblclick(x, y)
    sent = [value for key, value in page.evaluate("window.sent") if key == "send"]
    assert any(value["double"] for value in sent)
    for value in sent:
        view._on_message(view, value, [])
    _drawn(view)
    assert view.graph_path == "/If/then_branch"


@pytest.mark.browser
def test_the_browser_drops_scripts_handlers_and_links_from_the_svg(browser_page):
    view = _drawn(GraphView(ox.load(mlp()).graph))
    evil = view.svg.replace(
        "<g id=",
        '<script>window.pwned=1</script><a href="javascript:window.pwned=2">'
        '<rect width="5" height="5" onload="window.pwned=3"/></a><g id=',
        1,
    )
    _mount(browser_page, view, svg=evil)
    page = browser_page
    assert page.evaluate("window.pwned") is None
    assert page.locator("#w script").count() == 0
    assert page.evaluate(
        "[...document.querySelectorAll('#w *')].every(e => [...e.attributes]"
        ".every(a => !a.name.startsWith('on') && !a.name.endsWith('href')))"
    )
    drawn_nodes = [k for k in view.ids if not k.startswith("c")]  # c*: clusters
    assert page.locator("#w g.node").count() == len(drawn_nodes)


def test_collapsing_a_group_closes_the_scopes_inside_it():
    model = ox.load(scoped_chain(450, per_layer=2))  # 450 layers: split into synthetic groups
    view = _drawn(GraphView(model.graph))
    view.expand("enc/layer.300")
    _drawn(view)
    from onnx_explorer.views._scopes import scope_tree

    scope = scope_tree(model.graph).find("enc/layer.300")
    assert scope.parent.synthetic
    group = scope.parent.path  # "layer.2xx … layer.3xx"
    assert any(v["kind"] == "scope" and v["path"] == group and v["open"] for v in view.ids.values())
    assert any(v.get("name") == "/enc/layer.300/Relu_0" for v in view.ids.values())
    view.collapse(group)
    _drawn(view)
    assert not any(v.get("name") == "/enc/layer.300/Relu_0" for v in view.ids.values())
    assert not any(
        v["kind"] == "scope" and v["path"] == group and v["open"] for v in view.ids.values()
    )


# -- navigation helpers driven from Python ---------------------------------------------------
def test_search_hits_are_marked_and_stepped_through():
    ex = ox.explore(scoped_chain(3, per_layer=5))
    ex.graph_view.fold_repeats = False  # three identical layers: every hit in its own box
    view = _drawn(ex.graph_view)
    ex.node_list.search_box.value = "Relu_3"
    assert view.match_total == 3 and len(view.matches) == 3
    assert {view.ids[i]["name"] for i in view.matches} == {
        "/enc/layer.0/Relu_3",
        "/enc/layer.1/Relu_3",
        "/enc/layer.2/Relu_3",
    }
    view._on_message(view, {"event": "match", "step": 1}, [])
    assert ex.selected.name == "/enc/layer.0/Relu_3"
    view._on_message(view, {"event": "match", "step": 1}, [])
    assert ex.selected.name == "/enc/layer.1/Relu_3"
    view._on_message(view, {"event": "match", "step": -1}, [])
    assert ex.selected.name == "/enc/layer.0/Relu_3"
    ex.node_list.search_box.value = ""
    assert view.match_total == 0 and view.matches == []


def test_escape_or_a_background_click_deselects_everywhere():
    ex = ox.explore(mlp())
    _drawn(ex.graph_view)
    ex.select("/layer1/Relu")
    ex.graph_view._on_message(ex.graph_view, {"event": "deselect"}, [])
    assert ex.selected is None and ex.graph_view.highlight_id == ""


def test_a_body_cell_click_selects_its_node_and_a_double_click_opens_that_body():
    model = ox.load(nested_if(2))
    view = _drawn(GraphView(model.graph, model))
    cell = next(
        k for k, v in view.ids.items() if v["kind"] == "body" and v["label"] == "else_branch"
    )
    _click(view, cell)
    assert view.selected == "/If" and view.graph_path == "/"
    _click(view, cell, double=True)
    assert view.graph_path == "/If/else_branch"


def test_coming_back_to_a_graph_restores_what_was_open_in_it():
    model = ox.load(scoped_chain(40))
    view = _drawn(GraphView(model.graph, model))
    view.expand("enc/layer.7")
    _drawn(view)
    view.show_graph(model.graph_at("/"))  # the same graph: nothing to do
    assert "enc/layer.7" in view.result.expanded
    other = ox.load(nested_if(1))
    view.show_graph(other.graph)  # another graph, then back
    _drawn(view)
    view.show_graph(model.graph)
    _drawn(view)
    assert "enc/layer.7" in view.result.expanded


def test_the_view_on_screen_saves_as_svg_png_or_dot(tmp_path):
    ex = ox.explore(mlp())
    _drawn(ex.graph_view)
    svg = ex.save(tmp_path / "view.svg").read_text()
    assert svg == ex.graph_view.svg
    assert ex.save(tmp_path / "view.png").read_bytes().startswith(b"\x89PNG")
    assert ex.save(tmp_path / "view.dot").read_text().startswith("digraph")
    with pytest.raises(ValueError, match="use a .svg, .png or .dot name"):
        ex.save(tmp_path / "model.onnx")


def test_the_graph_selector_shows_the_graph_that_is_drawn():
    ex = ox.explore(nested_if(2))
    view = _drawn(ex.graph_view)
    cell = next(
        k for k, v in view.ids.items() if v["kind"] == "body" and v["label"] == "else_branch"
    )
    _click(view, cell, double=True)  # opened from the drawing, not from the selector
    assert ex.graph_path == "/If/else_branch"
    assert ex.model_panel.graph_picker.value == "/If/else_branch"
    ex.show_graph("/")  # the breadcrumb back to the main graph
    assert ex.model_panel.graph_picker.value == "/" and ex.graph_view.graph is ex.model.graph


def test_exports_are_named_after_the_model_and_the_view(tmp_path):

    import onnx_explorer as ox
    from onnx_explorer.widgets._graph_view import export_name

    saved = DATA / "savedmodel" / "tf2_mlp"
    model = ox.load(saved)
    assert export_name(model, model.graph) == "tf2_mlp_main"
    network = model.graph_at("function::__inference___call___26")
    assert export_name(model, network) == "tf2_mlp_inference___call___26"
    vad = ox.load(CORPUS / "silero_vad_16k_op15.onnx")
    body = vad.graph_at("/model/decoder/If_1/then_branch")
    assert export_name(vad, body) == "silero_vad_16k_op15_model_decoder_If_1_then_branch"
    assert export_name(None, vad.graph) == "graph_main"


def test_every_message_from_the_browser_is_answered(monkeypatch):
    # The browser says "the kernel did not answer" when a message of its goes 5 s
    # without its ack: every handled message must get one, even one that is refused.
    import onnx_explorer as ox
    from onnx_explorer.widgets._graph_view import GraphView

    model = ox.load(mlp())
    view = GraphView(model.graph, model=model)
    sent = []
    monkeypatch.setattr(view, "send", lambda content, buffers=None: sent.append(content))
    view._on_message(view, {"event": "click", "id": "nope", "version": -1, "seq": 7}, [])
    view._on_message(view, {"event": "deselect", "seq": 8}, [])
    view._on_message(view, {"event": "no such event", "seq": 9}, [])
    assert sent == [{"ack": 7}, {"ack": 8}, {"ack": 9}]
