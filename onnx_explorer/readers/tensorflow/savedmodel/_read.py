"""TensorFlow SavedModels (a directory, its ``saved_model.pb`` / ``.pbtxt``) and MetaGraphDef
``.meta`` files → the neutral :class:`Model`, with variables read lazily from the checkpoint.

No TensorFlow is needed. The jobs: :mod:`._parse` (bytes → messages),
:mod:`._build` (messages → model: graphs, signatures, functions, variables),
:mod:`.tensor_bundle` (``variables/variables.index`` → lazy tensors in the data shards).
Reading the model reads the index, never a variable's bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

from ....errors import ModelFormatError
from ....external_data import DataFiles
from ....model import Model
from ..._sniff import is_text
from ...protobuf._wire import strip_file
from ..bundle._read import read_bundle
from ..graphdef._tensors import TensorContext
from ._build import Variables, build_model
from ._parse import KINDS, meta_graphs, parse_binary, parse_text, strip


def _variables(prefix: Path, files: DataFiles, missing: str, root: Path) -> Variables:
    """The bundle at ``prefix`` (``.../variables/variables``), or a note saying why none.
    Its files must lie in ``root``, the model's folder (no symlink out of it)."""
    if not prefix.with_name(prefix.name + ".index").is_file():
        return Variables(None, missing)
    bundle = read_bundle(prefix, files, root)
    count = len(bundle.tensors)
    shards = f"{bundle.num_shards} shard" + ("s" if bundle.num_shards != 1 else "")
    # Metadata is text and readers format nothing: the exact size (views/_text formats sizes).
    return Variables(bundle, f"{count} tensors, {bundle.total_bytes:,} bytes in {shards}")


def read_saved_model_dir(path: Path) -> Model:
    """A SavedModel directory: its ``saved_model.pb`` (or ``.pbtxt``) and ``variables/``."""
    for name in ("saved_model.pb", "saved_model.pbtxt"):
        if (path / name).is_file():
            return read_saved_model_file(path / name, kind="savedmodel")
    raise ModelFormatError(f"{str(path)!r} is a directory without a saved_model.pb")


def read_saved_model_file(path: Path, kind: str = "savedmodel") -> Model:
    """``saved_model.pb``/``.pbtxt`` (``kind="savedmodel"``) or a ``.meta`` (``"metagraph"``)."""
    path = Path(path)
    what = f"{str(path)!r} ({KINDS[kind]})"
    files = DataFiles()
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
        if not head:
            raise ModelFormatError(f"{what} is empty")
        if is_text(head):
            with open(path, "rb") as fh:
                proto = parse_text(fh.read(), kind, what)
            ctx = TensorContext("embedded")
        else:
            model_file = files.get(Path(os.path.realpath(path)))
            stripped = strip_file(
                model_file.path, model_file.size, lambda src: strip(src, kind, what), what
            )
            proto = parse_binary(stripped.data, kind, what)
            ctx = TensorContext("embedded", stripped, model_file)
        if kind == "savedmodel":
            folder = path.parent / "variables"
            missing = "no variables/ folder next to it: graph only, no variable values"
            if folder.is_dir():
                missing = "variables/ holds no variables.index: graph only, no variable values"
            variables = _variables(folder / "variables", files, missing, path.parent)
        else:
            prefix = path.with_suffix("") if path.suffix == ".meta" else path
            missing = f"no checkpoint {prefix.name}.index next to it: graph only"
            variables = _variables(prefix, files, missing, path.parent)
        return build_model(
            meta_graphs(proto, kind), kind=kind, name=_name(path), what=what, path=path, ctx=ctx,
            files=files, variables=variables,
        )  # fmt: skip
    except BaseException:
        files.close()
        raise


def _name(path: Path) -> str:
    if path.name.startswith("saved_model.") and path.parent.name:
        return path.parent.name
    return path.stem


def read_saved_model_bytes(data: bytes, kind: str = "savedmodel") -> Model:
    """A SavedModel or MetaGraphDef from bytes (graph only: the checkpoint is not there)."""
    what = f"the given bytes ({KINDS[kind]})"
    if not data:
        raise ModelFormatError(f"{what} are empty")
    if is_text(data[:4096]):
        proto = parse_text(data, kind, what)
        ctx = TensorContext("memory")
    else:
        stripped = strip(data, kind, what)
        proto = parse_binary(stripped.data, kind, what)
        ctx = TensorContext("memory", stripped, data)
    note = "loaded from bytes: graph only, no variable values"
    return build_model(
        meta_graphs(proto, kind), kind=kind, name=kind, what=what, path=None, ctx=ctx, files=None,
        variables=Variables(None, note),
    )  # fmt: skip


__all__ = ["read_saved_model_bytes", "read_saved_model_dir", "read_saved_model_file"]
