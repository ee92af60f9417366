"""The fuzz harnesses keep working: seeds go through, findings are told from bad input.

These run the harnesses' TestOneInput functions directly (no atheris needed), so a
change in the library that breaks a harness fails here rather than in a silent fuzz run.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import onnx
import pytest
from locations import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT))

import onnx_explorer as ox  # noqa: E402
from fuzz import common, make_corpus, text, wire  # noqa: E402
from fuzz.run import HARNESSES, harness_module, with_defaults  # noqa: E402
from onnx_explorer.errors import ModelFormatError  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from builders import mlp  # noqa: E402


def _seeds(harness: str) -> list[tuple[str, bytes]]:
    committed = sorted((ROOT / "fuzz" / "seeds" / harness).glob("*"))
    generated = list(make_corpus.seeds(harness))[:6]
    return [(p.name, p.read_bytes()) for p in committed] + generated


@pytest.mark.parametrize("harness", HARNESSES)
def test_every_seed_is_read_whole_without_an_error(harness: str) -> None:
    # A seed that fails early would leave the fuzzer exploring error paths only.
    module = harness_module(harness)
    seeds = _seeds(harness)
    assert len(seeds) >= 3
    for name, data in seeds:
        assert len(data) <= module.MAX_LEN, name
        module._run(data)  # no exception at all, not even an ExplorerError
        module.test_one_input(data)


@pytest.mark.parametrize("harness", HARNESSES)
def test_mutants_go_through_the_harness_or_end_in_an_explorer_error(harness: str) -> None:
    module = harness_module(harness)
    _, data = _seeds(harness)[0]
    for seed in range(20):
        mutant = module.custom_mutator(data, module.MAX_LEN, seed)
        assert isinstance(mutant, bytes) and len(mutant) <= module.MAX_LEN
        module.test_one_input(mutant)  # raises only on a finding (not a known open bug)


def test_a_finding_is_any_exception_but_the_projects_own() -> None:
    def bad_input(data: bytes) -> None:
        raise ModelFormatError("not a model")

    def bug(data: bytes) -> None:
        raise KeyError("oops")

    common.harness(bad_input)(b"")
    with pytest.raises(KeyError):
        common.harness(bug)(b"")


def test_known_open_bugs_match_by_exception_and_module(monkeypatch: pytest.MonkeyPatch) -> None:
    def bug(data: bytes) -> None:
        raise KeyError("oops")

    here = Path(__file__).name
    monkeypatch.setattr(common, "KNOWN_OPEN", (common.KnownBug("t", KeyError, here, "oo"),))
    common.harness(bug)(b"")
    monkeypatch.setattr(common, "KNOWN_OPEN", (common.KnownBug("t", KeyError, "other.py"),))
    with pytest.raises(KeyError):
        common.harness(bug)(b"")


def test_the_wire_tree_writes_back_the_same_bytes() -> None:
    data = mlp().SerializeToString()
    tree = wire.parse(data)
    assert tree is not None
    assert wire.serialize(tree) == data


def test_a_grown_length_prefix_is_a_format_error() -> None:
    data = mlp().SerializeToString()
    tree = wire.parse(data)
    assert tree is not None
    graph = next(f for f in tree if f.number == 7)  # ModelProto.graph
    graph.length_lie = 1 << 31
    with pytest.raises(ModelFormatError):
        ox.load(wire.serialize(tree), format="onnx")


def test_grown_dims_are_read_as_dims() -> None:
    proto = mlp()
    data = proto.SerializeToString()
    rng = random.Random(0)
    grown = 0
    for _ in range(30):
        tree = wire.parse(data)
        assert tree is not None
        wire.grow(tree, rng)
        try:
            onnx.ModelProto.FromString(wire.serialize(tree))
            grown += 1
        except Exception:
            pass
    assert grown > 10  # most growths keep the message parseable: they reach the reader


def test_text_mutations_keep_the_blocks_they_copy() -> None:
    src = b'node { name: "a" op: "Const" }\nnode { name: "b" op: "Add" input: "a" }\n'
    seen = {text.mutate_pbtxt(src, random.Random(seed)) for seed in range(40)}
    assert any(m is not None and m.count(b"node {") == 3 for m in seen)  # a node duplicated
    assert any(m is not None and m.count(b"node {") == 1 for m in seen)  # a node dropped


def test_caller_options_win_over_the_defaults() -> None:
    argv = with_defaults(["prog", "-max_len=10", "corpus"], 16384)
    assert "-max_len=10" in argv and "-max_len=16384" not in argv
    assert "-timeout=10" in argv and argv[-1] == "corpus"


def test_array_comparisons_run_untraced_and_the_rest_still_feed_the_fuzzer() -> None:
    """atheris 3.0.0 leaks the result of a traced comparison that makes a new object (an
    array): the harness input swaps its comparison hook for one that compares arrays
    directly, and that hands every other comparison to atheris as before."""
    atheris = pytest.importorskip("atheris")
    from types import SimpleNamespace

    import numpy as np
    from atheris.version_dependent import CMP_OP_SHIFT_AMOUNT

    from fuzz.run import untracing_array_comparisons

    traced: list[tuple[object, object]] = []

    def native(left: object, right: object, op: int, counter: int, is_const: bool) -> object:
        traced.append((left, right))
        return left == right

    fake = SimpleNamespace(_trace_cmp=native)
    seen: list[bytes] = []
    one_input = untracing_array_comparisons(fake, seen.append)
    one_input(b"x")  # the hook is swapped from inside the input (atheris.Fuzz binds its own)
    one_input(b"y")
    assert seen == [b"x", b"y"]
    less, equal = 0 << CMP_OP_SHIFT_AMOUNT, 2 << CMP_OP_SHIFT_AMOUNT
    result = fake._trace_cmp(np.arange(3), 1, equal, 7, True)
    assert result.tolist() == [False, True, False] and traced == []
    assert fake._trace_cmp(2, np.arange(4), less, 7, True).tolist() == [False, False, False, True]
    assert fake._trace_cmp("a", "a", equal, 7, False) is True
    assert traced == [("a", "a")]  # not an array: traced
    assert atheris is not None
