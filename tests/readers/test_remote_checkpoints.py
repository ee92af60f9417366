"""safetensors, GGUF and TFLite at a URL: headers by range, a tensor by its own range,
sharded checkpoints by index or folder, Hub URLs mapped to ``hf://``.

Everything runs offline: the local HTTP range server (tests/range_server.py counts the
requests and bytes it serves), fsspec's in-memory file system for stores that can list,
and the same file system registered as ``hf`` for the Hub's flow end to end.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from range_server import RangeServer
from safetensors.numpy import save_file

import onnx_explorer as ox
from onnx_explorer.errors import ExternalDataError, ModelFormatError, UnsafePathError
from onnx_explorer.sources.hub import hub_url
from onnx_explorer.sources.remote import DEFAULT_BLOCK_SIZE

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")

RNG = np.random.default_rng(2028)
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "other_formats"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RangeServer]:
    srv = RangeServer(tmp_path / "site").start()
    srv.root.mkdir(parents=True, exist_ok=True)
    yield srv
    srv.stop()


def _gets(server: RangeServer) -> list[tuple[str, str, str | None]]:
    return [r for r in server.requests if r[0] == "GET"]


def _checkpoint(folder: Path, shards: int = 2, rows: int = 512) -> dict[str, np.ndarray]:
    """A sharded checkpoint of ``shards`` files (4 tensors each, ``rows`` × 1024 float32)
    with its index, as ``transformers`` writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    weight_map: dict[str, str] = {}
    total = 0
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {
            f"model.layers.{s}.{kind}.weight": RNG.standard_normal((rows, 1024)).astype(np.float32)
            for kind in ("q_proj", "k_proj", "v_proj", "o_proj")
        }
        part[f"model.layers.{s}.norm.weight"] = np.ones(1024, np.float32)
        save_file(part, folder / name, metadata={"format": "pt"})
        weight_map |= dict.fromkeys(part, name)
        total += sum(a.nbytes for a in part.values())
        arrays |= part
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return arrays


def _header_bytes(path: Path) -> int:
    return 8 + int.from_bytes(path.read_bytes()[:8], "little")


# -- single files: the header at open, a tensor's own range when read -----------------------


def test_a_safetensors_file_opens_with_one_read_of_its_header(server: RangeServer) -> None:
    arrays = {f"w{i}": RNG.standard_normal(1 << 20).astype(np.float32) for i in range(4)}
    path = server.root / "model.safetensors"  # 16 MB: small enough to have been fetched whole
    save_file(arrays, path)
    model = ox.load(f"{server.url}/model.safetensors")
    assert len(_gets(server)) == 1 and server.bytes_served <= 64 << 10
    assert sorted(model.graph.initializers) == sorted(arrays)
    server.reset_counts()
    np.testing.assert_array_equal(model.graph.initializers["w2"].numpy(), arrays["w2"])
    assert server.bytes_served == arrays["w2"].nbytes  # its range, nothing around it
    model.close()


def test_a_small_tensor_costs_at_most_one_block(server: RangeServer) -> None:
    arrays = {"big": np.zeros(1 << 22, np.float32), "small": np.arange(16, dtype=np.float32)}
    save_file(arrays, server.root / "m.safetensors")
    model = ox.load(f"{server.url}/m.safetensors")
    server.reset_counts()
    assert model.graph.initializers["small"].stats().max == 15.0
    assert 64 <= server.bytes_served <= DEFAULT_BLOCK_SIZE
    model.close()


def test_a_gguf_file_opens_by_its_header_and_reads_one_tensor(server: RangeServer) -> None:
    gguf = pytest.importorskip("gguf")
    path = server.root / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny")
    big = np.ones(1 << 22, np.float32)  # 16 MB
    small = RNG.standard_normal((64, 64)).astype(np.float32)
    writer.add_tensor("blk.0.big.weight", big)
    writer.add_tensor("blk.0.small.weight", small)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    model = ox.load(f"{server.url}/model.gguf")
    assert len(_gets(server)) == 1 and server.bytes_served <= 64 << 10
    assert model.producer_name.startswith("tiny")
    server.reset_counts()
    np.testing.assert_array_equal(model.graph.initializers["blk.0.small.weight"].numpy(), small)
    assert server.bytes_served <= DEFAULT_BLOCK_SIZE  # not the 16 MB beside it
    model.close()


def test_a_tflite_file_at_a_url_equals_the_local_file(server: RangeServer) -> None:
    pytest.importorskip("tflite")
    source = CORPUS / "hey_jarvis.tflite"
    (server.root / "m.tflite").write_bytes(source.read_bytes())
    local = ox.load(source)
    remote = ox.load(f"{server.url}/m.tflite")
    assert sorted(remote.graph.initializers) == sorted(local.graph.initializers)
    for name, tensor in local.graph.initializers.items():
        np.testing.assert_array_equal(remote.graph.initializers[name].numpy(), tensor.numpy())
    # The flatbuffer is the file (the schema's accessors need it whole): one request.
    assert len(_gets(server)) == 1
    local.close()
    remote.close()


# -- sharded checkpoints: the index, then each shard's header -------------------------------


def test_a_sharded_checkpoint_by_its_index_url_reads_only_index_and_headers(
    server: RangeServer,
) -> None:
    folder = server.root / "org" / "ckpt"
    arrays = _checkpoint(folder)
    model = ox.load(f"{server.url}/org/ckpt/model.safetensors.index.json")
    index_size = (folder / "model.safetensors.index.json").stat().st_size
    headers = sum(_header_bytes(p) for p in folder.glob("*.safetensors"))
    # one read of the index, one read of each shard's first 64 KiB (its header and more)
    assert len(_gets(server)) == 3, _gets(server)
    assert server.bytes_served <= index_size + 2 * (64 << 10)
    assert headers < server.bytes_served
    assert sorted(model.graph.initializers) == sorted(arrays)
    assert model.metadata_props["shard model-00002-of-00002.safetensors"] == "5 tensors"
    assert model.metadata_props["total_size"] == str(sum(a.nbytes for a in arrays.values()))
    server.reset_counts()
    name = "model.layers.1.k_proj.weight"
    np.testing.assert_array_equal(model.graph.initializers[name].numpy(), arrays[name])
    assert server.bytes_served == arrays[name].nbytes
    assert {p for _, p, _ in _gets(server)} == {"/org/ckpt/model-00002-of-00002.safetensors"}
    model.close()


def test_a_folder_url_finds_the_index_then_reads_like_the_local_folder(
    server: RangeServer,
) -> None:
    folder = server.root / "ckpt"
    _checkpoint(folder, rows=8)
    local = ox.load(folder)
    remote = ox.load(f"{server.url}/ckpt/")
    assert sorted(remote.graph.initializers) == sorted(local.graph.initializers)
    for name, tensor in local.graph.initializers.items():
        assert remote.graph.initializers[name].stats().to_dict() == tensor.stats().to_dict()
    assert remote.metadata_props == local.metadata_props
    assert remote.format == "safetensors"
    local.close()
    remote.close()


def test_a_folder_with_one_model_file(server: RangeServer) -> None:
    (server.root / "one").mkdir()
    save_file({"w": np.arange(6, dtype=np.float32)}, server.root / "one" / "model.safetensors")
    model = ox.load(f"{server.url}/one/")
    np.testing.assert_array_equal(model.graph.initializers["w"].numpy(), np.arange(6))
    probed = [p for m, p, _ in server.requests if m == "HEAD"]
    assert probed[0] == "/one/model.safetensors.index.json"  # asked first, missing
    model.close()


def test_a_peft_adapter_folder_url(server: RangeServer) -> None:
    folder = server.root / "adapter"
    folder.mkdir()
    save_file(
        {"base_model.model.layers.0.q_proj.lora_A.weight": np.ones((8, 16), np.float32)},
        folder / "adapter_model.safetensors",
    )
    (folder / "adapter_config.json").write_text(
        json.dumps({"peft_type": "LORA", "r": 8, "base_model_name_or_path": "org/base"})
    )
    model = ox.load(f"{server.url}/adapter/")
    assert model.producer_name == "PEFT adapter"
    assert model.metadata_props["adapter"] == "PEFT LORA"
    assert model.metadata_props["adapter base_model_name_or_path"] == "org/base"
    model.close()


def test_a_folder_holding_no_checkpoint_is_a_model_format_error(server: RangeServer) -> None:
    (server.root / "empty").mkdir()
    (server.root / "empty" / "README.md").write_text("nothing here")
    with pytest.raises(ModelFormatError, match="holding no model"):
        ox.load(f"{server.url}/empty/")


@pytest.mark.parametrize(
    "shard",
    [
        "../outside.safetensors",
        "sub/../../outside.safetensors",
        "%2e%2e/outside.safetensors",
        "/outside.safetensors",
        "http://127.0.0.1:1/outside.safetensors",
        "//evil.example/outside.safetensors",
        "shard.safetensors?x=../../outside.safetensors",
    ],
)
def test_an_index_naming_a_shard_outside_its_folder_is_refused_before_any_request(
    server: RangeServer, shard: str
) -> None:
    save_file({"w": np.ones(2, np.float32)}, server.root / "outside.safetensors")
    (server.root / "ckpt").mkdir()
    index = {"weight_map": {"w": shard}}
    (server.root / "ckpt" / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(UnsafePathError):
        ox.load(f"{server.url}/ckpt/model.safetensors.index.json")
    assert not any("outside" in p for _, p, _ in server.requests)


def test_a_missing_shard_is_named_without_credentials(server: RangeServer) -> None:
    _checkpoint(server.root / "ckpt", rows=4)
    (server.root / "ckpt" / "model-00002-of-00002.safetensors").unlink()
    host = server.url.removeprefix("http://")
    url = f"http://user:hunter2@{host}/ckpt/model.safetensors.index.json?token=s3cr3t"
    with pytest.raises(ExternalDataError) as caught:
        ox.load(url)
    message = str(caught.value)
    assert "model-00002-of-00002.safetensors" in message and "does not exist" in message
    assert "hunter2" not in message and "s3cr3t" not in message


def test_a_shard_server_ignoring_range_is_an_error_not_a_tensor(server: RangeServer) -> None:
    _checkpoint(server.root / "ckpt", rows=4)
    server.misbehave["/ckpt/model-00001-of-00002.safetensors"] = "ignore-range"
    with pytest.raises(ExternalDataError, match="ignored the range"):
        ox.load(f"{server.url}/ckpt/model.safetensors.index.json")


def test_an_index_naming_a_tensor_no_shard_holds(server: RangeServer) -> None:
    _checkpoint(server.root / "ckpt", rows=4)
    index_path = server.root / "ckpt" / "model.safetensors.index.json"
    table = json.loads(index_path.read_text())
    table["weight_map"]["ghost"] = "model-00001-of-00002.safetensors"
    index_path.write_text(json.dumps(table))
    with pytest.raises(ModelFormatError, match="no shard holds"):
        ox.load(f"{server.url}/ckpt/model.safetensors.index.json")


def test_index_bytes_need_a_folder_for_their_shards(tmp_path: Path) -> None:
    _checkpoint(tmp_path, rows=4)
    raw = (tmp_path / "model.safetensors.index.json").read_bytes()
    with pytest.raises(ModelFormatError, match="checkpoint index"):
        ox.load(raw, format="safetensors")
    model = ox.load(raw, format="safetensors", external_data_dir=tmp_path)
    assert len(model.graph.initializers) == 10
    model.close()


# -- stores that list, and the Hub's flow ---------------------------------------------------


@pytest.fixture
def memory_store() -> Iterator[Any]:
    from fsspec.implementations.memory import MemoryFileSystem

    fs = MemoryFileSystem()
    fs.store.clear()
    fs.pseudo_dirs.clear()
    fs.pseudo_dirs.append("")
    yield fs
    fs.store.clear()


def _put(fs: Any, path: str, arrays: dict[str, np.ndarray], tmp_path: Path) -> None:
    local = tmp_path / "put.safetensors"
    save_file(arrays, local)
    fs.pipe(path, local.read_bytes())


def test_a_store_that_lists_finds_a_checkpoint_of_any_file_name(
    memory_store: Any, tmp_path: Path
) -> None:
    unet = {"down.0.conv.weight": np.arange(12, dtype=np.float32).reshape(3, 4)}
    _put(memory_store, "/repo/unet/diffusion_pytorch_model.safetensors", unet, tmp_path)
    memory_store.pipe("/repo/unet/config.json", b"{}")
    for url in ("memory://repo/unet", "memory://repo/unet/"):
        model = ox.load(url)
        np.testing.assert_array_equal(
            model.graph.initializers["down.0.conv.weight"].numpy(), unet["down.0.conv.weight"]
        )
        assert model.graph.name == "unet"
        model.close()


def test_a_hub_web_url_is_read_as_hf_and_finds_the_repository_checkpoint(
    memory_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """huggingface_hub's file system is stood in for by the in-memory one under the
    ``hf`` protocol: the web URL → hf:// mapping, the folder route and the reads are ours."""
    from fsspec.implementations.memory import MemoryFileSystem

    seen: list[dict[str, Any]] = []

    class FakeHub(MemoryFileSystem):  # type: ignore[misc]
        protocol = "hf"

        @classmethod
        def _strip_protocol(cls, path: str) -> str:
            return str(super()._strip_protocol("memory://" + path.removeprefix("hf://")))

        def cat_file(self, path: str, start: Any = None, end: Any = None, **kw: Any) -> Any:
            seen.append(kw)
            return super().cat_file(path, start=start, end=end)

    registry = importlib.import_module("fsspec.registry")  # fsspec.registry is a view
    monkeypatch.setitem(registry._registry, "hf", FakeHub)
    arrays = {"model.embed_tokens.weight": RNG.standard_normal((8, 4)).astype(np.float32)}
    _put(memory_store, "/org/repo@main/model.safetensors", arrays, tmp_path)
    model = ox.load("https://huggingface.co/org/repo/tree/main")
    np.testing.assert_array_equal(
        model.graph.initializers["model.embed_tokens.weight"].numpy(),
        arrays["model.embed_tokens.weight"],
    )
    assert seen and all(kw == {"cache_type": "none"} for kw in seen)  # no read-ahead
    model.close()
    file_url = "https://huggingface.co/org/repo/resolve/main/model.safetensors?download=true"
    model = ox.load(file_url)
    assert list(model.graph.initializers) == ["model.embed_tokens.weight"]
    model.close()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://huggingface.co/org/repo", "hf://org/repo"),
        ("https://huggingface.co/org/repo/", "hf://org/repo"),
        ("https://hf.co/org/repo", "hf://org/repo"),
        ("https://www.huggingface.co/org/repo", "hf://org/repo"),
        ("https://huggingface.co/models/org/repo", "hf://org/repo"),
        ("https://huggingface.co/org/repo/tree/main", "hf://org/repo@main"),
        ("https://huggingface.co/org/repo/tree/main/unet", "hf://org/repo@main/unet"),
        ("https://huggingface.co/org/repo/tree", "hf://org/repo"),
        (
            "https://huggingface.co/org/repo/resolve/main/model.safetensors?download=true",
            "hf://org/repo@main/model.safetensors",
        ),
        ("https://huggingface.co/org/repo/blob/v1.0/sub/m.gguf", "hf://org/repo@v1.0/sub/m.gguf"),
        ("https://huggingface.co/org/repo/raw/abc123/m.tflite", "hf://org/repo@abc123/m.tflite"),
        (
            "https://huggingface.co/org/repo/blob/refs%2Fpr%2F1/m.gguf",
            "hf://org/repo@refs%2Fpr%2F1/m.gguf",
        ),
        (
            "https://huggingface.co/org/repo/resolve/main/my%20model.gguf",
            "hf://org/repo@main/my model.gguf",
        ),
        (
            "https://huggingface.co/datasets/org/data/resolve/main/x.safetensors",
            "hf://datasets/org/data@main/x.safetensors",
        ),
        ("https://huggingface.co/spaces/org/app", "hf://spaces/org/app"),
        ("https://user:pw@huggingface.co/org/repo#readme", "hf://org/repo"),
        # not the Hub: unchanged
        ("hf://org/repo@main", "hf://org/repo@main"),
        (
            "https://example.com/org/repo/resolve/main/m.gguf",
            "https://example.com/org/repo/resolve/main/m.gguf",
        ),
        (
            "https://huggingface.co.evil.example/org/repo",
            "https://huggingface.co.evil.example/org/repo",
        ),
        ("s3://bucket/org/repo", "s3://bucket/org/repo"),
    ],
)
def test_hub_web_urls_map_to_hf_urls(url: str, expected: str) -> None:
    assert hub_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "https://huggingface.co/",
        "https://huggingface.co/org",
        "https://huggingface.co/datasets/org",
        "https://huggingface.co/org/repo/discussions/3",
        "https://user:pw@huggingface.co/org/repo/commits/main?token=s3cr3t",
    ],
)
def test_hub_pages_that_name_no_file_or_folder_are_refused(url: str) -> None:
    with pytest.raises(ModelFormatError) as caught:
        hub_url(url)
    assert "pw@" not in str(caught.value) and "s3cr3t" not in str(caught.value)
