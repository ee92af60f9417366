"""Every static copy the package writes survives the extension's allow-list whole.

The JupyterLab / Notebook 7 extension rebuilds a saved output's static HTML from an
allow-list (labextension/src/sanitize.ts): a tag, attribute or inline style property of
ours missing from it is silently dropped in a reopened notebook (a diff's change list
vanished that way). The lists are read from the TypeScript source itself.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from builders import mlp
from locations import REPO

import onnx_explorer as ox
from onnx_explorer.widgets._diff_explorer import DiffExplorer
from onnx_explorer.widgets._explorer import Explorer

SANITIZE = REPO / "labextension" / "src" / "sanitize.ts"


def _ts_set(name: str) -> set[str]:
    source = SANITIZE.read_text()
    body = re.search(rf"const {name} = new Set\(\[(.*?)\]\);", source, re.S)
    assert body, f"{name} not found in {SANITIZE}"
    return set(re.findall(r"'([^']+)'", body.group(1)))


TAGS = _ts_set("HTML_TAGS") | _ts_set("SVG_TAGS")
ATTRIBUTES = _ts_set("ATTRIBUTES")
STYLE_PROPERTIES = _ts_set("STYLE_PROPERTIES")
_SHORTHANDS = {"background", "border", "margin", "padding", "border-radius", "list-style"}


class _Dropped(HTMLParser):
    """What the allow-list would drop: tags, attributes, style properties."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag.lower() not in TAGS:
            self.dropped.add(f"<{tag}>")
        for name, value in attrs:
            if name.lower() not in ATTRIBUTES and not name.lower().startswith("xmlns"):
                self.dropped.add(f"{tag}[{name}]")
            if name.lower() == "style" and value:
                for declaration in value.split(";"):
                    prop = declaration.partition(":")[0].strip().lower()
                    if prop and prop not in STYLE_PROPERTIES and prop not in _SHORTHANDS:
                        self.dropped.add(f"style {prop}")


def _dropped(html: str) -> set[str]:
    parser = _Dropped()
    parser.feed(html)
    # Graphviz's own: the id attributes are meant to go (DOM clobbering), as are links.
    return {d for d in parser.dropped if not d.endswith(("[id]", "[xlink:href]", "[href]"))}


def _diff_pair(tmp_path: Path) -> tuple[Path, Path]:
    import onnx

    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    proto = mlp()
    onnx.save(proto, a)
    changed = mlp()
    changed.graph.node[0].name = "renamed"
    del changed.graph.node[-1]
    changed.graph.output[0].name = changed.graph.node[-1].output[0]
    onnx.save(changed, b)
    return a, b


@pytest.mark.graphviz
def test_the_explorers_static_copy_keeps_every_element():
    ex = Explorer(ox.load(mlp()))
    html = ex.static_html(wait=30)
    assert "<svg" in html
    assert _dropped(html) == set()


@pytest.mark.graphviz
def test_the_diff_explorers_static_copy_keeps_its_change_lists(tmp_path):
    a, b = _diff_pair(tmp_path)
    ex = DiffExplorer(ox.diff(a, b))
    html = ex.static_html(wait=30)
    assert "<li" in html or "<tr" in html
    assert _dropped(html) == set()


def test_a_diffs_own_html_keeps_every_element(tmp_path):
    a, b = _diff_pair(tmp_path)
    assert _dropped(ox.diff(a, b)._repr_html_()) == set()
