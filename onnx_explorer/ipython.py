"""IPython glue: ``%load_ext onnx_explorer`` registers the magics and the ModelProto display.

``%onnx_explore PATH [--external-data-dir DIR]``  opens the explorer;
``%onnx_summary PATH [--external-data-dir DIR] [--full]``  prints the text summary;
``%onnx_diff A B [--no-weights] [--atol X] [--rtol X]``  shows what changed from A to B;
an ``onnx.ModelProto`` left as a cell's last expression displays as the explorer.
``%unload_ext onnx_explorer`` removes all of it.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
from typing import Any

__all__ = [
    "load_ipython_extension",
    "onnx_diff",
    "onnx_explore",
    "onnx_summary",
    "unload_ipython_extension",
]

MAGIC_NAMES = ("onnx_explore", "onnx_summary", "onnx_diff")


class _MagicArgumentError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the kernel
        raise _MagicArgumentError(f"{self.prog}: {message}")


def _parse(prog: str, line: str) -> argparse.Namespace:
    parser = _Parser(prog=f"%{prog}", add_help=False)
    parser.add_argument("path")
    parser.add_argument("--external-data-dir", default=None)
    parser.add_argument("--max-nodes", type=int, default=None)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--dims", default=None)
    return parser.parse_args(shlex.split(line))


def onnx_explore(line: str) -> Any:
    """%onnx_explore PATH [--external-data-dir DIR] [--max-nodes N] [--dims batch=1,...]:
    open the explorer (``--dims``: sizes of the inputs' symbolic dims)."""
    from .cli.metrics import parse_dims
    from .errors import ExplorerError
    from .widgets._explorer import explore

    try:
        args = _parse("onnx_explore", line)
        return explore(
            args.path,
            external_data_dir=args.external_data_dir,
            max_nodes=args.max_nodes,
            dims=parse_dims(args.dims),
        )
    except (_MagicArgumentError, ExplorerError, ValueError) as exc:
        _print_error(exc)
        return None


def _parse_diff(line: str) -> argparse.Namespace:
    parser = _Parser(prog="%onnx_diff", add_help=False)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--external-data-dir", default=None)
    parser.add_argument("--max-nodes", type=int, default=None)
    parser.add_argument("--no-weights", action="store_true")
    parser.add_argument("--atol", type=float, default=0.0)
    parser.add_argument("--rtol", type=float, default=0.0)
    return parser.parse_args(shlex.split(line))


def onnx_diff(line: str) -> Any:
    """%onnx_diff A B [--no-weights] [--atol X] [--rtol X] [--external-data-dir DIR]
    [--max-nodes N]: show model B drawn with what changed since A, and the changes."""
    from .errors import ExplorerError
    from .widgets._diff_explorer import explore_diff

    try:
        args = _parse_diff(line)
        return explore_diff(
            args.a, args.b, weights=not args.no_weights, atol=args.atol, rtol=args.rtol,
            external_data_dir=args.external_data_dir, max_nodes=args.max_nodes,
        )  # fmt: skip
    except (_MagicArgumentError, ExplorerError) as exc:
        _print_error(exc)
        return None


def onnx_summary(line: str) -> None:
    """%onnx_summary PATH [--external-data-dir DIR] [--full]: print the model's summary;
    ``--full`` prints doc strings and metadata values whole instead of one line each."""
    from .errors import ExplorerError
    from .readers import load
    from .summary import summarize
    from .views._summary_text import format_summary

    try:
        args = _parse("onnx_summary", line)
        info = summarize(load(args.path, external_data_dir=args.external_data_dir))
        width = None if args.full else shutil.get_terminal_size().columns
        print(format_summary(info, width=width))
    except (_MagicArgumentError, ExplorerError) as exc:
        _print_error(exc)


def _print_error(exc: Exception) -> None:
    from .views._text import terminal_safe

    print(f"onnx_explorer: {terminal_safe(str(exc))}")


def _model_proto_mimebundle(proto: Any, include: Any = None, exclude: Any = None) -> dict[str, Any]:
    from .widgets._explorer import explore

    return explore(proto)._repr_mimebundle_(include=include, exclude=exclude)


def _formatter(ip: Any) -> Any:
    return ip.display_formatter.mimebundle_formatter


def load_ipython_extension(ip: Any) -> None:
    ip.register_magic_function(onnx_explore, "line", "onnx_explore")
    ip.register_magic_function(onnx_summary, "line", "onnx_summary")
    ip.register_magic_function(onnx_diff, "line", "onnx_diff")
    _formatter(ip).for_type_by_name("onnx.onnx_ml_pb2", "ModelProto", _model_proto_mimebundle)


def unload_ipython_extension(ip: Any) -> None:
    line_magics = ip.magics_manager.magics["line"]
    for name in MAGIC_NAMES:
        line_magics.pop(name, None)
    formatter = _formatter(ip)
    formatter.deferred_printers.pop(("onnx.onnx_ml_pb2", "ModelProto"), None)
    for cls in list(formatter.type_printers):  # the printer, once IPython resolved it
        if (getattr(cls, "__module__", None), getattr(cls, "__name__", None)) == (
            "onnx.onnx_ml_pb2",
            "ModelProto",
        ):
            formatter.type_printers.pop(cls, None)
