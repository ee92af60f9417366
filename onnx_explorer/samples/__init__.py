"""Small but realistic example models, built in code (no downloads, no PyTorch, no TensorFlow).

Used by the README's quick start, the tutorials, the tests and the benchmarks::

    from onnx_explorer.samples import tiny_transformer
    onnx_explorer.explore(tiny_transformer())

``_examples`` builds the ONNX models (and one TF1 frozen GraphDef as text);
``_savedmodel`` writes TensorFlow SavedModels and tensor bundles for the reader's tests.
A leaf of the package: it imports ``onnx`` and numpy, nothing of ``onnx_explorer``.
"""

from __future__ import annotations

from ._examples import (
    OPSET,
    dense_blocks,
    frozen_tf1_graphdef,
    save_with_external_data,
    tiny_cnn,
    tiny_transformer,
)
from ._savedmodel import (
    crc32c_mask,
    crc32c_pure,
    dense_saved_model_weights,
    sstable,
    write_dense_saved_model,
    write_tensor_bundle,
)

__all__ = [
    "OPSET",
    "crc32c_mask",
    "crc32c_pure",
    "dense_blocks",
    "dense_saved_model_weights",
    "frozen_tf1_graphdef",
    "save_with_external_data",
    "sstable",
    "tiny_cnn",
    "tiny_transformer",
    "write_dense_saved_model",
    "write_tensor_bundle",
]
