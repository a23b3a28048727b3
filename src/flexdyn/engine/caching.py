"""The on-disk cache of the compiled engine, keyed by all of the engine's sources.

numba keys a cached function by the content of the file that defines it.  The engine's
entries, though, inline functions and constants of other files (the kernels of
:mod:`flexdyn.engine.kernels` inside the entries of :mod:`~flexdyn.engine.split`, the
tolerances of :mod:`flexdyn.linalg`, …), so a change of one file would leave the others'
cached machine code stale: after an edit, or an upgrade installed over an old cache, an
entry could run yesterday's kernels on today's packed model.  :func:`install` gives numba
locators for the engine's files whose source stamp is one fingerprint of every file the
engine compiles from (:data:`SOURCES`) and of numba's version: any change of any of them
invalidates every cached entry at once.  The cache stays where numba would put it
(``NUMBA_CACHE_DIR``, else the package's ``__pycache__``, else the user-wide cache), in a
folder ``flexdyn-engine`` of ``NUMBA_CACHE_DIR`` or of the user-wide cache whatever the path
of the sources, so that checkouts with the same sources share it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numba
from numba.core import caching

__all__ = ["SOURCES", "fingerprint", "install"]

_ENGINE = Path(__file__).resolve().parent
_PACKAGE = _ENGINE.parent
#: every source the engine's compiled code depends on: the engine's modules (but the compile
#: notice and the package's ``__init__``, the Python side of the engine, which compile
#: nothing) and the modules whose functions or constants the kernels use
SOURCES: tuple[Path, ...] = (*sorted(p for p in _ENGINE.glob("*.py")
                                     if p.name not in ("notice.py", "__init__.py")),
                             *(_PACKAGE / name for name in ("scalar_kernels.py", "linalg.py",
                                                            "chain.py", "joints.py",
                                                            "joint_forces.py")))


def fingerprint(sources: tuple[Path, ...] = SOURCES) -> bytes:
    """SHA-256 of numba's version and the contents of ``sources``."""
    digest = hashlib.sha256(numba.__version__.encode())
    for path in sources:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.digest()


class _EngineSources:
    """Mixin of a numba cache locator: only for functions defined in the engine's modules,
    stamped with :func:`fingerprint`."""

    stamp: bytes = b""

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != _ENGINE:
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self) -> bytes:
        return _EngineSources.stamp

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


def install() -> None:
    """Put the engine's locators first among numba's (idempotent); called by
    :mod:`flexdyn.engine.kernels` before it compiles anything."""
    _EngineSources.stamp = fingerprint()
    locators = caching.CacheImpl._locator_classes
    for cls in (EngineUserWideLocator, EngineInTreeLocator, EngineUserProvidedLocator):
        if cls not in locators:
            locators.insert(0, cls)
