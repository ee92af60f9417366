"""SavedModel / MetaGraphDef messages + a tensor bundle → the neutral :class:`Model`.

- The MetaGraphDef tagged ``serve`` (else the first) is :attr:`Model.graph`; every other
  one is a graph of its own, listed with the functions under the name of its tags.
- ``signature_def``s are the graph's named inputs and outputs (a value per signature
  tensor, its doc string naming the signature and key) and each reads as one line in
  the metadata: ``signature.serving_default: inputs x=x:0 float32[?, 4] → outputs …``
  (TensorFlow's own ``__saved_model_init_op`` is listed there, not as an output).
- The GraphDefs' function libraries are the model's functions (``StatefulPartitionedCall``
  nodes open them through their ``f`` attribute).
- Variables (``VarHandleOp``, ``VariableV2``) get their checkpoint tensor as the
  initializer of their output, found by the object graph (checkpoint key
  ``layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE`` → ``SavedVariable.name`` →
  the node whose ``shared_name`` or name it is) or, in TF1 checkpoints, by the key being
  the node's name. The key is shown in the node's metadata. Checkpoint tensors no node
  claims (optimizer slots, ``save_counter``) are initializers under their key.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ....errors import ModelFormatError
from ....external_data import DataFiles
from ....model import Function, Graph, Model, Node, TensorsOnDemand, ValueInfo
from ....tensors import Tensor
from ..bundle._read import Bundle
from ..graphdef._attrs import shape_dims
from ..graphdef._build import model_from_graphdef
from ..graphdef._support import GraphDefSupport
from ..graphdef._tensors import TensorContext, tf_type_name

VARIABLE_OPS = frozenset({"VarHandleOp", "VariableV2", "Variable"})
_ATTRIBUTES = "/.ATTRIBUTES/VARIABLE_VALUE"


@dataclass(frozen=True)
class Variables:
    """What is known of a SavedModel's checkpoint: the bundle, or why there is none."""

    bundle: Bundle | None
    note: str  # shown in the metadata: "3 variables, 128 bytes in 1 shard" / "no variables/"


def tags_of(meta: Any) -> tuple[str, ...]:
    return tuple(meta.meta_info_def.tags)


def ordered(metas: Sequence[Any]) -> list[Any]:
    """``serve`` first, then the file's order."""
    return sorted(metas, key=lambda m: "serve" not in tags_of(m))


def _tensor_value(name: str) -> str:
    """A signature's ``node:0`` → the graph's value name (``node``; ``node:k`` kept)."""
    node, sep, port = name.rpartition(":")
    return node if sep and port == "0" else name


def _signature_values(meta: Any) -> tuple[list[ValueInfo], list[ValueInfo], dict[str, str]]:
    inputs: dict[str, ValueInfo] = {}
    outputs: dict[str, ValueInfo] = {}
    lines: dict[str, str] = {}
    names = sorted(meta.signature_def, key=lambda n: (n != "serving_default", n))
    for sig_name in names:
        sig = meta.signature_def[sig_name]
        parts: list[str] = []
        for side, infos, found in (
            ("inputs", sig.inputs, inputs),
            ("outputs", sig.outputs, outputs),
        ):
            shown: list[str] = []
            for key in sorted(infos):
                info = infos[key]
                tensor = info.name or info.coo_sparse.values_tensor_name
                dtype = tf_type_name(int(info.dtype)) if info.dtype else None
                dims = shape_dims(info.tensor_shape) if info.HasField("tensor_shape") else None
                # Metadata is text: the reader writes the one line (``float32[?, 4]``).
                declared = shape_dims(info.tensor_shape)
                sizes = ", ".join("?" if d is None else str(d) for d in declared or ())
                typed = f" {dtype}{'?' if declared is None else f'[{sizes}]'}" if dtype else ""
                shown.append(f"{key}={tensor}{typed}")
                value = _tensor_value(tensor)
                doc = f"signature {sig_name!r}, {side[:-1]} {key!r}"
                # TensorFlow's own (``__saved_model_init_op``: a NoOp) are not model I/O.
                if value not in found and not sig_name.startswith("__"):
                    found[value] = ValueInfo(value, dtype or "", dtype, dims, doc)
            parts.append(f"{side} " + (", ".join(shown) or "none"))
        lines[sig_name] = " → ".join(parts)
    return list(inputs.values()), list(outputs.values()), lines


#: Longest object-graph path built (checkpoint keys are at most 4096 bytes, see
#: bundle/_table.py): a deeper variable keeps its key as its name.
MAX_OBJECT_PATH = 4096


def _object_paths(meta: Any, keys: Container[str]) -> dict[str, str]:
    """Checkpoint key → variable name, from the SavedModel's object graph, for the keys in
    ``keys`` (the bundle's).

    Paths are not kept per object: each object keeps its parent and its name (memory
    linear in the graph, where whole paths were quadratic in its depth), and only a
    variable's path is spelled out, if at most :data:`MAX_OBJECT_PATH` characters long.
    """
    nodes = meta.object_graph_def.nodes
    found: dict[str, str] = {}
    if not nodes:
        return found
    parent: dict[int, tuple[int, str]] = {}  # object → (its parent, its local name)
    length = {0: 0}  # each object's path length, without building it
    queue: deque[int] = deque([0])
    while queue:
        index = queue.popleft()
        obj = nodes[index]
        if obj.WhichOneof("kind") == "variable" and length[index] <= MAX_OBJECT_PATH:
            key = _path(parent, index) + _ATTRIBUTES
            if key in keys:
                found[key] = obj.variable.name
        for child in obj.children:
            node_id = child.node_id
            if 0 <= node_id < len(nodes) and node_id not in length:
                name = child.local_name
                parent[node_id] = (index, name)
                length[node_id] = length[index] + len(name) + (1 if index else 0)
                queue.append(node_id)
    return found


def _path(parent: dict[int, tuple[int, str]], index: int) -> str:
    """An object's path (``layer_with_weights-0/kernel``), walked up to the root."""
    names: list[str] = []
    while index in parent:
        index, name = parent[index]
        names.append(name)
    return "/".join(reversed(names))


def _variable_nodes(graph: Graph) -> dict[str, Node]:
    """Variable nodes by the names a checkpoint may use for them (shared_name, node name)."""
    found: dict[str, Node] = {}
    for node in graph.nodes:
        if node.op_type not in VARIABLE_OPS:
            continue
        found.setdefault(node.name, node)
        shared = node.attributes.get("shared_name")
        if shared is not None and shared.value:
            text = (
                shared.value.decode("utf-8", "replace")
                if isinstance(shared.value, bytes)
                else str(shared.value)
            )
            found.setdefault(text, node)
    return found


def _unclaimed(
    name: str, by_name: dict[str, Node], claimed: set[str], tensor: Callable[[], Tensor]
) -> Node | None:
    """The variable node ``name`` stands for: the node of that name, else — when that
    one is taken — the first of ``name_1``, ``name_2``… not yet claimed whose declared
    dtype and shape agree with the tensor. TensorFlow uniquifies shared names in creation
    order (three Keras metrics each own a ``total``), while the object graph keeps the
    plain name. The tensor is made only when a node of that name exists."""
    node = by_name.get(name)
    if node is None:
        return None
    if node.name not in claimed and _agrees(node, tensor()):
        return node
    for k in range(1, len(by_name) + 1):
        node = by_name.get(f"{name}_{k}")
        if node is None:
            return None
        if node.name not in claimed and _agrees(node, tensor()):
            return node
    return None


def _agrees(node: Node, tensor: Tensor) -> bool:
    """True when a variable node's declared dtype and shape (if any) are the tensor's."""
    dtype, shape = node.attributes.get("dtype"), node.attributes.get("shape")
    if dtype is not None and dtype.kind == "TYPE" and str(dtype.value) != tensor.dtype_name:
        return False
    if shape is not None and shape.kind == "SHAPE" and isinstance(shape.value, tuple):
        dims = shape.value  # None for unknown sizes: only a fully known shape can disagree
        if all(isinstance(d, int) for d in dims) and dims != tuple(tensor.shape):
            return False
    return True


def _with_variables(
    graph: Graph, meta: Any, bundle: Bundle
) -> tuple[list[Node], list[str], dict[str, Tensor], dict[str, ValueInfo]]:
    """The nodes (variables marked with their key), the checkpoint keys no node claims,
    the claimed variables' tensors by value name, and their value infos."""
    by_name = _variable_nodes(graph)
    tensors = bundle.tensors
    object_names = _object_paths(meta, tensors)
    keys_of: dict[str, str] = {}  # node name → checkpoint key
    unclaimed: list[str] = []
    claimed: set[str] = set()
    # The object graph's order is creation order, the order TensorFlow uniquified the
    # names in (total, total_1, ...); the bundle's is sorted (metrics/10 before metrics/2).
    rank = {key: i for i, key in enumerate(object_names)}
    for key in sorted(tensors, key=lambda k: (rank.get(k, len(rank)), k)):
        made = partial(tensors.__getitem__, key)
        node = _unclaimed(object_names.get(key, key), by_name, claimed, made)
        if node is not None:
            keys_of[node.name] = key
            claimed.add(node.name)
        else:
            unclaimed.append(key)
    nodes: list[Node] = []
    initializers: dict[str, Tensor] = {}
    value_info: dict[str, ValueInfo] = {}
    for node in graph.nodes:
        found = keys_of.get(node.name)
        if found is None:
            nodes.append(node)
            continue
        key = found
        value = node.outputs[0]
        tensor = bundle.renamed(key, value, f"checkpoint key {key!r}")
        initializers[value] = tensor
        value_info[value] = ValueInfo(
            value,
            tensor.dtype_name,
            tensor.dtype_name,
            tensor.shape,
            f"variable, checkpoint key {key!r}",
        )
        meta_props = {**node.metadata_props, "checkpoint key": key}
        nodes.append(Node(
            node.name, node.op_type, node.domain, node.inputs, node.outputs, node.attributes,
            node.doc_string, node.control_inputs, node.device, node.has_file_name, meta_props,
        ))  # fmt: skip
    return nodes, unclaimed, initializers, value_info


def _all_initializers(
    graph: Graph, unclaimed: list[str], variables: dict[str, Tensor], bundle: Bundle
) -> TensorsOnDemand:
    """The graph's own tensors, the checkpoint keys no node claims, then the claimed
    variables (a later name wins), each made when first looked up."""
    own = graph.initializers
    bundled = bundle.tensors
    names = [*own, *unclaimed, *variables]
    first, second = len(own), len(own) + len(unclaimed)

    def make(i: int) -> Tensor:
        if i < first:
            return own[names[i]]
        if i < second:
            return bundled[names[i]]
        return variables[names[i]]

    def count(i: int) -> int:
        if first <= i < second:
            return bundled.element_count(names[i])
        return make(i).size

    return TensorsOnDemand(names, make, count)


def _graph(
    meta: Any, name: str, what: str, path: Path | None, ctx: TensorContext, files: DataFiles | None
) -> tuple[Model, dict[str, str]]:
    graph_def = meta.graph_def
    if not (len(graph_def.node) or len(graph_def.library.function)):
        tags = list(tags_of(meta))
        raise ModelFormatError(f"{what}: its MetaGraphDef {tags} has no graph (graph_def is empty)")
    part = model_from_graphdef(meta.graph_def, name=name, path=path, ctx=ctx, data_files=files)
    return part, dict(part.metadata_props)


def build_model(
    metas: Sequence[Any],
    *,
    kind: str,
    name: str,
    what: str,
    path: Path | None,
    ctx: TensorContext,
    files: DataFiles | None,
    variables: Variables,
) -> Model:
    if not metas:
        raise ModelFormatError(f"{what} holds no MetaGraphDef")
    main_meta, *others = ordered(metas)
    main, metadata = _graph(main_meta, name, what, path, ctx, files)
    graph = main.graph
    inputs, outputs, lines = _signature_values(main_meta)
    initializers: Mapping[str, Tensor] = graph.initializers
    value_info = dict(graph.value_info)
    nodes = list(graph.nodes)
    if variables.bundle is not None:
        nodes, unclaimed, found, variable_info = _with_variables(graph, main_meta, variables.bundle)
        initializers = _all_initializers(graph, unclaimed, found, variables.bundle)
        value_info.update(variable_info)
    graph = Graph(
        name=name, nodes=nodes,
        inputs=tuple(inputs) if lines else graph.inputs,
        outputs=tuple(outputs) if lines else graph.outputs,
        initializers=initializers, value_info=value_info, path="/",
    )  # fmt: skip
    functions: dict[str, Function] = {f.name: f for f in main.functions}
    for i, meta in enumerate(others, start=1):
        tags = ", ".join(tags_of(meta)) or f"#{i}"
        other, _ = _graph(meta, f"{name} [{tags}]", what, path, ctx, files)
        for f in other.functions:
            functions.setdefault(f.name, f)
        body = other.graph
        moved = Graph(
            f"MetaGraphDef [{tags}]",
            list(body.nodes),
            body.inputs,
            body.outputs,
            body.initializers,
            body.value_info,
            path=f"meta_graph::{i}",
        )
        functions[f"meta_graph::{i}"] = Function(
            f"MetaGraphDef [{tags}]",
            "tf.meta_graph",
            moved,
            doc_string=f"the MetaGraphDef tagged {tags}",
        )
    info = main_meta.meta_info_def
    metadata.update({
        "container": "SavedModel" if kind == "savedmodel" else "MetaGraphDef",
        "tags": ", ".join(tags_of(main_meta)),
        "meta_graphs": "; ".join(", ".join(tags_of(m)) or "(no tags)" for m in ordered(metas)),
        "variables": variables.note,
    })  # fmt: skip
    if info.tensorflow_version:
        metadata["tensorflow_version"] = info.tensorflow_version
    for sig_name, line in lines.items():
        metadata[f"signature.{sig_name}"] = line
    return Model(
        graph, format="graphdef", path=path, producer_name="TensorFlow",
        producer_version=info.tensorflow_version, metadata_props=metadata,
        functions=tuple(functions.values()), data_files=files, support=GraphDefSupport(),
    )  # fmt: skip


__all__ = ["VARIABLE_OPS", "Variables", "build_model", "ordered", "tags_of"]
