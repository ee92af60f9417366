"""The only place onnxruntime is imported (lazily), and its errors made ours."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import ExplorerError

INSTALL_HINT = "pip install onnx_explorer[run]"


class OnnxRuntimeMissingError(ExplorerError, ImportError):
    """onnxruntime is not installed (it is the optional ``[run]`` extra)."""


class RunError(ExplorerError, RuntimeError):
    """onnxruntime could not build or run the model; the message names the node."""


def onnxruntime() -> Any:
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise OnnxRuntimeMissingError(
            f"running a model needs onnxruntime, which is not installed: {INSTALL_HINT}"
        ) from exc
    return ort


_NODE_PATTERNS = (
    re.compile(r"Name:'([^']*)'"),
    re.compile(r"node with name '([^']*)'"),
    re.compile(r"In Node, \(\"([^\"]*)\""),
)


def failing_node(message: str) -> str | None:
    """The node onnxruntime names in an error message, if it names one."""
    for pattern in _NODE_PATTERNS:
        found = pattern.search(message)
        if found:
            return found.group(1)
    return None


def make_session(model_bytes: bytes, base_dir: Path | None) -> Any:
    """A CPU session over a model in memory. External data is read in place from
    ``base_dir`` (the user's model directory): nothing is written or copied."""
    ort = onnxruntime()
    options = ort.SessionOptions()
    options.log_severity_level = 3  # our error says what failed; no duplicate stderr lines
    if base_dir is not None:
        options.add_session_config_entry(
            "session.model_external_initializers_file_folder_path", str(base_dir)
        )
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def short(message: str, limit: int = 600) -> str:
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[:limit] + " ..."
