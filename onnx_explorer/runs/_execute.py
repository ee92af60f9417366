"""Run a :class:`~._plan.Plan` segment by segment, yielding every value as it is made."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from ..views._text import human_bytes, squeezed
from ._limits import (
    UNTIMED,
    Expired,
    Limits,
    RunTimeoutError,
    Worker,
    build_session,
    run_session,
)
from ._ort import RunError, failing_node
from ._plan import SEGMENT_BYTES, SEGMENT_NODES, Plan, segment_model


def value_bytes(value: Any) -> int:
    """Bytes of an array, or of a sequence's arrays."""
    if isinstance(value, list):
        return sum(getattr(item, "nbytes", 0) for item in value)
    return int(getattr(value, "nbytes", 0))


#: onnxruntime's words when an allocation fails (its arena's max_mem, or the system's).
_ALLOCATION_FAILED = re.compile(
    r"Available memory of \d+ is smaller than requested bytes|Failed to allocate memory|bad_alloc"
)
_REQUESTED = re.compile(r"requested bytes of (\d+)")


@dataclass
class Timing:
    sessions: float = 0.0  # seconds building and releasing onnxruntime sessions (apart)
    running: float = 0.0  # seconds inside session.run


@dataclass(slots=True)  # 20,000 made in a capture
class Produced:
    node: int  # index in the graph
    name: str
    value: Any  # numpy array (or a list for sequences)


@dataclass
class Failure:
    node: str
    op_type: str
    message: str


@dataclass
class Execution:
    plan: Plan
    feeds: dict[str, Any]
    segment_nodes: int | None = None  # None: segments sized by SEGMENT_BYTES
    timing: Timing = field(default_factory=Timing)
    failure: Failure | None = None
    on_segment: Callable[[int], None] | None = None  # called with the nodes done
    limits: Limits = UNTIMED  # the run's deadline and memory limit
    _dies_at: dict[int, list[str]] = field(default_factory=dict, repr=False)
    _read: set[str] = field(default_factory=set, repr=False)
    _made: int = 0  # bytes the current segment returned
    _worker: Worker = field(default_factory=Worker, repr=False)  # the onnxruntime calls' thread

    def values(self) -> Generator[Produced, None, None]:
        """Every node output in execution order; on a failure, stops after the last
        value that was made and sets :attr:`failure` (a segment that fails is retried
        node by node, so the values before the failing node are still yielded)."""
        segments = self.segments()
        try:
            for made in segments:
                yield from made
        finally:
            segments.close()

    def segments(self) -> Generator[list[Produced], None, None]:
        """:meth:`values` a segment at a time: one list per onnxruntime run, so a consumer
        takes thousands of values in a few calls (``on_segment`` is called after each)."""
        plan = self.plan
        order = plan.order
        self._dies_at = self._deaths()
        wanted_outputs = {v.name for v in plan.graph.output}
        live: dict[str, Any] = dict(self.feeds)
        start, step = 0, max(1, self.segment_nodes or SEGMENT_NODES)
        try:
            while start < len(order):
                segment = order[start : start + step]
                self._made = 0
                ok = yield from self._segment(segment, live, start, wanted_outputs)
                if self.on_segment is not None:
                    self.on_segment(len(segment))
                if not ok:
                    return
                start += len(segment)
                if self.segment_nodes is None:  # next segment sized by the bytes these made
                    per_node = max(self._made / len(segment), 1.0)
                    step = int(min(max(SEGMENT_BYTES // per_node, 1), 2 * step + 64))
        finally:  # done, failed or left: the values go (onnxruntime's arena holds them)
            live.clear()
            self._worker.close()

    def _segment(
        self,
        segment: list[int],
        live: dict[str, Any],
        start: int,
        wanted: set[str],
    ) -> Generator[list[Produced], None, bool]:
        try:
            results = self._run(segment, live)
        except RunTimeoutError:
            raise  # the run is over: no node-by-node retry
        except RunError as exc:
            if len(segment) > 1:  # retry one node at a time: keep what precedes the failure
                for k, i in enumerate(segment):
                    ok = yield from self._segment([i], live, start + k, wanted)
                    if not ok:
                        return False
            if self.failure is None:
                node = self.plan.graph.node[segment[0]]
                self.failure = Failure(self.plan.node_label(segment[0]), node.op_type, str(exc))
            return False
        made, read = 0, self._read
        for one in results:
            made += value_bytes(one.value)
            if one.name in read or one.name in wanted:  # (a value nothing reads: not kept)
                live[one.name] = one.value
        self._made += made
        yield results
        # Only the values whose last reader is in this segment (not a scan of all live ones).
        for pos in range(start, start + len(segment)):
            for name in self._dies_at.get(pos, ()):
                if name not in wanted:
                    live.pop(name, None)
        return True

    def _run(self, segment: list[int], live: dict[str, Any]) -> list[Produced]:
        made = self.plan.outputs
        produced = [(i, name) for i in segment for name in made[i]]
        outputs = [name for _, name in produced]
        data = segment_model(self.plan, segment, live, outputs)
        limits = self.limits
        if limits.expired():  # (the message names the nodes: made only when it is raised)
            limits.check(f"onnxruntime ran {self._where(segment)}")
        began = time.perf_counter()
        try:
            session = build_session(data, self.plan.base_dir, limits, self._worker)
        except Expired:
            raise RunTimeoutError(
                f"{limits.timeout_text()} passed while onnxruntime built its session for "
                f"{self._where(segment)}: the run was stopped"
            ) from None
        except RunTimeoutError:
            raise  # the deadline passed before the session was asked for (its own message)
        except Exception as exc:
            raise self._error(exc, segment, "cannot run") from None
        finally:
            self.timing.sessions += time.perf_counter() - began
        inputs = {v.name: live[v.name] for v in session.get_inputs()}
        began = time.perf_counter()
        try:
            values = run_session(session, outputs, inputs, limits, self._worker)
        except Expired as expired:
            named = failing_node(str(expired.reason)) if expired.reason is not None else None
            where = self._where(segment, named)
            raise RunTimeoutError(
                f"{limits.timeout_text()} passed while onnxruntime ran {where}: it was stopped"
            ) from None
        except Exception as exc:
            raise self._error(exc, segment, "failed") from None
        finally:
            self.timing.running += time.perf_counter() - began
        # Releasing the session (its kernels and plans, ~2 ms at 360 nodes) is part of
        # its cost, as building it is; the values live on in the shared arena.
        began = time.perf_counter()
        del session
        self.timing.sessions += time.perf_counter() - began
        return [Produced(i, name, value) for (i, name), value in zip(produced, values)]

    def _where(self, segment: list[int], named: str | None = None) -> str:
        """``node 'x' (op Loop)``, or the segment's first node and its size."""
        graph = self.plan.graph
        index = next(
            (i for i in segment if self.plan.node_label(i) == named or graph.node[i].name == named),
            segment[0] if len(segment) == 1 else None,
        )
        if index is None:
            return f"nodes {self.plan.node_label(segment[0])!r}... ({len(segment)} nodes)"
        node = graph.node[index]
        op = f"{node.domain}::{node.op_type}" if node.domain else node.op_type
        return f"node {self.plan.node_label(index)!r} (op {op})"

    def _error(self, exc: Exception, segment: list[int], what: str) -> RunError:
        message = str(exc)
        where = self._where(segment, failing_node(message))
        if where.startswith("nodes "):
            where = "one of " + where
        if _ALLOCATION_FAILED.search(message):  # the shared arena's cap (or the system's)
            asked = _REQUESTED.search(message)
            size = f" (an allocation of {human_bytes(int(asked.group(1)))})" if asked else ""
            return RunError(
                f"onnxruntime {what} at {where}: its values need more memory than "
                f"{self.limits.memory_text()}{size}"
            )
        return RunError(f"onnxruntime {what} at {where}: {squeezed(message)}")

    def _deaths(self) -> dict[int, list[str]]:
        """position (in execution order) → the values whose last reader is there."""
        last: dict[str, int] = {}
        for pos, i in enumerate(self.plan.order):
            for name in self.plan.needs[i]:
                last[name] = pos
        self._read = set(last)
        deaths: dict[int, list[str]] = {}
        for name, pos in last.items():
            deaths.setdefault(pos, []).append(name)
        return deaths
