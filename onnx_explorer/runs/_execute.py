"""Run a :class:`~._plan.Plan` segment by segment, yielding every value as it is made."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from ._ort import RunError, failing_node, make_session, short
from ._plan import SEGMENT_NODES, Plan, segment_model


@dataclass
class Timing:
    sessions: float = 0.0  # seconds building onnxruntime sessions (reported apart)
    running: float = 0.0  # seconds inside session.run


@dataclass
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
    segment_nodes: int = SEGMENT_NODES
    timing: Timing = field(default_factory=Timing)
    failure: Failure | None = None
    on_segment: Callable[[int], None] | None = None  # called with the nodes done

    def values(self) -> Iterator[Produced]:
        """Every node output in execution order; on a failure, stops after the last
        value that was made and sets :attr:`failure` (a segment that fails is retried
        node by node, so the values before the failing node are still yielded)."""
        plan = self.plan
        order = plan.order
        last_use = self._last_use()
        wanted_outputs = {v.name for v in plan.graph.output}
        live: dict[str, Any] = dict(self.feeds)
        step = max(1, self.segment_nodes)
        for start in range(0, len(order), step):
            segment = order[start : start + step]
            ok = yield from self._segment(segment, live, last_use, start, wanted_outputs)
            if self.on_segment is not None:
                self.on_segment(len(segment))
            if not ok:
                return

    def _segment(
        self,
        segment: list[int],
        live: dict[str, Any],
        last_use: dict[str, int],
        start: int,
        wanted: set[str],
    ) -> Generator[Produced, None, bool]:
        try:
            results = self._run(segment, live)
        except RunError as exc:
            if len(segment) > 1:  # retry one node at a time: keep what precedes the failure
                for k, i in enumerate(segment):
                    ok = yield from self._segment([i], live, last_use, start + k, wanted)
                    if not ok:
                        return False
            if self.failure is None:
                node = self.plan.graph.node[segment[0]]
                self.failure = Failure(self.plan.node_label(segment[0]), node.op_type, str(exc))
            return False
        for i, (name, value) in results:
            yield Produced(i, name, value)
            live[name] = value
        end = start + len(segment)
        for name in [n for n in live if last_use.get(n, -1) < end and n not in wanted]:
            del live[name]
        return True

    def _run(self, segment: list[int], live: dict[str, Any]) -> list[tuple[int, tuple[str, Any]]]:
        graph = self.plan.graph
        produced = [(i, name) for i in segment for name in graph.node[i].output if name]
        outputs = [name for _, name in produced]
        data = segment_model(self.plan, segment, live, outputs)
        began = time.perf_counter()
        try:
            session = make_session(data, self.plan.base_dir)
        except Exception as exc:
            raise self._error(exc, segment, "cannot run") from None
        finally:
            self.timing.sessions += time.perf_counter() - began
        inputs = {v.name: live[v.name] for v in session.get_inputs()}
        began = time.perf_counter()
        try:
            values = session.run(outputs, inputs)
        except Exception as exc:
            raise self._error(exc, segment, "failed") from None
        finally:
            self.timing.running += time.perf_counter() - began
        return [(i, (name, value)) for (i, name), value in zip(produced, values)]

    def _error(self, exc: Exception, segment: list[int], what: str) -> RunError:
        graph = self.plan.graph
        named = failing_node(str(exc))
        index = next(
            (i for i in segment if self.plan.node_label(i) == named or graph.node[i].name == named),
            segment[0] if len(segment) == 1 else None,
        )
        if index is None:
            where = f"one of nodes {self.plan.node_label(segment[0])!r}..."
        else:
            node = graph.node[index]
            op = f"{node.domain}::{node.op_type}" if node.domain else node.op_type
            where = f"node {self.plan.node_label(index)!r} (op {op})"
        return RunError(f"onnxruntime {what} at {where}: {short(str(exc))}")

    def _last_use(self) -> dict[str, int]:
        """value name → position (in execution order) of its last reader."""
        last: dict[str, int] = {}
        for pos, i in enumerate(self.plan.order):
            for name in self.plan.needs[i]:
                last[name] = pos
        return last
