"""A graph for weight files that have no graph (safetensors, GGUF): one box per module.

Checkpoints name their tensors by the module that owns them
(``model.layers.3.self_attn.q_proj.weight``, ``blk.3.attn_q.weight``). Each module becomes
a node named by its path with ``/`` between the parts (``model/layers/3/self_attn/q_proj``)
whose inputs are its tensors, so the explorer's scope tree, search, weight folding and
weights report work as they do for a real graph. Its op type is the module's own name
(``q_proj``; ``layers.3`` when that name is a number), so that op counts and search by
type count module kinds. The nodes have no data edges: the file says nothing about data
flow, and none is made up. Nodes keep the file's order; a module's tensors are sorted
by name, so that two files of one checkpoint written in different orders (writers sort
by alignment, by name, or not at all) compare equal node for node.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model import Graph, Node
from ..tensors import Tensor


def module_of(name: str, separator: str = ".") -> tuple[str, str]:
    """(module path with ``/``, parameter name): ``a.b.weight`` → (``a/b``, ``weight``)."""
    module, _, leaf = name.rpartition(separator)
    return module.replace(separator, "/"), leaf


def module_kind(module: str) -> str:
    """The op type of a module box: its last name, with its parent's when a number."""
    parts = module.split("/")
    if len(parts) > 1 and parts[-1].isdigit():
        return f"{parts[-2]}.{parts[-1]}"
    return parts[-1]


def module_graph(tensors: Mapping[str, Tensor], *, separator: str = ".", name: str = "") -> Graph:
    """The module graph of ``tensors`` (name → tensor, in the file's order)."""
    owned: dict[str, list[str]] = {}
    for tensor_name in tensors:
        module, _ = module_of(tensor_name, separator)
        # A tensor with no module of its own is its own box (``lm_head``-less files, GGUF
        # ``output_norm.weight`` aside: ``token_embd`` has a module).
        owned.setdefault(module or tensor_name.replace(separator, "/"), []).append(tensor_name)
    nodes = [
        Node(module, module_kind(module), inputs=tuple(sorted(names)), has_file_name=False)
        for module, names in owned.items()
    ]
    return Graph(name, nodes, (), (), tensors)
