"""DOT statements and their styling: the only place that writes DOT syntax.

Every function takes synthetic ids (``n3``, ``s0``, ``c1``…) and label text already made
printable, and returns one statement. Model text enters only through :func:`dot_label`
(quoted, escaped) or :func:`~onnx_explorer.views._quoting.html_text` (HTML-like cells).
``dot.py`` decides what is drawn; this module decides how it looks.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._paint import Paint
from ._quoting import dot_label, dot_string, html_text
from ._text import shorten

_FONT = "Helvetica,Arial,sans-serif"
HEADER = f"""digraph G {{
graph [rankdir=TB nodesep=0.25 ranksep=0.35 fontname="{_FONT}" fontsize=10 bgcolor="white"]
node [shape=box style="rounded,filled" fillcolor="#ffffff" color="#868e96" fontname="{_FONT}" \
fontsize=10 height=0.3 margin="0.12,0.04"]
edge [color="#868e96" fontname="{_FONT}" fontsize=8 fontcolor="#495057" arrowsize=0.6]"""
FOOTER = "}"
#: For views with many edges: network simplex (x positions) stops after 2 × nodes
#: iterations and crossing minimisation after 0.3 × its usual passes. An open DenseNet block
#: (650 edges) took 0.36-0.56 s in dot and takes 0.21-0.27 s; an opened scope of a QDQ
#: transformer 0.12-0.19 s and 0.08-0.11 s; the picture stays a layered drawing, a little
#: less straightened.
QUICK_LAYOUT = "graph [nslimit=2 mclimit=0.3]"

# Fill colours by kind of operator: enough to read a picture at a glance.
_OP_COLOURS = {
    **dict.fromkeys(("MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "MatMulInteger",
                     "QLinearMatMul", "QLinearConv", "BatchMatMulV2", "Conv2D"), "#dbe4ff"),
    **dict.fromkeys(("LayerNormalization", "BatchNormalization", "InstanceNormalization",
                     "GroupNormalization", "RMSNormalization", "SimplifiedLayerNormalization",
                     "FusedBatchNormV3"), "#d3f9d8"),
    **dict.fromkeys(("Relu", "Gelu", "Sigmoid", "Tanh", "Softmax", "LeakyRelu", "Erf", "Elu",
                     "HardSigmoid", "Selu", "Softplus", "LogSoftmax"), "#fff3bf"),
    **dict.fromkeys(("Reshape", "Transpose", "Shape", "Gather", "Concat", "Slice", "Squeeze",
                     "Unsqueeze", "Cast", "Expand", "Flatten", "Split", "Identity",
                     "ConstantOfShape", "Range", "Where", "Tile", "Pad"), "#f1f3f5"),
    **dict.fromkeys(("If", "Loop", "Scan"), "#ffe8cc"),
}  # fmt: skip
_FUNCTION_COLOUR = "#f3d9fa"
_SCOPE_COLOUR = "#e7f5ff"
_GROUP_COLOUR = "#f8f0fc"


def node(
    nid: str,
    lines: Sequence[str],
    op_type: str,
    *,
    bodies: Sequence[tuple[str, str]] = (),
    calls_function: bool = False,
    highlight: bool = False,
    paint: Paint | None = None,
) -> str:
    """An operator box. ``bodies``: (cell id, label) per openable graph, drawn as cells.
    ``paint``: an overlay's fill and border (a diff status), instead of the op's colour."""
    if bodies:
        # One cell per body, each its own clickable item: an If offers both branches.
        attrs = [f'id="{nid}"', f"label={body_cells_label(lines, bodies)}", 'margin="0.06,0.03"']
    else:
        attrs = [f'id="{nid}"', f"label={dot_label(list(lines))}"]
    fill: str | None = op_fill(op_type, calls_function)
    if paint is not None:
        fill = paint.fill
    if fill != NODE_FILL or paint is not None:
        attrs.append(f'fillcolor="{fill}"')
    if paint is not None:
        attrs.append(f'color="{paint.border}" penwidth=1.6')
    if bodies:
        attrs.append("peripheries=2")
    if highlight:
        attrs.append('penwidth=2.5 color="#e8590c"')
    return f"{nid} [{' '.join(attrs)}]"


#: The fill of a box whose op has no colour of its own (HEADER's default).
NODE_FILL = "#ffffff"


def op_fill(op_type: str, calls_function: bool = False) -> str:
    """An operator box's own fill (what an overlay's repainting restores)."""
    return _FUNCTION_COLOUR if calls_function else _OP_COLOURS.get(op_type, NODE_FILL)


def scope_fill(synthetic: bool) -> str:
    """A collapsed scope's own fill."""
    return _GROUP_COLOUR if synthetic else _SCOPE_COLOUR


def body_cells_label(lines: Sequence[str], bodies: Sequence[tuple[str, str]]) -> str:
    """An HTML-like label: the node's lines, then one ``▸ body`` cell per openable graph.

    Graphviz writes a cell with ``ID="n3_b0"`` as ``<g id="a_n3_b0">`` (the ``HREF`` only
    makes it emit that group; ``render.finish_svg`` drops the link again).
    """
    span = len(bodies)
    rows = [f'<TR><TD COLSPAN="{span}">{html_text(line)}</TD></TR>' for line in lines]
    cells = []
    for cid, label in bodies:
        tip = html_text(f"double-click to open {label}")
        cells.append(
            f'<TD ID="{cid}" HREF="#" TOOLTIP="{tip}" BORDER="1" SIDES="T" '
            f'COLOR="#adb5bd">▸ {html_text(shorten(label, 24))}</TD>'
        )
    rows.append(f"<TR>{''.join(cells)}</TR>")
    return (
        '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">'
        + "".join(rows)
        + "</TABLE>>"
    )


def scope_box(
    sid: str, lines: Sequence[str], synthetic: bool, changes: int = 0, fill: str | None = None
) -> str:
    """A collapsed scope (or synthetic group) drawn as one 3-D box; ``changes``: how many
    overlay changes it holds (its border turns amber, like a changed node's); ``fill``: an
    overlay's fill instead of its own."""
    fill = fill or scope_fill(synthetic)
    border = f' color="{CHANGES_BORDER}" penwidth=2' if changes else ""
    return (
        f'{sid} [id="{sid}" shape=box3d style=filled fillcolor="{fill}"{border} '
        f"label={dot_label(list(lines))}]"
    )


#: Border of a collapsed scope that holds changes.
CHANGES_BORDER = "#e67700"


def ghost(gid: str, lines: Sequence[str], paint: Paint) -> str:
    """A node that is not in the graph (a diff's removed node): dashed, grey, see-through."""
    return (
        f'{gid} [id="{gid}" style="rounded,dashed,filled" fillcolor="{paint.fill}" '
        f'color="{paint.border}" fontcolor="#495057" label={dot_label(list(lines))}]'
    )


def ghost_edge(eid: str, src: str, dst: str) -> str:
    """A ghost's wire to a drawn box: dashed grey, never shaping the ranks much."""
    return f'{src} -> {dst} [id="{eid}" style=dashed color="#868e96" weight=0]'


def legend(lid: str, title: str, rows: Sequence[tuple[Paint, str]]) -> str:
    """A small table of swatches, kept at the top of the drawing (rank=source)."""
    cells = []
    if title:
        cells.append(f'<TR><TD COLSPAN="2" ALIGN="LEFT"><B>{html_text(title)}</B></TD></TR>')
    for paint, text in rows:
        style = ' STYLE="DASHED"' if paint.dashed else ""
        cells.append(
            f'<TR><TD WIDTH="18" HEIGHT="12" BGCOLOR="{paint.fill}" COLOR="{paint.border}" '
            f'BORDER="1"{style}></TD><TD ALIGN="LEFT">{html_text(text)}</TD></TR>'
        )
    label = (
        '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="1">'
        + "".join(cells)
        + "</TABLE>>"
    )
    return f'{{rank=source; {lid} [id="{lid}" shape=plaintext style="" label={label}]}}'


def cluster_open(cid: str, heading: str, *, fold: bool = False) -> str:
    """The opening of an expanded scope's frame; close it with :data:`FOOTER`. ``fold``:
    the frame of an opened fold of repeated blocks (a solid violet border)."""
    style = (
        f'style="rounded,bold" color="{FOLD_BORDER}" fontcolor="#5f3dc4" fontsize=10'
        if fold
        else 'style="rounded,dashed" color="#adb5bd" fontcolor="#495057" fontsize=9'
    )
    return (
        f"subgraph cluster_{cid} {{\nid={dot_string(cid)} "
        f"label={dot_label([heading])} labeljust=l {style}"
    )


#: Border and fill of a fold of repeated blocks (``layers.0–31 ×32``).
FOLD_BORDER = "#7950f2"
FOLD_FILL = "#f3f0ff"


def fold_box(fid: str, lines: Sequence[str], *, small: bool = False) -> str:
    """A fold of repeated blocks drawn as one stacked box (``small``: the members before
    or after the one shown, inside the open fold's frame)."""
    size = " fontsize=9" if small else ""
    return (
        f'{fid} [id="{fid}" shape=box3d style="filled,bold" fillcolor="{FOLD_FILL}" '
        f'color="{FOLD_BORDER}"{size} label={dot_label(list(lines))}]'
    )


def in_cluster(cid: str, statement: str) -> str:
    """``statement`` placed in the already opened frame ``cid`` (Graphviz merges
    subgraphs of one name): a diff's removed node drawn in its old scope's frame."""
    return f"subgraph cluster_{cid} {{\n{statement}\n}}"


def value_box(vid: str, lines: Sequence[str], kind: str, *, plain: bool = False) -> str:
    """A graph input (green ellipse) or output (orange, double border). ``plain``: white
    inside, the border alone telling which (an overlay's fills mean something else)."""
    fill = "#ffffff" if plain else ("#d3f9d8" if kind == "input" else "#ffe8cc")
    style = (
        f'fillcolor="{fill}" color="#2b8a3e"'
        if kind == "input"
        else f'fillcolor="{fill}" color="#d9480f" peripheries=2'
    )
    return f'{vid} [id="{vid}" shape=ellipse style=filled {style} label={dot_label(list(lines))}]'


def empty_note(vid: str, lines: Sequence[str]) -> str:
    """What stands in the drawing of a graph with nothing to draw (never a blank pane)."""
    label = dot_label(list(lines))
    return f'{vid} [id="{vid}" shape=plaintext style="" fontcolor="#495057" label={label}]'


def outer_box(vid: str, text: str) -> str:
    """A value from outside this graph (a body's captured name, or a dangling one)."""
    return (
        f'{vid} [id="{vid}" shape=ellipse style="dashed" color="#868e96" label={dot_label([text])}]'
    )


def edge(
    eid: str,
    src: str,
    dst: str,
    label: str = "",
    *,
    implicit: bool = False,
    floating: bool = False,
) -> str:
    """A data edge; ``implicit``: read inside an If/Loop/Scan body (dashed blue);
    ``floating``: its label placed beside the edge after layout (``xlabel``) instead of
    taking part in it: ``dot`` lays out a 275-box view of a QDQ transformer in 0.18 s
    instead of 0.75 s, as every ``label`` becomes a virtual node it must rank."""
    attrs = [f'id="{eid}"']
    if implicit:
        attrs.append('style=dashed color="#1c7ed6"')
    if label:
        attrs.append(f"{'xlabel' if floating else 'label'}={dot_label([label])}")
    return f"{src} -> {dst} [{' '.join(attrs)}]"


def order_edge(src: str, dst: str) -> str:
    """An invisible edge that only keeps two boxes one above the other."""
    return f"{src} -> {dst} [style=invis]"


def control_edge(eid: str, src: str, dst: str, count: int) -> str:
    """Bundled ordering-only edges; they must not shape the layout (constraint=false)."""
    attrs = [f'id="{eid}"', 'style=dashed color="#adb5bd" arrowhead=odot constraint=false']
    if count > 1:
        attrs.append(f'label="{count:,}"')
    return f"{src} -> {dst} [{' '.join(attrs)}]"
