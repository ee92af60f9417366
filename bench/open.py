"""Benchmark: opening a model with onnx_explorer versus onnx.load.

    .venv/bin/python bench/open.py            # generate models if needed, measure, print
    .venv/bin/python bench/open.py --write    # ... and write bench/results/open.md
    .venv/bin/python bench/open.py --only nodes_20k nodes_100k --repeat 7

Generated models (under bench/_models/, not committed; generation is skipped when a
model's files are there with the sizes its manifest records):

- ``external_4gb``: transformer-like, ~4 GB of float32 weights in ONE external data file;
- ``embedded_1gb``: transformer-like, ~1.2 GB of weights embedded as ``raw_data``;
- ``nodes_20k`` / ``nodes_100k``: ~20,000 / ~100,000 nodes with small embedded weights
  (29,000 tensors of 64 B-16 KB in 78 MB at 100k);
- ``scoped_100k``: the 100,000-node graph of ``bench/render.py`` (exporter-style names,
  weights declared external but never written, so plain ``onnx.load`` cannot open it).

Each model is opened, each time in a fresh process, ``--repeat`` times (the figures
are the fastest run): by ``onnx_explorer.load``; by ``onnx_explorer.load`` followed by
listing every tensor's name, shape and location (which reads no bytes but builds every
node, attribute and tensor object, since the model builds them on first read); by
``onnx.load(..., load_external_data=False)`` and by plain ``onnx.load``. Targets (issue
"speed"): ``load`` ≤ 1.5× ``onnx.load(..., load_external_data=False)`` at 20k and 100k
nodes, in the same process kind and run; the embedded and external models keep their
figures (no weight bytes read at open). Also printed: the five functions with the most
own time in a profile of ``onnx_explorer.load`` of ``nodes_100k``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _common import (
    MODELS_DIR,
    Run,
    Runs,
    fmt_bytes,
    fmt_ratio,
    fmt_seconds,
    git_revision,
    machine_description,
    markdown_table,
    package_version,
    profile_top,
    run_python,
    timed_child,
    today,
    warm_page_cache,
    write_result,
)

#: Bump when the generated models change, so that old files are regenerated.
LAYOUT_VERSION = 1
ALIGN = 4096  # external data offsets start on a page, as onnx's own writer can do
CHUNK_ELEMENTS = 1 << 23  # elements written per numpy chunk (32 MB of float32)


@dataclass(frozen=True)
class Spec:
    """A decoder-only transformer stack, sized to hit a weight budget or node count."""

    name: str
    storage: str  # "external" or "embedded"
    layers: int
    hidden: int
    ffn: int
    vocab: int
    description: str
    layout: int = LAYOUT_VERSION

    @property
    def path(self) -> Path:
        return MODELS_DIR / f"{self.name}.onnx"

    @property
    def data_path(self) -> Path:
        return MODELS_DIR / f"{self.name}.onnx.data"

    @property
    def manifest_path(self) -> Path:
        return MODELS_DIR / f"{self.name}.json"


SPECS = {
    s.name: s
    for s in (
        # 18 layers x 201 MB + 2 x 262 MB embedding/lm_head = 4.15 GB
        Spec("external_4gb", "external", 18, 2048, 8192, 32000, "~4 GB external data, 1 file"),
        # 19 layers x 50 MB + 2 x 131 MB = 1.22 GB
        Spec("embedded_1gb", "embedded", 19, 1024, 4096, 32000, "~1.2 GB embedded raw_data"),
        # 833 layers x 24 nodes + 4 = 19,996 nodes
        Spec("nodes_20k", "embedded", 833, 16, 64, 256, "~20,000 nodes"),
        # 4,166 layers x 24 nodes + 4 = 99,988 nodes
        Spec("nodes_100k", "embedded", 4166, 16, 64, 256, "~100,000 nodes"),
        # bench/render.py's transformer; its own sizes (layers etc. unused here)
        Spec("scoped_100k", "render", 0, 0, 0, 0, "bench/render.py's 100,000-node graph"),
    )
}


# -- model generation (runs in a child: the parent must stay small, see _common) -----
def _graph_layout(spec: Spec) -> tuple[list[Any], list[tuple[str, tuple[int, ...]]]]:
    """Nodes (onnx NodeProtos) and initializer (name, shape) in file order."""
    from onnx import TensorProto, helper

    nodes: list[Any] = []
    inits: list[tuple[str, tuple[int, ...]]] = []
    d, f = spec.hidden, spec.ffn

    def node(op: str, scope: str, inputs: list[str], **attrs: Any) -> str:
        out = f"{scope}/{op}_output_0"
        nodes.append(helper.make_node(op, inputs, [out], name=f"{scope}/{op}", **attrs))
        return out

    def linear(x: str, scope: str, weight: str, n_in: int, n_out: int, bias: bool = True) -> str:
        inits.append((f"{weight}.weight", (n_in, n_out)))
        y = node("MatMul", scope, [x, f"{weight}.weight"])
        if not bias:
            return y
        inits.append((f"{weight}.bias", (n_out,)))
        return node("Add", scope, [y, f"{weight}.bias"])

    def layer_norm(x: str, scope: str, weight: str) -> str:
        inits.extend([(f"{weight}.weight", (d,)), (f"{weight}.bias", (d,))])
        return node(
            "LayerNormalization", scope, [x, f"{weight}.weight", f"{weight}.bias"],
            axis=-1, epsilon=1e-5,
        )  # fmt: skip

    inits.append(("model.embed_tokens.weight", (spec.vocab, d)))
    h = node("Gather", "/model/embed_tokens", ["model.embed_tokens.weight", "input_ids"])
    for i in range(spec.layers):
        s, w = f"/model/layers.{i}", f"model.layers.{i}"
        x = layer_norm(h, f"{s}/input_layernorm", f"{w}.input_layernorm")
        q = linear(x, f"{s}/self_attn/q_proj", f"{w}.self_attn.q_proj", d, d)
        k = linear(x, f"{s}/self_attn/k_proj", f"{w}.self_attn.k_proj", d, d)
        v = linear(x, f"{s}/self_attn/v_proj", f"{w}.self_attn.v_proj", d, d)
        kt = node("Transpose", f"{s}/self_attn", [k], perm=[0, 2, 1])
        scores = node("MatMul", f"{s}/self_attn/scores", [q, kt])
        scale = f"{s}/self_attn/Constant_output_0"
        nodes.append(
            helper.make_node(
                "Constant", [], [scale], name=f"{s}/self_attn/Constant",
                value=helper.make_tensor("", TensorProto.FLOAT, [], [float(d) ** 0.5]),
            )
        )  # fmt: skip
        scaled = node("Div", f"{s}/self_attn", [scores, scale])
        probs = node("Softmax", f"{s}/self_attn", [scaled], axis=-1)
        ctx = node("MatMul", f"{s}/self_attn/context", [probs, v])
        o = linear(ctx, f"{s}/self_attn/o_proj", f"{w}.self_attn.o_proj", d, d)
        h = node("Add", f"{s}/residual_attn", [h, o])
        x = layer_norm(h, f"{s}/post_attention_layernorm", f"{w}.post_attention_layernorm")
        up = linear(x, f"{s}/mlp/up_proj", f"{w}.mlp.up_proj", d, f)
        gate = node("Sigmoid", f"{s}/mlp/act_fn", [up])
        act = node("Mul", f"{s}/mlp/act_fn", [up, gate])
        down = linear(act, f"{s}/mlp/down_proj", f"{w}.mlp.down_proj", f, d)
        h = node("Add", f"{s}/residual_mlp", [h, down])
    x = layer_norm(h, "/model/norm", "model.norm")
    logits = linear(x, "/lm_head", "lm_head", d, spec.vocab, bias=False)
    nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/lm_head/Identity"))
    return nodes, inits


def _values(start: int, count: int) -> Any:
    """Cheap deterministic float32 values (content does not matter to an open)."""
    import numpy as np

    return ((np.arange(start, start + count, dtype=np.int64) % 251) * 1e-3).astype(np.float32)


def _make_model(spec: Spec, initializers: list[Any], nodes: list[Any]) -> Any:
    from onnx import TensorProto, helper

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])
    logits = helper.make_tensor_value_info(
        "logits", TensorProto.FLOAT, ["batch", "sequence", spec.vocab]
    )
    graph = helper.make_graph(nodes, "transformer", [ids], [logits], initializer=initializers)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench/open.py"
    )
    model.ir_version = 8
    return model


def _write_external(spec: Spec) -> None:
    import math

    from onnx import TensorProto

    nodes, layout = _graph_layout(spec)
    initializers = []
    tmp_data = spec.data_path.with_suffix(".data.tmp")
    offset = 0
    with open(tmp_data, "wb") as fh:
        for name, shape in layout:
            count = math.prod(shape)
            pad = -offset % ALIGN
            fh.write(b"\0" * pad)
            offset += pad
            for start in range(0, count, CHUNK_ELEMENTS):
                fh.write(_values(start, min(CHUNK_ELEMENTS, count - start)).tobytes())
            tensor = TensorProto(name=name, dims=shape, data_type=TensorProto.FLOAT)
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (
                ("location", spec.data_path.name), ("offset", offset), ("length", count * 4),
            ):  # fmt: skip
                entry = tensor.external_data.add()
                entry.key, entry.value = key, str(value)
            initializers.append(tensor)
            offset += count * 4
    tmp_model = spec.path.with_suffix(".onnx.tmp")
    tmp_model.write_bytes(_make_model(spec, initializers, nodes).SerializeToString())
    os.replace(tmp_data, spec.data_path)
    os.replace(tmp_model, spec.path)


def _write_embedded(spec: Spec) -> None:
    import math

    from onnx import TensorProto

    nodes, layout = _graph_layout(spec)
    initializers = []
    for name, shape in layout:
        tensor = TensorProto(name=name, dims=shape, data_type=TensorProto.FLOAT)
        tensor.raw_data = _values(0, math.prod(shape)).tobytes()
        initializers.append(tensor)
    model = _make_model(spec, initializers, nodes)
    del initializers
    tmp_model = spec.path.with_suffix(".onnx.tmp")
    tmp_model.write_bytes(model.SerializeToString())
    os.replace(tmp_model, spec.path)


def _files(spec: Spec) -> list[Path]:
    return [spec.path, spec.data_path] if spec.storage == "external" else [spec.path]


def is_generated(spec: Spec) -> bool:
    """True when the manifest matches ``spec`` and every file has its recorded size."""
    if spec.storage == "render":
        return spec.path.is_file()  # render.py keeps what it made, without a manifest
    try:
        manifest = json.loads(spec.manifest_path.read_text())
    except (OSError, ValueError):
        return False
    if manifest.get("spec") != asdict(spec):
        return False
    sizes = manifest.get("sizes", {})
    return all(p.is_file() and p.stat().st_size == sizes.get(p.name) for p in _files(spec))


def make(spec: Spec) -> None:
    """Generate ``spec``'s files unless they are already there (idempotent)."""
    if is_generated(spec):
        return
    MODELS_DIR.mkdir(parents=True, exist_ok=True)
    if spec.storage == "render":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from render import generate

        generate(spec.name, 100_000, True)
        return
    spec.manifest_path.unlink(missing_ok=True)
    (_write_external if spec.storage == "external" else _write_embedded)(spec)
    sizes = {p.name: p.stat().st_size for p in _files(spec)}
    spec.manifest_path.write_text(json.dumps({"spec": asdict(spec), "sizes": sizes}, indent=1))


# -- measuring -------------------------------------------------------------------------
# The reader module is imported on the first load(); import it before the clock starts
# so that the figures time the open (the process column includes every import).
_EXPLORER_SETUP = "import onnx_explorer\nimport onnx_explorer.readers.onnx._read"
_LISTING = "listing = [(w.tensor.name, w.tensor.shape, w.tensor.location) for w in model.weights()]"
CONTENDERS = {
    "onnx_explorer.load": (  # counts nodes only: counting tensors would build them all
        _EXPLORER_SETUP,
        "model = onnx_explorer.load(PATH)",
        "report['nodes'] = len(model.graph.nodes)",
    ),
    "onnx_explorer.load + len(graph.nodes)": (  # issue 30's row: the nodes inside the clock
        _EXPLORER_SETUP,
        "model = onnx_explorer.load(PATH)\nreport['nodes'] = len(model.graph.nodes)",
        "pass",
    ),
    "onnx_explorer.load + list weights": (
        _EXPLORER_SETUP,
        f"model = onnx_explorer.load(PATH)\n{_LISTING}",
        "report['tensors'] = len(listing)\nreport['nodes'] = len(model.graph.nodes)",
    ),
    "onnx.load(load_external_data=False)": (
        "import onnx",
        "proto = onnx.load(PATH, load_external_data=False)",
        None,
    ),
    "onnx.load": ("import onnx", "proto = onnx.load(PATH)", None),
}
_ONNX_POST = (
    "report['tensors'] = len(proto.graph.initializer) + "
    "sum(n.op_type == 'Constant' for n in proto.graph.node)\n"
    "report['nodes'] = len(proto.graph.node)"
)
EXPLORER = "onnx_explorer.load"
COUNTED = "onnx_explorer.load + len(graph.nodes)"
LISTED = "onnx_explorer.load + list weights"
NO_DATA = "onnx.load(load_external_data=False)"
FULL = "onnx.load"
NODE_TARGETS = ("nodes_20k", "nodes_100k", "scoped_100k")  # open ≤ 1.5× NO_DATA
PROFILED = "nodes_100k"


def contenders(spec: Spec) -> list[str]:
    # Plain onnx.load cannot open render.py's graph: its external data file is never written.
    return [c for c in CONTENDERS if not (c == FULL and spec.storage == "render")]


def child_code(contender: str, path: Path) -> str:
    setup, stmt, post = CONTENDERS[contender]
    return timed_child(f"PATH = {str(path)!r}\n{setup}", stmt, post or _ONNX_POST)


def measure_spec(spec: Spec, repeat: int, quick_repeat: int) -> dict[str, Run]:
    """The best of ``repeat`` runs per contender (``quick_repeat`` for those whose process
    is under 1 s)."""
    warm_page_cache(*_files(spec))
    names = contenders(spec)
    runs: dict[str, list[Run]] = {c: [] for c in names}
    for i in range(max(repeat, quick_repeat)):  # interleaved: drift hits every contender alike
        for contender in names:
            done = runs[contender]
            if i >= repeat and (i >= quick_repeat or done[0].process_s >= 1.0):
                continue
            done.append(run_python(child_code(contender, spec.path)))
    result = {c: Runs(tuple(r)).best for c, r in runs.items()}
    for key in ("tensors", "nodes"):
        counts = {c: m.report[key] for c, m in result.items() if key in m.report}
        if len(set(counts.values())) != 1:
            raise SystemExit(f"{spec.name}: contenders disagree on {key}: {counts}")
    return result


def profile_load(spec: Spec) -> dict[str, Any]:
    """The five functions with the most own time while ``onnx_explorer.load`` opens ``spec``."""
    setup = f"PATH = {str(spec.path)!r}\n{_EXPLORER_SETUP}"
    result = profile_top(setup, "model = onnx_explorer.load(PATH)")
    return {**result, "top": [{**row, "function": _label(row)} for row in result["top"]]}


def _label(row: dict[str, Any]) -> str:
    if row["file"] == "~":  # a builtin: "<method 'join' of 'bytes' objects>"
        return str(row["function"]).strip("<>")
    path = row["file"].split("site-packages/")[-1].split("onnx_explorer/")[-1]
    return f"{path}:{row['line']} {row['function']}"


# -- reporting -------------------------------------------------------------------------
def model_facts(spec: Spec, result: dict[str, Run]) -> str:
    size = sum(p.stat().st_size for p in _files(spec))
    tensors, nodes = result[LISTED].report["tensors"], result[EXPLORER].report["nodes"]
    return f"{spec.name}: {fmt_bytes(size)}, {nodes:,} nodes, {tensors:,} tensors"


def table(results: dict[str, dict[str, Run]]) -> str:
    rows = []
    for name, result in results.items():
        spec = SPECS[name]
        reference = result[NO_DATA]
        for contender, m in result.items():
            ratio = "" if contender == NO_DATA else fmt_ratio(m.seconds / reference.seconds)
            rows.append(
                [
                    model_facts(spec, result) if contender == EXPLORER else "",
                    f"`{contender}`",
                    fmt_seconds(m.seconds),
                    ratio,
                    fmt_seconds(m.process_s),
                    fmt_bytes(m.max_rss),
                ]
            )
    headers = ["model", "opened with", "open", f"÷ `{NO_DATA}`", "process", "peak RSS"]
    return markdown_table(headers, rows, "ll" + "r" * 4)


def targets(results: dict[str, dict[str, Run]]) -> list[str]:
    lines = []

    def check(label: str, value: float, limit: float) -> None:
        verdict = "met" if value <= limit else "MISSED"
        lines.append(f"- {label}: {fmt_ratio(value)} (target ≤ {fmt_ratio(limit)}) — {verdict}")

    for name in NODE_TARGETS:
        if name in results:
            r = results[name]
            check(f"{name}: open ÷ `{NO_DATA}`", r[EXPLORER].seconds / r[NO_DATA].seconds, 1.5)
            check(f"{name}: open + `len(graph.nodes)` ÷ `{NO_DATA}` (issue 30)",
                  r[COUNTED].seconds / r[NO_DATA].seconds, 1.3)  # fmt: skip
    if "embedded_1gb" in results:
        r = results["embedded_1gb"]
        ours, theirs = r[EXPLORER], r[FULL]
        check("embedded_1gb: open time ÷ `onnx.load`", ours.seconds / theirs.seconds, 0.2)
        check("embedded_1gb: process time ÷ `onnx.load`", ours.process_s / theirs.process_s, 0.2)
        check("embedded_1gb: peak RSS ÷ `onnx.load`", ours.max_rss / theirs.max_rss, 0.1)
    if "external_4gb" in results:
        r = results["external_4gb"]
        ours, theirs = r[EXPLORER], r[NO_DATA]
        check(f"external_4gb: process time ÷ `{NO_DATA}`", ours.process_s / theirs.process_s, 1.5)
        check(f"external_4gb: peak RSS ÷ `{NO_DATA}`", ours.max_rss / theirs.max_rss, 1.5)
    return lines


def profile_text(profile: dict[str, Any]) -> list[str]:
    rows = [
        [f"`{row['function']}`", f"{row['calls']:,}", fmt_seconds(row["own_s"]),
         fmt_seconds(row["cumulative_s"])]
        for row in profile["top"]
    ]  # fmt: skip
    return [
        f"Profile of `onnx_explorer.load` of {PROFILED} (cProfile, one run; "
        f"{fmt_seconds(profile['total_s'])} in all under the profiler), the five functions "
        "with the most own time:",
        "",
        markdown_table(["function", "calls", "own time", "cumulative"], rows, "lrrr"),
    ]


def render(
    results: dict[str, dict[str, Run]], profile: dict[str, Any] | None, repeat: int, quick: int
) -> str:
    versions = ", ".join(f"{p} {package_version(p)}" for p in ("onnx", "protobuf", "numpy"))
    versions += f"; onnx_explorer at {git_revision()}"
    lines = [
        "# Opening a model: onnx_explorer vs onnx.load",
        "",
        f"Measured {today()} on {machine_description()}; {versions}.",
        f"Generated by `bench/open.py`; fastest of {repeat} runs ({quick} for cases whose "
        "process takes under 1 s), each in a fresh process, model files warm in the page "
        "cache.",
        "",
        table(results),
        "",
        "- **open**: wall time of the call, measured inside the child; the lazily imported "
        "reader module is imported before the clock starts. `onnx_explorer.load` builds the "
        "model's graphs, nodes, attributes and tensors when they are first read; "
        "`+ list weights` then lists every tensor's name, shape and location (no bytes read), "
        "which builds every node's fields and every tensor object.",
        f"- **÷**: open time divided by that of `{NO_DATA}` on the same model, in the same run.",
        "- **process**: spawn to exit of the child, seen from the parent: interpreter start, "
        "imports (the ONNX reader imports `onnx`; bytecode cached, as an installed package "
        "has it), the open, and exit.",
        "- **peak RSS**: `ru_maxrss` of the child (`os.wait4`), interpreter and imports "
        "included. Pages of a memory-mapped file that the open touches count too.",
        "",
        "Targets:",
        "",
        *targets(results),
    ]
    if profile is not None:
        lines += ["", *profile_text(profile)]
    lines += ["", ISSUE_30_FLOOR]
    return "\n".join(lines)


ISSUE_30_FLOOR = """\
Issue 30's row (open + `len(graph.nodes)` ≤ 1.3×) is not met; where the time goes
(cProfile above, and `process_time` of the parts):

- `onnx_explorer.load` alone is 0.92-1.30× `onnx.load(load_external_data=False)`. The
  difference on files with embedded weights (nodes_20k/100k: 14,000 / 70,000 tensors in
  the file) is the wire walk that finds the `raw_data` to leave out of the parse (`_scan`:
  ~0.4 µs a field over 170,000 fields, in Python) and the copy of what is parsed (`join`).
  That walk is what opens the 1.2 GB embedded model in 45 MB instead of 2.48 GB (the
  embedded_1gb row): parsing everything would copy every weight.
- `len(graph.nodes)` makes the graph's node objects: 100,000 of them cost 26-34 ms
  (allocating a 14-slot object is 0.12-0.17 µs, then its index, graph and column slots),
  0.25-0.5× `onnx.load` on these files.
- Considered and not done: a lazy node list whose `len` is free would make every
  `graph.nodes[i]` a Python-level call from then on (~0.15 µs against ~0.03 µs for a list;
  the wiring, the drawing and the metrics index nodes in their loops); a node class per
  graph holding the graph and the columns as class attributes would save ~8 ms (two of
  the three slot passes) but make `node.graph` read-only, which a graph built from
  existing nodes sets.
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (fastest kept)")
    parser.add_argument(
        "--quick-repeat", type=int, default=9, help="runs per case taking under 1 s"
    )
    parser.add_argument("--only", nargs="+", choices=sorted(SPECS), help="models to run")
    parser.add_argument("--write", action="store_true", help="write bench/results/open.md")
    parser.add_argument("--make", choices=sorted(SPECS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.make:  # child mode: generate one model
        make(SPECS[args.make])
        return
    names = args.only or list(SPECS)
    results: dict[str, dict[str, Run]] = {}
    for name in names:
        spec = SPECS[name]
        if not is_generated(spec):
            print(f"generating {spec.name} ({spec.description}) ...", file=sys.stderr, flush=True)
            subprocess.run([sys.executable, __file__, "--make", name], check=True)
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        results[name] = measure_spec(spec, args.repeat, args.quick_repeat)
    profile = profile_load(SPECS[PROFILED]) if PROFILED in results else None
    text = render(results, profile, args.repeat, args.quick_repeat)
    print(text)
    if args.write:
        print(f"wrote {write_result('open', text)}", file=sys.stderr)


if __name__ == "__main__":
    main()
