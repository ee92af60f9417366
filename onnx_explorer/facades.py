"""The work behind the model's convenience methods, installed from above the model.

``graph.to_dot()``, ``graph.render_svg()``, ``graph.save()`` and
``model.weights_report()`` stay methods (typed, documented, shown by IDEs), but
drawing lives in ``views`` and the report in ``report``, both of which import the
model. The model therefore only declares what it needs (:class:`model.Facades`)
and this module, which sits above views and the report, provides it; the package's
``__init__`` imports it, so the methods work as soon as ``onnx_explorer`` is
imported. Views and the report are imported on first use, keeping
``import onnx_explorer`` light.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ExplorerError
from .model import Graph, InferredTypes, Model, install_facades


class _Facades:
    def to_dot(self, graph: Graph, options: dict[str, Any]) -> str:
        from .views._drawing import build_dot

        return build_dot(graph, graph.model, **options).source

    def render_svg(self, graph: Graph, timeout: float, options: dict[str, Any]) -> str:
        from .views._drawing import build_dot
        from .views._render import svg_from_result

        return svg_from_result(build_dot(graph, graph.model, **options), timeout=timeout)

    def save(self, graph: Graph, path: str | Path, timeout: float, options: dict[str, Any]) -> Path:
        from .views._drawing import build_dot
        from .views._render import save_result

        return save_result(build_dot(graph, graph.model, **options), path, timeout)

    def weights_report(self, model: Model, options: dict[str, Any]) -> Any:
        from .weights._report import weights_report

        return weights_report(model, **options)

    def observed_types(
        self, model: Model, input_shapes: Mapping[str, tuple[int, ...]]
    ) -> InferredTypes:
        if model.format != "onnx":
            return InferredTypes({}, f"no onnxruntime run for {model.format} models")
        try:
            from .runs import observed_shapes
        except ImportError as exc:  # onnx missing: nothing to run
            return InferredTypes({}, f"no run: {exc}")
        try:
            found = observed_shapes(model, input_shapes)
        except (ExplorerError, MemoryError, ValueError, OSError) as exc:
            # onnxruntime missing, the run failed or timed out, absurd sizes
            lines = str(exc).splitlines()
            return InferredTypes({}, lines[0] if lines else type(exc).__name__)
        return InferredTypes({id(model.graph): found})


install_facades(_Facades())

__all__: list[str] = []
