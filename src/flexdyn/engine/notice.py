"""One line on standard error when the engine compiles for longer than :data:`NOTICE_AFTER`.

The engine's entries are compiled on their first call in an installation and cached on disk
(:mod:`flexdyn.engine.caching`); a compile takes from seconds to minutes on a small machine,
and a call that compiles silently looks hung.  :func:`install` registers a listener of
numba's ``"numba:compile"`` event, which numba sends only when it compiles (a load from the
cache sends none): when the compile of an engine entry, called from Python, is still running
after :data:`NOTICE_AFTER` seconds, the listener prints which entry compiles and about how
long that takes, and when it ends, how long it took.  Calls that find their entry compiled
or cached print nothing.  ``FLEXDYN_COMPILE_NOTICE=0`` in the environment silences it;
``python -m flexdyn compile`` compiles ahead of time.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from numba.core import event

__all__ = ["ENTRIES", "ESTIMATES", "NOTICE_AFTER", "describe", "install", "silenced"]


#: seconds a compile runs before the notice is printed
NOTICE_AFTER = 1.0
#: the engine's entries by qualified name: what they compute, as the notice names them
ENTRIES = {
    "kernels.terms": "the per-state terms",
    "kernels.forward_articulated": "forward dynamics (articulated)",
    "kernels.forward_composite": "forward dynamics (composite)",
    "kernels.forward_rigid_tree": "forward dynamics (rigid tree)",
    "kernels.inverse": "inverse dynamics",
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
#: seconds the largest entries take to compile on a 2-core machine with an empty cache
#: (``benchmarks/bench_startup.py``), rounded up: the state derivative and forward dynamics as
#: the first entry of an installation (the stages every entry shares come with them), the
#: implicit integrators after the state derivative, which ``simulate`` compiles first.  An
#: entry compiled after another reuses its stages and takes 5–15 s.  The notice quotes them
#: as an upper estimate.
ESTIMATES = {
    "kernels.derivative_articulated": 80,
    "kernels.forward_articulated": 80,
    "kernels.state_derivative": 80,
    "galpha.generalized_alpha": 60,
    "derivatives.derivatives": 80,
}
_PREFIX = __name__.rpartition(".")[0] + "."  # "flexdyn.engine."


def describe(qualified: str) -> str:
    """What the entry ``qualified`` (``"kernels.mass"``: module within the engine and
    function) computes, with its name."""
    what = ENTRIES.get(qualified)
    return f"{what} ({qualified})" if what else qualified


class _Compile:
    """The outermost compile under way on one thread: its depth of nested compiles, the
    engine entry it compiles (None: not an engine entry), when it started, whether the
    notice was printed, and the timer that prints it."""

    def __init__(self) -> None:
        self.depth, self.entry, self.start, self.said = 0, None, 0.0, False
        self.timer: threading.Timer | None = None


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
        if c.depth != 1:
            return
        function = ev.data["dispatcher"].py_func
        module = getattr(function, "__module__", None) or ""
        if not module.startswith(_PREFIX):
            return
        c.entry = f"{module[len(_PREFIX):]}.{function.__name__}"
        c.start, c.said = time.perf_counter(), False
        c.timer = threading.Timer(NOTICE_AFTER, self._say, (c,))
        c.timer.daemon = True
        c.timer.start()

    def on_end(self, ev: event.Event) -> None:
        c = self._compile()
        c.depth -= 1
        if c.depth != 0 or c.entry is None:
            return
        c.timer.cancel()
        if c.said:
            _print(f"flexdyn: compiled {describe(c.entry)} in "
                   f"{time.perf_counter() - c.start:.0f} s; later calls and runs load it "
                   "from the cache")
        c.entry, c.timer = None, None

    @staticmethod
    def _say(c: _Compile) -> None:
        entry = c.entry
        if entry is None or _silenced:
            return
        c.said = True
        seconds = ESTIMATES.get(entry)
        how_long = f"up to about {seconds} s on 2 cores" if seconds else "seconds to a minute"
        _print(f"flexdyn: compiling {describe(entry)} for its first use in this installation "
               f"({how_long}; once: later runs load it from the cache; "
               "`python -m flexdyn compile` compiles ahead of time)")


def _print(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


_listener: _Notice | None = None
_silenced = 0


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
    """Register the notice with numba (idempotent); ``FLEXDYN_COMPILE_NOTICE=0`` in the
    environment leaves it out."""
    global _listener
    if _listener is None and os.environ.get("FLEXDYN_COMPILE_NOTICE", "1") != "0":
        _listener = _Notice()
        event.register("numba:compile", _listener)
