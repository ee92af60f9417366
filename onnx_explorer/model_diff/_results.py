"""What a diff reports, one record per change (plain frozen data)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NodeRef:
    """One node on one side of a diff (slots: a renamed export makes one per node and side)."""

    graph: str  # Graph.path of the graph holding it, on its own side
    name: str  # Node.name ("" is possible: then ``index`` identifies it)
    index: int  # position in that graph's nodes
    op_type: str  # Node.qualified_op
    # The name in the file, or ``op_type(first output)`` for a nameless node (the reader's
    # ``name`` for those is made from its position); "" means ``name``.
    stable: str = ""

    @property
    def label(self) -> str:
        """The name as reports print it: bodies prefixed by their graph path."""
        name = self.stable or self.name or f"#{self.index}"
        return name if self.graph == "/" else f"{self.graph}/{name}"


@dataclass(frozen=True)
class NodeChange:
    """A node matched on both sides whose op type, attributes or inputs differ."""

    a: NodeRef
    b: NodeRef
    changes: tuple[str, ...]  # "attribute alpha: 0.1 → 0.2", "input 1: W → W2", ...
    size: float  # number of changed items, for sorting by size


@dataclass(frozen=True)
class TensorChange:
    """A tensor matched on both sides whose values, dtype or shape differ (or unreadable)."""

    a: str | None
    b: str | None
    dtype_a: str
    dtype_b: str
    shape_a: tuple[int, ...] | None
    shape_b: tuple[int, ...] | None
    bit_identical: bool
    max_abs: float | None
    max_rel: float | None
    mean_abs: float | None
    cosine: float | None
    differing: int | None  # elements differing beyond atol + rtol·|a|
    error: str | None  # "could not compare: why", "shapes differ: … vs …"
    # How a quantized side was compared: "dequantized: b per-tensor (scale 0.0046) from
    # MatMulInteger 'fc_quant'", or "as stored: b ... scale unknown ..."; "" when not.
    compared: str = ""

    @property
    def dequantized(self) -> bool:
        """Whether a quantized side was turned into real numbers before comparing."""
        return self.compared.startswith("dequantized")


@dataclass(frozen=True)
class RemovedNode:
    """A node of side a with no match on side b, and where it was wired.

    ``inputs`` and ``outputs`` are a's value names, replaced by b's names where the
    producer (inputs) or a consumer (outputs) has a match on side b.
    """

    ref: NodeRef
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
