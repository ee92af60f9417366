"""Real exported models (tests/corpus) against an independent reference: the shapes and
outputs onnxruntime itself produces (tests/corpus_reference.py)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from corpus_reference import BATCHABLE, CORPUS, MANIFEST, ONNX_MODELS, feeds, reference_macs

import onnx_explorer as ox
from onnx_explorer.views._edge_types import value_types

ort = pytest.importorskip("onnxruntime")

CASES = [(name, 1) for name in ONNX_MODELS] + [(name, 8) for name in sorted(BATCHABLE)]


@pytest.mark.parametrize(("name", "batch"), CASES)
def test_compute_macs_match_onnxruntimes_observed_shapes(name, batch):
    inputs = feeds(name, batch)
    reference = reference_macs(onnx.load(CORPUS / name), inputs)
    assert reference, f"{name}: no compute node in the main graph"
    model = ox.load(CORPUS / name)
    result = ox.metrics(model, input_shapes={k: v.shape for k, v in inputs.items()})
    ours = {row["name"]: row["macs"] for row in result.rows}
    for node, want in reference.items():
        assert ours[node] is not None, f"{name} batch {batch}: {node} unknown"
        assert ours[node] == pytest.approx(want, rel=0.02), f"{name} batch {batch}: {node}"
    assert result.assumed_dims == ()  # every input was given whole


@pytest.mark.parametrize("name", sorted(BATCHABLE))
def test_macs_scale_with_the_batch(name):
    model = ox.load(CORPUS / name)
    one, eight = (
        ox.metrics(model, input_shapes={k: v.shape for k, v in feeds(name, b).items()})
        for b in (1, 8)
    )
    compute = {"Conv", "ConvInteger", "MatMul", "MatMulInteger", "Gemm", "LSTM"}
    total = {b: sum(r["macs"] or 0 for r in m.rows if r["op_type"] in compute)
             for b, m in ((1, one), (8, eight))}  # fmt: skip
    assert total[8] == pytest.approx(8 * total[1], rel=0.02)


def test_a_paddle_detector_binds_its_spatial_dims_and_counts_every_conv():
    # PP-OCRv4 det: p2o.DynamicDimension.0/1/2 on batch, height and width; weights in
    # Constant nodes. Bound at 640×640, the derived sizes propagate through every Conv.
    model = ox.load(CORPUS / "ppocrv4_det.onnx")
    dims = {"p2o.DynamicDimension.1": 640, "p2o.DynamicDimension.2": 640}
    result = ox.metrics(model, dims=dims)
    assert result.assumed_line == (
        "assumed input sizes: p2o.DynamicDimension.0=1 (batch); "
        "bind them with dims={'p2o.DynamicDimension.0': 1}"
    )
    reference = reference_macs(onnx.load(CORPUS / "ppocrv4_det.onnx"), feeds("ppocrv4_det.onnx"))
    ours = {row["name"]: row["macs"] for row in result.rows}
    assert sum(ours[n] for n in reference) == pytest.approx(sum(reference.values()), rel=0.02)
    assert result.unknown["macs"] == 0 and result.unknown_ops == {}


def test_without_dims_the_defaults_are_said_in_one_line():
    result = ox.metrics(ox.load(CORPUS / "ppocrv4_det.onnx"))
    line = result.assumed_line
    assert "\n" not in line and "floor" not in line
    assert "p2o.DynamicDimension.1=224 (spatial)" in line
    assert "p2o.DynamicDimension.0=1 (batch)" in line
    assert result.unknown["macs"] == 0


def test_edge_labels_show_the_bound_sizes_not_symbols():
    model = ox.load(CORPUS / "ppocrv4_det.onnx")
    model.bind(dims={"p2o.DynamicDimension.1": 320, "p2o.DynamicDimension.2": 480})
    types, note = value_types(model.graph, model)
    convs = [n for n in model.graph.nodes if n.op_type == "Conv"]
    first, last = convs[0], convs[-1]
    assert types.get(first.outputs[0]).shape[0] == 1 and all(
        isinstance(d, int) for d in types.get(first.outputs[0]).shape
    )
    assert all(isinstance(d, int) for d in types.get(last.outputs[0]).shape)
    assert note is not None and "p2o.DynamicDimension.0=1" in note


def test_a_model_declaring_minus_one_and_question_marks_binds_them_apart():
    # The old Paddle classifier declares x as [-1, 3, "?", "?"]: two independent dims.
    model = ox.load(CORPUS / "ppocr_mobile_v2_cls.onnx")
    result = ox.metrics(model, input_shapes={"x": (6, 3, 48, 192)})
    reference = reference_macs(
        onnx.load(CORPUS / "ppocr_mobile_v2_cls.onnx"), feeds("ppocr_mobile_v2_cls.onnx", 6)
    )
    ours = {row["name"]: row["macs"] for row in result.rows}
    assert sum(ours[n] for n in reference) == pytest.approx(sum(reference.values()), rel=0.02)
    defaults = ox.metrics(model)
    assert "x.0=1 (batch)" in defaults.assumed_line and "x.2=224 (spatial)" in defaults.assumed_line


@pytest.mark.parametrize("name", ONNX_MODELS)
def test_run_outputs_equal_a_plain_onnxruntime_session(name):
    inputs = feeds(name)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(CORPUS / name), options, providers=["CPUExecutionProvider"])
    want = session.run(None, inputs)
    result = ox.run(str(CORPUS / name), inputs)
    for output, expected in zip(session.get_outputs(), want):
        got = result.outputs[output.name]
        scale = float(np.max(np.abs(expected))) if expected.size else 0.0
        # 1e-4 of the output's range; at least 1e-6 (a few float32 steps of a sigmoid's
        # 1 - x: the detector's probabilities on noise are all near 0)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=max(1e-4 * scale, 1e-6))
    assert result.first_problem is None


def test_run_generates_only_the_inputs_left_out():
    # The VAD's sample rate is a scalar the model branches on (If bodies): give it, and
    # its window; the state is generated at the size the window's batch fixes.
    name = "silero_vad_16k_op15.onnx"
    given = {"sr": np.array(16000, np.int64), "input": feeds(name)["input"]}
    result = ox.run(str(CORPUS / name), given)
    assert result.feeds["state"].shape == (2, 1, 128)
    assert result.failure is None


def test_a_failing_run_names_the_generated_inputs_and_the_assumed_sizes(capfd):
    name = "silero_vad_16k_op15.onnx"
    with pytest.raises(ox.RunFailedError) as caught:
        ox.run(str(CORPUS / name))  # 128 samples: the VAD wants 512 at 16 kHz
    message = str(caught.value)
    assert "generated inputs: input float32[1, 128]" in message
    assert "sequence=128 (sequence)" in message and "dims=" in message
    assert "[E:onnxruntime" not in capfd.readouterr().err  # ORT's own log stays quiet


def test_default_feeds_of_a_detector_are_images_not_pixels():
    result = ox.run(str(CORPUS / "ppocrv4_det.onnx"))
    assert result.feeds["x"].shape == (1, 3, 224, 224)
    assert "p2o.DynamicDimension.1=224 (spatial)" in result.assumed


def test_the_manifest_records_source_and_licence_of_every_file():
    for name, entry in MANIFEST.items():
        assert (CORPUS / name).is_file(), name
        assert entry["licence"] in {"Apache-2.0", "MIT", "BSD-2-Clause", "BSD-3-Clause"}, name
        assert entry["package"] and entry["sha256"], name
    total = sum((CORPUS / name).stat().st_size for name in MANIFEST)
    assert total <= 25 * 1024 * 1024
