"""A byte source on any fsspec URL (``https://``, ``s3://``, ``gs://``, ``hf://``, ...).

Only ranges are fetched: small reads (the wire walk's headers, small tensors) are
coalesced into aligned blocks of ``block_size`` kept in a few in-memory slots (and on
disk with ``cache_dir=``); large reads are fetched as asked, in pieces, with a
progress bar for long transfers. Every answer is checked: a server that returns
more or fewer bytes than asked (it ignored the Range header, the object changed) is
an :class:`ExternalDataError`, never a wrong tensor. Sizes come from the object's
metadata (HEAD / stat) before any read. The file's first bytes, once fetched (the
format's sniff, a header), are kept and serve later reads inside them, so a header
read after the sniff costs no second request. Hub web URLs (``https://huggingface.co/...``)
are read as ``hf://`` (:mod:`.hub`). A folder (:class:`RemoteDir`) is asked whether it
holds a name (one metadata request) and, where the store can list (``s3://``,
``hf://``, not HTTP), what it holds. Nothing shown names credentials: messages
carry :func:`~.urls.redact_url` forms, and errors of the libraries underneath are
passed on scrubbed.

Over HTTP(S) a range is read from the response as it streams and the read stops at the
range's length: a server that answers a range request with ``200`` and the whole object,
or sends more bytes than asked, is refused before its body is read (fsspec's own
``cat_file`` would buffer all of it first). Every request has a time bound
(:data:`DEFAULT_TIMEOUT` seconds to connect, to answer and between two pieces of a body,
and a whole range no slower than :data:`MIN_RATE` bytes a second), configurable with
``storage_options={"timeout": seconds}``; a server that does not answer in time is a
:class:`RemoteTimeoutError` saying so.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import ExplorerError, ExternalDataError, ModelFormatError, UnsafePathError
from .base import ByteSource
from .hub import hub_url
from .urls import host_of, join_location, parent_url, redact_url, scheme_of, scrub

#: Small reads are served from aligned blocks of this size (one request per block).
DEFAULT_BLOCK_SIZE = 1 << 20
#: Large ranges are fetched in requests of at most this many bytes (progress, Ctrl-C).
MAX_REQUEST = 16 << 20
#: Transfers from this size on show a progress bar.
PROGRESS_FROM = 64 << 20
#: Blocks kept in memory per source.
MEMORY_BLOCKS = 8
#: A read from offset 0 up to this size is kept: later reads inside it cost nothing.
HEAD_KEEP = 1 << 20
#: Most names a folder listing may return (a listing is only used to find a model).
MAX_LISTING = 100_000

#: Seconds an HTTP server has to accept a connection, to answer a request, and between
#: two pieces of a body (``storage_options={"timeout": seconds}`` changes it).
DEFAULT_TIMEOUT = 5.0
#: A range must arrive at least this fast (bytes a second) on top of the timeout: a
#: server dripping a byte at a time cannot hold a read for hours.
MIN_RATE = 64 << 10
#: Bytes read from a response at a time.
_PIECE = 1 << 20

_HTTP = ("http", "https")


class RemoteTimeoutError(ExternalDataError):
    """The server did not answer (connect, headers or the next piece of a body) in time."""


def _timed_out(exc: BaseException) -> bool:
    """True when ``exc`` or an exception it was raised from is a timeout (fsspec turns a
    HEAD and GET that timed out into FileNotFoundError: the cause tells)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, TimeoutError):  # asyncio's is this one from Python 3.11 on
            return True
        # Python 3.10: asyncio's own class; asyncio is loaded whenever fsspec raised it, and
        # importing it here would cost every `import onnx_explorer` ~20 ms.
        asyncio = sys.modules.get("asyncio")
        if asyncio is not None and isinstance(current, asyncio.TimeoutError):
            return True
        if type(current).__name__ in ("FSTimeoutError", "ServerTimeoutError"):
            return True
        current = current.__cause__ or current.__context__
    return False


def require_fsspec() -> Any:
    try:
        import fsspec
    except ImportError:
        raise ImportError(
            "opening a model by URL needs fsspec: pip install 'onnx_explorer[remote]'"
        ) from None
    return fsspec


def _failure(display: str, exc: BaseException, doing: str) -> ExternalDataError:
    """A library's exception as our error, naming the object but never its credentials."""
    if isinstance(exc, ExplorerError):
        return ExternalDataError(f"{display!r}: {exc}")
    if _timed_out(exc):
        return RemoteTimeoutError(
            f"{display!r} {doing}: the server did not answer in time (a timeout; "
            "storage_options={'timeout': seconds} waits longer)"
        )
    if isinstance(exc, FileNotFoundError):
        return ExternalDataError(f"{display!r} does not exist")
    if isinstance(exc, PermissionError):
        return ExternalDataError(f"{display!r}: access denied (check the credentials)")
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return ExternalDataError(f"{display!r} {doing}: the server answered HTTP {status}")
    detail = scrub(str(exc))[:300]
    return ExternalDataError(f"{display!r} {doing}: {type(exc).__name__}: {detail}")


class RemoteFolderError(ExternalDataError):
    """The URL names a folder (a directory, a repository), not a file."""


class RemoteFile(ByteSource):
    """One remote object read by ranges; ``bytes_transferred`` counts what came back."""

    def __init__(
        self,
        fs: Any,
        url: str,
        *,
        block_size: int = DEFAULT_BLOCK_SIZE,
        cache_dir: str | os.PathLike[str] | None = None,
        progress: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._fs = fs
        self.timeout = _seconds(timeout)
        self._url = url  # may hold a signed query string: used, never shown
        self._read_url = url
        self.display = redact_url(url)
        self.block_size = max(4096, int(block_size))
        self._cache_root = Path(cache_dir) if cache_dir is not None else None
        self._cache_path: Path | None = None
        self._progress = progress
        self._http = scheme_of(url) in _HTTP
        # hf:// reads through fsspec's buffered file: without this each range would be
        # read ahead by a block of megabytes.
        self._read_options: dict[str, Any] = (
            {"allow_redirects": False}
            if self._http
            else {"cache_type": "none"}
            if scheme_of(url) == "hf"
            else {}
        )
        self._head = b""  # the file's first bytes, as far as they were fetched
        self._lock = threading.Lock()
        self._size: int | None = None
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self._sha1: str | None = None
        self.bytes_transferred = 0
        self.requests = 0

    # -- metadata -----------------------------------------------------------------
    @property
    def size(self) -> int:
        """The object's size from its metadata (HEAD / stat), asked once before any read."""
        if self._size is None:
            self._size = self._stat()
        return self._size

    def _stat(self) -> int:
        try:
            info = self._info()
        except Exception as exc:
            raise _failure(self.display, exc, "cannot be opened") from None
        final = info.get("url")
        if self._http and isinstance(final, str) and final != self._url:
            if host_of(final) != host_of(self._url) or scheme_of(final) != scheme_of(self._url):
                raise UnsafePathError(
                    f"{self.display!r} redirects to {redact_url(final)!r}, another host or "
                    "scheme (refused: data must come from where the model is)"
                )
            self._read_url = final  # same host: read where the server sent us
        if info.get("type") == "directory":
            raise RemoteFolderError(f"{self.display!r} is a directory, not a file")
        size = info.get("size")
        if not isinstance(size, int) or size < 0:
            raise ExternalDataError(
                f"{self.display!r}: the server does not say how large it is (no "
                "Content-Length), so ranges cannot be checked; refused"
            )
        if self._cache_root is not None:
            tag = f"{self.display}\n{size}\n{info.get('ETag') or info.get('etag') or ''}"
            name = hashlib.sha256(tag.encode()).hexdigest()[:32]
            self._cache_path = self._cache_root / name
            self._cache_path.mkdir(parents=True, exist_ok=True)
        return size

    # -- reading --------------------------------------------------------------------
    def read_into(self, offset: int, out: Any) -> None:
        target = memoryview(out).cast("B")
        self.check_range(offset, len(target))
        if not target:
            return
        head = self._head
        if offset + len(target) <= len(head):
            target[:] = head[offset : offset + len(target)]
            return
        if self._cache_path is not None or len(target) < self.block_size:
            self._read_blocks(offset, target)
        else:
            self._read_direct(offset, target)

    def fetch(self, offset: int, length: int) -> bytes:
        """Exactly the range asked for: no read-ahead (the wire walk sizes its own reads)."""
        out = bytearray(length)
        target = memoryview(out)
        self.check_range(offset, length)
        if length == 0:
            return b""
        head = self._head
        if offset + length <= len(head):
            return head[offset : offset + length]
        if self._cache_path is not None:
            self._read_blocks(offset, target)
        else:
            self._read_direct(offset, target)
        data = bytes(out)
        if offset == 0 and len(head) < length <= HEAD_KEEP:
            self._head = data
        return data

    def _info(self) -> dict[str, Any]:
        """The object's metadata; over HTTP within the time bound (fsspec tries HEAD, then
        GET: both share it)."""
        if not self._http:
            info: dict[str, Any] = self._fs.info(self._url)
            return info
        return _http_info(self._fs, self._url, self.timeout)

    def _get(self, start: int, end: int) -> bytes:
        """One ranged request, checked: exactly ``end - start`` bytes or an error."""
        try:
            data: bytes
            if self._http:
                data = self._http_range(start, end)
            else:
                data = self._fs.cat_file(self._read_url, start=start, end=end, **self._read_options)
        except Exception as exc:
            raise _failure(self.display, exc, "cannot be read") from None
        with self._lock:
            self.requests += 1
            self.bytes_transferred += len(data)
        if len(data) != end - start:
            raise ExternalDataError(
                f"{self.display!r}: asked for {end - start} bytes at offset {start}, got "
                f"{len(data)} (the server ignored the range, or the object changed)"
            )
        return data

    def _http_range(self, start: int, end: int) -> bytes:
        """``bytes=start-(end-1)`` over HTTP, read as it streams: refused at the headers
        when the server answers with anything but the range (a 200 with the whole object),
        and as soon as more bytes come than asked; within the time bound."""
        from fsspec.asyn import sync

        fs = self._fs
        want = end - start
        limit = self.timeout + want / MIN_RATE
        covers_all = start == 0 and end == self.size  # a 200 then is the range asked for

        async def fetch() -> bytes:
            session = await fs.set_session()
            options = dict(fs.kwargs)
            headers = dict(options.pop("headers", None) or {})
            headers["Range"] = f"bytes={start}-{end - 1}"
            headers["Accept-Encoding"] = "identity"
            options.update(_request_timeout(self.timeout))
            options["allow_redirects"] = False
            async with session.get(fs.encode_url(self._read_url), headers=headers,
                                   **options) as response:  # fmt: skip
                whole = response.status == 200 and covers_all
                if response.status != 206 and not whole:
                    if response.status == 200:
                        raise ExternalDataError(
                            f"asked for {want} bytes at offset {start}, the server sent the "
                            "whole object (HTTP 200: it ignored the range); refused unread"
                        )
                    fs._raise_not_found_for_status(response, self._read_url)
                    raise ExternalDataError(
                        f"asked for a range, the server answered HTTP {response.status}"
                    )
                declared = response.content_length
                if declared is not None and declared != want:
                    raise ExternalDataError(
                        f"asked for {want} bytes at offset {start}, the server announces "
                        f"{declared} (the server ignored the range, or the object changed)"
                    )
                out = bytearray()
                while len(out) <= want:  # one byte more than asked tells a long answer
                    piece = await response.content.read(min(_PIECE, want + 1 - len(out)))
                    if not piece:
                        break
                    out += piece
                return bytes(out)

        data: bytes = sync(fs.loop, fetch, timeout=limit)
        return data

    def _read_direct(self, offset: int, target: memoryview) -> None:
        with self._bar(len(target)) as bar:
            for start in range(0, len(target), MAX_REQUEST):
                stop = min(len(target), start + MAX_REQUEST)
                target[start:stop] = self._get(offset + start, offset + stop)
                bar.update(stop - start)

    def _read_blocks(self, offset: int, target: memoryview) -> None:
        size = self.size
        end = offset + len(target)
        index = offset // self.block_size
        last = (end - 1) // self.block_size
        with self._bar(len(target)) as bar:
            while index <= last:
                base = index * self.block_size
                data = self._block(index)
                if data is None:  # fetch the run of missing blocks in one request
                    run_end = index + 1
                    while (
                        run_end <= last
                        and (run_end - index) * self.block_size < MAX_REQUEST
                        and self._block(run_end) is None
                    ):
                        run_end += 1
                    data = self._get(base, min(size, run_end * self.block_size))
                    for k in range(index, run_end):
                        at = (k - index) * self.block_size
                        self._keep(k, data[at : at + self.block_size])
                    bar.update(len(data))
                    index = run_end
                else:
                    index += 1
                lo = max(offset, base)
                hi = min(end, base + len(data))
                target[lo - offset : hi - offset] = data[lo - base : hi - base]

    def _block(self, index: int) -> bytes | None:
        with self._lock:
            block = self._blocks.get(index)
            if block is not None:
                self._blocks.move_to_end(index)
                return block
        if self._cache_path is None:
            return None
        expected = min(self.block_size, self.size - index * self.block_size)
        try:
            data = (self._cache_path / f"{index}").read_bytes()
        except OSError:
            return None
        if len(data) != expected:  # a torn write: fetch again
            return None
        self._remember(index, data)
        return data

    def _keep(self, index: int, data: bytes) -> None:
        self._remember(index, data)
        if self._cache_path is not None:
            path = self._cache_path / f"{index}"
            temporary = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.part")
            try:
                temporary.write_bytes(data)
                os.replace(temporary, path)  # atomic: a reader never sees half a block
            except OSError:
                pass  # a cache that cannot be written only costs a later fetch

    def _remember(self, index: int, data: bytes) -> None:
        with self._lock:
            self._blocks[index] = data
            self._blocks.move_to_end(index)
            while len(self._blocks) > MEMORY_BLOCKS:
                self._blocks.popitem(last=False)

    def _bar(self, total: int) -> Any:
        from tqdm.auto import tqdm

        name = self.display.rsplit("/", 1)[-1]
        enabled = self._progress and total >= PROGRESS_FROM
        return tqdm(
            total=total, unit="B", unit_scale=True, desc=name, leave=False, disable=not enabled
        )

    def sha1(self) -> str:
        if self._sha1 is None:
            digest = hashlib.sha1()
            size = self.size
            with self._bar(size) as bar:
                for start in range(0, size, MAX_REQUEST):
                    stop = min(size, start + MAX_REQUEST)
                    chunk = self._get(start, stop)
                    digest.update(chunk)
                    bar.update(len(chunk))
            self._sha1 = digest.hexdigest()
        return self._sha1

    def close(self) -> None:
        with self._lock:
            self._blocks.clear()
            self._head = b""


class RemoteDir:
    """The URL "directory" of a remote model: external data is looked up under it.

    ``url`` is a file's URL (its folder is meant) or a folder's URL ending in ``/``.
    """

    def __init__(self, fs: Any, url: str, **options: Any) -> None:
        self._fs = fs
        self.url = parent_url(url)
        self.display = redact_url(self.url)
        self._options = options
        self._http = scheme_of(self.url) in _HTTP
        self._timeout = _seconds(options.get("timeout", DEFAULT_TIMEOUT))

    @property
    def name(self) -> str:
        """The folder's last path segment (``repo``, ``repo@main``), or its host."""
        return self.display.rstrip("/").rsplit("/", 1)[-1]

    def resolve(self, location: str, tensor: str) -> str:
        return join_location(self.url, location, tensor)

    def open(self, url: str) -> RemoteFile:
        return RemoteFile(self._fs, url, **self._options)

    def exists(self, name: str) -> bool:
        """Whether the file ``name`` (checked like a location) is in the folder: one
        metadata request. A missing file is False; any other failure is an error."""
        url = self.resolve(name, name)
        try:
            info: dict[str, Any]
            if self._http:
                info = _http_info(self._fs, url, self._timeout)
            else:
                info = self._fs.info(url)
        except FileNotFoundError as exc:
            if _timed_out(exc):
                raise _failure(redact_url(url), exc, "cannot be asked for") from None
            return False
        except Exception as exc:
            raise _failure(redact_url(url), exc, "cannot be asked for") from None
        return info.get("type") != "directory"

    def names(self) -> list[str] | None:
        """The names of the files directly in the folder, or None where the store cannot
        list (HTTP has no listing: an index page is not one) or the listing fails."""
        if scheme_of(self.url) in _HTTP:
            return None
        try:
            entries = self._fs.ls(self.url, detail=True)
        except Exception:
            return None
        names: list[str] = []
        for entry in entries[:MAX_LISTING]:
            if isinstance(entry, dict) and entry.get("type") == "file":
                name = str(entry.get("name", "")).rstrip("/").rsplit("/", 1)[-1]
                if name:
                    names.append(name)
        return sorted(names)


def open_url(
    url: str,
    storage_options: dict[str, Any] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: bool = True,
) -> tuple[RemoteFile, RemoteDir]:
    """The model object at ``url`` and the directory its external data lives in."""
    fs, url, timeout = _filesystem(url, storage_options)
    options: dict[str, Any] = {
        "block_size": block_size,
        "cache_dir": cache_dir,
        "progress": progress,
        "timeout": timeout,
    }
    return RemoteFile(fs, url, **options), RemoteDir(fs, url, **options)


def open_folder(
    url: str,
    storage_options: dict[str, Any] | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
    progress: bool = True,
) -> RemoteDir:
    """The folder at ``url`` (a directory, a Hub repository or a folder in it)."""
    fs, url, timeout = _filesystem(url, storage_options)
    parts = urlsplit(url)
    folder = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/", "", ""))
    return RemoteDir(
        fs, folder, block_size=block_size, cache_dir=cache_dir, progress=progress,
        timeout=timeout,
    )  # fmt: skip


def _seconds(value: Any) -> float:
    """A timeout in seconds: a positive finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"timeout must be a number of seconds, not {type(value).__name__}")
    seconds = float(value)
    if not 0 < seconds < 1e6:
        raise ValueError(f"timeout must be a positive number of seconds, not {value!r}")
    return seconds


def _request_timeout(seconds: float) -> dict[str, Any]:
    """aiohttp's per-request bounds: connect, first answer and each later read."""
    import aiohttp

    return {
        "timeout": aiohttp.ClientTimeout(
            total=None, connect=seconds, sock_connect=seconds, sock_read=seconds
        )
    }


def _http_info(fs: Any, url: str, seconds: float) -> dict[str, Any]:
    """fsspec's HTTP metadata (HEAD, then GET) with every request and the whole bounded."""
    from fsspec.asyn import sync

    async def info() -> dict[str, Any]:
        found: dict[str, Any] = await fs._info(url, **_request_timeout(seconds))
        return found

    result: dict[str, Any] = sync(fs.loop, info, timeout=seconds + 1)
    return result


def _filesystem(url: str, storage_options: dict[str, Any] | None) -> tuple[Any, str, float]:
    """The fsspec file system for ``url``, the URL it reads (Hub web URLs as hf://) and
    the HTTP timeout (``storage_options["timeout"]``, ours: not passed to fsspec)."""
    fsspec = require_fsspec()
    url = hub_url(url)
    display = redact_url(url)
    options = dict(storage_options or {})
    timeout = DEFAULT_TIMEOUT
    if scheme_of(url) in _HTTP and "timeout" in options:
        try:
            timeout = _seconds(options.pop("timeout"))
        except (TypeError, ValueError) as exc:
            raise ModelFormatError(f"{display!r} cannot be opened: {exc}") from None
    try:
        fs, _ = fsspec.core.url_to_fs(url, **options)
    except ImportError as exc:
        raise ImportError(
            f"opening {scheme_of(url)}:// URLs needs an fsspec implementation ({exc}); "
            "pip install 'onnx_explorer[remote]'"
        ) from None
    except (ValueError, TypeError) as exc:
        raise ModelFormatError(f"{display!r} cannot be opened: {scrub(str(exc))[:300]}") from None
    return fs, url, timeout


__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_TIMEOUT",
    "RemoteDir",
    "RemoteFile",
    "RemoteFolderError",
    "RemoteTimeoutError",
    "open_folder",
    "open_url",
    "require_fsspec",
]
