"""The remote reader against a randomly misbehaving server (issue 31, findings 3 and 15):
a randomized test rather than a libFuzzer harness (each input is an HTTP exchange on
127.0.0.1, and waiting for timeouts is most of it).

Each round picks how the server answers the model and its weights (well, a 200 with a
huge body, more bytes than asked, silent, slow, dripping, stalled, a body cut short), a
timeout and a body size; opening and reading must give the right bytes or an
ExplorerError, within the time bound, with the server never made to send much more than
asked. ``OXE_REMOTE_ROUNDS`` runs more rounds (a long run), ``OXE_REMOTE_SEED`` another seed.
"""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest
from hostile_server import HostileServer, Mode
from test_remote_hostile import WEIGHTS, model_bytes

import onnx_explorer as ox
from onnx_explorer.errors import ExplorerError

pytest.importorskip("fsspec")
pytest.importorskip("aiohttp")

ROUNDS = int(os.environ.get("OXE_REMOTE_ROUNDS", "24"))
SEED = int(os.environ.get("OXE_REMOTE_SEED", "31"))
KINDS = ("ok", "ok", "ignore-range", "long", "long-undeclared", "silent", "silent-get",
         "slow", "drip", "stall")  # fmt: skip


def _mode(rng: random.Random, data: bytes, timeout: float) -> Mode:
    kind = rng.choice(KINDS)
    body = rng.choice((0, 1, 7, 1 << 20, 64 << 20, 1 << 30))
    delay = rng.choice((0.0, timeout / 3, timeout * 2))
    if rng.random() < 0.1:  # the object changed: shorter than HEAD says
        data = data[: rng.randrange(len(data))]
    return Mode(data, kind, body, delay)


def test_random_misbehaviour_gives_the_bytes_or_an_explorer_error():
    rng = random.Random(SEED)
    model, weights = model_bytes()
    outcomes: dict[str, int] = {}
    with_server = HostileServer().start()
    try:
        for round_ in range(ROUNDS):
            timeout = rng.choice((0.3, 0.5, 1.0))
            folder = f"/r{round_}"
            with_server.modes[f"{folder}/model.onnx"] = (
                _mode(rng, model, timeout) if rng.random() < 0.3 else Mode(model)
            )
            with_server.modes[f"{folder}/weights.bin"] = _mode(rng, weights, timeout)
            sent_before = with_server.sent
            started = time.monotonic()
            try:
                loaded = ox.load(f"{with_server.url}{folder}/model.onnx",
                                 storage_options={"timeout": timeout})  # fmt: skip
                try:
                    values = loaded.graph.initializers["w"].numpy()
                finally:
                    loaded.close()
                assert np.array_equal(values, WEIGHTS), f"round {round_}: wrong bytes"
                outcome = "read"
            except ExplorerError as exc:
                outcome = type(exc).__name__
            seconds = time.monotonic() - started
            # open (HEAD + one GET) and one weight read (HEAD + GET), each bounded
            assert seconds < 6 * timeout + 4, (round_, with_server.modes[f"{folder}/weights.bin"])
            time.sleep(0.05)
            assert with_server.sent - sent_before < 256 << 20, round_
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    finally:
        with_server.stop()
    print(f"{ROUNDS} rounds: {outcomes}")
    assert sum(outcomes.values()) == ROUNDS
