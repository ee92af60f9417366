"""TensorFlow files without TensorFlow: ``graphdef/`` (``.pb``, ``.pbtxt`` GraphDefs),
``savedmodel/`` (SavedModel directories and MetaGraphDefs) and ``bundle/`` (the tensor
bundles holding a SavedModel's variables). Each subpackage says what it exports; this
one only groups them.
"""

from __future__ import annotations

__all__: list[str] = []
