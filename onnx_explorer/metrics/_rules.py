"""How many multiply-accumulates (MACs) a node costs, one small rule per operator.

Conventions (the same as onnx-tool's for the ops that carry the compute):

- One MAC is one multiply-accumulate, ``acc += a * b``. A matrix product of
  ``(M, K) @ (K, N)`` costs ``M * N * K``; a convolution costs, per output element,
  the kernel's size times the input channels of its group.
- A bias added by the op itself (``Conv``/``Gemm``/``QLinearConv`` input ``B``/``C``)
  costs one more per output element, as onnx-tool counts it.
- Element-wise ops cost one per output element, and ``n - 1`` per element for the
  variadic ones (``Sum`` of three inputs: two). onnx-tool weighs transcendental ops by
  an instruction cost instead (``Exp`` 32, ``Div`` 4, ``Sqrt`` 24); we do not, so our
  totals are a little lower where such ops are many (see the README).
- Reductions and global pooling cost one per input element; windowed pooling one per
  output element per kernel position; ``Softmax`` three per element (exp, sum,
  divide); normalisations five per element (mean, variance, subtract, scale, shift).
- Recurrent ops (``LSTM``, ``GRU``, ``RNN``): the gate matrix products, ``W`` and
  ``R``, for every time step, batch row and direction.
- Attention (com.microsoft): the input projection when the op holds its weights,
  plus ``Q @ K^T`` and ``scores @ V``.
- Spectral ops: ``DFT`` costs the transformed length per output value (real and
  imaginary parts counted apart), ``STFT`` the frame length per output value: the
  direct transform, not an FFT's ``n log n``.
- Data movement and shape ops (Reshape, Transpose, Gather, Concat, Cast…) cost 0
  (:data:`FREE`). An op with no rule is *unknown* (its MACs None, listed in
  :attr:`~onnx_explorer.metrics.Metrics.unknown_ops`), never a silent 0; a missing
  rule is one more entry in :data:`ONNX_RULES`, :data:`GRAPHDEF_RULES` or
  :data:`TFLITE_RULES` (TFLite: NHWC activations, CONV_2D weights OHWI,
  DEPTHWISE_CONV_2D weights 1HWO, FULLY_CONNECTED weights (units, K)).
- Nodes with bodies are counted by the walker (:mod:`.table`): If its larger branch,
  Loop its body times the trip count, Scan its body times the scanned length, and a
  call of a local function (or TensorFlow's ``PartitionedCall``) its body.

A rule returns None when a shape it needs is unknown; the node then counts as
"unknown" rather than costing 0. Attributes are read through :func:`int_attr`,
:func:`ints_attr`, :func:`str_attr` and :func:`flag_attr`, which check their type and size:
an attribute a file stores as the wrong kind (a TENSOR ``kernel_shape``, a string
``num_heads``, ``[inf]``) raises :class:`BadAttribute`, and the node is unknown with that
reason (:attr:`~onnx_explorer.metrics.Metrics.invalid`), never the whole table's failure.
A shape of more than :data:`MAX_RANK` dims is unknown too (its product was quadratic).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..model import Node

Shape = tuple[int, ...]


class NodeShapes(Protocol):
    """What a rule may ask about its node: resolved shapes (None: unknown) and attributes."""

    node: Node

    def input(self, i: int) -> Shape | None: ...

    def output(self, i: int) -> Shape | None: ...

    def has_input(self, i: int) -> bool: ...

    def attr(self, name: str, default: Any = None) -> Any: ...

    def constant(self, i: int) -> int | None:
        """Input ``i`` as an int, when it is a one-element integer weight or Constant."""
        ...


Rule = Callable[[NodeShapes], int | None]

#: Most dims a shape may have to be measured (numpy's own limit); a longer one is unknown.
MAX_RANK = 64
#: Largest magnitude an integer attribute may hold (2^62: every real size fits).
MAX_ATTR_INT = 1 << 62
#: Most characters a text attribute (an Einsum equation, a padding) may hold.
MAX_ATTR_TEXT = 4096


class BadAttribute(ValueError):
    """A node's attribute has a kind or value its rule cannot use (the node is unknown)."""


def _kind(value: Any) -> str:
    """A short description of a value a rule refused, never its (maybe huge) text."""
    if isinstance(value, str | bytes | list | tuple):
        return f"{type(value).__name__} of length {len(value)}"
    if isinstance(value, int) and abs(value) > MAX_ATTR_INT:
        return f"an int of {value.bit_length()} bits"
    if isinstance(value, int | float):
        return repr(value)
    return type(value).__name__


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, int) or abs(value) > MAX_ATTR_INT:
        raise BadAttribute(f"attribute {name!r} is not an int: {_kind(value)}")
    return value


def int_attr(s: NodeShapes, name: str, default: int) -> int:
    """An INT attribute (bools taken as 0/1); :class:`BadAttribute` for any other kind."""
    value = s.attr(name)
    return default if value is None else _int(name, value)


def flag_attr(s: NodeShapes, name: str) -> bool:
    """A 0/1 (or bool) attribute, absent meaning False."""
    return int_attr(s, name, 0) != 0


def ints_attr(s: NodeShapes, name: str) -> tuple[int, ...] | None:
    """An INTS attribute of at most :data:`MAX_RANK` values, None when absent."""
    value = s.attr(name)
    if value is None:
        return None
    if not isinstance(value, list | tuple) or len(value) > MAX_RANK:
        raise BadAttribute(f"attribute {name!r} is not a list of ints: {_kind(value)}")
    return tuple(_int(name, v) for v in value)


def str_attr(s: NodeShapes, name: str, default: str) -> str:
    """A STRING attribute (bytes read as Latin-1) of at most :data:`MAX_ATTR_TEXT`."""
    value = s.attr(name)
    if value is None:
        return default
    if isinstance(value, bytes) and len(value) <= MAX_ATTR_TEXT:
        return value.decode("latin-1")
    if not isinstance(value, str) or len(value) > MAX_ATTR_TEXT:
        raise BadAttribute(f"attribute {name!r} is not a short string: {_kind(value)}")
    return value


def elements(shape: Sequence[int] | None) -> int | None:
    if shape is None or len(shape) > MAX_RANK:
        return None
    return math.prod(shape)


# -- generic rules -------------------------------------------------------------------
def _free(_: NodeShapes) -> int:
    return 0


def _per_output(cost: int) -> Rule:
    def rule(s: NodeShapes) -> int | None:
        out = elements(s.output(0))
        return None if out is None else out * cost

    return rule


def _variadic(s: NodeShapes) -> int | None:
    out = elements(s.output(0))
    present = sum(1 for i in range(len(s.node.inputs)) if s.has_input(i))
    return None if out is None else out * max(1, present - 1)


def _per_input(s: NodeShapes) -> int | None:
    return elements(s.input(0))


def _with_bias(macs: int | None, s: NodeShapes, bias_input: int) -> int | None:
    if macs is None or not s.has_input(bias_input):
        return macs
    out = elements(s.output(0))
    return None if out is None else macs + out


# -- convolutions and matrix products ------------------------------------------------
def _conv(weight: int, bias: int | None) -> Rule:
    """Output elements × (input channels per group × kernel): W is (M, C/group, k1, k2…)."""

    def rule(s: NodeShapes) -> int | None:
        out, w = elements(s.output(0)), s.input(weight)
        if out is None or w is None or len(w) < 2:
            return None
        macs = out * math.prod(w[1:])
        return macs if bias is None else _with_bias(macs, s, bias)

    return rule


def _conv_transpose(s: NodeShapes) -> int | None:
    """Each input element scatters into (M/group × kernel) outputs: W is (C, M/group, k…)."""
    x, w = elements(s.input(0)), s.input(1)
    if x is None or w is None or len(w) < 2:
        return None
    return _with_bias(x * math.prod(w[1:]), s, 2)


def _matmul(a_input: int) -> Rule:
    """Output elements × the shared dimension (A's last)."""

    def rule(s: NodeShapes) -> int | None:
        out, a = elements(s.output(0)), s.input(a_input)
        if out is None or not a:
            return None
        return out * a[-1]

    return rule


def _gemm(s: NodeShapes) -> int | None:
    out, a = elements(s.output(0)), s.input(0)
    if out is None or a is None or len(a) != 2:
        return None
    k = a[0] if flag_attr(s, "transA") else a[1]
    return _with_bias(out * k, s, 2)


def _qgemm(s: NodeShapes) -> int | None:
    """com.microsoft QGemm: A (0), its scale and zero point (1, 2), B (3), its scale and
    zero point (4, 5), the bias C (6)."""
    out, a = elements(s.output(0)), s.input(0)
    if out is None or a is None or len(a) != 2:
        return None
    k = a[0] if flag_attr(s, "transA") else a[1]
    return _with_bias(out * k, s, 6)


_EINSUM_TERM = re.compile(r"^[A-Za-z]*(\.\.\.)?[A-Za-z]*$")


def _einsum(s: NodeShapes) -> int | None:
    """The product of every distinct index's size (each output element sums over the rest)."""
    equation = str_attr(s, "equation", "").replace(" ", "")
    terms = equation.split("->")[0].split(",")
    if len(terms) != len(s.node.inputs) or not all(_EINSUM_TERM.match(t) for t in terms):
        return None
    sizes: dict[str, int] = {}
    for i, term in enumerate(terms):
        shape = s.input(i)
        if shape is None:
            return None
        before, dots, after = term.partition("...")
        if not dots:
            if len(before) != len(shape):
                return None
            labels = list(before)
        else:  # broadcast dims: named by position from the right, ".0" the last
            n = len(shape) - len(before) - len(after)
            if n < 0:
                return None
            labels = [*before, *(f".{n - 1 - k}" for k in range(n)), *after]
        for label, size in zip(labels, shape):
            sizes[label] = max(sizes.get(label, 1), size)
    return math.prod(sizes.values())


# -- recurrent ops -------------------------------------------------------------------
def _recurrent(s: NodeShapes) -> int | None:
    """Steps × batch × (W and R products of every direction): W (dirs, gates·H, I), R (dirs,
    gates·H, H); X is (seq, batch, I), or (batch, seq, I) with ``layout=1``."""
    x, w, r = s.input(0), s.input(1), s.input(2)
    if x is None or w is None or r is None or len(x) != 3 or len(w) != 3 or len(r) != 3:
        return None
    steps, batch = (x[1], x[0]) if flag_attr(s, "layout") else (x[0], x[1])
    return steps * batch * w[0] * (w[1] * w[2] + r[1] * r[2])


# -- attention (com.microsoft) -------------------------------------------------------
def _attention(s: NodeShapes) -> int | None:
    """Attention: X (B, S, D_in) @ W (D_in, 3·D) projects Q, K and V; then Q@Kᵀ and
    scores@V cost B·S·S·D each (the past, when given, is not counted)."""
    x, w = s.input(0), s.input(1)
    if x is None or w is None or len(x) != 3 or len(w) != 2:
        return None
    batch, seq, _ = x
    sizes = ints_attr(s, "qkv_hidden_sizes")
    qk, v = (sizes[0], sizes[2]) if sizes and len(sizes) == 3 else (w[1] // 3, w[1] // 3)
    return batch * seq * math.prod(w) + batch * seq * seq * (qk + v)


def _multi_head_attention(s: NodeShapes) -> int | None:
    """Q@Kᵀ and scores@V: 2·B·S·L·D for query (B, S, D) and a key of L positions
    (key (B, L, D) or (B, heads, L, head_size); packed QKV (B, S, heads, 3, head_size))."""
    q = s.input(0)
    if q is None:
        return None
    if len(q) == 5:  # packed query, key and value
        batch, seq, heads, _, head = q
        return 2 * batch * seq * seq * heads * head
    key = s.input(1) if s.has_input(1) else None
    if len(q) != 3 or key is None or len(key) not in (3, 4):
        return None
    keys = key[1] if len(key) == 3 else key[2]
    return 2 * q[0] * q[1] * keys * q[2]


def _group_query_attention(s: NodeShapes) -> int | None:
    """2·B·S·L·D for query (B, S, D) over L = past + S positions (past_key (B, kv, P, h))."""
    q = s.input(0)
    if q is None or len(q) != 3:
        return None
    heads, kv_heads = int_attr(s, "num_heads", 0), int_attr(s, "kv_num_heads", 0)
    hidden = q[2]
    if not s.has_input(1) and heads > 0 and kv_heads > 0:  # packed: D = (heads + 2·kv)·head
        hidden = q[2] * heads // (heads + 2 * kv_heads)
    past = s.input(3) if s.has_input(3) else None
    keys = q[1] + (past[2] if past is not None and len(past) == 4 else 0)
    return 2 * q[0] * q[1] * keys * hidden


# -- spectral ops --------------------------------------------------------------------
def _dft(s: NodeShapes) -> int | None:
    """Each output value (real or imaginary part) sums the transformed axis' length."""
    out, x = elements(s.output(0)), s.input(0)
    if out is None or x is None or len(x) < 2:
        return None
    # opset 17 keeps the axis as an attribute (default 1); opset 20 as input 2
    axis = s.constant(2) if s.has_input(2) else int_attr(s, "axis", 1)
    axis = axis if isinstance(axis, int) and -len(x) <= axis < len(x) else 1
    return out * x[axis]


def _stft(s: NodeShapes) -> int | None:
    """Each output value (frames × bins × 2) sums one frame: ``frame_length`` samples (from
    the window's size when the frame length is not a constant)."""
    out = elements(s.output(0))
    window = s.input(2) if s.has_input(2) else None
    length = window[0] if window else None
    if length is None and s.has_input(3):
        length = s.constant(3)
    if out is None or not isinstance(length, int):
        return None
    return out * length


def _lrn(s: NodeShapes) -> int | None:
    """LRN: each output sums ``size`` squares across channels."""
    out = elements(s.output(0))
    size = int_attr(s, "size", -1)
    return None if out is None or size < 0 else out * size


# -- pooling -------------------------------------------------------------------------
def _pool(kernel_attr: str, skip: int) -> Rule:
    """Output elements × kernel positions (``ksize`` in GraphDef includes batch and channel)."""

    def rule(s: NodeShapes) -> int | None:
        out, kernel = elements(s.output(0)), ints_attr(s, kernel_attr)
        if out is None or not kernel or any(k < 0 for k in kernel):
            return None
        return out * math.prod(kernel[skip:])

    return rule


# -- GraphDef (TensorFlow) -----------------------------------------------------------
def _tf_conv(s: NodeShapes) -> int | None:
    """Conv2D/Conv3D: output elements × filter (kh, kw, in, out) without its last dim
    (the output's size worked out from the input where the file says ``-1``)."""
    f = s.input(1)
    out = elements(s.output(0) or tf_conv_output(s, f))
    if out is None or f is None or len(f) < 2:
        return None
    return out * math.prod(f[:-1])


def tf_conv_output(s: NodeShapes, f: Shape | None, pooling: bool = False) -> Shape | None:
    """A TensorFlow convolution's output shape from its input, filter, strides, dilations
    and padding (SAME: ceil(in / stride); VALID: ceil((in - (k - 1)·d) / stride)); with
    ``pooling``, ``f`` is the window ``ksize`` (batch and channel included) and the
    channels stay."""
    x = s.input(0)
    if x is None or f is None or len(x) != len(f) or len(x) < 3:
        return None
    spatial = len(x) - 2
    first = 2 if str_attr(s, "data_format", "NHWC").startswith("NC") else 1
    if pooling:  # ksize is laid out like the input: as a filter (k…, in, out = in)
        channels = x[1] if first == 2 else x[-1]
        f = (*f[first : first + spatial], channels, channels)
    strides = list(ints_attr(s, "strides") or [1] * len(x))
    dilations = list(ints_attr(s, "dilations") or [1] * len(x))
    padding = str_attr(s, "padding", "VALID")
    if padding not in ("SAME", "VALID") or len(strides) != len(x) or len(dilations) != len(x):
        return None
    sizes = []
    for k in range(spatial):
        size, stride, dilation = x[first + k], strides[first + k], dilations[first + k]
        if stride <= 0:
            return None
        reach = size if padding == "SAME" else size - (f[k] - 1) * dilation
        sizes.append(max(0, -(-reach // stride)))
    channels = f[-1]
    if first == 2:
        return (x[0], channels, *sizes)
    return (x[0], *sizes, channels)


def _tf_depthwise(s: NodeShapes) -> int | None:
    """DepthwiseConv2dNative: each output element sums one channel's kh × kw window."""
    out, f = elements(s.output(0)), s.input(1)
    if out is None or f is None or len(f) != 4:
        return None
    return out * f[0] * f[1]


def _tf_conv_backprop_input(s: NodeShapes) -> int | None:
    """Conv2DBackpropInput (transposed conv): each of out_backprop's elements (input 2)
    scatters into kh × kw × in outputs (filter (kh, kw, in, out))."""
    grad, f = elements(s.input(2)), s.input(1)
    if grad is None or f is None or len(f) != 4:
        return None
    return grad * math.prod(f[:3])


def _tf_matmul(transpose_a: str, transpose_b: str) -> Rule:
    """Output elements × the shared dimension; where the file says ``-1`` for the output,
    its size comes from the inputs ((…, M, K) @ (…, K, N), either transposed)."""

    def rule(s: NodeShapes) -> int | None:
        a, b = s.input(0), s.input(1)
        if a is None or len(a) < 2:
            return None
        k = a[-2] if flag_attr(s, transpose_a) else a[-1]
        out = elements(s.output(0))
        if out is None:
            if b is None or len(b) < 2:
                return None
            m = a[-1] if flag_attr(s, transpose_a) else a[-2]
            n = b[-2] if flag_attr(s, transpose_b) else b[-1]
            out = math.prod(a[:-2]) * m * n
        return out * k

    return rule


# -- the tables ----------------------------------------------------------------------
def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split())


#: Ops that move, reshape, index or make data: no multiply-accumulates.
FREE = _names(
    "ArgMax ArgMin Bernoulli Cast CastLike CenterCropPad Col2Im Compress Concat "
    "ConcatFromSequence Constant ConstantOfShape DepthToSpace Dropout Expand EyeLike Flatten "
    "Gather GatherElements GatherND Identity If Loop Multinomial NonMaxSuppression NonZero "
    "OneHot Optional OptionalGetElement OptionalHasElement Pad RandomNormal RandomNormalLike "
    "RandomUniform RandomUniformLike Range RegexFullMatch Reshape ReverseSequence Scan Scatter "
    "ScatterElements ScatterND SequenceAt SequenceConstruct SequenceEmpty SequenceErase "
    "SequenceInsert SequenceLength SequenceMap Shape Size Slice SpaceToDepth Split "
    "SplitToSequence Squeeze StringConcat StringNormalizer StringSplit TfIdfVectorizer Tile "
    "TopK Transpose Trilu Unique Unsqueeze"
)
MS_FREE = _names(
    "GatherBlockQuantized QLinearConcat QuantizeBFP DequantizeBFP Trilu Unique CropAndResize"
)


ELEMENTWISE = _names(
    "Abs Acos Acosh Add And Asin Asinh Atan Atanh BitShift BitwiseAnd BitwiseNot BitwiseOr "
    "BitwiseXor Ceil Celu Clip Cos Cosh DequantizeLinear Div DynamicQuantizeLinear Elu Equal "
    "Erf Exp Floor Gelu GridSample Resize Upsample BlackmanWindow HammingWindow HannWindow "
    "MelWeightMatrix Hardmax CumSum RoiAlign MaxRoiPool MaxUnpool Det "
    "Greater GreaterOrEqual HardSigmoid HardSwish IsInf IsNaN LeakyRelu Less LessOrEqual Log "
    "Mish Mod Mul Neg Not Or PRelu Pow QuantizeLinear Reciprocal Relu Round Selu Shrink "
    "Sigmoid Sign Sin Sinh Softplus Softsign Sqrt Sub Tan Tanh ThresholdedRelu Where Xor"
)
VARIADIC = ("Max", "Mean", "Min", "Sum")
REDUCTIONS = _names(
    "ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd "
    "ReduceSum ReduceSumSquare GlobalAveragePool GlobalLpPool GlobalMaxPool"
)
NORMALIZATIONS = (
    "LayerNormalization",
    "BatchNormalization",
    "InstanceNormalization",
    "GroupNormalization",
    "RMSNormalization",
    "LpNormalization",
    "MeanVarianceNormalization",
)
MS_ELEMENTWISE = _names(
    "BiasGelu FastGelu QuickGelu Gelu BiasAdd BiasSoftmax BiasSplitGelu RotaryEmbedding "
    "QLinearAdd QLinearMul QLinearSigmoid QLinearLeakyRelu QLinearSoftmax QLinearWhere "
    "QuantizeLinear DequantizeLinear DynamicQuantizeLinear QLinearReduceMean"
)
MS_MATMULS = _names("FusedMatMul DynamicQuantizeMatMul MatMulIntegerToFloat MatMulNBits "
                    "MatMulBnb4 MatMulFpQ4 QOrderedMatMul")  # fmt: skip
MS_NORMALIZATIONS = ("SkipLayerNormalization", "SimplifiedLayerNormalization",
                     "SkipSimplifiedLayerNormalization", "LayerNormalization")  # fmt: skip


# -- ai.onnx.ml (scikit-learn and other classical models, through skl2onnx and friends) --
def _linear_model(s: NodeShapes) -> int | None:
    """LinearClassifier / LinearRegressor: X (N, F) times the (classes or targets) × F
    ``coefficients``, one more per score for ``intercepts``."""
    x = s.input(0)
    coefficients, intercepts = s.attr("coefficients"), s.attr("intercepts")
    rows = elements(x[:-1]) if x else None  # a batch of rows (or one row: rank 1)
    if rows is None or not isinstance(coefficients, list | tuple):
        return None
    macs = rows * len(coefficients)
    if isinstance(intercepts, list | tuple):
        macs += rows * len(intercepts)
    return macs


ML_ELEMENTWISE = _names("Binarizer Imputer Scaler")
ML_FREE = _names(
    "ArrayFeatureExtractor CastMap CategoryMapper DictVectorizer FeatureVectorizer "
    "LabelEncoder OneHotEncoder ZipMap"
)

#: (domain, op_type) → rule for ONNX models; "" is the default domain.
ONNX_RULES: dict[tuple[str, str], Rule] = {
    ("ai.onnx.ml", "LinearClassifier"): _linear_model,
    ("ai.onnx.ml", "LinearRegressor"): _linear_model,
    ("ai.onnx.ml", "Normalizer"): _per_output(5),  # as LpNormalization
    **{("ai.onnx.ml", op): _per_output(1) for op in ML_ELEMENTWISE},
    **{("ai.onnx.ml", op): _free for op in ML_FREE},
    **{("", op): _per_output(1) for op in ELEMENTWISE},
    **{("", op): _variadic for op in VARIADIC},
    **{("", op): _per_input for op in REDUCTIONS},
    **{("", op): _per_output(5) for op in NORMALIZATIONS},
    ("", "Softmax"): _per_output(3),
    ("", "LogSoftmax"): _per_output(3),
    ("", "Conv"): _conv(weight=1, bias=2),
    ("", "ConvInteger"): _conv(weight=1, bias=None),
    ("", "QLinearConv"): _conv(weight=3, bias=8),
    ("", "ConvTranspose"): _conv_transpose,
    ("", "MatMul"): _matmul(0),
    ("", "MatMulInteger"): _matmul(0),
    ("", "QLinearMatMul"): _matmul(0),
    ("", "Gemm"): _gemm,
    ("", "Einsum"): _einsum,
    ("", "LSTM"): _recurrent,
    ("", "GRU"): _recurrent,
    ("", "RNN"): _recurrent,
    ("", "MaxPool"): _pool("kernel_shape", 0),
    ("", "AveragePool"): _pool("kernel_shape", 0),
    ("", "LpPool"): _pool("kernel_shape", 0),
    ("com.microsoft", "Attention"): _attention,
    ("com.microsoft", "MultiHeadAttention"): _multi_head_attention,
    ("com.microsoft", "GroupQueryAttention"): _group_query_attention,
    **{("com.microsoft", op): _per_output(1) for op in MS_ELEMENTWISE},
    **{("com.microsoft", op): _per_output(5) for op in MS_NORMALIZATIONS},
    **{("com.microsoft", op): _matmul(0) for op in MS_MATMULS},
    **{("", op): _free for op in FREE},
    **{("com.microsoft", op): _free for op in MS_FREE},
    ("", "DFT"): _dft,
    ("", "STFT"): _stft,
    ("com.microsoft", "DynamicQuantizeLSTM"): _recurrent,  # W (dirs, I, 4H): the same product
    ("com.microsoft", "QGemm"): _qgemm,
    ("", "LRN"): _lrn,
    ("", "Swish"): _per_output(1),
    ("", "RotaryEmbedding"): _per_output(1),
    ("", "DeformConv"): _conv(weight=1, bias=3),
    ("com.microsoft", "FusedConv"): _conv(weight=1, bias=2),
    ("com.microsoft", "NhwcConv"): _conv(weight=1, bias=2),
    ("com.microsoft", "QLinearConv"): _conv(weight=3, bias=8),
    ("com.microsoft", "QAttention"): _attention,
    ("com.microsoft", "QLinearGlobalAveragePool"): _per_input,
    ("com.microsoft", "QLinearAveragePool"): _pool("kernel_shape", 0),
    ("com.microsoft", "EmbedLayerNormalization"): _per_output(5),
}

TF_ELEMENTWISE = _names(
    "Abs Add AddV2 BiasAdd Ceil Cos Elu Equal Erf Exp Floor FloorDiv FloorMod Greater "
    "GreaterEqual LeakyRelu Less LessEqual Log LogicalAnd LogicalNot LogicalOr Maximum Minimum "
    "Mul Neg Pow RealDiv Reciprocal Relu Relu6 Rsqrt Select SelectV2 Selu Sigmoid Sign Sin "
    "Softplus Softsign Sqrt Square SquaredDifference Sub Tanh"
)
TF_REDUCTIONS = _names("Max Mean Min Prod Sum")

#: op_type → rule for TensorFlow GraphDef models.
GRAPHDEF_RULES: dict[str, Rule] = {
    **dict.fromkeys(TF_ELEMENTWISE, _per_output(1)),
    **dict.fromkeys(TF_REDUCTIONS, _per_input),
    "AddN": _variadic,
    "Softmax": _per_output(3),
    "LogSoftmax": _per_output(3),
    "FusedBatchNorm": _per_output(1),  # inference: one multiply-add per element
    "FusedBatchNormV2": _per_output(1),
    "FusedBatchNormV3": _per_output(1),
    "Conv2D": _tf_conv,
    "Conv3D": _tf_conv,
    "DepthwiseConv2dNative": _tf_depthwise,
    "Conv2DBackpropInput": _tf_conv_backprop_input,
    "MatMul": _tf_matmul("transpose_a", "transpose_b"),
    "BatchMatMul": _tf_matmul("adj_x", "adj_y"),
    "BatchMatMulV2": _tf_matmul("adj_x", "adj_y"),
    "BatchMatMulV3": _tf_matmul("adj_x", "adj_y"),
    "MaxPool": _pool("ksize", 0),
    "AvgPool": _pool("ksize", 0),
    "MaxPool3D": _pool("ksize", 0),
    "AvgPool3D": _pool("ksize", 0),
}


# -- TFLite (NHWC activations; CONV_2D weights OHWI, DEPTHWISE_CONV_2D 1HWO) ----------------
def _tfl_conv(s: NodeShapes) -> int | None:
    """CONV_2D: output elements × KH·KW·(input channels per group); W is (O, KH, KW, I/g).
    Bias (input 2) one more per output element."""
    out, w = elements(s.output(0)), s.input(1)
    if out is None or w is None or len(w) != 4:
        return None
    return _with_bias(out * w[1] * w[2] * w[3], s, 2)


def _tfl_depthwise(s: NodeShapes) -> int | None:
    """DEPTHWISE_CONV_2D: output elements × KH·KW; W is (1, KH, KW, C·multiplier)."""
    out, w = elements(s.output(0)), s.input(1)
    if out is None or w is None or len(w) != 4:
        return None
    return _with_bias(out * w[1] * w[2], s, 2)


def _tfl_fully_connected(s: NodeShapes) -> int | None:
    """FULLY_CONNECTED: output elements × K; W is (units, K) (the default weights format)."""
    out, w = elements(s.output(0)), s.input(1)
    if out is None or w is None or len(w) != 2:
        return None
    return _with_bias(out * w[1], s, 2)


def _tfl_batch_matmul(s: NodeShapes) -> int | None:
    """BATCH_MATMUL: output elements × K, K the shared dim of x (``adj_x``: its rows)."""
    out, x = elements(s.output(0)), s.input(0)
    if out is None or x is None or len(x) < 2:
        return None
    return out * (x[-2] if flag_attr(s, "adj_x") else x[-1])


def _tfl_transpose_conv(s: NodeShapes) -> int | None:
    """TRANSPOSE_CONV (output_shape, W (O, KH, KW, I), x, bias): each input element
    scatters into O·KH·KW outputs; the bias (input 3) one more per output element."""
    x, w = elements(s.input(2)), s.input(1)
    if x is None or w is None or len(w) != 4:
        return None
    return _with_bias(x * w[0] * w[1] * w[2], s, 3)


def _tfl_pool(s: NodeShapes) -> int | None:
    out = elements(s.output(0))
    fh, fw = int_attr(s, "filter_height", -1), int_attr(s, "filter_width", -1)
    if out is None or fh < 0 or fw < 0:
        return None
    return out * fh * fw


TFL_ELEMENTWISE = _names(
    "ABS ADD ADD_N CEIL COS DEQUANTIZE DIV ELU EQUAL EXP FLOOR FLOOR_DIV FLOOR_MOD GELU "
    "GREATER GREATER_EQUAL HARD_SWISH LEAKY_RELU LESS LESS_EQUAL LOG LOGICAL_AND LOGICAL_NOT "
    "LOGICAL_OR LOGISTIC MAXIMUM MINIMUM MUL NEG NOT_EQUAL POW PRELU QUANTIZE RELU RELU6 "
    "RELU_0_TO_1 RELU_N1_TO_1 RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR ROUND RSQRT SELECT "
    "SELECT_V2 SIGN SIN SQRT SQUARE SQUARED_DIFFERENCE SUB TANH"
)  # RESIZE_*: one per output element, as ONNX Resize is counted
TFL_FREE = _names(
    "ASSIGN_VARIABLE BATCH_TO_SPACE_ND BROADCAST_TO CALL_ONCE CAST CONCATENATION DENSIFY "
    "DEPTH_TO_SPACE "
    "EXPAND_DIMS FILL GATHER GATHER_ND PACK PAD PADV2 READ_VARIABLE RESHAPE REVERSE_V2 SHAPE "
    "SLICE SPACE_TO_BATCH_ND SPACE_TO_DEPTH SPLIT SPLIT_V SQUEEZE STRIDED_SLICE TILE TRANSPOSE "
    "UNPACK VAR_HANDLE ZEROS_LIKE"
)
TFL_REDUCTIONS = _names("MEAN REDUCE_MAX REDUCE_MIN REDUCE_PROD SUM")

#: op_type → rule for TFLite models (builtin operator names; custom ops have no rule).
TFLITE_RULES: dict[str, Rule] = {
    **dict.fromkeys(TFL_ELEMENTWISE, _per_output(1)),
    **dict.fromkeys(TFL_FREE, _free),
    **dict.fromkeys(TFL_REDUCTIONS, _per_input),
    "SOFTMAX": _per_output(3),
    "LOG_SOFTMAX": _per_output(3),
    "CONV_2D": _tfl_conv,
    "DEPTHWISE_CONV_2D": _tfl_depthwise,
    "FULLY_CONNECTED": _tfl_fully_connected,
    "BATCH_MATMUL": _tfl_batch_matmul,
    "TRANSPOSE_CONV": _tfl_transpose_conv,
    "AVERAGE_POOL_2D": _tfl_pool,
    "MAX_POOL_2D": _tfl_pool,
    "L2_POOL_2D": _tfl_pool,
}


def rule_for(node: Node, graph_format: str) -> Rule | None:
    """The node's MAC rule; None for an ONNX op without one (its MACs are unknown).
    GraphDef ops without a rule cost 0: TensorFlow graphs are mostly bookkeeping ops."""
    if graph_format == "graphdef":
        return GRAPHDEF_RULES.get(node.op_type, _free)
    if graph_format == "tflite":
        return TFLITE_RULES.get(node.op_type) if node.domain == "" else None
    domain = "" if node.domain == "ai.onnx" else node.domain
    return ONNX_RULES.get((domain, node.op_type))
