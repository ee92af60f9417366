"""A part cut out of an ONNX model: the proto, where its weights are, saving and running it.

Invariants:

- Until it is saved, the proto's external tensors name their data relative to
  :attr:`Submodel.base_dir`, the source model's directory, exactly as the source does:
  the weights are referenced, never read or copied (unless ``copy_weights=True`` asked
  the extraction to embed them).
- :meth:`Submodel.save` writes a new file, through a temporary file in the same
  directory renamed into place. It never writes the source model or any of its data
  files (refused even with ``overwrite=True``), and an existing file only with
  ``overwrite=True``. External locations are rewritten relative to the new file; since
  ONNX and onnxruntime refuse a location outside the model's directory (``../``), the
  file must go where the data file is inside its directory: next to the source model,
  or in a directory above the data file (else ``copy_weights=True``).
- :meth:`Submodel.run` runs the proto in memory, external data read in place.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ..errors import ExplorerError, ExternalDataError
from ..external_data import resolve_location
from ..views._text import squeezed
from ._ort import RunError, failing_node, make_session
from ._plan import _bodies, check_external

#: A serialized ONNX model must stay under protobuf's 2 GiB; past this the weights of a
#: model saved with ``copy_weights=True`` go to one data file beside it.
EMBED_LIMIT = (2 << 30) - (64 << 20)


class SaveRefusedError(ExplorerError, FileExistsError):
    """Saving would overwrite the source model, one of its data files, or (without
    ``overwrite=True``) any existing file."""


@dataclass
class Submodel:
    """A runnable part of a model (:func:`onnx_explorer.extract`, :func:`onnx_explorer.reduce`).

    ``proto`` is a valid ``onnx.ModelProto``; ``nodes`` the names of its nodes (the
    explorer's names) in execution order; ``inputs``/``outputs`` its graph's; ``feeds``
    the values at its inputs captured from a full run (empty when none was made).
    """

    proto: onnx.ModelProto
    base_dir: Path | None  # where its external data is (the source model's directory)
    nodes: list[str]
    inputs: list[str]
    outputs: list[str]
    source: Path | None = None  # the source model file, never written
    notes: list[str] = field(default_factory=list)
    feeds: dict[str, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        where = f" of {self.source.name!r}" if self.source is not None else ""
        return (
            f"<Submodel{where}: {len(self.nodes)} nodes, inputs {_listed(self.inputs)}, "
            f"outputs {_listed(self.outputs)}>"
        )

    # -- where the weights are -----------------------------------------------------
    def data_files(self) -> list[Path]:
        """The source's data files the submodel references (resolved, checked)."""
        found: dict[Path, None] = {}
        for tensor in external_tensors(self.proto):
            if self.base_dir is None:
                raise ExternalDataError(
                    f"tensor {tensor.name!r} has external data, but the model was given in "
                    "memory: extract from its path instead"
                )
            found[resolve_location(self.base_dir, _location(tensor), tensor.name)] = None
        return list(found)

    # -- saving ----------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the submodel to a new ``.onnx`` file; returns its path.

        External weights stay where they are, referenced relative to the new file (see
        the module docstring for where it may go). Refuses to write over the source
        model or its data files, and over any existing file unless ``overwrite``."""
        target = Path(os.fspath(path)).expanduser()
        target.parent.mkdir(parents=True, exist_ok=True)
        folder = Path(os.path.realpath(target.parent))
        target = folder / target.name
        protected = self._protected()
        _check_target(target, protected, overwrite)
        proto = onnx.ModelProto()
        proto.CopyFrom(self.proto)
        self._relocate(proto, folder)
        if proto.ByteSize() > EMBED_LIMIT:
            self._save_with_data_file(proto, target, protected, overwrite)
            return target
        _write_atomically(target, proto.SerializeToString())
        return target

    def _protected(self) -> list[Path]:
        files = list(self.data_files())
        if self.source is not None:
            files.append(Path(os.path.realpath(self.source)))
        return files

    def _relocate(self, proto: onnx.ModelProto, folder: Path) -> None:
        base = self.base_dir
        for tensor in external_tensors(proto):
            assert base is not None  # data_files() has refused a model given in memory
            real = resolve_location(base, _location(tensor), tensor.name)
            relative = os.path.relpath(real, folder)
            if relative.startswith(os.pardir) or os.path.isabs(relative):
                raise ExternalDataError(
                    f"tensor {tensor.name!r} reads {str(real)!r}, which is not inside "
                    f"{str(folder)!r}: ONNX and onnxruntime refuse external data outside the "
                    "model's directory. Save the submodel next to the source model (or in a "
                    "directory above its data file), or extract with copy_weights=True"
                )
            for entry in tensor.external_data:
                if entry.key == "location":
                    entry.value = Path(relative).as_posix()

    def _save_with_data_file(
        self, proto: onnx.ModelProto, target: Path, protected: list[Path], overwrite: bool
    ) -> None:
        data = target.with_name(target.name + ".data")
        _check_target(data, protected, overwrite)
        if data.exists():
            data.unlink()
        temporary = _temporary_path(target)
        try:
            onnx.save_model(
                proto, str(temporary), save_as_external_data=True,
                all_tensors_to_one_file=True, location=data.name, size_threshold=1024,
            )  # fmt: skip
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)

    # -- running ---------------------------------------------------------------------
    def run(
        self, feeds: Mapping[str, Any] | None = None, *, every_value: bool = False
    ) -> dict[str, Any]:
        """Run the submodel with onnxruntime on ``feeds`` (default: :attr:`feeds`, the
        values captured at the cut); output name → array. ``every_value``: every value
        its nodes make, not only its outputs. Raises :class:`RunError` naming the node."""
        given = dict(self.feeds if feeds is None else feeds)
        missing = [name for name in self.inputs if name not in given]
        if missing:
            raise ValueError(f"no feed for the submodel's input(s) {_listed(missing)}")
        proto = self.proto
        names = list(self.outputs)
        if every_value:
            proto = onnx.ModelProto()
            proto.CopyFrom(self.proto)
            for node in self.proto.graph.node:
                for name in node.output:
                    if name and name not in names:
                        names.append(name)
                        proto.graph.output.append(onnx.ValueInfoProto(name=name))
        check_external(proto, self.base_dir)
        try:
            session = make_session(proto.SerializeToString(), self.base_dir)
            values = session.run(names, {name: given[name] for name in self.inputs})
        except RunError:
            raise
        except Exception as exc:  # onnxruntime's own exception types
            named = failing_node(str(exc))
            where = f" at node {named!r}" if named else ""
            raise RunError(f"onnxruntime failed{where}: {squeezed(str(exc))}") from None
        return {name: _owned(value) for name, value in zip(names, values)}


def external_tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every tensor of ``model`` whose bytes are in an external file: initializers,
    sparse ones, and tensor attributes in the graph, its bodies and its functions."""
    graph = model.graph
    tensors: list[onnx.TensorProto] = list(graph.initializer)
    for sparse in graph.sparse_initializer:
        tensors += [sparse.values, sparse.indices]
    nodes: list[onnx.NodeProto] = list(graph.node)
    for function in model.functions:
        nodes.extend(function.node)
    while nodes:
        node = nodes.pop()
        for attr in node.attribute:
            if attr.HasField("t"):
                tensors.append(attr.t)
            tensors.extend(attr.tensors)
            for body in _bodies(attr):
                nodes.extend(body.node)
                tensors.extend(body.initializer)
    for tensor in tensors:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            yield tensor


def _location(tensor: onnx.TensorProto) -> str:
    found = ""
    for entry in tensor.external_data:
        if entry.key == "location":
            found = entry.value  # the last one wins, as in onnx
    return found


def _check_target(target: Path, protected: list[Path], overwrite: bool) -> None:
    real = Path(os.path.realpath(target))
    for path in protected:
        if real == path or (target.exists() and path.exists() and os.path.samefile(target, path)):
            raise SaveRefusedError(
                f"{str(target)!r} is the source model or one of its data files: a submodel is "
                "always saved as a new file"
            )
    if target.exists() and not overwrite:
        raise SaveRefusedError(f"{str(target)!r} exists: choose another name or overwrite=True")
    if target.exists() and not target.is_file():
        raise SaveRefusedError(f"{str(target)!r} exists and is not a regular file")


def _temporary_path(target: Path) -> Path:
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(handle)
    return Path(name)


def _write_atomically(target: Path, data: bytes) -> None:
    temporary = _temporary_path(target)
    try:
        with open(temporary, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def _owned(value: Any) -> Any:
    return [np.array(v) for v in value] if isinstance(value, list) else np.array(value)


def _listed(names: list[str], most: int = 4) -> str:
    shown = ", ".join(repr(n) for n in names[:most])
    more = f" +{len(names) - most}" if len(names) > most else ""
    return f"[{shown}{more}]"


__all__ = ["EMBED_LIMIT", "SaveRefusedError", "Submodel", "external_tensors"]
