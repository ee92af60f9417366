"""One background thread for a run's statistics, with the bytes it may hold bounded."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

#: Bytes of values waiting for the thread: past it, the run waits for the oldest batch.
#: With the segment onnxruntime is making, it bounds a run's memory beyond the live values.
#: Two segments' worth (``_plan.SEGMENT_BYTES``): a segment's statistics are computed while
#: the next segment's session is built, instead of the run waiting for them (16 MB made the
#: 20,000-node capture wait 0.22–0.28 s; its peak RSS is unchanged, 240 MB).
QUEUED_BYTES = 48 << 20


class Background:
    """Runs jobs in order on one thread; :meth:`results` gives their results in that order."""

    def __init__(self, queued_bytes: int = QUEUED_BYTES) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="onnx-explorer-stats")
        self._limit = queued_bytes
        self._waiting: deque[tuple[Future[Any], int]] = deque()
        self._done: list[Future[Any]] = []
        self._bytes = 0

    def submit(self, job: Callable[[], Any], nbytes: int) -> None:
        """Queue ``job`` (holding ``nbytes`` of values); waits while the queue is full."""
        self._collect(block=self._bytes + nbytes > self._limit, need=nbytes)
        self._waiting.append((self._pool.submit(job), nbytes))
        self._bytes += nbytes

    def _collect(self, block: bool, need: int) -> None:
        """Move finished jobs (and, with ``block``, as many as it takes for ``need`` more
        bytes to fit) from the queue to the done list."""
        while self._waiting and (self._waiting[0][0].done() or block):
            future, nbytes = self._waiting.popleft()
            future.exception()  # waits; the error, if any, is raised by results()
            self._done.append(future)
            self._bytes -= nbytes
            block = block and self._bytes + need > self._limit

    def results(self) -> Iterator[Any]:
        """Every job's result in submission order (waits for all; re-raises a job's error)."""
        while self._waiting:  # a blocking collect waits for one job, then takes the done ones
            self._collect(block=True, need=0)
        done, self._done = self._done, []
        for future in done:
            yield future.result()

    def close(self) -> None:
        """Cancel what has not started and stop the thread (after the job it is on)."""
        for future, _ in self._waiting:
            future.cancel()
        self._waiting.clear()
        self._bytes = 0
        self._pool.shutdown(wait=True, cancel_futures=True)  # (also one taken off the queue)
