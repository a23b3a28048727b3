"""One line on standard error when the engine compiles for longer than :data:`NOTICE_AFTER`.

The engine's entries are compiled on their first call in an installation and cached on disk
(:mod:`flexdyn.engine.caching`); a compile takes from seconds to minutes on a small machine,
and a call that compiles silently looks hung.  :func:`install` registers a listener of
numba's ``"numba:compile"`` event, which numba sends only when it compiles (a load from the
cache sends none): when the compile of an engine entry, called from Python, is still running
after :data:`NOTICE_AFTER` seconds, the listener prints which entry compiles and about how
long that takes, and when it ends, how long it took.  The stages that an entry needs,
compiled one after the other (:func:`flexdyn.engine.stages.table`), are announced as one
(:func:`compiling`).  Calls that find their entry compiled or cached print nothing.
``FLEXDYN_COMPILE_NOTICE=0`` in the environment silences it; ``python -m flexdyn compile``
compiles ahead of time.  The same listener adds up each thread's compile time
(:func:`compile_seconds`), which a simulation leaves out of its ``wall_time``, and tells the
garbage collector's settings when a compile starts and ends
(:func:`flexdyn.startup.compile_started`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from numba.core import event

from ..startup import compile_ended, compile_started

__all__ = ["ENTRIES", "ESTIMATES", "NOTICE_AFTER", "compile_seconds", "compiling", "describe",
           "install", "silenced"]


#: seconds a compile runs before the notice is printed
NOTICE_AFTER = 1.0
#: the engine's entries by qualified name: what they compute, as the notice names them
ENTRIES = {
    "kernels.terms": "the per-state terms",
    "kernels.forward_articulated": "forward dynamics (articulated)",
    "kernels.forward_composite": "forward dynamics (composite)",
    "kernels.forward_rigid_tree": "forward dynamics (rigid tree)",
    "kernels.inverse": "inverse dynamics (also bias forces)",
    "kernels.mass": "the mass matrix",
    "kernels.hybrid": "hybrid dynamics",
    "kernels.batch": "batched dynamics",
    "kernels.batch_rigid_tree": "batched dynamics (rigid tree)",
    "kernels.derivative_articulated": "the state derivative (articulated)",
    "kernels.derivative_composite": "the state derivative (composite)",
    "kernels.derivative_rigid_tree": "the state derivative (rigid tree)",
    "kernels.state_derivative": "the state derivative as a C function (ccall)",
    "split.forward_split": "forward dynamics (articulated-split)",
    "split.factors": "the split factors",
    "split.batch": "batched dynamics (articulated-split)",
    "extras.mass_inverse": "the mass matrix inverse",
    "extras.joint_wrenches": "the joint wrenches",
    "extras.energy_momentum": "the energies and momentum",
    "closure.closure_terms": "the loop closures' terms",
    "closure.closed_derivative": "the closed chain's state derivative",
    "nodal.nodal_forward": "forward dynamics of nodal bodies",
    "derivatives.derivatives": "the derivatives of the dynamics",
    "derivatives.derivatives_rigid_tree": "the derivatives of the dynamics (rigid tree)",
    "derivatives.derivatives_rigid_tree_one": ("the derivatives of the dynamics (rigid tree, "
                                               "one state)"),
    "galpha.generalized_alpha": ("the implicit integrators (Radau IIA, Gauss–Legendre, "
                                 "generalized-α)"),
}
#: seconds the largest entries and the stages take to compile on a 2-core machine with an
#: empty cache (``benchmarks/bench_startup.py``, ``python -m flexdyn compile``), rounded up:
#: as the first compile of the process, and after another (which left the helpers they share
#: in memory).  The notice quotes them as an upper estimate; the other entries take 1–10 s.
#: An entry's own compile leaves out its stages (:mod:`flexdyn.engine.stages`), which compile
#: before it under one notice (:func:`compiling`) that quotes the sum of their estimates.
ESTIMATES = {
    "stages.position": (15, 10),
    "stages.velocity": (15, 10),
    "stages.articulated": (15, 10),
    "extras.energy_momentum": (10, 5),
    "kernels.derivative_articulated": (30, 15),
    "kernels.state_derivative": (80, 20),
    "galpha.generalized_alpha": (60, 40),
    "stages.derivatives": (130, 120),
}
_PREFIX = __name__.rpartition(".")[0] + "."  # "flexdyn.engine."


def describe(qualified: str) -> str:
    """What the entry ``qualified`` (``"kernels.mass"``: module within the engine and
    function) computes, with its name."""
    what = ENTRIES.get(qualified)
    return f"{what} ({qualified})" if what else qualified


class _Compile:
    """The outermost compile under way on one thread: its depth of nested compiles, the
    engine entry it compiles (None: not an engine entry), what the notice calls it and its
    estimate where they are given (a group of compiles, :func:`compiling`), when it started,
    whether anything compiled inside it, whether the notice was printed, and the timer that
    prints it; and the seconds the thread's compiles of engine entries have taken in all."""

    def __init__(self) -> None:
        self.depth, self.entry, self.start, self.said = 0, None, 0.0, False
        self.what: str | None = None
        self.estimate: tuple[int, int] | None = None
        self.compiled = False
        self.timer: threading.Timer | None = None
        self.total = 0.0


class _Notice(event.Listener):
    """The listener of ``"numba:compile"``: times the outermost compile of an engine entry
    (its callees compile inside it, on the same thread, under numba's compiler lock)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _compile(self) -> _Compile:
        if not hasattr(self._local, "compile"):
            self._local.compile = _Compile()
        return self._local.compile

    def on_start(self, ev: event.Event) -> None:
        c = self._compile()
        c.depth += 1
        c.compiled = True
        if c.depth != 1:
            return
        function = ev.data["dispatcher"].py_func
        module = getattr(function, "__module__", None) or ""
        if module.startswith(_PREFIX):
            self.begin(c, f"{module[len(_PREFIX):]}.{function.__name__}")

    def on_end(self, ev: event.Event) -> None:
        c = self._compile()
        c.depth -= 1
        if c.depth == 0:
            self.end(c)

    def begin(self, c: _Compile, entry: str, what: str | None = None,
              estimate: tuple[int, int] | None = None) -> None:
        """Start timing the compile of ``entry`` (its notice calls it ``what``, by default
        :func:`describe`, and quotes ``estimate``, by default :data:`ESTIMATES`)."""
        c.entry, c.what, c.estimate = entry, what, estimate
        c.start, c.said = time.perf_counter(), False
        compile_started()
        self._arm(c)

    def _arm(self, c: _Compile) -> None:
        """Print the notice of ``c`` in :data:`NOTICE_AFTER` seconds."""
        c.timer = threading.Timer(NOTICE_AFTER, self._say, (c,))
        c.timer.daemon = True
        c.timer.start()

    def end(self, c: _Compile) -> None:
        """Stop timing the outermost compile: its seconds count where anything compiled, and
        a compile announced says how long it took."""
        if c.entry is None:
            return
        compile_ended()
        c.timer.cancel()
        seconds = time.perf_counter() - c.start
        if c.compiled:
            c.total += seconds
        if c.said:
            _print(f"flexdyn: compiled {_name(c)} in {seconds:.0f} s; later calls "
                   "and runs load it from the cache")
        c.entry, c.what, c.estimate, c.timer = None, None, None, None

    def _say(self, c: _Compile) -> None:
        entry = c.entry
        if entry is None or _silenced or _QUIET:
            return
        if not c.compiled:  # a group that has only loaded from the cache so far
            self._arm(c)
            return
        c.said = True
        seconds = c.estimate or ESTIMATES.get(entry)
        if seconds is not None:
            seconds = seconds[1] if c.total > 0.0 else seconds[0]
        how_long = f"up to about {seconds} s on 2 cores" if seconds else "seconds to a minute"
        _print(f"flexdyn: compiling {_name(c)} for its first use in this installation "
               f"({how_long}; once: later runs load it from the cache; "
               "`python -m flexdyn compile` compiles ahead of time)")


def _name(c: _Compile) -> str:
    """What the notice calls the compile ``c``."""
    return f"{c.what} ({c.entry})" if c.what else describe(c.entry)


def _print(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


_listener: _Notice | None = None
_silenced = 0
#: ``FLEXDYN_COMPILE_NOTICE=0``: no notice (the compile time is still counted)
_QUIET = os.environ.get("FLEXDYN_COMPILE_NOTICE", "1") == "0"


def compile_seconds() -> float:
    """Seconds this thread has spent compiling the engine's entries (loads from the cache
    count nothing): the difference of two readings is the compile time between them."""
    return 0.0 if _listener is None else _listener._compile().total


@contextmanager
def compiling(entry: str, what: str, estimate: tuple[int, int] | None = None
              ) -> Iterator[None]:
    """One notice for the compiles inside the block, as for one entry ``entry`` called
    ``what`` (``estimate``: its seconds as the first compile of the process and after
    another, as :data:`ESTIMATES`): the stages an entry needs, compiled one after the other,
    are announced together.  Loads from the cache print nothing and count no compile time;
    inside another compile the block adds nothing."""
    c = None if _listener is None else _listener._compile()
    if c is None or c.depth:
        yield
        return
    c.depth += 1
    c.compiled = False
    _listener.begin(c, entry, what, estimate)
    try:
        yield
    finally:
        c.depth -= 1
        _listener.end(c)


@contextmanager
def silenced() -> Iterator[None]:
    """No notice for compiles that start inside the block (for a caller that reports its
    progress itself, as ``python -m flexdyn compile``)."""
    global _silenced
    _silenced += 1
    try:
        yield
    finally:
        _silenced -= 1


def install() -> None:
    """Register the notice with numba (idempotent; ``FLEXDYN_COMPILE_NOTICE=0`` in the
    environment silences its lines)."""
    global _listener
    if _listener is None:
        _listener = _Notice()
        event.register("numba:compile", _listener)
