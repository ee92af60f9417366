"""What views, widgets and runs may ask of an ONNX model: the ONNX format support.

Set by the reader on every ONNX :class:`Model` (:attr:`Model.support`): shape inference,
``onnx.checker``, operator input slot names from the operator schemas, ``Constant`` values
and the full ``ModelProto`` onnxruntime runs. Everything of ``onnx`` that code above the
readers needs is asked here; the parsed proto is no public attribute of the model.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import onnx

from ...errors import ModelFormatError
from ...model import FormatSupport, Graph, Model, TypeInference
from ...tensors import Tensor
from ..protobuf._wire import MAGIC, MARKER_LENGTH
from ._constants import constants


class OnnxSupport(FormatSupport):
    """The ONNX answers. ``proto`` is the parsed model (its large ``raw_data`` cut out
    where it was read from a file or a URL); ``data`` the bytes it was read from, when
    it was read from bytes."""

    has_op_domains = True
    checker = "onnx.checker"
    runnable = True

    def __init__(
        self, proto: onnx.ModelProto, type_inference: TypeInference, data: bytes | None = None
    ) -> None:
        self._proto = proto
        self.type_inference = type_inference
        self._data = data

    def check(self, model: Model) -> str:
        try:
            if model.path is not None:
                # Path-based: works past 2 GB and leaves external data where it is.
                onnx.checker.check_model(str(model.path), full_check=False)
            elif self._data is not None:
                # The proto lacks the weights the reader cut out; check the real bytes.
                onnx.checker.check_model(onnx.ModelProto.FromString(self._data))
            elif _has_markers(self._proto):
                return "cannot check: the model was opened from the network without its weights."
            else:
                onnx.checker.check_model(self._proto)
        except onnx.checker.ValidationError as exc:
            return f"onnx.checker found a problem:\n{exc}"
        except Exception as exc:  # the checker's C++ side raises assorted types
            return f"onnx.checker could not run: {type(exc).__name__}: {exc}"
        return "onnx.checker: the model is valid."

    def input_slot_names(self, domain: str, op_type: str) -> tuple[str, ...] | None:
        return _schema_inputs(domain, op_type)

    def constants(self, graph: Graph) -> dict[str, Tensor]:
        return constants(graph)

    def runtime_model(self, model: Model) -> tuple[onnx.ModelProto, Path | None]:
        """The ModelProto with every payload (external data left on disk: onnxruntime
        reads it) and the directory external data is in."""
        if model.path is not None:
            path = Path(model.path)
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise ModelFormatError(f"{str(path)!r} cannot be read: {exc.strerror}") from exc
            return parse_whole(data, repr(str(path))), path.resolve().parent
        if self._data is not None:  # opened from bytes: the proto stands in for payloads
            return parse_whole(self._data, "the model bytes"), None
        if _has_markers(self._proto):
            raise ModelFormatError(
                "the model was opened from the network without its weights (they are read "
                "by range when looked at): download it and run the local file"
            )
        return self._proto, None  # opened from a ModelProto, which holds its payloads


def parse_whole(data: bytes, what: str) -> onnx.ModelProto:
    """A whole ModelProto, payloads included (what onnxruntime is given)."""
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # protobuf's DecodeError
        raise ModelFormatError(f"{what} is not an ONNX model: {exc}") from exc
    if not model.HasField("graph"):
        raise ModelFormatError(f"{what} is not an ONNX model (no graph)")
    return model


def _has_markers(model: onnx.ModelProto) -> bool:
    """True when some initializer's bytes were left where they are (a remote or mapped
    model's proto holds a 16-byte marker in their place)."""
    return any(
        len(t.raw_data) == MARKER_LENGTH and t.raw_data.startswith(MAGIC)
        for t in model.graph.initializer
    )


@lru_cache(maxsize=1024)
def _schema_inputs(domain: str, op_type: str) -> tuple[str, ...] | None:
    """Input slot names of an ONNX operator (``("A", "B")`` for MatMul), None if unknown."""
    try:
        schema = onnx.defs.get_schema(op_type, domain)
    except Exception:  # unknown or custom operator: the caller falls back to value names
        return None
    return tuple(i.name for i in schema.inputs) or None


__all__ = ["OnnxSupport", "parse_whole"]
