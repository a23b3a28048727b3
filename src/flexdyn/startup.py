"""Loading the package and its compiled engine without the cyclic garbage collector's passes.

Importing flexdyn's modules, numba and scipy, and loading the engine's machine code from its
cache, create some 200 000 objects that live as long as the process.  Python's collector
scans the objects it tracks each time enough have been created, so during a start-up it
scans those objects over and over without finding anything to free, and runs two full
collections: about 80 ms of a first call's half second (``benchmarks/bench_startup.py``).
:func:`uncollected` pauses it while the package imports a module on first use
(:func:`flexdyn.__getattr__`) and while the engine loads its stages and entries from the
cache; the collector then runs as usual, and meets these objects once.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["uncollected"]


@contextmanager
def uncollected(loading: bool = True) -> Iterator[None]:
    """The cyclic garbage collector paused inside the block, its state restored after (a
    caller that had paused it keeps it paused); ``loading`` False: nothing changes, for a
    block that compiles (numba's compile makes many cycles that are garbage at once, which
    the collector should free as it goes).  Reference counting frees objects as always;
    only cycles wait for the collector's next pass."""
    enabled = loading and gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
