"""The cyclic garbage collector while the package loads and while its engine compiles.

Importing flexdyn's modules, numba and scipy, and loading the engine's machine code from its
cache, create some 200 000 objects that live as long as the process.  Python's collector
scans the objects it tracks each time enough have been created, so during a start-up it
scans those objects over and over without finding anything to free, and runs two full
collections.  :func:`uncollected` pauses it while the package imports a module on first use
(``flexdyn.__getattr__``) and while the engine loads its stages and entries from the
cache; the collector then runs as usual, and meets these objects once.

A compile is different: numba makes cycles that are garbage at once, which the collector
should free as it goes, and a heap that grows to hundreds of megabytes, over which each full
collection takes a tenth to a quarter of a second.  While the engine compiles
(:func:`compile_started`, :func:`compile_ended`, called by its compile notice,
:mod:`flexdyn.engine.notice`) the collector runs as usual but its full collections at most
once per :data:`COMPILE_FULL_COLLECTION` collections of the middle generation, against
Python's ten (``benchmarks/bench_startup.py``, ``docs/performance.md``).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["COMPILE_FULL_COLLECTION", "compile_started", "compile_ended", "uncollected"]

#: while the engine compiles, the collections of the middle generation per full collection
#: (``gc.set_threshold``'s third threshold; Python's default is 10)
COMPILE_FULL_COLLECTION = 100


@contextmanager
def uncollected(loading: bool = True) -> Iterator[None]:
    """The cyclic garbage collector paused inside the block, its state restored after (a
    caller that had paused it keeps it paused); ``loading`` False: nothing changes, for a
    block that compiles.  Reference counting frees objects as always; only cycles wait for
    the collector's next pass."""
    enabled = loading and gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_lock = threading.Lock()
_compiles = 0  # compiles under way (on any thread)
_thresholds: tuple[int, ...] = ()  # the collector's thresholds before the first of them


def compile_started() -> None:
    """A compile of the engine starts: the first of several under way raises the collector's
    third threshold to at least :data:`COMPILE_FULL_COLLECTION`."""
    global _compiles, _thresholds
    with _lock:
        if _compiles == 0:
            _thresholds = gc.get_threshold()
            first, second, third = _thresholds
            gc.set_threshold(first, second, max(third, COMPILE_FULL_COLLECTION))
        _compiles += 1


def compile_ended() -> None:
    """A compile of the engine ends: the last of those under way restores the thresholds."""
    global _compiles
    with _lock:
        _compiles -= 1
        if _compiles == 0:
            gc.set_threshold(*_thresholds)
