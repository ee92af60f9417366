"""Cutting the payloads of many tensors at once: the wire walk of :mod:`._wire` in numpy.

A graph's initializers are thousands of small messages of the same kind. Walking
them one after another in Python costs a few microseconds each; here every step
reads one field of every tensor not finished yet, so a run of tensors costs a
handful of array operations per field (a tensor has about five).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

#: Fields of the longest tensor walked here; a run with longer ones is walked one by one.
MAX_STEPS = 64

# The payload cut from one tensor: (which of the messages, the field's start, its tag byte,
# the payload's start and length).
Cut = tuple[int, int, int, int, int]


def leaf_cuts(
    buf: Any, messages: Sequence[tuple[int, int, int, int]], cut: frozenset[int], threshold: int
) -> list[Cut] | None:
    """The payloads to cut in ``messages`` (field start, tag, payload start, length, as
    :meth:`._wire._Walker._scan` lists them), in order, at most one per message.

    Exactly what walking each message would find. None when any message needs that
    walk instead: multi-byte tags, group wire types, varints or lengths too long,
    damage (the walk reports it), more than ``MAX_STEPS`` fields, or more than one
    payload to cut in a message (a hostile file).
    """
    if not cut or max(cut) >= 16:
        return None
    data = np.frombuffer(buf, np.uint8)
    count = len(messages)
    table = np.fromiter(chain.from_iterable(messages), np.int64, 4 * count).reshape(count, 4)
    ids = np.arange(count)
    pos = table[:, 2].copy()
    end = pos + table[:, 3]
    cut_tags = np.array(sorted(f << 3 | 2 for f in cut), np.int64)
    found: list[tuple[Any, Any, Any, Any]] = []
    for _ in range(MAX_STEPS):
        live = pos < end
        if not live.all():
            ids, pos, end = ids[live], pos[live], end[live]
        if not ids.size:
            break
        tag = data[pos].astype(np.int64)
        wire = tag & 7
        if (tag >= 0x80).any() or ((wire > 2) & (wire != 5)).any():
            return None
        after = pos + 1  # just past the tag
        varint = np.flatnonzero((wire == 0) | (wire == 2))
        value, cursor = _varints(data, after[varint], end[varint])
        if value is None:
            return None
        nxt = np.where(wire == 1, after + 8, after + 4)
        nxt[varint] = cursor
        delimited = wire[varint] == 2
        rows = varint[delimited]
        lengths = value[delimited]
        nxt[rows] += lengths
        if (nxt > end).any():
            return None
        hit = lengths >= threshold
        if len(cut_tags) == 1:
            hit &= tag[rows] == cut_tags[0]
        else:
            hit &= np.isin(tag[rows], cut_tags)
        if hit.any():
            found.append(
                (ids[rows[hit]], pos[rows[hit]], nxt[rows[hit]] - lengths[hit], lengths[hit])
            )
        pos = nxt
    else:
        if (pos < end).any():
            return None
    if not found:
        return []
    message, at, payload, length = (np.concatenate(column) for column in zip(*found, strict=True))
    order = np.argsort(message, kind="stable")
    message, at, payload, length = message[order], at[order], payload[order], length[order]
    if (np.diff(message) == 0).any():
        return None
    columns = (message, at, data[at], payload, length)
    return list(zip(*(column.tolist() for column in columns), strict=True))


def _varints(data: Any, starts: Any, ends: Any) -> tuple[Any, Any]:
    """Values of the varints at ``starts`` (each before its message's end) and where each
    ends; (None, None) when one runs past its message or past 5 bytes (a length of
    2**35 or more, not in memory; other fields that long go to the walk too)."""
    value = np.zeros(len(starts), np.int64)
    cursor = starts.copy()
    pending = np.arange(len(starts))
    for k in range(5):
        if not pending.size:
            return value, cursor
        at = cursor[pending]
        if (at >= ends[pending]).any():
            return None, None
        byte = data[at].astype(np.int64)
        value[pending] |= (byte & 0x7F) << (7 * k)
        cursor[pending] = at + 1
        pending = pending[byte >= 0x80]
    return (value, cursor) if not pending.size else (None, None)


__all__ = ["MAX_STEPS", "leaf_cuts"]
