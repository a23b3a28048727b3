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
    "sphinx.ext.intersphinx",
    "myst_parser",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# MyST: heading anchors for in-page links, ``$...$`` math
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# autodoc / napoleon (numpy-style docstrings)
autodoc_mock_imports = ["pinocchio", "matplotlib"]
autodoc_member_order = "bysource"
autodoc_typehints = "none"
# every public member with a docstring or a ``#:`` comment, so that constants and helpers
# named in the docs resolve (``__all__`` lists what ``import`` re-exports, not what is documented)
autodoc_default_options = {"members": True, "ignore-module-all": True}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_param = False  # types as plain text, not cross-references
napoleon_use_rtype = False
napoleon_use_ivar = True

# Every cross-reference must resolve (``-n``): references to numpy, scipy and the standard
# library resolve through the small inventories written below (the build has no network).
nitpicky = True
# Types in numpy-style fields are shapes and prose ("(n, 6)", "n_m", "array"): napoleon
# turns each word into a class reference; only dotted names are real targets.
nitpick_ignore_regex = [("py:class", r"[^.]*"), ("py:class", r".*[ ()+,].*")]

#: ``{project: (base URL, {object: (role, page#anchor)})}`` of the outside objects the
#: docstrings name; written as Sphinx inventories into ``_build/inventories`` at startup
_OUTSIDE = {
    "python": ("https://docs.python.org/3/", {
        "collections.abc.Mapping": ("py:class", "library/collections.abc.html"),
        "collections.abc.Sequence": ("py:class", "library/collections.abc.html"),
        "collections.abc.Callable": ("py:class", "library/collections.abc.html"),
        "collections.abc.Iterable": ("py:class", "library/collections.abc.html"),
        "typing.Any": ("py:data", "library/typing.html"),
        "pathlib.Path": ("py:class", "library/pathlib.html"),
        "concurrent.futures.ProcessPoolExecutor": ("py:class",
                                                   "library/concurrent.futures.html"),
    }),
    "numpy": ("https://numpy.org/doc/stable/", {
        "numpy.ndarray": ("py:class", "reference/generated/numpy.ndarray.html"),
        "numpy.random.Generator": ("py:class",
                                   "reference/random/generator.html"),
        "numpy.dtype": ("py:class", "reference/generated/numpy.dtype.html"),
    }),
    "scipy": ("https://docs.scipy.org/doc/scipy/", {
        "scipy.integrate.solve_ivp": ("py:function",
                                      "reference/generated/scipy.integrate.solve_ivp.html"),
        "scipy.integrate.OdeSolver": ("py:class",
                                      "reference/generated/scipy.integrate.OdeSolver.html"),
        "scipy.integrate.OdeSolution": (
            "py:class", "reference/generated/scipy.integrate.OdeSolution.html"),
        "scipy.optimize.root": ("py:function",
                                "reference/generated/scipy.optimize.root.html"),
    }),
    "dask": ("https://distributed.dask.org/en/stable/", {
        "dask.distributed.Client": ("py:class", "api.html"),
    }),
}


def _write_inventories() -> dict[str, tuple[str, str]]:
    """Write :data:`_OUTSIDE` as Sphinx (version 2) inventories; the intersphinx mapping."""
    import zlib

    folder = Path(__file__).resolve().parent / "_build" / "inventories"
    folder.mkdir(parents=True, exist_ok=True)
    mapping = {}
    for name, (url, objects) in _OUTSIDE.items():
        lines = "".join(f"{obj} {role} 1 {page}#{obj} -\n"
                        for obj, (role, page) in objects.items())
        path = folder / f"{name}.inv"
        path.write_bytes(f"# Sphinx inventory version 2\n# Project: {name}\n# Version: \n"
                         "# The remainder of this file is compressed using zlib.\n".encode()
                         + zlib.compress(lines.encode()))
        mapping[name] = (url, str(path))
    return mapping


intersphinx_mapping = _write_inventories()
# A type word of a numpy-style field ("f", "k") may match attributes of several classes;
# Sphinx then links the first, which is harmless in a type, so that warning is off.
suppress_warnings = ["ref.python"]

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


def _resolve(app, env, node, contnode):
    """Resolve what the Python domain does not:

    * ``flexdyn.name[.member]``, a top-level name of ``import flexdyn``, to the module that
      defines and documents it;
    * an attribute listed in its class's ``Attributes`` section (rendered as a field, not as
      an object of its own) to that class.
    """
    if node.get("refdomain") != "py":
        return None
    import flexdyn

    domain = env.get_domain("py")
    target = node.get("reftarget", "")
    if target.startswith("flexdyn."):
        head, _, rest = target[len("flexdyn."):].partition(".")
        module = getattr(getattr(flexdyn, head, None), "__module__", None)
        if module is not None and module != "flexdyn":
            target = f"{module}.{head}" + (f".{rest}" if rest else "")
    module, cls = node.get("py:module"), node.get("py:class")
    names = [target] + [f"{p}.{target}" for p in (module, cls and f"{module}.{cls}") if p]
    for name in names:
        if name in domain.objects:
            return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                                       name, node, contnode)
    # a name re-exported by a package (``flexdyn.simulation.simulate``) or a short name in
    # a module of one (``simulate`` in ``flexdyn.simulation.problem``): the one object of
    # that name defined in the package, else in flexdyn
    if target.startswith("flexdyn."):
        package, _, last = target.rpartition(".")
        suffix = "." + last
    else:
        package, suffix = (module or "").rpartition(".")[0], "." + target
    for prefix in dict.fromkeys(f"{p}." for p in (package, "flexdyn") if p):
        found = [name for name in domain.objects
                 if name.startswith(prefix) and name.endswith(suffix)]
        if len(found) == 1:
            return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                                       found[0], node, contnode)
    if node["reftype"] == "attr":
        for name in names:
            owner, _, attr = name.rpartition(".")
            kind = domain.objects.get(owner, (None, None, None))[2]
            if kind in ("class", "exception") and attr:
                return domain.resolve_xref(env, node["refdoc"], app.builder, kind[:3]
                                           if kind == "exception" else kind, owner, node,
                                           contnode)
    return None


def setup(app) -> None:
    # before napoleon (priority 500) turns the numpy sections into field lists
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)
    app.connect("missing-reference", _resolve)
