"""Structure-aware mutation of protobuf wire format (ONNX ModelProto, binary GraphDef).

Byte mutation alone rarely gets past the first length prefix: changing one byte of a
nested message breaks every enclosing length. Here an input is parsed into a tree of
fields without any schema (a length-delimited payload that parses cleanly as fields is
taken as a sub-message), mutated as a tree, and written back with its lengths
recomputed, except where a mutation deliberately lies about a length.

The mutations: flip (a varint to an interesting value, a bit, a wire type), grow (a
length prefix past the bytes that follow it, a dimension-like varint to a huge value,
an extra repeated varint such as one more dim), splice (duplicate, delete, swap or
move a field, or graft one from another input), and byte mutation of one leaf payload.
Pure Python with a seeded ``random.Random``; the byte mutation is passed in (atheris's
``Mutate`` when fuzzing, a simple one in tests).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

#: How deep payloads are parsed as sub-messages (ONNX nests graph → node → attr → graph...).
MAX_DEPTH = 24
#: Varint values worth trying where a size, a dim, an enum or a count is expected.
INTERESTING = (
    0, 1, 2, 7, 8, 15, 16, 17, 127, 128, 255, 256, 4096, 65535, 65536,
    (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 32, 1 << 46, 1 << 53, (1 << 63) - 1, 1 << 63,
    (1 << 64) - 1, (1 << 64) - 2,  # -1 and -2 as int64
)  # fmt: skip
#: Extra bytes a grown length prefix claims (past the end of the enclosing message).
LENGTH_GROWTH = (1, 2, 3, 16, 255, 1 << 16, (1 << 31) - 1, 1 << 32, (1 << 63) - 1)

ByteMutate = Callable[[bytes, int], bytes]


@dataclass
class Field:
    """One field: a varint, a fixed 32/64-bit value, or a length-delimited payload."""

    number: int
    wire: int  # 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
    value: int | bytes = 0  # int for varints, bytes for fixed and leaf payloads
    children: list[Field] | None = None  # a payload that parsed as a message
    length_lie: int = 0  # added to the true length when written (a "grown" prefix)

    def copy(self) -> Field:
        children = [c.copy() for c in self.children] if self.children is not None else None
        return Field(self.number, self.wire, self.value, children, self.length_lie)


@dataclass
class Message:
    fields: list[Field] = field(default_factory=list)


def _read_varint(buf: bytes, pos: int) -> tuple[int, int] | None:
    result = shift = 0
    while pos < len(buf) and shift < 70:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    return None


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def parse(buf: bytes, depth: int = 0) -> list[Field] | None:
    """The fields of ``buf``, or None when it is not cleanly a sequence of fields."""
    fields: list[Field] = []
    pos = 0
    while pos < len(buf):
        tag = _read_varint(buf, pos)
        if tag is None:
            return None
        key, pos = tag
        number, wire = key >> 3, key & 7
        if number == 0 or number > (1 << 29) - 1:
            return None
        if wire == 0:
            value = _read_varint(buf, pos)
            if value is None:
                return None
            fields.append(Field(number, 0, value[0]))
            pos = value[1]
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(buf):
                return None
            fields.append(Field(number, wire, buf[pos : pos + size]))
            pos += size
        elif wire == 2:
            length = _read_varint(buf, pos)
            if length is None:
                return None
            size, pos = length
            if pos + size > len(buf):
                return None
            payload = buf[pos : pos + size]
            pos += size
            children = parse(payload, depth + 1) if payload and depth < MAX_DEPTH else None
            fields.append(Field(number, 2, payload, children))
        else:
            return None  # groups (3, 4) and invalid wire types: leave to byte mutation
    return fields


def serialize(fields: list[Field]) -> bytes:
    out = bytearray()
    for f in fields:
        out += varint(f.number << 3 | f.wire)
        if f.wire == 0:
            out += varint(int(f.value) if isinstance(f.value, int) else 0)
        elif f.wire == 2:
            payload = serialize(f.children) if f.children is not None else _as_bytes(f.value)
            out += varint(len(payload) + f.length_lie) + payload
        else:
            out += _as_bytes(f.value)
    return bytes(out)


def _as_bytes(value: int | bytes) -> bytes:
    return value if isinstance(value, bytes) else varint(value)


def _all_fields(fields: list[Field]) -> list[tuple[list[Field], int]]:
    """Every field at every depth, as (the list holding it, its index)."""
    found: list[tuple[list[Field], int]] = []
    stack = [fields]
    while stack:
        current = stack.pop()
        for i, f in enumerate(current):
            found.append((current, i))
            if f.children is not None:
                stack.append(f.children)
    return found


def _messages(fields: list[Field]) -> list[list[Field]]:
    found = [fields]
    for holder, i in _all_fields(fields):
        children = holder[i].children
        if children is not None:
            found.append(children)
    return found


# -- the mutations: each changes the tree in place and says whether it did anything ------
def flip(tree: list[Field], rng: random.Random) -> bool:
    """A varint to an interesting value or one bit flipped, or a field's wire type changed."""
    spots = _all_fields(tree)
    if not spots:
        return False
    holder, i = rng.choice(spots)
    f = holder[i]
    roll = rng.random()
    if f.wire == 0 and roll < 0.7:
        value = int(f.value) if isinstance(f.value, int) else 0
        f.value = (
            rng.choice(INTERESTING) if rng.random() < 0.6 else value ^ (1 << rng.randrange(64))
        )
    elif f.wire == 5 or f.wire == 1:
        raw = bytearray(_as_bytes(f.value))
        raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        f.value = bytes(raw)
    else:
        new_wire = rng.choice([w for w in (0, 1, 2, 5) if w != f.wire])
        payload = serialize(f.children) if f.children is not None else _as_bytes(f.value)
        f.children = None
        f.wire = new_wire
        if new_wire == 0:
            f.value = int.from_bytes(payload[:9].ljust(1, b"\0"), "little")
        elif new_wire == 2:
            f.value = payload
        else:
            f.value = payload[: 8 if new_wire == 1 else 4].ljust(8 if new_wire == 1 else 4, b"\0")
    return True


def grow(tree: list[Field], rng: random.Random) -> bool:
    """A length prefix claims more bytes than follow, a dim-like varint grows, or one more
    repeated varint (an extra dim) appears next to one."""
    spots = _all_fields(tree)
    varints = [(h, i) for h, i in spots if h[i].wire == 0]
    delimited = [(h, i) for h, i in spots if h[i].wire == 2]
    roll = rng.random()
    if delimited and (roll < 0.35 or not varints):
        holder, i = rng.choice(delimited)
        holder[i].length_lie = rng.choice(LENGTH_GROWTH) * rng.choice((1, 1, 1, -1))
        if holder[i].length_lie < 0:  # a shrunk prefix: never below zero bytes
            payload = serialize([holder[i]])
            holder[i].length_lie = -min(-holder[i].length_lie, max(len(payload) - 2, 0))
        return True
    if not varints:
        return False
    holder, i = rng.choice(varints)
    f = holder[i]
    if roll < 0.7:
        value = int(f.value) if isinstance(f.value, int) else 0
        f.value = max(value, 1) << rng.choice((1, 4, 8, 16, 31, 32, 40, 46, 62))
    else:
        extra = Field(f.number, 0, rng.choice(INTERESTING))
        holder.insert(i + rng.randrange(2), extra)
    return True


def splice(tree: list[Field], rng: random.Random, donor: list[Field] | None = None) -> bool:
    """Duplicate, delete, swap or move fields; with ``donor``, graft one of its fields."""
    spots = _all_fields(tree)
    if not spots:
        return False
    holder, i = rng.choice(spots)
    roll = rng.random()
    if donor:
        donor_spots = _all_fields(donor)
        d_holder, d_i = rng.choice(donor_spots)
        target = rng.choice(_messages(tree))
        target.insert(rng.randrange(len(target) + 1), d_holder[d_i].copy())
    elif roll < 0.3:
        holder.insert(i, holder[i].copy())  # a repeated field once more
    elif roll < 0.5:
        del holder[i]
    elif roll < 0.7 and len(holder) > 1:
        j = rng.randrange(len(holder))
        holder[i], holder[j] = holder[j], holder[i]
    else:  # a field copied into another message (a node into a subgraph, a dim elsewhere)
        target = rng.choice(_messages(tree))
        target.insert(rng.randrange(len(target) + 1), holder[i].copy())
    return True


def mutate_leaf(tree: list[Field], rng: random.Random, byte_mutate: ByteMutate) -> bool:
    """Byte mutation of one leaf payload (a name, raw_data, a packed array)."""
    leaves = [(h, i) for h, i in _all_fields(tree) if h[i].wire == 2 and h[i].children is None]
    if not leaves:
        return False
    holder, i = rng.choice(leaves)
    value = holder[i].value
    payload = value if isinstance(value, bytes) else b""
    holder[i].value = byte_mutate(payload, max(len(payload) * 2, 64))
    return True


def mutate(
    data: bytes,
    max_size: int,
    seed: int,
    byte_mutate: ByteMutate,
    structure_share: float = 0.7,
) -> bytes:
    """One mutant of ``data``: structure-aware most of the time, plain bytes otherwise."""
    rng = random.Random(seed)
    tree = parse(data) if rng.random() < structure_share else None
    if tree:
        for _ in range(1 + (rng.random() < 0.3)):  # sometimes two at once
            op = rng.choice((flip, flip, grow, grow, splice, "leaf"))
            if op == "leaf":
                mutate_leaf(tree, rng, byte_mutate)
            else:
                op(tree, rng)  # type: ignore[operator]
        out = serialize(tree)
        if out != data and len(out) <= max_size:
            return out
    return byte_mutate(data, max_size)


def crossover(data1: bytes, data2: bytes, max_size: int, seed: int) -> bytes:
    """A field of ``data2`` grafted somewhere into ``data1`` (else a plain byte splice)."""
    rng = random.Random(seed)
    tree, donor = parse(data1), parse(data2)
    if tree and donor:
        splice(tree, rng, donor)
        out = serialize(tree)
        if len(out) <= max_size:
            return out
    cut1, cut2 = rng.randrange(len(data1) + 1), rng.randrange(len(data2) + 1)
    return (data1[:cut1] + data2[cut2:])[:max_size]


def simple_byte_mutate(data: bytes, max_size: int, rng: random.Random | None = None) -> bytes:
    """A stand-in for atheris.Mutate where atheris is not running (tests, corpus tools)."""
    rng = rng or random.Random(len(data))
    out = bytearray(data)
    roll = rng.random()
    if out and roll < 0.5:
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    elif out and roll < 0.75:
        del out[rng.randrange(len(out))]
    else:
        out.insert(rng.randrange(len(out) + 1), rng.randrange(256))
    return bytes(out[:max_size])


def default_byte_mutate() -> ByteMutate:
    """atheris.Mutate (libFuzzer's own mutations) while fuzzing, else the simple stand-in."""
    atheris = sys.modules.get("atheris")
    if atheris is not None and hasattr(atheris, "Mutate"):
        return atheris.Mutate  # type: ignore[no-any-return]
    return simple_byte_mutate
