"""Models on the network: opened by URL, read by range requests, as untrusted as files.

Everything runs offline: a local HTTP server with Range support (tests/range_server.py,
which counts the bytes it serves and can misbehave) and a moto S3 server.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from builders import mlp, set_external, with_external_data
from onnx import TensorProto, helper, numpy_helper
from range_server import RangeServer

import onnx_explorer as ox
from onnx_explorer.cli import main
from onnx_explorer.errors import ExternalDataError, ModelFormatError, UnsafePathError
from onnx_explorer.sources import redact_url
from onnx_explorer.sources.remote import DEFAULT_BLOCK_SIZE

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")


@pytest.fixture
def server(tmp_path):
    srv = RangeServer(tmp_path / "site").start()
    srv.root.mkdir(parents=True, exist_ok=True)
    yield srv
    srv.stop()


def big_external_model(directory: Path, tensors: int = 4, elements: int = 1 << 18):
    """A chain of MatMuls whose weights (1 MB each) live in one external file."""
    rng = np.random.default_rng(0)
    arrays = {f"w{i}": rng.standard_normal(elements).astype(np.float32) for i in range(tensors)}
    blob = bytearray()
    inits = []
    for name, arr in arrays.items():
        tensor = numpy_helper.from_array(arr, name)
        set_external(tensor, location="weights.bin", offset=str(len(blob)),
                     length=str(arr.nbytes))  # fmt: skip
        blob += arr.tobytes()
        inits.append(tensor)
    nodes = [helper.make_node("Add", ["x", name], [f"y{i}"]) for i, name in enumerate(arrays)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [elements])
         for i in range(tensors)], inits,
    )  # fmt: skip
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "weights.bin").write_bytes(bytes(blob))
    onnx.save(helper.make_model(graph), directory / "model.onnx")
    return directory / "model.onnx", arrays


def big_embedded_model(path: Path, tensors: int = 8, elements: int = 1 << 18):
    """Weights embedded as raw_data (1 MB each): the wire walk must skip them."""
    rng = np.random.default_rng(1)
    arrays = {f"e{i}": rng.standard_normal(elements).astype(np.float32) for i in range(tensors)}
    inits = [numpy_helper.from_array(arr, name) for name, arr in arrays.items()]
    nodes = [helper.make_node("Add", ["x", name], [f"y{i}"]) for i, name in enumerate(arrays)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [elements])
         for i in range(tensors)], inits,
    )  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(helper.make_model(graph), path)
    return path, arrays


# -- opening and reading ------------------------------------------------------------------


def test_opening_a_url_fetches_the_graph_and_no_weight_byte(server):
    path, _ = big_external_model(server.root / "m")
    model = ox.load(f"{server.url}/m/model.onnx")
    graph_bytes = path.stat().st_size
    assert graph_bytes <= server.bytes_served <= graph_bytes + 64 * 1024
    assert not any(p.endswith("weights.bin") for _, p, _ in server.requests)
    assert len(model.graph.nodes) == 4


def test_a_tensor_read_fetches_its_bytes_and_at_most_one_block(server):
    _, arrays = big_external_model(server.root / "m")
    model = ox.load(f"{server.url}/m/model.onnx")
    server.reset_counts()
    values = model.graph.initializers["w2"].numpy()
    np.testing.assert_array_equal(values, arrays["w2"])
    assert arrays["w2"].nbytes <= server.bytes_served <= arrays["w2"].nbytes + DEFAULT_BLOCK_SIZE
    assert values.flags.writeable is False


def test_statistics_and_histogram_of_a_remote_tensor_match_the_local_file(server):
    path, _ = big_external_model(server.root / "m")
    local = ox.load(path).graph.initializers["w1"]
    remote = ox.load(f"{server.url}/m/model.onnx").graph.initializers["w1"]
    assert remote.stats().to_dict() == local.stats().to_dict()
    assert remote.histogram(bins=20).counts.tolist() == local.histogram(bins=20).counts.tolist()


def test_an_embedded_weights_model_is_walked_by_ranges_skipping_the_weights(server, monkeypatch):
    from onnx_explorer.readers import _remote as remote_reader
    from onnx_explorer.readers.protobuf import _wire as protowire

    for module in (remote_reader, protowire):  # walk even this 8 MB file by ranges
        monkeypatch.setattr(module, "READ_WHOLE", 0)
    path, arrays = big_embedded_model(server.root / "e" / "model.onnx")
    model = ox.load(f"{server.url}/e/model.onnx")
    assert server.bytes_served < path.stat().st_size // 20
    tensor = model.graph.initializers["e5"]
    assert tensor.location.kind == "embedded"
    np.testing.assert_array_equal(tensor.numpy(), arrays["e5"])
    assert tensor.stats().max == pytest.approx(float(arrays["e5"].max()))


def test_opening_embedded_weights_by_ranges_costs_about_one_request_per_tensor(server, monkeypatch):
    """Each request is a round trip (tens of ms to S3): the walk comes back to every
    tensor's header (the graph's scan, the tensor's scan, its rewrite) and those returns
    are served from what it fetched, not asked again (it made 3 requests per tensor)."""
    from onnx_explorer.readers import _remote as remote_reader
    from onnx_explorer.readers.protobuf import _wire as protowire

    for module in (remote_reader, protowire):
        monkeypatch.setattr(module, "READ_WHOLE", 0)
    _, arrays = big_embedded_model(server.root / "r" / "model.onnx", tensors=24)
    model = ox.load(f"{server.url}/r/model.onnx")
    gets = [r for r in server.requests if r[0] == "GET"]
    assert len(gets) <= 24 + 6, gets
    assert sorted(model.graph.initializers) == sorted(arrays)
    np.testing.assert_array_equal(model.graph.initializers["e17"].numpy(), arrays["e17"])


def test_a_small_model_with_embedded_weights_opens_in_one_request(server):
    onnx.save(mlp(), server.root / "mlp.onnx")
    model = ox.load(f"{server.url}/mlp.onnx")
    gets = [r for r in server.requests if r[0] == "GET"]
    assert len(gets) == 1
    expected = numpy_helper.to_array(mlp().graph.initializer[0])
    np.testing.assert_array_equal(model.graph.initializers["/layer1/W"].numpy(), expected)


def test_checksum_of_remote_external_data_is_verified(server):
    with_external_data(server.root / "c")
    model = ox.load(f"{server.url}/c/model.onnx")
    assert model.graph.initializers["/layer1/W"].verify_checksum() is True
    blob = server.root / "c" / "weights.bin"
    blob.write_bytes(blob.read_bytes()[::-1])
    again = ox.load(f"{server.url}/c/model.onnx")
    assert again.graph.initializers["/layer1/W"].verify_checksum() is False


def test_cache_dir_makes_reopening_and_rereading_transfer_no_data(server, tmp_path):
    _, arrays = big_external_model(server.root / "m")
    url = f"{server.url}/m/model.onnx"
    with ox.load(url, cache_dir=tmp_path / "cache") as model:
        model.graph.initializers["w0"].numpy()
    server.reset_counts()
    with ox.load(url, cache_dir=tmp_path / "cache") as model:
        np.testing.assert_array_equal(model.graph.initializers["w0"].numpy(), arrays["w0"])
    assert server.bytes_served == 0, server.requests
    assert {method for method, _, _ in server.requests} == {"HEAD"}


def test_every_cli_command_accepts_a_url(server, capsys):
    with_external_data(server.root / "c")
    url = f"{server.url}/c/model.onnx"
    assert main(["weights", url, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} == {"/layer1/W", "/layer1/b", "/layer2/W"}
    assert main(["summary", url]) == 0
    assert "MatMul" in capsys.readouterr().out
    assert main(["metrics", url]) == 0
    assert main(["diff", url, url]) == 0


def test_explore_opens_a_url(server):
    with_external_data(server.root / "c")
    explorer = ox.explore(f"{server.url}/c/model.onnx")
    assert len(explorer.model.graph.nodes) == 4


# -- hostile locations, redirects and servers -----------------------------------------------


@pytest.mark.parametrize(
    "location",
    [
        "../secret.bin",
        "sub/../../secret.bin",
        "%2e%2e/secret.bin",
        "/secret.bin",
        "http://127.0.0.1:1/secret.bin",
        "//evil.example/secret.bin",
        "weights.bin?x=../../secret.bin",
        "C:/secret.bin",
    ],
)
def test_a_location_leaving_the_models_url_is_refused_before_any_request(server, location):
    (server.root / "secret.bin").write_bytes(b"\0" * 64)
    model = mlp()
    set_external(model.graph.initializer[1], location=location, offset="0", length="32")
    (server.root / "m").mkdir()
    onnx.save(model, server.root / "m" / "model.onnx")
    loaded = ox.load(f"{server.url}/m/model.onnx")
    server.reset_counts()
    with pytest.raises(UnsafePathError):
        loaded.graph.initializers["/layer1/b"].numpy()
    assert server.requests == []


def test_a_redirect_to_another_host_is_refused(server):
    with_external_data(server.root / "c")
    other = f"http://localhost:{server.port}/c/weights.bin"  # same server, another host name
    server.misbehave["/c/weights.bin"] = ("redirect", other)
    model = ox.load(f"{server.url}/c/model.onnx")
    with pytest.raises(UnsafePathError, match="another host"):
        model.graph.initializers["/layer1/W"].numpy()
    assert not any(r[0] == "GET" and r[1] == "/c/weights.bin" for r in server.requests)


@pytest.mark.parametrize("behaviour", ["ignore-range", "short", "long"])
def test_a_server_returning_other_bytes_than_asked_is_an_error_not_a_tensor(server, behaviour):
    big_external_model(server.root / "m")
    model = ox.load(f"{server.url}/m/model.onnx")
    server.misbehave["/m/weights.bin"] = behaviour
    with pytest.raises(ExternalDataError, match="asked for"):
        model.graph.initializers["w1"].numpy()
    with pytest.raises(ExternalDataError):
        model.graph.initializers["w1"].stats()


def test_sizes_declared_by_the_model_are_checked_against_the_object_before_reading(server):
    model = mlp()
    set_external(model.graph.initializer[1], location="w.bin", offset="0", length="32")
    (server.root / "m").mkdir()
    (server.root / "m" / "w.bin").write_bytes(b"\0" * 16)  # shorter than declared
    onnx.save(model, server.root / "m" / "model.onnx")
    loaded = ox.load(f"{server.url}/m/model.onnx")
    server.reset_counts()
    with pytest.raises(ExternalDataError, match="run past the end"):
        loaded.graph.initializers["/layer1/b"].numpy()
    assert [method for method, _, _ in server.requests] == ["HEAD"]


def test_missing_objects_are_named_errors(server):
    with pytest.raises(ModelFormatError, match="does not exist"):
        ox.load(f"{server.url}/nothing/model.onnx")
    with_external_data(server.root / "c")
    (server.root / "c" / "weights.bin").unlink()
    model = ox.load(f"{server.url}/c/model.onnx")
    with pytest.raises(ExternalDataError, match="weights.bin' does not exist"):
        model.graph.initializers["/layer1/W"].numpy()
    assert main(["weights", f"{server.url}/c/model.onnx", "--json"]) == 0  # rows with errors


def test_credentials_and_signed_url_tokens_never_appear_in_errors_or_reprs(server, capsys):
    big_external_model(server.root / "m")
    secret_url = f"http://alice:hunter2@127.0.0.1:{server.port}/m/model.onnx?X-Signature=TOKEN42"
    model = ox.load(secret_url)
    tensor = model.graph.initializers["w0"]
    server.misbehave["/m/weights.bin"] = "short"
    shown = [repr(model), repr(tensor), tensor.location.describe()]
    with pytest.raises(ExternalDataError) as failure:
        tensor.numpy()
    shown.append(str(failure.value))
    with pytest.raises(ModelFormatError) as missing:
        ox.load(f"http://alice:hunter2@127.0.0.1:{server.port}/gone.onnx?token=TOKEN42")
    shown.append(str(missing.value))
    assert main(["summary", f"http://bob:pw1234@127.0.0.1:{server.port}/x.onnx?t=TOKEN42"]) != 0
    shown.append(capsys.readouterr().err)
    for text in shown:
        for secret in ("hunter2", "alice", "TOKEN42", "pw1234"):
            assert secret not in text, text


def test_redact_url_drops_user_info_query_and_fragment():
    assert redact_url("s3://key:secret@bucket/a/m.onnx?versionId=1#x") == "s3://bucket/a/m.onnx"
    assert redact_url("https://u:p@host:8443/m.onnx?sig=abc") == "https://host:8443/m.onnx"


# -- S3 (moto) --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3():
    pytest.importorskip("s3fs")
    server_module = pytest.importorskip("moto.server")
    import boto3

    moto = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="testing",
        aws_secret_access_key="testing-secret", region_name="us-east-1",
    )  # fmt: skip
    client.create_bucket(Bucket="models")
    options = {
        "key": "testing",
        "secret": "testing-secret",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
        "skip_instance_cache": True,
    }
    yield client, options
    moto.stop()


def test_a_model_in_s3_is_read_by_ranged_gets(s3, tmp_path):
    client, options = s3
    path, arrays = big_external_model(tmp_path / "m", tensors=2)
    for name in ("model.onnx", "weights.bin"):
        client.put_object(
            Bucket="models", Key=f"zoo/{name}", Body=(path.parent / name).read_bytes()
        )
    model = ox.load("s3://models/zoo/model.onnx", storage_options=options)
    tensor = model.graph.initializers["w1"]
    np.testing.assert_array_equal(tensor.numpy(), arrays["w1"])
    assert tensor.stats().min == pytest.approx(float(arrays["w1"].min()))
    assert "testing-secret" not in repr(model) + tensor.location.describe()


def test_a_missing_s3_object_is_a_named_error(s3, tmp_path):
    client, options = s3
    path, _ = big_external_model(tmp_path / "m", tensors=1)
    client.put_object(Bucket="models", Key="lonely/model.onnx", Body=path.read_bytes())
    model = ox.load("s3://models/lonely/model.onnx", storage_options=options)
    with pytest.raises(ExternalDataError, match="weights.bin' does not exist"):
        model.graph.initializers["w0"].numpy()
    with pytest.raises(ModelFormatError, match="does not exist"):
        ox.load("s3://models/nowhere/model.onnx", storage_options=options)


# -- many models, in parallel ----------------------------------------------------------------


def _zoo(server):
    paths = []
    for i in range(3):
        path, _ = big_external_model(server.root / f"zoo{i}", tensors=2, elements=1 << 12)
        paths.append(f"{server.url}/zoo{i}/model.onnx")
    onnx.save(mlp(), server.root / "mlp.onnx")
    return [*paths, f"{server.url}/mlp.onnx", str(path)]  # URLs and a local path


def _comparable(result):
    return [(m.source, m.error, m.totals.to_dict(), m.rows) for m in result.models], (
        result.totals.to_dict()
    )


def test_weights_report_many_merges_exactly_what_one_process_reports(server):
    from onnx_explorer.weights._report import weights_report

    sources = _zoo(server)
    result = ox.weights_report_many(sources, workers=1, bins=16, range=(-4.0, 4.0))
    for source, report in zip(sources, result.models):
        with ox.load(source) as model:
            assert report.rows == weights_report(model, progress=False, as_list=True)
            values = np.concatenate(
                [t.numpy().astype(np.float64).ravel() for t in model.graph.initializers.values()]
            )
        assert report.totals.values == values.size
        assert report.totals.min == values.min() and report.totals.max == values.max()
        assert report.totals.counts == np.histogram(values, bins=16, range=(-4, 4))[0].tolist()
    every = sum(m.totals.values for m in result.models)
    assert result.totals.values == every
    assert sum(result.totals.counts) + result.totals.below + result.totals.above == every
    assert result.totals.max == max(m.totals.max for m in result.models)


def test_weights_report_many_on_a_dask_cluster_equals_the_single_process_report(server):
    distributed = pytest.importorskip("dask.distributed")
    sources = _zoo(server)
    alone = ox.weights_report_many(sources, workers=1)
    with (
        distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        spread = ox.weights_report_many(sources, client=client)
    assert _comparable(spread) == _comparable(alone)
    pooled = ox.weights_report_many(sources, workers=2)  # a local process pool
    assert _comparable(pooled) == _comparable(alone)


def test_a_source_that_cannot_be_opened_is_one_failed_entry(server):
    result = ox.weights_report_many([f"{server.url}/none.onnx", *_zoo(server)[:1]], workers=1)
    assert "does not exist" in result.models[0].error
    assert result.totals.values == result.models[1].totals.values > 0


def test_cli_weights_many_prints_one_line_per_model_and_the_merge(server, capsys):
    sources = _zoo(server)[:2]
    assert main(["weights", "--many", *sources, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["source"] for m in out["models"]] == sources
    assert out["totals"]["values"] == sum(m["totals"]["values"] for m in out["models"])
    assert main(["weights", "--many", *sources]) == 0
    assert "all models" in capsys.readouterr().out
    assert main(["weights", *sources]) != 0  # several models without --many: told to add it
