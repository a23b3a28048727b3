"""Sphinx configuration for the flexdyn documentation (MyST markdown pages).

Build from the repository root with::

    sphinx-build -W -b html docs docs/_build/html
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from flexdyn import __version__  # noqa: E402

project = "flexdyn"
author = "flexdyn contributors"
copyright = "flexdyn contributors, MIT license"
release = __version__
version = ".".join(__version__.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "myst_parser",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: heading anchors for in-page links, ``$...$`` math
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# autodoc / napoleon (numpy-style docstrings)
autodoc_mock_imports = ["numba", "pinocchio", "matplotlib"]
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_param = False  # types as plain text, not cross-references
napoleon_use_rtype = False
napoleon_use_ivar = True

html_theme = "alabaster"
html_title = f"flexdyn {release}"
html_theme_options = {"page_width": "1240px", "sidebar_width": "230px"}


# ----------------------------------------------------------------------------------------------
# Compact field entries.  Many docstrings write a parameter or attribute on one line as
# ``name : shape or type — description`` or ``name : description``, and some Returns
# sections are a sentence.  Numpydoc (and napoleon) read everything after the colon as the
# *type*, and every unindented line of a Returns section as a new value, so before napoleon
# runs the entries are rewritten to the long form (``name : type`` and the description on an
# indented line), and a Returns section written as prose becomes a rubric and a paragraph.
# ----------------------------------------------------------------------------------------------
_FIELD_SECTIONS = {"parameters", "other parameters", "attributes", "raises", "returns",
                   "yields"}
_NAMED_SECTIONS = {"parameters", "other parameters", "attributes"}
_DASH = " — "
_TYPE_WORDS = re.compile(r"^[\w.\[\]{}(),\"'|*+×≥ -]+$")


def _looks_like_type(text: str) -> bool:
    """Whether ``text`` (after ``name :``) is a type/shape rather than a sentence."""
    t = text.strip()
    return bool(t) and "``" not in t and ";" not in t and not t.endswith((".", ":")) \
        and len(t.split()) <= 8 and bool(_TYPE_WORDS.match(t))


def _split_names(head: str) -> list[tuple[str, str]]:
    """``"q : (nq,), u : (nu,)"`` -> ``[("q", "(nq,)"), ("u", "(nu,)")]``;
    ``"nq, nu : int"`` -> ``[("nq, nu", "int")]``."""
    pieces, depth, start = [], 0, 0
    for k, ch in enumerate(head):  # split at the commas outside brackets
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            pieces.append(head[start:k].strip())
            start = k + 1
    pieces.append(head[start:].strip())
    parts: list[str] = []
    names: list[str] = []
    for piece in pieces:
        if " : " in piece:
            parts.append(", ".join([*names, piece]))
            names = []
        elif parts and not names:
            parts[-1] += ", " + piece  # the type goes on
        else:
            names.append(piece)
    if names:
        parts.append(", ".join(names))
    out = []
    for part in parts:
        name, _, typ = part.partition(" : ")
        out.append((name.strip(), typ.strip()))
    return out


def _entry(line: str, kind: str) -> list[str] | None:
    """The long form of one unindented entry line; None if it is a sentence."""
    if _DASH in line:
        head, desc = line.split(_DASH, 1)
    elif " : " in line:
        name, _, rest = line.partition(" : ")
        head, desc = (line, "") if _looks_like_type(rest) else (name, rest)
    elif kind in ("raises",) or _looks_like_type(line):
        head, desc = line, ""
    else:
        return None
    if kind in _NAMED_SECTIONS and (head.count(" : ") > 1 or (
            kind == "attributes" and "," in head.partition(" : ")[0])):
        # several entries on one line; attributes (``:ivar:``) take one name each
        out = []
        for names, typ in _split_names(head):
            for name in names.split(",") if kind == "attributes" else [names]:
                out.append(f"{name.strip()} : {typ}" if typ else name.strip())
                if desc:
                    out.append("    " + desc.strip())
        return out
    return [head.rstrip()] + (["    " + desc.strip()] if desc else [])


def _rewrite_section(kind: str, body: list[str]) -> list[str]:
    out: list[str] = []
    for line in body:
        if line.strip() and not line.startswith(" "):
            entry = _entry(line, kind)
            if entry is None:  # a sentence: render the section as a rubric and a paragraph
                text = [ln.strip() for ln in body if ln.strip()]
                return [f".. rubric:: {kind.title()}", "", *text, ""]
            out += entry
        else:
            out.append(line)
    return out


def _expand_fields(lines: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        is_header = (line.strip() and not line.startswith(" ")
                     and re.fullmatch(r"-{3,}\s*", nxt) is not None)
        kind = line.strip().lower()
        if not (is_header and kind in _FIELD_SECTIONS):
            out.append(line)
            i += 1
            continue
        j = i + 2
        while j < len(lines) and not (
                lines[j].strip() and not lines[j].startswith(" ") and j + 1 < len(lines)
                and re.fullmatch(r"-{3,}\s*", lines[j + 1])):
            j += 1
        body = _rewrite_section(kind, lines[i + 2:j])
        out += body if body[:1] and body[0].startswith(".. rubric::") else [line, nxt, *body]
        i = j
    return out


def _process_docstring(app, what, name, obj, options, lines) -> None:
    lines[:] = _expand_fields(lines)


def setup(app) -> None:
    # before napoleon (priority 500) turns the numpy sections into field lists
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)
