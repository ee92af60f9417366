"""What every harness shares: what counts as a finding, the known open bugs, and the
model walk that reads everything a user could look at.

A finding is any exception that is not an :class:`~onnx_explorer.errors.ExplorerError`
(bad input must end in the project's own error types), a hang (libFuzzer's
``-timeout``) or a crash. The harnesses never run Graphviz or ONNX shape inference:
both are subprocess / C++ work fuzzed elsewhere and far slower than the readers.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from onnx_explorer.errors import ExplorerError
from onnx_explorer.model import Model
from onnx_explorer.tensors import Tensor

#: Tensors are decoded in full (``numpy()``) up to this many bytes; statistics stream
#: whatever the size, and what they read is bounded by the input (max_len) anyway.
MAX_DECODE_BYTES = 1 << 20


@dataclass(frozen=True)
class KnownBug:
    """An open bug being fixed elsewhere: its exception, raised from inside ``where``."""

    title: str
    exception: type[BaseException] | None = None
    #: A frame of the traceback: a path suffix, optionally ``:function``
    #: (``"onnx_explorer/views/_drawing.py:_emit_scope"``).
    where: str = ""
    message: str = ""  # a regex searched in str(exception)
    #: For a hang, which cannot be caught: the tensors not read while the bug is open.
    skips_tensor: Callable[[Tensor], bool] | None = None

    def matches(self, exc: BaseException) -> bool:
        if self.exception is None or not isinstance(exc, self.exception):
            return False
        if self.message and not re.search(self.message, str(exc)):
            return False
        frames = traceback.extract_tb(exc.__traceback__)
        return any(
            f"{frame.filename}:{frame.name}".endswith(self.where)
            or frame.filename.endswith(self.where)
            for frame in frames
        )


# -- KNOWN_OPEN -------------------------------------------------------------------------
# Bugs already reported and being fixed by others. The harnesses let exactly these pass
# so that a run finds something new. DELETE each entry once its fix is merged (and the
# whole list when it is empty): the fuzzer then proves the fix.
KNOWN_OPEN: tuple[KnownBug, ...] = ()  # empty: every bug the fuzzers found is fixed
# -- end of KNOWN_OPEN ------------------------------------------------------------------


def known_open(exc: BaseException) -> KnownBug | None:
    return next((bug for bug in KNOWN_OPEN if bug.matches(exc)), None)


def known_open_hang(tensor: Tensor) -> KnownBug | None:
    return next((b for b in KNOWN_OPEN if b.skips_tensor and b.skips_tensor(tensor)), None)


def harness(run: Callable[[bytes], None]) -> Callable[[bytes], None]:
    """``run`` as libFuzzer's TestOneInput: the project's errors and known bugs pass,
    anything else propagates (atheris reports it and saves the input)."""

    def test_one_input(data: bytes) -> None:
        try:
            run(data)
        except ExplorerError:
            pass
        except Exception as exc:
            if known_open(exc) is None:
                raise

    test_one_input.__name__ = f"test_one_input[{run.__module__}]"
    test_one_input.__doc__ = run.__doc__
    return test_one_input


def without_inference(model: Model) -> Model:
    """The model with ONNX shape inference switched off (fuzzed elsewhere, slow)."""
    model.type_inference = None
    return model


def read_tensor(tensor: Tensor) -> None:
    """Everything the explorer shows of one tensor: facts, values, statistics, histogram."""
    _ = tensor.size, tensor.nbytes, tensor.dtype_name, repr(tensor), tensor.location.describe()
    tensor.check()
    if known_open_hang(tensor) is not None:
        return
    if tensor.nbytes <= MAX_DECODE_BYTES:
        tensor.numpy()
    tensor.stats()
    tensor.histogram(bins=8)
    tensor.release()


def walk_model(model: Model, *, read: bool = True) -> None:
    """Every graph, node, attribute and value the model has; with ``read``, every weight's
    values and statistics. One broken tensor must not stop the others being read."""
    for graph in model.graphs():
        _ = graph.inputs, graph.outputs, dict(graph.value_info), graph.op_counts()
        for node in graph.nodes:
            _ = node.qualified_op, dict(node.attributes), node.subgraphs(), node.tensors()
        for name in graph.initializers:
            _ = graph.initializers[name]
        _ = dict(graph.sparse_initializers), graph.constants()
    if not read:
        return
    for ref in model.weights():
        try:
            read_tensor(ref.tensor)
        except ExplorerError:
            continue


_SCRATCH: list[Path] = []


def scratch_dir() -> Path:
    """A private directory for this process's files, removed at exit."""
    if not _SCRATCH:
        # Memory-backed where there is one: a rename on this disk cost 2 ms, half of an input.
        shm = Path("/dev/shm")
        where = str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
        path = Path(tempfile.mkdtemp(prefix="oxe-fuzz-", dir=where))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _SCRATCH.append(path)
    return _SCRATCH[0]


def write_fresh(path: Path, data: bytes) -> Path:
    """Write ``data`` as a new file at ``path`` (a new inode: maps of the old file, which
    earlier models may still hold, never see it shrink)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def by_file(data: bytes) -> bool:
    """Read this input from a file (mapped, walked with pread) rather than from bytes: both
    ways are fuzzed, decided by the input itself so that a finding reproduces."""
    return bool(zlib.crc32(data) & 1)
