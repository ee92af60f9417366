"""Streaming statistics and histograms of a tensor's values (pure numpy, every numeric dtype).

A leaf of the package: it imports only ``dtypes`` and ``errors``. A tensor is read
through the :class:`ValueSource` protocol (``onnx_explorer.Tensor`` is one), a
dequantization through :class:`Dequantizer`; the jobs live in ``_values`` (streams
of value blocks), ``_summary`` (one-pass statistics), ``_histogram`` and ``_results``.

Values are read chunk by chunk (:meth:`Tensor.iter_chunks`) and reduced in small
blocks, so the extra memory stays a few megabytes whatever the tensor's size:

- a chunk of at most :data:`CHUNK_ELEMENTS` decoded elements (8 MB for 64-bit types;
  mapped data is a view whose pages are dropped once read, see ``tensors.py``);
- float64 work buffers of :data:`BLOCK_ELEMENTS` elements (512 KB, cache-sized);
- the percentile sample, at most :data:`SAMPLE_SIZE` float64 values (2 MB).

Definitions (the same for every dtype):

- ``min``, ``max``, ``mean``, ``std`` (population, ``ddof=0``), ``abs_max`` and the
  percentiles are over the *finite* values; ``nan`` and ``inf`` count the others.
  Sums are float64 per block, merged with Chan's parallel update, so the mean and
  std are as accurate as numpy's float64 two-pass result.
- ``zeros`` is the fraction of all elements equal to zero.
- ``p1``, ``p50``, ``p99`` (linear interpolation, as ``numpy.percentile``) are exact
  for tensors of up to :data:`SAMPLE_SIZE` elements; above that they come from a
  uniform random sample of that many values (fixed seed, so reproducible). The rank
  error of such an estimate is about ±0.1 percentage point at the median and ±0.02
  at p1/p99 (one standard deviation).
- Integer tensors keep exact integer ``min``/``max``/``abs_max`` (``abs`` of int8
  ``-128`` is ``128``); int64/uint64 values lose precision in the float64 mean/std.
- float16, bfloat16, float8, float6 and float4 are widened to float32; int4/uint4 and
  int2/uint2 (stored packed, unpacked by the tensor) to int8/uint8; bool counts as 0/1.
- string and complex tensors have no statistics: :class:`TensorDataError`.

Histograms use float64 bin arithmetic: ``counts[i]`` holds the values in
``[edges[i], edges[i+1])``, the last bin closed, up to one float64 rounding at an
edge. With ``range=None`` the range is the finite min/max (a first pass) and
integer tensors get integer-aligned bins.
"""

from __future__ import annotations

from ._histogram import array_histogram, histogram, tensor_histogram
from ._results import Histogram, TensorStats
from ._summary import SAMPLE_SIZE, array_stats, summarize, tensor_stats
from ._values import (
    BLOCK_ELEMENTS,
    CHUNK_ELEMENTS,
    FLOAT16_MAX,
    Dequantizer,
    Repeat,
    ValueSource,
    ValueStream,
    array_values,
    tensor_values,
)

__all__ = [
    "BLOCK_ELEMENTS",
    "CHUNK_ELEMENTS",
    "FLOAT16_MAX",
    "SAMPLE_SIZE",
    "Dequantizer",
    "Histogram",
    "Repeat",
    "TensorStats",
    "ValueSource",
    "ValueStream",
    "array_histogram",
    "array_stats",
    "array_values",
    "histogram",
    "summarize",
    "tensor_histogram",
    "tensor_stats",
    "tensor_values",
]
