"""One operator application (:class:`Node`) and the scope parts of a node name."""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import islice
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..tensors import Tensor
from ._values import _NO_METADATA, Attribute

if TYPE_CHECKING:
    from ._graph import Graph


class Node:
    """One operator application.

    ``metadata_props`` holds the file's free-form key → value notes on the node (ONNX
    ``NodeProto.metadata_props``: PyTorch's exporter writes ``pkg.torch.onnx.name_scopes``,
    ``pkg.torch.onnx.class_hierarchy`` and ``pkg.torch.onnx.stack_trace`` there).
    """

    __slots__ = (
        "attributes",
        "control_inputs",
        "device",
        "doc_string",
        "domain",
        "graph",
        "has_file_name",
        "index",
        "inputs",
        "metadata_props",
        "name",
        "op_type",
        "outputs",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        op_type: str,
        domain: str = "",
        inputs: tuple[str, ...] = (),
        outputs: tuple[str, ...] = (),
        attributes: Mapping[str, Attribute] | None = None,
        doc_string: str = "",
        control_inputs: tuple[str, ...] = (),
        device: str = "",
        has_file_name: bool = True,
        metadata_props: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.op_type = op_type
        self.domain = domain
        self.inputs = inputs  # "" marks an omitted optional input
        self.outputs = outputs
        self.attributes: Mapping[str, Attribute] = MappingProxyType(dict(attributes or {}))
        self.doc_string = doc_string
        self.control_inputs = control_inputs  # GraphDef "^name" ordering edges
        self.device = device
        self.has_file_name = has_file_name  # False: ``name`` was made up by the reader
        self.metadata_props: Mapping[str, str] = (
            MappingProxyType(dict(metadata_props)) if metadata_props else _NO_METADATA
        )
        self.index = -1  # position in the graph, set by Graph
        self.graph: Graph | None = None

    def __repr__(self) -> str:
        return f"<Node {self.name!r} {self.qualified_op}>"

    @property
    def qualified_op(self) -> str:
        return (
            f"{self.domain}::{self.op_type}" if self.domain not in ("", "ai.onnx") else self.op_type
        )

    def subgraphs(self) -> list[tuple[str, Graph]]:
        """(attribute name, graph) for GRAPH and GRAPHS attributes (If/Loop/Scan bodies)."""
        found: list[tuple[str, Graph]] = []
        for attr in self.attributes.values():
            if attr.kind == "GRAPH":
                found.append((attr.name, attr.value))
            elif attr.kind == "GRAPHS":
                found.extend((f"{attr.name}[{i}]", g) for i, g in enumerate(attr.value))
        return found

    def tensors(self) -> list[tuple[str, Tensor]]:
        """(attribute name, tensor) for TENSOR / TENSORS / SPARSE_TENSOR attributes."""
        found: list[tuple[str, Tensor]] = []
        for attr in self.attributes.values():
            if attr.kind == "TENSOR":
                found.append((attr.name, attr.value))
            elif attr.kind == "TENSORS":
                found.extend((f"{attr.name}[{i}]", t) for i, t in enumerate(attr.value))
            elif attr.kind == "SPARSE_TENSOR":
                found.append((attr.name, attr.value.values))
            elif attr.kind == "SPARSE_TENSORS":
                found.extend((f"{attr.name}[{i}]", s.values) for i, s in enumerate(attr.value))
        return found


SCOPE_DEPTH_MAX = 64

_SCOPE_PART = re.compile("[^/]+")


def scope_parts(prefix: str) -> list[str]:
    """The scope components of a name prefix: its non-empty parts, at most SCOPE_DEPTH_MAX.

    Scans only as far as it needs, at C speed: a 1 MB name of parts or of bare ``/``
    costs one pass, not a list of every part. The explorer's scope tree and
    :func:`onnx_explorer.metrics` both group by it.
    """
    return [m.group() for m in islice(_SCOPE_PART.finditer(prefix), SCOPE_DEPTH_MAX)]


#: Inference runs by itself (callers' ``infer=None``) on graphs of at most this many
#: nodes: it costs about 1.2 s per 100,000 nodes here (plus 0.3-0.5 s, once per Python
#: process, to start the worker process it runs in), too much to put before a first view.
