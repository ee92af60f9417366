"""What views and widgets may ask of a TensorFlow model (GraphDef, SavedModel): the
weights' axis layouts. No checker, no shape inference, nothing onnxruntime runs."""

from __future__ import annotations

from ....model import FormatSupport, Model
from ._ops import layout_note


class GraphDefSupport(FormatSupport):
    def weight_note(self, model: Model, tensor_name: str) -> str | None:
        return layout_note(model, tensor_name)


__all__ = ["GraphDefSupport"]
