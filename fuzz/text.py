"""Structure-aware mutation of text inputs: protobuf text format (.pbtxt) and the
``key=value`` lines of the external-data harness.

Text format has blocks (``name { ... }``), numbers and quoted strings. The mutations
follow the same ideas as :mod:`.wire`: flip (a number to an interesting value, a
string to a hostile one), grow (a number or dim to a huge value, a block nested in
itself), splice (duplicate, delete or move a block or a line, or graft one from
another input), with plain byte mutation for the rest.
"""

from __future__ import annotations

import random
import re

from .wire import ByteMutate

_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
NUMBERS = (
    b"0", b"1", b"-1", b"2", b"255", b"256", b"65536", b"2147483647", b"2147483648",
    b"4294967296", b"70368744177664", b"9223372036854775807", b"9223372036854775808",
    b"18446744073709551615", b"-9223372036854775808", b"1e308", b"nan", b"inf", b"-inf",
    b"1" * 60, b"1" * 5000,
)  # fmt: skip
STRINGS = (
    b'""', b'"/"', b'"' + b"/" * 300 + b'"', b'"^a"', b'"a:1"', b'"a:99999999999"',
    b'"\\377\\376"', b'"<script>x</script>"', b'"\\000"', b'"' + b"x" * 2000 + b'"',
    b'"DT_STRING"', b'"../../etc/passwd"',
)  # fmt: skip


def _blocks(text: bytes) -> list[tuple[int, int]]:
    """(start, end) of every ``name { ... }`` / ``name < ... >`` block, quotes respected."""
    spans: list[tuple[int, int]] = []
    stack: list[int] = []
    line_start = 0
    i = 0
    while i < len(text):
        c = text[i]
        if c == ord('"'):
            m = _STRING.match(text, i)
            i = m.end() if m else i + 1
            continue
        if c == ord("\n"):
            line_start = i + 1
        elif c in b"{<":
            stack.append(line_start)
        elif c in b"}>" and stack:
            spans.append((stack.pop(), i + 1))
        i += 1
    return spans


def mutate_pbtxt(text: bytes, rng: random.Random) -> bytes | None:
    """One structural change to a text-format message, or None when none applies."""
    roll = rng.random()
    numbers = list(_NUMBER.finditer(text))
    strings = list(_STRING.finditer(text))
    blocks = _blocks(text)
    if roll < 0.3 and numbers:  # flip / grow a number (a dim, a dtype enum, a port)
        m = rng.choice(numbers)
        return text[: m.start()] + rng.choice(NUMBERS) + text[m.end() :]
    if roll < 0.45 and strings:
        m = rng.choice(strings)
        return text[: m.start()] + rng.choice(STRINGS) + text[m.end() :]
    if not blocks:
        return None
    start, end = rng.choice(blocks)
    block = text[start:end]
    if roll < 0.6:  # duplicate: one more node, dim, attr, tensor value
        return text[:end] + b"\n" + block + text[end:]
    if roll < 0.7:
        return text[:start] + text[end:]
    if roll < 0.8:  # nest a block inside itself (deeper messages)
        inner = block.rfind(b"}")
        if inner <= 0:
            return None
        return text[:start] + block[:inner] + block + block[inner:] + text[end:]
    # move a block elsewhere (a node into a function, a dim into a tensor)
    other_start, other_end = rng.choice(blocks)
    where = text.rfind(b"}", other_start, other_end)
    if where < 0:
        return None
    return text[:where] + block + b"\n" + text[where:]


def crossover_lines(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    """Lines of ``data2`` inserted among those of ``data1`` (splice of text inputs)."""
    rng = random.Random(seed)
    lines1, lines2 = data1.split(b"\n"), data2.split(b"\n")
    start = rng.randrange(len(lines2))
    piece = lines2[start : start + rng.randint(1, 8)]
    at = rng.randrange(len(lines1) + 1)
    return b"\n".join(lines1[:at] + piece + lines1[at:])[:max_size]


def mutate_text(
    data: bytes,
    max_size: int,
    seed: int,
    byte_mutate: ByteMutate,
    structure_share: float = 0.7,
) -> bytes:
    """A pbtxt mutant: structure-aware most of the time, plain bytes otherwise."""
    rng = random.Random(seed)
    if rng.random() < structure_share:
        out = mutate_pbtxt(data, rng)
        if out is not None and out != data and len(out) <= max_size:
            return out
    return byte_mutate(data, max_size)
