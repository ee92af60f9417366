"""Hugging Face Hub web URLs as the ``hf://`` URLs fsspec reads (pure string work).

A link copied from the Hub's website names a repository page, a folder or a file:

- ``https://huggingface.co/org/repo`` → ``hf://org/repo`` (the repository's files)
- ``https://huggingface.co/org/repo/tree/<rev>/sub`` → ``hf://org/repo@<rev>/sub``
- ``https://huggingface.co/org/repo/resolve/<rev>/file`` (and ``/blob/``, ``/raw/``)
  → ``hf://org/repo@<rev>/file``
- ``https://huggingface.co/datasets/org/name/...`` → ``hf://datasets/org/name...``
  (``spaces/`` alike)

The ``hf://`` form is read by ``huggingface_hub``'s fsspec file system (the
``[remote]`` extra), which asks the Hub for each range itself. A ``resolve`` URL read as
plain HTTPS would not do: the Hub answers with a redirect to its content host, which the
byte source refuses (data must come from where the model is). Query strings
(``?download=true``) and fragments are dropped; a revision with a ``/`` stays as the
link writes it (``refs%2Fpr%2F1``, or ``refs/pr/1``, which ``huggingface_hub`` knows);
a file's name is percent-decoded.
A Hub page that names no repository (``https://huggingface.co/org``, ``.../discussions``)
is a :class:`~onnx_explorer.errors.ModelFormatError`, not a request.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from ..errors import ModelFormatError
from .urls import redact_url, scheme_of

__all__ = ["HUB_HOSTS", "hub_url", "is_hub_web_url"]

#: Hosts whose web URLs are mapped to ``hf://``.
HUB_HOSTS = frozenset({"huggingface.co", "www.huggingface.co", "hf.co"})
#: First path segments naming a kind of repository (models have none).
_REPO_KINDS = frozenset({"datasets", "spaces"})
#: Routes under a repository that name a revision and then a folder or a file.
_FILE_ROUTES = frozenset({"tree", "blob", "resolve", "raw"})


def is_hub_web_url(url: str) -> bool:
    """True for ``http(s)://`` URLs on the Hub's website."""
    if scheme_of(url) not in ("http", "https"):
        return False
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    return host in HUB_HOSTS


def hub_url(url: str) -> str:
    """``url`` as fsspec should read it: a Hub web URL as ``hf://``, any other unchanged.

    Raises :class:`ModelFormatError` for a Hub page that names no repository, folder or
    file (the message shows the URL without credentials or query string).
    """
    if not is_hub_web_url(url):
        return url
    segments = [s for s in urlsplit(url).path.split("/") if s]
    kind = ""
    if segments and segments[0] in _REPO_KINDS:
        kind = segments.pop(0) + "/"
    if segments and segments[0] == "models":  # /models/org/repo is the model's page too
        segments.pop(0)
    if len(segments) < 2:
        raise ModelFormatError(
            f"{redact_url(url)!r} names no repository: a Hub URL is "
            "https://huggingface.co/<org>/<name>[/resolve/<revision>/<file>]"
        )
    repo = f"{kind}{segments[0]}/{segments[1]}"
    rest = segments[2:]
    if not rest:
        return f"hf://{repo}"
    route, *tail = rest
    if route not in _FILE_ROUTES:
        raise ModelFormatError(
            f"{redact_url(url)!r} is a Hub page ({route!r}), not a file or folder: use the "
            "repository's URL, or a file's .../resolve/<revision>/<file> URL"
        )
    if not tail:  # ".../tree" alone: the repository's default revision
        return f"hf://{repo}"
    revision, *path = tail
    where = "/".join(unquote(part) for part in path)  # "my%20model.gguf" is "my model.gguf"
    return f"hf://{repo}@{revision}" + (f"/{where}" if where else "")
