"""Display text has one home: ``onnx_explorer/views/_text.py``.

Shape text, dims, counts, bytes, numbers, ``shorten`` and the missing mark are written
there and nowhere else (Polygraphy's ``model/text.py`` is the model: the only function
that turns graph data into a human-readable string). These tests read the package's
source: a formatter defined in another module, or a missing mark written as a literal
outside ``_text.py``, fails them, naming the file and line.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import onnx_explorer
from onnx_explorer.views import _text

PACKAGE = Path(onnx_explorer.__file__).parent
HOME = PACKAGE / "views" / "_text.py"

#: Names a display formatter goes by: ``human_bytes``, ``shape_text``, ``format_shape``,
#: ``dims_text``, ``count_text``, ``shorten``, ``middle_cut``, ``terminal_safe``...
FORMATTER = re.compile(
    r"^_*(?:"
    r"human_\w+|short(?:en)?\w*|middle_cut|terminal_safe|as_text|plain_text|plural"
    r"|\w*shape\w*_(?:text|str|string)|\w*dims?_(?:text|str|string)"
    r"|format_(?:shape|dims?|bytes|size|count|number|value)\w*"
    r"|\w*(?:bytes|size|count|number|share|value)_(?:text|str|string)"
    r")$"
)

#: Formatter-like names defined outside views/_text.py on purpose, with the reason.
ALLOWED: dict[tuple[str, str], str] = {
    # GraphDef function references print themselves (str(FunctionRef)); readers cannot
    # import views (import contract), and the text is the reader's own attribute value.
    ("readers/tensorflow/graphdef/_attrs.py", "_short"): "a FunctionRef's __str__",
}

#: The missing mark, and the en dash that once stood for it.
MISSING_MARKS = {"—", "–"}


def _sources() -> list[tuple[str, ast.AST]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == HOME:
            continue
        found.append((path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text())))
    return found


def formatter_definitions(tree: ast.AST) -> list[tuple[str, int]]:
    """(name, line) of every function or method named like a display formatter."""
    return [
        (node.name, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and FORMATTER.match(node.name)
    ]


def missing_marks(tree: ast.AST) -> list[int]:
    """Lines of string literals that are a missing mark on their own (``"—"``); the pieces
    of an f-string (``f"{a}–{b}"``, a range) are not marks."""
    in_fstrings = {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.strip() in MISSING_MARKS
        and id(node) not in in_fstrings
    )


def test_no_formatter_is_defined_outside_views_text():
    stray = [
        f"{path}:{line} def {name}"
        for path, tree in _sources()
        for name, line in formatter_definitions(tree)
        if (path, name) not in ALLOWED
    ]
    assert not stray, "display text belongs in onnx_explorer/views/_text.py:\n" + "\n".join(stray)


def test_the_allow_list_is_not_stale():
    defined = {(path, name) for path, tree in _sources() for name, _ in formatter_definitions(tree)}
    assert set(ALLOWED) <= defined, f"no longer defined: {set(ALLOWED) - defined}"


def test_the_missing_mark_is_written_only_in_views_text():
    stray = [f"{path}:{line}" for path, tree in _sources() for line in missing_marks(tree)]
    assert not stray, "use views._text.MISSING:\n" + "\n".join(stray)
    assert _text.MISSING == "—"


def test_views_text_defines_the_formatters_it_is_the_home_of():
    names = {name for name, _ in formatter_definitions(ast.parse(HOME.read_text()))}
    expected = {"human_bytes", "human_count", "shape_text", "shape_list_text", "dims_text",
                "shorten", "terminal_safe", "as_text", "share_text", "number_text"}  # fmt: skip
    assert expected <= names


@pytest.mark.parametrize(
    "source",
    [
        "def human_bytes(n):\n    return f'{n} bytes'\n",
        "def _shape_text(shape):\n    return str(shape)\n",
        "class Row:\n    @property\n    def shape_text(self):\n        return ''\n",
        "def shorten(text, limit):\n    return text[:limit]\n",
        "def format_shape(dims):\n    return 'x'.join(map(str, dims))\n",
    ],
)
def test_the_scan_catches_a_formatter_written_elsewhere(source):
    assert formatter_definitions(ast.parse(source))


def test_the_scan_catches_a_missing_mark_but_not_a_range():
    assert missing_marks(ast.parse('x = None or "—"\ny = "–"\n')) == [1, 2]
    assert missing_marks(ast.parse('z = f"{a}–{b}"\nw = "a – b"\n')) == []


# -- the one style ------------------------------------------------------------------------
def test_shape_text_one_style_and_its_list_variant():
    assert _text.shape_text((1, None, "batch", 768)) == "1×?×batch×768"
    assert _text.shape_text(()) == "scalar"
    assert _text.shape_text(None) == "?"
    assert _text.shape_text(("a_very_long_symbolic_name",), dim_chars=8) == "a_very_…"
    assert _text.shape_list_text((1, None, 768)) == "[1, ?, 768]"
    assert _text.shape_list_text(()) == "[]"
    assert _text.shape_list_text(None) == "?"
    assert _text.typed_shape_text("float32", (768, 3072)) == "float32 ⟨768×3072⟩"


def test_shorten_never_exceeds_its_limit_from_one_up():
    assert _text.shorten("abcdef", 4) == "abc…"
    assert _text.shorten("abcdef", 2) == "a…"
    assert _text.shorten("abcdef", 1) == "…"
    assert _text.shorten("abcdef", 0) == "…"
    assert _text.shorten("abc", 3) == "abc"


def test_counts_bytes_and_numbers():
    assert _text.human_bytes(1536) == "1.5 KB" and _text.human_bytes(3) == "3 B"
    assert _text.human_count(12_300_000) == "12.3M" and _text.human_count(950) == "950"
    assert _text.number_text(None) == _text.MISSING
    assert _text.number_text(1234) == "1,234"
    assert _text.number_text(0.123456789) == "0.123457"
    assert _text.number_text(0.123456789, 4) == "0.1235"
    assert (
        _text.plural(1, "change") == "1 change" and _text.plural(1200, "change") == "1,200 changes"
    )
