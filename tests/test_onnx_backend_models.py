"""The models onnx ships for its own backend tests (``onnx/backend/test/data``: PyTorch
exports at opsets 6-9, IR 3 files listing initializers as inputs, sequence models, string
ops, a training Gradient op, and eight CNNs whose weights are made by ConstantOfShape),
checked against references that are not ours: each model's recorded outputs, and the
shapes onnxruntime itself produces. Nothing is downloaded: they come with onnx."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from corpus_reference import reference_macs
from onnx import numpy_helper

import onnx_explorer as ox
from onnx_explorer.errors import ExplorerError

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
MODELS = sorted(DATA.glob("*/*/model.onnx"))
LIGHT = sorted(DATA.glob("light/*.onnx"))  # a reference output beside each, no inputs


def _id(path: Path) -> str:
    return path.parent.name if path.name == "model.onnx" else path.stem


def _read_tensor(path: Path) -> np.ndarray:
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def _recorded(path: Path) -> tuple[dict[str, np.ndarray], list[np.ndarray]] | None:
    """The feeds and outputs recorded beside a model, or None when some are not tensors."""
    folder = path.parent / "test_data_set_0"
    proto = onnx.load(path, load_external_data=False)
    stored = {t.name for t in proto.graph.initializer}
    inputs = [v.name for v in proto.graph.input if v.name not in stored]

    def numbered(kind: str) -> list[Path]:
        return sorted(folder.glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[-1]))

    try:
        feeds = {name: _read_tensor(p) for name, p in zip(inputs, numbered("input"), strict=True)}
        outputs = [_read_tensor(p) for p in numbered("output")]
    except (ValueError, onnx.onnx_cpp2py_export.checker.ValidationError, TypeError):
        return None  # a sequence or map, recorded as another proto
    return feeds, outputs


def test_the_backend_models_are_there():
    assert len(MODELS) >= 100 and len(LIGHT) >= 8  # a moved folder would pass everything


@pytest.mark.parametrize("path", MODELS + LIGHT, ids=_id)
def test_every_model_opens_draws_and_is_measured(path):
    model = ox.load(path)
    for graph in model.graphs():
        for node in graph.nodes:
            assert isinstance(node.name, str) and node.name
            dict(node.attributes)
        dot = graph.to_dot()
        assert "->" in dot or not graph.nodes  # a drawing with its edges, whatever the op
    result = ox.metrics(model)
    assert len(result.rows) == len(model.graph.nodes)
    for weight in model.weights():
        weight.tensor.stats()


def _runs_in_onnxruntime(path: Path) -> bool:
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception:  # any refusal: opset 6 kernels, locales, training ops
        return False
    return True


@pytest.mark.parametrize("path", [p for p in MODELS if (p.parent / "test_data_set_0").is_dir()],
                         ids=_id)  # fmt: skip
def test_run_gives_the_recorded_outputs(path):
    recorded = _recorded(path)
    if recorded is None:
        pytest.skip("non-tensor feeds or outputs")
    feeds, expected = recorded
    if not _runs_in_onnxruntime(path):
        with pytest.raises(ExplorerError):  # refused with our error, naming the node
            ox.run(ox.load(path), feeds)
        return
    result = ox.run(ox.load(path), feeds)
    outputs = [v.name for v in onnx.load(path, load_external_data=False).graph.output]
    for name, want in zip(outputs, expected, strict=True):
        got = np.asarray(result.outputs[name])
        assert got.shape == want.shape, name
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("path", LIGHT, ids=_id)
def test_macs_of_the_cnns_match_onnxruntimes_observed_shapes(path):
    pytest.importorskip("onnxruntime")
    proto = onnx.load(path)
    stored = {t.name for t in proto.graph.initializer}
    (data,) = [v for v in proto.graph.input if v.name not in stored]
    shape = [d.dim_value for d in data.type.tensor_type.shape.dim]
    feeds = {data.name: np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
    reference = reference_macs(proto, feeds)
    model = ox.load(path)
    ours = {row["name"]: row["macs"] for row in ox.metrics(model).rows}
    names = [node.name for node in model.graph.nodes]
    assert reference
    for key, want in reference.items():
        name = names[int(key[1:])] if key.startswith("#") else key
        assert ours[name] == pytest.approx(want, rel=0.02), name
