"""``onnx-explorer run MODEL``: run a model with onnxruntime and summarise every tensor;
exit 0 when no node made a NaN/Inf (and within tolerance with ``--compare``), 1 a node
that made one (a constant's or a mask's ±inf passed on does not count), a tensor beyond
tolerance or a node that failed, 2 on error (a bad model or feeds, the time or memory
limit passed: ``--timeout``, ``--memory-limit``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ExplorerError
from ..runs import RunFailedError, compare, run
from ..runs._limits import RUN_TIMEOUT
from ..views._text import terminal_safe
from .metrics import parse_dims

__all__ = ["register"]


def _cmd_run(args: argparse.Namespace) -> int:
    try:
        dims = parse_dims(",".join(args.dims or []))  # --dims may be given more than once
        if args.compare:
            return _compare(args, dims)
        try:
            result = run(args.path, args.feeds, dims=dims, seed=args.seed, vocab=args.vocab,
                         **_limits(args))  # fmt: skip
            failed = None
        except RunFailedError as exc:
            result, failed = exc.result, str(exc)
    except (ExplorerError, OSError, ValueError) as exc:
        _print_lines(f"onnx-explorer: error: {exc}")
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, default=float))
    else:
        print(terminal_safe(repr(result)))
        for record in result.tensors.values():
            stats = record.stats
            if stats is not None and (stats.nan or stats.inf):
                counts = f"{stats.nan} NaN, {stats.inf} Inf of {stats.count}"
                print(terminal_safe(f"  {record.node} → {record.name}: {counts}"))
        if result.not_captured:
            print(f"  {len(result.not_captured)} values inside If/Loop bodies not captured")
        for line in (*result.notes, result.assumed):
            if line:
                print(terminal_safe(f"  {line}"))
    if failed:
        _print_lines(f"onnx-explorer: {failed}")
        return 1
    return 1 if result.first_problem else 0


def _limits(args: argparse.Namespace) -> dict[str, Any]:
    """``timeout`` and ``memory_limit`` from ``--timeout`` / ``--memory-limit`` (0: none)."""
    found: dict[str, Any] = {}
    if args.timeout is not None:
        if not args.timeout >= 0:
            raise ValueError(f"--timeout must be a number of seconds (0: none), not {args.timeout}")
        found["timeout"] = args.timeout or None
    if args.memory_limit is not None:
        if args.memory_limit < 0:
            raise ValueError(f"--memory-limit must be bytes (0: none), not {args.memory_limit}")
        found["memory_limit"] = args.memory_limit or None
    return found


def _print_lines(message: str) -> None:
    """A message of several lines to stderr, each made safe for the terminal (escaping
    the whole would print its line breaks as ``\\n``)."""
    for line in message.splitlines():
        print(terminal_safe(line), file=sys.stderr)


def _compare(args: argparse.Namespace, dims: dict[str, int]) -> int:
    result = compare(
        args.path, args.compare, args.feeds, atol=args.atol, rtol=args.rtol,
        dims=dims, seed=args.seed, vocab=args.vocab, **_limits(args),
    )  # fmt: skip
    if args.json:
        print(json.dumps(result.to_dict(), indent=1, default=str))
    else:
        print(terminal_safe(repr(result)))
        print(f"  {'tensor':40} {'max abs':>10} {'max rel':>10} {'cosine':>9} {'SNR dB':>8}")
        for t in result.tensors:
            flag = "" if t.within else "  ← beyond tolerance"
            print(terminal_safe(f"  {t.a[:40]:40} {t.max_abs:10.3g} {t.max_rel:10.3g} "
                                f"{t.cosine:9.6f} {t.snr_db:8.1f}{flag}"))  # fmt: skip
        for side, failure in (("a", result.failure_a), ("b", result.failure_b)):
            if failure is not None:
                print(terminal_safe(f"  model {side} failed: {failure.message}"))
    return 0 if result.ok else 1


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "run",
        help="run with onnxruntime and check every tensor (exit 0 finite, 1 NaN/Inf or "
        "beyond tolerance, 2 error)",
    )
    parser.add_argument("path", help="the ONNX model")
    parser.add_argument("--feeds", metavar="X.npz", help="inputs (default: generated)")
    parser.add_argument("--dims", action="append", metavar="NAME=INT[,...]",
                        help="values of symbolic input dims, e.g. batch=1,seq=16")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of generated feeds")
    parser.add_argument("--vocab", type=int, default=None, help="range of generated token ids")
    parser.add_argument("--compare", metavar="OTHER", help="a second model to compare with")
    parser.add_argument("--atol", type=float, default=1e-4, metavar="X")
    parser.add_argument("--rtol", type=float, default=1e-3, metavar="X")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"stop the run after this long (default {RUN_TIMEOUT:g}; 0: none)",
    )
    parser.add_argument("--memory-limit", type=int, default=None, metavar="BYTES",
                        help="bytes of values onnxruntime may hold (default 1 GiB or a "
                        "quarter of the memory; 0: none)")  # fmt: skip
    parser.set_defaults(handler=_cmd_run)
