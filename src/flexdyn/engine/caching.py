"""The on-disk cache of the compiled engine, keyed by the sources each entry compiles from.

numba keys a cached function by the content of the file that defines it.  The engine's
entries, though, inline functions and constants of other files (the stages of
:mod:`flexdyn.engine.terms` inside the entries of :mod:`~flexdyn.engine.kernels`, the
tolerances of :mod:`flexdyn.linalg`, …), so a change of one file would leave the others'
cached machine code stale: after an edit, or an upgrade installed over an old cache, an
entry could run yesterday's kernels on today's packed model.  :func:`install` gives numba
locators for the engine's files whose source stamp is a fingerprint of the module's own
source, of every engine module it imports (directly or through others, :func:`dependencies`),
of the package's modules whose functions or constants the kernels use (:data:`SHARED`) and
of numba's version, which also names their cache files: an edit invalidates the cached
entries of the modules that depend on the edited file, and no others (an edit of the
compiled integrators, :mod:`~flexdyn.engine.galpha`, leaves the entries of
:mod:`~flexdyn.engine.kernels` cached).  The cache stays where numba would put it
(``NUMBA_CACHE_DIR``, else the package's ``__pycache__``, else the user-wide cache), in a
folder ``flexdyn-engine`` of ``NUMBA_CACHE_DIR`` or of the user-wide cache whatever the
path of the sources, so that checkouts with the same sources share it.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import numba
from numba.core import caching

__all__ = ["SHARED", "SOURCES", "compiled", "dependencies", "fingerprint", "install", "stamp"]


_ENGINE = Path(__file__).resolve().parent
_PACKAGE = _ENGINE.parent
#: the engine's modules that compile nothing: the compile notice, these locators and the
#: package's ``__init__`` (the Python side of the engine)
_PYTHON_ONLY = ("notice.py", "caching.py", "__init__.py")
#: the package's modules whose functions or constants the kernels use
SHARED: tuple[Path, ...] = tuple(_PACKAGE / name for name in (
    "scalar_kernels.py", "linalg.py", "joints.py", "joint_forces.py"))
#: every source the engine's compiled code depends on
SOURCES: tuple[Path, ...] = (*sorted(p for p in _ENGINE.glob("*.py")
                                     if p.name not in _PYTHON_ONLY), *SHARED)


def fingerprint(sources: tuple[Path, ...] = SOURCES) -> bytes:
    """SHA-256 of numba's version and the contents of ``sources``."""
    digest = hashlib.sha256(numba.__version__.encode())
    for path in sources:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.digest()


def dependencies(module: Path) -> tuple[Path, ...]:
    """The engine's module ``module`` and the engine modules it imports, directly or through
    others (``from .x import …``, ``from . import x``), sorted; the modules of
    ``_PYTHON_ONLY`` left out."""
    found: set[Path] = set()
    todo = [module.resolve()]
    while todo:
        path = todo.pop()
        if path in found or path.name in _PYTHON_ONLY or not path.exists():
            continue
        found.add(path)
        todo += _imports(path)
    return tuple(sorted(found))


@functools.cache
def _imports(path: Path) -> list[Path]:
    """The engine modules that the source ``path`` imports by relative imports of one level,
    read from its text (numba asks for the stamps as it creates each cached function, at
    import, where parsing every module would take a second)."""
    text = path.read_text(encoding="utf-8")
    names = re.findall(r"^from \.(\w+)", text, re.MULTILINE)
    for group in re.findall(r"^from \. import \(?([\w, \n]+)\)?", text, re.MULTILINE):
        names += [name.strip() for name in group.replace("\n", ",").split(",") if name.strip()]
    return [_ENGINE / f"{name}.py" for name in names]


@functools.cache
def stamp(module: Path) -> bytes:
    """The source stamp of the entries of ``module``: :func:`fingerprint` of its
    :func:`dependencies` and :data:`SHARED`."""
    return fingerprint((*dependencies(module), *SHARED))


@functools.cache
def _engine_module(py_file: str) -> Path | None:
    """The engine's module ``py_file``, resolved, or None for a file outside the engine
    (numba asks for each function as it creates it; resolving a path takes a tenth of a
    millisecond, two hundred times at import)."""
    path = Path(py_file).resolve()
    return path if path.parent == _ENGINE else None


class _EngineSources:
    """Mixin of a numba cache locator: only for functions defined in the engine's modules,
    stamped with the :func:`stamp` of their module."""

    @classmethod
    def from_function(cls, py_func, py_file):
        if _engine_module(py_file) is None:
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self) -> bytes:
        return stamp(_engine_module(self._py_file))

    def get_disambiguator(self) -> str:
        """The function's line and the start of its stamp, in the names of its cache files:
        an index written from other sources is never read (numba unpickles an index before
        it compares the stamp, and one written by other sources may name types that they
        defined and these do not)."""
        return f"{super().get_disambiguator()}-{self.get_source_stamp()[:6].hex()}"

    @classmethod
    def get_suitable_cache_subpath(cls, py_file) -> str:
        """One folder for the engine whatever the checkout's path (numba's own names it by a
        hash of the path): the stamp keys the entries, so clones and installations at other
        paths share ``NUMBA_CACHE_DIR`` (a CI's clean clone, a second virtual environment)."""
        return "flexdyn-engine"


class EngineUserProvidedLocator(_EngineSources, caching.UserProvidedCacheLocator):
    """``NUMBA_CACHE_DIR``, engine stamp."""


class EngineInTreeLocator(_EngineSources, caching.InTreeCacheLocator):
    """The package's ``__pycache__``, engine stamp."""


class EngineUserWideLocator(_EngineSources, caching.UserWideCacheLocator):
    """The user-wide cache directory, engine stamp."""


def compiled(dispatcher: numba.core.dispatcher.Dispatcher, signature: tuple) -> bool:
    """Whether ``dispatcher`` has machine code for the argument types ``signature``: compiled
    in this process, or listed in the index of its cache on disk, which its first call then
    loads instead of compiling.  Loads and compiles nothing (the index only is read).  False
    where the function is not cached or numba keeps its cache otherwise than this module
    knows (numba's private ``_cache``): the caller then takes that the code would compile."""
    if signature in dispatcher.overloads:
        return True
    cache = dispatcher._cache
    if not isinstance(cache, caching.FunctionCache):
        return False
    try:
        key = cache._index_key(signature, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except (AttributeError, OSError):
        return False


def install() -> None:
    """Put the engine's locators first among numba's (idempotent); called by
    :mod:`flexdyn.engine.jit` before anything compiles."""
    locators = caching.CacheImpl._locator_classes
    for cls in (EngineUserWideLocator, EngineInTreeLocator, EngineUserProvidedLocator):
        if cls not in locators:
            locators.insert(0, cls)
