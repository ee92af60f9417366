"""Harness 5, what a model looks like to a user: summary, DOT source and the static HTML.

Input: the bytes of an ONNX or GraphDef file (sniffed, as ``load`` does). DOT is built
with :func:`~onnx_explorer.views._drawing.build_dot`, which is pure (``views/render.py`` is
the only module that runs ``dot``, and it is never called here); ONNX shape inference
is switched off. Weight bytes are not read beyond what the summary needs.

Besides exceptions, one property is checked: the static HTML holds no tag that a
model with ordinary names would not produce (all model text must arrive escaped).
"""

from __future__ import annotations

import re

import onnx_explorer as ox
from onnx_explorer.summary import summarize
from onnx_explorer.views._drawing import build_dot
from onnx_explorer.views._summary_text import format_summary
from onnx_explorer.widgets._static import static_html

from . import wire
from .common import harness, without_inference

NAME = "views"
MAX_LEN = 16384
#: Tags the static view is made of; anything else came from the model, unescaped.
HTML_TAGS = frozenset({"style", "div", "table", "tr", "th", "td", "pre", "span", "b"})
_TAG = re.compile(r"<\s*/?\s*([A-Za-z][A-Za-z0-9-]*)")


def _run(data: bytes) -> None:
    """Summary text, DOT of every graph (first view, all expanded, focus) and static HTML."""
    with ox.load(data) as model:
        without_inference(model)
        format_summary(summarize(model))
        for graph in list(model.graphs())[:8]:
            build_dot(graph, model, infer_shapes=False)
            build_dot(graph, model, expanded="all", edge_labels="shape", infer_shapes=False)
            if graph.nodes:
                focus = graph.nodes[len(graph.nodes) // 2].name
                build_dot(graph, model, focus=focus, hops=1, infer_shapes=False)
        html = static_html(model, note=model.graph.name)
        odd = {tag.lower() for tag in _TAG.findall(html)} - HTML_TAGS
        if odd:
            raise AssertionError(f"static HTML holds unexpected tags {sorted(odd)}")


test_one_input = harness(_run)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    return wire.mutate(data, max_size, seed, wire.default_byte_mutate())


def custom_crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    return wire.crossover(data1, data2, max_size, seed)
