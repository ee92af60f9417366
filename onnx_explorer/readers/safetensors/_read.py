"""safetensors files, sharded checkpoints and PEFT adapters as models of weights.

A single file is its header (:mod:`._header`) plus byte ranges. A sharded checkpoint is
its ``*.safetensors.index.json`` (``weight_map``: tensor → shard file) or its folder;
each shard's header is read, no tensor bytes. A PEFT adapter is a folder with
``adapter_config.json`` beside ``adapter_model.safetensors``.

Local folders and folders at a URL (``https://host/ckpt/``, ``hf://org/repo``) are read
by one code path over a :class:`~._folder.Folder`: the index and the shards are byte
sources, shard names from an index are resolved inside the checkpoint's folder by the
rules for external data (no ``..``, no absolute paths or URLs, no symlink or other host
escaping it). A folder is searched by name: ``model.safetensors.index.json``, else the
one ``*.safetensors.index.json``, else ``model.safetensors``, else
``adapter_model.safetensors`` (with ``adapter_config.json``), else every
``*.safetensors`` in it; a store that cannot list (HTTP) is asked for the first three
names in that order, one metadata request each, until one is there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ...errors import ExplorerError, ModelFormatError
from ...external_data import DataFiles
from ...model import Model
from ...sources import ByteSource, InMemory
from ...sources.remote import RemoteDir
from ...tensors import FileRange, Tensor
from .._module_graph import module_graph
from ._folder import Folder, LocalFolder, RemoteFolder, folder_at
from ._header import INDEX_SUFFIX, Header, looks_like_safetensors, read_header

#: Index and adapter config files larger than this are refused (real ones are < 5 MB).
MAX_JSON_BYTES = 64 << 20
#: Metadata values kept whole up to this length; longer ones are cut (shown, not parsed).
MAX_METADATA_VALUE = 4096
INDEX_NAME = "model.safetensors.index.json"
WEIGHTS_NAME = "model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"


def is_checkpoint_dir(path: Path) -> bool:
    """A folder holding safetensors files (a sharded checkpoint or a PEFT adapter)."""
    try:
        return any(p.suffix == ".safetensors" and p.is_file() for p in path.iterdir())
    except OSError:
        return False


def looks_like_index(head: bytes) -> bool:
    """JSON text (an index), not a safetensors file (whose first 8 bytes are a length)."""
    return not looks_like_safetensors(head) and head.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] == b"{"


def read_safetensors_source(
    source: ByteSource,
    *,
    path: Path | None = None,
    files: DataFiles | None = None,
    base: Path | RemoteDir | None = None,
) -> Model:
    """One safetensors file from any byte source (a local file or a URL): the header only.

    An index (``*.safetensors.index.json``) is read too when ``base`` names the folder
    its shards are in (the index's own folder, local or at a URL).
    """
    if looks_like_index(source.fetch(0, min(source.size, 16))):
        if base is None:
            raise ModelFormatError(
                f"{source.display!r} is a checkpoint index (JSON): open it by path or URL, "
                "so that its shards can be found beside it"
            )
        files = files if files is not None else DataFiles()
        name = source.display.rsplit("/", 1)[-1]
        return _read_index(folder_at(base, files), source, name, path, files)
    header = read_header(source)
    tensors = dict(_tensors(header, source, {}))
    name = source.display.rsplit("/", 1)[-1]
    return _model(tensors, name, path, [(name, header)], files, notes={})


def read_safetensors_bytes(
    data: bytes, name: str = "<bytes>", base: Path | RemoteDir | None = None
) -> Model:
    """A safetensors file's whole bytes, already in memory (tensors are views of them);
    an index's bytes with ``base``, the folder its shards are in."""
    return read_safetensors_source(InMemory(data, name), base=base)


def read_safetensors_file(path: Path) -> Model:
    """A ``.safetensors`` file, an ``*.safetensors.index.json`` or a checkpoint folder."""
    path = Path(path)
    files = DataFiles()
    try:
        if path.is_dir():
            model = read_safetensors_folder(LocalFolder(path, files), files)
            if model is None:
                raise ModelFormatError(f"{str(path)!r} holds no .safetensors file")
            return model
        source = files.get(Path(os.path.realpath(path)))
        if path.name.endswith(INDEX_SUFFIX) or path.suffix == ".json":
            return _read_index(LocalFolder(path.parent, files), source, path.name, path, files)
        return read_safetensors_source(source, path=path, files=files)
    except BaseException:
        files.close()
        raise


def read_safetensors_url_folder(folder: RemoteDir, files: DataFiles) -> Model | None:
    """The checkpoint in a folder at a URL, or None when it holds none (found by name)."""
    return read_safetensors_folder(RemoteFolder(folder, files), files)


def read_safetensors_folder(folder: Folder, files: DataFiles) -> Model | None:
    """The checkpoint in ``folder`` (local or remote), or None when it holds none."""
    names = folder.names()
    if names is None:  # a store that cannot list: ask for the conventional names
        names = _probe(folder)
    indexes = [n for n in names if n.endswith(INDEX_SUFFIX)]
    index = INDEX_NAME if INDEX_NAME in names else indexes[0] if len(indexes) == 1 else None
    if index is not None:
        return _read_index(folder, folder.open(index), folder.name, folder.path, files)
    if WEIGHTS_NAME in names:
        shards = [WEIGHTS_NAME]
    elif ADAPTER_WEIGHTS in names:
        shards = [ADAPTER_WEIGHTS]
    else:
        shards = sorted(n for n in names if n.endswith(".safetensors"))
    if not shards:
        return None
    notes: dict[str, str] = {}
    if ADAPTER_CONFIG in names:
        notes.update(_adapter_notes(_json(folder.open(ADAPTER_CONFIG))))
    return _read_shards(folder, shards, folder.name, folder.path, notes, None, files)


def _probe(folder: Folder) -> list[str]:
    for name in (INDEX_NAME, WEIGHTS_NAME, ADAPTER_WEIGHTS):
        if folder.exists(name):
            if name == ADAPTER_WEIGHTS and folder.exists(ADAPTER_CONFIG):
                return [name, ADAPTER_CONFIG]
            return [name]
    return []


def _read_index(
    folder: Folder, index: ByteSource, name: str, path: Path | None, files: DataFiles
) -> Model:
    what = repr(index.display)
    table = _json(index)
    if not isinstance(table, dict):
        raise ModelFormatError(f"{what}: an index is a JSON object")
    weight_map = table.get("weight_map")
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise ModelFormatError(f"{what}: an index needs a weight_map of tensor → file")
    shards = list(dict.fromkeys(weight_map.values()))  # file order of first mention
    notes: dict[str, str] = {}
    meta = table.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("total_size"), int):
        notes["total_size"] = str(meta["total_size"])
    return _read_shards(folder, shards, name, path, notes, weight_map, files, index=what)


def _read_shards(
    folder: Folder,
    shards: list[str],
    name: str,
    path: Path | None,
    notes: dict[str, str],
    expected: Mapping[str, str] | None,
    files: DataFiles,
    index: str = "",
) -> Model:
    where = index or repr(folder.display)
    tensors: dict[str, Tensor] = {}
    headers: list[tuple[str, Header]] = []
    owner: dict[str, str] = {}
    for shard in shards:
        try:
            source = folder.open(shard)
            header = read_header(source)
        except ExplorerError as exc:
            raise type(exc)(f"{where}: shard {shard!r}: {exc}") from None
        headers.append((shard, header))
        for tensor_name, tensor in _tensors(header, source, owner):
            if tensor_name in tensors:
                raise ModelFormatError(
                    f"{where}: tensor {tensor_name!r} is in two shards: "
                    f"{owner[tensor_name]!r} and {shard!r}"
                )
            owner[tensor_name] = shard
            tensors[tensor_name] = tensor
    if expected is not None:
        missing = [n for n in expected if n not in tensors]
        if missing:
            raise ModelFormatError(
                f"{where}: the index lists {len(missing)} tensor(s) no shard holds, "
                f"e.g. {missing[0]!r}"
            )
    return _model(tensors, name, path, headers, files, notes)


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


def _json(source: ByteSource) -> object:
    """The JSON document in ``source`` (an index, an adapter config), size-checked first."""
    what = repr(source.display)
    size = source.size
    if size > MAX_JSON_BYTES:
        raise ModelFormatError(f"{what}: {size} bytes is too large for an index")
    try:
        return json.loads(source.fetch(0, size).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelFormatError(f"{what} is not valid JSON: {exc}") from None


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
