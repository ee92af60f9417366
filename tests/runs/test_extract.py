"""``onnx_explorer.extract``, ``Explorer.extract`` and ``onnx-explorer extract``.

The reference is the full model: ``onnx_explorer.run(..., keep=every value)`` captures its
intermediate values; a submodel fed the captured values at its inputs must give the captured
values at its outputs bit for bit. onnxruntime runs the submodel with its graph
optimizations off: what it fuses (a BatchNormalization folded into the Conv before it, NCHWc
layouts) depends on which values are graph outputs, and in the capture every value is one, so
a fused part gives the same numbers to ~1e-6 but not the same bits (checked apart, within
tolerance, at the default level).
"""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest
from builders import mlp, with_external_data
from locations import CORPUS, DATA
from onnx import TensorProto, helper, numpy_helper

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.errors import ExternalDataError, ModelFormatError
from onnx_explorer.runs import SaveRefusedError, Submodel

ort = pytest.importorskip("onnxruntime")

F = TensorProto.FLOAT


def _session(model: onnx.ModelProto | str, *, level: str = "off") -> object:
    options = ort.SessionOptions()
    if level == "off":
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model if isinstance(model, str) else model.SerializeToString()
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def _every_value(proto: onnx.ModelProto) -> list[str]:
    return [name for node in proto.graph.node for name in node.output if name]


def _captured(model: object, feeds: dict[str, np.ndarray], proto: onnx.ModelProto) -> dict:
    """Every intermediate value of one full run (``onnx_explorer.run``'s capture)."""
    values = dict(feeds)
    values.update(ox.run(model, feeds, keep=_every_value(proto)).values)
    return values


def _run_sub(sub: Submodel, values: dict, *, level: str = "off") -> dict[str, np.ndarray]:
    """The submodel's outputs from onnxruntime, fed the captured values at its inputs
    (its external weights read from the source's directory, in place)."""
    options = ort.SessionOptions()
    if level == "off":
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if sub.base_dir is not None:
        options.add_session_config_entry(
            "session.model_external_initializers_file_folder_path", str(sub.base_dir)
        )
    session = ort.InferenceSession(
        sub.proto.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, {n: values[n] for n in sub.inputs})))


def _assert_bitwise(outputs: dict[str, np.ndarray], expected: dict) -> None:
    assert outputs
    for name, value in outputs.items():
        reference = np.asarray(expected[name])
        assert value.dtype == reference.dtype and value.shape == reference.shape, name
        assert value.tobytes() == reference.tobytes(), f"{name} differs from the full run"


def branchy() -> onnx.ModelProto:
    """Two scopes, a residual, a Constant weight, a local function and an unused one."""
    rng = np.random.default_rng(3)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), "/a/W")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), "/b/W")
    scale = numpy_helper.from_array(np.full((16,), 0.5, np.float32), "scale")
    function = helper.make_function(
        "local", "Swish", ["v"], ["out"],
        [helper.make_node("Sigmoid", ["v"], ["s"]), helper.make_node("Mul", ["v", "s"], ["out"])],
        opset_imports=[helper.make_opsetid("", 17)],
    )  # fmt: skip
    unused = helper.make_function(
        "local", "Unused", ["v"], ["out"], [helper.make_node("Neg", ["v"], ["out"])],
        opset_imports=[helper.make_opsetid("", 17)],
    )  # fmt: skip
    nodes = [
        helper.make_node("MatMul", ["x", "/a/W"], ["a0"], name="/a/MatMul"),
        helper.make_node("Swish", ["a0"], ["a1"], name="/a/Swish", domain="local"),
        helper.make_node("Constant", [], ["c"], name="/a/Constant", value=scale),
        helper.make_node("Mul", ["a1", "c"], ["a2"], name="/a/Mul"),
        helper.make_node("MatMul", ["a2", "/b/W"], ["b0"], name="/b/MatMul"),
        helper.make_node("Tanh", ["b0"], ["b1"], name="/b/Tanh"),
        helper.make_node("Add", ["b1", "a2"], ["b2"], name="/b/Add"),
        helper.make_node("Softmax", ["b2"], ["y"], name="/head/Softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "branchy", [helper.make_tensor_value_info("x", F, ["batch", 16])],
        [helper.make_tensor_value_info("y", F, ["batch", 16])], [w1, w2],
    )  # fmt: skip
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[function, unused],
    )
    model.ir_version = 8
    return model


@pytest.fixture
def x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((2, 16)).astype(np.float32)


def test_inputs_and_outputs_cut_exactly_the_nodes_between(x):
    model = branchy()
    values = _captured(model, {"x": x}, model)
    sub = ox.extract(model, inputs=["a2"], outputs=["b2"], dims={"batch": 2})
    assert sub.nodes == ["/b/MatMul", "/b/Tanh", "/b/Add"]
    assert sub.inputs == ["a2"] and sub.outputs == ["b2"]
    assert [t.name for t in sub.proto.graph.initializer] == ["/b/W"]
    assert not sub.proto.functions  # no node of the cut calls one
    onnx.checker.check_model(sub.proto, full_check=True)
    _assert_bitwise(_run_sub(sub, values), values)


def test_a_scope_brings_its_constants_functions_and_opsets(x):
    model = branchy()
    values = _captured(model, {"x": x}, model)
    sub = ox.extract(model, scope="/a", dims={"batch": 2})
    assert sub.nodes == ["/a/MatMul", "/a/Swish", "/a/Constant", "/a/Mul"]
    assert sub.inputs == ["x"]
    assert sub.outputs == ["a2"]  # read by /b (twice): the one value leaving the scope
    assert [f.name for f in sub.proto.functions] == ["Swish"]  # not the unused one
    assert {o.domain: o.version for o in sub.proto.opset_import} == {"": 17, "local": 1}
    onnx.checker.check_model(sub.proto, full_check=True)
    _assert_bitwise(_run_sub(sub, values), values)


def test_nodes_pull_in_the_constants_they_read_and_every_value_leaving(x):
    model = branchy()
    values = _captured(model, {"x": x}, model)
    sub = ox.extract(model, nodes=["/a/Mul", "/b/MatMul"], dims={"batch": 2})
    assert sub.nodes == ["/a/Constant", "/a/Mul", "/b/MatMul"]  # execution order
    assert sub.inputs == ["a1"]
    assert sub.outputs == ["a2", "b0"]  # a2 is also read by /b/Add, outside
    _assert_bitwise(_run_sub(sub, values), values)


def test_inputs_are_typed_at_the_bound_sizes():
    model = ox.load(branchy())
    model.bind(dims={"batch": 5})
    sub = ox.extract(model, inputs=["a1"], outputs=["b2"])
    typed = {v.name: v.type.tensor_type for v in (*sub.proto.graph.input, *sub.proto.graph.output)}
    for name in ("a1", "b2"):
        assert typed[name].elem_type == F
        assert [d.dim_value for d in typed[name].shape.dim] == [5, 16]
    # dims= of the call wins over the bound sizes
    again = ox.extract(model, inputs=["a1"], outputs=["b2"], dims={"batch": 7})
    assert again.proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 7


def test_a_graph_input_the_outputs_need_is_added_and_said():
    sub = ox.extract(branchy(), inputs=["a2"], outputs=["y"])
    assert sub.inputs == ["a2"]
    sub = ox.extract(branchy(), inputs=["b1"], outputs=["b2"])  # b2 = b1 + a2, a2 from x
    assert sub.inputs == ["b1", "x"]
    assert sub.nodes == ["/a/MatMul", "/a/Swish", "/a/Constant", "/a/Mul", "/b/Add"]
    assert any("inputs added" in note and "'x'" in note for note in sub.notes)


def test_unknown_names_and_wrong_calls_are_clear_errors():
    with pytest.raises(KeyError, match="no value named 'nope'"):
        ox.extract(branchy(), inputs=["a1"], outputs=["nope"])
    with pytest.raises(KeyError, match="no node named"):
        ox.extract(branchy(), nodes=["/a/Nope"])
    with pytest.raises(KeyError, match="no scope"):
        ox.extract(branchy(), scope="/nowhere")
    with pytest.raises(TypeError, match="one of"):
        ox.extract(branchy(), outputs=["y"], nodes=["/a/Mul"])
    with pytest.raises(TypeError, match="needs outputs"):
        ox.extract(branchy(), inputs=["a1"])


def test_only_onnx_models_can_be_extracted():
    with pytest.raises(ModelFormatError, match="only ONNX models can be extracted"):
        ox.extract(DATA / "graphdef" / "cnn_frozen.pb", nodes=["x"])


# -- external data: referenced, never copied, never overwritten -------------------
@pytest.fixture
def external(tmp_path):
    path, arrays = with_external_data(tmp_path / "model")
    return path, arrays


def _files(folder):
    return sorted(p.name for p in folder.iterdir() if p.is_file())


def test_external_weights_stay_referenced_and_the_saved_model_runs(external, tmp_path):
    path, arrays = external
    weights = path.parent / "weights.bin"
    before = (path.read_bytes(), weights.read_bytes(), os.stat(path).st_mtime_ns)
    feeds = {"x": np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)}
    values = _captured(path, feeds, onnx.load(path, load_external_data=False))
    sub = ox.extract(path, inputs=["h1"], outputs=["y"], dims={"batch": 3})
    assert sub.base_dir == path.parent.resolve()
    for saved, location in (
        (sub.save(tmp_path / "model" / "sub.onnx"), "weights.bin"),  # next to the source
        (sub.save(tmp_path / "sub.onnx"), "model/weights.bin"),  # a directory above it
    ):
        loaded = onnx.load(saved, load_external_data=False)
        (weight,) = loaded.graph.initializer
        entries = {e.key: e.value for e in weight.external_data}
        assert entries["location"] == location and not weight.raw_data
        assert saved.stat().st_size < 1024  # the graph only
        onnx.checker.check_model(str(saved))
        whole = onnx.load(saved)  # loads its weights through the rewritten location
        np.testing.assert_array_equal(numpy_helper.to_array(whole.graph.initializer[0]),
                                      arrays["/layer2/W"])  # fmt: skip
        outputs = _session(str(saved)).run(["y"], {"h1": values["h1"]})
        _assert_bitwise({"y": outputs[0]}, values)
    assert _files(tmp_path) == ["sub.onnx"]  # its directory holds no copy of the weights
    assert _files(tmp_path / "model") == ["model.onnx", "sub.onnx", "weights.bin"]
    assert (path.read_bytes(), weights.read_bytes(), os.stat(path).st_mtime_ns) == before


def test_saving_never_overwrites_the_source_or_its_data(external, tmp_path):
    path, _ = external
    before = path.read_bytes(), (path.parent / "weights.bin").read_bytes()
    sub = ox.extract(path, outputs=["h2"])
    for target in (path, path.parent / "weights.bin"):
        with pytest.raises(SaveRefusedError, match="source model or one of its data files"):
            sub.save(target, overwrite=True)
    link = tmp_path / "model" / "link.onnx"
    link.symlink_to(path)
    with pytest.raises(SaveRefusedError):
        sub.save(link, overwrite=True)
    sub.save(tmp_path / "model" / "a.onnx")
    with pytest.raises(SaveRefusedError, match="exists"):
        sub.save(tmp_path / "model" / "a.onnx")
    sub.save(tmp_path / "model" / "a.onnx", overwrite=True)
    assert (path.read_bytes(), (path.parent / "weights.bin").read_bytes()) == before


def test_a_directory_the_data_is_not_in_is_refused_unless_weights_are_copied(external, tmp_path):
    path, _ = external
    elsewhere = tmp_path / "elsewhere" / "sub.onnx"
    with pytest.raises(ExternalDataError, match="copy_weights=True"):
        ox.extract(path, outputs=["y"]).save(elsewhere)
    sub = ox.extract(path, outputs=["y"], copy_weights=True)
    assert sub.base_dir is None
    saved = sub.save(elsewhere)
    loaded = onnx.load(saved)
    assert all(t.data_location == TensorProto.DEFAULT for t in loaded.graph.initializer)
    feeds = {"x": np.ones((2, 4), np.float32)}
    np.testing.assert_array_equal(
        _session(str(saved)).run(["y"], feeds)[0], ox.run(path, feeds).outputs["y"]
    )


def test_external_data_escaping_the_directory_is_refused_before_reading(tmp_path):
    from builders import set_external

    model = mlp()
    set_external(model.graph.initializer[0], location="../outside.bin", offset="0", length="64")
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(ExternalDataError):
        ox.extract(path, outputs=["y"], copy_weights=True)


# -- a real model ---------------------------------------------------------------------
def test_a_real_model_cut_in_the_middle_gives_its_values_bit_for_bit():
    path = CORPUS / "ppocr_mobile_v2_cls.onnx"  # paddle2onnx: nameless nodes, Constant weights
    manifest = {e["file"]: e for e in json.loads((CORPUS / "MANIFEST.json").read_text())}
    shape = manifest[path.name]["working_feeds"]["x"]["shape"]
    feeds = {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
    model = ox.load(path)
    model.bind(input_shapes={"x": tuple(shape)})
    values = _captured(model, feeds, model.support.runtime_model(model)[0])
    computing = [n.name for n in model.graph.nodes if n.op_type != "Constant"]
    middle = computing[len(computing) // 3 : len(computing) // 3 + 40]
    sub = ox.extract(model, nodes=middle)
    ops = {name: model.graph.node(name).op_type for name in sub.nodes}
    assert sorted(n for n in sub.nodes if ops[n] != "Constant") == sorted(middle)
    assert all(ops[n] == "Constant" for n in sub.nodes if n not in middle)  # their weights
    for info in sub.proto.graph.input:  # typed at the bound size, as the run saw them
        dims = [d.dim_value for d in info.type.tensor_type.shape.dim]
        assert dims == list(values[info.name].shape)
    onnx.checker.check_model(sub.proto, full_check=True)
    _assert_bitwise(_run_sub(sub, values), values)
    for name, value in _run_sub(sub, values, level="all").items():
        np.testing.assert_allclose(value, values[name], rtol=1e-5, atol=1e-5)
    every = sub.run({n: values[n] for n in sub.inputs}, every_value=True)
    assert set(every) >= set(sub.outputs) | {o for n in middle for o in model.graph.node(n).outputs}


def test_a_real_model_if_node_reads_its_outer_values():
    path = CORPUS / "silero_vad_16k_op15.onnx"
    rng = np.random.default_rng(0)
    feeds = {
        "input": rng.standard_normal((1, 512)).astype(np.float32),
        "state": np.zeros((2, 1, 128), np.float32),
        "sr": np.array(16000, np.int64),
    }
    model = ox.load(path)
    values = _captured(model, feeds, model.support.runtime_model(model)[0])
    (first_if, *_) = [n.name for n in model.graph.nodes if n.op_type == "If"]
    sub = ox.extract(model, nodes=[first_if])
    assert len(sub.inputs) >= 2  # the condition and what the branches read from outside
    _assert_bitwise(_run_sub(sub, values), values)


# -- the explorer and the command line --------------------------------------------------
def test_the_explorer_extracts_the_selection_a_scope_or_a_cut(x):
    pytest.importorskip("ipywidgets")
    ex = ox.explore(branchy())
    with pytest.raises(ValueError, match="no node is selected"):
        ex.extract()
    ex.select("/b/Tanh")
    assert ex.extract().nodes == ["/b/Tanh"]
    assert ex.extract("/a").nodes == ["/a/MatMul", "/a/Swish", "/a/Constant", "/a/Mul"]
    assert ex.extract(["/b/Tanh", "/b/Add"]).outputs == ["b2"]
    assert ex.extract((["a2"], ["b0"])).nodes == ["/b/MatMul"]
    assert ex.extract(inputs=["b0"], outputs=["b1"]).nodes == ["/b/Tanh"]
    ex.close()


def test_cli_extract_writes_a_new_file(external, tmp_path, capsys):
    path, _ = external
    out = tmp_path / "model" / "cut.onnx"
    code = main(["extract", str(path), "--inputs", "h1", "--outputs", "y", "-o", str(out)])
    assert code == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert [n.op_type for n in onnx.load(out, load_external_data=False).graph.node] == [
        "Relu",
        "MatMul",
    ]
    assert main(["extract", str(path), "--outputs", "y", "-o", str(path), "--overwrite"]) == 1
    assert "source model" in capsys.readouterr().err
    code = main(["extract", str(path), "--scope", "/layer1", "-o", str(out), "--overwrite",
                 "--json"])  # fmt: skip
    assert code == 0
    info = json.loads(capsys.readouterr().out)
    assert info["nodes"] == ["/layer1/MatMul", "/layer1/Add", "/layer1/Relu"]
    assert info["outputs"] == ["h2"]
