"""``onnx_explorer.run`` / ``compare`` and ``onnx-explorer run``: activations with onnxruntime."""

from __future__ import annotations

import builtins
import json
import subprocess
import sys

import ipywidgets
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main

pytest.importorskip("onnxruntime")

F, H = TensorProto.FLOAT, TensorProto.FLOAT16


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def nan_model():
    """x → Relu → Sub(itself·0) → Div by itself: 0/0 = NaN wherever Relu gave 0."""
    return _model(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Div", ["r", "r"], ["q"], name="divide_by_itself"),
            helper.make_node("Add", ["q", "x"], ["y"], name="add"),
        ],
        [helper.make_tensor_value_info("x", F, ["batch", 4])],
        [helper.make_tensor_value_info("y", F, None)],
    )


def mlp(dtype=F, np_dtype=np.float32):
    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np_dtype), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np_dtype), "w2")
    return _model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
            helper.make_node("Tanh", ["h"], ["t"], name="act"),
            helper.make_node("MatMul", ["t", "w2"], ["y"], name="fc2"),
        ],
        [helper.make_tensor_value_info("x", dtype, [3, 8])],
        [helper.make_tensor_value_info("y", dtype, None)],
        [w1, w2],
    )


def test_the_node_that_produces_nan_is_reported_exactly():
    feeds = {"x": np.array([[1, -1, 2, 0]] * 2, np.float32)}
    result = ox.run(nan_model(), feeds)
    assert result.first_nonfinite == "divide_by_itself"
    assert result.stats["q"].nan == 4 and result.stats["r"].nan == 0
    assert list(result.tensors) == ["r", "q", "y"]  # execution order
    assert result.outputs["y"].shape == (2, 4)
    timing = json.loads(result.to_json())  # setup reported apart from the runs
    assert timing["prepare_seconds"] > 0 and timing["session_seconds"] > 0
    assert timing["run_seconds"] > 0


def test_stats_are_the_same_class_and_numbers_as_for_weights():
    feeds = {"x": np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8)}
    result = ox.run(mlp(), feeds, keep=["h"], bins=10)
    h = feeds["x"] @ numpy_helper.to_array(mlp().graph.initializer[0])
    assert isinstance(result.stats["h"], ox.TensorStats)
    assert result.stats["h"].max == pytest.approx(h.max(), rel=1e-5)
    assert result.stats["h"].mean == pytest.approx(h.mean(), rel=1e-4, abs=1e-5)
    np.testing.assert_allclose(result.values["h"], h, rtol=1e-5)
    assert "t" not in result.values  # values are kept only when asked
    assert result.tensors["t"].histogram.total == 3 * 16


def test_capture_selects_names_and_scope_prefixes():
    result = ox.run(mlp(), capture=["t"])
    assert list(result.tensors) == ["t"]
    assert result.outputs["y"].shape == (3, 4)  # outputs whatever is captured


def test_generated_feeds_follow_types_dims_and_vocab():
    model = _model(
        [helper.make_node("Identity", ["input_ids"], ["y"], name="id")],
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
    )
    result = ox.run(model, dims={"batch": 2, "seq": 50}, vocab=7)
    ids = result.feeds["input_ids"]
    assert ids.shape == (2, 50) and ids.dtype == np.int64
    assert ids.min() >= 0 and ids.max() < 7 and ids.max() > 0


def test_one_segment_per_node_gives_the_same_numbers():
    feeds = {"x": np.ones((3, 8), np.float32)}
    whole = ox.run(mlp(), feeds, segment_nodes=1000)
    single = ox.run(mlp(), feeds, segment_nodes=1)
    assert whole.stats == single.stats


def test_every_captured_tensor_matches_its_statistics_computed_alone():
    """A capture-all run summarises on a background thread with the fast path: each
    tensor's numbers are those of ``array_stats`` on it alone — a NaN in one, integers,
    a tensor large enough to have sampled percentiles, one of its own size, and a Reshape
    whose statistics are its input's."""
    from onnx_explorer.stats import array_stats

    nodes = [helper.make_node("Relu", ["x"], ["r0"], name="relu0")]
    for k in range(1, 6):
        nodes.append(helper.make_node("Neg", [f"r{k - 1}"], [f"r{k}"], name=f"neg{k}"))
    nodes += [
        helper.make_node("Div", ["r5", "r5"], ["nan"], name="zero_by_zero"),
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Cast", ["x"], ["ints"], name="cast", to=TensorProto.INT32),
        helper.make_node("Tile", ["x", "reps"], ["big"], name="tile"),
        helper.make_node("Slice", ["x", "zero", "one"], ["odd"], name="slice"),
        helper.make_node("Reshape", ["big", "flat"], ["flattened"], name="reshape"),
    ]
    inits = [
        numpy_helper.from_array(np.array([1, 40], np.int64), "reps"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([-1], np.int64), "flat"),
    ]
    outs = ["nan", "shape", "ints", "flattened", "odd"]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", F, [3, 700])],
        [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outs],
        inits,
    )
    x = np.random.default_rng(2).standard_normal((3, 700)).astype(np.float32) * 5
    result = ox.run(model, {"x": x}, keep=[n.output[0] for n in nodes])
    assert result.first_nonfinite == "zero_by_zero"
    assert result.stats["big"].exact_percentiles is False  # 84,000 values: sampled
    assert result.tensors["flattened"].shape == (84_000,)
    assert result.stats["flattened"] == result.stats["big"]
    for name, value in result.values.items():
        alone = array_stats(value)
        got = result.stats[name]
        assert (got.count, got.min, got.max, got.nan, got.inf) == (
            alone.count, alone.min, alone.max, alone.nan, alone.inf
        ), name  # fmt: skip
        assert got.zeros == alone.zeros, name
        assert got.mean == pytest.approx(alone.mean, rel=1e-6, abs=1e-6), name
        assert got.std == pytest.approx(alone.std, rel=1e-5), name
        if got.exact_percentiles:
            assert (got.p1, got.p50, got.p99) == pytest.approx((alone.p1, alone.p50, alone.p99))
        else:  # a sample of ~1,000 of 84,000 normal values (scale 5): ranks within a few %
            assert got.p50 == pytest.approx(alone.p50, abs=0.4), name
            assert got.p99 == pytest.approx(alone.p99, abs=2.0), name


def test_bad_feeds_get_one_message_listing_expected_and_given():
    feeds = {"x": np.ones((3, 5), np.float64), "extra": np.ones(1)}
    with pytest.raises(ox.FeedError) as caught:
        ox.run(mlp(), feeds)
    message = str(caught.value)
    assert "x: float32[3,8]" in message and "float64[3, 5]" in message
    assert "unexpected input 'extra'" in message
    assert ox.run(mlp(), {}).feeds["x"].shape == (3, 8)  # inputs left out are generated


def test_a_model_failing_midway_keeps_the_stats_so_far_and_names_the_node():
    shape = numpy_helper.from_array(np.array([5, 5], np.int64), "shape")
    model = _model(
        [
            helper.make_node("Relu", ["x"], ["a"], name="first"),
            helper.make_node("Reshape", ["a", "shape"], ["b"], name="bad_reshape"),
            helper.make_node("Neg", ["b"], ["y"], name="never"),
        ],
        [helper.make_tensor_value_info("x", F, [2, 3])],
        [helper.make_tensor_value_info("y", F, None)],
        [shape],
    )
    with pytest.raises(ox.RunFailedError, match="bad_reshape") as caught:
        ox.run(model)
    assert caught.value.result.failure.node == "bad_reshape"
    assert list(caught.value.result.stats) == ["a"]


def test_an_op_onnxruntime_cannot_run_is_named_with_its_node():
    model = _model(
        [
            helper.make_node("Relu", ["x"], ["a"], name="fine"),
            helper.make_node("NoSuchOp", ["a"], ["y"], name="mystery", domain="com.example"),
        ],
        [helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("y", F, None)],
    )
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(ox.RunError, match=r"'mystery' \(op com.example::NoSuchOp\)"):
        ox.run(model)


def test_values_inside_if_bodies_are_listed_as_not_captured():
    then = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["inner"], name="neg")], "then", [],
        [helper.make_tensor_value_info("inner", F, None)],
    )  # fmt: skip
    other = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["inner2"], name="abs")], "else", [],
        [helper.make_tensor_value_info("inner2", F, None)],
    )  # fmt: skip
    model = _model(
        [
            helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
            helper.make_node("Greater", ["s", "zero"], ["c"], name="cond"),
            helper.make_node(
                "If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other
            ),
        ],
        [helper.make_tensor_value_info("x", F, [3])],
        [helper.make_tensor_value_info("y", F, None)],
        [numpy_helper.from_array(np.array(0, np.float32), "zero")],
    )
    result = ox.run(model, {"x": np.array([1, 2, 3], np.float32)}, segment_nodes=1)
    assert sorted(result.not_captured) == ["inner", "inner2"]
    np.testing.assert_array_equal(result.outputs["y"], [-1, -2, -3])  # x read from outside


def test_external_data_is_read_in_place_and_nothing_is_written(tmp_path):
    model = mlp()
    path = tmp_path / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, location="w.bin", size_threshold=0)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = ox.run(path, {"x": np.ones((3, 8), np.float32)})
    assert result.outputs["y"].shape == (3, 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_external_data_escaping_the_directory_is_refused(tmp_path):
    model = mlp()
    model.graph.initializer[0].ClearField("raw_data")
    model.graph.initializer[0].ClearField("float_data")
    model.graph.initializer[0].data_location = TensorProto.EXTERNAL
    entry = model.graph.initializer[0].external_data.add()
    entry.key, entry.value = "location", "../secret.bin"
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(ox.UnsafePathError, match="'..'"):
        ox.run(path)


def _fp16_copy(model):
    """Every float initializer, input and output in float16 (as a converter writes it)."""
    half = onnx.ModelProto()
    half.CopyFrom(model)
    for init in half.graph.initializer:
        init.CopyFrom(
            numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name)
        )
    for value in list(half.graph.input) + list(half.graph.output):
        value.type.tensor_type.elem_type = H
    return half


def test_compare_fp32_with_its_fp16_copy_matches_numpy():
    model = mlp()
    x = np.random.default_rng(3).standard_normal((3, 8)).astype(np.float32)
    result = ox.compare(model, _fp16_copy(model), {"x": x})
    assert [t.a for t in result.tensors] == ["h", "t", "y"]
    reference = ox.run(model, {"x": x}, keep=["h", "t", "y"]).values
    half = ox.run(_fp16_copy(model), {"x": x.astype(np.float16)}, keep=["h", "t", "y"]).values
    for t in result.tensors:
        a, b = reference[t.a].astype(np.float64), half[t.b].astype(np.float64)
        d = np.abs(b - a)
        assert t.max_abs == pytest.approx(d.max())
        assert t.max_rel == pytest.approx((d[a != 0] / np.abs(a[a != 0])).max())
        cosine = (a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum())
        assert t.cosine == pytest.approx(cosine)
        assert t.snr_db == pytest.approx(10 * np.log10((a * a).sum() / (d * d).sum()))
        assert t.within == bool(np.allclose(b, a, atol=1e-4, rtol=1e-3))
    assert result.first_beyond is result.tensors[0]  # fp16 rounding: beyond 1e-4 at once
    assert json.loads(result.to_json())["first_beyond"] == "h"
    loose = ox.compare(model, _fp16_copy(model), {"x": x}, atol=0.1, rtol=0.05)
    assert loose.ok


def test_compare_matches_renamed_tensors_through_the_node_match():
    model = mlp()
    renamed = onnx.ModelProto()
    renamed.CopyFrom(model)
    for node in renamed.graph.node:
        node.name = "other_" + node.name
        node.input[:] = [{"h": "H", "t": "T"}.get(n, n) for n in node.input]
        node.output[:] = [{"h": "H", "t": "T"}.get(n, n) for n in node.output]
    result = ox.compare(model, renamed)
    assert [(t.a, t.b) for t in result.tensors] == [("h", "H"), ("t", "T"), ("y", "y")]
    assert all(t.max_abs == 0 and t.within for t in result.tensors)


def test_without_onnxruntime_the_error_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def blocked(name, *args, **kwargs):
        if name == "onnxruntime" or name.startswith("onnxruntime."):
            raise ImportError("No module named 'onnxruntime'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "onnxruntime", raising=False)
    monkeypatch.setattr(builtins, "__import__", blocked)
    with pytest.raises(ox.OnnxRuntimeMissingError, match=r"pip install onnx_explorer\[run\]"):
        ox.run(mlp())
    assert issubclass(ox.OnnxRuntimeMissingError, ImportError)


def test_cli_exit_codes(tmp_path, capsys):
    good, bad, half = tmp_path / "good.onnx", tmp_path / "nan.onnx", tmp_path / "half.onnx"
    onnx.save(mlp(), good)
    onnx.save(nan_model(), bad)
    onnx.save(_fp16_copy(mlp()), half)
    assert main(["run", str(good)]) == 0
    feeds = tmp_path / "x.npz"
    np.savez(feeds, x=np.array([[1, -1, 2, 0]], np.float32))
    assert main(["run", str(bad), "--feeds", str(feeds), "--dims", "batch=1"]) == 1
    assert "divide_by_itself" in capsys.readouterr().out
    assert main(["run", str(bad), "--dims", "batch=3", "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["tensors"][0]["name"] == "r"
    assert main(["run", str(good), "--compare", str(half)]) == 1
    assert "beyond tolerance" in capsys.readouterr().out
    assert main(["run", str(good), "--compare", str(half), "--atol", "0.1", "--rtol", "0.1"]) == 0
    assert main(["run", str(good), "--feeds", str(feeds)]) == 2  # wrong feeds: an error
    assert "expected" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.onnx")]) == 2


def test_explorer_run_shows_the_selected_nodes_activations_and_jumps_to_the_nan(tmp_path):
    path = tmp_path / "nan.onnx"
    onnx.save(nan_model(), path)
    ex = ox.explore(path)
    assert ex.jump_to_problem() is None  # nothing run yet
    result = ex.run({"x": np.array([[1, -1, 2, 0]], np.float32)}, progress=False)
    panel = ex._activation_panel
    assert result.first_nonfinite == "divide_by_itself"
    assert ex.jump_to_problem() == "divide_by_itself"
    assert ex.selected_name == "divide_by_itself"
    assert "2 NaN" in panel.details.value and "<svg" in panel.details.value
    ex.select("relu")
    assert "float32 ⟨1×4⟩" in panel.details.value and "NaN" in panel.details.value
    assert panel.overlay_values("non-finite") == {"relu": 0, "divide_by_itself": 2, "add": 2}


def test_explorer_compare_shows_both_sides_and_the_difference(tmp_path):
    path, half = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(mlp(), path)
    onnx.save(_fp16_copy(mlp()), half)
    ex = ox.explore(path)
    result = ex.compare(half, progress=False)
    panel = ex._activation_panel
    assert ex.jump_to_problem() == ex.selected_name == result.first_beyond.node == "fc1"
    html = panel.details.value
    assert "h vs h" in html and "a: h" in html and "b: h" in html and "b − a" in html
    assert set(panel.overlay_values("error vs other")) == {"fc1", "act", "fc2"}


def test_compare_reports_a_tensor_that_overflows_to_inf_on_one_side():
    # Regression: an infinite difference made the SNR a math domain error.
    a = np.array([1.0, 300.0], np.float32)
    b = np.array([1.0, np.inf], np.float32)
    from onnx_explorer.runs._compare import compare_values

    found = compare_values("t", "t", "n", a, b, 1e-4, 1e-3)
    assert found.max_abs == np.inf and found.snr_db == -np.inf and not found.within


_RSS_AFTER_RUNS = r"""
import gc, sys
import ipywidgets
import numpy as np
from onnx import TensorProto, helper
import onnx_explorer

def rss_mb():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) >> 10 for l in status if l.startswith("VmRSS"))

n = 16 << 20  # 64 MB per activation
nodes = [helper.make_node("Neg" if i % 2 else "Relu", [f"t{i}"], [f"t{i + 1}"]) for i in range(6)]
value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [n])
graph = helper.make_graph(nodes, "chain", [value("t0")], [value("t6")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
x = {"t0": np.ones(n, np.float32)}
tiny = {"t0": np.ones(1, np.float32)}
small = helper.make_model(helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", 1, [1])],
    [helper.make_tensor_value_info("t6", 1, [1])]), opset_imports=[helper.make_opsetid("", 17)])
onnx_explorer.run(small, tiny)  # onnxruntime loaded and initialised
before = rss_mb()
if sys.argv[1] == "interrupt":  # Ctrl-C at the fourth value; IPython keeps the error
    from onnx_explorer.runs import _run
    real, seen = _run.Collector.add_segment, []

    def add_segment(self, produced):  # (a segment's values are handed over at once)
        for one in produced:
            seen.append(1)
            if len(seen) == 4:
                raise KeyboardInterrupt
        real(self, produced)

    _run.Collector.add_segment = add_segment
    try:
        onnx_explorer.run(model, x, segment_nodes=2)
    except KeyboardInterrupt as exc:
        kept = exc  # with its traceback, as sys.last_value
else:
    for _ in range(2):
        result = onnx_explorer.run(model, x, segment_nodes=2)
        del result
gc.collect()
print(rss_mb() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("ending", ["done", "interrupt"])
def test_a_run_hands_its_peak_memory_back(ending):
    """Six 64 MB activations, two at a time: after the run, onnxruntime's arena has given
    its chunks back (it kept 300 MB of them: the values were views of the arena, still
    held when it was asked to shrink, and its first region was the first segment's), and
    so has a run stopped by Ctrl-C whose error is kept (beside the value being added)."""
    done = subprocess.run(
        [sys.executable, "-c", _RSS_AFTER_RUNS, ending],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    grown = int(done.stdout.split()[-1])
    assert grown < (64 if ending == "done" else 64 + 64), f"{grown} MB still held after the run"


def test_a_sequence_value_is_recorded_and_its_items_flow_on():
    """SequenceConstruct → SequenceAt: the sequence is listed (no statistics: it is not a
    tensor) and the tensor taken out of it is summarised."""
    nodes = [
        helper.make_node("SequenceConstruct", ["x", "x"], ["seq"], name="pack"),
        helper.make_node("SequenceAt", ["seq", "one"], ["item"], name="take"),
        helper.make_node("Relu", ["item"], ["y"], name="relu"),
    ]
    sequence = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, [3])
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3]), sequence],
        [numpy_helper.from_array(np.array(1, np.int64), "one")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    result = ox.run(model, {"x": np.array([-1.0, 0.0, 2.0], np.float32)})
    assert result.tensors["seq"].dtype == "sequence" and result.tensors["seq"].stats is None
    assert result.tensors["item"].stats.min == -1.0
    assert result.tensors["y"].stats.zeros == pytest.approx(2 / 3)
    # the result's arrays are its own, not views pinning onnxruntime's arena
    assert all(item.flags.owndata for item in result.outputs["seq"])
    assert result.outputs["y"].flags.owndata


def _scaled(factor: float, n: int) -> onnx.ModelProto:
    """y = x · factor on float32[n]."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "k"], ["y"], name="scale")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])],
        [numpy_helper.from_array(np.array(factor, np.float32), "k")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_the_difference_histogram_is_made_block_by_block():
    """compare(bins=...) bins b − a exactly as numpy would (float64, min to max), without
    holding a float64 copy of the whole difference (8 MB for these 1M values)."""
    import tracemalloc

    n = 1 << 20
    x = {"x": np.random.default_rng(3).standard_normal(n).astype(np.float32)}
    tracemalloc.start()
    found = ox.compare(_scaled(1.0, n), _scaled(1.001, n), x, bins=16)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    got = found.differences["y"]
    want, edges = np.histogram((x["x"] * np.float32(1.001)).astype(np.float64) - x["x"], 16)
    assert got.counts.tolist() == want.tolist() and got.total == n
    np.testing.assert_allclose(got.edges, edges)
    assert peak < 6 << 20, f"{peak >> 20} MB"


# -- real-model habits: masks, Dropout, dynamic dims -------------------------------------
def _masked_softmax():
    """scores + Where(mask, 0, -inf) → Softmax: the −inf fill is meant, the output finite."""
    neg_inf = numpy_helper.from_array(np.array(-np.inf, np.float32), "neg_inf")
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    fill = numpy_helper.from_array(np.full((1, 4), -np.inf, np.float32))
    return _model(
        [
            helper.make_node("Constant", [], ["fill"], value=fill, name="mask_fill"),
            helper.make_node("Where", ["mask", "zero", "neg_inf"], ["bias"], name="mask_where"),
            helper.make_node("Add", ["scores", "bias"], ["masked"], name="add_mask"),
            helper.make_node("Add", ["masked", "fill"], ["also_masked"], name="add_fill"),
            helper.make_node("Max", ["masked", "also_masked"], ["m"], name="max"),
            helper.make_node("Softmax", ["m"], ["probs"], name="softmax"),
        ],
        [
            helper.make_tensor_value_info("scores", F, [1, 4]),
            helper.make_tensor_value_info("mask", TensorProto.BOOL, [1, 4]),
        ],
        [helper.make_tensor_value_info("probs", F, None)],
        [neg_inf, zero],
    )


def test_a_mask_filled_with_minus_inf_is_not_a_problem():
    feeds = {"scores": np.ones((1, 4), np.float32), "mask": np.array([[1, 1, 0, 0]], bool)}
    result = ox.run(_masked_softmax(), feeds)
    assert result.first_nonfinite is not None  # the −inf is there, passed on
    assert result.first_problem is None
    np.testing.assert_allclose(result.outputs["probs"], [[0.5, 0.5, 0, 0]])
    assert "no NaN/Inf made" in repr(result)


def test_a_node_that_makes_nan_from_finite_values_is_the_problem():
    result = ox.run(nan_model(), {"x": np.array([[-1, 2, -3, 4]], np.float32)})
    assert result.first_problem == "divide_by_itself"
    assert result.problems == ["divide_by_itself"]  # add only passes the NaN on


def test_cli_exits_0_for_a_healthy_masked_model(tmp_path, capsys):
    path = tmp_path / "masked.onnx"
    onnx.save(_masked_softmax(), path)
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, scores=np.ones((1, 4), np.float32), mask=np.array([[1, 0, 1, 0]], bool))
    assert main(["run", str(path), "--feeds", str(feeds)]) == 0
    assert "no NaN/Inf made" in capsys.readouterr().out


def test_training_mode_dropout_runs_in_inference_mode_and_says_so():
    ratio = numpy_helper.from_array(np.array(0.5, np.float32), "ratio")
    training = numpy_helper.from_array(np.array(True), "training")
    proto = _model(
        [helper.make_node("Dropout", ["x", "ratio", "training"], ["y"], name="drop")],
        [helper.make_tensor_value_info("x", F, [2, 64])],
        [helper.make_tensor_value_info("y", F, None)],
        [ratio, training],
    )
    x = np.ones((2, 64), np.float32)
    result = ox.run(proto, {"x": x})
    np.testing.assert_array_equal(result.outputs["y"], x)  # nothing dropped, nothing scaled
    assert any("Dropout" in note and "inference mode" in note for note in result.notes)
    assert len(proto.graph.node[0].input) == 3  # the caller's proto is untouched
    comparison = ox.compare(proto, proto, {"x": x})
    assert comparison.ok


def test_minus_one_dims_are_dynamic_not_negative_sizes():
    proto = _model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", F, [-1, 3, "?", "?"])],
        [helper.make_tensor_value_info("y", F, None)],
    )
    result = ox.run(proto)
    assert result.feeds["x"].shape == (1, 3, 224, 224)
    assert "x.0=1 (batch)" in result.assumed and "x.3=224 (spatial)" in result.assumed
    given = ox.run(proto, {"x": np.ones((2, 3, 48, 192), np.float32)})  # "?" ≠ "?"
    assert given.outputs["y"].shape == (2, 3, 48, 192) and given.assumed == ""


def test_a_feed_error_prints_one_line_per_problem_in_the_cli(tmp_path, capsys):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp(), path)
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, x=np.ones((3, 5), np.float32))
    assert main(["run", str(path), "--feeds", str(feeds)]) == 2
    err = capsys.readouterr().err
    assert "\\n" not in err and "\n  x: expected x: float32[3,8]" in err


def test_a_failed_run_in_the_explorer_shows_the_reason_the_feeds_and_a_hint():
    # x's symbolic length is assumed 128 (a sequence); the Reshape to [5, 5] then fails.
    shape = numpy_helper.from_array(np.array([5, 5], np.int64), "shape")
    proto = _model(
        [helper.make_node("Relu", ["x"], ["a"], name="first"),
         helper.make_node("Reshape", ["a", "shape"], ["b"], name="bad_reshape")],
        [helper.make_tensor_value_info("x", F, ["batch", "length"])],
        [helper.make_tensor_value_info("b", F, None)],
        [shape],
    )  # fmt: skip
    ex = ox.explore(proto)
    ex.run(progress=False)
    header = ex._activation_panel.header.value
    assert "bad_reshape" in header
    assert "generated inputs: x float32[1, 128]" in header
    assert "length=128 (sequence)" in header and "dims=" in header
    ex2 = ox.explore(proto, dims={"length": 25})
    result = ex2.run(progress=False)
    assert result.failure is None and result.feeds["x"].shape == (1, 25)


def test_first_problem_with_a_partial_capture_reads_constants_and_judges_no_unknown_input():
    neg_inf = numpy_helper.from_array(np.array([-np.inf], np.float32))
    proto = _model(
        [
            helper.make_node("Constant", [], ["neginf"], value=neg_inf),
            helper.make_node("Greater", ["X", "zero"], ["cond"]),
            helper.make_node("Where", ["cond", "X", "neginf"], ["masked"], name="where"),
            helper.make_node("Relu", ["masked"], ["Y"], name="relu"),
        ],
        [helper.make_tensor_value_info("X", F, [4])],
        [helper.make_tensor_value_info("Y", F, [4])],
        [numpy_helper.from_array(np.array(0, np.float32), "zero")],
    )
    feeds = {"X": np.array([1, -1, 2, -2], np.float32)}
    for capture in ("all", ["masked"], ["masked", "Y"]):
        assert ox.run(proto, feeds, capture=capture).first_problem is None, capture


def test_a_run_offers_its_colourings_in_the_explorers_one_dropdown():
    ex = ox.explore(nan_model())
    ex.run({"x": np.array([[1, -1, 2, 0]], np.float32)}, progress=False)
    options = [value for _, value in ex.overlay_picker.options]
    assert "max abs activation" in options and "non-finite" in options
    assert ex.overlay_picker.value == "non-finite"  # the run found a NaN: painted with it
    ex.overlay_picker.value = "max abs activation"
    assert ex.node_list.sort_box.description == "sort by max abs activation"
    assert not any(isinstance(w, ipywidgets.Dropdown) for w in _all(ex._activation_panel))


def _all(widget):
    found, stack = [], [widget]
    while stack:
        w = stack.pop()
        found.append(w)
        stack.extend(getattr(w, "children", ()))
    return found


def test_a_slow_arena_shrink_neither_holds_the_run_nor_hangs_the_next(monkeypatch):
    """After a run that made very many values, onnxruntime takes a while to free its arena
    (131,072 rows split into a sequence: 23 s). The run returns without waiting for it; a
    run started meanwhile waits for it within its own time limit, and says why when the
    limit passes first."""
    import threading
    import time

    from onnx_explorer.runs import RunTimeoutError, _ort

    model = mlp()
    ox.run(model)  # the shared arena exists from here on
    if not _ort._shared_arena:
        pytest.skip("the host application registered its own arena")
    release = threading.Event()
    real = _ort._tiny_run

    def slow_shrink(options):  # stands in for onnxruntime freeing 131,072 regions
        release.wait(30)
        real(options)

    monkeypatch.setattr(_ort, "_tiny_run", slow_shrink)
    start = time.monotonic()
    ox.run(model)
    assert time.monotonic() - start < _ort.SHRINK_WAIT + 5  # did not wait for the shrink
    with pytest.raises(RunTimeoutError, match="still handing back the memory"):
        ox.run(model, timeout=3)
    release.set()
    assert _ort.arena_settled(10)
    ox.run(model, timeout=30)  # the arena settled: runs go on
