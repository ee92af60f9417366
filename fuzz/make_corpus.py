"""Write the seed corpora: ``python -m fuzz.make_corpus [OUT_DIR]`` (default ``fuzz/corpus``).

Seeds come from the models the tests and tutorials build in code (tests/builders.py,
onnx_explorer.samples), the committed GraphDef fixtures (tests/data/graphdef) and a
few models made here to reach every dtype and storage (typed fields, raw_data above
and below the reader's cut-out size, sparse, functions, Loop bodies, GraphDef splats).
Nothing is downloaded. The corpus is generated, not committed (fuzz/.gitignore);
fuzz/seeds/ holds a few small committed seeds.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper, numpy_helper

from onnx_explorer import samples
from onnx_explorer.readers.tensorflow.graphdef import _proto as pb

from .run import HARNESSES, harness_module

ROOT = Path(__file__).resolve().parent.parent
GRAPHDEF_DATA = ROOT / "tests" / "data" / "graphdef"


def _builders():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "tests"))
    import builders

    return builders


def _dtype_zoo() -> onnx.ModelProto:
    """One initializer per storage: typed fields, small and large raw_data, strings,
    sub-byte and 8-bit floats, a sparse initializer, metadata on a node."""
    inits = [
        numpy_helper.from_array(np.arange(6, dtype=np.float16).reshape(2, 3), "f16"),
        numpy_helper.from_array(np.linspace(-1, 1, 1100, dtype=np.float32), "f32_large"),
        numpy_helper.from_array(np.array([1.5, -2.0, np.nan, np.inf], dtype=np.float64), "f64"),
        numpy_helper.from_array(np.array([True, False, True]), "bool"),
        numpy_helper.from_array(np.array([-128, 0, 127], dtype=np.int8), "i8"),
        numpy_helper.from_array(np.array([1 << 40, -1], dtype=np.int64), "i64"),
        numpy_helper.from_array(np.array([1 + 2j], dtype=np.complex64), "c64"),
        helper.make_tensor("typed_f32", TensorProto.FLOAT, [2, 2], [1.0, 2.0, 3.0, 4.0]),
        helper.make_tensor("typed_i32", TensorProto.INT32, [3], [1, -2, 3]),
        helper.make_tensor("str", TensorProto.STRING, [2], [b"a", b"bc"]),  # type: ignore[list-item]
        helper.make_tensor("bf16", TensorProto.BFLOAT16, [2], [1.0, -2.0]),
        helper.make_tensor("f8", TensorProto.FLOAT8E4M3FN, [3], [1.0, 0.5, -3.0]),
        helper.make_tensor("i4", TensorProto.INT4, [5], [1, -2, 3, -4, 7]),
        helper.make_tensor("u4", TensorProto.UINT4, [3], [1, 2, 15]),
        helper.make_tensor("u8_raw", TensorProto.UINT8, [4], b"\x01\x02\x03\x04", raw=True),
    ]
    sparse = helper.make_sparse_tensor(
        helper.make_tensor("sp_values", TensorProto.FLOAT, [2], [1.0, 2.0]),
        helper.make_tensor("sp_indices", TensorProto.INT64, [2], [1, 5]),
        [3, 3],
    )
    node = helper.make_node("Identity", ["f16"], ["y"], name="/block/Identity")
    entry = node.metadata_props.add()
    entry.key, entry.value = "pkg.torch.onnx.name_scopes", "['block']"
    graph = helper.make_graph(
        [node], "zoo", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 3])],
        inits, sparse_initializer=[sparse],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _loop_and_function() -> onnx.ModelProto:
    """A Loop whose body holds a Constant, and a call of a model-local function."""
    body = helper.make_graph(
        [
            helper.make_node("Constant", [], ["one"], value_float=1.0),
            helper.make_node("Add", ["acc", "one"], ["acc_out"]),
            helper.make_node("Identity", ["cond"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc", TensorProto.FLOAT, []),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, []),
        ],
    )
    function = helper.make_function(
        "local", "Double", ["x"], ["y"], [helper.make_node("Add", ["x", "x"], ["y"])],
        [helper.make_opsetid("", 17)],
    )  # fmt: skip
    nodes = [
        helper.make_node("Loop", ["n", "c", "a"], ["out"], body=body, name="/loop"),
        helper.make_node("Double", ["out"], ["y"], domain="local", name="/double"),
    ]
    graph = helper.make_graph(
        nodes, "loop_and_function",
        [helper.make_tensor_value_info(v, t, []) for v, t in
         (("n", TensorProto.INT64), ("c", TensorProto.BOOL), ("a", TensorProto.FLOAT))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )  # fmt: skip
    return helper.make_model(
        graph,
        functions=[function],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
    )


def onnx_seeds() -> Iterator[tuple[str, bytes]]:
    b = _builders()
    models = {
        "mlp": b.mlp(),
        "mlp_unnamed": b.mlp(with_names=False),
        "nested_if": b.nested_if(2),
        "hostile": b.hostile(),
        "scoped_chain": b.scoped_chain(2, 4),
        "tiny_cnn": samples.tiny_cnn(),
        "tiny_transformer": samples.tiny_transformer(layers=1, hidden=8, heads=2, vocab=16),
        "dense_blocks": samples.dense_blocks(1, 2),
        "dtype_zoo": _dtype_zoo(),
        "loop_and_function": _loop_and_function(),
    }
    external = b.mlp()
    for tensor in external.graph.initializer:
        b.set_external(tensor, location="weights.bin", offset="0", length="16")
    models["external_refs"] = external
    for name, model in models.items():
        yield name, model.SerializeToString()


_GRAPHDEF_TEXTS = {
    "splat_and_half": """
        node { name: "splat" op: "Const"
          attr { key: "dtype" value { type: DT_FLOAT } }
          attr { key: "value" value { tensor { dtype: DT_FLOAT
            tensor_shape { dim { size: 4 } dim { size: 4 } } float_val: 0.5 } } } }
        node { name: "half" op: "Const"
          attr { key: "dtype" value { type: DT_HALF } }
          attr { key: "value" value { tensor { dtype: DT_HALF
            tensor_shape { dim { size: 2 } } half_val: 15360 half_val: 16384 } } } }
        node { name: "sum" op: "Add" input: "splat" input: "splat:0" input: "^half"
          attr { key: "T" value { type: DT_FLOAT } } }
    """,
    "strings_bools_ints": """
        node { name: "s" op: "Const"
          attr { key: "value" value { tensor { dtype: DT_STRING
            tensor_shape { dim { size: 2 } } string_val: "a" string_val: "bc" } } } }
        node { name: "b" op: "Const"
          attr { key: "value" value { tensor { dtype: DT_BOOL
            tensor_shape { dim { size: 3 } } bool_val: true bool_val: false } } } }
        node { name: "i" op: "Const"
          attr { key: "value" value { tensor { dtype: DT_INT64
            tensor_shape { dim { size: 2 } } int64_val: -1 int64_val: 4611686018427387904 } } } }
        node { name: "c" op: "Const"
          attr { key: "value" value { tensor { dtype: DT_INT32
            tensor_shape { dim { size: 2 } dim { size: 2 } }
            tensor_content: "\\001\\000\\000\\000\\002\\000\\000\\000"
                            "\\003\\000\\000\\000\\004\\000\\000\\000" } } } }
        node { name: "in" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
          attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } } }
    """,
}


def graphdef_texts() -> Iterator[tuple[str, bytes]]:
    for path in sorted(GRAPHDEF_DATA.glob("*.pbtxt")):
        yield path.stem, path.read_bytes()
    for name, text in _GRAPHDEF_TEXTS.items():
        yield name, text.encode()
    yield "frozen_tf1", samples.frozen_tf1_graphdef(blocks=1, batch_norm_ops=1)


def pbtxt_seeds() -> Iterator[tuple[str, bytes]]:
    """The text seeds as written, or on one line when only that fits the harness's
    ``MAX_LEN`` (the CNN's weights fit neither: the binary harness has them)."""
    limit = harness_module("pbtxt").MAX_LEN
    for name, text in graphdef_texts():
        if len(text) > limit:
            proto = pb.GraphDef()
            text_format.Parse(text.decode(), proto)
            text = text_format.MessageToString(proto, as_one_line=True).encode()
        if len(text) <= limit:
            yield name, text


def graphdef_binaries() -> Iterator[tuple[str, bytes]]:
    for path in sorted(GRAPHDEF_DATA.glob("*.pb")):
        yield path.stem, path.read_bytes()
    for name, text in graphdef_texts():
        if (GRAPHDEF_DATA / f"{name}.pb").exists():
            continue
        proto = pb.GraphDef()
        text_format.Parse(text.decode(), proto)
        yield name, proto.SerializeToString()


EXTERNAL_SEEDS = {
    "two_tensors": b"@size=4096\n@tensor=1:4,8\nlocation=weights.bin\noffset=0\nlength=128\n"
    b"@tensor=1:8\nlocation=weights.bin\noffset=128\nlength=32\n",
    "no_length": b"@size=64\n@tensor=2:64\nlocation=weights.bin\n",
    "constant_subdir": b"@size=0\n@constant=10:2,2\nlocation=sub/w.bin\noffset=8\n",
    "data_dir": b"@size=100\n@dir=sub\n@tensor=3:64\nlocation=w.bin\nlength=64\n",
    "checksum": b"@size=16\n@tensor=1:4\nlocation=weights.bin\nlength=16\n"
    b"checksum=0000000000000000000000000000000000000000\n",
    "escapes": b"@size=16\n@tensor=1:1\nlocation=escape.bin\n@tensor=1:1\nlocation=link.bin\n"
    b"@tensor=1:1\nlocation=fifo\n@tensor=1:1\nlocation=../outside.bin\n",
    "odd_entries": b"@size=32\n@tensor=16:2,2\nbasepath=/etc\nlocation=weights.bin\n"
    b"offset=4\nlocation=sub/w.bin\nlength=8\nx=y\n",
}


def seeds(harness: str) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of every seed of one harness."""
    if harness == "onnx":
        yield from onnx_seeds()
    elif harness == "graphdef":
        yield from graphdef_binaries()
    elif harness == "pbtxt":
        yield from pbtxt_seeds()
    elif harness == "external":
        yield from EXTERNAL_SEEDS.items()
    elif harness == "views":
        yield from onnx_seeds()
        for name, data in graphdef_binaries():
            yield f"graphdef_{name}", data
        yield "pbtxt_frozen_tf1", samples.frozen_tf1_graphdef(blocks=1, batch_norm_ops=1)
    elif harness == "run":
        from .harness_run import seeds as run_seeds

        yield from run_seeds()
    elif harness in ("bundle", "weights", "metrics", "diff"):  # the harness writes its own
        yield from harness_module(harness).seeds()
    else:
        raise ValueError(f"unknown harness {harness!r}")


def write_corpus(out: Path, harnesses: tuple[str, ...] = HARNESSES) -> dict[str, int]:
    """Write each harness's seeds (no longer than its MAX_LEN) to ``out/NAME``."""
    counts = {}
    for harness in harnesses:
        limit = harness_module(harness).MAX_LEN
        directory = out / harness
        directory.mkdir(parents=True, exist_ok=True)
        counts[harness] = 0
        for name, data in seeds(harness):
            if len(data) > limit:
                print(f"{harness}: seed {name} ({len(data)} bytes) is over {limit}: skipped")
                continue
            digest = hashlib.sha1(data).hexdigest()[:12]
            (directory / f"seed-{name}-{digest}").write_bytes(data)
            counts[harness] += 1
    return counts


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "corpus"
    for harness, count in write_corpus(out).items():
        print(f"{harness}: {count} seeds in {out / harness}")


if __name__ == "__main__":
    main()
