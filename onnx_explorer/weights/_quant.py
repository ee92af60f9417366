"""Dequantization parameters of quantized weights, found from the ops that consume them.

A weight stored as integers (or float8) is turned into real numbers by its consumer:
``DequantizeLinear(x, x_scale, x_zero_point)``, the weight inputs of ``QLinearConv``
/ ``QLinearMatMul``, and the com.microsoft ops ``QGemm``, ``DynamicQuantizeMatMul``,
``MatMulIntegerToFloat``, ``QAttention``, ``DynamicQuantizeLSTM`` and ``MatMulNBits``
(4/8-bit blocks packed in uint8). ``MatMulInteger`` / ``ConvInteger`` (what onnxruntime's
dynamic quantization writes) name only zero points; their scale is applied by the ``Mul``
after them (``Mul(Cast(y), a_scale * w_scale)``, also past an integer bias ``Add`` and
Reshape / Transpose / Cast), and the weight's own factor of it is read: the stored factor
of ``a_scale * w_scale`` when ``a_scale`` is computed at run time, the factor at the
weight's side (A or B) when both are stored, the stored product divided by the stored
scale of a ``QuantizeLinear`` feeding the other operand. An integer bias added before
that ``Mul`` is dequantized by the whole product, when it is stored.

The weight may reach its consumer through ops that move integers without changing them
(``Gather`` of an embedding, Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Identity,
Cast): ``Gather(E_quantized, ids) → DequantizeLinear`` or ``→ MatMulInteger`` dequantize
the whole table ``E_quantized``. A weight whose zero point is known but whose scale is not
raises :class:`ScaleUnknownError`, so callers label it "quantized (scale unknown)" instead
of dequantizing it wrongly.

:func:`find_dequantization` reads the scale and zero point (initializers or
Constant outputs, also of enclosing graphs) and returns a :class:`Dequantization`
that statistics and histograms accept::

    dq = find_dequantization(model.graph, "conv1.weight_quantized")
    dq.describe()                 # 'per-axis (axis 0, 64 scales) from QLinearConv ...'
    weight.stats(dequantize=dq)   # statistics of (q - zero_point) * scale

A tensor whose file stores its quantization parameters with it (TFLite: per-tensor or
per-axis ``scale`` / ``zero_point``, see :class:`StoredParameters`) is dequantized by
those, whatever consumes it (:func:`stored_dequantization`).

``apply`` works on any run of flat elements (it maps each flat position to its
channel or block from the shape), so dequantization streams with the chunks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from ..errors import TensorDataError
from ..model import Graph, Node, WeightRef
from ..tensors import Tensor

#: Scales and zero points are read into memory; refuse absurd ones.
_MAX_PARAM_ELEMENTS = 1 << 24


@dataclass(frozen=True, eq=False)
class Dequantization:
    """``real = (stored - zero_point) * scale`` for one quantized tensor.

    ``scale`` and ``zero_point`` are float32 arrays as stored (shape ``()`` per tensor,
    ``(C,)`` per axis, the tensor's rank when blocked); ``zero_point`` None means 0.
    """

    tensor: str  # the quantized tensor's name
    shape: tuple[int, ...]  # its shape
    scale: np.ndarray
    zero_point: np.ndarray | None = None
    axis: int | None = None  # None: one scale for the whole tensor
    block_size: int = 0  # > 0: blocked along ``axis``
    op: str = ""  # the consumer op, e.g. "QLinearConv" or "com.microsoft::MatMulNBits"
    node: str = ""  # the consumer node's name
    scale_name: str = ""
    zero_point_name: str = ""
    via: str = ""  # the ops between the tensor and its consumer, e.g. "Gather 'embed'"

    @property
    def granularity(self) -> str:
        if self.axis is None:
            return "per-tensor"
        return "blocked" if self.block_size else "per-axis"

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Shape of the real values (that of the stored tensor, except for packed formats)."""
        return self.shape

    def output_count(self, count: int) -> int:
        return count

    def describe(self) -> str:
        where = f" from {self.op} {self.node!r}" if self.op else ""
        if self.via:
            where += f" through {self.via}"
        if self.axis is None:
            return f"per-tensor (scale {float(self.scale.reshape(-1)[0]):.6g}){where}"
        if self.block_size:
            return f"blocked (axis {self.axis}, blocks of {self.block_size}){where}"
        return f"per-axis (axis {self.axis}, {self.scale.size} scales){where}"

    # -- arithmetic ------------------------------------------------------------------
    @cached_property
    def _flat(self) -> tuple[np.ndarray, np.ndarray | None]:
        scale = np.ascontiguousarray(self.scale, dtype=np.float32).reshape(-1)
        zp = self.zero_point
        return scale, None if zp is None else np.ascontiguousarray(zp, np.float32).reshape(-1)

    @cached_property
    def _plan(self) -> list[tuple[int, int, int, int]]:
        """(stride in the tensor, size, divisor, stride in the parameters) per indexed dim."""
        if self.axis is None:
            return []
        rank = len(self.shape)
        if self.block_size or (self.scale.ndim == rank and rank > 1):
            param_shape = tuple(self.scale.shape)  # blocked, or broadcast over the 1-dims
        else:  # per-axis: the 1-D scale broadcast along ``axis``
            param_shape = tuple(self.shape[d] if d == self.axis else 1 for d in range(rank))
        plan = []
        for d in range(rank):
            if param_shape[d] == 1:
                continue
            stride = math.prod(self.shape[d + 1 :])
            pstride = math.prod(param_shape[d + 1 :])
            divisor = self.block_size if (self.block_size and d == self.axis) else 1
            plan.append((stride, self.shape[d], divisor, pstride))
        return plan

    def apply(self, values: np.ndarray, offset: int = 0) -> np.ndarray:
        """Real values (float32) of stored elements at flat positions ``offset``, ``offset+1``..."""
        x = np.asarray(values).reshape(-1).astype(np.float32)
        scale, zp = self._flat
        plan = self._plan
        if not plan:
            if zp is not None:
                x -= zp[0]
            x *= scale[0]
            return x
        pos = np.arange(offset, offset + x.size, dtype=np.int64)
        index = np.zeros(x.size, np.int64)
        for stride, size, divisor, pstride in plan:
            t = (pos // stride) % size
            if divisor > 1:
                t //= divisor
            index += t * pstride
        if zp is not None:
            x -= zp[index]
        x *= scale[index]
        return x

    def dequantize(self, values: np.ndarray) -> np.ndarray:
        """The whole tensor's real values, shaped (for small tensors and tests)."""
        return self.apply(np.asarray(values).reshape(-1), 0).reshape(self.output_shape)


@dataclass(frozen=True, eq=False)
class NBitsDequantization(Dequantization):
    """com.microsoft ``MatMulNBits``: ``B`` is uint8 ``[N, blocks, blob]`` holding ``bits``-wide
    values (low bits first), ``block_size`` of them per scale; the real weight is ``[N, K]``."""

    n: int = 0
    k: int = 0
    bits: int = 4

    @property
    def granularity(self) -> str:
        return "blocked"

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.n, self.k)

    def output_count(self, count: int) -> int:
        return self.n * self.k

    def describe(self) -> str:
        return (
            f"{self.bits}-bit blocks of {self.block_size} along K (weight [{self.n}, {self.k}]) "
            f"from {self.op} {self.node!r}"
        )

    @cached_property
    def _blocks(self) -> int:
        return -(-self.k // self.block_size)

    @cached_property
    def _zero_points(self) -> np.ndarray:
        """One float32 zero point per (n, block)."""
        count = self.n * self._blocks
        zp = self.zero_point
        if zp is None:
            return np.full(count, float(1 << (self.bits - 1)), np.float32)
        if zp.dtype == np.uint8:  # packed like B, one row of bytes per n
            per_byte = 8 // self.bits
            row = -(-self._blocks // per_byte)
            b = np.arange(self._blocks)
            byte = np.arange(self.n)[:, None] * row + b // per_byte
            shift = (b % per_byte) * self.bits
            flat = zp.reshape(-1)
            if flat.size < self.n * row:
                raise TensorDataError(
                    f"MatMulNBits {self.node!r}: zero points {self.zero_point_name!r} have "
                    f"{flat.size} bytes, {self.n * row} needed"
                )
            values = (flat[byte] >> shift) & ((1 << self.bits) - 1)
            return np.asarray(values, dtype=np.float32).reshape(-1)
        return np.asarray(zp, np.float32).reshape(-1)

    def apply(self, values: np.ndarray, offset: int = 0) -> np.ndarray:
        raw = np.asarray(values).reshape(-1).view(np.uint8)
        per_byte = 8 // self.bits
        blob = self.block_size // per_byte
        mask = (1 << self.bits) - 1
        pos = np.arange(offset, offset + raw.size, dtype=np.int64)
        group = pos // blob  # = n * blocks + block
        q = np.empty((raw.size, per_byte), np.float32)
        for t in range(per_byte):
            q[:, t] = (raw >> (t * self.bits)) & mask
        q -= self._zero_points[group][:, None]
        q *= self._flat[0][group][:, None]
        # Drop the padding of the last block of each row (k >= K).
        k = (group % self._blocks)[:, None] * self.block_size + (pos % blob)[:, None] * per_byte
        k = k + np.arange(per_byte)
        return q[k < self.k]


# -- finding the parameters ------------------------------------------------------------
AxisRule = Callable[[Node, int], int]


#: Largest magnitude an integer attribute (an axis, a block size) may hold.
_MAX_ATTR_INT = 1 << 62


def _checked_int(node: Node, name: str, value: object) -> int:
    """An INT attribute's value; :class:`TensorDataError` naming the node for any other
    kind (a FLOAT ``inf`` axis, a TENSOR, INTS) or a magnitude past 2^62."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and abs(value) <= _MAX_ATTR_INT:
        return value
    kind = repr(value) if isinstance(value, int | float) and not isinstance(value, int) else (
        f"an int of {value.bit_length()} bits" if isinstance(value, int)
        else type(value).__name__
    )  # fmt: skip
    raise TensorDataError(
        f"{node.op_type} {node.name!r}: attribute {name!r} is not an int ({kind})"
    )


def _attr(node: Node, name: str, default: int) -> int:
    attr = node.attributes.get(name)
    if attr is None or attr.value is None:
        return default
    return _checked_int(node, name, attr.value)


def _dq_axis(node: Node, rank: int) -> int:
    return _attr(node, "axis", 1)


def _rows(node: Node, rank: int) -> int:
    return rank - 2


def _columns(node: Node, rank: int) -> int:
    return rank - 1


def _output_channels(node: Node, rank: int) -> int:
    return 0


def _gemm_b(node: Node, rank: int) -> int:
    return 0 if _attr(node, "transB", 0) else 1


def _lstm_gates(node: Node, rank: int) -> int:
    return 0  # a 1-D scale of DynamicQuantizeLSTM: one per direction


def channel_axis(graph: Graph | None, name: str, rank: int, _depth: int = 0) -> int:
    """The output-channel axis of weight ``name``, judged from the node consuming it.

    Conv / QLinearConv weights (OIHW): 0; ConvTranspose (IOHW): 1; MatMul's second
    input ``[..., K, N]``: the last; Gemm's B: 1, or 0 with ``transB``; the weight
    behind a DequantizeLinear: as for the node that consumes the dequantized value.
    Anything else: 0.
    """
    if graph is None or rank < 2:
        return 0
    for node in graph.consumers(name):
        op = node.op_type
        positions = [i for i, value in enumerate(node.inputs) if value == name]
        if not positions:
            continue
        position = positions[0]
        if op in ("Conv", "ConvInteger", "DeformConv") and position == 1:
            return _output_channels(node, rank)
        if op == "ConvTranspose" and position == 1:
            return 1
        if op == "QLinearConv" and position == 3:
            return _output_channels(node, rank)
        if op in ("MatMul", "MatMulInteger", "QLinearMatMul", "MatMulIntegerToFloat"):
            second = {"QLinearMatMul": 3}.get(op, 1)
            return (_columns if position == second else _rows)(node, rank)
        if op in ("Gemm", "QGemm"):
            if position == (3 if op == "QGemm" else 1):
                return _gemm_b(node, rank)
            return 1 if _attr(node, "transA", 0) else 0
        if op == "DequantizeLinear" and position == 0 and node.outputs and _depth < 4:
            return channel_axis(graph, node.outputs[0], rank, _depth + 1)
    return 0


@dataclass(frozen=True)
class _Rule:
    scale: int | None  # input position of the scale; None: the Mul after the node applies it
    zero_point: int | None  # input position of the zero point
    axis: AxisRule  # axis of a 1-D scale
    expand: tuple[int, ...] = ()  # where a scale of rank > 1 gets the 1-dims of the tensor's
    side: int = 1  # scale None: which factor of ``Mul(a_scale, b_scale)`` is this input's


_DEQUANTIZE = {0: _Rule(1, 2, _dq_axis)}
_QLINEAR_CONV = {3: _Rule(4, 5, _output_channels)}
# A, B, a_zero_point, b_zero_point; A is a weight when it is a Gather of one (an embedding)
_MATMUL_INTEGER = {0: _Rule(None, 2, _rows, side=0), 1: _Rule(None, 3, _columns)}
_CONV_INTEGER = {1: _Rule(None, 3, _output_channels)}  # x, w, x_zero_point, w_zero_point
_INTEGER_OPS = frozenset({"MatMulInteger", "ConvInteger"})
#: Ops that move a tensor's integers to another op without changing them (input 0).
_CARRIERS = frozenset({"Gather", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten",
                       "Identity", "Cast"})  # fmt: skip
#: Carriers that keep every element where it is (an axis stays the same axis).
_IN_PLACE = frozenset({"Identity", "Cast"})
#: Carriers followed from an integer op's result to the Mul that makes it real, and from a
#: scale operand back to the constant it reshapes.
_AFTER = _CARRIERS - {"Gather"}
_MAX_HOPS = 6
#: (domain, op) → {input position of a quantized weight: where its parameters are}.
RULES: dict[tuple[str, str], dict[int, _Rule]] = {
    ("", "DequantizeLinear"): _DEQUANTIZE,
    ("com.microsoft", "DequantizeLinear"): _DEQUANTIZE,
    ("", "QLinearConv"): _QLINEAR_CONV,
    ("com.microsoft", "QLinearConv"): _QLINEAR_CONV,
    ("", "QLinearMatMul"): {0: _Rule(1, 2, _rows), 3: _Rule(4, 5, _columns)},
    ("", "MatMulInteger"): _MATMUL_INTEGER,
    ("com.microsoft", "MatMulInteger"): _MATMUL_INTEGER,
    ("", "ConvInteger"): _CONV_INTEGER,
    ("com.microsoft", "ConvInteger"): _CONV_INTEGER,
    ("com.microsoft", "QGemm"): {3: _Rule(4, 5, _gemm_b)},
    # A, B, b_scale, b_zero_point, bias
    ("com.microsoft", "DynamicQuantizeMatMul"): {1: _Rule(2, 3, _columns)},
    # A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias
    ("com.microsoft", "MatMulIntegerToFloat"): {1: _Rule(3, 5, _columns)},
    # input, weight, bias, input_scale, weight_scale, mask_index, input_zp, weight_zp, past
    ("com.microsoft", "QAttention"): {1: _Rule(4, 7, _columns)},
    # X, W, R, B, seq_lens, initial_h, initial_c, P, W_scale, W_zp, R_scale, R_zp; W and R
    # are [directions, in, 4*hidden], scales [directions] or [directions, 4*hidden]
    ("com.microsoft", "DynamicQuantizeLSTM"): {
        1: _Rule(8, 9, _lstm_gates, expand=(1,)),
        2: _Rule(10, 11, _lstm_gates, expand=(1,)),
    },
}
_NBITS = ("com.microsoft", "MatMulNBits")


class ConstantLookup:
    """Values of names that hold constants: initializers and Constant outputs, looked up in a
    graph and then its enclosing graphs; one index per graph, built on first use."""

    def __init__(self) -> None:
        self._constants: dict[int, dict[str, Tensor]] = {}

    def tensor(self, graph: Graph, name: str) -> Tensor | None:
        current: Graph | None = graph
        while current is not None:
            found = current.initializers.get(name)
            if found is None:
                key = id(current)
                if key not in self._constants:
                    self._constants[key] = current.constants()
                found = self._constants[key].get(name)
            if found is not None:
                return found
            if current.producer(name) is not None:
                return None  # computed here: an outer constant of that name is shadowed
            parent = current.parent
            current = parent.graph if parent is not None else None
        return None

    def array(self, graph: Graph, name: str, what: str, consumer: Node) -> np.ndarray:
        tensor = self.tensor(graph, name)
        if tensor is None:
            raise TensorDataError(
                f"{consumer.op_type} {consumer.name!r}: {what} {name!r} is computed at run "
                "time, not stored in the model"
            )
        if tensor.size > _MAX_PARAM_ELEMENTS:
            raise TensorDataError(f"{what} {name!r} has {tensor.size} elements: too many")
        # A copy: a dequantizer keeps its scales while statistics stream, and a large
        # tensor's numpy() is a view of the file's map, which a shrinking file takes away.
        return np.array(tensor.numpy(), copy=True)


def _domain(node: Node) -> str:
    return "" if node.domain in ("", "ai.onnx") else node.domain


#: Element types that are real numbers already: only their direct consumers are asked.
_WIDE_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


class StoredParameters(Protocol):
    """Quantization parameters a file stores beside the tensor itself (TFLite's
    QuantizationParameters): a tensor with them has a ``quantization`` attribute holding
    ``scale`` (one, or one per channel of ``axis``) and ``zero_point`` (as many, one, or
    none for 0). They are the tensor's own; no consumer needs to be found."""

    @property
    def scale(self) -> np.ndarray: ...

    @property
    def zero_point(self) -> np.ndarray: ...

    @property
    def axis(self) -> int: ...


@dataclass(frozen=True, eq=False)
class StoredDequantization(Dequantization):
    """A :class:`Dequantization` whose parameters the file stores with the tensor."""

    def describe(self) -> str:
        return f"{super().describe()}, stored with the tensor"


def stored_dequantization(
    tensor: Tensor, shape: tuple[int, ...] | None = None
) -> Dequantization | None:
    """The dequantization a tensor's own stored parameters say (:class:`StoredParameters`),
    or None when it carries none. Raises :class:`TensorDataError` when they do not fit it."""
    params = getattr(tensor, "quantization", None)
    scale = getattr(params, "scale", None)
    if not isinstance(scale, np.ndarray) or scale.size == 0:
        return None
    if tensor.dtype_name in _WIDE_FLOATS:
        return None  # real numbers already (a float tensor's calibration range)
    assert params is not None
    shape = tuple(tensor.shape) if shape is None else shape
    name = tensor.name
    if scale.size > _MAX_PARAM_ELEMENTS:
        raise TensorDataError(f"tensor {name!r}: {scale.size} stored scales: too many")
    scale = np.asarray(scale, np.float32).reshape(-1)
    zp = np.asarray(getattr(params, "zero_point", np.zeros(0))).reshape(-1)
    zero_point = zp.astype(np.float32) if zp.size and zp.any() else None
    if zero_point is not None and zero_point.size not in (1, scale.size):
        raise TensorDataError(
            f"tensor {name!r}: {zero_point.size} stored zero points for {scale.size} scales"
        )
    if scale.size == 1:
        return StoredDequantization(
            tensor=name, shape=shape, scale=scale.reshape(()),
            zero_point=None if zero_point is None else zero_point[:1].reshape(()),
        )  # fmt: skip
    axis = int(getattr(params, "axis", 0))
    if not 0 <= axis < len(shape) or shape[axis] != scale.size:
        raise TensorDataError(
            f"tensor {name!r}: {scale.size} stored scales along axis {axis} do not fit its "
            f"shape {list(shape)}"
        )
    if zero_point is not None and zero_point.size == 1:
        zero_point = np.broadcast_to(zero_point, scale.shape)
    return StoredDequantization(
        tensor=name, shape=shape, scale=scale, zero_point=zero_point, axis=axis
    )


def find_dequantization(
    graph: Graph,
    name: str,
    shape: tuple[int, ...] | None = None,
    *,
    lookup: ConstantLookup | None = None,
) -> Dequantization | None:
    """How the consumers of ``name`` in ``graph`` dequantize it, or None if none does.

    The consumer may read it through ops that move integers unchanged (Gather of an
    embedding, Reshape, Transpose, Cast...: see the module's description); an integer bias
    added to a ``MatMulInteger`` / ``ConvInteger`` result is dequantized by that result's
    scale. ``shape`` defaults to that of the stored tensor called ``name``. Raises
    :class:`TensorDataError` when a consumer's scale or zero point is not stored in the
    model or does not fit the tensor's shape.
    """
    lookup = lookup or ConstantLookup()
    tensor = lookup.tensor(graph, name)
    if tensor is not None:  # parameters stored with the tensor (TFLite) are its own
        stored = stored_dequantization(tensor, shape)
        if stored is not None:
            return stored
    if shape is None:
        if tensor is None:
            return None
        shape = tensor.shape
    real = tensor is not None and tensor.dtype_name in _WIDE_FLOATS
    for node, position, via in _uses(graph, name, 1 if real else _MAX_HOPS):
        key = (_domain(node), node.op_type)
        if key == _NBITS:
            if position == 1 and not via:
                return _nbits(graph, node, name, shape, lookup)
            continue
        rule = RULES.get(key, {}).get(position)
        if rule is not None:
            return _linear(graph, node, name, shape, rule, lookup, via)
        if key == ("", "Add") and not real:
            found = _bias(graph, node, position, name, shape, lookup, via)
            if found is not None:
                return found
    return None


def dequantization_for(
    ref: WeightRef, *, lookup: ConstantLookup | None = None
) -> Dequantization | None:
    """:func:`find_dequantization` for an entry of :meth:`Model.weights`."""
    if ref.kind not in ("initializer", "constant"):
        return None
    return find_dequantization(ref.graph, ref.tensor.name, ref.tensor.shape, lookup=lookup)


def _uses(graph: Graph, name: str, depth: int) -> Iterator[tuple[Node, int, tuple[Node, ...]]]:
    """(consumer, input position, carriers on the way) for each reader of ``name``, then for
    each reader of what carriers (:data:`_CARRIERS`) make of it, nearest first."""
    frontier: list[tuple[str, tuple[Node, ...]]] = [(name, ())]
    seen = {name}
    for _ in range(depth):
        following: list[tuple[str, tuple[Node, ...]]] = []
        for value, via in frontier:
            for node in graph.consumers(value):
                for position, read in enumerate(node.inputs):
                    if read != value:
                        continue
                    yield node, position, via
                    out = node.outputs[0] if node.outputs else ""
                    if (
                        position == 0 and out and out not in seen
                        and node.op_type in _CARRIERS and _domain(node) == ""
                    ):  # fmt: skip
                        seen.add(out)
                        following.append((out, (*via, node)))
        if not following:
            return
        frontier = following


def _via_text(via: tuple[Node, ...]) -> str:
    return " → ".join(f"{n.op_type} {n.name!r}" for n in via)


def _input(node: Node, position: int | None) -> str:
    if position is None or position >= len(node.inputs):
        return ""
    return node.inputs[position]


class ScaleUnknownError(TensorDataError):
    """The tensor is quantized (a consumer names its zero point) but its scale is not stored."""


def _origin(graph: Graph, name: str) -> str:
    """Where ``name`` comes from through Reshape / Transpose / Cast...: a stored constant's name,
    or a value some other op computes."""
    for _ in range(_MAX_HOPS):
        producer = graph.producer(name)
        if producer is None or producer.op_type not in _AFTER or not producer.inputs:
            break
        name = producer.inputs[0]
    return name


def _stored(graph: Graph, name: str, lookup: ConstantLookup) -> bool:
    return bool(name) and lookup.tensor(graph, name) is not None


def _result_mul(graph: Graph, node: Node, lookup: ConstantLookup) -> tuple[Node, str]:
    """The ``Mul`` that makes an integer op's result real, and its scale operand: after the
    op, through Cast / Reshape / Transpose... and an ``Add`` of a stored (integer) bias."""
    value = node.outputs[0] if node.outputs else ""
    for _ in range(_MAX_HOPS):
        readers = graph.consumers(value) if value else ()
        if len(readers) != 1 or not readers[0].outputs:
            break
        reader = readers[0]
        if reader.op_type in _AFTER and reader.inputs[:1] == (value,):
            value = reader.outputs[0]
            continue
        if len(reader.inputs) != 2 or reader.inputs[0] == reader.inputs[1]:
            break
        other = reader.inputs[1] if reader.inputs[0] == value else reader.inputs[0]
        if reader.op_type == "Add" and _stored(graph, _origin(graph, other), lookup):
            value = reader.outputs[0]  # a bias in the integer result's units
            continue
        if reader.op_type == "Mul":
            return reader, other
        break
    raise ScaleUnknownError(
        f"quantized (scale unknown): {node.qualified_op} {node.name!r} names no scale "
        "and no Mul after it multiplies by a stored scale"
    )


def _static_scale(
    graph: Graph, node: Node, position: int, lookup: ConstantLookup
) -> tuple[str, np.ndarray] | None:
    """The stored per-tensor scale of the ``QuantizeLinear`` making input ``position`` of an
    integer op (a static activation scale), else None."""
    producer = graph.producer(_input(node, position))
    if producer is None or producer.op_type != "QuantizeLinear" or len(producer.inputs) < 2:
        return None
    name = _origin(graph, producer.inputs[1])
    if not _stored(graph, name, lookup):
        return None
    scale = lookup.array(graph, name, "scale", producer)
    return (name, scale) if scale.size == 1 else None


def _scale_after(
    graph: Graph, node: Node, side: int, lookup: ConstantLookup
) -> tuple[str, np.ndarray]:
    """The scale of input ``side`` (0: A / x, 1: B / w) of an integer op, from the ``Mul``
    that makes its result real: ``Mul(y, s)`` with ``s`` stored (divided by the other
    input's static scale when a ``QuantizeLinear`` with a stored scale makes it), or
    ``s = Mul(a_scale, w_scale)``: the stored factor when the other is computed (onnxruntime's
    dynamic quantization), the per-channel one, else the one at ``side`` (onnxruntime's order)."""
    unknown = f"quantized (scale unknown): {node.qualified_op} {node.name!r}"
    mul, operand = _result_mul(graph, node, lookup)
    source = _origin(graph, operand)
    if _stored(graph, source, lookup):
        scale = lookup.array(graph, source, "scale", mul)
        static = _static_scale(graph, node, 1 - side, lookup)
        if static is None:
            return source, scale
        return f"{source} / {static[0]}", scale / static[1].reshape(-1)[0]
    producer = graph.producer(source)
    if producer is None or producer.op_type != "Mul" or len(producer.inputs) != 2:
        raise ScaleUnknownError(f"{unknown}: its scale {operand!r} is computed at run time")
    factors = [_origin(graph, n) for n in producer.inputs]
    arrays = [
        lookup.array(graph, f, "scale", producer) if _stored(graph, f, lookup) else None
        for f in factors
    ]
    stored = [i for i, a in enumerate(arrays) if a is not None]
    if len(stored) == 1 and (side == 1 or stored[0] == side):
        pick = stored[0]  # the other factor is the activation's, computed at run time
    elif len(stored) == 2:
        wide = [i for i in stored if (a := arrays[i]) is not None and a.size > 1]
        if len(wide) == 1:  # per channel: the weight B's, never the activation's
            pick = wide[0] if side == 1 else 1 - wide[0]
        else:
            pick = side
    else:
        raise ScaleUnknownError(
            f"{unknown}: the factors of its scale {operand!r} are computed at run time"
        )
    found = arrays[pick]
    assert found is not None
    return factors[pick], found


def _whole_scale(
    graph: Graph, integer: Node, lookup: ConstantLookup, what: str
) -> tuple[str, np.ndarray]:
    """The whole scale of an integer op's result (``a_scale * w_scale``), when stored."""
    mul, operand = _result_mul(graph, integer, lookup)
    source = _origin(graph, operand)
    if _stored(graph, source, lookup):
        return source, lookup.array(graph, source, "scale", mul)
    producer = graph.producer(source)
    if producer is not None and producer.op_type == "Mul" and len(producer.inputs) == 2:
        factors = [_origin(graph, n) for n in producer.inputs]
        if all(_stored(graph, f, lookup) for f in factors):
            a, b = (lookup.array(graph, f, "scale", producer) for f in factors)
            return " * ".join(factors), np.multiply(a.reshape(-1), b.reshape(-1))
    raise ScaleUnknownError(
        f"quantized (scale unknown): {what} is scaled by {operand!r}, computed at run time"
    )


def _bias(
    graph: Graph,
    add: Node,
    position: int,
    name: str,
    shape: tuple[int, ...],
    lookup: ConstantLookup,
    via: tuple[Node, ...],
) -> Dequantization | None:
    """An integer bias added to a ``MatMulInteger`` / ``ConvInteger`` result before the
    ``Mul`` that makes it real: its scale is that whole ``Mul``'s. None for any other Add."""
    if len(add.inputs) != 2 or any(n.op_type == "Gather" for n in via):
        return None
    result = add.inputs[1 - position]
    integer = graph.producer(_origin(graph, result))
    if integer is None or integer.op_type not in _INTEGER_OPS:
        return None
    what = f"the bias {name!r} of {integer.op_type} {integer.name!r}"
    scale_name, scale = _whole_scale(graph, integer, lookup, what)
    axis = None
    if scale.size > 1:
        fits = [d for d in range(len(shape)) if shape[d] == scale.size]
        if len(fits) != 1:
            raise TensorDataError(
                f"{what}: its scale {scale_name!r} has {scale.size} values; "
                f"no single axis of {shape} has that many"
            )
        axis = fits[0]
        scale = scale.reshape(-1)
    return Dequantization(
        tensor=name, shape=shape, scale=scale, axis=axis, op=add.qualified_op, node=add.name,
        scale_name=scale_name, via=_via_text(via),
    )  # fmt: skip


def _ints(node: Node, name: str) -> tuple[int, ...]:
    attr = node.attributes.get(name)
    value = attr.value if attr is not None else None
    if not isinstance(value, tuple | list):
        return ()
    return tuple(_checked_int(node, name, v) for v in value)


def _placed_axis(
    node: Node,
    name: str,
    shape: tuple[int, ...],
    rule: _Rule,
    scale: np.ndarray,
    scale_name: str,
    via: tuple[Node, ...],
) -> int:
    """The axis of ``name`` a per-axis scale runs along when ``name`` reaches the consumer
    through carriers: followed back through Transpose, else the one axis of its size."""
    rank = len(shape)
    what = (
        f"{node.op_type} {node.name!r}: scale {scale_name!r} ({scale.size} values, "
        f"through {_via_text(via)})"
    )
    if _attr(node, "block_size", 0) > 0 or scale.ndim != 1:
        raise TensorDataError(f"{what}: a blocked scale is not followed back to {name!r}")
    if all(n.op_type in _IN_PLACE or n.op_type == "Transpose" for n in via):
        axis = rule.axis(node, rank)
        axis = axis + rank if axis < 0 else axis
        for carrier in reversed(via):
            if carrier.op_type == "Transpose":
                perm = _ints(carrier, "perm") or tuple(reversed(range(rank)))
                axis = perm[axis] if 0 <= axis < len(perm) else -1
        if 0 <= axis < rank and shape[axis] == scale.size:
            return axis
        raise TensorDataError(f"{what} does not fit axis {axis} of {name!r} {list(shape)}")
    fits = [d for d in range(rank) if shape[d] == scale.size]
    if len(fits) == 1:
        return fits[0]
    raise TensorDataError(f"{what}: no single axis of {name!r} {list(shape)} has that many")


def _linear(
    graph: Graph,
    node: Node,
    name: str,
    shape: tuple[int, ...],
    rule: _Rule,
    lookup: ConstantLookup,
    via: tuple[Node, ...] = (),
) -> Dequantization:
    zp_name = _input(node, rule.zero_point)
    if rule.scale is None:
        scale_name, scale = _scale_after(graph, node, rule.side, lookup)
        if scale.size > 1:  # shaped to broadcast over the op's output, e.g. [M, 1, 1]
            scale = scale.reshape(-1)
    else:
        scale_name = _input(node, rule.scale)
        if not scale_name:
            raise TensorDataError(f"{node.op_type} {node.name!r} has no scale input")
        if lookup.tensor(graph, scale_name) is None:
            raise ScaleUnknownError(
                f"quantized (scale unknown): {node.qualified_op} {node.name!r} computes its "
                f"scale {scale_name!r} at run time"
            )
        scale = lookup.array(graph, scale_name, "scale", node)
    zp = lookup.array(graph, zp_name, "zero point", node) if zp_name else None
    if zp is not None and zp.size != scale.size:
        if zp.size == 1:  # one zero point, a scale per channel (or the other way round)
            zp = np.broadcast_to(zp.reshape(-1)[:1], scale.shape)
        elif scale.size == 1:
            scale = np.broadcast_to(scale.reshape(-1)[:1], zp.shape)
        else:
            raise TensorDataError(
                f"{node.op_type} {node.name!r}: zero point {zp_name!r} has shape {zp.shape}, "
                f"scale {scale_name!r} has {scale.shape}"
            )
    rank = len(shape)
    moved = any(n.op_type not in _IN_PLACE for n in via)
    if rule.expand and not moved and scale.ndim > 1 and scale.ndim + len(rule.expand) == rank:
        zp = None if zp is None else np.expand_dims(zp.reshape(scale.shape), rule.expand)
        scale = np.expand_dims(scale, rule.expand)

    def make(axis: int | None = None, block_size: int = 0) -> Dequantization:
        return Dequantization(
            tensor=name, shape=shape, scale=scale, zero_point=zp, axis=axis,
            block_size=block_size, op=node.qualified_op, node=node.name,
            scale_name=scale_name, zero_point_name=zp_name, via=_via_text(via),
        )  # fmt: skip

    if scale.size == 1:
        return make()
    if moved:
        if zp is not None:
            zp = zp.reshape(-1)
        scale = scale.reshape(-1)
        return make(_placed_axis(node, name, shape, rule, scale, scale_name, via))
    if rule.expand and scale.ndim == rank:
        expected = tuple(1 if d in rule.expand else shape[d] for d in range(rank))
        if scale.shape != expected:
            raise TensorDataError(
                f"{node.op_type} {node.name!r}: scale {scale_name!r} has shape "
                f"{tuple(d for d in scale.shape if d != 1)}, expected "
                f"{tuple(d for i, d in enumerate(expected) if i not in rule.expand)} for {shape}"
            )
        return make(rank - 1)
    block = _attr(node, "block_size", 0)
    axis = rule.axis(node, rank)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise TensorDataError(f"{node.op_type} {node.name!r}: axis {axis} out of range for {shape}")
    if block > 0:
        expected = tuple(-(-shape[d] // block) if d == axis else shape[d] for d in range(rank))
        if scale.shape != expected:
            raise TensorDataError(
                f"{node.op_type} {node.name!r}: blocked scale {scale_name!r} has shape "
                f"{scale.shape}, expected {expected} for {shape} in blocks of {block}"
            )
        return make(axis, block)
    if scale.ndim != 1 or scale.size != shape[axis]:
        raise TensorDataError(
            f"{node.op_type} {node.name!r}: scale {scale_name!r} has shape {scale.shape}; "
            f"per-axis on axis {axis} of {shape} needs ({shape[axis]},)"
        )
    return make(axis)


def _nbits(
    graph: Graph, node: Node, name: str, shape: tuple[int, ...], lookup: ConstantLookup
) -> Dequantization:
    n, k = _attr(node, "N", 0), _attr(node, "K", 0)
    bits, block = _attr(node, "bits", 4), _attr(node, "block_size", 0)
    what = f"MatMulNBits {node.name!r}"
    if bits not in (2, 4, 8):
        raise TensorDataError(f"{what}: {bits}-bit weights are not supported (2, 4 or 8)")
    if n <= 0 or k <= 0 or block <= 0 or block * bits % 8:
        raise TensorDataError(f"{what}: bad attributes N={n}, K={k}, block_size={block}")
    blocks = -(-k // block)
    expected = (n, blocks, block * bits // 8)
    if math.prod(shape) != math.prod(expected):
        raise TensorDataError(f"{what}: B {name!r} has shape {shape}, expected {expected}")
    scale_name = _input(node, 2)
    if not scale_name:
        raise TensorDataError(f"{what} has no scales input")
    scale = lookup.array(graph, scale_name, "scales", node)
    if scale.size != n * blocks:
        raise TensorDataError(
            f"{what}: scales {scale_name!r} have {scale.size} values, {n * blocks} needed"
        )
    zp_name = _input(node, 3)
    zp = lookup.array(graph, zp_name, "zero points", node) if zp_name else None
    if zp is not None and zp.dtype != np.uint8 and zp.size != n * blocks:
        raise TensorDataError(
            f"{what}: zero points {zp_name!r} have {zp.size} values, {n * blocks} needed"
        )
    return NBitsDequantization(
        tensor=name, shape=shape, scale=scale, zero_point=zp, axis=1, block_size=block,
        op=node.qualified_op, node=node.name, scale_name=scale_name, zero_point_name=zp_name,
        n=n, k=k, bits=bits,
    )  # fmt: skip


__all__ = [
    "ConstantLookup",
    "Dequantization",
    "NBitsDequantization",
    "ScaleUnknownError",
    "StoredDequantization",
    "StoredParameters",
    "channel_axis",
    "dequantization_for",
    "find_dequantization",
    "stored_dequantization",
]
