"""What views, widgets and runs may ask of a model's file format (:class:`FormatSupport`),
and the value types a format's own inference finds (:class:`InferredTypes`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ModelFormatError
from ..tensors import Tensor
from ._values import ValueInfo

if TYPE_CHECKING:
    from ._graph import Graph
    from ._model import Model


@dataclass(frozen=True)
class InferredTypes:
    """Value types found by the file format's own inference (ONNX shape inference).

    A model's reader provides the inference (:attr:`Model.type_inference`); views
    read the result here and never touch the format.
    """

    types: Mapping[int, Mapping[str, ValueInfo]]  # id(graph) → value name → type
    error: str | None = None  # why inference found nothing (it never raises)
    # Inside model-local functions, per call: (id(calling graph), call node name) →
    # value name → type (one function body serves calls of every size).
    calls: Mapping[tuple[int, str], Mapping[str, ValueInfo]] = field(default_factory=dict)


class TypeInference(Protocol):
    """A reader's type inference: every graph's value types, the inputs bound to
    ``input_shapes`` when given (never raises)."""

    def __call__(
        self, model: Model, input_shapes: Mapping[str, tuple[int, ...]] | None
    ) -> InferredTypes: ...


class FormatSupport:
    """What views, widgets and runs may ask of a model's file format; its reader answers.

    Every :class:`Model` carries one (:attr:`Model.support`), set by the reader. This base
    answers "the format has none of it"; a reader subclasses it for what its format has
    (ONNX: ``readers/onnx/_support.py``). Code above the readers asks here what a format
    can do, never ``model.format`` (the format's display name) nor the format's library.
    """

    #: The format's own type inference (ONNX shape inference), None when it has none.
    type_inference: TypeInference | None = None
    #: Operators are named by domain and type (ONNX), not by type alone (TensorFlow).
    has_op_domains: bool = False
    #: The name of the format's validity checker (``"onnx.checker"``), None without one.
    checker: str | None = None
    #: onnxruntime can run the model (:meth:`runtime_model`).
    runnable: bool = False

    def check(self, model: Model) -> str:
        """The checker's verdict as one paragraph (never raises)."""
        return f"{model.format} models have no checker."

    def input_slot_names(self, domain: str, op_type: str) -> tuple[str, ...] | None:
        """Names of an operator's input slots (``("A", "B")`` for ONNX MatMul), None if
        the format does not say."""
        return None

    def constants(self, graph: Graph) -> dict[str, Tensor]:
        """Output name → value of the graph's constant-producing nodes whose value is an
        attribute (ONNX ``Constant``); a broken one gives a tensor whose reading raises."""
        return {}

    def weight_note(self, model: Model, tensor_name: str) -> str | None:
        """A note on how a weight is laid out (TensorFlow: ``"HWIO ..."``), if any."""
        return None

    def runtime_model(self, model: Model) -> tuple[Any, Path | None]:
        """(the model as onnxruntime takes it, with every payload; the directory its
        external data is in). Raises :class:`~onnx_explorer.errors.ModelFormatError`
        when the model cannot be run."""
        raise ModelFormatError(
            f"{model.format} models cannot be run: onnxruntime runs ONNX models only"
        )


_NO_SUPPORT = FormatSupport()
