"""weights_report_many's workers keep their heap for a task when dask set MALLOC_TRIM_THRESHOLD_."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnx_explorer.weights import _many


def _model(path):
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((300, 300)).astype(np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Identity", ["w"], ["y"])], "g", [],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [300, 300])], [weight],
    )  # fmt: skip
    onnx.save(helper.make_model(graph), path)
    return str(path)


def test_same_report_with_dasks_trim_threshold(tmp_path, monkeypatch):
    source = _model(tmp_path / "m.onnx")
    options = {"edges": _many._edges(16, (-1.0, 1.0))}
    plain = _many.report_one(source, options)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    kept = _many.report_one(source, options)
    assert kept.totals.to_dict() == plain.totals.to_dict()
    assert kept.rows == plain.rows
    # the settings come back: a second task behaves the same
    assert _many.report_one(source, options).totals.to_dict() == plain.totals.to_dict()


def test_no_glibc_settings_without_the_variable(monkeypatch):
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    called = []
    monkeypatch.setattr(_many, "_glibc", lambda: called.append(1))
    with _many._heap_kept():
        pass
    assert called == []
