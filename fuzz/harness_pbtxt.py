"""Harness 3, the text GraphDef reader (``.pbtxt``): nesting limit, text parse, model, tensors.

Input: the text of a ``.pbtxt`` file. The text parser is called whatever the bytes look
like (the public ``load`` would send binary-looking mutants to the binary reader).
Mutation is structure-aware (:mod:`fuzz.text`).
"""

from __future__ import annotations

from onnx_explorer.readers.tensorflow.graphdef._read import model_from_graphdef, parse_text
from onnx_explorer.readers.tensorflow.graphdef._tensors import TensorContext

from . import text, wire
from .common import harness, walk_model

NAME = "pbtxt"
#: Room for every structure (nodes, attributes, tensors, functions) and for a number past
#: Python's 4,300-digit int limit (a past finding); longer inputs only slow protobuf's
#: pure-Python text parser, which is most of each input.
MAX_LEN = 6144


def _run(data: bytes) -> None:
    """Parse the text, build the model, walk it and read every weight."""
    proto = parse_text(data, "the fuzzed text")
    with model_from_graphdef(proto, name="fuzzed", ctx=TensorContext("memory")) as model:
        walk_model(model)


test_one_input = harness(_run)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    return text.mutate_text(data, max_size, seed, wire.default_byte_mutate())


def custom_crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    return text.crossover_lines(data1, data2, max_size, seed)
