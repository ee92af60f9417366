"""safetensors files, sharded checkpoints and PEFT adapters as models of weights.

A single file is its header (:mod:`._header`) plus byte ranges. A sharded checkpoint is
its ``*.safetensors.index.json`` (``weight_map``: tensor → shard file) or a folder of
``*.safetensors`` files; each shard's header is read, no tensor bytes. A PEFT adapter is
a folder with ``adapter_config.json`` beside ``adapter_model.safetensors``. Shard names
from an index are resolved inside the checkpoint's folder by the rules for external data
(no ``..``, no absolute paths, no symlink escaping it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ...errors import ExplorerError, ModelFormatError
from ...external_data import DataFiles, resolve_location
from ...model import Model
from ...sources import ByteSource, InMemory
from ...tensors import FileRange, Tensor
from .._module_graph import module_graph
from ._header import Header, read_header

#: Index and adapter config files larger than this are refused (real ones are < 5 MB).
MAX_JSON_BYTES = 64 << 20
#: Metadata values kept whole up to this length; longer ones are cut (shown, not parsed).
MAX_METADATA_VALUE = 4096
INDEX_SUFFIX = ".safetensors.index.json"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"


def is_checkpoint_dir(path: Path) -> bool:
    """A folder holding safetensors files (a sharded checkpoint or a PEFT adapter)."""
    try:
        return any(p.suffix == ".safetensors" and p.is_file() for p in path.iterdir())
    except OSError:
        return False


def read_safetensors_source(
    source: ByteSource, *, path: Path | None = None, files: DataFiles | None = None
) -> Model:
    """One safetensors file from any byte source (a local file or a URL): the header only."""
    header = read_header(source)
    tensors = dict(_tensors(header, source, {}))
    name = source.display.rsplit("/", 1)[-1]
    return _model(tensors, name, path, [(name, header)], files, notes={})


def read_safetensors_bytes(data: bytes, name: str = "<bytes>") -> Model:
    """A safetensors file's whole bytes, already in memory (tensors are views of them)."""
    return read_safetensors_source(InMemory(data, name))


def read_safetensors_file(path: Path) -> Model:
    """A ``.safetensors`` file, an ``*.safetensors.index.json`` or a checkpoint folder."""
    path = Path(path)
    if path.is_dir():
        return _read_folder(path)
    if path.name.endswith(INDEX_SUFFIX) or path.suffix == ".json":
        return _read_index(path)
    files = DataFiles()
    try:
        return read_safetensors_source(
            files.get(Path(os.path.realpath(path))), path=path, files=files
        )
    except BaseException:
        files.close()
        raise


def _read_index(index: Path) -> Model:
    table = _json_file(index)
    if not isinstance(table, dict):
        raise ModelFormatError(f"{str(index)!r}: an index is a JSON object")
    weight_map = table.get("weight_map")
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise ModelFormatError(f"{str(index)!r}: an index needs a weight_map of tensor → file")
    shards = list(dict.fromkeys(weight_map.values()))  # file order of first mention
    notes: dict[str, str] = {}
    meta = table.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("total_size"), int):
        notes["total_size"] = str(meta["total_size"])
    paths = [resolve_location(index.parent, shard, shard) for shard in shards]
    return _read_shards(paths, index, notes, expected=weight_map)


def _read_folder(folder: Path) -> Model:
    indexes = sorted(p for p in folder.iterdir() if p.name.endswith(INDEX_SUFFIX))
    if len(indexes) == 1:
        return _read_index(indexes[0])
    notes: dict[str, str] = {}
    config = folder / ADAPTER_CONFIG
    if config.is_file():
        notes.update(_adapter_notes(_json_file(config)))
    shards = sorted(p for p in folder.iterdir() if p.suffix == ".safetensors" and p.is_file())
    if not shards:
        raise ModelFormatError(f"{str(folder)!r} holds no .safetensors file")
    safe = [resolve_location(folder, p.name, p.name) for p in shards]
    return _read_shards(safe, folder, notes, expected=None)


def _read_shards(
    paths: list[Path], where: Path, notes: dict[str, str], expected: Mapping[str, str] | None
) -> Model:
    files = DataFiles()
    try:
        tensors: dict[str, Tensor] = {}
        headers: list[tuple[str, Header]] = []
        owner: dict[str, str] = {}
        for shard in paths:
            source = files.get(Path(os.path.realpath(shard)))
            try:
                header = read_header(source)
            except ExplorerError as exc:
                raise type(exc)(f"shard {shard.name!r}: {exc}") from None
            headers.append((shard.name, header))
            for name, tensor in _tensors(header, source, owner):
                if name in tensors:
                    raise ModelFormatError(
                        f"tensor {name!r} is in two shards: {owner[name]!r} and {shard.name!r}"
                    )
                owner[name] = shard.name
                tensors[name] = tensor
        if expected is not None:
            missing = [n for n in expected if n not in tensors]
            if missing:
                raise ModelFormatError(
                    f"{str(where)!r}: the index lists {len(missing)} tensor(s) no shard holds, "
                    f"e.g. {missing[0]!r}"
                )
        return _model(tensors, where.name, where, headers, files, notes)
    except BaseException:
        files.close()
        raise


def _tensors(
    header: Header, source: ByteSource, owner: Mapping[str, str]
) -> Iterable[tuple[str, Tensor]]:
    for entry in header.entries:
        data = FileRange(source, entry.offset, entry.length)
        yield entry.name, Tensor(entry.name, entry.dtype, entry.shape, data)


def _model(
    tensors: dict[str, Tensor],
    name: str,
    path: Path | None,
    headers: list[tuple[str, Header]],
    files: DataFiles | None,
    notes: Mapping[str, str],
) -> Model:
    props: dict[str, str] = {}
    for shard, header in headers:
        for key, value in (header.metadata or {}).items():
            props.setdefault(key, _cut(value))
        if len(headers) > 1:
            props[f"shard {shard}"] = f"{len(header.entries)} tensors"
    props.update(notes)
    producer = "PEFT adapter" if "adapter" in notes else ""
    return Model(
        module_graph(tensors, name=name),
        format="safetensors",
        path=path,
        producer_name=producer,
        metadata_props=props,
        data_files=files,
    )


def _cut(value: str) -> str:
    return value if len(value) <= MAX_METADATA_VALUE else value[:MAX_METADATA_VALUE] + "…"


def _json_file(path: Path) -> object:
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise ModelFormatError(f"{str(path)!r}: {size} bytes is too large for an index")
        return json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelFormatError(f"{str(path)!r} is not valid JSON: {exc}") from None


def _adapter_notes(config: object) -> dict[str, str]:
    """What a PEFT adapter config says about the adapter, as display notes."""
    if not isinstance(config, dict):
        return {"adapter": "PEFT (unreadable adapter_config.json)"}
    notes = {"adapter": f"PEFT {config.get('peft_type') or '?'}"}
    for key in ("base_model_name_or_path", "r", "lora_alpha", "lora_dropout", "target_modules",
                "task_type", "bias"):  # fmt: skip
        if key in config and config[key] is not None:
            notes[f"adapter {key}"] = _cut(
                json.dumps(config[key]) if not isinstance(config[key], str) else config[key]
            )
    return notes
