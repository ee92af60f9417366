"""URLs as the explorer shows and joins them: no credentials shown, no escape by location.

A URL is recognised by its ``scheme://`` prefix (a scheme of two or more letters,
so a Windows drive ``C:`` never counts). Anything shown to a user goes through
:func:`redact_url`: user info (``user:password@``), the query string (signed-URL
tokens) and the fragment are dropped.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

from ..errors import UnsafePathError

__all__ = [
    "check_location",
    "host_of",
    "is_url",
    "join_location",
    "parent_url",
    "redact_url",
    "scheme_of",
    "scrub",
]

_DRIVE = re.compile(r"^[A-Za-z]:")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")
_ANY_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://[^\s'\"<>]+")


def is_url(text: object) -> bool:
    """True for ``scheme://...`` strings (``https://``, ``s3://``, ``hf://``, ...)."""
    return isinstance(text, str) and _URL.match(text) is not None


def scheme_of(url: str) -> str:
    match = _URL.match(url)
    return match.group(1).lower() if match else ""


def host_of(url: str) -> str:
    """The host (bucket, repository owner...) without user info or port differences."""
    return (urlsplit(url).hostname or "").lower()


def redact_url(url: str) -> str:
    """``url`` safe to show: no user info, no query string, no fragment."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return scheme_of(url) + "://…"
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def scrub(text: str) -> str:
    """Every URL inside ``text`` redacted (for messages of libraries we pass on)."""
    return _ANY_URL.sub(lambda m: redact_url(m.group(0)), text)


def check_location(location: str, tensor: str) -> str:
    """Lexical checks on a location; return it with '\\' read as a separator."""
    if not location:
        raise UnsafePathError(f"tensor {tensor!r}: external data has no location")
    if "\x00" in location:
        raise UnsafePathError(f"tensor {tensor!r}: external data location contains a NUL byte")
    if location.startswith(("\\\\", "//")):
        raise UnsafePathError(f"tensor {tensor!r}: UNC path {location!r} is not allowed")
    if _DRIVE.match(location):
        raise UnsafePathError(f"tensor {tensor!r}: drive path {location!r} is not allowed")
    normalized = location.replace("\\", "/")
    if normalized.startswith("/"):
        raise UnsafePathError(f"tensor {tensor!r}: absolute path {location!r} is not allowed")
    if any(part == ".." for part in normalized.split("/")):
        raise UnsafePathError(f"tensor {tensor!r}: location {location!r} has a '..' component")
    return normalized


def parent_url(url: str) -> str:
    """The "directory" of ``url``, ending in ``/``, without query string or fragment."""
    parts = urlsplit(url)
    path = parts.path.rpartition("/")[0] + "/"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def join_location(base: str, location: str, tensor: str) -> str:
    """The URL of an external-data ``location`` under the directory URL ``base``.

    The rules of local paths apply (no ``..``, nothing absolute), plus: no URL of its
    own, no query or fragment, and no percent-escapes, which a server would decode
    into a ``..`` the check never saw. Scheme and host are ``base``'s by construction.
    """
    if is_url(location) or location.startswith("//"):
        raise UnsafePathError(
            f"tensor {tensor!r}: external data location {redact_url(location)!r} is an "
            "absolute URL (locations must stay under the model's URL)"
        )
    normalized = check_location(location, tensor)
    if unquote(normalized) != normalized or any(c in normalized for c in "?#"):
        raise UnsafePathError(
            f"tensor {tensor!r}: external data location {location!r} contains '%', '?' or "
            "'#' (refused: a server could read it as a path outside the model's)"
        )
    if ":" in normalized.split("/")[0]:
        raise UnsafePathError(
            f"tensor {tensor!r}: external data location {location!r} looks like a scheme"
        )
    if not base.endswith("/"):
        base += "/"
    return base + "/".join(part for part in normalized.split("/") if part not in ("", "."))
